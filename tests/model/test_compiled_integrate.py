"""CompiledModel.integrate (revolute and prismatic coordinates summed as one vector) equals
the edge-by-edge integration through every joint kind's own ``integrate`` bit for bit, on
the shipped records (revolute, prismatic, universal, spherical, free joints) and the
humanoid."""

from __future__ import annotations

import numpy as np
import pytest

from rbc.model.compiled import CompiledModel
from tests.model.conftest import SHIPPED, compiled


def _edge_by_edge(k: CompiledModel, q: np.ndarray, v: np.ndarray) -> np.ndarray:
    out = np.array(q, dtype=float)
    for e, kind in enumerate(k.kinds):
        if kind.nv:
            qs, vs = k.q_slice(e), k.v_slice(e)
            if np.any(v[vs]):
                out[qs] = kind.integrate(q[qs], v[vs])
    return out


@pytest.mark.parametrize("name", [*SHIPPED, "humanoid/humanoid_v1"])
def test_integrate_equals_the_kinds(name):
    k, part = compiled(name)
    rng = np.random.default_rng(8)
    q0 = np.asarray(part.q_ref, dtype=float)
    for n in range(4):
        v = rng.uniform(-0.3, 0.3, k.nv)
        if n == 1:
            v[rng.random(k.nv) < 0.5] = 0.0  # edges at rest are left as they are
        q1 = k.integrate(q0, v)
        # the same floating-point sum (revolute/prismatic) and the same kind calls
        assert np.array_equal(q1, _edge_by_edge(k, q0, v))
        q0 = q1

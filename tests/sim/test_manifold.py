"""The run-time corrector (LiftedCloser) against the path-product corrector (Closer)."""

from __future__ import annotations

import numpy as np
import pytest

from rbc.model.closure import CLOSURE_TOL
from rbc.model.compiled import CompiledModel
from rbc.model.dynamics import DynamicsData, DynamicsModel
from rbc.model.kinematics import residual
from rbc.model.partition import lift
from rbc.model.solve import independent_values
from rbc.sim.manifold import Closer, LiftedCloser


@pytest.mark.parametrize("name", ["stewart", "excavator", "fourbar"])
def test_lifted_closer_agrees_with_the_path_product_closer(bundles, name):
    kin = CompiledModel.from_bundle(bundles[name])
    part = kin.partitions["default"]
    dm = DynamicsModel.build(kin)
    fast, slow = LiftedCloser(dm, DynamicsData.of(dm), part, part.q_ref), Closer(kin, part,
                                                                                 part.q_ref)
    x0 = independent_values(kin, part, part.q_ref)
    rng = np.random.default_rng(20260927)
    direction = rng.normal(size=x0.size)
    for h in (1e-4, 1e-3, 1e-2):  # RK-stage-sized steps up to a coarse reference grid
        x = x0 + h * direction
        qa, qb = fast(x), slow(x)
        # closed to the solve tolerance by an independent residual (path products) …
        assert np.abs(residual(kin, qa)).max() <= CLOSURE_TOL, (name, h)
        # … at the same configuration as the other corrector (both closed to 1e-13 on a
        # locally unique branch; 1e-10 allows the conditioning of R_p)
        assert np.abs(kin.difference(qb, qa)).max() <= 1e-10, (name, h)
        # the kept lift is the lift at the closed configuration
        assert np.abs(fast.lifted.E - lift(kin, part, qa).E).max() <= 1e-10, (name, h)
        assert np.array_equal(independent_values(kin, part, qa)[fast._keep], x[fast._keep])
    assert fast.fallbacks == 0


def test_lifted_closer_falls_back_to_the_continuation(bundles, monkeypatch):
    """With no Newton iterations allowed the predictor alone cannot close a 0.3 rad step:
    the continuation runs, is counted, and the lift is taken at its result."""
    import rbc.sim.manifold as manifold

    kin = CompiledModel.from_bundle(bundles["fourbar"])
    part = kin.partitions["default"]
    dm = DynamicsModel.build(kin)
    close = LiftedCloser(dm, DynamicsData.of(dm), part, part.q_ref)
    monkeypatch.setattr(manifold, "MAX_CORRECTOR", 0)
    x = independent_values(kin, part, part.q_ref) + 0.3
    q = close(x)
    assert close.fallbacks == 1
    assert np.abs(residual(kin, q)).max() <= CLOSURE_TOL
    assert np.abs(kin.difference(Closer(kin, part, part.q_ref)(x), q)).max() <= 1e-10
    assert np.abs(close.lifted.E - lift(kin, part, q).E).max() <= 1e-10

"""State sets A and B: seeded, within limits, documented draw order."""

from __future__ import annotations

import numpy as np

from rbc.model.kinematics import residual
from rbc.model.partition import scales
from rbc.verify.states import SPEED, make_states, named_points
from tests.model.conftest import compiled


def test_sets_are_reproducible_and_feasible():
    model, part = compiled("fivebar")
    a1, b1 = make_states(model, part, 3, seed=11)
    a2, b2 = make_states(model, part, 3, seed=11)
    _, b3 = make_states(model, part, 3, seed=12)
    assert len(a1) == len(b1) == 3
    for x, y in zip(b1, b2, strict=True):
        assert np.array_equal(x.q, y.q) and np.array_equal(x.u, y.u)
        assert np.array_equal(x.f, y.f) and x.wrenches == y.wrenches
    assert not np.array_equal(b1[0].u, b3[0].u)
    for sa, sb in zip(a1, b1, strict=True):
        assert np.array_equal(sa.q, sb.q)  # set B reuses set A's configurations
        assert not sa.u.any() and not sa.f.any() and sa.wrenches == ()
        # closed to the solve's tolerance (CLOSURE_TOL 1e-13) with a factor 10 of margin
        assert np.abs(residual(model, sa.q)).max() <= 1e-12
        # angles in ±SPEED rad/s, lengths in ±SPEED·L m/s
        bound = SPEED * scales(model, part.length_scale).cols[part.independent]
        assert np.all(np.abs(sb.u) <= bound) and np.any(sb.u != 0)
        for f, act in zip(sb.f, model.record.actuators, strict=True):
            assert act.effort_limits[0] <= f <= act.effort_limits[1]
        (w,) = sb.wrenches
        assert (w.body, w.point) in {(b, p) for _, b, p in named_points(model)}

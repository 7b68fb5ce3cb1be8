"""ECBF safety filter: torso barrier through a push, projection vs. the daqp QP."""

import numpy as np
import pytest

from rbc.walkers.control.safety import SafetyFilter, dykstra, qp_daqp
from rbc.walkers.environment.effects import Impulse
from rbc.walkers.environment.plant_sim import Scenario, walk_plant
from rbc.walkers.errors import WalkerError

# torso kept within [0, 0.17] rad: the nominal gait spans [0.120, 0.145]
BOUNDS = (0.0, 0.17)
# 5 N s forward at the head, 0.15 s into the second stride
PUSH = Scenario(impulses=(Impulse(1, 0.15, "head", (5.0, 0.0)),))


def _barrier(sf, res):
    return np.array([sf.barrier(x[:5]) for x in res.x])


def test_ecbf_keeps_torso_barrier_through_push(ctx, x0):
    sf = SafetyFilter(ctx, "projection", bounds=BOUNDS)
    free = walk_plant(ctx, "fl", PUSH, x0, 3)
    safe = walk_plant(ctx, "fl", PUSH, x0, 3, safety=sf)
    assert not free.fell and not safe.fell
    # measured: unfiltered FL reaches 0.1736 rad (h = -3.6 mrad), filtered 0.1664 rad
    assert _barrier(sf, free).min() < -1e-3
    assert _barrier(sf, safe).min() >= 0.0
    assert sf.stats["active"] > 0 and sf.stats["infeasible"] == 0
    # the filter is inactive before the push (poles faster than the nominal loop)
    before = safe.stride_index == 0
    np.testing.assert_array_equal(safe.u[before], safe.u_nominal[before])
    # on every visited state where it acts, the projection agrees with the exact QP:
    # Dykstra stops at 1e-10 violation/step, measured max difference 8e-11 N m
    n_cmp = 0
    for z, un in zip(safe.aug, safe.u_nominal, strict=True):
        q, qd = z[:5], z[6:11]
        G, b = sf.constraints(q, qd, sf.cone_margin * ctx.model.mu)
        if np.all(G @ un >= b) and np.all(np.abs(un) <= ctx.u_max):
            continue
        u1, ok1 = dykstra(G, b, ctx.u_max, un, sf.iters, sf.tol)
        u2, ok2 = qp_daqp(G, b, ctx.u_max, un)
        assert ok1 and ok2
        np.testing.assert_allclose(u1, u2, atol=1e-8)
        n_cmp += 1
    assert n_cmp == sf.stats["active"]


def test_qp_filter_gives_the_same_walk(ctx, x0):
    a = walk_plant(ctx, "fl", PUSH, x0, 2,
                   safety=SafetyFilter(ctx, "projection", bounds=BOUNDS))
    b = walk_plant(ctx, "fl", PUSH, x0, 2, safety=SafetyFilter(ctx, "qp", bounds=BOUNDS))
    # torques agree to ~1e-10 N m per step; over 2 strides the states to ~1e-9
    np.testing.assert_allclose(a.x[-1], b.x[-1], atol=1e-7)


def test_filter_rejects_slow_poles_and_unknown_method(ctx):
    with pytest.raises(WalkerError, match="faster than the nominal loop"):
        SafetyFilter(ctx, poles=(10.0, 80.0))
    with pytest.raises(WalkerError, match="valid choices: none, projection, qp"):
        SafetyFilter(ctx, "lp")

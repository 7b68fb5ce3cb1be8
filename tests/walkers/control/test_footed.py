"""Footed humanoid: flat foot -> heel rise -> toe roll -> flat-foot touchdown, 10 strides."""

import numpy as np
import pytest

from rbc.walkers.control.footed import (
    FootedWalker,
    design_gait,
    foot_angle_flat,
    freed_foot_impact,
    ground_reaction,
    sole_points,
    walk_footed,
)
from rbc.walkers.hybrid.impact import extended_inertia, point_jacobian_extended, solve_impact
from rbc.walkers.hybrid.model import angular_momentum, point
from rbc.walkers.hybrid.registry import load_model


@pytest.fixture(scope="module")
def run():
    m = load_model("humanoid")
    w = FootedWalker.from_model(m, 0.0)
    return w, walk_footed(w, w.initial_state(), 10, dt=1e-3)


def test_footed_walks_10_strides_with_checks(run):
    w, res = run
    assert not res.fell, res.fall_reason
    assert len(res.strides) == 10
    L = w.model.params["foot"]["sole_length"]
    for s in res.strides:
        assert s.impact.normal_ok and s.impact.cone_ok and s.impact.liftoff_ok
        assert s.extra["cop_ok"] and -L <= s.extra["cop"] <= 0.0
        lo, hi = s.extra["flat_cop_range"]  # flat-foot CoP sampled every step
        assert -L <= lo <= hi <= 0.0
        assert s.length > 0.2
        # heel rise: same state embedded, energy identical to the last digits (a few ulp
        # of ~200 J from summing the frozen foot's potential separately)
        e0, e1 = s.extra["heel_rise_energy"]
        assert abs(e1 - e0) <= 4 * np.finfo(float).eps * abs(e0)
    # both phases occur in every stride
    for i in range(10):
        assert set(res.phase[res.stride_index == i]) == {0, 1}


def test_touchdown_posture_is_consistent():
    m = load_model("humanoid")
    d = design_gait(m)
    pts = sole_points(m, d.q_minus)
    # flat swing foot on the ground: toe and heel at height 0 (brentq to 1e-15 rad)
    assert abs(pts["toe_sw"][1]) < 1e-12 and abs(pts["heel_sw"][1]) < 1e-12
    assert pts["toe_sw"][0] > 0.2  # landing ahead of the stance toe
    assert pts["heel_st"][1] > 0.0  # the stance heel is up in toe roll
    # the relabeled posture has the new stance foot flat and stride ankle-to-toe shift:
    # the ankle is 12 cm behind and 4 cm above the toe when flat
    # q_plus[9] is a copy of q_minus[8] = phi0: exact up to one rounding
    assert d.q_plus[9] == pytest.approx(foot_angle_flat(m), abs=1e-15)
    # the model file rounds |toe->ankle| = sqrt(0.016) to 9 digits: error ~5e-10 m
    np.testing.assert_allclose(point(m, "ankle_st", d.q_plus), [-0.12, 0.04], atol=1e-8)


def test_foot_impact_moment_balance():
    """The angular impulse about the new toe equals the locking moment (clockwise): an
    independent check of the 3-row block system (12 extended coordinates)."""
    m = load_model("humanoid")
    d = design_gait(m)
    q = d.q_minus
    qd = np.random.default_rng(0).uniform(-1, 1, 10)
    De = extended_inertia(m, q)
    E = np.vstack([point_jacobian_extended(m, "swing_foot", q), np.eye(12)[8]])
    rep = solve_impact(De, E, np.append(qd, [0.0, 0.0]), m.mu, np.nan)
    toe = point(m, "swing_foot", q)
    L0 = angular_momentum(m, q, qd, about=toe)
    L1 = angular_momentum(m, q, rep.qd_e[:10], about=toe, base_velocity=rep.qd_e[10:])
    # round-off of a 15x15 solve with entries up to ~30 kg
    assert abs((L1 - L0) - rep.impulse[2]) < 1e-12 * max(1.0, abs(L0))
    assert abs(rep.qd_e[8]) < 1e-13  # the foot orientation is locked


def test_freed_foot_11_coordinate_impact_matches_12_coordinate_form():
    """The 11-coordinate impact (new chart, foot orientation locked by construction)
    equals the 12-coordinate old-chart form with an explicit orientation row, when the
    landing foot does not rotate before impact."""
    m = load_model("humanoid")
    q = design_gait(m).q_minus
    qd = np.random.default_rng(3).uniform(-1, 1, 10)
    qd[8] = 0.0  # landing foot not rotating (the flat-foot swing constraint)
    rep11, qdp11, M11 = freed_foot_impact(m, q, qd)
    De = extended_inertia(m, q)
    E = np.vstack([point_jacobian_extended(m, "swing_foot", q), np.eye(12)[8]])
    rep12 = solve_impact(De, E, np.append(qd, [0.0, 0.0]), m.mu, np.nan)
    qdp12 = rep12.qd_e[:10][list(m.relabel)]
    # two different linear systems (11+2 vs 12+3 unknowns): agreement to round-off
    np.testing.assert_allclose(qdp11, qdp12, atol=1e-12)
    np.testing.assert_allclose(rep11.impulse, rep12.impulse, atol=1e-11)
    # old stance toe velocity: base velocity in the old chart vs point velocity in the new
    assert rep11.liftoff_velocity == pytest.approx(rep12.qd_e[11], abs=1e-12)


def test_toe_roll_reaction_has_no_moment_about_the_toe(run):
    """Newton-Euler on the Lagrangian accelerations: during toe roll the ground acts through
    the toe only (the foot angle is unactuated), so the CoP must sit at the toe."""
    w, res = run
    ks = np.flatnonzero(res.phase == 1)[::50]
    assert len(ks) > 10
    for k in ks:
        q, qd = res.x[k, :10], res.x[k, 10:]
        qdd = w.toe.accel(q, qd)[0]
        F, d = ground_reaction(w.model, q, qd, qdd, 0.0)
        assert F[1] > 0
        # |tau| is round-off of sums of O(100 N m) terms (~1e-12), F_N ~ 300 N
        assert abs(d) < 1e-10

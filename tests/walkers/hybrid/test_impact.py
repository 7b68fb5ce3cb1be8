"""Impact map: conservation laws and the inelastic closure, independent of the solver."""

import numpy as np
import pytest

from rbc.walkers.hybrid.impact import extended_inertia, point_foot_impact, relabel
from rbc.walkers.hybrid.model import angular_momentum, kinetic, mass_velocities, point
from rbc.walkers.hybrid.registry import load_model


def _touchdown_state(model, rng):
    """A configuration with the swing foot on the ground (symmetric virtual legs)."""
    n = model.n
    q = rng.uniform(-0.3, 0.3, n)
    if model.name == "compass":
        q[1] = -q[0]
    elif model.name == "rabbit":
        q[3], q[4] = -q[1], -q[0]  # mirror image of the stance leg: feet at the same height
    qd = rng.uniform(-2, 2, n)
    return q, qd


@pytest.mark.parametrize("name", ["compass", "rabbit"])
@pytest.mark.parametrize("seed", range(4))
def test_angular_momentum_about_new_contact_conserved(name, seed):
    m = load_model(name)
    n = m.n
    q, qd = _touchdown_state(m, np.random.default_rng(seed))
    foot = point(m, "swing_foot", q)
    assert abs(foot[1]) < 1e-12  # the test state really is at touchdown
    rep = point_foot_impact(m, q, qd)
    L0 = angular_momentum(m, q, qd, about=foot)
    L1 = angular_momentum(m, q, rep.qd_e[:n], about=foot, base_velocity=rep.qd_e[n:])
    # only the contact impulse acts, through the pivot: L conserved to round-off of a
    # (n+4)-dimensional solve
    assert abs(L1 - L0) <= 1e-13 * max(abs(L0), 1e-300) + 1e-15


@pytest.mark.parametrize("name", ["compass", "rabbit"])
def test_linear_momentum_and_closure(name):
    m = load_model(name)
    n = m.n
    q, qd = _touchdown_state(m, np.random.default_rng(7))
    rep = point_foot_impact(m, q, qd)
    v0 = m.m @ mass_velocities(m, q, qd)
    v1 = m.m @ (mass_velocities(m, q, rep.qd_e[:n]) + rep.qd_e[n:])
    # impulse = change of linear momentum (Newton), round-off relative to |F| ~ 10 N s
    np.testing.assert_allclose(v1 - v0, rep.impulse, atol=1e-12 * np.abs(rep.impulse).max())
    # the new stance foot is at rest after impact: E2 qd_e+ = 0
    a = m.points["swing_foot"] * rep.qd_e[:n]
    vfoot = np.array([a @ np.cos(q), -(a @ np.sin(q))]) + rep.qd_e[n:]
    assert np.abs(vfoot).max() < 1e-13  # round-off of the block solve, velocities O(1) m/s
    # inelastic: kinetic energy lost (extended KE includes the base motion)
    De = extended_inertia(m, q)
    assert 0.5 * rep.qd_e @ De @ rep.qd_e < kinetic(m, q, qd)


def test_relabel_is_involution():
    m = load_model("rabbit")
    q, qd = np.arange(5.0), np.arange(5.0, 10.0)
    q2, qd2 = relabel(m, *relabel(m, q, qd))
    np.testing.assert_array_equal(q2, q)
    np.testing.assert_array_equal(qd2, qd)


def test_checks_flag_a_backward_impact():
    """A swing foot arriving with the walker rotating backwards: the impulse would pull
    (F_N < 0), reported as a failed check rather than silently accepted."""
    m = load_model("compass")
    q = np.array([0.2, -0.2])
    rep = point_foot_impact(m, q, np.array([-1.0, -1.0]))
    assert not rep.normal_ok and rep.failure() is not None
    ok = point_foot_impact(m, q, np.array([1.0, 1.0]))
    assert ok.normal_ok and ok.liftoff_ok and ok.cone_ok and ok.failure() is None


def test_checks_flag_double_support():
    """Hip at rest (stance rate 0) and the swing foot landing: the impulse pushes the old
    stance foot into the ground, so it cannot lift off — reported, not hidden."""
    m = load_model("compass")
    rep = point_foot_impact(m, np.array([0.2, -0.2]), np.array([0.0, 1.0]))
    assert rep.normal_ok and not rep.liftoff_ok
    assert rep.liftoff_velocity < 0
    assert rep.failure().startswith("double support")

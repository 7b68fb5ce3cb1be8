"""Environments on the true plant: joint friction, stick-slip ground, ice, trips."""

import numpy as np
import pytest

from rbc.walkers.control.vc import vc_initial_state
from rbc.walkers.environment.effects import (
    Ground,
    Impulse,
    JointFriction,
    apply_impulse,
    slip_accel,
    total_energy,
)
from rbc.walkers.environment.plant import Actuation, Mismatch
from rbc.walkers.environment.plant_sim import Scenario, walk_plant
from rbc.walkers.hybrid.impact import extended_inertia
from rbc.walkers.hybrid.model import angular_momentum, point
from rbc.walkers.hybrid.registry import load_model

ICE = Scenario(friction=JointFriction(), ground=Ground(0.7, ((0.3, 0.9, 0.3),), True))


@pytest.fixture(scope="module")
def ice_run(ctx):
    return walk_plant(ctx, "fl", ICE, vc_initial_state(ctx.extra["fl"], 1.2), 4)


def test_joint_friction_shape_and_dissipation():
    f = JointFriction()
    om = np.linspace(-2, 2, 401)
    tf = f(om)
    assert np.all(tf * om >= 0)  # dissipative at every rate
    np.testing.assert_array_equal(f(-om), -tf)  # odd
    # Stribeck knee: the torque peaks near v_s above the Coulomb level then drops to it
    pk = om[np.argmax(tf)]
    assert 0.02 < pk < 0.2 and tf.max() > 1.3 * f.tau_c
    # far from the knee: Coulomb + viscous (exp(-400) and 1 - tanh(100) vanish)
    assert f(np.array([2.0]))[0] == pytest.approx(f.tau_c + 2.0 * f.c_v, rel=1e-12)


def test_ice_patch_reschedules_mu_and_the_stance_slips(ice_run):
    r = ice_run
    assert not r.fell, r.fall_reason
    mus = [s.extra["mu"] for s in r.strides]
    assert mus == [0.7, 0.3, 0.3, 0.7]  # stance bases at ~0, 0.4, 0.8 (ice), 1.2 m
    assert r.mode.sum() > 0
    slips = [s.extra["slip"] for s in r.strides]
    assert slips[0] == 0.0 and slips[-1] == 0.0 and slips[1] > 1e-3  # measured 1.9 mm
    assert all(s.extra["friction_work"] > 0 for s in r.strides)


def _energy_rate(model, q, qd, qdd, pdx, pdd, alpha):
    """dE/dt from an independent derivation: qd_e^T D_e qdd_e + qd_e^T Ddot_e qd_e / 2
    + dV/dq_e . qd_e, with Ddot_e written out entry by entry."""
    n = model.n
    De = extended_inertia(model, q)
    Dd = np.zeros_like(De)
    dq = qd[:, None] - qd
    Dd[:n, :n] = -model.M * np.sin(q[:, None] - q) * dq
    Dd[n, :n] = Dd[:n, n] = -model.w * np.sin(q) * qd
    Dd[n + 1, :n] = Dd[:n, n + 1] = -model.w * np.cos(q) * qd
    ve, ae = np.concatenate([qd, [pdx, 0.0]]), np.concatenate([qdd, [pdd, 0.0]])
    dV = -model.g * model.w * np.sin(q + alpha) @ qd - (
        model.m_total * model.g * np.sin(alpha) * pdx)
    return ve @ De @ ae + 0.5 * ve @ Dd @ ve + dV


def test_energy_identity_during_slip(ctx, ice_run):
    """d/dt (E + W_f) = P_act at every slipping sample, with the sliding system's solved
    accelerations and kinetic friction."""
    r, m = ice_run, ice_run.true
    act = Actuation.from_mismatch(Mismatch(), 4)
    fr = ICE.friction
    n, worst, count = m.n, 0.0, 0
    for z, u, mode, i in zip(r.aug, r.u, r.mode, r.stride_index, strict=True):
        if not mode:
            continue
        q, qd, pdx = z[:n], z[n + 1:2 * n + 1], z[2 * n + 1]
        om = m.B.T @ qd
        Q = m.B @ (act(u) - fr(om))
        mu = r.strides[i].extra["mu"]
        qdd, pdd, FN = slip_accel(m, q, qd, Q, 0.0, mu, np.sign(pdx))
        Wf_rate = fr(om) @ om + mu * FN * abs(pdx)
        res = _energy_rate(m, q, qd, qdd, pdx, pdd, 0.0) + Wf_rate - act(u) @ om
        worst = max(worst, abs(res))
        count += 1
    assert count > 5
    print(f"slip energy identity: worst residual {worst:.2e} W over {count} samples")
    # powers are O(100 W): round-off of the (n+2) solve and the sums, measured ~1e-13
    assert worst <= 1e-8


def test_integrated_energy_balance_over_slip_interval(ice_run):
    """E + W_f - W_act is constant along the RK4 solution (W integrated alongside)."""
    r, m, n = ice_run, ice_run.true, ice_run.true.n
    k = np.flatnonzero(r.mode)
    k = k[: np.argmax(np.diff(k) > 1) + 1] if np.any(np.diff(k) > 1) else k  # first run
    bal = [total_energy(m, z[:n], z[n + 1:2 * n + 1], z[n], z[2 * n + 1], 0.0)
           + z[2 * n + 2] - z[2 * n + 3] for z in r.aug[k[0]:k[-1] + 2]]
    # RK4 at 1 ms through the slip onset/re-latch kinks of |pdot_x| and the steep tanh of
    # the joint friction: truncation error, measured 3.2e-6 J of E ~ 224 J (1.4e-8
    # relative); the instantaneous identity above is the exact check
    assert np.ptp(bal) < 1e-7 * bal[0]


def test_trip_momentum_identity():
    m = load_model("rabbit")
    rng = np.random.default_rng(7)
    for _ in range(20):
        q, qd = rng.uniform(-0.6, 0.6, 5), rng.uniform(-2, 2, 5)
        F = rng.uniform(-10, 10, 2)
        qd1 = apply_impulse(m, "swing_foot", q, qd, F)
        p = point(m, "swing_foot", q)
        dH = angular_momentum(m, q, qd1, np.zeros(2)) - angular_momentum(m, q, qd, np.zeros(2))
        # clockwise moment p x F about the pinned base; the refined solve leaves the
        # round-off of the momentum sums (measured max 9e-15 over these 20 draws)
        assert abs(dH - (p[1] * F[0] - p[0] * F[1])) <= 1e-14 * max(1.0, abs(dH))


def test_scheduled_trip_and_liftoff_fall(ctx):
    x0 = vc_initial_state(ctx.extra["fl"], 1.2)
    trip = Scenario(impulses=(Impulse(1, 0.1, "swing_foot", (-3.0, 0.0)),))
    a = walk_plant(ctx, "fl", trip, x0, 2)
    b = walk_plant(ctx, "fl", Scenario(), x0, 2)
    assert not a.fell
    assert a.strides[1].duration != pytest.approx(b.strides[1].duration, abs=1e-3)
    lift = Scenario(impulses=(Impulse(0, 0.1, "hip", (0.0, 60.0)),))
    c = walk_plant(ctx, "fl", lift, x0, 2)
    assert c.fell and c.fall_reason.startswith("liftoff")


def test_sliding_system_equals_pinned_on_the_cone_boundary():
    """At slip onset (the pinned tangential force exactly on the cone) the sliding system
    returns the pinned solution: zero base acceleration, same accelerations and F_N."""
    from rbc.walkers.environment.effects import stance_reaction
    from rbc.walkers.hybrid.swing import forward_dynamics

    m = load_model("rabbit")
    rng = np.random.default_rng(1)
    q, qd = rng.uniform(-0.4, 0.4, 5), rng.uniform(-1, 1, 5)
    u = rng.uniform(-20, 20, 4)
    qdd = forward_dynamics(m, q, qd, u, 0.0)
    FT, FN = stance_reaction(m, q, qd, qdd, 0.0)
    mu = abs(FT) / FN  # the contact is exactly at the cone boundary
    qdd_s, pdd, FN_s = slip_accel(m, q, qd, m.B @ u, 0.0, mu, -np.sign(FT))
    # at the boundary the sliding solution with zero base acceleration is the pinned one;
    # two different linear solves of O(100) N / O(10) rad/s^2 systems: round-off only
    assert pdd == pytest.approx(0.0, abs=1e-10)
    np.testing.assert_allclose(qdd_s, qdd, atol=1e-10)
    assert FN_s == pytest.approx(FN, rel=1e-12)

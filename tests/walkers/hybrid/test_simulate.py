"""Hybrid simulation: zero-order hold for user controllers, falls stop with a reason."""

import dataclasses

import numpy as np

from rbc.walkers.control.controllers import make_controller
from rbc.walkers.control.vc import vc_initial_state
from rbc.walkers.hybrid.registry import load_model
from rbc.walkers.hybrid.simulate import make_guard, stride, walk
from rbc.walkers.hybrid.swing import forward_dynamics, rk4_step

ALPHA = np.deg2rad(3.0)


def test_user_controller_is_zero_order_hold():
    """A user controller is called once per step and its torque held over the 4 stages:
    the trajectory equals a hand-written RK4 loop with u_k = ctrl(t_k, x_k) held."""
    m = load_model("compass")
    calls = []

    def user(t, q, qd):
        calls.append(t)
        return np.array([2.0 * np.sin(40.0 * t) - 0.5 * qd[1]])

    x0 = np.array(m.params["initial_state"])
    seg, rep, xp, why = stride(m, user, ALPHA, x0, 1e-3)
    n_steps = len(seg.t) - 1
    assert len(calls) == n_steps  # once per step (the located last step reuses the sample)
    x, t = x0.copy(), 0.0
    for _ in range(n_steps - 1):
        u = user(t, x[:2], x[2:])
        x = rk4_step(lambda z, uu: (np.concatenate([z[2:], forward_dynamics(
            m, z[:2], z[2:], uu, ALPHA)]), uu), x, 1e-3, u)
        t += 1e-3
    # identical arithmetic up to the event step: bit-for-bit is not guaranteed by the
    # different call paths, so round-off (1e-13 on O(1) states) is allowed
    np.testing.assert_allclose(seg.x[n_steps - 1], x, atol=1e-13)


def test_backward_fall_is_reported():
    m = load_model("compass")
    ctrl = make_controller("passive", m, ALPHA)
    x0 = np.array([-0.3, 0.3, 0.3, 0.0])  # too slow to vault over the stance foot
    res = walk(m, ctrl, ALPHA, x0, 3)
    assert res.fell and res.fall_reason.startswith("backward fall")
    assert len(res.strides) == 0
    # the log ends where the fall was detected: phase rate no longer positive
    assert res.x[-1, 2] <= 0.0


def test_joint_limit_is_reported():
    m = load_model("rabbit")
    lim = np.array(m.limits)
    lim[:, 3] = 0.28  # knee flexion above 0.28 rad forbidden: the swing knee lifts to ~1.1
    tight = dataclasses.replace(m, limits=lim)
    ctrl = make_controller("fl", tight, 0.0)
    res = walk(tight, ctrl, 0.0, vc_initial_state(ctrl, 1.2), 2)
    assert res.fell and res.fall_reason.startswith("joint limit")


def test_liftoff_is_reported():
    """A swing leg pointing up and spinning fast pulls the hip off the ground (the
    centripetal force on its mass, 5 kg * 0.5 m * 25^2 /s^2 ~ 1.6 kN, exceeds the weight)."""
    m = load_model("compass")
    ctrl = make_controller("passive", m, ALPHA)
    res = walk(m, ctrl, ALPHA, np.array([-0.27, np.pi, 1.09, 25.0]), 1)
    assert res.fell and res.fall_reason.startswith("liftoff")


def test_anti_scuffing_guard_not_armed_behind_stance_foot():
    m = load_model("rabbit")
    guard = make_guard(m)
    q = np.array([0.1, -0.1, 0.0, 0.1, -0.1])  # swing foot at the stance foot (x ~ 0)
    armed, _ = guard(np.concatenate([q, -np.ones(5)]))
    assert not armed

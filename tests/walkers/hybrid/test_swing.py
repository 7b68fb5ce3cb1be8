"""Swing phase: conservation of energy under RK4 and the method's order."""

import numpy as np
import pytest

from rbc.walkers.control.controllers import make_controller
from rbc.walkers.hybrid.model import energy
from rbc.walkers.hybrid.registry import load_model
from rbc.walkers.hybrid.swing import forward_dynamics, rk4_step


def _max_energy_drift(name, x0, alpha, dt, T):
    m = load_model(name)
    ctrl = make_controller("passive", m, alpha)
    n = m.n

    def deriv(x, u):
        qdd, ua = ctrl.accel(x[:n], x[n:])
        return np.concatenate([x[n:], qdd]), ua

    x = np.asarray(x0, float)
    E0 = energy(m, x[:n], x[n:], alpha)
    drift = 0.0
    for _ in range(int(round(T / dt))):
        x = rk4_step(deriv, x, dt, None)
        drift = max(drift, abs(energy(m, x[:n], x[n:], alpha) - E0) / abs(E0))
    return drift


def test_passive_swing_energy_drift_below_1e11():
    # compass gait swinging (no ground) for 2 s on a 3 deg slope at dt = 0.2 ms; E0 ~ 150 J
    # with the base at height 0. 1e-11 is the acceptance bound; RK4's O(dt^4) error at this
    # step is ~4e-12 (measured 9.5e-12 at 0.25 ms, 16x less per halving).
    drift = _max_energy_drift("compass", [-0.27, 0.27, 1.09, 0.38], np.deg2rad(3), 2e-4, 2.0)
    assert drift <= 1e-11


def test_rk4_energy_error_is_fourth_order():
    """Halving dt divides the energy error by ~2^4 = 16 (RABBIT passive, 1 s)."""
    x0 = [-0.1, -0.3, 0.1, 0.2, 0.4, 1.0, 1.0, 0.0, -1.0, 0.5]
    e1 = _max_energy_drift("rabbit", x0, 0.0, 1e-3, 1.0)
    e2 = _max_energy_drift("rabbit", x0, 0.0, 5e-4, 1.0)
    # asymptotic ratio 16; [10, 24] allows the pre-asymptotic spread seen at these steps
    assert 10 < e1 / e2 < 24


def test_forward_dynamics_satisfies_equation_of_motion():
    """Fused passive path == reference D^-1(Bu - H - G), and with torque the residual of
    D qdd + H + G - B u vanishes."""
    from rbc.walkers.hybrid.model import centrifugal, gravity, mass_matrix

    m = load_model("rabbit")
    rng = np.random.default_rng(0)
    q, qd, u = rng.uniform(-1, 1, 5), rng.uniform(-2, 2, 5), rng.uniform(-50, 50, 4)
    ctrl = make_controller("passive", m, 0.1)
    # round-off of a 5x5 solve with entries O(1..10)
    np.testing.assert_allclose(ctrl.accel(q, qd)[0], forward_dynamics(m, q, qd, None, 0.1),
                               atol=1e-12)
    qdd = forward_dynamics(m, q, qd, u, 0.1)
    res = mass_matrix(m, q) @ qdd + centrifugal(m, q, qd) + gravity(m, q, 0.1) - m.B @ u
    assert np.abs(res).max() < 1e-11 * np.abs(m.B @ u).max()


@pytest.mark.parametrize("name", ["compass", "rabbit"])
def test_power_balance_with_torques(name):
    """dE/dt = qd^T B u: energy change over a short RK4 run with constant torque equals
    the work of the torque (trapezoid of power)."""
    m = load_model(name)
    n = m.n
    rng = np.random.default_rng(5)
    u = rng.uniform(-5, 5, m.B.shape[1])

    def deriv(x, _u):
        return np.concatenate([x[n:], forward_dynamics(m, x[:n], x[n:], u, 0.0)]), u

    x = np.concatenate([rng.uniform(-0.3, 0.3, n), rng.uniform(-1, 1, n)])
    E0, work, dt = energy(m, x[:n], x[n:], 0.0), 0.0, 1e-4
    p_prev = x[n:] @ m.B @ u
    for _ in range(1000):
        x = rk4_step(deriv, x, dt, u)
        p = x[n:] @ m.B @ u
        work += 0.5 * dt * (p + p_prev)
        p_prev = p
    # trapezoid error ~ T dt^2 |P''| / 12 ~ 1e-8 J against |work| ~ 1 J
    assert abs(energy(m, x[:n], x[n:], 0.0) - E0 - work) < 1e-6

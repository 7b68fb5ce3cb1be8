"""Swing phase: ``D(q) qdd + H(q, qd) + G(q) = B u`` and its fixed-step RK4 integration.

Method: Lagrange's equations for the lumped-mass tree of :mod:`rbc.walkers.hybrid.model`
(Westervelt et al. 2007, eq. (3.8)); classical fourth-order Runge-Kutta at a fixed step
(Hairer, Norsett, Wanner, "Solving ODEs I", Sec. II.1). Built-in controllers are evaluated
at every RK4 stage (they are part of the vector field); user controllers are sampled once
per step and held (zero-order hold). A guard crossing inside a step is located by
re-integrating the step with a shortened RK4 step ``h`` found by Brent's method, so the
event state is as accurate as the integrator.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy.optimize import brentq

from rbc.walkers.hybrid.model import (
    WalkerModel,
    centrifugal,
    gravity,
    limit_solve,
    mass_matrix,
    solve_mass_matrix,
)

Deriv = Callable[[np.ndarray, np.ndarray | None], tuple[np.ndarray, np.ndarray]]


def forward_dynamics(
    model: WalkerModel, q: np.ndarray, qd: np.ndarray, u: np.ndarray | None, alpha: float
) -> np.ndarray:
    """Joint accelerations ``qdd = D^-1 (B u - H - G)`` (n,) [rad/s^2].

    Args:
        model: the walker. q, qd: (n,) angles [rad], rates [rad/s]. u: (nu,) actuator
            torques [N m] or None (passive). alpha: slope [rad].
    """
    rhs = -centrifugal(model, q, qd) - gravity(model, q, alpha)
    if u is not None:
        rhs = rhs + model.B @ u
    D = mass_matrix(model, q)
    if model.infinitesimal is not None:
        lim = model.infinitesimal
        rhs1 = -centrifugal(lim, q, qd) - gravity(lim, q, alpha)
        return limit_solve(D, mass_matrix(lim, q), rhs, rhs1, what="limit mass matrix")
    return solve_mass_matrix(model, D, rhs, q)


def rk4_step(
    deriv: Deriv, x: np.ndarray, h: float, u: np.ndarray | None, k1: np.ndarray | None = None
) -> np.ndarray:
    """One classical RK4 step of ``xdot = deriv(x, u)[0]`` with ``u`` held over the step.

    ``k1`` (the derivative at ``x``) may be passed when already known.
    """
    if k1 is None:
        k1 = deriv(x, u)[0]
    h2 = 0.5 * h
    k2 = deriv(x + h2 * k1, u)[0]
    k3 = deriv(x + h2 * k2, u)[0]
    k4 = deriv(x + h * k3, u)[0]
    return x + (h / 6.0) * ((k1 + k4) + 2.0 * (k2 + k3))


@dataclass
class Segment:
    """Result of :func:`integrate_until`.

    Attributes:
        t: (N,) times [s] from the segment start. x: (N, 2n) states ``[q, qd]``.
        u: (N, nu) torques applied over the step starting at each sample (last row repeats).
        event: "guard", "fall" or "timeout". reason: why it stopped (fall reason or "").
    """

    t: np.ndarray
    x: np.ndarray
    u: np.ndarray
    event: str
    reason: str


def integrate_until(
    deriv: Deriv,
    x0: np.ndarray,
    dt: float,
    t_max: float,
    guard: Callable[[np.ndarray], tuple[bool, float]],
    watch: Callable[[np.ndarray, np.ndarray, np.ndarray], str | None] | None = None,
    hold: Callable[[float, np.ndarray], np.ndarray] | None = None,
) -> Segment:
    """Integrate with fixed-step RK4 until the guard fires, a fall, or ``t_max``.

    Args:
        deriv: ``deriv(x, u) -> (xdot, u_applied)``; built-in controllers compute their own
            torque inside (``u`` is then ignored).
        x0: (2n,) initial state. dt: step [s]. t_max: time limit [s].
        guard: ``guard(x) -> (armed, value)``; the event is a crossing of ``value`` from
            > 0 to <= 0 between two armed samples (anti-scuffing logic lives in ``armed``).
        watch: ``watch(x, xdot, u) -> reason or None`` checked after every step.
        hold: user controller ``hold(t, x) -> u`` sampled once per step (zero-order hold).
    """
    ts, xs, us = [], [], []
    x, t = x0, 0.0
    armed, val = guard(x)
    n_steps = int(np.ceil(t_max / dt))
    for i in range(n_steps + 1):
        u = hold(t, x) if hold is not None else None
        k1, ua = deriv(x, u)  # first RK4 stage, also the logged torque/acceleration at x
        ts.append(t)
        xs.append(x)
        us.append(ua)
        if watch is not None and i > 0:
            reason = watch(x, k1, ua)
            if reason:
                return Segment(np.array(ts), np.array(xs), np.array(us), "fall", reason)
        if i == n_steps:
            break
        x1 = rk4_step(deriv, x, dt, u, k1)
        armed1, val1 = guard(x1)
        if armed and armed1 and val > 0.0 >= val1:
            def g_of_h(h: float, x0_=x, u0_=u, k10=k1) -> float:
                return guard(rk4_step(deriv, x0_, h, u0_, k10))[1]

            h = brentq(g_of_h, 0.0, dt, xtol=1e-15, rtol=4 * np.finfo(float).eps, maxiter=200)
            x1 = rk4_step(deriv, x, h, u, k1)
            ts.append(t + h)
            xs.append(x1)
            us.append(deriv(x1, u)[1])
            return Segment(np.array(ts), np.array(xs), np.array(us), "guard", "")
        t += dt
        x, armed, val = x1, armed1, val1
    return Segment(np.array(ts), np.array(xs), np.array(us), "timeout",
                   f"no touchdown within {t_max:g} s")

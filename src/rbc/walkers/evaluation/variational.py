"""Stride-map Jacobians from the variational equations, with the impact-map Jacobian.

``DP(x) = DΔ(x⁻) Φ(x)``: ``Φ`` is the state-transition matrix of the swing phase from the
post-impact state ``x`` to the touchdown state ``x⁻``, including the dependence of the
touchdown time on ``x`` (the saltation term), and ``DΔ`` the Jacobian of the impact map and
relabeling at ``x⁻`` (Westervelt et al. 2007, Sec. 4.2; Hiskens & Pai, "Trajectory
sensitivity analysis of hybrid systems", IEEE TCAS-I 47(2), 2000).

* ``Φ`` is the exact derivative of the discrete map the simulator computes: each RK4 step
  ``x_{k+1} = x_k + h/6 (k1 + 2 k2 + 2 k3 + k4)`` is differentiated stage by stage
  (``dk_i = J(x_stage) (Φ + c_i h dk_{i-1})``, "internal numerical differentiation",
  Bock 1981), with ``J = ∂f/∂x`` of the closed-loop vector field: analytic for ``passive``
  (:meth:`rbc.walkers.control.controllers.Passive.accel_jacobian`, limit models included),
  4th-order central differences of ``accel`` otherwise (step 1e-3: truncation ~1e-13,
  round-off ~1e-13 for unit-order fields).
* The last step is the Brent-located shortened step ``h*(x)`` with ``g(x⁻) = 0``:
  ``dh*/dx = -(∇g · ∂x⁻/∂x_N Φ_N) / (∇g · ∂x⁻/∂h)``, ``∂x⁻/∂h`` the exact derivative of
  the RK4 step with respect to its length; ``Φ = ∂x⁻/∂x_N Φ_N + ∂x⁻/∂h dh*/dx``.
* ``DΔ``: ``q⁺ = q⁻[R] + offset``, ``q̇⁺ = (z_v[:n])[R]`` with ``K(q) z = [D_e q̇_e⁻; 0]``
  (:mod:`rbc.walkers.hybrid.impact`); ``∂z/∂q̇⁻ = K⁻¹ [D_e[:, :n]; 0]`` and
  ``K ∂z/∂q_k = ∂rhs/∂q_k - ∂K/∂q_k z`` with ``∂D_e/∂q_k`` and ``∂E/∂q_k`` in closed form;
  a limit model differentiates the limit system the same way (``limit_solve`` of the
  differentiated orders).

Central differences of the whole map remain available as the cross-check
(:func:`rbc.walkers.evaluation.poincare.poincare_jacobian`).
"""

from __future__ import annotations

import numpy as np

from rbc.walkers.hybrid.impact import (
    extended_inertia,
    impact_matrix,
    point_jacobian_extended,
    solve_scaled,
)
from rbc.walkers.hybrid.model import WalkerModel, dD_times, limit_solve, point_jacobian

FD_STEP = 1e-3  # [rad, rad/s] 4th-order central differences of a smooth vector field


def fd_accel_jacobian(accel, q: np.ndarray, qd: np.ndarray, h: float = FD_STEP):
    """``(∂qdd/∂q, ∂qdd/∂qd)`` (n, n) each by 4th-order central differences of ``accel``.

    ``f' = (-f(x+2h) + 8 f(x+h) - 8 f(x-h) + f(x-2h)) / (12 h)``: truncation
    ``h^4 |f^(5)| / 30`` ~ 1e-13, round-off ``1.5 eps |f| / h`` ~ 3e-13 for unit-order fields.
    """
    n = q.size
    out = []
    for base, which in ((q, 0), (qd, 1)):
        cols = []
        for k in range(n):
            f = []
            for c in (2, 1, -1, -2):
                x = base.copy()
                x[k] += c * h
                f.append(accel(x, qd)[0] if which == 0 else accel(q, x)[0])
            cols.append((-f[0] + 8 * f[1] - 8 * f[2] + f[3]) / (12 * h))
        out.append(np.stack(cols, axis=1))
    return out[0], out[1]


def vector_field_jacobian(ctrl, n: int):
    """``x -> (f(x), J(x))`` of ``xdot = f(x) = [qd, accel(q, qd)]``, ``J`` (2n, 2n):
    analytic when the controller has ``accel_jacobian``, else :func:`fd_accel_jacobian`."""
    analytic = getattr(ctrl, "accel_jacobian", None)

    def fj(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        q, qd = x[:n], x[n:]
        if analytic is not None:
            qdd, Jq, Jqd = analytic(q, qd)
        else:
            qdd = ctrl.accel(q, qd)[0]
            Jq, Jqd = fd_accel_jacobian(ctrl.accel, q, qd)
        J = np.zeros((2 * n, 2 * n))
        J[:n, n:] = np.eye(n)
        J[n:, :n], J[n:, n:] = Jq, Jqd
        return np.concatenate([qd, qdd]), J

    return fj


def rk4_step_derivatives(fj, x: np.ndarray, h: float, Phi: np.ndarray):
    """One RK4 step ``x -> x1`` differentiated: ``(∂x1/∂x Phi, ∂x1/∂h)``; ``fj(x) -> (f, J)``."""
    h2 = 0.5 * h
    k1, J1 = fj(x)
    k2, J2 = fj(x + h2 * k1)
    k3, J3 = fj(x + h2 * k2)
    k4, J4 = fj(x + h * k3)
    d1 = J1 @ Phi
    d2 = J2 @ (Phi + h2 * d1)
    d3 = J3 @ (Phi + h2 * d2)
    d4 = J4 @ (Phi + h * d3)
    dPhi = Phi + (h / 6.0) * ((d1 + d4) + 2.0 * (d2 + d3))
    e2 = J2 @ (0.5 * k1)
    e3 = J3 @ (0.5 * k2 + h2 * e2)
    e4 = J4 @ (k3 + h * e3)
    dh = ((k1 + k4) + 2.0 * (k2 + k3)) / 6.0 + (h / 6.0) * (2.0 * (e2 + e3) + e4)
    return dPhi, dh


def swing_transition(model: WalkerModel, ctrl, t: np.ndarray, xs: np.ndarray) -> np.ndarray:
    """State-transition matrix (2n, 2n) from ``xs[0]`` to the touchdown state ``xs[-1]`` of
    a segment that ended on the guard (last step shortened), touchdown time included."""
    n = model.n
    fj = vector_field_jacobian(ctrl, n)
    Phi = np.eye(2 * n)
    for k in range(len(t) - 2):
        Phi, _ = rk4_step_derivatives(fj, xs[k], t[k + 1] - t[k], Phi)
    Phi, dh = rk4_step_derivatives(fj, xs[-2], t[-1] - t[-2], Phi)
    grad = np.zeros(2 * n)
    grad[:n] = point_jacobian(model, "swing_foot", xs[-1][:n])[1]  # guard: foot height
    return Phi - np.outer(dh, (grad @ Phi) / (grad @ dh))


def _dW(model: WalkerModel, q: np.ndarray) -> np.ndarray:
    """``∂W[:, j]/∂q_j`` (2, n) of :func:`rbc.walkers.hybrid.impact.extended_inertia`."""
    s, c = np.sin(q), np.cos(q)
    return np.stack([-model.w * s - model.wv * c, -model.w * c + model.wv * s])


def dDe_times(model: WalkerModel, q: np.ndarray, v: np.ndarray) -> np.ndarray:
    """(n+2, n): column k is ``∂D_e/∂q_k v`` for ``v = [v_q (n), v_p (2)]``."""
    n = model.n
    dW = _dW(model, q)
    out = np.zeros((n + 2, n))
    out[:n] = dD_times(model, q, v[:n])
    out[:n] += np.diag(dW.T @ v[n:])
    out[n:] = dW * v[None, :n]
    return out


def _dE(model: WalkerModel, q: np.ndarray, foot: str) -> np.ndarray:
    """``∂E[:, k]/∂q_k`` (2, n) of the contact Jacobian (column k depends on q_k only)."""
    a, s, c = model.points[foot], np.sin(q), np.cos(q)
    av = model.points_v.get(foot, np.zeros_like(a))
    return np.stack([-a * s - av * c, -a * c + av * s])


def impact_jacobian(model: WalkerModel, x_minus: np.ndarray, foot: str = "swing_foot"
                    ) -> np.ndarray:
    """``∂x⁺/∂x⁻`` (2n, 2n) of the point-foot impact followed by the relabeling."""
    n = model.n
    q, qd = x_minus[:n], x_minus[n:]
    qe = np.concatenate([qd, np.zeros(2)])
    De = extended_inertia(model, q)
    E = point_jacobian_extended(model, foot, q)
    K = impact_matrix(De, E)
    k = E.shape[0]
    dE = _dE(model, q, foot)

    def rhs_q(part, z, F, De_part_vel):
        """Columns k: ``∂rhs/∂q_k - ∂K/∂q_k z`` for one part of the pencil."""
        top = De_part_vel - dDe_times(part, q, z)
        if F is not None:  # - ∂(-E^T)/∂q_k F = +∂E^T F (rows k only)
            top[:n] += np.diag(dE.T @ F)
        bottom = np.zeros((k, n)) if F is None else -(dE * z[None, :n])
        return np.vstack([top, bottom])

    vel = np.vstack([De[:, :n], np.zeros((k, n))])
    lim = model.infinitesimal
    if lim is None:
        z = solve_scaled(K, np.concatenate([De @ qe, np.zeros(k)]), n + 2)
        zv, F = z[:n + 2], z[n + 2:]
        dq = solve_scaled(K, rhs_q(model, zv, F, dDe_times(model, q, qe)), n + 2)
        dqd = solve_scaled(K, vel, n + 2)
    else:
        De1 = extended_inertia(lim, q)
        K1 = np.zeros_like(K)
        K1[:n + 2, :n + 2] = De1
        b0 = np.concatenate([De @ qe, np.zeros(k)])
        b1 = np.concatenate([De1 @ qe, np.zeros(k)])
        z0 = limit_solve(K, K1, b0, b1, what="limit impact equations")
        z1 = np.linalg.lstsq(K, b1 - K1 @ z0, rcond=None)[0]  # any solution of the eps order
        r0 = rhs_q(model, z0[:n + 2], z0[n + 2:], dDe_times(model, q, qe))
        r1 = (rhs_q(lim, z0[:n + 2], None, dDe_times(lim, q, qe))
              + rhs_q(model, z1[:n + 2], z1[n + 2:], np.zeros((n + 2, n))))
        dq = limit_solve(K, K1, r0, r1, what="limit impact equations")
        dqd = limit_solve(K, K1, vel, np.vstack([De1[:, :n], np.zeros((k, n))]),
                          what="limit impact equations")
    R = np.eye(n)[list(model.relabel)]
    out = np.zeros((2 * n, 2 * n))
    out[:n, :n] = R
    out[n:, :n] = R @ dq[:n]
    out[n:, n:] = R @ dqd[:n]
    return out

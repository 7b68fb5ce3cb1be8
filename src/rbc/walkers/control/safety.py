"""Safety filter: exponential control barrier functions and contact conditions on ``u``.

Method (Nguyen & Sreenath, "Exponential control barrier functions for enforcing high
relative-degree safety-critical constraints", ACC 2016; Ames et al., "Control barrier
function based quadratic programs", IEEE TAC 2017). Everything is evaluated on the design
model of the :class:`rbc.walkers.control.context.ControlContext` (the filter cannot see the plant).

With ``qdd = X_u u + x_0``, ``[X_u, x_0] = D^-1 [B, -(H + G)]``:

* **Torso barrier** (relative degree two): ``h_lo = q_t - theta_lo``,
  ``h_hi = theta_hi - q_t``; the ECBF condition ``hdd + k_1 hd + k_0 h >= 0`` with
  ``s^2 + k_1 s + k_0 = (s + p_1)(s + p_2)`` is affine in ``u``:
  ``+-X_u[t] u >= -+x_0[t] - k_1 hd - k_0 h``. The poles must be faster than the nominal
  loop's (``min(p) > max(Lambda, K)``, :func:`rbc.walkers.control.learning.hierarchy_gains`),
  so the filter is inactive in the nominal regime and acts only when a barrier is near.
* **Contact condition** (relative degree zero; for a point foot the centre of pressure is
  the contact point, so the CoP condition reduces to): ``F_N >= f_min`` and
  ``|F_T| <= mu F_N`` with ``F`` the pinned-base reaction of
  :func:`rbc.walkers.environment.effects.stance_reaction`, affine in ``u`` through ``qdd``.
* **Torque box** ``|u_i| <= u_max``.

``u = argmin |u - u_nom|^2`` over those sets, by

* ``projection``: Dykstra's alternating projections onto the half-spaces and the box
  (Boyle & Dykstra 1986; Bauschke & Combettes, "Convex Analysis and Monotone Operator
  Theory", Thm. 30.7) — converges to the exact projection; stopped at ``tol`` constraint
  violation or ``iters`` sweeps: the approximate QP at the control rate;
* ``qp``: the exact QP by daqp (Arnström, Bemporad, Axehill, IEEE TAC 2022), the reference.

When the sets do not intersect (the barrier cannot be kept within the torque box), both
return their best effort (the last iterate, resp. the box-clipped nominal) and count it in
``stats["infeasible"]``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from rbc.walkers.control.context import ControlContext
from rbc.walkers.errors import WalkerError
from rbc.walkers.hybrid.model import FusedTerms

FILTERS = ("none", "projection", "qp")


@dataclass
class SafetyFilter:
    """ECBF + contact + torque-box filter ``u = filter(q, qd, u_nom, mu)`` (module docstring).

    Attributes:
        ctx: design-model context. method: "projection" or "qp". torso: coordinate name of
            the barrier. bounds: ``(theta_lo, theta_hi)`` [rad]. poles: ``(p_1, p_2)`` [1/s].
        f_min: minimum normal force [N]. cone_margin: the filter uses ``cone_margin mu``
            (the plant's cone test is strict: a solution on the cone's boundary would
            slip on round-off, and the plant is not the design model).
        iters: Dykstra sweeps. tol: violation and step tolerance of the projection (units
            of each row ``G_i u``).
        stats: counters ``calls``, ``active`` (nominal modified), ``infeasible``.

    Raises:
        WalkerError: unknown method, unknown coordinate, poles not faster than the loop.
    """

    ctx: ControlContext
    method: str = "projection"
    torso: str = "torso"
    bounds: tuple[float, float] = (0.0, 0.25)
    poles: tuple[float, float] = (40.0, 80.0)
    f_min: float = 20.0
    cone_margin: float = 0.95
    iters: int = 2000
    tol: float = 1e-10
    stats: dict = field(default_factory=lambda: {"calls": 0, "active": 0, "infeasible": 0})

    def __post_init__(self) -> None:
        from rbc.walkers.control.learning import hierarchy_gains

        if self.method not in FILTERS[1:]:
            raise WalkerError(f"unknown safety filter '{self.method}'", choices=FILTERS,
                              got=self.method)
        m = self.ctx.model
        if self.torso not in m.coords:
            raise WalkerError(f"unknown coordinate '{self.torso}'", choices=m.coords,
                              got=self.torso)
        nominal = max(hierarchy_gains(self.ctx.kp, self.ctx.kd))
        if min(self.poles) <= nominal:
            raise WalkerError(f"safety filter poles {self.poles} must be faster than the "
                              f"nominal loop's ({nominal:g} 1/s)")
        p1, p2 = self.poles
        self._k = (p1 * p2, p1 + p2)  # (k_0, k_1)
        self._it = m.index(self.torso)
        self._terms = FusedTerms(m, self.ctx.alpha)

    def constraints(self, q: np.ndarray, qd: np.ndarray, mu: float):
        """Half-spaces ``G u >= b``: ``(G (5, nu), b (5,))``, rows (torso lo, torso hi,
        normal force, friction +, friction -)."""
        m, it = self.ctx.model, self._it
        Xu, x0 = self._terms.accel_affine(q, qd, m.B)
        k0, k1 = self._k
        lo, hi = self.bounds
        s, c = np.sin(q), np.cos(q)
        w, qd2, mt = m.w, qd * qd, m.m_total
        g_x, g_y = m.g * np.sin(self.ctx.alpha), -m.g * np.cos(self.ctx.alpha)
        # F_T = (w c) . qdd - (w s) . qd^2 - m g_x ;  F_N = -(w s) . qdd - (w c) . qd^2 - m g_y
        aT, aN = (w * c) @ Xu, -(w * s) @ Xu
        cT = (w * c) @ x0 - (w * s) @ qd2 - mt * g_x
        cN = -(w * s) @ x0 - (w * c) @ qd2 - mt * g_y
        G = np.array([Xu[it], -Xu[it], aN, mu * aN - aT, mu * aN + aT])
        b = np.array([-x0[it] - k1 * qd[it] - k0 * (q[it] - lo),
                      x0[it] + k1 * qd[it] - k0 * (hi - q[it]),
                      self.f_min - cN, cT - mu * cN, -cT - mu * cN])
        return G, b

    def barrier(self, q: np.ndarray) -> float:
        """``min(h_lo, h_hi)`` [rad]: non-negative inside the safe set."""
        return float(min(q[self._it] - self.bounds[0], self.bounds[1] - q[self._it]))

    def __call__(self, q: np.ndarray, qd: np.ndarray, u_nom: np.ndarray, mu: float
                 ) -> np.ndarray:
        """Filtered torque (nu,) [N m]."""
        self.stats["calls"] += 1
        G, b = self.constraints(q, qd, self.cone_margin * mu)
        umax = self.ctx.u_max
        if np.all(G @ u_nom >= b) and np.all(np.abs(u_nom) <= umax):
            return u_nom
        self.stats["active"] += 1
        u, ok = (dykstra if self.method == "projection" else qp_daqp)(
            G, b, umax, u_nom, self.iters, self.tol)
        if not ok:
            self.stats["infeasible"] += 1
        return u


def dykstra(G: np.ndarray, b: np.ndarray, umax: float, u0: np.ndarray, iters: int,
            tol: float) -> tuple[np.ndarray, bool]:
    """Projection of ``u0`` onto ``{G u >= b} ∩ {|u| <= umax}`` by Dykstra's algorithm.

    Returns:
        ``(u, converged)``; converged when every row is violated by at most ``tol`` and a
        sweep moved ``u`` by at most ``tol``.
    """
    m = len(b)
    nrm2 = np.einsum("ij,ij->i", G, G)
    corr = np.zeros((m + 1, len(u0)))  # Dykstra's correction vectors, one per set
    u = u0.copy()
    for _ in range(iters):
        u_prev = u.copy()
        for i in range(m):
            v = u + corr[i]
            gap = b[i] - G[i] @ v
            u = v + (gap / nrm2[i]) * G[i] if gap > 0 else v
            corr[i] = v - u
        v = u + corr[m]
        u = np.clip(v, -umax, umax)
        corr[m] = v - u
        if np.max(b - G @ u) <= tol and np.max(np.abs(u - u_prev)) <= tol:
            return u, True
    return u, False


def qp_daqp(G: np.ndarray, b: np.ndarray, umax: float, u0: np.ndarray, iters: int = 0,
            tol: float = 0.0) -> tuple[np.ndarray, bool]:
    """Exact ``argmin |u - u0|^2`` s.t. ``G u >= b``, ``|u| <= umax`` by daqp.

    Returns:
        ``(u, solved)``; on infeasibility the box-clipped ``u0``.
    """
    import daqp

    nu = len(u0)
    big = 1e30  # daqp's "no bound"
    bupper = np.concatenate([np.full(nu, umax), np.full(len(b), big)])
    blower = np.concatenate([np.full(nu, -umax), b])
    sense = np.zeros(len(bupper), dtype=np.int32)
    x, _, flag, _ = daqp.solve(np.eye(nu), -np.asarray(u0, dtype=float),
                               np.ascontiguousarray(G), bupper, blower, sense)
    if flag < 1:
        return np.clip(u0, -umax, umax), False
    return np.asarray(x), True

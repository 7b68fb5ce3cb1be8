"""Rigid inelastic impact in extended coordinates, relabeling and the per-impact checks.

Method (Westervelt, Grizzle et al. 2007, Sec. 3.4.2; Hurmuzlu & Marghitu 1994): free the
stance base, ``q_e = [q, p]`` with ``p`` (2,) the base position in the tilted frame. Then

* ``c_k = p + sum_j A_kj u(q_j)``, so the extended inertia is
  ``D_e = [[D(q), W(q)^T], [W(q), m_tot I_2]]`` with ``W[:, j] = w_j v(q_j)``;
* the impacting contact has ``E_2 = d(contact)/dq_e`` ((2, n+2) for a point foot:
  ``[a_j v(q_j) ..., I_2]``; extra rows lock e.g. a foot orientation);
* impulsive balance and inelastic closure solved as one block system::

      [ D_e   -E_2^T ] [ qd_e+ ]   [ D_e qd_e- ]
      [ E_2    0     ] [ F_2   ] = [ 0         ]

  with ``qd_e- = [qd-, 0, 0]`` (the old stance base is at rest before impact).

The checks reported for every impact: normal impulse ``F_N > 0``, friction cone
``|F_T| <= mu F_N``, and the former stance foot lifting off (normal velocity of the old base
after impact > 0).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rbc.walkers.hybrid.model import WalkerModel, limit_solve, mass_matrix, point_jacobian


def extended_inertia(model: WalkerModel, q: np.ndarray) -> np.ndarray:
    """Extended inertia ``D_e(q)`` (n+2, n+2) [kg m^2, kg m, kg] for ``q_e = [q, p]``.

    ``W[:, j] = w_j v(q_j) - wv_j u(q_j)`` (the second term only with angle offsets).
    """
    n = model.n
    De = np.zeros((n + 2, n + 2))
    De[:n, :n] = mass_matrix(model, q)
    s, c = np.sin(q), np.cos(q)
    W = np.stack([model.w * c, -model.w * s])  # (2, n)
    if model.has_offsets:
        W = W - np.stack([model.wv * s, model.wv * c])
    De[n:, :n] = W
    De[:n, n:] = W.T
    De[n:, n:] = model.m_total * np.eye(2)
    return De


def point_jacobian_extended(model: WalkerModel, name: str, q: np.ndarray) -> np.ndarray:
    """``E = d(point)/dq_e`` (2, n+2) of named point ``name`` [m/rad, 1]."""
    return np.hstack([point_jacobian(model, name, q), np.eye(2)])


@dataclass(frozen=True)
class ImpactReport:
    """Outcome of one impact.

    Attributes:
        qd_e: (n+2,) extended velocity after impact, before relabeling [rad/s, m/s].
        impulse: (k,) contact impulse ``F_2`` [N s] (tangential, normal[, moment N m s]).
        normal_ok: ``F_N > 0``. cone_ok: ``|F_T| <= mu F_N``. cone_utilization:
            ``|F_T| / (mu F_N)``. liftoff_ok: the former stance base leaves the ground.
        liftoff_velocity: normal velocity of the former stance base after impact [m/s].
    """

    qd_e: np.ndarray
    impulse: np.ndarray
    normal_ok: bool
    cone_ok: bool
    cone_utilization: float
    liftoff_ok: bool
    liftoff_velocity: float

    @property
    def ok(self) -> bool:
        """All three checks pass."""
        return self.normal_ok and self.cone_ok and self.liftoff_ok

    def failure(self) -> str | None:
        """Fall reason for the first failed check, or None."""
        if not self.normal_ok:
            return "liftoff: non-positive normal impulse at touchdown"
        if not self.liftoff_ok:
            return "double support: former stance foot does not lift off"
        if not self.cone_ok:
            return "slip: impact impulse outside the friction cone"
        return None


def impact_matrix(De: np.ndarray, E: np.ndarray) -> np.ndarray:
    """The block matrix ``[[D_e, -E^T], [E, 0]]`` (N+k, N+k) of the impact equations."""
    N, k = De.shape[0], E.shape[0]
    K = np.zeros((N + k, N + k))
    K[:N, :N] = De
    K[:N, N:] = -E.T
    K[N:, :N] = E
    return K


def solve_scaled(K: np.ndarray, b: np.ndarray, N: int) -> np.ndarray:
    """``K^-1 b`` for the impact matrix with its inertia block ``K[:N, :N]`` symmetrically
    equilibrated by ``diag(K[:N, :N])^-1/2``, plus one step of iterative refinement with the
    residual in extended precision (``np.longdouble``): a light link (a 1e-6 foot mass) makes
    ``K`` ill-conditioned in a direction no diagonal scaling removes (the light leg turning
    about the hip), and its post-impact rate would otherwise carry ``cond(K) eps`` ~ 1e-10 of
    round-off (Higham, "Accuracy and Stability of Numerical Algorithms", Sec. 12.1).

    Raises:
        WalkerError: singular impact equations.
    """
    dg = np.diagonal(K)[:N]
    t = np.ones(K.shape[0])
    if np.all(dg > 0):
        t[:N] = 1.0 / np.sqrt(dg)
    tb = t if b.ndim == 1 else t[:, None]
    Ks, bs = K * t[:, None] * t[None, :], tb * b
    try:
        y = np.linalg.solve(Ks, bs)
        r = bs.astype(np.longdouble) - Ks.astype(np.longdouble) @ y.astype(np.longdouble)
        return tb * (y + np.linalg.solve(Ks, r.astype(float)))
    except np.linalg.LinAlgError:
        from rbc.walkers.errors import WalkerError

        raise WalkerError("the impact equations [[D_e, -E^T], [E, 0]] are singular (a "
                          "link without mass?)") from None


def solve_impact(
    De: np.ndarray, E: np.ndarray, qd_e_minus: np.ndarray, mu: float, liftoff_velocity: float,
    De1: np.ndarray | None = None,
) -> ImpactReport:
    """Solve the block system of the module docstring and evaluate the checks.

    Args:
        De: (N, N) extended inertia. E: (k, N) contact constraint Jacobian, rows
            (tangential, normal, [orientation]). qd_e_minus: (N,) pre-impact velocity.
        mu: friction coefficient. liftoff_velocity: filled in by the caller (the normal
            velocity of the old base is ``qd_e+[n+1]``, passed as NaN to compute it here).
        De1: extended inertia of the infinitesimal masses of a limit model (the limit of
            ``D_e + eps De1``, :func:`rbc.walkers.hybrid.model.limit_solve`), or None.

    Raises:
        WalkerError: the impact equations are singular.
    """
    N, k = De.shape[0], E.shape[0]
    K = impact_matrix(De, E)
    rhs = np.concatenate([De @ qd_e_minus, np.zeros(k)])
    if De1 is not None:
        K1 = np.zeros_like(K)
        K1[:N, :N] = De1
        rhs1 = np.concatenate([De1 @ qd_e_minus, np.zeros(k)])
        sol = limit_solve(K, K1, rhs, rhs1, what="limit impact equations")
    else:
        sol = solve_scaled(K, rhs, N)
    qd_e, F = sol[:N], sol[N:]
    FT, FN = F[0], F[1]
    util = abs(FT) / (mu * FN) if FN > 0 else np.inf
    lift = qd_e[N - 1] if np.isnan(liftoff_velocity) else liftoff_velocity
    return ImpactReport(
        qd_e=qd_e,
        impulse=F,
        normal_ok=bool(FN > 0),
        cone_ok=bool(util <= 1.0),
        cone_utilization=float(util),
        liftoff_ok=bool(lift > 0),
        liftoff_velocity=float(lift),
    )


def point_foot_impact(
    model: WalkerModel, q: np.ndarray, qd: np.ndarray, foot: str = "swing_foot"
) -> ImpactReport:
    """Impact of point foot ``foot`` (base at rest before); see the module docstring.

    Args:
        q, qd: (n,) pre-impact state (before relabeling).
    """
    De = extended_inertia(model, q)
    E = point_jacobian_extended(model, foot, q)
    qd_e = np.concatenate([qd, np.zeros(2)])
    lim = model.infinitesimal
    De1 = None if lim is None else extended_inertia(lim, q)
    return solve_impact(De, E, qd_e, model.mu, np.nan, De1)


def relabel(model: WalkerModel, q: np.ndarray, qd: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Exchange stance and swing roles: ``q+ = q[relabel] + relabel_offset`` (absolute
    angles keep their values; only their roles change, because both legs' angles point from
    foot to hip; a rimless wheel's next spoke is at a fixed offset)."""
    idx = list(model.relabel)
    qp = q[idx] + model.relabel_offset if model.relabel_offset.any() else q[idx].copy()
    return qp, qd[idx].copy()


def sliding_impact(De: np.ndarray, E: np.ndarray, qd_e_minus: np.ndarray, mu: float,
                   sigma: float) -> tuple[np.ndarray, float, float]:
    """Touchdown impact with a sliding contact (the sticking impulse left the cone).

    Only the normal velocity of the contact is closed (``E_N qd_e+ = 0``); the tangential
    impulse is kinetic friction on the cone's boundary, ``F_T = -mu sigma F_N`` with
    ``sigma`` the sliding direction (Brach, "Mechanical Impact Dynamics", 1991, Ch. 7;
    Glocker & Pfeiffer's Coulomb impact without tangential restitution)::

        [ D_e    -(E_N - mu sigma E_T)^T ] [ qd_e+ ]   [ D_e qd_e- ]
        [ E_N     0                      ] [ F_N   ] = [ 0         ]

    Args:
        De: (N, N) extended inertia. E: (2, N) contact Jacobian rows (tangential, normal).
        qd_e_minus: (N,) pre-impact velocity. mu: friction coefficient. sigma: +1 / -1.

    Returns:
        ``(qd_e+ (N,), F_T [N s], F_N [N s])``; the contact slides at ``E[0] @ qd_e+``.
    """
    N = De.shape[0]
    g = E[1] - mu * sigma * E[0]
    K = np.zeros((N + 1, N + 1))
    K[:N, :N] = De
    K[:N, N] = -g
    K[N, :N] = E[1]
    sol = np.linalg.solve(K, np.append(De @ qd_e_minus, 0.0))
    return sol[:N], float(-mu * sigma * sol[N]), float(sol[N])

"""Feet of the footed walker: sole geometry, ground reaction and the flat-foot touchdown.

Base = stance toe; the foot link runs toe -> ankle (``model.params["foot"]``). Methods:
Newton-Euler for the ground reaction and its centre of pressure; the freed-foot impact is
the block system of :mod:`rbc.walkers.hybrid.impact` written in the new stance chart
(Westervelt et al. 2007, Sec. 3.4.2 and Ch. 8; Choi & Grizzle, ACC 2005).
"""

from __future__ import annotations

import numpy as np

from rbc.walkers.hybrid.impact import extended_inertia, solve_impact
from rbc.walkers.hybrid.model import WalkerModel, point

N_FULL = 10  # toe-roll coordinates (stance-foot angle last)
N_FLAT = 9  # flat-foot coordinates


def foot_angle_flat(model: WalkerModel) -> float:
    """Absolute angle [rad] of the toe->ankle foot link when the sole is flat."""
    dx, dy = model.params["foot"]["toe_to_ankle"]
    return float(np.arctan2(dx, dy))


def sole_points(model: WalkerModel, q: np.ndarray) -> dict[str, np.ndarray]:
    """Toe and heel (2,) of both feet relative to the stance toe [m], tilted frame.

    ``q``: (10,) full coordinates. The sole direction (toe->heel) of a foot whose link
    angle is ``phi`` is ``u(phi - phi0 - pi/2)`` (``[-1, 0]`` when flat).
    """
    phi0 = foot_angle_flat(model)
    L = float(model.params["foot"]["sole_length"])
    toe_sw = point(model, "swing_foot", q)

    def sole(phi: float) -> np.ndarray:
        a = phi - phi0 - np.pi / 2
        return L * np.array([np.sin(a), np.cos(a)])

    return {"toe_st": np.zeros(2), "heel_st": sole(q[9]), "toe_sw": toe_sw,
            "heel_sw": toe_sw + sole(q[8])}


def ground_reaction(model: WalkerModel, q: np.ndarray, qd: np.ndarray, qdd: np.ndarray,
                    alpha: float) -> tuple[np.ndarray, float]:
    """Stance-foot ground reaction ``F`` (2,) [N] and its centre of pressure ``d`` [m].

    Newton-Euler on the whole body with the base (stance toe) at rest:
    ``F = sum_k m_k (cdd_k - g_t)`` and the clockwise moment about the toe
    ``tau = sum_k m_k (r_y (cdd_x - g_x) - r_x (cdd_y - g_y)) + sum_j I_j qdd_j``
    (``dL/dt`` minus the gravity moment, clockwise positive as in
    :func:`rbc.walkers.hybrid.model.angular_momentum`); a normal force at ``d`` along the sole has
    clockwise moment ``-d F_N``, so ``d = -tau / F_N`` (0 at the toe, ``-sole_length`` at
    the heel). ``q, qd, qdd``: (10,) full coordinates (flat foot: ``qd[9] = qdd[9] = 0``).
    """
    s, c = np.sin(q), np.cos(q)
    qd2 = qd * qd
    r = np.stack([model.A @ s, model.A @ c], axis=1)  # (K, 2)
    gt = model.g * np.array([np.sin(alpha), -np.cos(alpha)])
    a = np.stack([model.A @ (c * qdd - s * qd2), model.A @ (-s * qdd - c * qd2)], axis=1) - gt
    F = model.m @ a
    tau = model.m @ (r[:, 1] * a[:, 0] - r[:, 0] * a[:, 1]) + model.I @ qdd
    return F, float(-tau / F[1]) if F[1] > 0 else float("nan")


def freed_foot_impact(model: WalkerModel, q: np.ndarray, qd: np.ndarray):
    """11-coordinate flat-foot touchdown (the impact used by :func:`walk_footed`).

    Written in the *new* stance chart: coordinates ``q+ = R q`` with the landing foot's
    orientation locked flat (it is not a coordinate: 9 angles) and the landing toe freed,
    ``q_e = [q+_(9), p]`` (11). Before impact ``qd_e- = [R qd (9), v_toe-]`` where
    ``v_toe-`` is the landing toe's velocity; the closure is ``p_dot+ = 0``
    (``E_2 = [0, I_2]``). The block system of :mod:`rbc.walkers.hybrid.impact` gives ``qd_e+`` and
    the force impulse ``(F_T, F_N)``. The locking (foot-slap) moment is the generalized
    impulse on the locked angle in the 12-coordinate chart,
    ``M = [D_e,12 (qd_e+ - qd_e-)]_foot``. Exact when the landing foot does not rotate
    before impact (``qd[8] = 0``, which the flat-foot swing constraint enforces);
    :func:`rbc.walkers.hybrid.impact.solve_impact` with three rows in the old chart is the
    general form and is used as a cross-check in the tests.

    Args:
        model: the footed model (10 coordinates, toe-roll order).
        q, qd: (10,) pre-impact toe-roll state in the old stance chart.

    Returns:
        ``(report, qd_plus (10,) in the new chart, M [N m s])``; ``report.impulse`` is
        ``(F_T, F_N, M)`` and ``report.liftoff_velocity`` the normal velocity of the old
        stance toe after impact.
    """
    idx = list(model.relabel)
    qn = q[idx]
    qdn = qd[idx]
    a = model.points["swing_foot"] * qd
    v_toe = np.array([a @ np.cos(q), -(a @ np.sin(q))])
    flat = model.frozen(N_FLAT)
    De = extended_inertia(flat, qn[:N_FLAT])
    E = np.hstack([np.zeros((2, N_FLAT)), np.eye(2)])
    qd_minus = np.concatenate([qdn[:N_FLAT], v_toe])
    rep = solve_impact(De, E, qd_minus, model.mu, 0.0)
    qd_plus = np.append(rep.qd_e[:N_FLAT], 0.0)
    # locking moment: 12-coordinate chart, generalized impulse on the foot angle (index 9)
    De12 = extended_inertia(model, qn)
    dqe = np.concatenate([qd_plus, [0.0, 0.0]]) - np.concatenate([qdn[:N_FLAT], [0.0],
                                                                  v_toe])
    dqe[N_FLAT] = -qdn[N_FLAT]  # locked: its rate goes to 0
    M = float((De12 @ dqe)[N_FLAT])
    b = model.points["swing_foot"] * qd_plus
    lift = float(-(b @ np.sin(qn)))  # old stance toe (new swing toe), base at rest
    from dataclasses import replace

    rep = replace(rep, qd_e=rep.qd_e, impulse=np.append(rep.impulse, M),
                  liftoff_ok=bool(lift > 0), liftoff_velocity=lift)
    return rep, qd_plus, M

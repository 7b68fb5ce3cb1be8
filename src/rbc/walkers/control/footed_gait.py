"""Posture-defined gait of the footed walker (virtual-constraint shapes).

The touchdown posture ``q-`` is solved so the flat swing foot touches the ground; ``q+ =
R q-``; degree-5 Bezier shapes join ``H0 q+`` to ``H0 q-`` (Westervelt et al. 2007,
Sec. 6.2-6.3, adapted to feet after Choi & Grizzle, ACC 2005).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import brentq

from rbc.walkers.control.vc import Bezier
from rbc.walkers.errors import WalkerError
from rbc.walkers.hybrid.foot import N_FULL, foot_angle_flat, freed_foot_impact
from rbc.walkers.hybrid.model import WalkerModel, point


@dataclass(frozen=True)
class FootedDesign:
    """Posture-defined gait of the footed walker.

    Attributes:
        q_minus, q_plus: (10,) touchdown posture and its relabeling [rad].
        H0: (9, 10) output rows (8 shape outputs, then the toe-roll stance ankle).
        shapes: :class:`Bezier` (9 rows, degree 5) in the phase ``s``.
        c: (10,) phase coefficients (virtual stance leg ``(q_shank + q_thigh)/2``).
        theta_plus, theta_minus: phase at s = 0 and s = 1 [rad]. s_heel_rise: heel-rise s.
    """

    q_minus: np.ndarray
    q_plus: np.ndarray
    H0: np.ndarray
    shapes: Bezier
    c: np.ndarray
    theta_plus: float
    theta_minus: float
    s_heel_rise: float
    names: tuple[str, ...] = ("pelvis", "torso", "arm_st", "arm_mirror", "knee_st",
                              "leg_mirror", "knee_sw", "foot_sw", "ankle_st")


def design_gait(model: WalkerModel) -> FootedDesign:
    """Solve the touchdown posture and build the shapes from the model's ``gait`` section.

    Raises:
        WalkerError: the swing foot cannot reach the ground, or the phase variable would
            not be strictly monotone (``theta_plus >= theta_minus``).
    """
    g = model.params["gait"]
    phi0 = foot_angle_flat(model)
    te, kst, ksw = float(g["theta_end"]), float(g["knee_st_end"]), float(g["knee_sw_end"])
    q = np.zeros(N_FULL)
    q[0], q[1] = te + kst / 2, te - kst / 2
    q[2], q[3] = float(g["pelvis"]), float(g["torso_lean"])
    q[4], q[5] = -float(g["arm_amplitude"]), float(g["arm_amplitude"])
    q[8], q[9] = phi0, phi0 + float(g["toe_roll"])

    def toe_height(phi: float) -> float:
        qq = q.copy()
        qq[6], qq[7] = phi - ksw / 2, phi + ksw / 2
        return point(model, "swing_foot", qq)[1]

    lo, hi = -1.2, 0.0
    if toe_height(lo) * toe_height(hi) > 0:
        raise WalkerError("gait design: the flat swing foot cannot reach the ground; "
                          "check gait.theta_end, knee_st_end, knee_sw_end, toe_roll")
    phi = brentq(toe_height, lo, hi, xtol=1e-15)
    q[6], q[7] = phi - ksw / 2, phi + ksw / 2
    qp = q[list(model.relabel)]
    c = np.zeros(N_FULL)
    c[0] = c[1] = 0.5
    th_p, th_m = float(c @ qp), float(c @ q)
    if not th_m > th_p:
        raise WalkerError(f"phase variable not strictly monotone: theta+ = {th_p:.3f} >= "
                          f"theta- = {th_m:.3f} rad")
    H0 = np.zeros((9, N_FULL))
    H0[0, 2] = H0[1, 3] = H0[2, 4] = 1.0
    H0[3, [4, 5]] = 1.0
    H0[4, 0], H0[4, 1] = 1.0, -1.0
    H0[5, [0, 1, 6, 7]] = 0.5
    H0[6, 7], H0[6, 6] = 1.0, -1.0
    H0[7, 8] = 1.0
    H0[8, 0], H0[8, 9] = 1.0, -1.0
    k = np.linspace(0.0, 1.0, 6)
    a0, a1 = H0 @ qp, H0 @ q
    alpha = a0[:, None] + (a1 - a0)[:, None] * k  # straight lines between the postures
    profile = np.array(g.get("swing_knee_profile", [0.6, 1.0, 1.0, 0.6]), dtype=float)
    alpha[6, 1:5] += float(g["swing_knee_lift"]) * profile
    alpha[7, 1:] = phi0  # swing foot flat from early swing on
    # toe-roll ankle: linear in s through (s_hr, flat-foot value) and (1, touchdown value)
    s_hr = float(g["heel_rise_s"])
    pre = Bezier(alpha[:8])
    hd = pre(s_hr)[0]
    th = th_p + s_hr * (th_m - th_p)
    ankle_hr = th + hd[4] / 2 - phi0  # q_shank(s_hr) - q_foot_flat
    slope = (a1[8] - ankle_hr) / (1.0 - s_hr)
    alpha[8] = a1[8] - slope * (1.0 - k)
    if g.get("impact_invariant", False):
        alpha = _impact_invariant_alpha(model, alpha, H0, c, th_p, th_m, q)
    return FootedDesign(q, qp, H0, Bezier(alpha), c, th_p, th_m, s_hr)


def _impact_invariant_alpha(model, alpha, H0, c, th_p, th_m, q_minus):
    """Second Bezier points of the 8 shape outputs chosen so ``y = 0`` survives touchdown.

    On the toe-roll constraint surface at ``s = 1`` the velocity direction is
    ``qd- = [J(1); c]^-1 [0; 1]`` (10 equations: 9 outputs + phase). The freed-foot impact
    is linear in velocity, so ``qd+`` (new chart) has a fixed direction and
    ``h_d'(0) = dtheta H0 qd+ / (c . qd+)`` with ``h_d'(0) = M (alpha_1 - alpha_0)`` makes
    the flat-foot outputs zero right after impact (Westervelt et al. 2007, Sec. 6.3.2;
    the same construction as :func:`rbc.walkers.control.vc.impact_invariant`).
    """
    dth = th_m - th_p
    bz = Bezier(alpha)
    _, hd1, _ = bz(1.0)
    J = H0 - np.outer(hd1, c / dth)
    qdm = np.linalg.solve(np.vstack([J, c]), np.append(np.zeros(9), 1.0))
    qdm[8] = 0.0  # the landing foot is held flat (its shape is constant near s = 1)
    _, qdp, _ = freed_foot_impact(model, q_minus, qdm)
    M = alpha.shape[1] - 1
    out = alpha.copy()
    out[:8, 1] = alpha[:8, 0] + dth * (H0[:8] @ qdp) / (c @ qdp) / M
    return out

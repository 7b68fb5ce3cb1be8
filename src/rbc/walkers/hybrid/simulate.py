"""Hybrid simulation of point-foot walkers: swing phase, guard, impact, relabeling.

One stride = RK4 swing integration (:mod:`rbc.walkers.hybrid.swing`) until the swing foot reaches
the ground ahead of the stance foot, then the rigid impact (:mod:`rbc.walkers.hybrid.impact`) and
the leg relabeling. The model of the hybrid system is Westervelt et al. 2007, Sec. 3.4
("systems with impulse effects"). The run stops cleanly with a reason on a fall.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from rbc.walkers.errors import WalkerError
from rbc.walkers.hybrid.impact import ImpactReport, point_foot_impact, relabel
from rbc.walkers.hybrid.model import WalkerModel, point


@dataclass
class Stride:
    """One completed stride (a step of one leg).

    Attributes:
        duration: swing duration [s]. length: step length along the slope [m] (base shift).
        impulse: (k,) impact impulse [N s]. impact: the :class:`ImpactReport`.
        x_minus: (2n,) pre-impact state. x_plus: post-impact relabeled state (the Poincaré
            sample; (2n,), or (18,) flat-foot state for the footed walker).
        extra: walker-specific data (footed: CoP, slap moment, heel-rise energies...).
    """

    duration: float
    length: float
    impulse: np.ndarray
    impact: ImpactReport
    x_minus: np.ndarray
    x_plus: np.ndarray
    extra: dict = field(default_factory=dict)

    @property
    def speed(self) -> float:
        """Average speed along the slope [m/s]."""
        return self.length / self.duration


@dataclass
class WalkResult:
    """A simulated walk.

    Attributes:
        strides: completed strides. fell: whether the run stopped on a fall.
        fall_reason: the reason, or None. t: (N,) time [s]. x: (N, 2n) states.
        u: (N, nu) torques [N m]. stride_index: (N,) stride of each sample.
        base: (N, 2) stance base position in the tilted frame [m].
        phase: (N,) phase label per sample (footed walkers: 0 flat foot, 1 toe roll).
    """

    model: WalkerModel
    alpha: float
    strides: list[Stride]
    fell: bool
    fall_reason: str | None
    t: np.ndarray
    x: np.ndarray
    u: np.ndarray
    stride_index: np.ndarray
    base: np.ndarray
    phase: np.ndarray | None = None

    @property
    def poincare(self) -> np.ndarray:
        """(strides, 2n) post-impact states, the Poincaré samples."""
        return np.array([s.x_plus for s in self.strides])


def phase_coefficients(model: WalkerModel) -> np.ndarray:
    """(n,) coefficients ``c`` of the linear phase quantity ``theta(q) = c . q`` [rad]."""
    coeffs = model.params.get("phase", {}).get("coefficients", {model.coords[0]: 1.0})
    c = np.zeros(model.n)
    for k, v in coeffs.items():
        c[model.index(k)] = float(v)
    return c


def make_guard(model: WalkerModel, foot: str = "swing_foot"):
    """Touchdown guard: swing foot height, armed (anti-scuffing) only when the swing foot
    is ahead of the stance foot by more than ``min_step`` (model param, default 0.1 leg
    length) and moving down."""
    leg = float(model.params.get("leg_length", 1.0))
    min_step = float(model.params.get("min_step", 0.1 * leg))
    n = model.n
    a = model.points[foot]
    av = model.points_v.get(foot)

    def guard(x: np.ndarray) -> tuple[bool, float]:
        q, qd = x[:n], x[n:]
        s, c = np.sin(q), np.cos(q)
        xf, yf = a @ s, a @ c
        vy = -(a * qd) @ s
        return bool(xf > min_step and vy < 0.0), float(yf)

    def guard_offsets(x: np.ndarray) -> tuple[bool, float]:
        q, qd = x[:n], x[n:]
        s, c = np.sin(q), np.cos(q)
        xf, yf = a @ s + av @ c, a @ c - av @ s
        vy = -((a * qd) @ s + (av * qd) @ c)
        return bool(xf > min_step and vy < 0.0), float(yf)

    return guard if av is None else guard_offsets


def make_posture_watch(model: WalkerModel):
    """Posture part of the fall detector: ``watch(q, qd) -> reason or None`` for the hip
    below half the leg length, phase rate <= 0 (backward fall) and joint limits."""
    leg = float(model.params.get("leg_length", 1.0))
    c = phase_coefficients(model)
    hip = model.points["hip"]
    lim = model.limits
    pa, ch = lim[:, 0].astype(int), lim[:, 1].astype(int)
    lo, hi = lim[:, 2], lim[:, 3]
    half = 0.5 * leg

    hip_v = model.points_v.get("hip")

    def posture(q: np.ndarray, qd: np.ndarray) -> str | None:
        if (hip @ np.cos(q) if hip_v is None else point(model, "hip", q)[1]) < half:
            hx = point(model, "hip", q)[0]
            return "forward fall: hip below half leg length" if hx > 0 else (
                "backward fall: hip below half leg length")
        if c @ qd <= 0.0:
            return "backward fall: phase variable stopped increasing"
        if len(lim):
            rel = q[ch] - q[pa]
            bad = (rel < lo) | (rel > hi)
            if bad.any():
                k = int(np.argmax(bad))
                return (f"joint limit: {model.coords[ch[k]]} - {model.coords[pa[k]]} = "
                        f"{rel[k]:.3f} rad outside [{lo[k]}, {hi[k]}]")
        return None

    return posture


def make_watch(model: WalkerModel, alpha: float):
    """Fall detector: the posture checks of :func:`make_posture_watch`, then a
    non-positive stance normal force (liftoff) and stance slip."""
    n = model.n
    mgx, mgy = model.m_total * model.g * np.sin(alpha), -model.m_total * model.g * np.cos(alpha)
    w, wv, offsets = model.w, model.wv, model.has_offsets
    mu = model.mu
    posture = make_posture_watch(model)

    def watch(x: np.ndarray, xd: np.ndarray, u: np.ndarray) -> str | None:
        q, qd, qdd = x[:n], x[n:], xd[n:]
        why = posture(q, qd)
        if why:
            return why
        # stance reaction F = sum_k m_k cdd_k - m_tot g_t, cdd_k = sum_j A_kj (v qdd - u qd^2)
        wc, ws, qd2 = w * np.cos(q), w * np.sin(q), qd * qd
        Fx, Fy = wc @ qdd - ws @ qd2 - mgx, -(ws @ qdd) - wc @ qd2 - mgy
        if offsets:  # d^2/dt^2 (wv v(q)) = wv (-u qdd - v qd^2)
            vc, vs = wv * np.cos(q), wv * np.sin(q)
            Fx, Fy = Fx - vs @ qdd - vc @ qd2, Fy - vc @ qdd + vs @ qd2
        if Fy <= 0.0:
            return "liftoff: stance foot normal force <= 0"
        if abs(Fx) > mu * Fy:
            return "slip: stance force outside the friction cone"
        return None

    return watch


def check_start(model: WalkerModel, x0: np.ndarray, alpha: float) -> None:
    """Raise :class:`WalkerError` if ``x0`` cannot start a stride.

    Raises:
        WalkerError: wrong size, non-positive phase rate, hip too low, or a slope outside
            (-pi/4, pi/4).
    """
    if not -np.pi / 4 < alpha < np.pi / 4:
        raise WalkerError(f"slope {alpha} rad cannot be walked; expected |slope| < pi/4")
    if x0.shape != (2 * model.n,):
        raise WalkerError(f"initial state must have {2 * model.n} entries, got {x0.shape}")
    c = phase_coefficients(model)
    if c @ x0[model.n:] <= 0.0:
        raise WalkerError(
            "initial state cannot start a stride: the phase variable is not increasing "
            f"(dtheta/dt = {c @ x0[model.n:]:.3g} rad/s <= 0)")
    leg = float(model.params.get("leg_length", 1.0))
    if point(model, "hip", x0[: model.n])[1] < 0.5 * leg:
        raise WalkerError("initial state cannot start a stride: hip below half leg length")


def stride(model: WalkerModel, ctrl, alpha: float, x0: np.ndarray, dt: float,
           t_max: float | None = None):
    """Simulate one swing phase and its impact.

    ``t_max``: stride time limit [s] (None: :func:`rbc.walkers.hybrid.registry.
    stride_time_limit`, four pendulum periods of the leg).

    Returns:
        ``(segment, impact_report or None, x_plus or None, reason or None)``.
    """
    from rbc.walkers.hybrid.registry import stride_time_limit
    from rbc.walkers.hybrid.swing import forward_dynamics, integrate_until

    n = model.n
    if t_max is None:
        t_max = stride_time_limit(model)
    hold = None
    if hasattr(ctrl, "accel"):  # built-in: part of the vector field, every RK4 stage

        def deriv(x: np.ndarray, u):
            qdd, ua = ctrl.accel(x[:n], x[n:])
            return np.concatenate([x[n:], qdd]), ua

    else:  # user controller u = ctrl(t, q, qd): sampled once per step, held (ZOH)

        def deriv(x: np.ndarray, u):
            return np.concatenate([x[n:], forward_dynamics(model, x[:n], x[n:], u, alpha)]), u

        def hold(t: float, x: np.ndarray) -> np.ndarray:
            return np.asarray(ctrl(t, x[:n], x[n:]), dtype=float)

    seg = integrate_until(deriv, x0, dt, t_max, make_guard(model), make_watch(model, alpha),
                          hold=hold)
    if seg.event != "guard":
        return seg, None, None, seg.reason
    xm = seg.x[-1]
    rep = point_foot_impact(model, xm[:n], xm[n:])
    reason = rep.failure()
    qp, qdp = relabel(model, xm[:n], rep.qd_e[:n])
    return seg, rep, np.concatenate([qp, qdp]), reason


def walk(model: WalkerModel, ctrl, alpha: float, x0: np.ndarray, strides: int,
         dt: float = 1e-3, t_max: float | None = None, progress=None) -> WalkResult:
    """Simulate up to ``strides`` strides from the post-impact state ``x0`` (2n,).

    Args:
        ctrl: a built-in controller (``accel(q, qd) -> (qdd, u)``, evaluated at every RK4
            stage), see :func:`rbc.walkers.control.controllers.make_controller`; or a user
            controller ``ctrl(t, q, qd) -> u (nu,)`` [N m], sampled at the start of each
            step and held over it (zero-order hold; ``t`` from the start of the stride).
        progress: optional callable ``progress(i)`` after each stride.

    Raises:
        WalkerError: the initial state or slope cannot start a stride.
    """
    x0 = np.asarray(x0, dtype=float)
    check_start(model, x0, alpha)
    n = model.n
    recs: list[Stride] = []
    ts, xs, us, idx, bases = [], [], [], [], []
    t0, base = 0.0, np.zeros(2)
    x = x0
    fell, reason = False, None
    for i in range(strides):
        seg, rep, xp, why = stride(model, ctrl, alpha, x, dt, t_max)
        ts.append(seg.t + t0)
        xs.append(seg.x)
        us.append(seg.u)
        idx.append(np.full(len(seg.t), i))
        bases.append(np.tile(base, (len(seg.t), 1)))
        if rep is None or why is not None:
            fell, reason = True, why
            break
        step = point(model, "swing_foot", seg.x[-1][:n])
        recs.append(Stride(float(seg.t[-1]), float(step[0]), rep.impulse, rep, seg.x[-1], xp))
        base = base + step
        t0 += seg.t[-1]
        x = xp
        if progress is not None:
            progress(i)
    return WalkResult(model, alpha, recs, fell, reason, np.concatenate(ts), np.concatenate(xs),
                      np.concatenate(us), np.concatenate(idx), np.concatenate(bases))

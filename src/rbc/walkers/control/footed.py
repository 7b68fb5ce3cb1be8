"""Footed planar humanoid: flat-foot and toe-roll phases, heel rise, flat-foot touchdown.

Method: Choi & Grizzle, "Planar bipedal walking with foot rotation", ACC 2005, and
Westervelt et al. 2007, Ch. 8 (walking with feet): a fully actuated flat-foot phase and an
underactuated toe-roll phase, each under computed torque on virtual constraints.

* Base = stance toe (geometry, ground reaction and touchdown impact in
  :mod:`rbc.walkers.hybrid.foot`, gait shapes in :mod:`rbc.walkers.control.footed_gait`);
  coordinates (10,) = link angles with the stance-foot angle LAST.
  Flat foot: the stance foot is fixed, ``q[9]`` is frozen, the dynamics are the first 9
  rows/columns (:meth:`WalkerModel.frozen`), 9 actuators -> fully actuated. Outputs: the 8
  shape outputs ``y = H0 q - h_d(s)`` plus the phase-rate output
  ``sdd = -k_s (sdot - sdot_d)`` (the stance ankle drives progression).
* Heel rise at ``s = s_hr`` (a guard on the phase variable): the state is embedded,
  ``q10 = [q9, q_foot]``, ``qd10 = [qd9, 0]`` — positions and velocities continuous, hence
  the energy identical. Toe roll: 10 coordinates, 9 actuators (one degree of
  underactuation, rotation about the toe); outputs: the 8 shape outputs plus the stance
  ankle angle ``q_shank - q_foot``.
* Touchdown of the flat swing foot: the 11-coordinate freed-foot impact
  (:func:`freed_foot_impact`: new-chart 9 angles with the landing foot's orientation
  locked, plus the freed landing-toe position). The impulse ``(F_T, F_N, M)`` gives the
  foot-slap moment ``M`` (generalized impulse on the locked foot angle, clockwise) and the
  centre of pressure ``d = -M / F_N`` along the sole from the toe
  (``-sole_length <= d <= 0`` inside the sole). The new stance foot is then frozen flat.
* The gait is defined by its touchdown posture ``q-`` (solved so the flat swing foot
  touches the ground), ``q+ = R q-``, and degree-5 Bezier shapes between ``H0 q+`` and
  ``H0 q-`` (knee lift for clearance, swing foot flat from ``s = 0.2``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.linalg.lapack import dgesv as _gesv

from rbc.walkers.control.footed_gait import FootedDesign, design_gait
from rbc.walkers.control.vc import Bezier
from rbc.walkers.errors import WalkerError
from rbc.walkers.hybrid.foot import (
    N_FLAT,
    N_FULL,
    foot_angle_flat,
    freed_foot_impact,
    ground_reaction,
    sole_points,
)
from rbc.walkers.hybrid.model import FusedTerms, WalkerModel, energy, point
from rbc.walkers.hybrid.simulate import Stride, WalkResult
from rbc.walkers.hybrid.swing import integrate_until

__all__ = ["FootedDesign", "FootedWalker", "PhaseFL", "design_gait", "foot_angle_flat",
           "freed_foot_impact", "ground_reaction", "sole_points", "walk_footed"]


@dataclass(frozen=True)
class PhaseFL:
    """Computed torque for one footed phase: ``[[D, -B], [J, 0]] [qdd; u] = [-(H+G); v]``.

    Rows of ``J``: the shape outputs ``H0 - h_d'(s) c^T/dtheta`` (``v = -kp y - kd dy +
    h_d'' sdot^2``) and, in the flat-foot phase, the phase row ``c^T/dtheta`` with
    ``v = -ks (sdot - sdot_d)``. Square: n + nu unknowns, n + nu equations.

    Attributes:
        model: the phase model (9 or 10 coordinates). alpha: slope [rad].
        H0: (p, n) rows. shapes: :class:`Bezier` with p rows. c: (n,) phase coefficients.
        theta_plus, dtheta: phase offset and range [rad]. kp, kd: output gains.
        speed: ``(ks, sdot_d)`` for the flat-foot phase-rate row, or None.
    """

    model: WalkerModel
    alpha: float
    H0: np.ndarray
    shapes: Bezier
    c: np.ndarray
    theta_plus: float
    dtheta: float
    kp: float
    kd: float
    speed: tuple[float, float] | None = None
    _pre: dict = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        m = self.model
        n, nu = m.B.shape
        p = self.H0.shape[0]
        K = np.zeros((n + p + (self.speed is not None), n + nu))
        if K.shape[0] != K.shape[1]:
            raise WalkerError(f"phase controller is not square: {p} outputs, {nu} actuators")
        K[:n, n:] = -m.B
        cd = self.c / self.dtheta
        if self.speed is not None:
            K[-1, :n] = cd
        sh = self.shapes
        self._pre.update(K=K, rhs=np.zeros(K.shape[0]), n=n, p=p, cd=cd,
                         th0=self.theta_plus / self.dtheta,
                         P012=np.vstack([sh.P0, sh.P1, sh.P2]), pow=sh._pow,
                         terms=FusedTerms(m, self.alpha))

    def phase(self, q: np.ndarray) -> float:
        """Normalized phase ``s``."""
        return float(self._pre["cd"] @ q - self._pre["th0"])

    def outputs(self, q: np.ndarray, qd: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(y (p,), dy (p,))`` of the shape outputs."""
        s, sd = self.phase(q), float(self._pre["cd"] @ qd)
        hd, hd1, _ = self.shapes(s)
        return self.H0 @ q - hd, self.H0 @ qd - hd1 * sd

    def accel(self, q: np.ndarray, qd: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Closed-loop ``(qdd (n,), u (nu,))``."""
        P = self._pre
        n, p = P["n"], P["p"]
        K, rhs = P["K"], P["rhs"]
        K[:n, :n], rhs[:n] = P["terms"](q, qd)  # D, -(H + G)
        cd = P["cd"]
        s = cd @ q - P["th0"]
        sd = cd @ qd
        h = (P["P012"] @ (s ** P["pow"])).reshape(3, p)
        K[n:n + p, :n] = self.H0 - h[1][:, None] * cd
        rhs[n:n + p] = (-self.kp * (self.H0 @ q - h[0]) - self.kd * (self.H0 @ qd - h[1] * sd)
                        + h[2] * (sd * sd))
        if self.speed is not None:
            rhs[-1] = -self.speed[0] * (sd - self.speed[1])
        _, _, sol, info = _gesv(K, rhs)
        if info != 0:
            raise WalkerError(f"footed phase model: the computed-torque system is singular at "
                              f"q = {np.round(q, 4).tolist()} rad")
        return sol[:n], sol[n:]


@dataclass(frozen=True)
class FootedWalker:
    """The two phase controllers and the design of a footed walker on slope ``alpha``."""

    model: WalkerModel
    alpha: float
    design: FootedDesign
    flat: PhaseFL
    toe: PhaseFL

    @classmethod
    def from_model(cls, model: WalkerModel, alpha: float = 0.0) -> FootedWalker:
        """Build from the ``gait`` section of the model file.

        Raises:
            WalkerError: the model has no feet/gait section, or the design fails.
        """
        if "gait" not in model.params or "foot" not in model.params:
            raise WalkerError(f"model '{model.name}' has no feet ('foot' and 'gait' sections)")
        d = design_gait(model)
        g = model.params["gait"]
        kp, kd = float(g["kp"]), float(g["kd"])
        dth = d.theta_minus - d.theta_plus
        flat_model = model.frozen(N_FLAT)
        flat = PhaseFL(flat_model, alpha, d.H0[:8, :N_FLAT], Bezier(d.shapes.alpha[:8]),
                       d.c[:N_FLAT], d.theta_plus, dth, kp, kd,
                       speed=(float(g["ks"]), float(g["speed"])))
        toe = PhaseFL(model, alpha, d.H0, d.shapes, d.c, d.theta_plus, dth, kp, kd)
        return cls(model, alpha, d, flat, toe)

    def initial_state(self, speed: float | None = None) -> np.ndarray:
        """Flat-foot state (18,) at ``s = 0`` on the constraints with ``ds/dt = speed``.

        Raises:
            WalkerError: ``speed <= 0``.
        """
        sd = float(self.model.params["gait"]["speed"]) if speed is None else speed
        if sd <= 0:
            raise WalkerError(f"phase rate {sd} cannot start a stride (must be > 0)")
        f = self.flat
        q = self.design.q_plus[:N_FLAT].copy()
        hd1 = f.shapes(0.0)[1]
        cd = f._pre["cd"]
        J = np.vstack([f.H0 - np.outer(hd1, cd), cd])
        qd = np.linalg.solve(J, np.append(np.zeros(8), sd))
        return np.concatenate([q, qd])


def _deriv(ctrl: PhaseFL):
    n = ctrl.model.n

    def deriv(x: np.ndarray, u):
        qdd, ua = ctrl.accel(x[:n], x[n:])
        return np.concatenate([x[n:], qdd]), ua

    return deriv


def _plant_deriv(model: WalkerModel, act, alpha: float):
    """True-plant vector field ``xdot = [qd, D^-1 (B act(u) - H - G)]`` for a held ``u``."""
    from rbc.walkers.hybrid.swing import forward_dynamics

    n = model.n

    def deriv(x: np.ndarray, u):
        return np.concatenate([x[n:], forward_dynamics(model, x[:n], x[n:], act(u), alpha)]), u

    return deriv


def walk_footed(walker: FootedWalker, x0: np.ndarray, strides: int, dt: float | None = None,
                t_max: float = 3.0, progress=None, plant=None, controller=None) -> WalkResult:
    """Simulate the footed walker from the flat-foot state ``x0`` (18,).

    Each stride: flat foot until ``s = s_hr`` (heel rise), toe roll until the flat swing
    foot touches down (guard armed when the swing toe is ``min_step`` ahead and moving
    down), impact with the CoP check, relabeling. During flat foot the ground reaction
    (:func:`ground_reaction`) must push (``F_N > 0``), stay in the friction cone and keep its
    centre of pressure inside the sole, else the run stops ("foot rotation"). ``Stride.extra``
    holds ``heel_rise_energy`` (energy before, after [J]), ``cop`` (impact CoP offset from
    the toe [m]), ``slap_moment`` [N m s], ``cop_ok``, ``toe_roll_duration`` [s],
    ``flat_cop_range`` (min, max flat-foot CoP [m], sampled every step).

    With ``plant = (true_model, actuation)`` and ``controller(phase, t, x) -> u`` (phase 0
    flat foot, 1 toe roll; sampled once per step and held) the true plant is integrated
    instead of the built-in design-model closed loop, and the ground reaction, the checks
    and the touchdown impact use the true model (:mod:`rbc.walkers.environment.plant`).

    Raises:
        WalkerError: the initial state cannot start a stride.
    """
    d = walker.design
    m = walker.model if plant is None else plant[0]
    if controller is None:
        derivs, holds = (_deriv(walker.flat), _deriv(walker.toe)), (None, None)
    else:
        derivs = (_plant_deriv(m.frozen(N_FLAT), plant[1], walker.alpha),
                  _plant_deriv(m, plant[1], walker.alpha))
        holds = (lambda t, x: controller(0, t, x), lambda t, x: controller(1, t, x))
    g = m.params["gait"]
    dt = float(g.get("dt", 5e-4)) if dt is None else dt
    phi0 = foot_angle_flat(m)
    L = float(m.params["foot"]["sole_length"])
    leg = float(m.params["leg_length"])
    min_step = float(m.params.get("min_step", 0.1))
    x0 = np.asarray(x0, dtype=float)
    if x0.shape != (2 * N_FLAT,):
        raise WalkerError(f"footed initial state must have {2 * N_FLAT} entries")
    if walker.flat._pre["cd"] @ x0[N_FLAT:] <= 0:
        raise WalkerError("initial state cannot start a stride: phase rate <= 0")
    a_hip = m.points["hip"]
    a_toe = m.points["swing_foot"]

    def hip_low(q_full: np.ndarray) -> bool:
        return a_hip @ np.cos(q_full) < 0.5 * leg

    recs: list[Stride] = []
    ts, xs, us, idx, bases, phases = [], [], [], [], [], []
    t0, base = 0.0, np.zeros(2)
    x, q_foot = x0, phi0
    fell, reason = False, None
    cdf, cdt = walker.flat._pre["cd"], walker.toe._pre["cd"]
    th0 = walker.flat._pre["th0"]
    gt = m.g * np.array([np.sin(walker.alpha), -np.cos(walker.alpha)])
    for i in range(strides):
        cops: list[float] = []
        # ---- flat foot -------------------------------------------------------------
        def guard_hr(xx):
            return True, d.s_heel_rise - (cdf @ xx[:N_FLAT] - th0)

        def watch_flat(xx, xd, u, q_foot=q_foot, cops=cops):
            if cdf @ xx[N_FLAT:] <= 0:
                return "backward fall: phase variable stopped increasing"
            qf = np.append(xx[:N_FLAT], q_foot)
            if hip_low(qf):
                return "fall: hip below half leg length"
            F, dcop = ground_reaction(m, qf, np.append(xx[N_FLAT:], 0.0),
                                      np.append(xd[N_FLAT:], 0.0), walker.alpha)
            if F[1] <= 0:
                return "liftoff: stance foot normal force <= 0"
            if abs(F[0]) > m.mu * F[1]:
                return "slip: stance foot force outside the friction cone"
            cops.append(dcop)
            if not -L <= dcop <= 0.0:
                return (f"foot rotation: flat-foot centre of pressure {dcop:.3f} m from the "
                        f"toe, outside the sole [-{L}, 0]")
            return None

        seg1 = integrate_until(derivs[0], x, dt, t_max, guard_hr, watch_flat, hold=holds[0])
        x10 = np.concatenate([seg1.x[:, :N_FLAT], np.full((len(seg1.t), 1), q_foot),
                              seg1.x[:, N_FLAT:], np.zeros((len(seg1.t), 1))], axis=1)
        ts.append(seg1.t + t0)
        xs.append(x10)
        us.append(seg1.u)
        idx.append(np.full(len(seg1.t), i))
        bases.append(np.tile(base, (len(seg1.t), 1)))
        phases.append(np.zeros(len(seg1.t), dtype=int))
        if seg1.event != "guard":
            fell, reason = True, seg1.reason
            break
        # ---- heel rise: embed, positions and velocities continuous ------------------
        xe = seg1.x[-1]
        e_before = energy(m.frozen(N_FLAT), xe[:N_FLAT], xe[N_FLAT:], walker.alpha) + (
            m.g * m.w[9] * np.cos(q_foot + walker.alpha))
        xt = x10[-1]
        e_after = energy(m, xt[:N_FULL], xt[N_FULL:], walker.alpha)
        t1 = t0 + seg1.t[-1]

        # ---- toe roll ---------------------------------------------------------------
        def guard_td(xx):
            q, qd = xx[:N_FULL], xx[N_FULL:]
            s_, c_ = np.sin(q), np.cos(q)
            return bool(a_toe @ s_ > min_step and -(a_toe * qd) @ s_ < 0), float(a_toe @ c_)

        def watch_toe(xx, xd, u):
            q, qd, qdd = xx[:N_FULL], xx[N_FULL:], xd[N_FULL:]
            if cdt @ qd <= 0:
                return "backward fall: phase variable stopped increasing"
            if hip_low(q):
                return "fall: hip below half leg length"
            if q[9] < phi0 - 1e-3:
                return "double support: stance heel fell back to the ground"
            s_, c_ = np.sin(q), np.cos(q)
            F = np.array([m.w @ (c_ * qdd - s_ * qd * qd), m.w @ (-s_ * qdd - c_ * qd * qd)])
            F = F - m.m_total * gt
            if F[1] <= 0:
                return "liftoff: stance toe normal force <= 0"
            if abs(F[0]) > m.mu * F[1]:
                return "slip: toe force outside the friction cone"
            return None

        seg2 = integrate_until(derivs[1], xt, dt, t_max, guard_td, watch_toe, hold=holds[1])
        ts.append(seg2.t + t1)
        xs.append(seg2.x)
        us.append(seg2.u)
        idx.append(np.full(len(seg2.t), i))
        bases.append(np.tile(base, (len(seg2.t), 1)))
        phases.append(np.ones(len(seg2.t), dtype=int))
        if seg2.event != "guard":
            fell, reason = True, seg2.reason
            break
        # ---- touchdown: 12-coordinate impact, 3 constraint rows --------------------------
        xm = seg2.x[-1]
        q, qd = xm[:N_FULL], xm[N_FULL:]
        rep, qdp, M = freed_foot_impact(m, q, qd)
        F_N = rep.impulse[1]
        cop = -M / F_N if F_N > 0 else np.nan
        cop_ok = bool(-L <= cop <= 0.0)
        step = point(m, "swing_foot", q)
        qp = q[list(m.relabel)]
        x_plus = np.concatenate([qp[:N_FLAT], qdp[:N_FLAT]])
        dur = float(seg1.t[-1] + seg2.t[-1])
        recs.append(Stride(dur, float(step[0]), rep.impulse, rep, xm, x_plus, extra={
            "heel_rise_energy": (float(e_before), float(e_after)), "cop": float(cop),
            "cop_ok": cop_ok, "slap_moment": float(M),
            "toe_roll_duration": float(seg2.t[-1]), "foot_lock_residual": float(qp[9] - phi0),
            "foot_rate_at_touchdown": float(qd[8]),
            "flat_cop_range": (float(min(cops)), float(max(cops))) if cops else None,
        }))
        why = rep.failure() or (None if cop_ok else
                                f"foot slap: centre of pressure {cop:.3f} m outside the sole")
        if why:
            fell, reason = True, why
            break
        base = base + step
        t0 = t1 + seg2.t[-1]
        x, q_foot = x_plus, float(qp[9])
        if progress is not None:
            progress(i)
    return WalkResult(walker.model, walker.alpha, recs, fell, reason, np.concatenate(ts),
                      np.concatenate(xs), np.concatenate(us), np.concatenate(idx),
                      np.concatenate(bases), np.concatenate(phases))

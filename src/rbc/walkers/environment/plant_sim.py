"""Hybrid simulation of a point-foot walker on the true plant under a sampled controller.

The controller (a name from :data:`PLANT_CONTROLLERS`, or a user factory
``factory(ctx) -> ctrl`` with ``ctrl(t, q, qd) -> u``) sees only the design model through a
:class:`rbc.walkers.control.context.ControlContext`; it is sampled once per step and held
(zero-order hold). The integrator (RK4 at the fixed step,
:func:`rbc.walkers.hybrid.swing.rk4_step`) runs the true plant
(:func:`rbc.walkers.environment.plant.true_model`) with ``u_true = eta u + b``, joint friction
and the stick-slip ground of :mod:`rbc.walkers.environment.effects`. An optional safety filter
(:mod:`rbc.walkers.control.safety`) maps the nominal torque to the applied one.

Integrated state (2n + 4): ``[q (n), p_x, qd (n), pdot_x, W_f, W_act]`` with ``p_x`` the
base slide along the ground in this stance, ``W_f`` the work dissipated by friction (joints
and sliding) and ``W_act`` the actuator work ``int u_true . B^T qd dt`` [J], integrated by
the same RK4 so the energy identity ``E + W_f - W_act = const`` holds to the integrator's
accuracy. Events (mode switches, touchdown) are checked after every step; touchdown and
the re-latch zero crossing of ``pdot_x`` are located by Brent's method on the step length;
slip onset is taken at the end of the step in which the stick force left the cone.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from scipy.optimize import brentq

from rbc.walkers.control.context import ControlContext
from rbc.walkers.environment.effects import (
    Ground,
    Impulse,
    JointFriction,
    apply_impulse,
    slip_accel,
    stance_reaction,
)
from rbc.walkers.environment.plant import Actuation, Mismatch, true_model
from rbc.walkers.errors import WalkerError
from rbc.walkers.hybrid.impact import (
    extended_inertia,
    point_jacobian_extended,
    relabel,
    sliding_impact,
    solve_impact,
)
from rbc.walkers.hybrid.model import FusedTerms, WalkerModel, point, solve_mass_matrix
from rbc.walkers.hybrid.simulate import (
    Stride,
    WalkResult,
    check_start,
    make_guard,
    make_posture_watch,
)
from rbc.walkers.hybrid.swing import rk4_step

PLANT_CONTROLLERS = ("fl", "adaptive", "rise", "composite")


@dataclass(frozen=True)
class Scenario:
    """The reality gap: mismatch and environment of the true plant.

    Attributes:
        mismatch: :class:`Mismatch`. friction: joint friction or None. ground:
            :class:`Ground` (None: the design model's ``mu``, rigid pin contact).
        impulses: scheduled trips / pushes.
    """

    mismatch: Mismatch = field(default_factory=Mismatch)
    friction: JointFriction | None = None
    ground: Ground | None = None
    impulses: tuple[Impulse, ...] = ()


@dataclass
class PlantResult(WalkResult):
    """A :class:`WalkResult` on the true plant, plus:

    Attributes:
        aug: (N, 2n+4) integrated states (module docstring). mode: (N,) 0 stick, 1 slip.
        y: (N, p) virtual-constraint outputs [rad]. ema: (N,) tracking EMA of ``|y|^2``
            [rad^2]. u_nominal: (N, nu) controller torque before the safety filter [N m].
        controller_states: (strides,) dicts of internal-state norms after each stride.
        true: the true plant model.
    """

    aug: np.ndarray | None = None
    mode: np.ndarray | None = None
    y: np.ndarray | None = None
    ema: np.ndarray | None = None
    u_nominal: np.ndarray | None = None
    controller_states: list = field(default_factory=list)
    true: WalkerModel | None = None


def build_controller(name: str | Callable, ctx: ControlContext):
    """A sampled controller for ``ctx``: built-in name or user factory ``f(ctx)``.

    Raises:
        WalkerError: unknown name (lists :data:`PLANT_CONTROLLERS`).
    """
    if callable(name):
        return name(ctx)
    from rbc.walkers.control.learning import LEARNING

    if name not in LEARNING:
        raise WalkerError(f"unknown controller '{name}'", choices=PLANT_CONTROLLERS, got=name)
    return LEARNING[name](ctx)


class _Plant:
    """True-plant vector field in one contact mode (internal).

    ``deriv`` leaves the solved normal force of a sliding state in ``last_fn`` [N];
    :meth:`contact` gives ``(F_T, F_N)`` of a state from its derivative.
    """

    def __init__(self, model: WalkerModel, act: Actuation, fric: JointFriction | None,
                 alpha: float):
        self.m, self.act, self.fric, self.alpha = model, act, fric, alpha
        self.n = model.n
        self.mu, self.sigma, self.slipping = model.mu, 1.0, False
        self.BT = np.ascontiguousarray(model.B.T)
        self.terms = FusedTerms(model, alpha)
        self.last_fn = 0.0

    def forces(self, qd: np.ndarray, u: np.ndarray):
        """``(Q (n,), P_act, P_fric_joint)``: generalized force and powers [N m, W]."""
        om = self.BT @ qd
        ut = self.act(u)
        if self.fric is None:
            return self.m.B @ ut, float(ut @ om), 0.0
        tf = self.fric(om)
        return self.m.B @ (ut - tf), float(ut @ om), float(tf @ om)

    def deriv(self, z: np.ndarray, u: np.ndarray):
        n, m = self.n, self.m
        q, qd, pdx = z[:n], z[n + 1:2 * n + 1], z[2 * n + 1]
        Q, p_act, p_f = self.forces(qd, u)
        zd = np.empty_like(z)
        zd[:n], zd[n] = qd, pdx
        if self.slipping:
            qdd, pdd, FN = slip_accel(m, q, qd, Q, self.alpha, self.mu, self.sigma)
            p_f += self.mu * FN * abs(pdx)
            self.last_fn = FN
        else:
            D, mhg = self.terms(q, qd)
            qdd = solve_mass_matrix(m, D, Q + mhg, q)
            pdd = 0.0
        zd[n + 1:2 * n + 1], zd[2 * n + 1] = qdd, pdd
        zd[2 * n + 2], zd[2 * n + 3] = p_f, p_act
        return zd, u

    def contact(self, z: np.ndarray, zd: np.ndarray) -> tuple[float, float]:
        """``(F_T, F_N)`` [N] at state ``z`` with derivative ``zd = deriv(z, u)[0]``."""
        if self.slipping:
            return -self.mu * self.last_fn * self.sigma, self.last_fn
        n = self.n
        F = stance_reaction(self.m, z[:n], z[n + 1:2 * n + 1], zd[n + 1:2 * n + 1],
                            self.alpha)
        return float(F[0]), float(F[1])


def log_touchdown(log: dict, t: float, z: np.ndarray, u: np.ndarray, i: int,
                  base: np.ndarray, slipping: bool) -> None:
    """Append the pre-impact sample (the located touchdown state) to the run log."""
    for k, v in (("t", t), ("z", z.copy()), ("u", u), ("un", u), ("i", i),
                 ("base", base.copy()), ("mode", int(slipping))):
        log[k].append(v)


def tracking_ema(t, y2: np.ndarray, tau: float) -> np.ndarray:
    """Exponential moving mean of ``|y|^2`` (N,) [rad^2]: ``z_k = z_{k-1} + (h_k / tau)
    (|y_k|^2 - z_{k-1})`` with ``h_k = t_k - t_{k-1}`` (clipped at 1; impacts have
    ``h = 0``), ``z_0 = 0``.

    Args:
        t: (N,) sample times [s]. y2: (N,) ``|y|^2`` [rad^2]. tau: time constant [s].
    """
    t = np.asarray(t, dtype=float)
    a = np.minimum(np.diff(t, prepend=t[0]) / tau, 1.0)
    z = np.empty(len(y2))
    acc = 0.0
    for k in range(len(y2)):
        acc += a[k] * (y2[k] - acc)
        z[k] = acc
    return z


def _slide_touchdown(De, E, qd_e, mu, stick):
    """Sliding touchdown when the sticking impulse ``stick`` left the cone: returns the
    report (impulse on the cone boundary) and the new base's sliding velocity [m/s]."""
    from dataclasses import replace

    sigma = -float(np.sign(stick.impulse[0]))  # slides against the impulse it lacked
    qd_p, FT, FN = sliding_impact(De, E, qd_e, mu, sigma)
    v_t = float(E[0] @ qd_p)
    if v_t * sigma <= 0.0 or FN <= 0.0:  # inconsistent: report the stick failure
        return stick, 0.0
    n = De.shape[0] - 2
    rep = replace(stick, qd_e=qd_p, impulse=np.array([FT, FN]), cone_ok=True,
                  cone_utilization=1.0, liftoff_ok=bool(qd_p[n + 1] > 0),
                  liftoff_velocity=float(qd_p[n + 1]))
    return rep, v_t


def _locate(f: Callable[[float], float], dt: float) -> float:
    # step length in (0, dt] at the sign change of f, as tight as the integrator (1e-15 s)
    return brentq(f, 0.0, dt, xtol=1e-15, rtol=4 * np.finfo(float).eps, maxiter=200)


def walk_plant(ctx: ControlContext, controller, scenario: Scenario, x0: np.ndarray,
               strides: int, t_max: float = 4.0, safety=None, ema_tau: float = 1.0,
               progress=None) -> PlantResult:
    """Simulate ``strides`` strides of the true plant from the post-impact state ``x0``.

    Args:
        ctx: design-model context (the controller's only knowledge). controller: name in
            :data:`PLANT_CONTROLLERS` or factory ``f(ctx) -> ctrl(t, q, qd) -> u``.
        scenario: mismatch and environment of the true plant. x0: (2n,) [rad, rad/s].
        safety: optional filter ``safety(q, qd, u_nom, mu) -> u`` (design model).
        ema_tau: time constant of the tracking EMA ``z += dt/tau (|y|^2 - z)`` [s].
        progress: optional ``progress(i)`` after stride i.

    Returns:
        :class:`PlantResult`; ``Stride.extra`` holds ``slip`` (base slide in the stance
        [m]), ``friction_work`` [J], ``actuator_work`` [J], ``mu`` of the stance.

    Raises:
        WalkerError: the initial state or slope cannot start a stride, unknown controller.
    """
    design, alpha, dt = ctx.model, ctx.alpha, ctx.dt
    x0 = np.asarray(x0, dtype=float)
    check_start(design, x0, alpha)
    ctrl = build_controller(controller, ctx)
    mm = scenario.mismatch
    true = true_model(design, mm)
    ground = scenario.ground or Ground(design.mu)
    plant = _Plant(true, Actuation.from_mismatch(mm, design.B.shape[1]), scenario.friction,
                   alpha)
    n = design.n
    guard, posture = make_guard(true), make_posture_watch(true)
    vc = ctx.vc
    recs: list[Stride] = []
    log: dict[str, list] = {k: [] for k in ("t", "z", "u", "un", "i", "base", "mode")}
    base, t0 = np.zeros(2), 0.0
    x = x0
    fell, reason = False, None
    states = []
    pdx0 = 0.0  # base sliding velocity after the previous touchdown [m/s]
    for i in range(strides):
        plant.mu, plant.slipping = ground.mu_at(base[0]), pdx0 != 0.0
        plant.sigma = float(np.sign(pdx0)) if pdx0 != 0.0 else 1.0
        z = np.concatenate([x[:n], [0.0], x[n:], [pdx0, 0.0, 0.0]])
        kicks = sorted((k for k in scenario.impulses if k.stride == i), key=lambda k: k.time)
        t, event = 0.0, None
        armed, gval = guard(np.concatenate([z[:n], z[n + 1:2 * n + 1]]))
        while event is None:
            q, qd = z[:n], z[n + 1:2 * n + 1]
            while kicks and kicks[0].time <= t:
                qd = apply_impulse(true, kicks[0].point, q, qd, np.array(kicks[0].impulse))
                z[n + 1:2 * n + 1] = qd
                kicks.pop(0)
            if hasattr(ctrl, "mode"):
                ctrl.mode = 0  # point feet: one continuous mode (single support)
            un = np.asarray(ctrl(t, q, qd), dtype=float)
            u = safety(q, qd, un, plant.mu) if safety is not None else un
            k1 = plant.deriv(z, u)[0]
            FT, FN = plant.contact(z, k1)
            if not plant.slipping and abs(FT) > plant.mu * FN > 0.0 and ground.stick_slip:
                plant.slipping, plant.sigma = True, -float(np.sign(FT))
                k1 = plant.deriv(z, u)[0]
                FT, FN = plant.contact(z, k1)
            for k, v in (("t", t0 + t), ("z", z.copy()), ("u", u), ("un", un), ("i", i),
                         ("base", base.copy()), ("mode", int(plant.slipping))):
                log[k].append(v)
            why = posture(q, qd) if t > 0.0 else None
            if why is None and FN <= 0.0:
                why = "liftoff: stance foot normal force <= 0"
            if why is None and abs(FT) > plant.mu * FN:
                why = "slip: stance force outside the friction cone"
            if why is None and t >= t_max:
                why = f"no touchdown within {t_max:g} s"
            if why:
                event, reason = "fall", why
                break
            z1 = rk4_step(plant.deriv, z, dt, u, k1)
            h = dt
            x1 = np.concatenate([z1[:n], z1[n + 1:2 * n + 1]])
            armed1, gval1 = guard(x1)
            if armed and armed1 and gval > 0.0 >= gval1:
                def g_of_h(hh, z_=z, u_=u, k_=k1):
                    zz = rk4_step(plant.deriv, z_, hh, u_, k_)
                    return guard(np.concatenate([zz[:n], zz[n + 1:2 * n + 1]]))[1]

                h = _locate(g_of_h, dt)
                z1, event = rk4_step(plant.deriv, z, h, u, k1), "touchdown"
            elif plant.slipping and z[2 * n + 1] * z1[2 * n + 1] < 0.0:
                h = _locate(lambda hh, z_=z, u_=u, k_=k1:
                            rk4_step(plant.deriv, z_, hh, u_, k_)[2 * n + 1], dt)
                z1 = rk4_step(plant.deriv, z, h, u, k1)
                z1[2 * n + 1] = 0.0  # the zero crossing, exactly at rest
                plant.slipping = False
                FT, FN = plant.contact(z1, plant.deriv(z1, u)[0])
                if abs(FT) > plant.mu * FN:  # stick infeasible: slide the other way
                    plant.slipping, plant.sigma = True, -float(np.sign(FT))
            t += h
            z = z1
            armed, gval = armed1, gval1
        if event != "touchdown":
            fell = True
            break
        log_touchdown(log, t0 + t, z, u, i, base, plant.slipping)
        q, p_x, qd, pdx = z[:n], z[n], z[n + 1:2 * n + 1], z[2 * n + 1]
        step = point(true, "swing_foot", q)
        mu_new = ground.mu_at(base[0] + p_x + step[0])
        De, E = extended_inertia(true, q), point_jacobian_extended(true, "swing_foot", q)
        qd_e = np.concatenate([qd, [pdx, 0.0]])
        rep = solve_impact(De, E, qd_e, mu_new, np.nan)
        pdx_new = 0.0
        if ground.stick_slip and rep.normal_ok and not rep.cone_ok:
            rep, pdx_new = _slide_touchdown(De, E, qd_e, mu_new, rep)
        qp, qdp = relabel(true, q, rep.qd_e[:n])
        xp = np.concatenate([qp, qdp])
        length = float(p_x + step[0])
        recs.append(Stride(float(t), length, rep.impulse, rep,
                           np.concatenate([q, qd]), xp, extra={
                               "slip": float(p_x), "friction_work": float(z[2 * n + 2]),
                               "actuator_work": float(z[2 * n + 3]), "mu": plant.mu}))
        states.append(ctrl.state_norms() if hasattr(ctrl, "state_norms") else {})
        why = rep.failure()
        if why is not None:
            fell, reason = True, why
            break
        base = base + np.array([length, 0.0])
        t0 += t
        x, pdx0 = xp, pdx_new
        if progress is not None:
            progress(i)
    Z = np.array(log["z"])
    X = np.concatenate([Z[:, :n], Z[:, n + 1:2 * n + 1]], axis=1)
    Y = np.array([vc.outputs(xx[:n], xx[n:])[0] for xx in X]) if vc is not None else None
    ema = tracking_ema(log["t"], (Y * Y).sum(axis=1), ema_tau) if Y is not None else None
    return PlantResult(design, alpha, recs, fell, reason, np.array(log["t"]), X,
                       np.array(log["u"]), np.array(log["i"]), np.array(log["base"]),
                       aug=Z, mode=np.array(log["mode"]), y=Y, ema=ema,
                       u_nominal=np.array(log["un"]), controller_states=states, true=true)

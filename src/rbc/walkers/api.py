"""Named walks: the functions the command line calls (no numerics in the CLI).

``run_walk`` and ``find_gait`` resolve a model (a registered name or a model file) and a
controller, choose the starting state the model file prescribes, and dispatch to the
point-foot simulator (:mod:`rbc.walkers.hybrid.simulate`) or the footed one
(:mod:`rbc.walkers.control.footed`). :func:`controllers_for` lists what works for a model;
every refusal lists only those.
"""

from __future__ import annotations

import numpy as np

from rbc.walkers.control.controllers import (
    FOOTED_PLANT_CONTROLLERS,
    RUN_CONTROLLERS,
    controllers_for,
    is_footed,
    make_controller,
)
from rbc.walkers.errors import WalkerError
from rbc.walkers.evaluation.poincare import FixedPoint, find_fixed_point, stride_map
from rbc.walkers.hybrid.registry import default_slope as _model_slope
from rbc.walkers.hybrid.registry import resolve_model, stride_time_limit
from rbc.walkers.hybrid.simulate import WalkResult, walk


def _refuse(model, controller: str, why: str = "") -> WalkerError:
    ok = controllers_for(model)
    more = f" ({why})" if why else ""
    return WalkerError(f"model '{model.name}' cannot walk under controller "
                       f"'{controller}'{more}", choices=ok or None, got=controller)


def default_slope(spec: str) -> float:
    """Slope [rad] the model file suggests (``slope`` or ``slope_degrees``), else 0.

    Raises:
        WalkerError: unknown model or invalid file.
    """
    return _model_slope(resolve_model(spec))


def _setup(spec: str, controller: str, slope: float):
    model = resolve_model(spec)
    if controller not in RUN_CONTROLLERS:
        raise WalkerError(f"unknown controller '{controller}'", choices=RUN_CONTROLLERS,
                          got=controller)
    if not -np.pi / 4 < slope < np.pi / 4:
        raise WalkerError(f"slope {slope} rad cannot be walked; expected |slope| < pi/4")
    if controller not in controllers_for(model) or controller not in ("passive", "fl"):
        raise _refuse(model, controller)
    if is_footed(model):
        from rbc.walkers.control.footed import FootedWalker

        w = FootedWalker.from_model(model, slope)
        return model, w, w.initial_state()
    ctrl = make_controller(controller, model, slope)
    if controller == "passive":
        if slope <= 0:
            raise WalkerError(f"a passive walker needs a downhill slope > 0 to start a "
                              f"stride, got {slope} rad")
        return model, ctrl, np.array(model.params["initial_state"], dtype=float)
    from rbc.walkers.control.vc import vc_initial_state

    rate = float(model.params["controller"].get("initial_phase_rate", 1.0))
    return model, ctrl, vc_initial_state(ctrl, rate)


def _limit(model, t_max: float | None) -> float:
    if t_max is not None and not t_max > 0:
        raise WalkerError(f"stride time limit must be > 0 s, got {t_max}")
    return stride_time_limit(model) if t_max is None else float(t_max)


def run_walk(spec: str, controller: str, slope: float, strides: int,
             dt: float | None = None, progress=None, t_max: float | None = None
             ) -> WalkResult:
    """Simulate ``strides`` strides of model ``spec`` (name or file) under ``controller``.

    Args:
        slope: [rad]. dt: RK4 step [s] (default: the model's ``dt`` or 1 ms).
        progress: optional ``progress(i)`` called after stride i.
        t_max: stride time limit [s] (default: :func:`rbc.walkers.hybrid.registry.
            stride_time_limit`).

    Raises:
        WalkerError: unknown model/controller, unusable slope or starting state.
    """
    if strides < 1:
        raise WalkerError(f"strides must be >= 1, got {strides}")
    model, ctrl, x0 = _setup(spec, controller, slope)
    lim = _limit(model, t_max)
    if is_footed(model):
        from rbc.walkers.control.footed import walk_footed

        return walk_footed(ctrl, x0, strides, dt=dt or 1e-3, progress=progress, t_max=lim)
    return walk(model, ctrl, slope, x0, strides,
                dt=dt or float(model.params.get("dt", 1e-3)), progress=progress, t_max=lim)


def find_gait(spec: str, controller: str, slope: float, dt: float | None = None,
              t_max: float | None = None, cross_check: bool = True) -> FixedPoint:
    """Period-one gait of ``spec`` by Newton on the Poincaré map, from the model's start.

    The Jacobian is variational for point-foot walkers (central differences for the footed
    one); ``cross_check`` adds the central-difference Jacobian at the fixed point.

    Raises:
        WalkerError: as :func:`run_walk`, or Newton fails / a stride falls.
    """
    model, ctrl, x0 = _setup(spec, controller, slope)
    lim = _limit(model, t_max)
    if is_footed(model):
        from rbc.walkers.control.footed import walk_footed

        def pmap(x):
            r = walk_footed(ctrl, x, 1, dt=dt or 1e-3, t_max=lim)
            if r.fell or not r.strides:
                raise WalkerError(f"stride failed: {r.fall_reason}")
            return r.strides[0].x_plus, r.strides[0].duration

        # settle onto the gait first: Newton from a point near the orbit
        r = walk_footed(ctrl, x0, 3, dt=dt or 1e-3, t_max=lim)
        x0 = r.strides[-1].x_plus if r.strides else x0
        return find_fixed_point(pmap, x0, tol=1e-9)
    return find_fixed_point(stride_map(model, ctrl, slope,
                                       dt or float(model.params.get("dt", 1e-3)), t_max=lim),
                            x0, cross_check=cross_check)




def _parse_floats(text: str, what: str, count: int | None) -> tuple[float, ...]:
    """``a:b:...`` -> floats (exactly ``count`` of them unless None).

    Raises:
        WalkerError: not numbers, or the wrong count.
    """
    want = "" if count is None else f"{count} "
    try:
        vals = tuple(float(v) for v in text.split(":"))
    except ValueError as err:
        raise WalkerError(f"{what} '{text}': expected {want}numbers separated by ':'") from err
    if count is not None and len(vals) != count:
        raise WalkerError(f"{what} '{text}': expected {want}numbers separated by ':'")
    return vals


def parse_bounds(text: str | None) -> tuple[float, float] | None:
    """``"LO:HI"`` -> (lo, hi) [rad] with lo < hi; None passes through.

    Raises:
        WalkerError: not two numbers, or lo ≥ hi.
    """
    if text is None:
        return None
    lo, hi = _parse_floats(text, "torso bounds", 2)
    if not lo < hi:
        raise WalkerError(f"torso bounds '{text}': expected LO < HI [rad]")
    return lo, hi


def make_scenario(payload: float = 0.0, mass_scale: float = 1.0,
                  effectiveness: str = "1", bias: str = "0", friction: float = 0.0,
                  stick_slip: bool = False, ice: tuple[str, ...] = (), trip: tuple[str, ...] = (),
                  push: tuple[str, ...] = (), mu: float = 0.7):
    """A :class:`rbc.walkers.environment.plant_sim.Scenario` from command-line words.

    Args:
        payload: [kg]. mass_scale: [-]. effectiveness, bias: one value or ``a:b:c:d`` per
            actuator [-, N m]. friction: Coulomb joint torque [N m] (0: none).
        stick_slip: contact may slip. ice: ``X0:X1:MU`` patches [m, m, -].
        trip / push: ``STRIDE:TIME:FX:FY`` impulses at the swing foot / the head [-, s, N s].
        mu: ground friction off the patches.

    Raises:
        WalkerError: malformed words or values.
    """
    from rbc.walkers.environment.effects import Ground, Impulse, JointFriction
    from rbc.walkers.environment.plant import Mismatch
    from rbc.walkers.environment.plant_sim import Scenario

    def vec(text: str, what: str):
        v = _parse_floats(text, what, None)
        return v[0] if len(v) == 1 else v

    mm = Mismatch(mass_scale=mass_scale, payload=payload,
                  effectiveness=vec(effectiveness, "effectiveness"), bias=vec(bias, "bias"))
    patches = tuple(_parse_floats(p, "ice patch", 3) for p in ice)
    for p, (x0, x1, mu_ice) in zip(ice, patches, strict=True):
        if not (x0 < x1 and mu_ice > 0):
            raise WalkerError(f"ice patch '{p}': expected X0 < X1 [m] and a friction "
                              "coefficient MU > 0")
    kicks = []
    for words, where in ((trip, "swing_foot"), (push, "head")):
        for w in words:
            k, t, fx, fy = _parse_floats(w, f"impulse at {where}", 4)
            if k != int(k) or k < 1 or t < 0:
                raise WalkerError(f"impulse at {where} '{w}': expected STRIDE (an integer ≥ 1)"
                                  ":TIME (≥ 0 s):FX:FY")
            kicks.append(Impulse(int(k), t, where, (fx, fy)))
    fr = JointFriction(tau_c=friction) if friction > 0 else None
    return Scenario(mm, fr, Ground(mu, patches, stick_slip or bool(patches)), tuple(kicks))


def run_plant(spec: str, controller: str, slope: float, strides: int, scenario,
              safety: str = "none", dt: float | None = None, progress=None,
              torso_bounds: tuple[float, float] | None = None, t_max: float | None = None):
    """Walk model ``spec`` (name or file) on the true plant of ``scenario``
    (:mod:`rbc.walkers.environment.plant_sim`).

    Args:
        controller: one of :data:`rbc.walkers.environment.plant_sim.PLANT_CONTROLLERS`.
        safety: one of :data:`rbc.walkers.control.safety.FILTERS`.
        torso_bounds: ``(lo, hi)`` [rad] of the torso-angle barrier (None: the filter's
            default, :attr:`rbc.walkers.control.safety.SafetyFilter.bounds`).
        t_max: stride time limit [s] (None: the model's default).

    Raises:
        WalkerError: unknown model/controller/filter, a model that cannot take the
            controller (lists those it can), bad start.
    """
    from rbc.walkers.control.context import ControlContext
    from rbc.walkers.control.safety import FILTERS, SafetyFilter
    from rbc.walkers.control.vc import vc_initial_state
    from rbc.walkers.environment.plant_sim import PLANT_CONTROLLERS, walk_plant

    model = resolve_model(spec)
    lim = _limit(model, t_max)
    if is_footed(model):
        return _run_footed_plant(model, controller, slope, strides, scenario, safety, dt,
                                 progress, lim)
    if controller not in PLANT_CONTROLLERS:
        raise WalkerError(f"unknown controller '{controller}' for the true-plant simulator",
                          choices=[c for c in controllers_for(model) if c != "passive"]
                          or PLANT_CONTROLLERS, got=controller)
    if controller not in controllers_for(model):
        raise _refuse(model, controller, "the true-plant simulator needs virtual constraints "
                      "and finite masses without angle offsets")
    if safety not in FILTERS:
        raise WalkerError(f"unknown safety filter '{safety}'", choices=FILTERS, got=safety)
    ctx = ControlContext.from_model(model, slope, dt or float(model.params.get("dt", 1e-3)))
    extra = {} if torso_bounds is None else {"bounds": tuple(torso_bounds)}
    filt = None if safety == "none" else SafetyFilter(ctx, safety, **extra)
    rate = float(model.params["controller"].get("initial_phase_rate", 1.0))
    x0 = vc_initial_state(ctx.extra["fl"], rate)
    return walk_plant(ctx, controller, scenario, x0, strides, safety=filt, progress=progress,
                      t_max=lim)


def _run_footed_plant(model, controller: str, slope: float, strides: int, scenario,
                      safety: str, dt: float | None, progress, t_max: float):
    """Footed humanoid on its true plant: ``fl`` (frozen zero networks), ``lbdnn``, or
    ``composite`` (LbDNN + per-phase leaky RISE), :mod:`rbc.walkers.control.lbdnn`.

    Raises:
        WalkerError: another controller, a safety filter or an environment option (the
            footed true plant has the mismatch only).
    """
    from rbc.walkers.control.footed import FootedWalker, walk_footed
    from rbc.walkers.control.lbdnn import SwitchingLbDNN
    from rbc.walkers.environment.plant import Actuation, true_model

    if controller not in FOOTED_PLANT_CONTROLLERS:
        raise WalkerError(f"controller '{controller}' has no footed true-plant version "
                          f"(model '{model.name}')", choices=FOOTED_PLANT_CONTROLLERS,
                          got=controller)
    if (safety != "none" or scenario.friction is not None or scenario.impulses
            or (scenario.ground is not None and scenario.ground.stick_slip)):
        raise WalkerError(f"model '{model.name}' is footed: its true plant takes the "
                          "mismatch options only (no environments or safety filter)",
                          choices=["rabbit"])
    w = FootedWalker.from_model(model, slope)
    step = dt or float(model.params["gait"].get("dt", 5e-4))
    ctrl = SwitchingLbDNN(w, step, learn=controller != "fl", rise=controller == "composite")
    mm = scenario.mismatch
    plant = (true_model(model, mm), Actuation.from_mismatch(mm, model.B.shape[1]))
    return walk_footed(w, w.initial_state(), strides, dt=step, plant=plant, controller=ctrl,
                       progress=progress, t_max=t_max)

"""``rbc simulate``: one mechanism, reference, controller and plant, run and summarised.

:func:`prepare` does every check and all the set-up that can fail (bundle, partition,
backend, controller, reference names/limits/reachability, mismatch, initial state, step
sizes) before anything runs, then lifts the reference and tabulates the feedforward;
:func:`simulate` runs the control loop (zero-order hold at ``control_dt``, the plant at
``dt``); :func:`rbc.sim.outputs.write_outputs` writes the log, summary and plots.

**Energy ledger.** At every control step
``residual = (T + V) − (T₀ + V₀) − W_act − W_passive`` with T the kinetic energy (rotor
inertia included), V the gravitational potential, ``W_act`` the actuators' work and
``W_passive`` the work of damping, springs and drive friction. On the reduced model both
works are integrated as part of the state by the same integrator as the motion, so the
residual is the integration error itself; for MuJoCo and Pinocchio (``W_act = Σ fᵀ Δℓ`` per
step) it also holds the work of the constraint stabilisation (soft equalities, Baumgarte).
The summary reports ``max |residual|`` [J] and the same relative to the largest energy term
(``max(|T|, |V − V₀|, |W_act|, |W_passive|)`` over the run).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from rbc.errors import RbcError, UsageError
from rbc.model.compiled import CompiledModel, Partition
from rbc.model.dynamics import DynamicsData, DynamicsModel
from rbc.model.interfaces import port_unit
from rbc.model.modes import model_for
from rbc.model.partition import lift
from rbc.model.solve import SolveError, get_partition, solve_named
from rbc.sim.allocation_control import AllocationTracking
from rbc.sim.backends import Backend, backend_class
from rbc.sim.controllers import (
    CONTROLLERS,
    DEFAULT_BANDWIDTH,
    DEFAULT_ZETA,
    Controller,
    ControllerError,
    default_gains,
    effort_limits,
    feedforward_table,
)
from rbc.sim.mismatch import plant_model
from rbc.sim.push import Push, forces_at, parse_push
from rbc.sim.reference import LiftedReference, lift_reference, load_knots, spline_reference
from rbc.sim.schedule import (
    SupportReference,
    has_schedule,
    lift_support_reference,
    load_support_knots,
    modal_feedforward,
    mode_state,
    segment_models,
)
from rbc.sim.switching import ModalPlant, SupportLog, floor_level
from rbc.sim.task_control import PortObserver, TaskController
from rbc.sim.threads import limit_blas_threads
from rbc.tasks.plan import check_partition
from rbc.tasks.request import TaskRequest, build

Progress = Callable[[str, float], None]


class SimulationError(RbcError):
    """An inconsistent simulation request (controller/backend/reference/step sizes)."""


@dataclass(frozen=True)
class SimOptions:
    """A simulation request (the options of ``rbc simulate``; docs/simulate.md).

    Attributes:
        backend: registered backend name; controller: ``pd | pd+ff | passive | task |
            allocation`` (``allocation``: composed bundles, :mod:`rbc.sim.allocation_control`).
        duration: simulated time [s] (default: the reference's last knot).
        dt: physics step [s]; control_dt: control period [s] (default dt), a multiple of dt.
        reference: reference file; reference_dt: lift grid spacing [s].
        initial, velocity: independent coordinates' values [rad, m] and speeds without a
            reference (others from ``q_ref`` and zero).
        payload: ``((body, kg), …)``; inertia_scale: plant mass/inertia factor.
        bandwidth [Hz], zeta, kp, kd: gains (module :mod:`rbc.sim.controllers`).
        integrator: reduced backend integrator; rtol, atol: its tolerances (docs/simulate.md);
        evaluator: reduced backend evaluator, ``kernel`` | ``reference``;
        partition: stored partition name.
        fix_root: weld floating roots to the world (fixed-base experiments; recompiles).
        task: the task request of ``--controller task`` (:mod:`rbc.tasks.request`).
        mode: a composed bundle's mode (default: its first; docs/composition.md).
        plant: a composed bundle's engine plant variant, ``ideal | realistic``
            (:mod:`rbc.compose.plant`; None: ideal on MuJoCo and Pinocchio);
        seed: the realistic plant's measurement-noise seed.
        push: ``BODY=FX,FY,FZ@START+DURATION`` texts (:mod:`rbc.sim.push`): forces on the
            plant only. friction: μ of every support of the plant only (None: the record's).
    """

    backend: str = "reduced"
    controller: str = "pd+ff"
    duration: float | None = None
    dt: float = 1e-3
    control_dt: float | None = None
    reference: Path | None = None
    reference_dt: float = 0.01
    initial: Mapping[str, float] = field(default_factory=dict)
    velocity: Mapping[str, float] = field(default_factory=dict)
    payload: Sequence[tuple[str, float]] = ()
    inertia_scale: float = 1.0
    bandwidth: float = DEFAULT_BANDWIDTH
    zeta: float = DEFAULT_ZETA
    kp: Mapping[str, float] = field(default_factory=dict)
    kd: Mapping[str, float] = field(default_factory=dict)
    integrator: str = "dopri5"
    rtol: float = 1e-9
    atol: float = 1e-12
    evaluator: str = "kernel"
    partition: str | None = None
    fix_root: bool = False
    task: TaskRequest | None = None
    mode: str | None = None
    plant: str | None = None
    seed: int | None = None
    push: Sequence[str] = ()
    friction: float | None = None


@dataclass(eq=False)
class Prepared:
    """Everything a run needs, checked (see :func:`prepare`)."""

    bundle: str
    options: SimOptions
    kin: CompiledModel
    plant: CompiledModel
    part: Partition
    controller: Controller | TaskController | AllocationTracking
    backend: type[Backend]
    q0: np.ndarray
    v0: np.ndarray
    duration: float
    control_dt: float
    substeps: int
    prepare_time: float = 0.0
    support_reference: SupportReference | None = None
    #: a composed bundle's (composition, mode) (:mod:`rbc.compose.runlog`)
    composed: tuple | None = None
    #: the plant's pushes (:mod:`rbc.sim.push`)
    pushes: tuple[Push, ...] = ()


def _step_counts(opts: SimOptions, duration: float) -> tuple[float, int, float]:
    """``(control period, physics steps per control period, duration run)`` [s, 1, s].

    The duration run is the requested one rounded to whole control periods.

    Raises:
        SimulationError: a non-positive step, period or duration (each named alone), a
            control period that is not a whole number of physics steps, or a duration
            shorter than one control period.
    """
    for name, value in (("--dt", opts.dt), ("--duration", duration),
                        ("--control-dt", opts.control_dt)):
        if value is not None and not 0 < value < np.inf:  # also refuses NaN
            raise SimulationError(f"{name} {value:g}: must be positive and finite")
    cdt = opts.dt if opts.control_dt is None else opts.control_dt
    ratio, periods_f = cdt / opts.dt, duration / cdt
    if not (ratio <= MAX_STEPS and periods_f <= MAX_STEPS and ratio * periods_f <= MAX_STEPS):
        raise SimulationError(f"--duration {duration:g} s at --dt {opts.dt:g} s "
                              f"(--control-dt {cdt:g} s) is more than {MAX_STEPS:.0e} physics "
                              "steps; lengthen the step or shorten the run")
    sub = int(round(ratio))
    # a control period is an integer number of physics steps (to 1e-9 relative: round-off
    # in the decimal step sizes the user types)
    if sub < 1 or abs(sub * opts.dt - cdt) > 1e-9 * cdt:
        raise SimulationError(f"--control-dt {cdt:g} must be an integer multiple of --dt "
                              f"{opts.dt:g} (zero-order hold over whole physics steps)")
    periods = int(round(duration / cdt))
    if periods < 1:
        raise SimulationError(f"--duration {duration:g} is shorter than one control period "
                              f"({cdt:g} s)")
    return cdt, sub, periods * cdt


#: Most physics steps (and control periods) one run may take: days of wall time already.
MAX_STEPS = 1e10
#: Bytes per logged sample beyond its float64 values (the Python lists of per-step arrays).
SAMPLE_OVERHEAD = 1024


def _available_memory() -> int:
    """Bytes of memory available to this process (Linux ``MemAvailable``, else physical)."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 1 << 33


def check_log_fits(kin: CompiledModel, opts: SimOptions, duration: float, control_dt: float,
                   ) -> None:
    """Refuse a run whose log (one sample per control period, and the reference grid) would
    not fit in half the available memory — before anything is allocated.

    Raises:
        SimulationError: naming --duration, the step count and the memory it would take.
    """
    n_act, n_tasks = len(kin.record.actuators), len(kin.record.tasks)
    width = kin.nq + kin.nv + 4 * n_act + 2 * (kin.n_chords + 1) + 8 + 6 * n_tasks
    samples = duration / control_dt + 1
    if opts.reference is not None:
        samples += duration / opts.reference_dt + 1
    need = samples * (8 * width + SAMPLE_OVERHEAD)
    have = _available_memory() / 2
    if need > have:
        raise SimulationError(
            f"--duration {duration:g} s at a control period of {control_dt:g} s is "
            f"{samples:.3g} logged samples: the log would need {need / 2**30:.3g} GiB, more than "
            f"half the memory available ({have / 2**30:.3g} GiB); shorten --duration or "
            "lengthen --control-dt")


def _speeds(kin: CompiledModel, part: Partition, velocity: Mapping[str, float]) -> np.ndarray:
    """u (n_u,) from ``{independent coordinate name: speed}``."""
    ind = [kin.v_names[int(j)] for j in part.independent]
    u = np.zeros(len(ind))
    for name, value in velocity.items():
        if name not in ind:
            raise SimulationError(f"--velocity {name}: not an independent coordinate of "
                                  f"partition '{part.name}'; valid: {', '.join(ind)}")
        u[ind.index(name)] = value
    return u


def welded(kin: CompiledModel) -> CompiledModel:
    """The model recompiled with every floating body welded to the world (``--fix-root``).

    The record text is changed (``floating: true`` → ``fixed: true``; a fixed body's frame is
    the world frame) and compiled with the default options into a temporary bundle.

    Raises:
        RbcError: the welded record does not compile (e.g. its loops no longer close).
    """
    import tempfile

    import yaml

    from rbc.compiler import compile_to_file
    from rbc.safeio import load_yaml, safe_basename

    doc = load_yaml(kin.record.text, kin.record.source)
    for body in doc.get("bodies", []):
        if body.pop("floating", False):
            body["fixed"] = True
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / (safe_basename(Path(kin.record.source).stem, "record") + ".yaml")
        src.write_text(yaml.safe_dump(doc, sort_keys=False))
        compile_to_file(src, Path(tmp) / "welded.h5")
        return CompiledModel.from_bundle(Path(tmp) / "welded.h5")


def prepare(bundle: str | Path, opts: SimOptions, progress: Progress | None = None) -> Prepared:
    """Check a request and build the controller and initial state (module docstring).

    Raises:
        BundleError, BackendError, SimulationError, ControllerError, ReferenceError,
        MismatchError, SolveError: a bad request; nothing has run.
    """
    t0 = time.perf_counter()
    limit_blas_threads(1)
    backend = backend_class(opts.backend)
    if opts.controller not in CONTROLLERS:
        raise SimulationError(f"unknown controller '{opts.controller}'; valid: "
                              f"{', '.join(CONTROLLERS)}")
    composed = _composed(bundle, opts)
    if composed is not None and opts.backend != "reduced":
        from rbc.compose.plant import composed_backend

        backend = composed_backend(opts.backend)
    if composed is None:
        kin = CompiledModel.from_bundle(bundle)
        if opts.fix_root and any(b.kind == "floating" for b in kin.record.bodies):
            kin = welded(kin)
        part = get_partition(kin, opts.partition)
    else:
        from rbc.compose.runlog import check_memory

        kin = composed[0].model(composed[1])
        check_memory(str(bundle), kin, composed[1], opts.backend, opts.controller)
        part = get_partition(kin, composed[1].name)
    acts = kin.record.actuators
    if opts.controller != "passive" and not acts:
        raise ControllerError(f"controller '{opts.controller}' acts at the actuator ports, "
                              f"but {kin.record.name} has no actuators; use --controller "
                              "passive")
    _check_task_request(opts)
    if opts.controller in ("pd", "pd+ff") and opts.reference is None:
        raise SimulationError(f"controller '{opts.controller}' tracks a reference: give "
                              "--reference FILE (or use --controller passive, or task with "
                              "--task)")
    if opts.backend != "reduced":  # options the other backends would silently ignore
        defaults = SimOptions(backend=opts.backend)
        given = [f"--{k}" for k in ("integrator", "rtol", "atol", "evaluator")
                 if getattr(opts, k) != getattr(defaults, k)]
        if given:
            raise UsageError(f"{', '.join(given)} applies to the reduced backend only; the "
                             f"{opts.backend} backend integrates with its own scheme")
    if opts.controller in ("passive", "allocation"):  # PD gains they would ignore
        defaults = SimOptions()
        given = [f"--{k}" for k in ("bandwidth", "zeta", "kp", "kd")
                 if getattr(opts, k) != getattr(defaults, k)]
        if given:
            raise UsageError(f"{', '.join(given)}: the {opts.controller} controller applies no "
                             "PD gains; drop them or give --controller pd, pd+ff or task")
    if opts.controller == "allocation" and composed is None:
        raise SimulationError("controller 'allocation' allocates efforts on a composed mode's "
                              f"supports: {bundle} is not a composed bundle (rbc compose)")
    if opts.reference is not None and (opts.initial or opts.velocity):
        raise UsageError("--set/--velocity conflict with --reference: the reference's first "
                         "knot fixes the initial state")
    plant = plant_model(kin, opts.payload, opts.inertia_scale, opts.friction)
    pushes = _pushes(opts, kin, backend)
    if pushes and composed is not None:
        raise SimulationError("--push: not available on composed bundles yet (the composed "
                              "plants take no external forces)")
    if opts.reference is not None and has_schedule(opts.reference):
        return replace(_prepare_schedule(bundle, opts, kin, plant, backend, t0, progress),
                       pushes=pushes)
    backend.check(plant, part)
    dm = DynamicsModel.build(kin)
    lower, upper = effort_limits(dm)
    ref: LiftedReference | None = None
    if opts.reference is not None:
        splined = spline_reference(kin, part, load_knots(opts.reference))
        duration = splined.duration if opts.duration is None else opts.duration
        cdt, sub, duration = _step_counts(opts, duration)
        check_log_fits(kin, opts, duration, cdt)
        ref_dt = cdt if opts.controller == "allocation" else opts.reference_dt  # exact samples
        ref = lift_reference(dm, part, splined, duration, min(ref_dt, duration),
                             None if progress is None else (lambda x: progress("lift", x)))
        q0, v0 = ref.q[0].copy(), ref.v[0].copy()
    else:
        if opts.duration is None and opts.task is None:
            raise SimulationError("give --duration (there is no reference to take it from)")
        cdt, sub, duration = _step_counts(opts, opts.task.duration if opts.duration is None
                                          else opts.duration)
        check_log_fits(kin, opts, duration, cdt)
        try:
            q0 = solve_named(kin, part.name, dict(opts.initial)).q
        except SolveError as err:
            raise SimulationError(f"{bundle}: --set: {err}") from err
        v0 = lift(kin, part, q0).E @ _speeds(kin, part, opts.velocity)
    gains = ff = None
    if opts.controller not in ("passive", "allocation"):
        gains = default_gains(dm, part, q0, bandwidth=opts.bandwidth, zeta=opts.zeta,
                              kp=opts.kp, kd=opts.kd)
    if opts.controller == "pd+ff":
        ff = feedforward_table(dm, part, ref,
                               None if progress is None else (lambda x: progress("ff", x)))
    if opts.controller == "task":
        controller = task_controller(dm, part, q0, opts.task, gains, lower, upper)
    elif opts.controller == "allocation":
        controller = allocation_controller(composed, part, kin, ref, lower, upper,
                                           coulomb=opts.backend == "reduced")
    else:
        controller = Controller(opts.controller, gains, ref, ff, lower, upper)
    return Prepared(str(bundle), opts, kin, plant, part, controller, backend, q0, v0,
                    duration, cdt, sub, time.perf_counter() - t0, composed=composed,
                    pushes=pushes)


#: The options that act on the plant or the step sizes only: :func:`prepare`'s reference
#: lift, feedforward table and gains do not read them.
PLANT_OPTIONS = ("payload", "inertia_scale", "friction", "push", "dt", "control_dt")


def with_plant(prep: Prepared, opts: SimOptions) -> Prepared:
    """``prep`` for another request that differs only in :data:`PLANT_OPTIONS`: the same
    reference lift, feedforward and gains with the new request's plant (payload, inertia
    scale, friction), pushes and steps — what :func:`prepare` of ``opts`` gives, without
    lifting the reference again (a batch of perturbed runs of one reference).

    Raises:
        SimulationError: ``opts`` differs in another option; as :func:`prepare` for the
            plant options and steps.
    """
    from dataclasses import fields

    other = [f.name for f in fields(SimOptions) if f.name not in PLANT_OPTIONS
             and getattr(opts, f.name) != getattr(prep.options, f.name)]
    if other:
        raise SimulationError(f"with_plant: the requests differ in {', '.join(other)}, which "
                              "the prepared run depends on; prepare it afresh")
    cdt, sub, duration = _step_counts(opts, prep.duration)
    plant = plant_model(prep.kin, opts.payload, opts.inertia_scale, opts.friction)
    return replace(prep, options=opts, plant=plant, pushes=_pushes(opts, prep.kin, prep.backend),
                   control_dt=cdt, substeps=sub, duration=duration)


def _pushes(opts: SimOptions, kin: CompiledModel, backend: type[Backend]) -> tuple[Push, ...]:
    """The ``--push`` texts parsed and checked against the record and the backend.

    Raises:
        PushError: a malformed push or an unknown body; SimulationError: a backend that
            takes no external forces.
    """
    pushes = tuple(parse_push(p, kin.record.body_index()) for p in opts.push)
    if pushes and not backend.pushable:
        raise SimulationError(f"--push: the {opts.backend} backend applies no external "
                              "forces; use --backend mujoco or pinocchio")
    return pushes


def allocation_controller(composed: tuple, part: Partition, kin: CompiledModel,
                          ref: LiftedReference | None, lower: np.ndarray, upper: np.ndarray,
                          coulomb: bool = True) -> AllocationTracking:
    """The ``allocation`` controller (:mod:`rbc.sim.allocation_control`) of a composed
    ``(composition, mode)``: tracking the lifted reference on the control grid, or holding
    the mode's reference configuration at rest. The nominal model keeps the record's Coulomb
    friction (``coulomb``) when the plant applies it — the reduced plant; the ideal engine
    plants have none (:mod:`rbc.compose.plant`), the realistic one its own."""
    from rbc.compose.dynamics import member_model
    from rbc.control.controller import AllocationController
    from rbc.sim.allocation_control import GridReference, HeldReference

    comp, md = composed
    target = (HeldReference(md.partition.q_ref, kin.nv) if ref is None
              else GridReference(ref, kin))
    # the reduced plant applies the record's Coulomb friction: the nominal model keeps it
    ctrl = AllocationController(member_model(comp, md.name), part, target, coulomb=coulomb)
    return AllocationTracking(ctrl, lower, upper)


def _composed(bundle: str | Path, opts: SimOptions) -> tuple | None:
    """A composed bundle's (composition, mode) after refusing the options that do not
    apply to it (:func:`rbc.compose.runlog.check_run`), or None for a plain bundle.

    Raises:
        UsageError: as :func:`rbc.compose.bundle.open_mode` and ``check_run``;
        BundleError: a composed bundle that does not load.
    """
    from rbc.compose.bundle import open_mode

    opened = open_mode(bundle, opts.mode, opts.partition)
    if opened is not None:
        from rbc.compose.runlog import check_run

        check_run(str(bundle), opened[1], opts.backend, opts.fix_root,
                  opts.reference is not None and has_schedule(opts.reference))
    if opened is not None and opts.backend != "reduced":
        from rbc.compose.plant import check_plant

        check_plant(str(bundle), *opened, opts.backend, opts.plant, opts.seed)
    elif opts.plant is not None or opts.seed is not None:
        given = "--plant" if opts.plant is not None else "--seed"
        raise UsageError(f"{given} chooses a composed bundle's MuJoCo or Pinocchio plant "
                         f"(--backend mujoco|pinocchio on a bundle written by rbc compose); "
                         f"{bundle} runs on the {opts.backend} plant")
    return opened


def _check_task_request(opts: SimOptions) -> None:
    """--task goes with --controller task (and it with --task), never with --reference.

    Raises:
        SimulationError, UsageError: the combination is inconsistent.
    """
    if opts.controller == "task" and opts.task is None:
        raise SimulationError("controller 'task' moves a task: give --task SPEC (and --to "
                              "waypoints; docs/tasks.md)")
    if opts.task is not None and opts.controller != "task":
        raise UsageError(f"--task is the target of --controller task, not of "
                         f"'{opts.controller}'")
    if opts.task is not None and opts.reference is not None:
        raise UsageError("--reference conflicts with --controller task: the task's path "
                         "(--task, --to, --duration) is the reference")


def task_controller(dm: DynamicsModel, part: Partition, q0: np.ndarray, req: TaskRequest,
                    gains, lower: np.ndarray, upper: np.ndarray) -> TaskController:
    """The online task law at the initial configuration q0 (:mod:`rbc.sim.task_control`).

    Raises:
        TaskError: a bad task request or a partition the law cannot integrate;
        ControllerError: the ports do not determine the configuration.
    """
    check_partition(dm, part)
    _, law, path = build(dm.kin, q0, req)
    data = DynamicsData.of(dm)
    return TaskController(dm, data, law, path, PortObserver.build(dm, data, part, q0), gains,
                          lower, upper)


def _prepare_schedule(bundle, opts: SimOptions, kin: CompiledModel, plant: CompiledModel,
                      backend: type[Backend], t0: float, progress: Progress | None) -> Prepared:
    """:func:`prepare` for a support reference with a mode schedule (docs/supports.md)."""
    knots = load_support_knots(opts.reference, kin)
    if opts.fix_root:
        raise SimulationError("--fix-root cannot be combined with a mode schedule (the "
                              "supports hold the floating base)")
    if opts.partition is not None:
        raise SimulationError("--partition: with a mode schedule each mode uses its own "
                              "stored partition")
    for name in dict.fromkeys(knots.schedule.modes):
        info = plant.modes[name]
        if backend.native_contact:
            backend.check(plant, plant.partitions["default"])
        else:
            backend.check(model_for(plant, info), info.partition)
    duration = float(knots.time[-1]) - float(knots.time[0]) if opts.duration is None \
        else opts.duration
    cdt, sub, duration = _step_counts(opts, duration)
    sref = lift_support_reference(kin, knots, min(opts.reference_dt, duration), duration,
                                  None if progress is None else (lambda x: progress("lift", x)))
    dm = DynamicsModel.build(kin)
    lower, upper = effort_limits(dm)
    first = segment_models(kin, sref)[0][0]
    gains = ff = None
    if opts.controller != "passive":
        fdm = DynamicsModel.build(first)
        q_first = mode_state(first, sref.ref.q[0])[0]
        gains = default_gains(fdm, next(iter(first.partitions.values())), q_first,
                              bandwidth=opts.bandwidth, zeta=opts.zeta, kp=opts.kp, kd=opts.kd)
    if opts.controller == "pd+ff":
        ff = modal_feedforward(kin, sref, None if progress is None
                               else (lambda x: progress("ff", x)))
    controller = Controller(opts.controller, gains, sref.ref, ff, lower, upper)
    return Prepared(str(bundle), opts, kin, plant, kin.partitions["default"], controller,
                    backend, sref.ref.q[0].copy(), sref.ref.v[0].copy(), duration, cdt, sub,
                    time.perf_counter() - t0, sref)


@dataclass(eq=False)
class SimResult:
    """The log of a run (arrays by name; docs/simulate.md) and its summary (a dict)."""

    log: dict[str, np.ndarray]
    attrs: dict[str, object]
    summary: dict[str, object]


def simulate(prep: Prepared, progress: Progress | None = None) -> SimResult:
    """Run the control loop (module docstring) and summarise."""
    opts, ctrl = prep.options, prep.controller
    sref = prep.support_reference
    if sref is not None:
        floor = (floor_level(prep.plant, sref, prep.q0)
                 if getattr(prep.backend, "native_contact", False)
                 or getattr(prep.backend, "floor_anchors", False) else "auto")
        plant = ModalPlant(prep.backend, prep.plant, sref.schedule, prep.q0, prep.v0, opts.dt,
                           floor=floor, integrator=opts.integrator, rtol=opts.rtol, atol=opts.atol,
                           evaluator=opts.evaluator)
        supports = SupportLog(plant, sref)
    else:
        engine = {}
        if prep.composed is not None and opts.backend != "reduced":
            from rbc.compose.plant import plant_options

            engine = plant_options(prep.composed, opts.plant, opts.seed)
        elif prep.composed is not None and isinstance(ctrl, AllocationTracking):
            engine = {"data": ctrl.controller.data}  # one scratch (docs/composition.md)
        plant = prep.backend(prep.plant, prep.part, prep.q0, prep.v0, opts.dt,
                             integrator=opts.integrator, rtol=opts.rtol, atol=opts.atol,
                             evaluator=opts.evaluator, **engine)
        supports = None
    links = None
    if prep.composed is not None and opts.backend != "reduced":
        from rbc.compose.plant import PlantWrenchLog

        links = PlantWrenchLog(*prep.composed, prep.plant, plant)
    elif prep.composed is not None:
        from rbc.compose.runlog import WrenchLog

        links = WrenchLog(*prep.composed, prep.plant, data=plant.data)
    n = int(round(prep.duration / prep.control_dt))
    tasks = [t.name for t in prep.kin.record.tasks]
    n_act = len(prep.kin.record.actuators)
    rows: dict[str, list] = {k: [] for k in ("q", "v", "ports", "port_rates", "loop_gaps",
                                             "kinetic", "potential", "work_actuators",
                                             "work_passive", "work_drive_losses")}
    actual: list[np.ndarray] = []  # the drives' actual efforts (record 'drive' data)
    task_rows = {name: [] for name in tasks}
    cmd, eff, clipped = np.zeros((n, n_act)), np.zeros((n, n_act)), np.zeros(n, dtype=bool)

    def record(m, t: float) -> None:
        for key in ("q", "v", "ports", "port_rates", "loop_gaps", "kinetic", "potential"):
            rows[key].append(getattr(m, key))
        rows["work_actuators"].append(plant.work_actuators)
        rows["work_passive"].append(plant.work_passive)
        rows["work_drive_losses"].append(plant.work_drive_losses)
        if m.efforts is not None:
            actual.append(m.efforts)
        for name in tasks:
            task_rows[name].append(m.tasks[name])
        if supports is not None:
            supports.record(t)

    m = plant.measure()
    record(m, 0.0)
    # a port-space controller's reference terms at the control instants, in one pass
    table = ctrl.tabulate(np.arange(n) * prep.control_dt) if isinstance(ctrl, Controller) \
        else None
    t0 = time.perf_counter()
    body = prep.kin.record.body_index()
    held: dict[str, np.ndarray] = {}
    for i in range(n):
        for name, f in forces_at(prep.pushes, i * prep.control_dt).items():
            if name not in held or np.any(held[name] != f):
                plant.apply_force(body[name], f)
                held[name] = f
        if supports is not None:  # a switch takes effect at the first control time ≥ it
            before = plant.mode
            plant.switch(sref.schedule.mode_at(i * prep.control_dt), i * prep.control_dt)
            if plant.mode != before:
                m = plant.measure()
        if isinstance(ctrl, AllocationTracking):  # it reads the measured state
            cmd[i] = ctrl.command_measured(i * prep.control_dt, m)
        elif table is not None:
            cmd[i] = table.command(i, m.ports, m.port_rates)
        else:
            cmd[i] = ctrl.command(i * prep.control_dt, m.ports, m.port_rates)
        eff[i], clipped[i] = ctrl.clip(cmd[i])
        if links is not None:  # the reactions the interval starts from
            links.record(m.q, m.v, eff[i])
        plant.advance(eff[i], prep.substeps)
        m = plant.measure()
        record(m, (i + 1) * prep.control_dt)
        if progress is not None:
            progress("simulate", (i + 1) / n)
    if links is not None:  # the last sample, with the last interval's efforts
        links.record(m.q, m.v, eff[-1])
    wall = time.perf_counter() - t0
    time_s = np.arange(n + 1) * prep.control_dt
    log = {k: np.asarray(v, dtype=float) for k, v in rows.items()}
    log["time"] = time_s
    log["control/command"], log["control/effort"] = cmd, eff
    log["control/clipped"] = clipped
    if actual:  # at each control instant after the first: the drives' response
        log["drive/effort"] = np.asarray(actual, dtype=float)
    energy = log["kinetic"] + log["potential"]
    log["energy_residual"] = (energy - energy[0]) - log["work_actuators"] - log["work_passive"]
    if supports is not None:
        log.update(supports.arrays())
        log["energy_residual"] -= log["work_impacts"]
    if links is not None:
        log.update(links.arrays())
    ref = ctrl.reference
    if ref is not None:
        log["port_reference"] = ref.port_references(time_s)[0]
    for name in tasks:
        log[f"tasks/{name}/position"] = np.asarray(task_rows[name])
        if ref is not None:
            log[f"tasks/{name}/reference"] = ref.task_references(name, time_s)
    if isinstance(ctrl, TaskController | AllocationTracking):
        log.update(ctrl.log())
    attrs = {"bundle": prep.bundle, "backend": opts.backend, "controller": opts.controller,
             "dt": opts.dt, "control_dt": prep.control_dt,
             "actuators": [a.name for a in prep.kin.record.actuators],
             "gap_names": list(plant.gap_names)}
    summary = _summary(prep, plant, log, wall)
    if supports is not None:
        attrs["modes"] = list(sref.schedule.modes)
        attrs["supports"] = list(plant.names)
        summary["support_modes"] = supports.summary(log)
    if links is not None:
        attrs["composed_mode"] = prep.composed[1].name
        summary["composition"] = links.summary(log)
    return SimResult(log, attrs, summary)


def _port_units(kin: CompiledModel) -> list[tuple[str, tuple[str, str]]]:
    """Per actuator ``(displacement unit, effort unit)``: a prismatic port moves in m and
    takes N; a revolute or helical port turns in rad and takes N·m."""
    return [(a.name, port_unit(kin, i)) for i, a in enumerate(kin.record.actuators)]


def _rms(x: np.ndarray) -> float:
    return float(np.sqrt(np.mean(np.square(x)))) if x.size else 0.0


def _summary(prep: Prepared, plant: Backend, log: dict[str, np.ndarray], wall: float) -> dict:
    opts, ctrl = prep.options, prep.controller
    names = [a.name for a in prep.kin.record.actuators]
    out: dict[str, object] = {
        "bundle": prep.bundle, "backend": opts.backend, "controller": opts.controller,
        "integrator": opts.integrator if opts.backend == "reduced" else None,
        "plant": (opts.plant or "ideal") if prep.composed is not None
        and opts.backend != "reduced" else None,
        "duration": prep.duration, "dt": opts.dt, "control_dt": prep.control_dt,
        "payload": {b: kg for b, kg in opts.payload}, "inertia_scale": opts.inertia_scale,
        "friction": opts.friction, "pushes": [p.to_json() for p in prep.pushes],
    }
    tasks = [t.name for t in prep.kin.record.tasks]
    if "port_reference" in log:
        out["tracking_rms"] = {n: _rms(np.linalg.norm(
            log[f"tasks/{n}/position"] - log[f"tasks/{n}/reference"], axis=1)) for n in tasks}
        err = log["port_reference"] - log["ports"]
        out["port_rms"] = {n: _rms(err[:, i]) for i, n in enumerate(names)}
    else:
        out["tracking_rms"], out["port_rms"] = {}, {}
    eff = log["control/effort"]
    out["peak_effort"] = {n: float(np.abs(eff[:, i]).max(initial=0.0))
                          for i, n in enumerate(names)}
    out["effort_limits"] = {n: [float(ctrl.lower[i]), float(ctrl.upper[i])]
                            for i, n in enumerate(names)}
    out["port_units"] = dict(_port_units(prep.kin))
    out["clipped_steps"] = int(log["control/clipped"].sum())
    gaps = log["loop_gaps"]
    out["max_loop_gap"] = float(gaps.max(initial=0.0))
    out["max_loop_gap_by_constraint"] = {n: float(gaps[:, i].max(initial=0.0))
                                         for i, n in enumerate(plant.gap_names)}
    res = log["energy_residual"]
    out["energy_ledger_residual"] = float(np.abs(res).max(initial=0.0))
    out["energy_ledger_relative"] = out["energy_ledger_residual"] / energy_scale(log)
    out["energy_ledger_final"] = float(res[-1])
    out["max_kinetic_energy"] = float(log["kinetic"].max())
    out["work_actuators"] = float(log["work_actuators"][-1])
    out["work_passive"] = float(log["work_passive"][-1])
    if "drive/effort" in log:
        act = log["drive/effort"]
        out["drives"] = {
            "work_losses": float(log["work_drive_losses"][-1]),
            "work_drawn": float(log["work_actuators"][-1] + log["work_drive_losses"][-1]),
            "peak_actual_effort": {n: float(np.abs(act[:, i]).max(initial=0.0))
                                   for i, n in enumerate(names)},
            "command_vs_actual_rms": {n: _rms(act[1:, i] - eff[:, i])
                                      for i, n in enumerate(names)}}
    if isinstance(ctrl, TaskController):
        out["task"] = ctrl.summary()
    if isinstance(ctrl, AllocationTracking):
        out["allocation"] = ctrl.summary()
    if ctrl.gains is not None:
        out["gains"] = {n: {"kp": float(ctrl.gains.kp[i]), "kd": float(ctrl.gains.kd[i]),
                            "reflected_inertia": float(ctrl.gains.inertia[i])}
                        for i, n in enumerate(names)}
    out["physics_steps"] = plant.steps
    out["wall_time"] = wall
    out["prepare_time"] = prep.prepare_time
    out["real_time_factor"] = prep.duration / wall if wall > 0 else float("inf")
    if hasattr(plant, "close"):
        out["closure_fallbacks"] = plant.fallbacks
    report = plant.report() if hasattr(plant, "report") else None
    if report is not None:  # a modal plant of another backend has none
        out["integration"] = report
    out["events"] = list(getattr(plant, "events", []))
    out["warnings"] = list(getattr(plant, "warnings", []))
    return out


def energy_scale(log: dict[str, np.ndarray]) -> float:
    """The largest energy term of a run [J]: max over the log of |T|, |V − V₀|, |W_act|,
    |W_passive| (1e-300 for a run at rest)."""
    pot = log["potential"] - log["potential"][0]
    return float(max(np.abs(log["kinetic"]).max(initial=0.0), np.abs(pot).max(initial=0.0),
                     np.abs(log["work_actuators"]).max(initial=0.0),
                     np.abs(log["work_passive"]).max(initial=0.0), 1e-300))

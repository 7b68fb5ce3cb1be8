"""Mode schedules and reference motions of robots on changing supports (docs/supports.md).

**File format** (YAML; the reference of ``rbc simulate --reference`` when it has ``modes``)::

    time: [0, 0.5, 1.0, …]                  # knot times [s], strictly increasing
    modes:                                  # the schedule: from each time on, a stored mode
      - {time: 0.0, mode: FL+FR+RL+RR}
      - {time: 1.0, mode: FR+RL+RR}
    base: {x: […], y: […], z: […], roll: […], pitch: […], yaw: […]}   # floating base pose
    supports: {FL: {x: […], y: […], z: […]}, …}   # world targets of support frame origins
    joints: {NAME: […]}                       # other independent coordinates (optional)
    swing: {FL: 0.05, …}                      # swing heights [m] (optional)

Base and support components are world coordinates [m, rad] (rpy as URDF:
``R = Rz(yaw)·Ry(pitch)·Rx(roll)``); a surface support's target may also give roll, pitch,
yaw. Components the file does not give are held at their value in the **reference
posture**: the record's reference configuration with the base moved rigidly to the first
base knot (so unspecified feet stay under the base). The schedule's first entry is at the
first knot; every switch time is a knot time; a support must not move while its mode is
active (its target is held; a touchdown must be at the target where the foot lands).

**Swings.** ``swing: {SUPPORT: h}`` lifts a support's vertical target by the bump
``h·64 s³(1 − s)³`` over every interval in which the schedule releases it and holds it
again (s the normalised time from its lift-off switch to its touchdown switch): 0 with zero
rate and curvature at both ends, h at mid-swing. A step is then one segment — no apex knot,
so the base need not stop in mid-swing (every component is at rest at every knot). Where the
foot lands is its target at the touchdown knot: a support's ``x``/``y`` knots may change
while it is released (a step to a new place); the plants anchor it where it actually lands
(:mod:`rbc.sim.switching`).

**Interpolation.** Between knots every component follows a minimum-jerk quintic
``x₀ + (x₁ − x₀)(10s³ − 15s⁴ + 6s⁵)``: C², at rest at every knot, no overshoot — so held
targets stay exactly fixed and a touchdown is velocity-consistent (the reference has no
impact; the plants apply the impact map of :mod:`rbc.model.impact` to their own state).

**Lift.** The configuration at time t closes every support of the schedule at its target
(the model with all of them active, anchors at the targets; the base pose set, each leg
solved by its module's Newton from the previous sample): an inverse kinematics on the same
closure rows the modes use. Speeds and accelerations are five-point central differences of
the closed configurations in the chart at t (step :data:`FD_STEP`; exact to ≲ 1e-9 away from
knots, where the quintic's third derivative jumps the acceleration error is O(h·Δx⃛) over
±2h). In mode m(t) the reference state is the mode model's (support cut coordinates from the
pose), with ``u = v[independent]`` and ``u̇`` likewise; the feedforward of ``pd+ff`` is the
mode's inverse dynamics (:func:`modal_feedforward`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pinocchio as pin

from rbc.errors import InputError, RbcError
from rbc.ir import spatial as sp
from rbc.model.closure import newton
from rbc.model.compiled import CompiledModel
from rbc.model.dynamics import (
    DynamicsData,
    DynamicsModel,
    actuator_efforts,
    collocated_efforts,
    reduced_terms,
)
from rbc.model.interfaces import port_state, task_map
from rbc.model.modes import analyse_mode, anchors_array, mode_model, support_poses
from rbc.model.partition import lift
from rbc.model.solve import resolve_targets, set_values
from rbc.safeio import load_yaml, read_text
from rbc.sim.reference import LiftedReference

#: Step [s] of the central differences giving the reference speeds and accelerations: the
#: closure solves stop at 1e-13, so round-off is ~1e-13/h² ≈ 2.5e-6 in accelerations and
#: the O(h⁴) truncation of a quintic between knots is below 1e-12.
FD_STEP = 2e-4
#: A support's target may move at most this much [m, rad] while the support is active.
HOLD_TOL = 1e-9
BASE_KEYS = ("x", "y", "z", "roll", "pitch", "yaw")
POINT_KEYS, SURFACE_KEYS = ("x", "y", "z"), BASE_KEYS
#: Sub-steps of the homotopy that reaches the first sample from the reference posture.
HOMOTOPY_STEPS = 16


class ScheduleError(RbcError):
    """A mode schedule or support reference cannot be used (names the file and field)."""


@dataclass(frozen=True)
class ModeSchedule:
    """Times → modes: ``modes[i]`` is active from ``times[i]`` until ``times[i + 1]``."""

    times: tuple[float, ...]
    modes: tuple[str, ...]

    def index_at(self, t: float) -> int:
        """Position of the mode active at time t (switches take effect at their time; a
        ``1e-9 s`` slack absorbs the round-off of control times)."""
        return max(0, int(np.searchsorted(np.asarray(self.times), t + 1e-9, side="right")) - 1)

    def mode_at(self, t: float) -> str:
        """The mode active at time t."""
        return self.modes[self.index_at(t)]


@dataclass(frozen=True, eq=False)
class SupportKnots:
    """A support reference as read: knot times, the schedule, and per component its knots.

    Attributes:
        time: (K,) [s]; schedule: the modes; base: {component: (K,)}; supports:
        {support: {component: (K,)}}; joints: {coordinate: (K,)}; source: the file;
        swings: see below.
    """

    time: np.ndarray
    schedule: ModeSchedule
    base: dict[str, np.ndarray]
    supports: dict[str, dict[str, np.ndarray]]
    joints: dict[str, np.ndarray]
    source: str
    #: per support, its swings ``(lift-off, touchdown, height)`` [s, s, m] (``swing`` key)
    swings: dict[str, tuple[tuple[float, float, float], ...]] = field(default_factory=dict)

    def swing_lift(self, name: str, t: float) -> float:
        """The swing bump [m] of support ``name`` at time t (module docstring, "Swings")."""
        for t_off, t_on, h in self.swings.get(name, ()):
            if t_off < t < t_on:
                s = (t - t_off) / (t_on - t_off)
                return h * 64.0 * s**3 * (1.0 - s) ** 3
        return 0.0


def has_schedule(path: str | Path) -> bool:
    """Whether a reference file is a support reference (YAML with a ``modes`` list)."""
    p = Path(path)
    if p.suffix.lower() not in (".yaml", ".yml") or not p.is_file():
        return False
    try:
        doc = load_yaml(read_text(p, "reference"), p)
    except InputError:
        return False  # load_knots reports it
    return isinstance(doc, dict) and "modes" in doc


def _series(src: str, where: str, value, n: int) -> np.ndarray:
    try:
        x = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise ScheduleError(f"{src}: {where}: expected a list of {n} numbers") from None
    if x.shape != (n,) or not np.all(np.isfinite(x)):
        raise ScheduleError(f"{src}: {where}: expected a list of {n} finite numbers (one per "
                            "knot time)")
    return x


def _components(src: str, where: str, value, keys: tuple[str, ...], n: int
                ) -> dict[str, np.ndarray]:
    if not isinstance(value, dict):
        raise ScheduleError(f"{src}: {where}: expected a mapping of {', '.join(keys)}")
    out = {}
    for k, v in value.items():
        if k not in keys:
            raise ScheduleError(f"{src}: {where}.{k}: unknown component; valid: "
                                + ", ".join(keys))
        out[k] = _series(src, f"{where}.{k}", v, n)
    return out


def load_support_knots(path: str | Path, model: CompiledModel) -> SupportKnots:
    """Read and check a support reference (module docstring) against a bundle's modes.

    Raises:
        ScheduleError: malformed file, unknown modes or supports, a schedule not starting at
            the first knot, switch times that are not knot times, a support moving while
            active.
    """
    p = Path(path)
    doc = load_yaml(read_text(p, "reference"), p)  # InputError: unreadable, too large, …
    return knots_from_document(doc, model, str(p))


def knots_from_document(doc, model: CompiledModel, src: str) -> SupportKnots:
    """:func:`load_support_knots` on a document already read (``src`` names it in errors).

    Raises:
        ScheduleError: as :func:`load_support_knots`.
    """
    allowed = ("time", "modes", "base", "supports", "joints", "swing")
    if not isinstance(doc, dict) or "time" not in doc or "modes" not in doc:
        raise ScheduleError(f"{src}: expected a mapping with `time` and `modes` "
                            "(docs/supports.md)")
    for key in doc:
        if key not in allowed:
            raise ScheduleError(f"{src}: unknown key '{key}'; valid: {', '.join(allowed)}")
    t = np.asarray(doc["time"], dtype=float) if isinstance(doc["time"], list) else None
    if t is None or t.ndim != 1 or t.size < 2 or not np.all(np.isfinite(t)) or np.any(
            np.diff(t) <= 0):
        raise ScheduleError(f"{src}: time: expected at least two strictly increasing finite "
                            "knot times")
    n = t.size
    entries = doc["modes"]
    if not isinstance(entries, list) or not entries:
        raise ScheduleError(f"{src}: modes: expected a list of {{time, mode}}")
    times, names = [], []
    for i, e in enumerate(entries):
        if not isinstance(e, dict) or set(e) != {"time", "mode"}:
            raise ScheduleError(f"{src}: modes[{i}]: expected {{time: T, mode: NAME}}")
        name = str(e["mode"])
        if name not in model.modes:
            raise ScheduleError(f"{src}: modes[{i}].mode: the bundle stores no mode '{name}'; "
                                f"stored: {', '.join(sorted(model.modes)) or 'none'} (compile "
                                "with --modes all or --mode NAME=…)")
        times.append(float(e["time"]))
        names.append(name)
    if times[0] != t[0] or np.any(np.diff(times) <= 0):
        raise ScheduleError(f"{src}: modes: the first entry must be at the first knot time "
                            f"({t[0]:g} s) and the times must increase")
    for i, ts in enumerate(times):
        if not np.any(np.isclose(t, ts, rtol=0, atol=1e-12)):
            raise ScheduleError(f"{src}: modes[{i}].time {ts:g} is not a knot time (switches "
                                "happen at knots, where the reference is at rest)")
    base = _components(src, "base", doc.get("base", {}), BASE_KEYS, n)
    supports: dict[str, dict[str, np.ndarray]] = {}
    kinds = {s.name: s.kind for s in model.record.supports}
    for name, comp in (doc.get("supports") or {}).items():
        if name not in kinds:
            raise ScheduleError(f"{src}: supports.{name}: unknown support; supports: "
                                + ", ".join(kinds))
        keys = POINT_KEYS if kinds[name] == "point" else SURFACE_KEYS
        supports[name] = _components(src, f"supports.{name}", comp, keys, n)
    joints = {str(k): _series(src, f"joints.{k}", v, n)
              for k, v in (doc.get("joints") or {}).items()}
    schedule = ModeSchedule(tuple(times), tuple(names))
    swings = _swings(src, doc.get("swing") or {}, kinds, schedule, model)
    knots = SupportKnots(t, schedule, base, supports, joints, src, swings)
    _check_holds(knots, model)
    return knots


def _swings(src: str, value, kinds: dict[str, str], schedule: ModeSchedule,
            model: CompiledModel) -> dict[str, tuple[tuple[float, float, float], ...]]:
    """The ``swing`` key: per support its swings (lift-off, touchdown, height) — every
    interval between a switch that releases it and the next that holds it again (a support
    released until the end has no touchdown, hence no bump)."""
    if not isinstance(value, dict):
        raise ScheduleError(f"{src}: swing: expected a mapping SUPPORT: HEIGHT [m]")
    out = {}
    for name, h in value.items():
        if name not in kinds:
            raise ScheduleError(f"{src}: swing.{name}: unknown support; supports: "
                                + ", ".join(kinds))
        if isinstance(h, bool) or not isinstance(h, int | float) or not np.isfinite(h) \
                or not 0 <= h <= 1.0:
            raise ScheduleError(f"{src}: swing.{name}: expected a height in [0, 1] m")
        held = [name in model.modes[m].supports for m in schedule.modes]
        spans, off = [], None
        for i, (ts, on) in enumerate(zip(schedule.times, held, strict=True)):
            if i and held[i - 1] and not on:
                off = ts
            elif off is not None and on:
                spans.append((off, ts, float(h)))
                off = None
        out[str(name)] = tuple(spans)
    return out


def _check_holds(knots: SupportKnots, model: CompiledModel) -> None:
    """A support's targets must be constant over every segment in which it is active."""
    sch = knots.schedule
    ends = (*sch.times[1:], float(knots.time[-1]))
    for name, comp in knots.supports.items():
        for start, end, mode in zip(sch.times, ends, sch.modes, strict=True):
            if name not in model.modes[mode].supports:
                continue
            inside = (knots.time >= start - 1e-12) & (knots.time <= end + 1e-12)
            for key, x in comp.items():
                if np.ptp(x[inside]) > HOLD_TOL:
                    raise ScheduleError(
                        f"{knots.source}: supports.{name}.{key} moves between {start:g} s and "
                        f"{end:g} s while mode {mode} holds {name} (a held support stays at "
                        "its anchor; lift it with a mode without it)")


def closed_at(model: CompiledModel, knots: SupportKnots, times) -> list[np.ndarray]:
    """The reference's closed configurations (base model coordinates, (nq,) each) at the
    given increasing times: the lift's inverse kinematics (module docstring), reached from
    the reference posture by the same homotopy, each time from the previous one.

    Raises:
        ScheduleError: the targets are out of reach, or the base cannot be prescribed.
    """
    inv = _Inverse(knots, model)
    q = _start(inv, float(knots.time[0]))
    out = []
    for t in times:
        q = inv.close(q, float(t))
        out.append(q[: model.nq].copy())
    return out


def _start(inv: _Inverse, t0: float) -> np.ndarray:
    """The IK model's configuration at the first knot, by the homotopy from the posture."""
    ik = inv.ik
    q = np.concatenate([inv.q_posture, np.zeros(ik.nq - inv.model.nq)])
    for k in range(len(inv.model.kinds), len(ik.kinds)):
        q[ik.q_slice(k)] = ik.kinds[k].neutral()
    for s in np.linspace(0.0, 1.0, HOMOTOPY_STEPS + 1)[1:]:
        q = inv.close(q, t0, s)
    return q


def min_jerk(time: np.ndarray, x: np.ndarray, t: float) -> float:
    """Piecewise minimum-jerk interpolation of knots (module docstring), held outside."""
    if t <= time[0]:
        return float(x[0])
    if t >= time[-1]:
        return float(x[-1])
    k = int(np.searchsorted(time, t, side="right")) - 1
    s = (t - time[k]) / (time[k + 1] - time[k])
    return float(x[k] + (x[k + 1] - x[k]) * s * s * s * (10.0 - 15.0 * s + 6.0 * s * s))


def _pose(values: dict[str, float]) -> pin.SE3:
    R = sp.rotation_from_rpy(np.array([values["roll"], values["pitch"], values["yaw"]]))
    return pin.SE3(R, np.array([values["x"], values["y"], values["z"]]))


def _components_of(T: pin.SE3) -> dict[str, float]:
    rpy = sp.rpy_from_rotation(T.rotation)
    return dict(zip(BASE_KEYS, (*T.translation, *rpy), strict=True))


@dataclass(eq=False)
class SupportReference:
    """The lifted support reference (module docstring) and what the controller needs.

    Attributes:
        knots: the file; model: the base model; ik: the model with every schedule support
            active (anchors moved to the targets at each sample); ref: the grid (a
            :class:`~rbc.sim.reference.LiftedReference` in the base model's coordinates:
            ``u``/``udot`` hold all speeds/accelerations); mode: (K,) index into the
            schedule of each grid time.
    """

    knots: SupportKnots
    model: CompiledModel
    ik: CompiledModel
    ref: LiftedReference
    mode: np.ndarray

    @property
    def schedule(self) -> ModeSchedule:
        return self.knots.schedule


def _root(model: CompiledModel) -> int:
    roots = [k for k, (n, t) in enumerate(zip(model.edge_names, model.edge_types, strict=True))
             if n.endswith(".root") and t == "free"]
    if len(roots) != 1:
        raise ScheduleError(f"{model.record.source}: a support reference needs exactly one "
                            f"floating base (the record has {len(roots)})")
    return roots[0]


class _Inverse:
    """Closes the all-supports model at a base pose and support targets (the IK)."""

    def __init__(self, knots: SupportKnots, model: CompiledModel) -> None:
        self.knots, self.model = knots, model
        sch = knots.schedule
        names = [s.name for s in model.record.supports
                 if any(s.name in model.modes[m].supports for m in sch.modes)]
        self.names = tuple(names)
        info = analyse_mode(model, "reference", self.names, model.partitions["default"]
                            .length_scale)
        self.root = _root(model)
        self.ik = mode_model(model, self.names, root_inputs=info.root_inputs)
        part = info.partition
        rs = self.ik.v_slice(self.root)
        if not set(range(rs.start, rs.stop)) <= set(part.independent.tolist()):
            raise ScheduleError(f"{knots.source}: with {', '.join(names)} all held, the base "
                                "pose cannot be prescribed (the legs cannot absorb the support "
                                "rows)")
        self.part = part
        self.n_base = len(model.kinds)
        self.by_name = {s.name: s for s in model.record.supports}
        self.plan = module_plan(self.ik, part)
        self.joint_targets = resolve_targets(model, model.partitions["default"],
                                             {n: float(x[0]) for n, x in knots.joints.items()}
                                             ) if knots.joints else {}
        self._posture()

    def _posture(self) -> None:
        """Defaults: the reference posture (base moved rigidly to its first knot)."""
        m, k = self.model, self.knots
        q = np.array(m.partitions["default"].q_ref)
        T_ref = sp.se3_from_pose(_free_pose(q[m.q_slice(self.root)]))
        start = _components_of(T_ref)
        start.update({c: float(x[0]) for c, x in k.base.items()})
        T0 = _pose(start)
        q[m.q_slice(self.root)] = _free_q(T0)
        self.q_posture = q
        self.base_default = start
        move = T0 * T_ref.inverse()
        self.support_default = {n: _components_of(move * T) for n, T in zip(
            self.names, support_poses(m, np.array(m.partitions["default"].q_ref), self.names),
            strict=True)}

    def targets(self, t: float) -> tuple[pin.SE3, list[pin.SE3], dict[int, float]]:
        k = self.knots
        base = {c: (min_jerk(k.time, k.base[c], t) if c in k.base else v)
                for c, v in self.base_default.items()}
        anchors = []
        for n in self.names:
            comp = k.supports.get(n, {})
            vals = {c: (min_jerk(k.time, comp[c], t) if c in comp else v)
                    for c, v in self.support_default[n].items()}
            vals["z"] += k.swing_lift(n, t)
            anchors.append(_pose(vals))
        joints = {j: min_jerk(k.time, k.joints[self.model.v_names[j]], t)
                  for j in self.joint_targets}
        return _pose(base), anchors, joints

    def close(self, q: np.ndarray, t: float, s: float = 1.0) -> np.ndarray:
        """The closed IK-model configuration at time t from the guess q (s < 1: the
        homotopy from the reference posture's targets)."""
        base, anchors, joints = self.targets(t)
        if s < 1.0:
            T0 = sp.se3_from_pose(_free_pose(self.q_posture[self.model.q_slice(self.root)]))
            base = _blend(T0, base, s)
            defaults = [_pose(self.support_default[n]) for n in self.names]
            anchors = [_blend(a0, a1, s) for a0, a1 in zip(defaults, anchors, strict=True)]
        ik = _with_anchors(self.ik, self.n_base, anchors, self.by_name, self.names)
        q = np.array(q, dtype=float)
        q[ik.q_slice(self.root)] = _free_q(base)
        if joints:
            q = set_values(ik, q, joints)
        q, ok = close_modules(ik, q, self.plan)
        if not ok:
            raise ScheduleError(f"{self.knots.source}: the targets at t = {t:.3f} s "
                                "are out of reach (the legs cannot close on them)")
        return q


def module_plan(model: CompiledModel, part) -> list[tuple[tuple, tuple, np.ndarray]]:
    """Per module of ``model`` ``(chords, couplings, its dependent v-columns of part)``."""
    dep = set(np.asarray(part.dependent).tolist())
    return [(b.chords, b.couplings, np.array([j for j in b.cols if j in dep], dtype=np.int64))
            for b in model.blocks]


def close_modules(model: CompiledModel, q: np.ndarray, plan) -> tuple[np.ndarray, bool]:
    """Newton on every module's dependent columns of :func:`module_plan` from q (the
    independent coordinates as given): the closed q and whether every module converged."""
    ok = True
    for chords, couplings, cols in plan:
        if cols.size:
            q, good = newton(model, q, chords, couplings, cols)
            ok &= good
    return q, ok


def _blend(a: pin.SE3, b: pin.SE3, s: float) -> pin.SE3:
    return a * pin.exp6(s * pin.log6(a.inverse() * b))


def _free_pose(q7: np.ndarray):
    from rbc.ir.record import Pose

    return Pose(tuple(q7[:3]), tuple(q7[3:]))


def _free_q(T: pin.SE3) -> np.ndarray:
    return np.concatenate([T.translation, sp.quat_from_rotation(T.rotation)])


def _with_anchors(ik: CompiledModel, n_base: int, anchors: list[pin.SE3], by_name,
                  names) -> CompiledModel:
    """The all-supports model with its support anchors moved (only ``A`` changes: the
    path-product kinematics read it; nothing else depends on the anchors)."""
    from dataclasses import replace

    A = list(ik.A)
    for n, T in zip(names, anchors, strict=True):
        A[ik.edge(n + ".support")] = T
    return replace(ik, A=tuple(A))


def chart_rates(pose, t: float, h: float, body: bool) -> tuple[np.ndarray, np.ndarray]:
    """Twist and its rate [ω; v] (angular-first) of a pose curve ``pose(t)`` at t by
    five-point central differences in the chart at t: ``log(T(t)⁻¹ T(t+δ))`` (body twist)
    or ``log(T(t+δ) T(t)⁻¹)`` (spatial twist). In that chart the first derivative is the
    twist and the second its rate (``ad(ξ)ξ = 0``)."""
    T0 = pose(t)
    phi = []
    for j in (-2, -1, 1, 2):
        T = pose(t + j * h)
        X = T0.inverse() * T if body else T * T0.inverse()
        phi.append(sp.from_pinocchio_motion(np.asarray(pin.log6(X).vector)))
    v = (phi[0] - 8 * phi[1] + 8 * phi[2] - phi[3]) / (12 * h)
    a = (-phi[0] + 16 * phi[1] + 16 * phi[2] - phi[3]) / (12 * h * h)
    return v, a


def _rates(f, t: float, h: float) -> tuple[float, float]:
    """First and second derivative of a scalar function by five-point differences."""
    y = [f(t + j * h) for j in (-2, -1, 0, 1, 2)]
    return ((y[0] - 8 * y[1] + 8 * y[3] - y[4]) / (12 * h),
            (-y[0] + 16 * y[1] - 30 * y[2] + 16 * y[3] - y[4]) / (12 * h * h))


def anchored_state(model: CompiledModel, part, L, u: np.ndarray, ud: np.ndarray,
                   zeta: np.ndarray, zeta_dot: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Speeds and accelerations (nv,) on the closure manifold with moving anchors.

    The held frame of every support equals its anchor, so on the closure rows ``C v = ζ``
    and ``C a + Ċ v = ζ̇`` (ζ (n_rows,): the anchors' spatial twists ``[ω; v]`` on their
    chords' rows, 0 on the others; ζ̇ their rates). With the independent speeds u and
    accelerations u̇ (n_u,): ``v = E u + R_p⁻¹ S ζ`` and
    ``a_dep = R_p⁻¹ S (ζ̇ − Ċ v − C_ind u̇)`` by the lift's LU factors.

    Args:
        model: the model with its anchors at the closed state's; part: the partition;
        L: its lift at the closed q (:func:`rbc.model.partition.lift`).
    """
    ind, rows = part.independent, part.rows
    v = L.E @ u
    if part.rank:
        v[part.dependent] += L.solve(zeta[rows])
    cv = L.geometry.velocity_product(model, v)
    a = np.zeros(model.nv)
    a[ind] = ud
    if part.rank:
        a[part.dependent] = L.solve(zeta_dot[rows] - cv[rows] - L.C[rows][:, ind] @ ud)
    return v, a


def lift_support_reference(model: CompiledModel, knots: SupportKnots, dt: float,
                           duration: float, progress=None) -> SupportReference:
    """Close the support reference on the grid ``0, dt, …, duration`` (module docstring).

    Speeds and accelerations are exact on the closure manifold with moving anchors: the
    held frame G(q) of a support equals its anchor A(t), so their spatial twists and
    accelerations agree, ``C v = ζ_A`` and ``C a + Ċ v = ζ̇_A`` on the support rows (0 on the
    others). With the independent speeds u (the base's body twist and the other
    independent joints' rates) this gives ``v = E u + R_p⁻¹ S ζ`` and
    ``a_dep = R_p⁻¹ S (ζ̇ − Ċ v − C_ind u̇)`` by the lift's LU factors. Twists of the base and
    of the anchors come from five-point differences of the (closed-form) target curves in
    their charts (step :data:`FD_STEP`; no closure solve in the stencil).

    Raises:
        ScheduleError: the targets are out of reach, or the base cannot be prescribed.
    """
    inv = _Inverse(knots, model)
    ik, part = inv.ik, inv.part
    t0 = float(knots.time[0])
    q = _start(inv, t0)
    n = int(round(duration / dt)) + 1
    time = t0 + np.arange(n) * dt
    nb, nvb = model.nq, model.nv
    Q, V, A = np.empty((n, nb)), np.empty((n, nvb)), np.empty((n, nvb))
    h = FD_STEP
    ind = part.independent
    rs = ik.v_slice(inv.root)
    root_cols = np.searchsorted(ind, np.arange(rs.start, rs.stop))
    joint_cols = {j: int(np.searchsorted(ind, j)) for j in inv.joint_targets}
    chord_row = {n: 6 * ik.chord_edges.index(ik.edge(n + ".support")) for n in inv.names}
    for i, t in enumerate(time):
        q = inv.close(q, t)
        model_t = _with_anchors(ik, inv.n_base, inv.targets(t)[1], inv.by_name, inv.names)
        L = lift(model_t, part, q)
        u, ud = np.zeros(ind.size), np.zeros(ind.size)
        u[root_cols], ud[root_cols] = chart_rates(lambda x: inv.targets(x)[0], t, h, True)
        for j, col in joint_cols.items():
            u[col], ud[col] = _rates(lambda x, j=j: inv.targets(x)[2][j], t, h)
        zeta, zeta_dot = np.zeros(ik.n_rows), np.zeros(ik.n_rows)
        for m, name in enumerate(inv.names):
            r = chord_row[name]
            zeta[r: r + 6], zeta_dot[r: r + 6] = chart_rates(
                lambda x, m=m: inv.targets(x)[1][m], t, h, False)
        v, a = anchored_state(model_t, part, L, u, ud, zeta, zeta_dot)
        Q[i], V[i], A[i] = q[:nb], v[:nvb], a[:nvb]
        if progress is not None:
            progress((i + 1) / n)
    ell, ell_dot = np.empty((n, len(model.record.actuators))), np.empty(
        (n, len(model.record.actuators)))
    for i in range(n):  # every port kind (distance and profile ports depend on q)
        ell[i], J = port_state(model, Q[i])
        ell_dot[i] = J @ V[i]
    E = np.eye(model.nv)
    tasks = {}
    for name in (t.name for t in model.record.tasks):
        xs = np.empty((n, 3))
        vs = np.empty((n, 3))
        for i in range(n):
            x, J = task_map(model, name, Q[i], E)
            xs[i], vs[i] = x[:3], J[-3:] @ V[i]
        tasks[name] = (xs, vs)
    ref = LiftedReference(time, Q, V, A, V, A, ell, ell_dot, tasks)
    mode = np.array([knots.schedule.index_at(t) for t in time], dtype=np.int64)
    return SupportReference(knots, model, ik, ref, mode)


def segment_models(model: CompiledModel, sref: SupportReference
                   ) -> list[tuple[CompiledModel, int]]:
    """Per schedule entry, the mode model anchored at the reference's support poses at the
    entry's start, and the first grid index of the entry."""
    from rbc.model.modes import model_for

    out = []
    for i, name in enumerate(sref.schedule.modes):
        k = int(np.argmax(sref.mode >= i)) if np.any(sref.mode >= i) else len(sref.mode) - 1
        info = model.modes[name]
        anchors = anchors_array(support_poses(model, sref.ref.q[k], info.supports))
        out.append((model_for(model, info, anchors), k))
    return out


def mode_state(mm: CompiledModel, q_base: np.ndarray, v_base: np.ndarray | None = None,
               a_base: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray | None,
                                                          np.ndarray | None]:
    """A base-model state in a mode model's coordinates: the support cut coordinates from
    the pose (``Q_e = A⁻¹·T_world_c·B``, the rotation of the foot relative to its anchor),
    and the independent speeds/accelerations ``v[independent]``, ``a[independent]`` (the
    mode's independent coordinates are base-model coordinates).

    Returns:
        ``(q (nq_mode,), u (n_u,) or None, u̇ (n_u,) or None)``.
    """
    from rbc.model.kinematics import body_poses

    nb = q_base.size
    q = np.empty(mm.nq)
    q[:nb] = q_base
    T = body_poses(mm, q)
    for e in mm.chord_edges:
        if mm.q_slice(e).start < nb or not mm.kinds[e].nq:
            continue
        Q = mm.A[e].inverse() * T[int(mm.child[e])] * mm.B[e]
        q[mm.q_slice(e)] = sp.quat_from_rotation(Q.rotation)
    part = next(iter(mm.partitions.values()))
    ind = part.independent
    if np.any(ind >= (v_base.size if v_base is not None else np.inf)):
        raise ScheduleError("a mode's independent coordinates include support cut "
                            "coordinates; this schedule cannot be tracked")
    u = None if v_base is None else np.asarray(v_base)[ind]
    ud = None if a_base is None else np.asarray(a_base)[ind]
    return q, u, ud


def modal_feedforward(model: CompiledModel, sref: SupportReference, progress=None
                      ) -> np.ndarray:
    """(K, n_act) port efforts reproducing the reference on the nominal model, each grid
    point in the mode active there (the mode's inverse dynamics; minimum norm when the mode
    is over-actuated, least squares in an undriven direction). In a mode without supports
    (free flight) the base is driven by nothing: the efforts are the collocated ones
    (:func:`rbc.model.dynamics.collocated_efforts`) — the joints' reference with the base
    falling as the dynamics make it — not a least-squares fit of the reference's base
    acceleration (a minimum-jerk base curve is not a ballistic one)."""
    segs = segment_models(model, sref)
    out = np.empty((sref.ref.time.size, len(model.record.actuators)))
    cache: dict[int, tuple[DynamicsModel, DynamicsData]] = {}
    for k in range(sref.ref.time.size):
        i = int(sref.mode[k])
        mm = segs[i][0]
        if i not in cache:
            dm = DynamicsModel.build(mm)
            cache[i] = (dm, DynamicsData.of(dm))
        dm, data = cache[i]
        part = next(iter(mm.partitions.values()))
        q, u, ud = mode_state(mm, sref.ref.q[k], sref.ref.v[k], sref.ref.a[k])
        t = reduced_terms(dm, data, part, q, u)
        if sref.model.modes[sref.schedule.modes[i]].supports:
            out[k] = actuator_efforts(dm, t, ud)
        else:
            out[k] = collocated_efforts(dm, t, ud)[0]
        if progress is not None:
            progress((k + 1) / sref.ref.time.size)
    return out


def reference_gaps(sref: SupportReference) -> float:
    """Largest closure residual of the lifted reference in the modes it is tracked in [m,
    rad] (each grid state in its segment's mode model): a self-check of the lift — the held
    supports stay at their anchors — that is 0 up to the closure tolerance."""
    from rbc.model.kinematics import residual

    worst = 0.0
    for i, (mm, _) in enumerate(segment_models(sref.model, sref)):
        for k in np.flatnonzero(sref.mode == i):
            q = mode_state(mm, sref.ref.q[k])[0]
            worst = max(worst, float(np.abs(residual(mm, q)).max(initial=0.0)))
    return worst

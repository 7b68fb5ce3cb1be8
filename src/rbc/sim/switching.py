"""Plants on changing supports: one mode segment after the other (docs/supports.md).

:class:`ModalPlant` wraps a backend and a :class:`~rbc.sim.schedule.ModeSchedule`:

* **reduced** and **pinocchio** plants are rebuilt at every switch on the new mode's model
  (the base model plus one closure to the world per active support): the reduced backend
  integrates the mode's reduced model, the Pinocchio backend gets one ideal weld
  (``CONTACT_3D`` / ``CONTACT_6D``) per active support with the Baumgarte corrector
  (400 s⁻², 40 s⁻¹);
* **mujoco** runs the whole schedule on one model with a floor and native unilateral
  contact (:func:`rbc.backends.mjcf_export.export_mjcf` with ``floor``): the schedule only
  drives the reference and the feedforward.

**Anchors** (reduced, pinocchio): the first mode's supports are anchored where the plant's
support frames are at the start; a support that stays active keeps its anchor. A support
that touches down is anchored

* on the reduced plant where its frame is at the switch (measured, not the reference's
  target: the plant integrates on the closure manifold and cannot start off it);
* on the Pinocchio plant (:attr:`~rbc.sim.backends.Backend.floor_anchors`) **on the
  floor** — "Touchdown on the floor": the ground plane of :func:`floor_level` (MuJoCo's) is
  the ground; the new anchor is the
  measured frame moved along −gravity until its contact geometry's lowest point is on that
  plane (a point: sphere bottom; a surface: its 1 mm contact box, and turned by the smallest
  rotation that levels its normal, keeping its yaw); the horizontal position is where the
  foot is. The Baumgarte corrector closes the gap between the foot and its anchor
  (critically damped, 20 rad/s), as a stiff ground pushes a foot that arrives low back up
  and — unlike a real, unilateral ground — pulls one that is still above it down. Without
  this, a tilted robot's feet were welded where it held them, below or above the ground,
  and the undriven roll of two-foot phases accumulated touchdown after touchdown.

**State transfer** (reduced, pinocchio): the tree configuration is kept; the new supports'
cut coordinates start at the identity (anchor = the support's pose), those of supports that
stay active are recomputed from the pose; the speeds go through the impact map of
:mod:`rbc.model.impact` — the identity for a lift-off, the perfectly plastic impact on the
new supports for a touchdown. Its kinetic energy loss is kept in :attr:`work_impacts` (the
energy ledger counts it), and every switch is logged in :attr:`switches`.

**Supports measured** at every control step (:meth:`support_state`): the world position of
each schedule support's frame, its slip from the anchor while active, and the reaction
wrench the ground exerts on it ``[n; f]`` (world axes, about the support point; NaN while
inactive): reduced — the support rows' multipliers of the mode's dependent equations
(:func:`rbc.model.dynamics.closure_reactions`); pinocchio — the contact forces of
``constraintDynamics``; mujoco — the contact forces of the support's geom (``mj_contactForce``).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
import pinocchio as pin

from rbc.backends.mjcf_export import contact_depth, support_contact_level
from rbc.ir import spatial as sp
from rbc.model.compiled import CompiledModel
from rbc.model.dynamics import DynamicsData, DynamicsModel
from rbc.model.impact import impact_map
from rbc.model.modes import SUPPORT_EDGE, anchors_array, model_for, support_poses
from rbc.sim.backends import Backend, Measurement
from rbc.sim.schedule import ModeSchedule, SupportReference, mode_state


@dataclass(frozen=True)
class Switch:
    """One mode switch: time [s], modes, supports added/released, kinetic energy before and
    after [J] and the largest slip of the released supports [m]."""

    time: float
    before: str
    after: str
    added: tuple[str, ...]
    released: tuple[str, ...]
    kinetic_before: float
    kinetic_after: float

    def to_json(self) -> dict:
        return {"time": self.time, "from": self.before, "to": self.after,
                "added": list(self.added), "released": list(self.released),
                "kinetic_before": self.kinetic_before, "kinetic_after": self.kinetic_after,
                "impact_loss": self.kinetic_before - self.kinetic_after}


@dataclass(eq=False)
class SupportState:
    """Per schedule support: world position (3,) [m], active flag, anchor position (3,),
    reaction wrench (6,) [N·m; N] about the support point (NaN when inactive)."""

    position: np.ndarray
    active: np.ndarray
    anchor: np.ndarray
    wrench: np.ndarray = field(default_factory=lambda: np.zeros((0, 6)))


class ModalPlant(Backend):
    """A backend run along a mode schedule (module docstring).

    Args:
        backend: the backend class; plant: the plant's base model (mismatch applied);
        schedule: the modes; q0, v0: (nq,), (nv,) base-model initial state; floor: height
        [m] of a native-contact backend's ground plane, or of the ground a floor-anchored
        plant's touchdowns land on (:func:`floor_level`), None for none, ``"auto"``: the
        lowest contact of the first mode's supports at q0 (:func:`auto_floor`).

    Raises:
        UsageError: ``floor="auto"`` on a schedule that starts without supports and
            reaches a supported mode later (the floor is where the reference lands:
            :func:`floor_level`).
    """

    name = "modal"

    def __init__(self, backend: type[Backend], plant: CompiledModel, schedule: ModeSchedule,
                 q0: np.ndarray, v0: np.ndarray, dt: float, floor: float | str | None = "auto",
                 **options) -> None:
        # not Backend.__init__: the work counters are the sums over segments (properties)
        self.plant, self.part, self.dt = plant, plant.partitions["default"], dt
        self._carried = (0.0, 0.0, 0, 0.0)  # works, steps, drive losses of past segments
        self._done: list[Backend] = []  # finished segments (their integration figures)
        self.backend, self.schedule, self.options = backend, schedule, options
        self.names = tuple(s.name for s in plant.record.supports
                           if any(s.name in plant.modes[m].supports for m in schedule.modes))
        self.mode = schedule.modes[0]
        self.forces: dict[int, np.ndarray] = {}  # held pushes, re-applied to new segments
        self.anchors: dict[str, np.ndarray] = {}
        self.switches: list[Switch] = []
        self.work_impacts = 0.0
        self.native = bool(getattr(backend, "native_contact", False))
        self.on_floor = bool(getattr(backend, "floor_anchors", False))
        info = plant.modes[self.mode]
        #: the ground plane's height [m] along −gravity (module docstring; None: no floor)
        self.floor = auto_floor(plant, schedule, q0) if floor == "auto" else floor
        if self.native:
            self.anchors = dict(zip(info.supports, anchors_array(
                support_poses(plant, q0, info.supports)), strict=True))
            self.inner = backend(plant, self.part, q0, v0, dt, floor=self.floor, **options)
        else:
            self.inner = self._segment(self.mode, np.asarray(q0, float),
                                       np.asarray(v0, float)[: plant.nv_tree], 0.0,
                                       touchdown=False)
        # the record's loops only (support slips are logged apart, per support)
        self.gap_names = tuple(n for n in self.inner.gap_names if SUPPORT_EDGE not in n)

    # ------------------------------------------------------------------ segments
    def _landed(self, name: str, T: pin.SE3) -> np.ndarray:
        """The anchor (7,) of support ``name`` touching down with its frame at T, on the
        floor (module docstring, "Touchdown on the floor"): T moved along −gravity until
        the contact geometry's lowest point is on the plane; a surface also turned by the
        smallest rotation that makes its normal (the frame's z axis) the floor's, so its
        yaw about the normal is kept. Horizontal position (and a point's frame rotation)
        are the measured ones."""
        if self.floor is None:  # no floor (no mode of the schedule has a support)
            return anchors_array([T])[0]
        s = next(x for x in self.plant.record.supports if x.name == name)
        up = sp.up_direction(self.plant.record.gravity)
        p = np.array(T.translation)
        p = p + (self.floor + contact_depth(s) - float(up @ p)) * up
        R = np.array(T.rotation)
        if s.kind == "surface":  # level the sole: its normal (frame z) onto the floor's
            R = sp.rotation_between(R[:, 2], up) @ R
        return anchors_array([pin.SE3(R, p)])[0]

    def _segment(self, mode: str, q_base: np.ndarray, v_tree: np.ndarray, t: float,
                 touchdown: bool = True) -> Backend:
        """A fresh inner plant on ``mode`` at the base state (anchors: kept for supports
        that stay active, for new ones measured — on the floor for a touchdown of a plant
        with :attr:`~rbc.sim.backends.Backend.floor_anchors`), speeds through the impact
        map."""
        p = self.plant
        info = p.modes[mode]
        poses = support_poses(p, q_base, info.supports)
        now = dict(zip(info.supports, anchors_array(poses), strict=True))
        if touchdown and self.on_floor:
            now = {n: self._landed(n, T) for n, T in zip(info.supports, poses, strict=True)}
        self.anchors = {n: self.anchors.get(n, now[n]) for n in info.supports}
        mm = model_for(p, info, np.array([self.anchors[n] for n in info.supports]))
        dm = DynamicsModel.build(mm)
        q = mode_state(mm, q_base)[0]
        imp = impact_map(dm, DynamicsData.of(dm), info.partition, q, v_tree)
        self.work_impacts -= imp.loss
        self._impact = imp
        inner = self.backend(mm, info.partition, q, imp.v, self.dt, **self.options)
        for b, f in self.forces.items():
            inner.apply_force(b, f)
        if hasattr(inner, "time"):
            inner.time = t  # the reduced plant's clock: events and warnings in run time
        return inner

    def switch(self, mode: str, t: float) -> None:
        """Switch to ``mode`` at time t (module docstring)."""
        if mode == self.mode:
            return
        before, after = self.plant.modes[self.mode], self.plant.modes[mode]
        q, v = self.inner.base_state()
        k0 = self.inner.kinetic()
        if self.native:
            info = after
            now = dict(zip(info.supports, anchors_array(support_poses(self.plant, q,
                                                                      info.supports)),
                           strict=True))
            self.anchors = {n: self.anchors.get(n, now[n]) for n in info.supports}
            k1 = k0
        else:
            self._carry(self.inner)
            drives = self.inner.drive_state()
            self.inner = self._segment(mode, q, v[: self.plant.nv_tree], t)
            self.inner.set_drive_state(drives)  # the lag goes on through the switch
            k1 = self.inner.kinetic()
        self.switches.append(Switch(t, self.mode, mode,
                                    tuple(n for n in after.supports if n not in before.supports),
                                    tuple(n for n in before.supports if n not in after.supports),
                                    k0, k1))
        self.mode = mode

    def _carry(self, old: Backend) -> None:
        a, p, n, d = self._carried
        self._carried = (a + old.work_actuators, p + old.work_passive, n + old.steps,
                         d + old.work_drive_losses)
        self._done.append(old)

    def _segments(self) -> list[Backend]:
        return [*self._done, self.inner]

    @property
    def fallbacks(self) -> int:
        """Full continuations of the reduced plants' closure projections, all segments."""
        return sum(b.fallbacks for b in self._segments())

    @property
    def events(self) -> list[dict]:
        """The reduced plants' re-partitions and mechanism events, all segments."""
        return [e for b in self._segments() for e in getattr(b, "events", [])]

    @property
    def warnings(self) -> list[str]:
        return [w for b in self._segments() for w in getattr(b, "warnings", [])]

    def report(self) -> dict | None:
        """The reduced plants' integration figures summed over the segments (the largest
        error estimate with its time and coordinate); None for the other backends."""
        reps = [b.report() for b in self._segments() if hasattr(b, "report")]
        if not reps:
            return None
        out = dict(max(reps, key=lambda r: r["max_error_estimate"]))
        for key in ("accepted_steps", "rejected_steps", "evaluations", "steps_over_tolerance"):
            out[key] = sum(r[key] for r in reps)
        return out

    @property
    def work_actuators(self) -> float:
        return self._carried[0] + self.inner.work_actuators

    @property
    def work_passive(self) -> float:
        return self._carried[1] + self.inner.work_passive

    @property
    def work_drive_losses(self) -> float:
        return self._carried[3] + self.inner.work_drive_losses

    @property
    def steps(self) -> int:
        return self._carried[2] + self.inner.steps

    @property
    def close(self):
        """The reduced plant's closer (its fallback count is reported)."""
        return self.inner.close

    # ------------------------------------------------------------------ Backend
    @property
    def pushable(self) -> bool:
        return self.backend.pushable

    def apply_force(self, body: int, force: np.ndarray) -> None:
        """Held on the current segment and on every later one."""
        self.forces[int(body)] = np.asarray(force, dtype=float).copy()
        self.inner.apply_force(body, force)

    def advance(self, f: np.ndarray, steps: int) -> None:
        self.inner.advance(f, steps)

    def measure(self) -> Measurement:
        """The inner plant's measurement; for rebuilt plants (reduced, pinocchio) q and v
        in the base model's coordinates and only the record's loop gaps, so that the log has
        one layout across segments."""
        m = self.inner.measure()
        keep = [i for i, n in enumerate(self.inner.gap_names) if SUPPORT_EDGE not in n]
        if self.native:
            return replace(m, loop_gaps=m.loop_gaps[keep])
        q, v = self.inner.base_state()
        return replace(m, q=q, v=v, loop_gaps=m.loop_gaps[keep])

    def support_state(self, q: np.ndarray | None = None) -> SupportState:
        """The schedule supports now (module docstring); q: the base state if known."""
        if q is None:
            q, _ = self.inner.base_state()
        pos = np.array([T.translation for T in support_poses(self.plant, q, self.names)]
                       ).reshape(-1, 3)
        active = np.array([n in self.anchors for n in self.names], dtype=bool)
        anchor = np.array([self.anchors[n][:3] if n in self.anchors else np.full(3, np.nan)
                           for n in self.names]).reshape(-1, 3)
        wrench = np.full((len(self.names), 6), np.nan)
        got = self.inner.support_wrenches(tuple(n for n in self.names if n in self.anchors))
        for n, w in got.items():
            wrench[self.names.index(n)] = w
        return SupportState(pos, active, anchor, wrench)


def auto_floor(plant: CompiledModel, schedule: ModeSchedule, q0: np.ndarray) -> float | None:
    """The ground plane [m along −gravity] of ``ModalPlant(floor="auto")``: the lowest contact
    of the first mode's supports at q0 (nq,); None when no mode of the schedule has a
    support.

    Raises:
        UsageError: the schedule starts in a mode without supports and reaches one with
            supports later — q0 does not say where that floor is (it took z = 0 before);
            :func:`floor_level` finds it from the support reference.
    """
    from rbc.errors import UsageError

    supported = [m for m in schedule.modes if plant.modes[m].supports]
    if not supported:
        return None
    first = plant.modes[schedule.modes[0]].supports
    if not first:
        raise UsageError(f"floor='auto': the schedule starts in mode '{schedule.modes[0]}' "
                         f"without supports and reaches '{supported[0]}' later; give the "
                         "floor height (rbc.sim.switching.floor_level of the support "
                         "reference) or None")
    return support_contact_level(plant, q0, first)


def floor_level(plant: CompiledModel, sref: SupportReference, q0: np.ndarray) -> float | None:
    """Height [m] along −gravity of a native-contact plant's ground plane for a run along
    ``sref``: the lowest contact point (:func:`~rbc.backends.mjcf_export.support_contact_level`)
    of the first supported mode's supports — at the initial state q0 (nq,) when the schedule
    starts on supports, else at the reference's state where that mode begins (a drop from
    free flight lands on the floor the reference was planned on, not on z = 0); None when
    no mode of the schedule has a support (no floor).
    """
    modes = sref.schedule.modes
    first = next((i for i, m in enumerate(modes) if plant.modes[m].supports), None)
    if first is None:
        return None
    names = plant.modes[modes[first]].supports
    if first == 0:
        return support_contact_level(plant, q0, names)
    k = int(np.flatnonzero(np.asarray(sref.mode) >= first)[0])
    return support_contact_level(plant, sref.ref.q[k], names)


class SupportLog:
    """Per control step: the mode, the supports' state and the base pose against the
    reference (the ``supports/…``, ``base/…``, ``mode`` and ``work_impacts`` log entries)."""

    def __init__(self, plant: ModalPlant, sref) -> None:
        self.plant, self.sref = plant, sref
        k = plant.plant
        self.root = next(e for e, (n, t) in enumerate(zip(k.edge_names, k.edge_types,
                                                          strict=True))
                         if n.endswith(".root") and t == "free")
        self.rows: dict[str, list] = {"mode": [], "work_impacts": [], "base/position": [],
                                      "base/reference": []}
        for n in plant.names:
            for key in ("position", "anchor", "wrench", "slip"):
                self.rows[f"supports/{n}/{key}"] = []

    def record(self, t: float) -> None:
        p, k = self.plant, self.plant.plant
        q, _ = p.inner.base_state()
        st = p.support_state(q)
        self.rows["mode"].append(p.schedule.modes.index(p.mode))
        self.rows["work_impacts"].append(p.work_impacts)
        qs = k.q_slice(self.root)
        self.rows["base/position"].append(q[qs][:3])
        ref = self.sref.ref
        i = min(int(round((t - ref.time[0]) / (ref.time[1] - ref.time[0]))), ref.time.size - 1)
        self.rows["base/reference"].append(_interp(ref.time, ref.q[:, qs][:, :3], t, i))
        for n, pos, act, anc, w in zip(p.names, st.position, st.active, st.anchor, st.wrench,
                                       strict=True):
            self.rows[f"supports/{n}/position"].append(pos)
            self.rows[f"supports/{n}/anchor"].append(anc)
            self.rows[f"supports/{n}/wrench"].append(w)
            self.rows[f"supports/{n}/slip"].append(np.linalg.norm(pos - anc) if act else np.nan)

    def arrays(self) -> dict[str, np.ndarray]:
        return {k: np.asarray(v, dtype=float if k != "mode" else np.int64)
                for k, v in self.rows.items()}

    def summary(self, log: dict[str, np.ndarray]) -> dict:
        """Base tracking, switches and per-support extremes (docs/supports.md)."""
        p = self.plant
        err = np.linalg.norm(log["base/position"] - log["base/reference"], axis=1)
        out = {"schedule": [{"time": t, "mode": m} for t, m in zip(
            p.schedule.times, p.schedule.modes, strict=True)],
            "switches": [s.to_json() for s in p.switches],
            "base_position_rms": float(np.sqrt(np.mean(err * err))),
            "base_position_max_error": float(err.max(initial=0.0)),
            # the rebuilt plants' impact maps; MuJoCo's contacts dissipate on their own
            "impact_losses": None if p.native else float(-p.work_impacts) + 0.0,
            "supports": {}}
        by = {s.name: s for s in p.plant.record.supports}
        for n in p.names:
            w = log[f"supports/{n}/wrench"]
            up = sp.up_direction(p.plant.record.gravity)
            on = ~np.isnan(w[:, 0])
            on[0] = False  # the initial sample: MuJoCo has not resolved its contacts yet
            fn = w[on, 3:] @ up
            ft = np.linalg.norm(w[on, 3:] - np.outer(fn, up), axis=1)
            ratio = ft / np.maximum(fn, 1e-12)
            slip = log[f"supports/{n}/slip"]
            out["supports"][n] = {
                "active_fraction": float((~np.isnan(w[:, 0])).mean()),
                "max_slip": float(np.nanmax(slip)) if np.any(on) else 0.0,
                "min_normal_force": float(fn.min()) if fn.size else None,
                "max_friction_ratio": float(ratio.max()) if ratio.size else None,
                "friction": by[n].friction}
        return out


def _interp(tg: np.ndarray, y: np.ndarray, t: float, i: int) -> np.ndarray:
    """Linear interpolation of grid samples y at time t (i: a nearby grid index)."""
    if t <= tg[0]:
        return y[0]
    if t >= tg[-1]:
        return y[-1]
    k = int(np.searchsorted(tg, t, side="right")) - 1
    s = (t - tg[k]) / (tg[k + 1] - tg[k])
    return (1 - s) * y[k] + s * y[k + 1]

"""Sideways steps of a travelling formation: the robots of a composed formation step
sideways together along the formation's tangent (issue #20 item 5, with the unloading
ramps of item 2; docs/allocation.md "Dances").

**A step is data.** :class:`StepSizes` (distance along the tangent, the swing sole's lift,
how far the pelvis moves over the stance sole) and :class:`StepTiming` (the phases'
lengths) define one step of the whole formation: a rigid world motion ``M`` of the
formation (:func:`formation_motion`: a rotation about the ring's or semicircle's vertical
axis by ``distance / radius``, a translation along a line) that every robot makes with
both soles, the leading sole (the one on the side of the motion: all robots lift the same
side) first. Per step the phases (:class:`Phase`) are

1. ``shift`` (double support, mode ``stand``): every pelvis moves over its trailing
   sole; the leading sole unloads over the last 0.35 s;
2. ``swing`` of the leading soles (single support of the trailing soles, the swing mode
   that lifts every robot's leading sole): each leading sole moves from ``S`` to ``M S``
   with a lift bump;
3. ``transfer`` (double support with the moved leading anchors): the leading soles load
   again (0.04 s at zero, then 0.30 s rising), the pelvis moves over the moved leading
   sole, the trailing soles unload over the last 0.35 s;
4. ``swing`` of the trailing soles (single support of the moved leading soles);
5. ``settle`` (double support with both anchors moved): the trailing soles load, the
   pelvis returns to its stance moved by ``M``.

After a step the formation's configuration is its start configuration moved rigidly by M
(closed, every relative coordinate unchanged); the next step starts from there.

**Trajectories** (C² everywhere, at rest at every phase boundary). In a phase a frame
moves from pose ``A`` to pose ``B`` as ``T(x) = Tz(h b(x)) · A exp(ξ S(x)) · exp(β b(x))``,
``ξ = log(A⁻¹ B)``, x the phase's normalised time, S the quintic smoothstep
(:func:`rbc.control.dances.smoothstep`), ``b(x) = 64 x³ (1 − x)³`` the swing's lift bump
(0 with both derivatives at the ends, 1 at mid-swing; the bump of docs/supports.md "Mode
schedules"), h the lift and β the swing sole's tilt (toe up: it keeps the ankle screws
inside their limits): a pelvis (h = 0, β = 0) has the body twist exactly ``ξ Ṡ`` and its
rate ``ξ S̈``.

**Load factors** (:class:`rbc.control.cones.UnloadingRamp`): every sole's σ(t) from its
lift-off and landing times — falling 1 → 0 over the 0.35 s before lift-off, 0 for 0.04 s
after landing, rising to 1 over 0.30 s (:meth:`StepPlan.loads`).

**The reference** (:class:`StepReference`): each sample is the inverse kinematics of the
double-support model (every sole a closure, the swing soles' anchors moved along their
trajectories, the hand links closed): the pelvis poses set, the dance partition's other
independent coordinates held at the stance, every module's dependent coordinates by
Newton from the nearest earlier sample (sub-stepped every :data:`MAX_STEP` seconds, so a
sample does not depend on the sampling path). Speeds and accelerations are exact on the
manifold with moving anchors (:func:`rbc.sim.schedule.anchored_state`; the soles'
spatial twists by five-point differences of their closed-form curves). The samples are
states of whichever mode holds at t (:meth:`StepPlan.mode_at`): a swing sole's speed is
admissible in the single-support mode, which has no row for it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import pinocchio as pin

from rbc.control.allocation import AllocationWeights
from rbc.control.cones import UnloadingRamp
from rbc.control.dances import smoothstep
from rbc.control.reference import ReferenceFailure, ReferenceSample
from rbc.ir import spatial as sp

#: Steps of the travelling dance: 4 × 7.2 s (:class:`StepTiming`) = 28.8 s of the 30 s.
TRAVEL_STEPS = 4
#: Longest interval [s] between two inverse-kinematics solves of :class:`StepReference`:
#: a later sample is reached through intermediate solves at most this far apart (at the
#: default sizes a swing sole moves ≤ 5 mm and a pelvis ≤ 1 cm in 50 ms, well inside
#: Newton's basin).
MAX_STEP = 0.05


@dataclass(frozen=True)
class StepSizes:
    """Sizes of one sideways step.

    Attributes:
        distance: [m] how far each robot moves along the formation's tangent per step
            (measured at the first robot's pelvis; a ring turns by distance / radius).
        lift: [m] the swing sole's lift at mid-swing.
        over: the pelvis's sideways shift over the stance sole, as a fraction of that
            sole's lateral offset in the pelvis frame at the stance (1: straight above
            the sole's origin).
        rise: [m] how far the pelvis rises while over a stance sole (straighter knees
            leave the ankle screws more stroke, but the sideways lean already takes ~6 mm
            of the legs' ~12 mm of extension at the stance: 8 mm does not close).
        tilt: (3,) [rad] the swing sole's rotation vector at mid-swing in its own frame,
            times the lift bump (flat at lift-off and landing; toe-up 0.15 rad keeps the
            swing leg's ankle screws inside their limits).
    """

    distance: float = 0.03
    lift: float = 0.03
    over: float = 1.0
    rise: float = 0.0
    tilt: tuple[float, float, float] = (0.0, 0.15, 0.0)


@dataclass(frozen=True)
class StepTiming:
    """The phases' lengths [s] of one step (module docstring). The unloading and loading
    ramps must fit: ``shift`` and ``transfer`` ≥ 0.35 s of unloading, ``transfer`` and
    ``settle`` ≥ 0.34 s of loading (checked by :func:`step_plan`)."""

    shift: float = 1.6
    swing: float = 0.8
    transfer: float = 2.4
    settle: float = 1.6

    @property
    def step(self) -> float:
        """One step's length [s]."""
        return self.shift + 2 * self.swing + self.transfer + self.settle


@dataclass(frozen=True)
class Phase:
    """One phase of a step: ``[start, stop)`` [s] in mode ``mode``; ``kind`` shift, swing,
    transfer or settle; ``side`` the lifted side (``l``/``r``) of a swing, else None."""

    start: float
    stop: float
    mode: str
    kind: str
    side: str | None = None


@dataclass(frozen=True, eq=False)
class Segment:
    """A frame's motion over ``[start, stop]`` [s] from pose a to pose b with the lift
    bump's height ``lift`` [m] and the tilt ``tilt`` (3,) [rad] (a rotation vector in the
    moving frame, times the bump) at mid-way (module docstring)."""

    start: float
    stop: float
    a: pin.SE3
    b: pin.SE3
    lift: float = 0.0
    tilt: tuple[float, float, float] = (0.0, 0.0, 0.0)

    @property
    def xi(self) -> np.ndarray:
        """(6,) ``log(a⁻¹ b)`` as ``[ω; v]``."""
        return sp.from_pinocchio_motion(np.asarray(pin.log6(self.a.inverse() * self.b).vector))

    def pose(self, t: float) -> pin.SE3:
        """``T_world_frame`` at t [s] (a before the segment, b after it)."""
        x = (t - self.start) / (self.stop - self.start)
        s = smoothstep(x)[0]
        T = self.a * pin.exp6(pin.Motion(sp.to_pinocchio_motion(self.xi * s)))
        if (self.lift or any(self.tilt)) and 0.0 < x < 1.0:
            b = bump(x)[0]
            T = (pin.SE3(np.eye(3), np.array([0.0, 0.0, self.lift * b])) * T
                 * pin.SE3(pin.exp3(b * np.asarray(self.tilt, dtype=float)), np.zeros(3)))
        return T

    def body_rates(self, t: float) -> tuple[np.ndarray, np.ndarray]:
        """(6,) body twist ``[ω; v]`` [rad/s, m/s] and its rate at t of a segment without
        lift or tilt (a pelvis's).

        Raises:
            ValueError: the segment has a lift or a tilt (its twist is not ``ξ Ṡ``).
        """
        if self.lift or any(self.tilt):
            raise ValueError("body_rates of a segment with a lift or tilt (use finite "
                             "differences of its pose: rbc.sim.schedule.chart_rates)")
        T = self.stop - self.start
        _, sd, sdd = smoothstep((t - self.start) / T)
        return self.xi * (sd / T), self.xi * (sdd / T ** 2)


def bump(x: float) -> tuple[float, float, float]:
    """``b(x) = 64 x³ (1 − x)³`` on [0, 1] (0 outside) and its two derivatives in x."""
    if x <= 0.0 or x >= 1.0:
        return 0.0, 0.0, 0.0
    y = 1.0 - x
    return (64 * x ** 3 * y ** 3, 192 * x * x * y * y * (y - x),
            384 * x * y * (y * y - 3 * x * y + x * x))


@dataclass(frozen=True, eq=False)
class Track:
    """A frame's piecewise motion: non-overlapping :class:`Segment` in time order, held at
    the first segment's start pose before it, at each segment's end pose after it."""

    start: pin.SE3
    segments: tuple[Segment, ...]

    def _at(self, t: float) -> tuple[Segment | None, pin.SE3]:
        held = self.start
        for s in self.segments:
            if t < s.start:
                break
            if t <= s.stop:
                return s, held
            held = s.b
        return None, held

    def pose(self, t: float) -> pin.SE3:
        s, held = self._at(t)
        return held if s is None else s.pose(t)

    def body_rates(self, t: float) -> tuple[np.ndarray, np.ndarray]:
        s, _ = self._at(t)
        return (np.zeros(6), np.zeros(6)) if s is None else s.body_rates(t)


@dataclass(frozen=True, eq=False)
class StepPlan:
    """The sideways steps of a formation (module docstring).

    Attributes:
        stand: the double-support mode; swing: ``{side: mode}`` the single-support modes
            lifting every robot's sole of that side; lead: the leading side (``l``/``r``).
        phases: the phases in time order; motion: M, one step's world motion.
        pelvis: ``{member: Track}`` of the pelvis frames (the free roots' poses);
        soles: ``{support: Track}`` of every sole of the stand mode (flat names);
        lift_offs, landings: ``{support: times}`` [s]; ramp: the unloading ramps.
        supports: ``{mode: supports}`` of the three modes (flat names, mode order).
    """

    stand: str
    swing: dict[str, str]
    lead: str
    phases: tuple[Phase, ...]
    motion: pin.SE3
    pelvis: dict[str, Track]
    soles: dict[str, Track]
    lift_offs: dict[str, tuple[float, ...]]
    landings: dict[str, tuple[float, ...]]
    supports: dict[str, tuple[str, ...]]
    ramp: UnloadingRamp = UnloadingRamp()

    @property
    def start(self) -> float:
        return self.phases[0].start

    @property
    def stop(self) -> float:
        return self.phases[-1].stop

    def phase_at(self, t: float) -> Phase | None:
        """The phase holding at t (``[start, stop)``; the last phase includes its stop);
        None outside the plan (the stand mode holds there)."""
        for p in self.phases:
            if p.start <= t < p.stop:
                return p
        if self.phases and t == self.phases[-1].stop:
            return self.phases[-1]
        return None

    def mode_at(self, t: float) -> str:
        """The mode holding at t [s]: a swing mode from lift-off (included) to landing
        (excluded), the stand mode elsewhere."""
        p = self.phase_at(t)
        return self.stand if p is None else p.mode

    def loads(self, t: float, mode: str | None = None) -> dict[str, float]:
        """σ per support of ``mode`` (default: the mode at t) at t (1 outside the ramps;
        0 at a lift-off and for 0.04 s after a landing)."""
        mode = self.mode_at(t) if mode is None else mode
        return {s: self.ramp.factor(t, self.lift_offs.get(s, ()), self.landings.get(s, ()))
                for s in self.supports[mode]}

    def anchors(self, t: float, mode: str | None = None) -> np.ndarray:
        """(k, 7) ``[x y z qw qx qy qz]`` anchors of the supports of ``mode`` (default: the
        mode at t) at t: where those soles are (they do not move while the mode holds
        them)."""
        from rbc.model.modes import anchors_array

        mode = self.mode_at(t) if mode is None else mode
        return anchors_array([self.soles[s].pose(t) for s in self.supports[mode]])

    def breakpoints(self) -> tuple[float, ...]:
        """Phase boundaries and the ramps' corners [s] (where σ(t) or a trajectory is only
        C⁰ or C²)."""
        out = {p.start for p in self.phases} | {self.stop}
        r = self.ramp
        for ts in self.lift_offs.values():
            out |= {x - r.fall for x in ts}
        for ts in self.landings.values():
            out |= {x + r.delay for x in ts} | {x + r.delay + r.rise for x in ts}
        return tuple(sorted(out))


def swing_modes(comp, stand: str) -> dict[str, str]:
    """``{side: mode}``: the composition's modes whose supports are ``stand``'s without
    every robot's ``sole_<side>`` (with the same links), for sides ``l`` and ``r``.

    Raises:
        ValueError: a side without such a mode (the message lists the supports it needs).
    """
    md = comp.modes[stand]
    out = {}
    for side in ("l", "r"):
        want = tuple(s for s in md.supports if not s.endswith(f"/sole_{side}"))
        hit = [m.name for m in comp.modes.values()
               if m.supports == want and set(m.links) == set(md.links)]
        if not hit:
            raise ValueError(
                f"composition {comp.name}: no mode lifts every robot's sole_{side}; add one "
                f"with supports [{', '.join(s.replace('/', '.', 1) for s in want)}] and the "
                f"links of '{stand}' to its modes")
        out[side] = hit[0]
    return out


def formation_motion(centres: np.ndarray, lateral: np.ndarray, distance: float) -> pin.SE3:
    """One step's rigid world motion of a formation (module docstring).

    Args:
        centres: (K, 3) the robots' pelvis positions [m] (world); lateral: (K, 3) their
            left directions (the pelvis frames' +y, world axes).
        distance: [m] the first robot's displacement, towards its left when > 0.

    Returns:
        A translation along the line when the robots stand on a line (or K = 1), else the
        rotation about the vertical axis through the circle fitted to their horizontal
        positions (least squares) by ``distance / radius``.

    Raises:
        ValueError: the motion is not sideways for every robot (the formation's tangent at
            a robot more than 0.57° (1 %) off its lateral axis: the robots do not face the
            formation's centre or a common direction).
    """
    c = np.asarray(centres, dtype=float)[:, :2]
    lat = np.asarray(lateral, dtype=float)[:, :2]
    K = c.shape[0]
    spread = c - c.mean(axis=0)
    sv = np.linalg.svd(spread, compute_uv=False) if K > 1 else np.zeros(2)
    if K == 1 or sv[-1] <= 1e-6 * max(sv[0], 1e-12):
        d = lat[0] / np.linalg.norm(lat[0])
        M = pin.SE3(np.eye(3), np.array([*(distance * d), 0.0]))
        tangents = np.tile(d, (K, 1))
    else:
        # algebraic circle fit: x² + y² + D x + E y + F = 0
        A = np.column_stack([c, np.ones(K)])
        D, E, _ = np.linalg.lstsq(A, -(c ** 2).sum(axis=1), rcond=None)[0]
        o = -0.5 * np.array([D, E])
        R = float(np.linalg.norm(c[0] - o))
        r0 = c[0] - o
        ccw = np.array([-r0[1], r0[0]]) / R           # counterclockwise tangent at robot 1
        th = distance / R * (1.0 if ccw @ lat[0] > 0 else -1.0)
        Rz = sp.rotation_from_rpy(np.array([0.0, 0.0, th]))
        o3 = np.array([*o, 0.0])
        M = pin.SE3(Rz, o3 - Rz @ o3)
        r = c - o
        tangents = np.column_stack([-r[:, 1], r[:, 0]]) / np.linalg.norm(r, axis=1)[:, None]
    for k in range(K):
        fwd = np.array([lat[k][1], -lat[k][0]]) / np.linalg.norm(lat[k])
        if abs(tangents[k] @ fwd) > 0.01:
            raise ValueError(f"robot {k + 1}'s step is not sideways (the formation's "
                             f"tangent is {np.degrees(np.arcsin(abs(tangents[k] @ fwd))):.1f}"
                             "° off its lateral axis): the formation's robots do not all "
                             "face its centre or one way")
    return M


def step_plan(comp, kin, q0: np.ndarray, *, stand: str = "stand", steps: int = 1,
              start: float = 0.0, sizes: StepSizes = StepSizes(),
              timing: StepTiming = StepTiming(), ramp: UnloadingRamp = UnloadingRamp()
              ) -> StepPlan:
    """The plan of ``steps`` sideways steps of the formation ``comp`` from the closed stance
    q0 (nq,) of the stand mode's model ``kin``, the first starting at ``start`` [s]
    (module docstring).

    Raises:
        ValueError: the swing modes are missing (:func:`swing_modes`), the ramps do not fit
            in the phases, the step is not sideways (:func:`formation_motion`), or the
            robots would lead with different sides.
    """
    from rbc.model.modes import support_poses

    if min(timing.shift, timing.transfer) < ramp.fall or \
            min(timing.transfer, timing.settle) < ramp.delay + ramp.rise:
        raise ValueError(f"step phases {timing} too short for the ramps {ramp}")
    swing = swing_modes(comp, stand)
    md = comp.modes[stand]
    members = [m.name for m in comp.members]
    P0 = {m: _free_pose(kin, q0, f"{m}/pelvis.root") for m in members}
    S0 = dict(zip(md.supports, support_poses(kin, q0, md.supports), strict=True))
    M = formation_motion(np.array([P0[m].translation for m in members]),
                         np.array([P0[m].rotation[:, 1] for m in members]), sizes.distance)
    leads = set()
    for m in members:
        dp = M.act(P0[m].translation) - P0[m].translation
        leads.add("l" if P0[m].rotation[:, 1] @ dp > 0 else "r")
    if len(leads) != 1:
        raise ValueError("the robots would lead with different sides: "
                         + ", ".join(sorted(leads)))
    lead = leads.pop()
    trail = "r" if lead == "l" else "l"

    def side(m, s):
        return f"{m}/sole_{s}"

    def over(m, s, Mj):
        """The pelvis of m moved by Mj, shifted sideways over its sole s."""
        y = (P0[m].inverse() * S0[side(m, s)]).translation[1]
        return Mj * P0[m] * pin.SE3(np.eye(3), np.array([0.0, sizes.over * y, sizes.rise]))

    phases, pel = [], {m: [] for m in members}
    sol = {s: [] for s in md.supports}
    offs = {s: [] for s in md.supports}
    lands = {s: [] for s in md.supports}
    t = float(start)
    Mj = pin.SE3.Identity()
    for _ in range(steps):
        Mn = M * Mj
        t1 = t + timing.shift
        t2 = t1 + timing.swing
        t3 = t2 + timing.transfer
        t4 = t3 + timing.swing
        t5 = t4 + timing.settle
        phases += [Phase(t, t1, stand, "shift"), Phase(t1, t2, swing[lead], "swing", lead),
                   Phase(t2, t3, stand, "transfer"), Phase(t3, t4, swing[trail], "swing",
                                                           trail),
                   Phase(t4, t5, stand, "settle")]
        for m in members:
            a, b, c = over(m, trail, Mj), over(m, lead, Mn), Mn * P0[m]
            pel[m] += [Segment(t, t1, Mj * P0[m], a), Segment(t2, t3, a, b),
                       Segment(t4, t5, b, c)]
            for s, (ta, tb) in ((lead, (t1, t2)), (trail, (t3, t4))):
                n = side(m, s)
                sol[n].append(Segment(ta, tb, Mj * S0[n], Mn * S0[n], sizes.lift, sizes.tilt))
                offs[n].append(ta)
                lands[n].append(tb)
        Mj, t = Mn, t5
    modes = {stand: md.supports, **{swing[s]: comp.modes[swing[s]].supports
                                    for s in ("l", "r")}}
    return StepPlan(stand, swing, lead, tuple(phases), M,
                    {m: Track(P0[m], tuple(v)) for m, v in pel.items()},
                    {s: Track(S0[s], tuple(v)) for s, v in sol.items()},
                    {s: tuple(v) for s, v in offs.items()},
                    {s: tuple(v) for s, v in lands.items()}, modes, ramp)


def _free_pose(kin, q: np.ndarray, joint: str) -> pin.SE3:
    qs = np.asarray(q)[kin.q_slice(kin.edge(joint))]
    return pin.SE3(sp.rotation_from_quat(qs[3:7]), np.array(qs[:3], dtype=float))


def _free_q(T: pin.SE3) -> np.ndarray:
    return np.concatenate([T.translation, sp.quat_from_rotation(T.rotation)])


@dataclass(eq=False)
class StepReference:
    """The stepping reference of a :class:`StepPlan` on the stand mode's manifold with
    moving anchors (module docstring).

    Attributes:
        kin: the stand mode's model; part: a partition of it with every pelvis root
            independent (the dance partition, :func:`rbc.control.dances.dance_partition`);
        q0: (nq,) the closed stance; plan: the steps;
        worst_residual: the largest closure residual of any sample so far [rad, m].
    """

    kin: object
    part: object
    q0: np.ndarray
    plan: StepPlan
    worst_residual: float = 0.0
    _last: tuple[float, np.ndarray] | None = field(default=None, repr=False)
    _cache: ReferenceSample | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        kin, ind = self.kin, np.asarray(self.part.independent)
        self._roots = {}
        for m in self.plan.pelvis:
            sl = kin.v_slice(kin.edge(f"{m}/pelvis.root"))
            cols = np.searchsorted(ind, np.arange(sl.start, sl.stop))
            if not np.array_equal(ind[np.minimum(cols, ind.size - 1)],
                                  np.arange(sl.start, sl.stop)):
                raise ValueError(f"partition '{self.part.name}': {m}/pelvis.root is not "
                                 "independent")
            self._roots[m] = (kin.q_slice(kin.edge(f"{m}/pelvis.root")), cols)
        self._rows = {s: 6 * kin.chord_edges.index(kin.edge(f"{s}.support"))
                      for s in self.plan.soles}
        from rbc.sim.schedule import module_plan

        self._plan = module_plan(kin, self.part)

    def breakpoints(self) -> tuple[float, ...]:
        """The plan's breakpoints (:meth:`StepPlan.breakpoints`): knots for an
        interpolated copy (:func:`rbc.control.knots.knot_times`)."""
        return self.plan.breakpoints()

    def model_at(self, t: float):
        """The stand mode's model with every sole's anchor where the sole is at t."""
        A = list(self.kin.A)
        for s, tr in self.plan.soles.items():
            A[self.kin.edge(f"{s}.support")] = tr.pose(t)
        return replace(self.kin, A=tuple(A))

    def close(self, t: float, q: np.ndarray) -> np.ndarray:
        """The closed configuration at t from the guess q (module docstring).

        Raises:
            ReferenceFailure: Newton does not converge (targets out of reach).
        """
        from rbc.sim.schedule import close_modules

        q = np.array(q, dtype=float)
        for m, (qs, _) in self._roots.items():
            q[qs] = _free_q(self.plan.pelvis[m].pose(t))
        q, ok = close_modules(self.model_at(t), q, self._plan)
        if not ok:
            raise ReferenceFailure(f"the steps' targets at t = {t:.4f} s are out of reach "
                                   "(the legs cannot close on them)")
        return q

    def __call__(self, t: float) -> ReferenceSample:
        """The sample at t [s] (u, udot: the partition's independent speeds and
        accelerations).

        Raises:
            ReferenceFailure: the targets are out of reach.
        """
        from rbc.model.kinematics import residual
        from rbc.model.partition import lift
        from rbc.sim.schedule import FD_STEP, anchored_state, chart_rates

        t = float(t)
        if self._cache is not None and self._cache.t == t:
            return self._cache
        t_last, q = self._last if self._last is not None else (self.plan.start, self.q0)
        if self._last is None and t != t_last:
            q = self.close(t_last, q)
        n = max(1, int(np.ceil(abs(t - t_last) / MAX_STEP)))
        for tt in np.linspace(t_last, t, n + 1)[1:]:
            q = self.close(float(tt), q)
        self._last = (t, q)
        kin_t = self.model_at(t)
        part = self.part
        L = lift(kin_t, part, q)
        ind = part.independent
        u, ud = np.zeros(ind.size), np.zeros(ind.size)
        for m, (_, cols) in self._roots.items():
            u[cols], ud[cols] = self.plan.pelvis[m].body_rates(t)
        zeta, zeta_dot = np.zeros(kin_t.n_rows), np.zeros(kin_t.n_rows)
        for s, r in self._rows.items():
            zeta[r: r + 6], zeta_dot[r: r + 6] = chart_rates(self.plan.soles[s].pose, t,
                                                             FD_STEP, False)
        v, a = anchored_state(kin_t, part, L, u, ud, zeta, zeta_dot)
        res = float(np.abs(residual(kin_t, q)).max(initial=0.0))
        self.worst_residual = max(self.worst_residual, res)
        self._cache = ReferenceSample(t, q, v, a, u, ud, res)
        return self._cache


def step_reference(comp, *, stand: str = "stand", steps: int = 1, start: float = 0.0,
                   sizes: StepSizes = StepSizes(), timing: StepTiming = StepTiming()
                   ) -> StepReference:
    """The sideways steps of the formation ``comp`` from its stand mode's reference stance
    (:func:`step_plan`, :class:`StepReference` on the dance partition).

    Raises:
        ValueError: as :func:`step_plan`, or the dance joints not independent.
    """
    from rbc.control.dances import dance_joints, dance_partition

    kin = comp.model(comp.modes[stand])
    q0 = np.array(comp.modes[stand].partition.q_ref, dtype=float)
    part = dance_partition(kin, q0, dance_joints(comp, stand))
    plan = step_plan(comp, kin, q0, stand=stand, steps=steps, start=start, sizes=sizes,
                     timing=timing)
    return StepReference(kin, part, q0, plan)


#: Model sets (composed and per-robot, one mode at one set of anchors) a
#: :class:`StepAllocation` keeps.
MODEL_CACHE = 1
#: The allocation weights of stepping (issue #20 item 2: η = 2e-4).
STEPPING_WEIGHTS = AllocationWeights(eta=2e-4)


@dataclass(eq=False)
class StepAllocation:
    """Inverse-dynamics allocation at samples of a :class:`StepReference` (issue #20's
    acceptance, docs/allocation.md "Allocation at sampled reference states"): at t the
    mode of the plan, its member model at the anchors of t, the ramps' σ and η = 2e-4; the
    composed model's allocation and each robot's own (:mod:`rbc.control.per_robot`, the
    links not modelled). Models are built once per (mode, anchors) and the last
    :data:`MODEL_CACHE` of them kept (the ring's composed and five robots' models and
    scratch data take ~2 GB per set; samples in time order reuse the current phase's).

    Attributes:
        comp: the composition; ref: the stepping reference; per_robot: also allocate on
        the robots' own models; weights: the QP's weights.
    """

    comp: object
    ref: StepReference
    per_robot: bool = True
    weights: AllocationWeights = STEPPING_WEIGHTS
    _models: dict = field(default_factory=dict, repr=False)

    def models(self, mode: str, anchors: np.ndarray):
        """``(member model, data, coordinates, robots)`` of ``mode`` at ``anchors``
        (robots: ``(RobotModel, IndependentCoordinates)`` per member, or () without
        per_robot)."""
        from rbc.compose.dynamics import MemberModel
        from rbc.control.per_robot import robot_models
        from rbc.control.tracking import IndependentCoordinates
        from rbc.model.dynamics import DynamicsData

        key = (mode, np.round(np.asarray(anchors, dtype=float), 12).tobytes())
        if key not in self._models:
            while len(self._models) >= MODEL_CACHE:
                self._models.pop(next(iter(self._models)))
            mm = MemberModel.build(self.comp, mode, anchors)
            coords = IndependentCoordinates.of(mm.kin, self.comp.modes[mode].partition)
            robots = tuple((rb, IndependentCoordinates.of(rb.mm.kin, rb.part))
                           for rb in robot_models(self.comp, mode, anchors)
                           ) if self.per_robot else ()
            self._models[key] = (mm, DynamicsData.of(mm.dm), coords, robots)
        return self._models[key]

    def __call__(self, t: float) -> dict:
        """``{"t", "mode", "residual", "slack", "cone_violation", "per_robot_slack",
        "loads"}`` at t [s]: ‖z‖∞ of the composed allocation (∞ when no efforts keep the
        wrenches in their cones), the largest of the robots' own (None without
        per_robot), the sample's closure residual and the ramps' σ."""
        from rbc.control.allocation import AllocationError
        from rbc.control.inverse import sample_allocation

        r = self.ref(t)
        plan = self.ref.plan
        mode = plan.mode_at(t)
        loads = plan.loads(t)
        mm, data, coords, robots = self.models(mode, plan.anchors(t))
        try:
            al = sample_allocation(mm, data, coords, r.q, r.v, r.a, loads=loads,
                                   weights=self.weights)
            slack, viol = al.slack, al.cone_violation
        except AllocationError:
            slack, viol = np.inf, np.inf
        zr = 0.0 if robots else None
        for rb, c in robots:
            qk, vk = rb.state(r.q, r.v)
            own = {k: v for k, v in loads.items() if k.startswith(rb.name + "/")}
            try:
                zr = max(zr, sample_allocation(rb.mm, rb.data, c, qk, vk,
                                               np.asarray(r.a)[rb.v_index], loads=own,
                                               weights=self.weights).slack)
            except AllocationError:
                zr = np.inf
        return {"t": float(t), "mode": mode, "residual": r.residual, "slack": float(slack),
                "cone_violation": float(viol),
                "per_robot_slack": None if zr is None else float(zr), "loads": loads}


__all__: Sequence[str] = ("MAX_STEP", "STEPPING_WEIGHTS", "TRAVEL_STEPS", "Phase", "Segment",
                          "StepAllocation", "StepPlan", "StepReference", "StepSizes",
                          "StepTiming", "Track", "bump", "formation_motion", "step_plan",
                          "step_reference", "swing_modes")

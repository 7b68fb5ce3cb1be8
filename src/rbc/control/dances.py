"""Dance references for composed humanoid formations on a mode's closure manifold (issue #20
item 5, docs/allocation.md "Dances").

**Choreography.** A dance is a tuple of :class:`Move`: one joint of one member moved by a
fixed amplitude vector (a rad or m per coordinate; a floating root's six entries a
body-frame twist ``[ω; v]``) times a scalar time profile ``s(t)`` with its two derivatives
(:class:`Profile`, C² everywhere, zero outside its window). A floating root moved by one
profile at a time moves along a fixed twist direction, ``T(t) = T₀ exp(a s(t))``, so its body
twist is exactly ``a ṡ`` and its rate ``a s̈``; moves of one floating root therefore must not
overlap in time (checked). :func:`formation_dance` builds the five elements of the issue over
30 s for a formation: the knee-bounce canon travelling around the formation (0.75 s
period), the wave of the linked hands (each link point rising 0.30 m over 1.25 s, one link
after the other), the common lean (the whole formation towards world +x), the sideways sway
with pelvis and waist twist, and the bow.

**The dance partition.** The moved joints (per member the pelvis, the waist and both
shoulders' pitch) are made independent coordinates of a partition of the mode model
(:func:`dance_partition`: the rank analysis with them preferred, the rest of the split
chosen for conditioning) — so every sample moves them exactly, the other independent
coordinates of the dance partition are held, and the legs and arms follow on the
manifold. Each sample is one predictor–corrector step (:class:`rbc.model.closure.
ClosureState`) from the previous one; speeds and accelerations of all coordinates come
from that partition's lift, ``v = E' u'``, ``a = E' u̇' + Ė' u'`` (``u' = ḋ``, ``u̇' = d̈``).
They are the full mode-model vectors, so the tracking law reads them in whatever partition
it runs (the mode's own).

**The wave** pitches both shoulders of a link at the rates that raise each palm alike
(:func:`wave_directions`); its amplitude is calibrated on the reference itself to the
0.30 m rise, or the largest rise of :data:`WAVE_FALLBACK` that keeps every joint inside its
limits (:func:`dance_reference`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from rbc.control.reference import ReferenceFailure, ReferenceSample
from rbc.model.closure import ClosureState
from rbc.model.kinematics import residual
from rbc.model.partition import curvature, lift, partition_at

#: The dance's length [s] (issue #20).
DURATION = 30.0
#: Knee-bounce period [s] and the wave's rise [m] and duration [s] (issue #20).
BOUNCE_PERIOD, WAVE_RISE, WAVE_TIME = 0.75, 0.30, 1.25


# ---------------------------------------------------------------------------- profiles

def smoothstep(x: float) -> tuple[float, float, float]:
    """The quintic ``S(x) = 10x³ − 15x⁴ + 6x⁵`` clamped to [0, 1] and its two derivatives
    (C²: S', S'' vanish at both ends)."""
    if x <= 0.0:
        return 0.0, 0.0, 0.0
    if x >= 1.0:
        return 1.0, 0.0, 0.0
    return (x ** 3 * (10 - 15 * x + 6 * x * x), 30 * x * x * (1 - x) ** 2,
            60 * x * (1 - x) * (1 - 2 * x))


@dataclass(frozen=True)
class Profile:
    """A scalar time profile ``s(t) = w(t)·c(t)``: the C² window w rising over ``ramp``
    seconds from ``start`` and falling over the last ``ramp`` seconds before ``stop`` (zero
    outside [start, stop]), times the carrier c.

    Attributes:
        start, stop, ramp: the window [s] (ramp ≤ (stop − start)/2).
        kind: carrier — ``one`` (c = 1), ``sin2`` (c = sin²(π(t − phase)/period), ≥ 0, the
            knee bounce), ``sin`` (c = sin(2π(t − phase)/period), the sway).
        period, phase: the carrier's [s].
    """

    start: float
    stop: float
    ramp: float
    kind: str = "one"
    period: float = 1.0
    phase: float = 0.0

    def __post_init__(self) -> None:
        if self.kind not in ("one", "sin2", "sin"):
            raise ValueError(f"profile kind '{self.kind}'; valid: one, sin2, sin")
        if not 0.0 < self.ramp <= 0.5 * (self.stop - self.start):
            raise ValueError(f"profile ramp {self.ramp} s does not fit in "
                             f"[{self.start}, {self.stop}] s")

    def window(self, t: float) -> tuple[float, float, float]:
        a, da, dda = smoothstep((t - self.start) / self.ramp)
        b, db, ddb = smoothstep((self.stop - t) / self.ramp)
        r = self.ramp
        return (a * b, (da * b - a * db) / r, (dda * b - 2 * da * db + a * ddb) / r ** 2)

    def carrier(self, t: float) -> tuple[float, float, float]:
        if self.kind == "one":
            return 1.0, 0.0, 0.0
        if self.kind == "sin2":  # sin²(x) = (1 − cos 2x)/2, x = π(t − phase)/period
            w = 2.0 * np.pi / self.period
            c = np.cos(w * (t - self.phase))
            return 0.5 * (1.0 - c), 0.5 * w * np.sin(w * (t - self.phase)), 0.5 * w * w * c
        w = 2.0 * np.pi / self.period
        x = w * (t - self.phase)
        return np.sin(x), w * np.cos(x), -w * w * np.sin(x)

    def __call__(self, t: float) -> tuple[float, float, float]:
        """``(s, ṡ, s̈)`` at t [s] (units 1, 1/s, 1/s²)."""
        if t <= self.start or t >= self.stop:
            return 0.0, 0.0, 0.0
        w, dw, ddw = self.window(t)
        c, dc, ddc = self.carrier(t)
        return w * c, dw * c + w * dc, ddw * c + 2 * dw * dc + w * ddc


@dataclass(frozen=True)
class Move:
    """One element of a choreography: joint ``joint`` of the mode model (``MEMBER/name``)
    moved by ``amplitude`` (its nv entries) times ``profile``; ``element`` names the dance
    element it belongs to (bounce, wave, lean, sway, bow)."""

    element: str
    joint: str
    amplitude: tuple[float, ...]
    profile: Profile


# -------------------------------------------------------------------- the dance partition

def _palm_links(comp, mode: str) -> set[tuple[str, str]]:
    """``(member, body)`` of every palm an active link of the mode holds."""
    out = set()
    for name in comp.modes[mode].links:
        j = comp.links[name]
        out |= {tuple(j.parent.split("/", 1)), tuple(j.child.split("/", 1))}
    return out


def dance_joints(comp, mode: str) -> tuple[str, ...]:
    """The joints a dance moves (module docstring): per member ``pelvis.root``, ``waist``
    and both shoulders' pitch."""
    return tuple(f"{m.name}/{n}" for m in comp.members
                 for n in ("pelvis.root", "waist", "shoulder_pitch_l", "shoulder_pitch_r"))


def dance_partition(kin, q: np.ndarray, joints: Sequence[str]):
    """The dance partition of the mode model ``kin`` at the closed q (nq,): the moved
    ``joints`` independent, the rest of the independent set and the dependent set chosen
    by the rank analysis for conditioning (pivoted QR, :func:`rbc.model.partition.
    partition_at` with the moved joints preferred).

    Raises:
        ValueError: a moved joint came out dependent (the joints are not independent on the
            mode's manifold).
    """
    from rbc.model.partition import joint_columns

    cols = joint_columns(kin, joints)
    part = partition_at(kin, q, name="dance", preferred=cols)
    dep = cols & set(part.dependent.tolist())
    if dep:
        raise ValueError("the dance's joints are not independent on the mode's manifold: "
                         + ", ".join(sorted({kin.edge_names[int(kin.v_edge[j])]
                                             for j in dep})))
    return part


# -------------------------------------------------------------------------- the reference

@dataclass(eq=False)
class DanceReference:
    """A choreography sampled on the mode's closure manifold (module docstring).

    Attributes:
        kin: the mode model; part: the dance partition (:func:`dance_partition`);
        q0: (nq,) the closed start stance; moves: the choreography;
        worst_residual: the largest closure residual ‖ρ(q)‖∞ of any sample so far [rad, m].
    """

    kin: object
    part: object
    q0: np.ndarray
    moves: tuple[Move, ...]
    worst_residual: float = 0.0
    wave_rise: float | None = None
    _cols: list[np.ndarray] = field(default_factory=list, repr=False)
    _amp: list[np.ndarray] = field(default_factory=list, repr=False)
    _last: tuple[float, np.ndarray, np.ndarray] | None = field(default=None, repr=False)
    _cache: ReferenceSample | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        kin, ind = self.kin, np.asarray(self.part.independent)
        pos = {int(j): n for n, j in enumerate(ind)}
        free: dict[str, list[Profile]] = {}
        for mv in self.moves:
            e = kin.edge(mv.joint)
            sl = kin.v_slice(e)
            if len(mv.amplitude) != sl.stop - sl.start:
                raise ValueError(f"move of '{mv.joint}': {len(mv.amplitude)} amplitude "
                                 f"entries for {sl.stop - sl.start} speeds")
            missing = [j for j in range(sl.start, sl.stop) if j not in pos]
            if missing:
                raise ValueError(f"move of '{mv.joint}': not independent in partition "
                                 f"'{self.part.name}'")
            self._cols.append(np.array([pos[j] for j in range(sl.start, sl.stop)]))
            self._amp.append(np.asarray(mv.amplitude, dtype=float))
            if kin.edge_types[e] == "free":
                for p in free.setdefault(mv.joint, []):
                    if p.start < mv.profile.stop and mv.profile.start < p.stop:
                        raise ValueError(f"moves of the floating root '{mv.joint}' overlap "
                                         "in time (a free joint's twist direction must stay "
                                         "fixed while it moves)")
                free[mv.joint].append(mv.profile)

    def breakpoints(self) -> tuple[float, ...]:
        """The times [s] where a move's profile is only C² (its window's start, the ends
        of its ramps and its stop), sorted: knots for an interpolated copy
        (:func:`rbc.control.knots.knot_times`)."""
        out = set()
        for mv in self.moves:
            p = mv.profile
            out |= {p.start, p.start + p.ramp, p.stop - p.ramp, p.stop}
        return tuple(sorted(out))

    def restart_at(self, t: float, q: np.ndarray) -> None:
        """Make the closed q (nq,) the last sample, at time t [s]: the next sample steps
        from it (e.g. from a stored knot)."""
        self._last = (float(t), np.array(q, dtype=float), self.offsets(float(t))[0])
        self._cache = None

    def offsets(self, t: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(d, ḋ, d̈)`` (n_u',) of the dance partition's independent coordinates at t."""
        n = self.part.independent.size
        d, dd, ddd = np.zeros(n), np.zeros(n), np.zeros(n)
        for mv, cols, a in zip(self.moves, self._cols, self._amp, strict=True):
            s, sd, sdd = mv.profile(t)
            if s or sd or sdd:
                d[cols] += a * s
                dd[cols] += a * sd
                ddd[cols] += a * sdd
        return d, dd, ddd

    def __call__(self, t: float) -> ReferenceSample:
        """The sample at t [s] (u, udot: the dance partition's ḋ, d̈).

        Raises:
            ClosureError: the corrector does not converge; ReferenceFailure: the dance
                partition would have to change (a singular pose).
        """
        if self._cache is not None and self._cache.t == t:
            return self._cache
        kin, part = self.kin, self.part
        d, dd, ddd = self.offsets(t)
        if self._last is not None and t >= self._last[0]:
            _, q_last, d_last = self._last
        else:
            q_last, d_last = self.q0, np.zeros_like(d)
        step = d - d_last
        st = ClosureState(kin, part, np.array(q_last, dtype=float))
        q = st.step(step, 1.0) if np.any(step) else np.array(q_last, dtype=float)
        if st.partition is not part:
            raise ReferenceFailure(f"the dance left partition '{part.name}' at t = {t:.4f} s: "
                                   f"{'; '.join(st.events)}")
        self._last = (float(t), q, d)
        L = lift(kin, part, q)
        v, edu = curvature(kin, part, q, dd, L)
        res = float(np.abs(residual(kin, q)).max(initial=0.0))
        self.worst_residual = max(self.worst_residual, res)
        self._cache = ReferenceSample(float(t), q, v, L.E @ ddd + edu, dd, ddd, res)
        return self._cache


# ----------------------------------------------------------------------------- the dance

@dataclass(frozen=True)
class DanceAmplitudes:
    """Sizes of the dance elements.

    Attributes:
        bounce: pelvis drop of the knee bounce [m]; wave: the wave's first-order rise [m]
        (:func:`wave_directions`; :func:`dance_reference` calibrates it so that the
        measured rise is 0.30 m);
        lean: (translation [m], tilt [rad]) of the common lean towards world +x;
        sway: (pelvis sideways [m], pelvis yaw [rad], waist twist [rad]);
        bow: (pelvis pitch [rad], pelvis backwards [m], pelvis down [m]).
    """

    bounce: float = 0.008
    wave: float = 0.30
    lean: tuple[float, float] = (0.03, 0.02)
    sway: tuple[float, float, float] = (0.03, 0.08, 0.15)
    bow: tuple[float, float, float] = (0.22, 0.03, 0.02)


#: The elements' windows in the 30 s dance [s].
WINDOWS = {"bounce": (0.0, 7.5), "wave": (7.5, 15.0), "lean": (15.0, 20.0),
           "sway": (20.0, 25.0), "bow": (25.0, 30.0)}


def wave_order(comp, mode: str) -> list[tuple[str, tuple[str, ...]]]:
    """``(link name, the shoulder joints that raise it)`` in the order the wave travels
    (the mode's link order): for a link between two palms the pitch of both shoulders
    (independent in the dance partition), in the order of the link's two palms."""
    out = []
    for name in comp.modes[mode].links:
        j = comp.links[name]
        ends = [b.split("/", 1) for b in (j.parent, j.child)]
        if all(body in ("forearm_l", "forearm_r") for _, body in ends):
            out.append((name, tuple(f"{m}/shoulder_pitch_{body[-1]}" for m, body in ends)))
    return out


#: Step [rad] of the central differences of a palm's height (smooth in the shoulder
#: angles: 1e-4 rad leaves a truncation of ~1e-9 relative, far below what a direction needs).
WAVE_FD_STEP = 1e-4


def wave_directions(comp, mode: str, kin, q0: np.ndarray) -> dict[str, dict[str, float]]:
    """Per link of :func:`wave_order` the rates of its two shoulders' pitch that raise each
    palm by one metre, to first order at the stance q0: per arm ``1 / g`` with g the
    derivative of its palm's world height in its shoulder pitch (the arm alone, a rigid
    chain: central differences of the tree's forward kinematics) [rad/m]. Both palms rise
    alike; the left arm's dependent shoulder roll, yaw and elbow take the difference of the
    two arms' forward directions — ``{link: {joint: coefficient}}``."""
    out = {}
    for link, joints in wave_order(comp, mode):
        coef = {}
        for jn, palm in zip(joints, _link_palms(comp, link), strict=True):
            sl = kin.q_slice(kin.edge(jn))
            qp, qm = np.array(q0, float), np.array(q0, float)
            qp[sl] += WAVE_FD_STEP
            qm[sl] -= WAVE_FD_STEP
            coef[jn] = 2 * WAVE_FD_STEP / (palm_height(kin, qp, palm)
                                           - palm_height(kin, qm, palm))
        out[link] = coef
    return out


def _link_palms(comp, link: str) -> tuple[str, str]:
    j = comp.links[link]
    return j.parent, j.child


def formation_dance(comp, mode: str, q0: np.ndarray, kin,
                    amp: DanceAmplitudes = DanceAmplitudes(), duration: float = DURATION,
                    windows: dict[str, tuple[float, float]] | None = None,
                    wave: dict[str, dict[str, float]] | None = None) -> tuple[Move, ...]:
    """The five elements of issue #20 for the formation ``comp`` (module docstring), their
    windows scaled to ``duration`` [s].

    Args:
        comp: the composition; mode: its mode; q0: (nq,) the closed stance of the mode
        model ``kin`` (the pelvis orientations at the stance define world +x in each body
        frame for the common lean); amp: the sizes; windows: the elements' time windows
        (default :data:`WINDOWS`); wave: the wave's directions per link
        (:func:`wave_directions`; computed at q0 on the dance partition when None).
    """
    if wave is None:
        wave = wave_directions(comp, mode, kin, q0)
    scale = duration / DURATION
    win = {k: (a * scale, b * scale) for k, (a, b) in (windows or WINDOWS).items()}
    members = [m.name for m in comp.members]
    K = len(members)
    moves: list[Move] = []
    # knee-bounce canon: robot k's pelvis drops by amp.bounce with period 0.75 s, phase k T/K
    a, b = win["bounce"]
    ramp = min(2 * BOUNCE_PERIOD, 0.25 * (b - a))
    for k, m in enumerate(members):
        moves.append(Move("bounce", f"{m}/pelvis.root", (0, 0, 0, 0, 0, -amp.bounce),
                          Profile(a, b, ramp, "sin2", BOUNCE_PERIOD,
                                  a + k * BOUNCE_PERIOD / K)))
    # wave: each link point rises and falls over WAVE_TIME, the next starting half-way
    a, b = win["wave"]
    # the next link starts half-way through the last one's rise, and no link starts again
    # before its own rise is over
    gap = max(0.5, 1.0 / max(len(wave), 1)) * WAVE_TIME * scale
    t = a + 0.25 * scale
    while wave and t + WAVE_TIME * scale <= b:
        for coef in wave.values():
            if t + WAVE_TIME * scale > b:
                break
            prof = Profile(t, t + WAVE_TIME * scale, 0.5 * WAVE_TIME * scale)
            moves += [Move("wave", jn, (amp.wave * c,), prof) for jn, c in coef.items()]
            t += gap
    # common lean towards world +x: the same world twist in every pelvis frame
    a, b = win["lean"]
    for m in members:
        R = _pelvis_rotation(kin, q0, m)
        w = R.T @ np.array([0.0, amp.lean[1], 0.0])     # tilt about world y: top towards +x
        v = R.T @ np.array([amp.lean[0], 0.0, 0.0])
        moves.append(Move("lean", f"{m}/pelvis.root", (*w, *v),
                          Profile(a, b, 0.5 * (b - a))))
    # sway: pelvis sideways with its yaw, the waist twisting against it, two periods
    a, b = win["sway"]
    P = 0.5 * (b - a)
    for m in members:
        prof = Profile(a, b, 0.25 * (b - a), "sin", P, a)
        moves.append(Move("sway", f"{m}/pelvis.root", (0, 0, amp.sway[1], 0, amp.sway[0], 0),
                          prof))
        moves.append(Move("sway", f"{m}/waist", (-amp.sway[2],), prof))
    # bow: pelvis pitched forward (about its y axis), backwards and down
    a, b = win["bow"]
    for m in members:
        moves.append(Move("bow", f"{m}/pelvis.root", (0, amp.bow[0], 0, -amp.bow[1], 0,
                                                      -amp.bow[2]),
                          Profile(a + 0.25 * scale, b - 0.25 * scale,
                                  0.5 * (b - a - 0.5 * scale))))
    return tuple(moves)


def _pelvis_rotation(kin, q: np.ndarray, member: str) -> np.ndarray:
    """(3, 3) ``R_world_pelvis`` of a member at q (its free root's quaternion)."""
    from rbc.ir import spatial as sp

    qs = q[kin.q_slice(kin.edge(f"{member}/pelvis.root"))]
    return sp.rotation_from_quat(qs[3:7])


def palm_position(kin, q: np.ndarray, body_name: str) -> np.ndarray:
    """World position (3,) [m] of the ``palm`` frame of body ``body_name``
    (``MEMBER/forearm_l``) at q."""
    from rbc.ir import spatial as sp
    from rbc.model.kinematics import body_poses

    rec = kin.record
    body = rec.body_index()[body_name]
    palm = sp.se3_from_pose(rec.bodies[body].frame("palm"))
    return np.array((body_poses(kin, q)[body] * palm).translation)


def palm_height(kin, q: np.ndarray, body_name: str) -> float:
    """World z [m] of :func:`palm_position`."""
    return float(palm_position(kin, q, body_name)[2])


def wave_rise(kin, part, q0: np.ndarray, moves: Sequence[Move], palm: str,
              samples: int = 9) -> tuple[float, tuple[str, ...]]:
    """The rise [m] of the palm ``palm`` (a body name) at the peak of the first wave move of
    ``moves``, on a reference of those moves alone stepped in ``samples`` steps up to the
    peak, and the joints that left their limits on the way
    (:func:`rbc.model.closure.within_limits`)."""
    from rbc.model.closure import within_limits

    wave = [m for m in moves if m.element == "wave"]
    if not wave:
        return 0.0, ()
    p = wave[0].profile
    ref = DanceReference(kin, part, q0, tuple(m for m in wave if m.profile == p))
    out: dict[str, None] = {}
    for t in np.linspace(p.start, 0.5 * (p.start + p.stop), samples):
        r = ref(float(t))
        out.update(dict.fromkeys(within_limits(kin, r.q)))
    return palm_height(kin, r.q, palm) - palm_height(kin, q0, palm), tuple(out)


def _wave_leaves_limits(kin, part, q0: np.ndarray, moves: Sequence[Move],
                        step: float = 0.125) -> bool:
    """Whether the wave element of ``moves`` takes a joint out of its limits (sampled every
    ``step`` seconds on a reference of the wave alone)."""
    from rbc.model.closure import within_limits

    wave = tuple(m for m in moves if m.element == "wave")
    if not wave:
        return False
    ref = DanceReference(kin, part, q0, wave)
    a = min(m.profile.start for m in wave)
    b = max(m.profile.stop for m in wave)
    return any(within_limits(kin, ref(float(t)).q) for t in np.arange(a, b + step, step))


#: The wave rises tried, largest first, when the issue's 0.30 m takes a joint out of its
#: limits (the ring's elbows straighten: :func:`dance_reference`) [m].
WAVE_FALLBACK = (0.30, 0.25, 0.20, 0.15, 0.10, 0.05)


def dance_reference(comp, mode: str, *, amp: DanceAmplitudes = DanceAmplitudes(),
                    duration: float = DURATION, calibrate: bool = True,
                    rise: float = WAVE_RISE) -> DanceReference:
    """The issue's dance on the formation ``comp`` (module docstring) from the mode's
    reference stance: the dance partition, the wave directions, the wave amplitude
    calibrated (two secant steps) so that the first link point rises ``rise`` [m] — or, if
    that takes a joint out of its limits, the largest rise of :data:`WAVE_FALLBACK` below it
    that does not (``DanceReference.wave_rise`` holds the rise reached) — and the reference.

    Raises:
        ValueError: the dance joints are not independent on the mode's manifold.
    """
    from dataclasses import replace

    kin = comp.model(comp.modes[mode])
    q0 = np.array(comp.modes[mode].partition.q_ref, dtype=float)
    part = dance_partition(kin, q0, dance_joints(comp, mode))
    wave = wave_directions(comp, mode, kin, q0)
    order = wave_order(comp, mode)
    reached = None
    if calibrate and order:
        palm = comp.links[order[0][0]].child

        def measured(a: float) -> tuple[float, tuple[str, ...]]:
            mv = formation_dance(comp, mode, q0, kin, replace(amp, wave=a), duration,
                                 wave=wave)
            return wave_rise(kin, part, q0, mv, palm)

        for target in [rise] + [r for r in WAVE_FALLBACK if r < rise - 1e-12]:
            a0 = target
            r0 = measured(a0)[0]
            a1 = a0 * target / r0
            r1 = measured(a1)[0]
            a2 = a1 + (target - r1) * (a1 - a0) / (r1 - r0)
            reached, out = measured(a2)
            cand = replace(amp, wave=float(a2))
            if not out and not _wave_leaves_limits(
                    kin, part, q0, formation_dance(comp, mode, q0, kin, cand, duration,
                                                   wave=wave)):
                break
        amp = cand
    ref = DanceReference(kin, part, q0, formation_dance(comp, mode, q0, kin, amp, duration,
                                                        wave=wave))
    ref.wave_rise = reached
    return ref


__all__: Sequence[str] = ("DanceAmplitudes", "DanceReference", "Move", "Profile",
                          "dance_joints", "dance_partition", "dance_reference",
                          "formation_dance", "palm_height", "palm_position", "smoothstep",
                          "wave_directions", "wave_order", "wave_rise")

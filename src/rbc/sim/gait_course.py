"""A quadruped course as a support reference: a walk and a trot along a planned body path
(docs/supports.md, "The Go2 course").

:func:`course` turns a list of :class:`Leg` segments (gait, duration, body velocity) into the
document of a support reference (:mod:`rbc.sim.schedule`: knots, mode schedule, base pose,
foot targets, swing heights) for a robot on four point feet. Every step puts its feet down
at **new places**: a foot lands at its nominal offset under the planned body pose half a
stance ahead (the neutral point), and the plants anchor it where it lands.

* **walk** (crawl, 4 → 3 → 4 feet per step, order RL, FL, RR, FR): in the four-foot phase the
  centre of mass shifts to the nearest point of the next stance triangle shrunk by
  :data:`WALK_MARGIN` (the static support polygon), then the foot swings with the base still.
* **trot** (4 → 2 → 4 feet per step, diagonal pairs): two point feet leave one direction
  undriven (the robot tips freely about the line through them), so the centre of mass
  stays **on the stance diagonal**: during a swing it moves along that line to where it meets
  the line of the landing pair, and is there (on both) when the pair lands. A brief
  four-foot phase separates the swings; where the centre of mass is not yet on the next
  stance line (the first trot step), that phase shifts it there.

The centre of mass is the robot's own: the generator closes the configuration at every knot
(the support reference's inverse kinematics, :func:`rbc.sim.schedule.closed_at`) and moves
the base horizontally until the centre of mass is at its target (a fixed-point iteration,
:data:`COM_ITERATIONS`). Between knots everything follows the reference's minimum-jerk
quintics (at rest at every knot) and the swing bump (:data:`SWING_HEIGHT`).

Deterministic: no random numbers; the same record gives the same document.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

FEET = ("FL", "FR", "RL", "RR")
WALK_ORDER = ("RL", "FL", "RR", "FR")
TROT_PAIRS = (("FL", "RR"), ("FR", "RL"))
#: Four-foot shift and swing durations of a walk step [s].
WALK_SHIFT, WALK_SWING = 0.6, 0.45
#: Four-foot pause (centre of mass already on the next stance line), four-foot shift and
#: swing durations of a trot step [s].
TROT_PAUSE, TROT_SHIFT, TROT_SWING = 0.1, 0.3, 0.3
#: Distance [m] the centre of mass keeps inside a walk step's stance triangle (the least
#: loaded foot keeps a share of the weight), and from the stance feet along a trot diagonal.
WALK_MARGIN, TROT_MARGIN = 0.04, 0.03
#: Swing apex above the foot's ground height [m].
SWING_HEIGHT = 0.03
#: Fixed-point iterations placing the centre of mass (each closes every knot once; the
#: offset of the legs' mass changes little with a centimetre of base motion: the residual
#: falls by ~100× per iteration, measured).
COM_ITERATIONS = 4
#: Largest distance [m] between the planned body position and a trot step's centre-of-mass
#: target; beyond it the target is moved back toward the plan (along the stance line).
TROT_REACH = 0.05
#: Longest centre-of-mass travel [m] along the stance diagonal during one trot swing (a
#: 0.3 s minimum-jerk move of 5.5 cm peaks at 3.5 m/s²; the steady forward trot moves ≈ 4.6 cm).
TROT_TRAVEL = 0.055
#: Time [s] over which the planned body velocity goes from one leg's to the next.
RAMP = 1.6


@dataclass(frozen=True)
class Leg:
    """A course segment: ``gait`` (walk | trot | stand), ``duration`` [s] and the planned
    body velocity ``(v_x, v_y, ω_z)`` [m/s, m/s, rad/s] in the body's heading frame."""

    gait: str
    duration: float
    velocity: tuple[float, float, float] = (0.0, 0.0, 0.0)


#: The Go2 course of issue 21 (26 s): walk off, trot forward, trot through a turn, trot
#: sideways, trot forward, walk to a stop.
GO2_COURSE = (
    Leg("stand", 0.5),
    Leg("walk", 2.1, (0.03, 0.0, 0.0)),
    Leg("trot", 6.3, (0.07, 0.0, 0.0)),
    Leg("trot", 5.6, (0.05, 0.0, 0.25)),
    Leg("trot", 5.6, (0.0, 0.05, 0.0)),
    Leg("trot", 3.4, (0.06, 0.0, 0.0)),
    Leg("walk", 2.1, (0.03, 0.0, 0.0)),
    Leg("stand", 0.4),
)


def _rot(yaw: float) -> np.ndarray:
    c, s = np.cos(yaw), np.sin(yaw)
    return np.array([[c, -s], [s, c]])


class _Plan:
    """The planned body pose B(t) = (x, y, yaw): the legs' velocities, blended linearly over
    :data:`RAMP` from one leg's to the next, integrated (midpoint rule)."""

    def __init__(self, legs: tuple[Leg, ...], start: np.ndarray) -> None:
        self.legs, self.start = legs, np.asarray(start, float)
        self.starts = np.concatenate([[0.0], np.cumsum([leg.duration for leg in legs])])[:-1]

    def velocity(self, t: float) -> np.ndarray:
        """The planned body velocity (v_x, v_y, ω_z) at time t."""
        i = max(0, int(np.searchsorted(self.starts, t, side="right")) - 1)
        v = np.asarray(self.legs[i].velocity, float)
        if i == 0:
            return v
        s = min(1.0, (t - self.starts[i]) / RAMP)
        return (1.0 - s) * np.asarray(self.legs[i - 1].velocity, float) + s * v

    def pose(self, t: float) -> np.ndarray:
        """B(t), linear between the 1 ms samples of the integration (beyond the end: held
        at the last sample)."""
        if not hasattr(self, "_grid"):
            h = 1e-3
            end = float(sum(leg.duration for leg in self.legs)) + 2.0
            n = int(np.ceil(end / h))
            grid = np.empty((n + 1, 3))
            grid[0] = self.start
            for k in range(n):
                v = self.velocity((k + 0.5) * h)
                p = grid[k]
                yaw = p[2] + 0.5 * h * v[2]
                grid[k + 1, :2] = p[:2] + h * (_rot(yaw) @ v[:2])
                grid[k + 1, 2] = p[2] + h * v[2]
            self._grid = (np.arange(n + 1) * h, grid)
        ts, grid = self._grid
        return np.array([np.interp(t, ts, grid[:, j]) for j in range(3)])


def _cross(a: np.ndarray, b: np.ndarray) -> float:
    """The z component of the cross product of two plane vectors."""
    return float(a[0] * b[1] - a[1] * b[0])


def _nearest_on_segment(x: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    d = b - a
    s = np.clip(float((x - a) @ d) / float(d @ d), 0.0, 1.0)
    return a + s * d


def _inset(a: np.ndarray, b: np.ndarray, margin: float) -> tuple[np.ndarray, np.ndarray]:
    """The segment a–b shortened by ``margin`` at both ends."""
    u = (b - a) / np.linalg.norm(b - a)
    return a + margin * u, b - margin * u


def nearest_in_triangle(x: np.ndarray, tri: np.ndarray, margin: float) -> np.ndarray:
    """The point of triangle ``tri`` (3, 2) shrunk by ``margin`` [m] toward its incentre that
    is nearest to x (2,) — x itself when inside.

    Raises:
        ValueError: the triangle's inradius is not larger than the margin.
    """
    a, b, c = tri
    la, lb, lc = (np.linalg.norm(b - c), np.linalg.norm(c - a), np.linalg.norm(a - b))
    per = la + lb + lc
    centre = (la * a + lb * b + lc * c) / per
    area = 0.5 * abs(float(_cross(b - a, c - a)))
    r = 2.0 * area / per
    if r <= margin:
        raise ValueError(f"stance triangle inradius {r:.4f} m ≤ margin {margin} m")
    small = centre + (tri - centre) * (r - margin) / r
    sa, sb, sc = small
    signs = [_cross(q - p, x - p) for p, q in ((sa, sb), (sb, sc), (sc, sa))]
    if all(s >= 0 for s in signs) or all(s <= 0 for s in signs):
        return np.asarray(x, float)
    cands = [_nearest_on_segment(x, p, q) for p, q in ((sa, sb), (sb, sc), (sc, sa))]
    return min(cands, key=lambda p: float(np.linalg.norm(p - x)))


def _intersection(a1, a2, b1, b2) -> np.ndarray | None:
    """The crossing of lines a1–a2 and b1–b2 (None when nearly parallel)."""
    d1, d2 = a2 - a1, b2 - b1
    den = float(_cross(d1, d2))
    if abs(den) < 1e-9:
        return None
    s = float(_cross(b1 - a1, d2)) / den
    return a1 + s * d1


def mode_name(feet) -> str:
    """The stored mode of a set of feet (record order, joined by +)."""
    return "+".join(f for f in FEET if f in feet)


@dataclass
class _Knot:
    time: float
    mode: str
    com: np.ndarray  # (2,) centre-of-mass target
    yaw: float
    feet: dict[str, np.ndarray]


class _Builder:
    """The knots of a course, step by step (module docstring)."""

    def __init__(self, legs, offsets: dict[str, np.ndarray], com0: np.ndarray) -> None:
        self.plan = _Plan(tuple(legs), np.zeros(3))
        self.offsets = offsets
        self.feet = {f: offsets[f].copy() for f in FEET}
        self.com = np.asarray(com0, float)
        self.com_offset = np.asarray(com0, float)  # centre of mass − body position, at rest
        self.t = 0.0
        self.landed = ""  # the foot of the last walk step
        self.shifts: list[tuple[float, float]] = []  # trot shifts: (time, distance)
        self.fallbacks: list[float] = []  # trot steps whose lines cross beyond TROT_REACH
        self.knots = [_Knot(0.0, mode_name(FEET), self.com.copy(), 0.0, dict(self.feet))]

    def _knot(self, dt: float, stance, yaw: float) -> None:
        """A knot ``dt`` after the last one, from which ``stance`` holds the robot."""
        self.t = round(self.t + dt, 9)
        self.knots.append(_Knot(self.t, mode_name(stance), self.com.copy(), yaw,
                                {f: p.copy() for f, p in self.feet.items()}))

    def _landing(self, foot: str, t: float, ahead: float) -> np.ndarray:
        """Where a foot landing at time t goes: its offset under the planned pose at t
        moved ``ahead`` seconds on at the current leg's velocity (the neutral point)."""
        p = self.plan.pose(t)
        v = self.plan.velocity(t)
        yaw = p[2] + ahead * v[2]
        xy = p[:2] + ahead * (_rot(p[2] + 0.5 * ahead * v[2]) @ v[:2])
        return xy + _rot(yaw) @ self.offsets[foot]

    def _planned_com(self, t: float) -> np.ndarray:
        p = self.plan.pose(t)
        return p[:2] + _rot(p[2]) @ self.com_offset

    def stand(self, duration: float) -> None:
        self._knot(duration, FEET, self.plan.pose(self.t + duration)[2])

    def walk_step(self, foot: str) -> None:
        stance = [f for f in FEET if f != foot]
        tri = np.array([self.feet[f] for f in stance])
        target = nearest_in_triangle(self._planned_com(self.t + WALK_SHIFT), tri, WALK_MARGIN)
        self.com = target
        yaw = self.plan.pose(self.t + WALK_SHIFT)[2]
        self._knot(WALK_SHIFT, stance, yaw)  # shifted on four feet; now three
        # half a stance ahead would be 1.9 s of a full crawl cycle; the walks of a course
        # are two steps long, so one step's time ahead keeps the legs near their nominal
        # posture (a foot far ahead gets large tangential forces from the feedforward)
        self.feet[foot] = self._landing(foot, self.t + WALK_SWING, WALK_SHIFT + WALK_SWING)
        self.landed = foot
        self._knot(WALK_SWING, FEET, yaw)  # the swing, base still; down on four

    def trot_step(self, pair: tuple[str, str]) -> None:
        stance = [f for f in FEET if f not in pair]
        s1, s2 = (self.feet[f] for f in stance)
        a, b = _inset(s1, s2, TROT_MARGIN)
        on_line = _nearest_on_segment(self.com, a, b)
        pause = TROT_PAUSE if np.linalg.norm(on_line - self.com) < 1e-9 else TROT_SHIFT
        if pause == TROT_SHIFT:
            self.shifts.append((self.t, float(np.linalg.norm(on_line - self.com))))
        self.com = on_line
        self._knot(pause, stance, self.plan.pose(self.t + pause)[2])
        t_land = self.t + TROT_SWING
        stance_time = TROT_SWING + 2 * TROT_PAUSE
        for f in pair:
            self.feet[f] = self._landing(f, t_land, 0.5 * stance_time)
        cross = _intersection(s1, s2, *(self.feet[f] for f in pair))
        plan = self._planned_com(t_land)
        goal = plan if cross is None else cross
        if np.linalg.norm(goal - plan) > TROT_REACH:
            goal = plan  # fall back toward the plan; projected onto the stance line below
            self.fallbacks.append(self.t)
        goal = _nearest_on_segment(goal, a, b)
        travel = float(np.linalg.norm(goal - self.com))
        if travel > TROT_TRAVEL:  # catch up over several steps (then a shift re-centres it)
            goal = self.com + (goal - self.com) * (TROT_TRAVEL / travel)
        self.com = goal
        self._knot(TROT_SWING, FEET, self.plan.pose(t_land)[2])

    def build(self) -> list[_Knot]:
        t_end = 0.0
        for leg in self.plan.legs:
            t_end += leg.duration
            if leg.gait == "stand":
                if t_end - self.t > 1e-9:
                    self.stand(round(t_end - self.t, 9))
                continue
            k = 0
            while True:
                if leg.gait == "walk":
                    if self.t + WALK_SHIFT + WALK_SWING > t_end + 1e-9:
                        break
                    self.walk_step(WALK_ORDER[k % 4])
                elif leg.gait == "trot":
                    if self.t + TROT_SHIFT + TROT_SWING > t_end + 1e-9:
                        break
                    if k == 0 and self.landed in TROT_PAIRS[0]:
                        k = 1  # the foot that landed last stays on the ground (loaded)
                    self.trot_step(TROT_PAIRS[k % 2])
                else:
                    raise ValueError(f"unknown gait '{leg.gait}'; valid: walk, trot, stand")
                k += 1
            if t_end - self.t > 1e-9:  # the rest of the leg on four feet
                self.stand(round(t_end - self.t, 9))
        return self.knots


def course(model, legs=GO2_COURSE, swing_height: float = SWING_HEIGHT) -> dict:
    """The support-reference document of a course (module docstring) for ``model``, a
    compiled quadruped with point supports FL, FR, RL, RR and modes of two, three and four
    of them (``rbc compile --modes all``).

    Returns:
        ``{time, modes, base, supports, swing}`` (docs/supports.md), world frame: the ground
        at z = 0 under the foot spheres, the base starting level at the reference posture
        above the origin.
    """
    from rbc.model.dynamics import DynamicsModel
    from rbc.sim.schedule import closed_at, knots_from_document

    tree = DynamicsModel.build(model).tree
    base0, feet0, com0 = _reference(model, tree)
    offsets = {f: feet0[f][:2] - base0[:2] for f in FEET}
    knots = _Builder(legs, offsets, com0[:2] - base0[:2]).build()
    base_xy = np.array([k.com - _rot(k.yaw) @ (com0[:2] - base0[:2]) for k in knots])
    for _ in range(COM_ITERATIONS):
        doc = _document(knots, base0, feet0, base_xy, swing_height)
        qs = closed_at(model, knots_from_document(doc, model, "<course>"),
                       [k.time for k in knots])
        base_xy = base_xy + np.array([k.com - _com(model, tree, q)[:2]
                                      for k, q in zip(knots, qs, strict=True)])
    return _document(knots, base0, feet0, base_xy, swing_height)


def _reference(model, tree) -> tuple[np.ndarray, dict[str, np.ndarray], np.ndarray]:
    """The reference posture standing on the ground: base position (3,), feet (3,) each
    (support origins; spheres touching z = 0) and the centre of mass (3,) [m]."""
    from rbc.model.modes import support_poses

    q = np.array(model.partitions["default"].q_ref, dtype=float)
    radius = {s.name: s.radius for s in model.record.supports}
    poses = dict(zip(FEET, support_poses(model, q, FEET), strict=True))
    lift = radius["FL"] - min(T.translation[2] for T in poses.values())
    root = next(e for e, (n, t) in enumerate(zip(model.edge_names, model.edge_types,
                                                 strict=True))
                if n.endswith(".root") and t == "free")
    base = q[model.q_slice(root)][:3] + [0.0, 0.0, lift]
    feet = {f: T.translation + [0.0, 0.0, lift] for f, T in poses.items()}
    return base, feet, _com(model, tree, q) + [0.0, 0.0, lift]


def _document(knots, base0, feet0, base_xy, swing_height) -> dict:
    def r(x):
        return [round(float(v), 6) for v in x]  # µm and µrad

    n = len(knots)
    modes, last = [], None
    for k in knots:
        if k.mode != last:
            modes.append({"time": k.time, "mode": k.mode})
            last = k.mode
    return {
        "time": [k.time for k in knots],
        "modes": modes,
        "base": {"x": r(base_xy[:, 0]), "y": r(base_xy[:, 1]), "z": r([base0[2]] * n),
                 "yaw": r([k.yaw for k in knots])},
        "supports": {f: {"x": r([k.feet[f][0] for k in knots]),
                         "y": r([k.feet[f][1] for k in knots]),
                         "z": r([feet0[f][2]] * n)} for f in FEET},
        "swing": {f: swing_height for f in FEET},
    }


def _com(model, tree, q: np.ndarray) -> np.ndarray:
    """The robot's centre of mass (3,) [m] at configuration q (base model coordinates) on
    its Pinocchio tree."""
    import pinocchio as pin

    return np.asarray(pin.centerOfMass(tree.model, tree.model.createData(),
                                       tree.q_pin(q[: model.nq_tree])))


HEADER = ("# Go2 26 s course (records/go2.yaml compiled with --modes all): walk off, trot "
          "forward, trot\n# through a turn, trot sideways, trot forward, walk to a stop; "
          "support transitions between two-,\n# three- and four-foot sets, every foot landing "
          "at a new place (rbc.sim.gait_course, docs/supports.md).\n# Written by `python -m "
          "rbc.sim.gait_course BUNDLE OUT` (deterministic).\n")


def course_text(model) -> str:
    """The course (:data:`GO2_COURSE`) as the text of a support-reference file."""
    import yaml

    return HEADER + yaml.safe_dump(course(model), sort_keys=False, default_flow_style=None,
                                   width=100)


def write_reference(bundle, out) -> None:
    """Write the course of a compiled quadruped bundle to ``out`` (atomically)."""
    from rbc.model.compiled import CompiledModel
    from rbc.safeio import atomic_write_text

    atomic_write_text(out, course_text(CompiledModel.from_bundle(bundle)))


if __name__ == "__main__":
    import sys

    write_reference(sys.argv[1], sys.argv[2])

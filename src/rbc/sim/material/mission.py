"""The excavation mission: dig – curl – lift – swing – dump – return, as a reference on the
excavator's independent coordinates (slew and the three cylinder lengths), every knot a
configuration closed on the manifold by rbc's solver (docs/excavation.md, "Mission").

**Waypoints** (:data:`WAYPOINTS`) are bucket poses in the swing plane: the tooth tip's
radial distance r from the swing axis and height z above the ground [m], and the bucket's
pitch φ — the angle of the pin → tip chord from the swing frame's x axis, about −y, so
φ = −90° points the tip straight down with the mouth toward the machine, ±180° points it
back at the machine with the mouth up, and φ > 0 tips it forward-up, mouth down (the
cavity lies on the bucket frame's +z side; :mod:`rbc.sim.material.scene`). Each pose is
solved for the three cylinder lengths by least squares (``scipy.optimize.least_squares``
within the joint limits) on the tip position and pitch of the configuration
:func:`rbc.model.solve.solve` closes at those lengths (``body_poses`` of the closed
configuration), each solve continued from the previous waypoint's configuration; a pose
left more than :data:`POSE_TOL` off is an error. The knots are then the solved lengths
and the waypoints' slew angles, splined and lifted onto the manifold by
:mod:`rbc.sim.reference` like any reference.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rbc.errors import RbcError
from rbc.ir import spatial as sp
from rbc.model.compiled import CompiledModel, Partition
from rbc.model.kinematics import body_poses
from rbc.model.solve import resolve_targets, solve

#: a solved pose may miss its waypoint by this much: tip position [m], pitch [rad]
POSE_TOL = 1e-6
CYLINDERS = ("boom_cyl", "arm_cyl", "bucket_cyl")


class MissionError(RbcError):
    """A waypoint the excavator cannot reach (outside the workspace or the limits)."""


@dataclass(frozen=True)
class Waypoint:
    """A knot of the mission: time [s], slew [rad], tip radius r and height z [m], bucket
    pitch φ [deg] (module docstring); ``home``: the record's initial configuration."""

    t: float
    slew: float
    r: float = 0.0
    z: float = 0.0
    phi: float = 0.0
    home: bool = False
    what: str = ""


def waypoints(bed_top: float = 0.3, dump_radius: float = 6.3, scale: float = 1.0
              ) -> tuple[Waypoint, ...]:
    """The mission's waypoints for a bed whose top is ``bed_top`` above the ground and a
    bin centred ``dump_radius`` from the swing axis at slew 90° (module docstring); times
    multiplied by ``scale``."""
    h = np.pi / 2
    cut = -0.03  # tip height of the cut [m]: the cutting edge just below the ground
    rows = (
        Waypoint(0.0, 0.0, home=True, what="home"),
        Waypoint(2.0, 0.0, home=True, what="hold (the bed settles)"),
        Waypoint(5.0, 0.0, 7.3, bed_top + 0.2, -60.0, what="reach over the bed's far end"),
        Waypoint(7.0, 0.0, 7.1, cut, -65.0, what="penetrate"),
        Waypoint(11.0, 0.0, 5.6, cut, -65.0, what="drag through the bed"),
        Waypoint(14.0, 0.0, 5.3, bed_top + 0.15, -145.0, what="curl"),
        Waypoint(16.5, 0.0, 4.6, 1.5, -144.0, what="lift"),
        Waypoint(21.0, h, 4.6, 1.6, -142.0, what="swing to the bin"),
        Waypoint(24.0, h, dump_radius + 0.3, 1.3, -50.0, what="dump"),
        Waypoint(26.0, h, dump_radius + 0.3, 1.3, -50.0, what="hold open"),
        Waypoint(32.0, 0.0, 6.0, 1.5, -100.0, what="swing back"),
        Waypoint(35.0, 0.0, home=True, what="home"),
    )
    return tuple(Waypoint(w.t * scale, w.slew, w.r, w.z, w.phi, w.home, w.what) for w in rows)


def tip_pose(kin: CompiledModel, q: np.ndarray, task: str = "bucket_tip") -> np.ndarray:
    """``(r, z, φ [rad])`` of the bucket at configuration q (nq,), in the swing frame's
    plane (module docstring; the tip is the task's point on its body)."""
    t = next(t for t in kin.record.tasks if t.name == task)
    body = kin.record.body_index()[t.body]
    T = body_poses(kin, q)
    swing = T[kin.record.body_index()["swing"]]
    B = swing.inverse() * T[body]
    tip = B.act(sp.se3_from_pose(t.pose).translation)
    bx = B.rotation[:, 0]
    return np.array([tip[0], tip[2] + swing.translation[2], np.arctan2(bx[2], bx[0])])


def _wrap(a: np.ndarray) -> np.ndarray:
    return (np.asarray(a) + np.pi) % (2 * np.pi) - np.pi


def solve_waypoints(kin: CompiledModel, part: Partition, wps: tuple[Waypoint, ...]
                    ) -> tuple[np.ndarray, np.ndarray]:
    """Cylinder lengths for each waypoint: ``(lengths (W, 3) [m], residuals (W, 3))`` —
    residuals in m, m, rad of each solved pose against its waypoint.

    Raises:
        MissionError: a waypoint missed by more than :data:`POSE_TOL`.
    """
    v = {n: j for j, n in enumerate(kin.v_names)}
    idx = [v[c] for c in CYLINDERS]
    lo = np.array([kin.lower[j] for j in idx])
    hi = np.array([kin.upper[j] for j in idx])
    q_home = np.asarray(part.q_ref, dtype=float)
    x_home = np.array([_value(kin, q_home, j) for j in idx])
    out, res = np.zeros((len(wps), 3)), np.zeros((len(wps), 3))
    q_prev, x_prev = q_home, x_home
    for i, w in enumerate(wps):
        if w.home:
            out[i], q_prev, x_prev = x_home, q_home, x_home
            continue
        goal = np.array([w.r, w.z, np.radians(w.phi)])
        x, r, q = _solve_pose(kin, part, goal, q_prev, np.clip(x_prev, lo + 1e-6, hi - 1e-6),
                              (lo, hi))
        out[i], res[i] = x, r
        if np.abs(res[i]).max() > POSE_TOL:
            raise MissionError(f"excavation mission: waypoint '{w.what}' at t = {w.t:g} s "
                               f"(r {w.r:g} m, z {w.z:g} m, φ {w.phi:g}°) is out of reach: "
                               f"best pose misses it by {np.abs(res[i]).max():.3g} "
                               f"(lengths {np.round(x, 4).tolist()}, limits "
                               f"{lo.tolist()}–{hi.tolist()})")
        q_prev, x_prev = q, x
    return out, res


def _solve_pose(kin: CompiledModel, part: Partition, goal: np.ndarray, q_start: np.ndarray,
                x0: np.ndarray, bounds) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Least squares of one pose: ``(lengths (3,), residual (3,), closed q (nq,))``."""
    from scipy.optimize import least_squares

    cache: dict[tuple, np.ndarray] = {}

    def closed(x):
        key = tuple(np.round(x, 15))
        if key not in cache:
            targets = resolve_targets(kin, part, {**dict(zip(CYLINDERS, x, strict=True)),
                                                  "slew": 0.0})
            cache[key] = solve(kin, part, targets, q_start).q
        return cache[key]

    def f(x):
        p = tip_pose(kin, closed(x))
        return np.array([p[0] - goal[0], p[1] - goal[1], _wrap(p[2] - goal[2])])

    sol = least_squares(f, x0, bounds=bounds, xtol=1e-14, ftol=1e-14, gtol=1e-14,
                        diff_step=1e-7)
    return sol.x, f(sol.x), closed(sol.x)


def _value(kin: CompiledModel, q: np.ndarray, j: int) -> float:
    from rbc.model.solve import coordinate_value

    return float(coordinate_value(kin, q, j))


#: spacing of the written knots between waypoints [s]
KNOT_SPACING = 0.25


def knots(wps: tuple[Waypoint, ...], lengths: np.ndarray, spacing: float = KNOT_SPACING
          ) -> tuple[np.ndarray, np.ndarray]:
    """Knots ``(time (K,) [s], values (K, 4))`` — slew [rad] and the three cylinder lengths
    [m] — between the waypoints: on each segment the straight line between the two
    waypoints' values, timed by the smoothstep ``3s² − 2s³`` (at rest at every waypoint),
    sampled about every ``spacing`` seconds. Every value stays between its segment's end
    values, so the spline through these knots does not overshoot the joint limits the way
    a spline through the waypoints alone does (a plateau followed by a drop)."""
    ends = np.column_stack([[w.slew for w in wps], lengths])
    t_out, x_out = [np.array([wps[0].t])], [ends[:1]]
    for i in range(len(wps) - 1):
        t0, t1 = wps[i].t, wps[i + 1].t
        n = max(1, int(np.ceil((t1 - t0) / spacing - 1e-9)))
        s = np.arange(1, n + 1) / n
        w = 3 * s ** 2 - 2 * s ** 3
        t_out.append(t0 + s * (t1 - t0))
        x_out.append(ends[i] + w[:, None] * (ends[i + 1] - ends[i]))
    return np.concatenate(t_out), np.vstack(x_out)


def write_reference(path: Path, wps: tuple[Waypoint, ...], lengths: np.ndarray) -> Path:
    """Write the mission as a reference YAML (docs/simulate.md format) at ``path``: the
    :func:`knots` of the waypoints and their solved cylinder lengths (W, 3) [m]."""
    import yaml

    t, x = knots(wps, lengths)
    doc = {"time": [round(float(v), 9) for v in t],
           "joints": {n: [float(v) for v in x[:, i]] for i, n in
                      enumerate(("slew", *CYLINDERS))}}
    lines = [f"# {w.t:6.2f} s  {w.what}" for w in wps]
    path = Path(path)
    path.write_text("# excavation mission (rbc.sim.material.mission), waypoints:\n"
                    + "\n".join(lines) + "\n" + yaml.safe_dump(doc, sort_keys=False),
                    encoding="utf-8")
    return path


def peak_speeds(path: Path) -> dict[str, float]:
    """Peak |rate| of each coordinate's clamped cubic spline [rad/s or m/s], sampled at 1 ms
    (the spline :mod:`rbc.sim.reference` tracks)."""
    from scipy.interpolate import CubicSpline

    from rbc.sim.reference import load_knots

    k = load_knots(path)
    t = np.arange(k.time[0], k.time[-1], 1e-3)
    s = CubicSpline(k.time, k.values, axis=0, bc_type="clamped")(t, 1)
    return {n: float(np.abs(s[:, i]).max()) for i, n in enumerate(k.names)}

"""Desired task motions: stop-and-go paths through waypoints with minimum-jerk timing.

A path starts at a value x₀ (normally the task's value at the initial configuration) and
visits the waypoints x₁ … x_K in equal segments of ``duration / K``. Within a segment the
chart's shortest path (straight line; geodesic for an orientation,
:meth:`rbc.tasks.charts.Chart.interpolate`) is timed by the minimum-jerk profile

    s(τ) = 10τ³ − 15τ⁴ + 6τ⁵,   τ = (t − t_k) / T_k ∈ [0, 1]

(Flash & Hogan 1985), which starts and ends each segment at rest with zero acceleration — the
pick-and-place pattern of stopping at every waypoint. Before t = 0 and after the last segment
the path holds its end values at rest.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from rbc.tasks.charts import Chart, Desired, TaskError


def minimum_jerk(tau: float) -> tuple[float, float]:
    """``(s, ds/dτ)`` of the minimum-jerk profile at τ (clamped to [0, 1])."""
    t = min(max(tau, 0.0), 1.0)
    return 10 * t**3 - 15 * t**4 + 6 * t**5, 30 * t**2 - 60 * t**3 + 30 * t**4


@dataclass(frozen=True, eq=False)
class TaskPath:
    """A desired task motion (module docstring).

    Attributes:
        chart: the chart the values belong to; points: (K + 1, size) x₀ … x_K;
        times: (K + 1,) segment boundaries [s], times[0] = 0.
    """

    chart: Chart
    points: np.ndarray
    times: np.ndarray

    @property
    def duration(self) -> float:
        return float(self.times[-1])

    def __call__(self, t: float) -> Desired:
        """The desired value and rate at time t [s]."""
        k = int(np.clip(np.searchsorted(self.times, t, side="right") - 1, 0,
                        len(self.times) - 2))
        T = self.times[k + 1] - self.times[k]
        s, ds = minimum_jerk((t - self.times[k]) / T)
        if t < self.times[0] or t >= self.times[-1]:
            ds = 0.0
        return self.chart.interpolate(self.points[k], self.points[k + 1], s, ds / T)


def waypoint_path(chart: Chart, start: np.ndarray, waypoints: Sequence[np.ndarray],
                  duration: float) -> TaskPath:
    """A path from ``start`` through ``waypoints`` (values, chart representation) in equal
    segments over ``duration`` [s]; no waypoint: the start is held (a stationary task).

    Raises:
        TaskError: a non-positive or non-finite duration, or a waypoint of the wrong size.
    """
    if not (np.isfinite(duration) and duration > 0):
        raise TaskError(f"--duration {duration:g}: must be positive and finite [s]")
    pts = [np.asarray(start, dtype=float)]
    for n, w in enumerate(waypoints):
        w = np.asarray(w, dtype=float)
        if w.shape != (chart.size,):
            raise TaskError(f"waypoint {n + 1} of task {chart.label} has {w.size} values; "
                            f"expected {chart.size}")
        pts.append(w)
    if len(pts) == 1:
        pts.append(pts[0])
    times = np.linspace(0.0, duration, len(pts))
    return TaskPath(chart, np.array(pts), times)

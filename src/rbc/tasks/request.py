"""A task request as the command line states it (``rbc plan``, ``rbc simulate --controller
task``): task specifications, waypoints, duration and the options of the velocity problem;
:func:`build` turns it into the chart, the law and the desired path at an initial
configuration."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rbc.errors import UsageError
from rbc.model.compiled import CompiledModel
from rbc.safeio import MAX_OPTION_MAGNITUDE, finite_option
from rbc.tasks.charts import Chart, TaskError, stack
from rbc.tasks.paths import TaskPath, waypoint_path
from rbc.tasks.resolve import DEFAULT_GAIN, TaskLaw, task_law


@dataclass(frozen=True)
class TaskRequest:
    """What the user asked for.

    Attributes:
        specs: task specifications (:func:`rbc.tasks.charts.chart`); waypoints: per waypoint
        the command-line numbers (``x,y,z[,rx,ry,rz]``, stacks concatenated); duration [s];
        gains: K_x [1/s], one or one per row; k_phi [J·s]; relax: ``none`` | ``slack``;
        speed_scale: factor on the actuators' speed limits.
    """

    specs: tuple[str, ...]
    waypoints: tuple[tuple[float, ...], ...] = ()
    duration: float = 1.0
    gains: tuple[float, ...] = (DEFAULT_GAIN,)
    k_phi: float = 0.0
    relax: str = "none"
    speed_scale: float = 1.0


def parse_numbers(text: str, option: str) -> tuple[float, ...]:
    """``"1,2.5,-3"`` → (1.0, 2.5, -3.0).

    Raises:
        UsageError: empty, not numbers, or not finite (names the option).
    """
    try:
        out = tuple(float(x) for x in text.split(","))
    except ValueError:
        out = ()
    if not out or not all(finite_option(x) for x in out):
        raise UsageError(f"{option} '{text}': expected comma-separated finite numbers "
                         f"(magnitude ≤ {MAX_OPTION_MAGNITUDE:g}), e.g. "
                         f"{option} 5.2,0,1.1")
    return out


def build(model: CompiledModel, q0: np.ndarray, req: TaskRequest
          ) -> tuple[Chart, TaskLaw, TaskPath]:
    """The chart, the law and the path from the task's value at q0 through the waypoints.

    Raises:
        TaskError: a bad specification, gain, option, duration, or a waypoint with the wrong
            number of values (names the rows it needs).
    """
    chart = stack(model, list(req.specs))
    law = task_law(chart, list(req.gains), k_phi=req.k_phi, speed_scale=req.speed_scale,
                   relax=req.relax)
    points = []
    for nums in req.waypoints:
        if len(nums) != chart.target_size:
            pose = " (a pose as x,y,z,rx,ry,rz)" if chart.target_size != chart.dim else ""
            raise TaskError(f"--to {','.join(f'{x:g}' for x in nums)}: task {chart.label} "
                            f"takes {chart.target_size} numbers{pose}; its rows are "
                            f"{', '.join(chart.row_names())}; got {len(nums)}")
        points.append(chart.from_target(nums))
    return chart, law, waypoint_path(chart, chart.value(model, q0), points, req.duration)

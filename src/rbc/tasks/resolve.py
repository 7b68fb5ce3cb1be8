"""Resolved-rate law: the velocity problem posed and solved at one state.

At a closed configuration q with its lift E (nv, n_u) and a desired task sample, the law
assembles the chart's error e_x, Jacobian J_x and feedforward φ_d (:mod:`.charts`), the
metric W = M_r (:func:`rbc.model.dynamics.reduced_inertia`), the preference gradient ∇Φ_u
(:mod:`.preference`) and the bounds (:mod:`.bounds`), and solves
``J_x u = φ_d − K_x e_x`` in the weighted sense of :mod:`.qp`. This is the one function both
``rbc plan`` (offline, integrating the resolved motion) and ``rbc simulate --controller task``
(online, at the control rate) evaluate.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from rbc.model.dynamics import DynamicsData, DynamicsModel, reduced_inertia
from rbc.tasks import preference
from rbc.tasks.bounds import STROKE_RATE, Bounds, kinematic_bounds
from rbc.tasks.charts import Chart, Desired, TaskError, TaskState
from rbc.tasks.qp import RELAXATIONS, Solution, VelocityProblem, solve

#: Default task gain K_x [1/s]: errors decay with a 0.5 s time constant.
DEFAULT_GAIN = 2.0


@dataclass(frozen=True, eq=False)
class TaskLaw:
    """The task and the options of the velocity problem.

    Attributes:
        chart: the task chart; gains: (m,) K_x [1/s]; k_phi: stroke preference weight k_Φ
        [J·s]; speed_scale: factor on the actuators' speed limits; stroke_rate: γ [1/s] of
        the stroke bounds (``inf``: none); relax: ``none`` or ``slack``.
    """

    chart: Chart
    gains: np.ndarray
    k_phi: float = 0.0
    speed_scale: float = 1.0
    stroke_rate: float = STROKE_RATE
    relax: str = "none"

    def __post_init__(self) -> None:
        object.__setattr__(self, "gains", np.asarray(self.gains, dtype=float))


def task_law(chart: Chart, gains: Sequence[float] | float | None = None, *, k_phi: float = 0.0,
             speed_scale: float = 1.0, stroke_rate: float = STROKE_RATE,
             relax: str = "none") -> TaskLaw:
    """A checked :class:`TaskLaw`; gains: one value for every row, or one per row.

    Raises:
        TaskError: a gain count other than 1 or m, a non-positive or non-finite gain, a
            negative k_Φ, a non-positive speed scale, or an unknown relaxation.
    """
    g = np.atleast_1d(np.asarray(DEFAULT_GAIN if gains is None else gains, dtype=float))
    if g.size == 1:
        g = np.full(chart.dim, float(g[0]))
    if g.size != chart.dim:
        raise TaskError(f"--kx: {g.size} gains for the {chart.dim} rows of task {chart.label} "
                        f"({', '.join(chart.row_names())}); give 1 or {chart.dim}")
    if not np.all(np.isfinite(g)) or np.any(g <= 0):
        raise TaskError(f"--kx {','.join(f'{x:g}' for x in g)}: gains must be positive and "
                        "finite [1/s]")
    if not (np.isfinite(k_phi) and k_phi >= 0):
        raise TaskError(f"--stroke-preference {k_phi:g}: must be ≥ 0 and finite [J·s]")
    if not (np.isfinite(speed_scale) and speed_scale > 0):
        raise TaskError(f"--speed-scale {speed_scale:g}: must be positive and finite")
    if relax not in RELAXATIONS:
        raise TaskError(f"--relax {relax}: unknown policy; valid: {', '.join(RELAXATIONS)}")
    return TaskLaw(chart, g, k_phi, speed_scale, stroke_rate, relax)


@dataclass(frozen=True, eq=False)
class Resolved:
    """The law at one state.

    Attributes:
        u: (n_u,) resolved independent speeds; task: the chart state (e_x, J_x, φ_d);
        problem: the velocity problem; solution: its solution (active bounds, slack);
        bounds: the bounds; phi: Φ(q).
    """

    u: np.ndarray
    task: TaskState
    problem: VelocityProblem
    solution: Solution
    bounds: Bounds
    phi: float


def resolve(dm: DynamicsModel, data: DynamicsData, law: TaskLaw, q: np.ndarray,
            E: np.ndarray, desired: Desired, u0: np.ndarray | None = None) -> Resolved:
    """Pose and solve the velocity problem at q (module docstring).

    Args:
        q: (nq,) closed configuration; E: (nv, n_u) the lift at q; desired: the desired
            task sample; u0: nominal independent speeds (None: zero).

    Raises:
        TaskInfeasible: the task cannot be met inside the bounds (``relax="none"``).
    """
    k = dm.kin
    ts = law.chart.state(k, q, E, desired)
    bounds = kinematic_bounds(k, q, E, speed_scale=law.speed_scale,
                              stroke_rate=law.stroke_rate)
    grad = preference.gradient(k, q, E) if law.k_phi else np.zeros(E.shape[1])
    prob = VelocityProblem(reduced_inertia(dm, data, q, E), ts.J, ts.command(law.gains), grad,
                           law.k_phi, bounds, u0, law.chart.row_names())
    sol = solve(prob, law.relax)
    return Resolved(sol.u, ts, prob, sol, bounds, preference.phi(k, q))

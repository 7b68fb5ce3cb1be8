"""The ``allocation`` controller of ``rbc simulate`` on a composed mode: the tracking law and
the effort-allocation QP of :mod:`rbc.control` run at the control rate from the measured
state (docs/allocation.md "In rbc simulate").

At every control step the plant's measured configuration and speeds (the reduced plant's
own coordinates: those of the mode model) go to
:meth:`rbc.control.controller.AllocationController.step`; the allocated efforts are applied
(they are within the effort limits by construction). The reference is the lifted
``--reference`` sampled on the control grid, or without one the mode's reference
configuration at rest (the robots hold their stance; ``--set``/``--velocity`` start them
away from it). Logged per step: the allocation slack ‖z‖∞, the phase, the tracking error
‖e‖∞ and ‖s‖∞, the smallest support normal force of the allocation.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from rbc.control.controller import AllocationController
from rbc.control.reference import ReferenceSample
from rbc.model.kinematics import residual
from rbc.sim.controllers import clip_efforts

#: Slack up to which a step counts as reached (docs/allocation.md: a reachable Q gives 0).
SLACK_LIMIT = 1e-9


@dataclass(frozen=True, eq=False)
class HeldReference:
    """The configuration q (nq,) at rest: ``v_d = a_d = 0``."""

    q: np.ndarray
    nv: int

    def __call__(self, t: float) -> ReferenceSample:
        z = np.zeros(self.nv)
        return ReferenceSample(float(t), self.q, z, z, z[:0], z[:0], 0.0)


@dataclass(frozen=True, eq=False)
class GridReference:
    """A lifted reference (:class:`rbc.sim.reference.LiftedReference`) sampled at the grid
    point of each control time (lifted on the control grid: exact samples)."""

    lifted: object
    model: object

    def __call__(self, t: float) -> ReferenceSample:
        r = self.lifted
        dt = float(r.time[1] - r.time[0]) if r.time.size > 1 else 1.0
        k = int(min(max(round(t / dt), 0), r.time.size - 1))
        return ReferenceSample(float(r.time[k]), r.q[k], r.v[k], r.a[k], r.u[k], r.udot[k],
                               float(np.abs(residual(self.model, r.q[k])).max(initial=0.0)))


@dataclass(eq=False)
class AllocationTracking:
    """The simulate loop's face of :class:`~rbc.control.controller.AllocationController`.

    Attributes:
        controller: the tracking + allocation controller; lower, upper: (n_act,) limits.
    """

    controller: AllocationController
    lower: np.ndarray
    upper: np.ndarray
    kind: str = "allocation"
    reference: None = None
    feedforward: None = None
    gains: None = None
    history: dict[str, list] = field(default_factory=lambda: {
        k: [] for k in ("time", "slack", "reachable", "e", "s", "normal", "iterations",
                        "wrenches", "cpu")})

    def command_measured(self, t: float, m) -> np.ndarray:
        """Port efforts (n_act,) at time t from the measurement m (its q, v: the mode
        model's coordinates on the reduced plant)."""
        t0 = time.perf_counter()
        step = self.controller.step(t, m.q, m.v)
        a = step.allocation
        self.history["cpu"].append(time.perf_counter() - t0)
        h = self.history
        h["time"].append(t)
        h["slack"].append(a.slack)
        h["reachable"].append(a.phase == "reachable")
        h["e"].append(float(np.abs(step.tracking.e).max(initial=0.0)))
        h["s"].append(float(np.abs(step.tracking.s).max(initial=0.0)))
        h["normal"].append(float(a.wrenches[:, 5].min(initial=np.inf)) if a.wrenches.size
                           else np.nan)
        h["iterations"].append(a.iterations)
        h["wrenches"].append(a.wrenches)
        return step.f

    def command(self, t: float, ell: np.ndarray, ell_dot: np.ndarray) -> np.ndarray:
        raise TypeError("the allocation controller needs the measured state: call "
                        "command_measured(t, measurement)")

    def log(self) -> dict[str, np.ndarray]:
        """``allocation/time``, ``allocation/slack`` [N or N·m], ``allocation/reachable``,
        ``allocation/tracking_error`` ‖e‖∞ [rad or m], ``allocation/sliding`` ‖s‖∞
        [rad/s or m/s], ``allocation/min_normal`` [N], ``allocation/iterations`` (N,), and
        ``allocation/wrenches`` (N, k, 6): the support wrenches λ_b(f) the allocation
        expects, ``[n; f]`` world axes about each support origin (the mode's support order).
        """
        h = self.history
        k = len(self.controller.mm.kin.supports)
        return {"allocation/wrenches": np.asarray(h["wrenches"], dtype=float).reshape(-1, k, 6),
                "allocation/time": np.asarray(h["time"], dtype=float),
                "allocation/slack": np.asarray(h["slack"], dtype=float),
                "allocation/reachable": np.asarray(h["reachable"], dtype=bool),
                "allocation/tracking_error": np.asarray(h["e"], dtype=float),
                "allocation/sliding": np.asarray(h["s"], dtype=float),
                "allocation/min_normal": np.asarray(h["normal"], dtype=float),
                "allocation/iterations": np.asarray(h["iterations"], dtype=np.int64)}

    def summary(self) -> dict:
        """``steps``, ``slack_max``, ``slack_steps`` (slack > 1e-9), ``slack_steps_1e-3``,
        ``tracking_error_max``/``_final`` [rad or m], ``min_normal`` [N], ``step_time_median``
        [s] (wall time of one controller evaluation: terms, tracking, allocation)."""
        lg = self.log()
        slack, e = lg["allocation/slack"], lg["allocation/tracking_error"]
        return {"steps": int(slack.size), "slack_max": float(slack.max(initial=0.0)),
                "slack_steps": int(np.count_nonzero(slack > SLACK_LIMIT)),
                "slack_steps_1e-3": int(np.count_nonzero(slack > 1e-3)),
                "tracking_error_max": float(e.max(initial=0.0)),
                "tracking_error_final": float(e[-1]) if e.size else None,
                "min_normal": float(np.nanmin(lg["allocation/min_normal"]))
                if e.size else None,
                "step_time_median": float(np.median(self.history["cpu"]))
                if e.size else None}

    def clip(self, f: np.ndarray) -> tuple[np.ndarray, bool]:
        """``(applied, clipped)``: efforts within the limits (the allocation's already are)."""
        return clip_efforts(f, self.lower, self.upper)

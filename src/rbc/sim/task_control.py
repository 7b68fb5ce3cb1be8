"""The ``task`` controller of ``rbc simulate``: the resolved-rate law of ``rbc plan`` run
online at the control rate, on any backend (docs/tasks.md).

At every control step, from the measured ports only:

1. **Observe** the configuration: the independent values x with ``ℓ(q(x)) = ℓ_m`` (Newton on
   x from the last estimate, ``Δx = −L⁺ (ℓ(q(x)) − ℓ_m)`` with ``L = J_ℓ E``, closing the
   mechanism at every iterate with :class:`rbc.sim.manifold.LiftedCloser`) and the speeds
   ``u = L⁺ ℓ̇_m``. The ports must determine the configuration: ``rank L = n_u`` (checked
   when the controller is built).
2. **Resolve** the velocity problem at the observed state against the path's desired sample
   (:func:`rbc.tasks.resolve.resolve`: task error e_x, J_x, W = M_r, Φ, bounds) → u*, and the
   commanded port rates ``ℓ̇* = L u*``.
3. **Servo** the ports: the commanded port positions integrate ``ℓ̇*`` from the first
   measurement (``ℓ*_{k+1} = ℓ*_k + Δt ℓ̇*_k``) and ``f = K_p (ℓ* − ℓ) + K_d (ℓ̇* − ℓ̇) + f_g`` with
   the PD gains of :mod:`rbc.sim.controllers` and ``f_g`` the port efforts of the nominal
   model that give the observed state the commanded acceleration ``u̇* ≈ (u*_k − u*_{k−1})/Δt``
   (gravity, velocity terms, passive loads and inertia:
   :func:`rbc.model.dynamics.actuator_efforts`; u̇* = 0 at the first step).

The task error is fed back from the measured configuration, so the task loop closes around
the plant (the port servo only has to realise ℓ̇*). An infeasible task raises
:class:`rbc.tasks.qp.TaskInfeasible` (exit 2, nothing written) unless ``--relax slack``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from rbc.model.compiled import Partition
from rbc.model.dynamics import DynamicsData, DynamicsModel, actuator_efforts, reduced_terms
from rbc.model.interfaces import actuator_map, port_state
from rbc.model.solve import independent_values
from rbc.sim.controllers import ControllerError, Gains, clip_efforts
from rbc.sim.manifold import LiftedCloser
from rbc.tasks.paths import TaskPath
from rbc.tasks.qp import TaskInfeasible
from rbc.tasks.resolve import TaskLaw, resolve

#: Observer: Newton iterations and the port residual [m, rad] at which it stops (the closure
#: tolerance's order: for ports linear in q 2–3 iterations suffice).
OBSERVER_ITERATIONS = 8
OBSERVER_TOL = 1e-12


@dataclass(eq=False)
class PortObserver:
    """The configuration and independent speeds from the measured ports (module docstring).

    Attributes:
        dm: the nominal dynamics model; part: the partition; closer: the run-time closer;
        x: (n_u,) the last independent values.
    """

    dm: DynamicsModel
    part: Partition
    closer: LiftedCloser
    x: np.ndarray

    @classmethod
    def build(cls, dm: DynamicsModel, data: DynamicsData, part: Partition, q0: np.ndarray
              ) -> PortObserver:
        """At the closed configuration q0.

        Raises:
            ControllerError: the ports do not determine the configuration (rank L < n_u).
        """
        close = LiftedCloser(dm, data, part, q0)
        L = actuator_map(dm.kin, close.lifted.E, close.q)
        n_u = part.independent.size
        if np.linalg.matrix_rank(L) < n_u:
            raise ControllerError(
                f"controller 'task' observes the configuration from the ports, but the "
                f"{L.shape[0]} actuator ports of {dm.kin.record.name} determine only "
                f"{np.linalg.matrix_rank(L)} of its {n_u} independent speeds")
        return cls(dm, part, close, independent_values(dm.kin, part, close.q))

    def observe(self, ell: np.ndarray, ell_dot: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(q (nq,), E (nv, n_u), u (n_u,))`` from measured ports ℓ, ℓ̇ (n_act,)."""
        kin = self.dm.kin
        for _ in range(OBSERVER_ITERATIONS):
            q = self.closer(self.x)
            ell_q, J = port_state(kin, q)
            held = np.isfinite(ell_q)  # a velocity port has no displacement to match
            r = ell_q[held] - ell[held]
            if np.abs(r).max(initial=0.0) <= OBSERVER_TOL:
                break
            L = J[held] @ self.closer.lifted.E
            self.x = self.x - np.linalg.lstsq(L, r, rcond=None)[0]
        q = self.closer(self.x)
        E = self.closer.lifted.E
        return q, E, np.linalg.lstsq(port_state(kin, q)[1] @ E, ell_dot, rcond=None)[0]


@dataclass(eq=False)
class TaskController:
    """The online task law (module docstring); the interface of
    :class:`rbc.sim.controllers.Controller` plus a per-step :attr:`history`.

    Attributes:
        law, path: the task law and the desired motion; observer: the port observer;
        gains: port PD gains; lower, upper: (n_act,) effort limits; history: per control
        step ``time, e, slack, active, phi``.
    """

    dm: DynamicsModel
    data: DynamicsData
    law: TaskLaw
    path: TaskPath
    observer: PortObserver
    gains: Gains
    lower: np.ndarray
    upper: np.ndarray
    kind: str = "task"
    reference: None = None
    feedforward: None = None
    history: dict[str, list] = field(default_factory=lambda: {
        k: [] for k in ("time", "e", "slack", "active", "phi")})
    _bound_names: tuple[str, ...] | None = None
    _ell: np.ndarray | None = None
    _u: np.ndarray | None = None
    _rate: np.ndarray | None = None
    _t: float = 0.0

    def command(self, t: float, ell: np.ndarray, ell_dot: np.ndarray) -> np.ndarray:
        """Unclipped port efforts (n_act,) at time t from measured ℓ, ℓ̇.

        Raises:
            TaskInfeasible: the task cannot be met at time t (names the bounds), without the
                slack relaxation.
        """
        q, E, u = self.observer.observe(ell, ell_dot)
        try:
            r = resolve(self.dm, self.data, self.law, q, E, self.path(t))
        except TaskInfeasible as err:
            raise TaskInfeasible(f"controller 'task' at t = {t:.3f} s: {err}", err.bounds,
                                 err.slack, err.rank_deficient) from None
        udot = np.zeros_like(u)
        if self._ell is None:
            self._ell = np.array(ell, dtype=float)
        else:
            self._ell = self._ell + (t - self._t) * self._rate
            udot = (r.u - self._u) / (t - self._t)
        self._t, self._u = t, r.u
        self._rate = actuator_map(self.dm.kin, E, q) @ r.u
        terms = reduced_terms(self.dm, self.data, self.observer.part, q, u,
                              lifted=self.observer.closer.lifted)
        hold = actuator_efforts(self.dm, terms, udot)
        self._bound_names = r.bounds.names
        h = self.history
        h["time"].append(t)
        h["e"].append(r.task.e)
        h["slack"].append(r.solution.slack)
        h["active"].append(r.solution.active)
        h["phi"].append(r.phi)
        # a velocity port (ℓ NaN: no displacement) is servoed on its rate only
        held = np.nan_to_num(self._ell - ell, nan=0.0)
        return self.gains.kp * held + self.gains.kd * (self._rate - ell_dot) + hold

    def log(self) -> dict[str, np.ndarray]:
        """The history as log datasets ``task/time`` (N,), ``task/error`` (N, m),
        ``task/slack`` (N, m), ``task/active`` (N, k) bool, ``task/phi`` (N,)."""
        h = self.history
        n, m = len(h["time"]), self.law.chart.dim
        return {"task/time": np.asarray(h["time"], dtype=float),
                "task/error": np.asarray(h["e"], dtype=float).reshape(n, m),
                "task/slack": np.asarray(h["slack"], dtype=float).reshape(n, m),
                "task/active": np.asarray(h["active"], dtype=bool).reshape(n, -1),
                "task/phi": np.asarray(h["phi"], dtype=float)}

    def summary(self) -> dict:
        """``rows``, ``error_initial``, ``error_final``, ``error_max`` (‖e_x‖₂ [m, rad]),
        ``slack_max`` [m/s, rad/s], ``relaxed_steps``, ``bounds_active`` {name: steps}."""
        lg = self.log()
        err = np.linalg.norm(lg["task/error"], axis=1)
        slack = np.linalg.norm(lg["task/slack"], axis=1)
        names = self._bound_names or ()
        counts = lg["task/active"].sum(axis=0) if lg["task/active"].size else ()
        return {"rows": list(self.law.chart.row_names()),
                "error_initial": float(err[0]) if err.size else None,
                "error_final": float(err[-1]) if err.size else None,
                "error_max": float(err.max(initial=0.0)),
                "slack_max": float(slack.max(initial=0.0)),
                "relaxed_steps": int(np.count_nonzero(slack)),
                "bounds_active": {n_: int(c) for n_, c in zip(names, counts, strict=True)
                                  if c}}

    def clip(self, f: np.ndarray) -> tuple[np.ndarray, bool]:
        """``(applied, clipped)``: efforts within the limits and whether any was clipped."""
        return clip_efforts(f, self.lower, self.upper)


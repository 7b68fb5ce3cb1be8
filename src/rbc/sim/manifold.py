"""Closing the mechanism at prescribed independent values along a motion (run-time helper).

A motion visits independent values ``x_k`` a small step apart, so the closure is re-solved
from the previous configuration by one predictor–corrector step of :mod:`rbc.model.solve`
(lift predictor, independent values set exactly, module-local Newton on the dependent
columns); only when that step fails does the full continuation with its admissibility
checks (limits, log domain, assembly branch) run. This is the "closure projection" of the
reduced backend and of the reference lift (docs/simulate.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from rbc.model.augmented import integrate
from rbc.model.closure import CLOSURE_TOL, ClosureError, SolveStats
from rbc.model.compiled import CompiledModel, Partition
from rbc.model.dynamics import DynamicsData, DynamicsModel, lift_at
from rbc.model.partition import Lift
from rbc.model.solve import (
    MAX_CORRECTOR,
    advance,
    coordinate_value,
    module_plan,
    prescribable,
    scalar_q_index,
    set_values,
    solve,
)


def _prescribed(model: CompiledModel, part: Partition) -> tuple[np.ndarray, np.ndarray]:
    """``(mask (n_u,), v-indices)`` of the independent coordinates a closer prescribes.

    Independent coordinates without a scalar value (a spherical joint's, e.g. Cassie's
    achilles rods) are not prescribed: they keep their value from the last configuration
    (zero predictor step).
    """
    keep = np.array([prescribable(model, int(j)) for j in part.independent], dtype=bool)
    return keep, np.asarray(part.independent, dtype=np.int64)[keep]


@dataclass
class Closer:
    """Closes a model at prescribed values of all independent coordinates.

    Attributes:
        model, part: the model and the partition whose independent coordinates are given.
        q: (nq,) the last closed configuration (the start of the next solve).
        stats: accumulated Newton counts; fallbacks: full continuations run.
    """

    model: CompiledModel
    part: Partition
    q: np.ndarray
    stats: SolveStats = field(default_factory=SolveStats)
    fallbacks: int = 0

    def __post_init__(self) -> None:
        self._plan = module_plan(self.model, self.part)
        self._keep, self._idx = _prescribed(self.model, self.part)
        self.q = np.array(self.q, dtype=float)
        self._x: np.ndarray | None = None

    def __call__(self, x: np.ndarray) -> np.ndarray:
        """Closed configuration (nq,) with independent values x (n_u,) [rad or m].

        Raises:
            ClosureError: the values cannot be reached from the last configuration.
        """
        x = np.asarray(x, dtype=float)[self._keep]
        if self._x is not None and np.array_equal(x, self._x):
            return self.q  # e.g. the first Runge–Kutta stage at the last step's end point
        q, why = advance(self.model, self.part, self.q, self._idx, x,
                         self._plan, CLOSURE_TOL, self.stats)
        if why is not None:
            self.fallbacks += 1
            q = solve(self.model, self.part, dict(zip(self._idx.tolist(), x, strict=True)),
                      self.q).q
        self.q, self._x = q, x.copy()
        return q


@dataclass
class LiftedCloser:
    """Closes a model at prescribed independent values with the augmented tree's closure
    geometry (:mod:`rbc.model.augmented`) and keeps the lift at the closed configuration.

    The run-time counterpart of :class:`Closer` for the reduced backend: the predictor is
    the lift at the last closed configuration (already evaluated there), the corrector is
    Newton on the selected rows ``S ρ(q) = 0`` over the dependent columns, stepping with the
    LU factors of ``R_p = S C Π_p`` that the lift at each iterate computes anyway; the
    geometry and lift at the converged configuration are returned for the dynamics to reuse.
    Convergence is checked on all rows (``‖ρ‖∞ ≤ tol``); the unselected rows are linear
    combinations of the selected ones near the manifold (rank analysis). When the corrector
    fails, the full continuation of :class:`Closer` runs (counted in ``fallbacks``).

    Attributes:
        dm, data: the dynamics model whose augmented tree evaluates the geometry, and its
            scratch data; part: the partition; q: (nq,) last closed configuration;
        lifted: the :class:`~rbc.model.partition.Lift` at q (geometry attached).
    """

    dm: DynamicsModel
    data: DynamicsData
    part: Partition
    q: np.ndarray
    stats: SolveStats = field(default_factory=SolveStats)
    fallbacks: int = 0

    def __post_init__(self) -> None:
        k, part = self.dm.kin, self.part
        self._keep, self._idx = _prescribed(k, part)
        # coordinates stored as their value in q are read and set by index; the others
        # (a planar joint's angle, stored as cos/sin) through the joint's own maps
        qidx = [scalar_q_index(k, int(j)) for j in self._idx]
        self._direct = np.array([i is not None for i in qidx], dtype=bool)
        self._qidx = np.array([i for i in qidx if i is not None], dtype=np.int64)
        self._slow = Closer(k, part, self.q)
        self.q = np.array(self.q, dtype=float)
        self.lifted = self._correct(self.q)
        if self.lifted is None:
            raise ClosureError(f"the initial configuration is not closed (partition "
                               f"'{part.name}')")
        self._x = self._values(self.q)
        self._chart_at: tuple[np.ndarray, np.ndarray] | None = None  # last chart(q0, ξ)

    def _values(self, q: np.ndarray) -> np.ndarray:
        """Values (n_kept,) of the prescribed independent coordinates at q [rad or m]."""
        out = np.empty(self._idx.size)
        out[self._direct] = q[self._qidx]
        for n in np.flatnonzero(~self._direct):
            out[n] = coordinate_value(self.dm.kin, q, int(self._idx[n]))
        return out

    def _set(self, q: np.ndarray, x: np.ndarray) -> np.ndarray:
        """q with the prescribed independent coordinates set to x (n_kept,)."""
        q[self._qidx] = x[self._direct]
        generic = np.flatnonzero(~self._direct)
        if generic.size:
            q = set_values(self.dm.kin, q, {int(self._idx[n]): float(x[n]) for n in generic})
        return q

    def _correct(self, q: np.ndarray) -> Lift | None:
        """Newton from q with the independent values held; the lift at the result or None."""
        aug, dep, rows = self.dm.augmented, self.part.dependent, self.part.rows
        for it in range(MAX_CORRECTOR + 1):
            try:
                lifted = lift_at(self.dm, self.data, self.part, q)
            except np.linalg.LinAlgError:  # R_p singular here: let the continuation decide
                return None
            self.stats.residual_evals += 1
            self.stats.jacobian_evals += 1
            rho = lifted.geometry.rho
            if np.abs(rho).max(initial=0.0) <= CLOSURE_TOL:
                self.q = q
                return lifted
            if it == MAX_CORRECTOR or not np.all(np.isfinite(rho)):
                return None
            dv = np.zeros(self.dm.kin.nv)
            dv[dep] = -lifted.solve(rho[rows])
            q = integrate(aug, q, dv)
            self.stats.iterations += 1
        return None

    def chart(self, q0: np.ndarray, E0: np.ndarray, xi: np.ndarray) -> np.ndarray:
        """Closed configuration (nq,) whose independent coordinates are q0's moved by the
        chart displacement ξ (n_u,) — exactly ``q0 ⊕ ξ`` on the independent joints (a free
        base: ``T·exp6(ξ)``; scalar coordinates: ``x0 + ξ``) — with the dependents predicted
        by ``q0 ⊕ E0 ξ`` (E0: the lift at q0, whose independent rows are I) and corrected by
        Newton; the lift there is :attr:`lifted`. Works for independent coordinates without
        scalar values (a floating base standing on its feet).

        Raises:
            ClosureError: the corrector does not converge from the predictor.
        """
        xi = np.asarray(xi, dtype=float)
        if not np.any(xi) and np.array_equal(q0, self.q):
            return self.q  # e.g. the first Runge–Kutta stage: the lift at q0 is known
        last = self._chart_at
        if last is not None and np.array_equal(xi, last[1]) and np.array_equal(q0, last[0]):
            return self.q  # the last stage again (the end point of an accepted step)
        new = self._correct(integrate(self.dm.augmented, q0, E0 @ xi))
        if new is None:
            raise ClosureError("the run-time corrector did not converge from the lift "
                               "predictor (a singular configuration or a too large step)")
        self.lifted = new
        self._x = self._values(self.q)
        self._chart_at = (q0.copy(), xi.copy())
        return self.q

    def __call__(self, x: np.ndarray) -> np.ndarray:
        """Closed configuration (nq,) with independent values x (n_u,) [rad or m]; the
        lift there is :attr:`lifted`.

        Raises:
            ClosureError: the values cannot be reached from the last configuration.
        """
        x = np.asarray(x, dtype=float)[self._keep]
        if np.array_equal(x, self._x):
            return self.q
        q0, lifted = self.q, self.lifted
        du = np.zeros(self._keep.size)
        du[self._keep] = x - self._x  # the values at q0 (Newton moves dependents only)
        dv = lifted.E @ du
        dv[self._idx] = 0.0  # set exactly below
        q = self._set(integrate(self.dm.augmented, q0, dv), x)
        new = self._correct(q)
        if new is None:
            self.fallbacks += 1
            self._slow.q, self._slow._x = q0, None
            full = np.full(self._keep.size, np.nan)
            full[self._keep] = x
            q = self._slow(full)
            new = self._correct(q)
            if new is None:
                raise ClosureError("the continuation closed the mechanism but the run-time "
                                   "corrector did not confirm it")
        self.lifted, self._x = new, x.copy()
        self._chart_at = None
        return self.q

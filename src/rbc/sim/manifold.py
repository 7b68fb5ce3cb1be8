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

from rbc.model.closure import CLOSURE_TOL, SolveStats
from rbc.model.compiled import CompiledModel, Partition
from rbc.model.solve import advance, module_plan, prescribable, solve


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
        # independent coordinates without a scalar value (a spherical joint's, e.g. Cassie's
        # achilles rods) are not prescribed: they keep their value from the last
        # configuration (zero predictor step)
        self._keep = np.array([prescribable(self.model, int(j)) for j in self.part.independent],
                              dtype=bool)
        self._idx = np.asarray(self.part.independent, dtype=np.int64)[self._keep]
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
        q, ok = advance(self.model, self.part, self.q, self._idx, x,
                         self._plan, CLOSURE_TOL, self.stats)
        if not ok:
            self.fallbacks += 1
            q = solve(self.model, self.part, dict(zip(self._idx.tolist(), x, strict=True)),
                      self.q).q
        self.q, self._x = q, x.copy()
        return q

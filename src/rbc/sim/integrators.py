"""Explicit Runge–Kutta steppers with local error estimates (the reduced backend's integrators).

The state is a plain vector ``y`` and the right-hand side one call ``rhs(y) -> ẏ`` per
stage (the efforts are held by the caller over each control period): that call is the
single place where the model is evaluated, so a compiled kernel can replace it without
touching the step logic.

* :data:`DOPRI5` — Dormand & Prince 5(4), 7 stages with the last one first-same-as-last
  (6 evaluations per accepted step), local extrapolation (the 5th-order solution is kept),
  error estimate ``h Σ (b_i − b̂_i) k_i``. Hairer, Nørsett & Wanner, *Solving Ordinary
  Differential Equations I*, 2nd ed., §II.5 (Table 5.2) and §II.4 (step-size control).
* :data:`RK4` — the classical 4-stage method at a fixed step. Its error estimate is the
  difference to the embedded third-order solution that replaces k₄ by ``k₅ = ẏ(y_{n+1})``
  in the weights (``b̂ = (1/6, 1/3, 1/3, 0, 1/6)``, which satisfies the four third-order
  conditions; k₅ is the next step's first stage, so the estimate costs nothing inside a
  control period): ``err = h (k₄ − k₅)/6``. It measures the third-order solution's error,
  an upper estimate of RK4's own local error: a warning means the step may be too long for
  the tolerance; silence means that even the third-order solution meets it.

Error norm (Hairer §II.4): ``‖err‖ = sqrt(mean((err_i / (atol + rtol·max(|y_i|, |y1_i|)))²))``;
a step is accepted when ``‖err‖ ≤ 1``; the next step is ``h·min(5, max(0.2, 0.9‖err‖^(−1/5)))``
(0.2 after a rejection at most 1).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

Rhs = Callable[[np.ndarray], np.ndarray]


@dataclass(frozen=True, eq=False)
class Tableau:
    """An explicit Runge–Kutta tableau with an embedded error estimate.

    Attributes:
        name: its command-line name; c: (s,) nodes; A: (s, s) strictly lower-triangular
        coefficients; b: (s,) weights of the propagated solution; e: (s,) error weights
        ``b − b̂`` (None: RK4's estimate from the next step's first stage); order: of the
        propagated solution; fsal: the last stage is ẏ at the new point.
    """

    name: str
    c: np.ndarray
    A: np.ndarray
    b: np.ndarray
    e: np.ndarray | None
    order: int
    fsal: bool


def _dopri5() -> Tableau:
    c = np.array([0, 1 / 5, 3 / 10, 4 / 5, 8 / 9, 1, 1])
    A = np.zeros((7, 7))
    A[1, 0] = 1 / 5
    A[2, :2] = [3 / 40, 9 / 40]
    A[3, :3] = [44 / 45, -56 / 15, 32 / 9]
    A[4, :4] = [19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729]
    A[5, :5] = [9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656]
    A[6, :6] = [35 / 384, 0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84]
    b = A[6].copy()
    b_hat = np.array([5179 / 57600, 0, 7571 / 16695, 393 / 640, -92097 / 339200, 187 / 2100,
                      1 / 40])
    return Tableau("dopri5", c, A, b, b - b_hat, 5, True)


DOPRI5 = _dopri5()
RK4 = Tableau("rk4", np.array([0, 0.5, 0.5, 1.0]),
              np.array([[0, 0, 0, 0], [0.5, 0, 0, 0], [0, 0.5, 0, 0], [0, 0, 1.0, 0]]),
              np.array([1 / 6, 1 / 3, 1 / 3, 1 / 6]), None, 4, False)
#: RK4's embedded third-order weights over its four stages and ẏ at the new point
#: (module docstring).
RK4_EMBEDDED = np.array([1 / 6, 1 / 3, 1 / 3, 0, 1 / 6])


def fused_weights(tab: Tableau) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(A (s, s), b (s,), e (s + 1,))`` of a tableau for a step in one kernel call
    (:func:`rbc.kernels.step.rk_step`): s stages from A, then ẏ at the new point; e weighs
    the s stages and that one — DOPRI5's own error weights (its last stage is that point:
    first same as last), RK4's ``b − b̂`` with b̂ :data:`RK4_EMBEDDED` (``h (k₄ − k₅)/6``)."""
    if tab.fsal:
        s = tab.c.size - 1
        return (np.ascontiguousarray(tab.A[:s, :s]), np.ascontiguousarray(tab.b[:s]),
                np.ascontiguousarray(tab.e))
    return (np.ascontiguousarray(tab.A), np.ascontiguousarray(tab.b),
            np.append(tab.b, 0.0) - RK4_EMBEDDED)

#: Step growth limits and safety factor of the controller (Hairer §II.4).
GROW, SHRINK, SAFETY = 5.0, 0.2, 0.9


class StepFailure(Exception):
    """A stage could not be evaluated (e.g. the closure cannot be reached there)."""


def error_norm(err: np.ndarray, y0: np.ndarray, y1: np.ndarray, rtol: float,
               atol: float | np.ndarray, within: int | None = None) -> tuple[float, int]:
    """``(‖err‖, index of the largest scaled component)`` (module docstring); the index among
    the first ``within`` components when given (e.g. the coordinates, not the works)."""
    scaled = err / (atol + rtol * np.maximum(np.abs(y0), np.abs(y1)))
    if scaled.size == 0:
        return 0.0, 0
    # add.reduce / n: numpy.mean's own sum (pairwise) and division, without its overhead
    return (float(np.sqrt(np.add.reduce(scaled * scaled) / scaled.size)),
            int(np.argmax(np.abs(scaled[:within]))) if within != 0 else 0)


def rk_step(rhs: Rhs, tab: Tableau, y: np.ndarray, h: float, k1: np.ndarray
            ) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
    """One step of a tableau from y with first stage k1 = rhs(y).

    Returns ``(y1, err, k_last)``: the new state, the error vector (None for RK4: the
    caller forms it from the next first stage) and, for FSAL tableaus, rhs(y1).

    Raises:
        StepFailure: a stage evaluation failed.
    """
    s = tab.c.size
    # zeros, not empty: the FSAL tableau's propagated weights include the last stage (with
    # weight 0) before it is evaluated, and 0 × an uninitialised NaN is NaN
    k = np.zeros((s, y.size))
    k[0] = k1
    last = s - 1 if tab.fsal else s
    for i in range(1, last):
        k[i] = rhs(y + h * (tab.A[i, :i] @ k[:i]))
    y1 = y + h * (tab.b @ k[: tab.b.size])
    if tab.fsal:
        k[s - 1] = rhs(y1)
        return y1, h * (tab.e @ k), k[s - 1]
    return y1, None, k[3]


@dataclass
class StepStats:
    """Counts of an integration: accepted and rejected steps, right-hand-side calls, and
    the largest estimated local error (scaled norm) with where it occurred."""

    accepted: int = 0
    rejected: int = 0
    evaluations: int = 0
    worst: float = 0.0
    worst_time: float = 0.0
    worst_component: int = -1
    exceeded: int = 0
    failures: list[str] = field(default_factory=list)


__all__ = ["DOPRI5", "GROW", "RK4", "RK4_EMBEDDED", "SAFETY", "SHRINK", "StepFailure",
           "StepStats", "Tableau", "error_norm", "fused_weights", "rk_step"]

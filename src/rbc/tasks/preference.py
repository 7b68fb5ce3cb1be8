"""The stroke-limit preference Φ(q): a smooth barrier on the normalised distance to the limits.

Every coordinate with two finite limits ``[lo_i, hi_i]`` (cylinder strokes and limited joint
angles, whether independent or dependent) contributes through its normalised position
``s_i = (x_i − lo_i) / (hi_i − lo_i)`` ∈ (0, 1):

    Φ(q) = Σ_i −log(4 s_i (1 − s_i)),        ∂Φ/∂x_i = (2 s_i − 1) / (s_i (1 − s_i) (hi_i − lo_i)).

Each term is 0 at mid-stroke, convex in s, grows without bound at either limit and is
symmetric (the logarithmic barrier of interior-point methods on both ends; Nocedal & Wright
2006, §19.6). Φ is dimensionless. In the independent speeds, ``Φ̇ = ∇Φ_uᵀ u`` with
``∇Φ_u = E[lim]ᵀ ∂Φ/∂x`` (the rows of the lift for the limited coordinates), which is how the
preference enters the velocity problem (:mod:`rbc.tasks.qp`): the term ``k_Φ ∇Φ_uᵀ u`` of
the cost. A coordinate at or beyond a limit gives Φ = ∞.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from rbc.model.compiled import CompiledModel
from rbc.model.solve import coordinate_value, rate_is_speed


@dataclass(frozen=True, eq=False)
class Strokes:
    """The limited coordinates of a model.

    Attributes:
        columns: (n_lim,) v-indices; names: their names; lower, upper: (n_lim,) limits.
    """

    columns: np.ndarray
    names: tuple[str, ...]
    lower: np.ndarray
    upper: np.ndarray

    def values(self, model: CompiledModel, q: np.ndarray) -> np.ndarray:
        """(n_lim,) the coordinates' values at q [rad or m]."""
        return np.array([coordinate_value(model, q, int(j)) for j in self.columns])

    def normalised(self, model: CompiledModel, q: np.ndarray) -> np.ndarray:
        """(n_lim,) ``s_i`` at q."""
        return (self.values(model, q) - self.lower) / (self.upper - self.lower)


@functools.lru_cache(maxsize=64)
def strokes(model: CompiledModel) -> Strokes:
    """The coordinates with two finite limits (cached per model)."""
    cols = [j for j in range(model.nv) if np.isfinite(model.lower[j])
            and np.isfinite(model.upper[j]) and model.upper[j] > model.lower[j]
            and rate_is_speed(model, j)]
    c = np.array(cols, dtype=np.int64)
    return Strokes(c, tuple(model.v_names[j] for j in cols), model.lower[c].copy(),
                   model.upper[c].copy())


def phi(model: CompiledModel, q: np.ndarray) -> float:
    """Φ(q) (dimensionless; ∞ at or beyond a limit)."""
    s = strokes(model).normalised(model, q)
    inside = (s > 0.0) & (s < 1.0)
    if not np.all(inside):
        return float("inf")
    return float(-np.log(4.0 * s * (1.0 - s)).sum())


def gradient(model: CompiledModel, q: np.ndarray, E: np.ndarray) -> np.ndarray:
    """``∇Φ_u = E[lim]ᵀ ∂Φ/∂x`` (n_u,) at q with the lift E (nv, n_u).

    Coordinates at or beyond a limit are excluded (their barrier is infinite; the stroke
    bounds of :mod:`rbc.tasks.bounds` keep the motion inside).
    """
    st = strokes(model)
    if st.columns.size == 0:
        return np.zeros(E.shape[1])
    s = st.normalised(model, q)
    inside = (s > 0.0) & (s < 1.0)
    dx = np.zeros_like(s)
    si = s[inside]
    dx[inside] = (2.0 * si - 1.0) / (si * (1.0 - si) * (st.upper - st.lower)[inside])
    return E[st.columns].T @ dx

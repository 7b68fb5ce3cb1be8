"""Kinematic bounds of the velocity problem, ``lower ≤ A u ≤ upper`` in the independent speeds.

**Actuator speed bounds.** For every actuator with a ``speed_limit`` ℓ̇_max: ``|ℓ̇| = |L u| ≤
σ ℓ̇_max`` (L = J_ℓ E the actuator map, σ a scale, 1 by default). The issue's one-sided form
``A = col(L, −L)``, ``b = col(ℓ̇⁺, −ℓ̇⁻)`` is written as one two-sided row per actuator.

**Stroke bounds** (velocity dampers; Faverjon & Tournassoud 1987, Kanoun et al. 2011): every
coordinate with two finite limits may approach a limit no faster than exponentially,

    −γ (x_i − lo_i) ≤ ẋ_i = E[i] u ≤ γ (hi_i − x_i),     γ = :data:`STROKE_RATE`,

so a resolved motion never leaves the limits in continuous time (the remaining distance
decays at most like e^{−γt}); the preference Φ (:mod:`rbc.tasks.preference`) keeps strokes
away from the limits before these rows ever become active.

Each row has a name that says what it bounds and its value, used by
:class:`~rbc.tasks.qp.TaskInfeasible` to name the bounds that block a task.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rbc.model.compiled import CompiledModel
from rbc.model.interfaces import actuator_map, port_unit
from rbc.tasks.preference import strokes

#: Stroke damper rate γ [1/s]: within a distance d of a limit a coordinate may move toward it
#: at most γ d per second; 10 s⁻¹ leaves a cylinder at 0.3 m/s free until 3 cm from its end.
STROKE_RATE = 10.0


@dataclass(frozen=True, eq=False)
class Bounds:
    """Rows ``lower ≤ A u ≤ upper``.

    Attributes:
        A: (k, n_u); lower, upper: (k,) (±inf where a side is open); names: (k,) e.g.
        ``speed of boom_cylinder (|ℓ̇| ≤ 0.3 m/s)``; kinds: (k,) ``speed`` | ``stroke``.
    """

    A: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    names: tuple[str, ...]
    kinds: tuple[str, ...]

    @property
    def size(self) -> int:
        return len(self.names)

    def violation(self, u: np.ndarray) -> np.ndarray:
        """(k,) how far ``A u`` lies outside its interval (0 inside)."""
        y = self.A @ u
        return np.maximum(0.0, np.maximum(y - self.upper, self.lower - y))


def kinematic_bounds(model: CompiledModel, q: np.ndarray, E: np.ndarray, *,
                     speed_scale: float = 1.0, stroke_rate: float = STROKE_RATE) -> Bounds:
    """Speed and stroke bounds at q with the lift E (nv, n_u) (module docstring).

    Args:
        speed_scale: σ, a factor on every actuator's ``speed_limit`` (> 0).
        stroke_rate: γ [1/s]; ``inf`` drops the stroke rows.
    """
    rows, lo, hi, names, kinds = [], [], [], [], []
    L = actuator_map(model, E, q)
    for i, a in enumerate(model.record.actuators):
        if a.speed_limit is None:
            continue
        s = speed_scale * a.speed_limit
        rows.append(L[i])
        lo.append(-s)
        hi.append(s)
        names.append(f"speed of {a.name} (|ℓ̇| ≤ {s:.4g} {port_unit(model, i)[0]}/s)")
        kinds.append("speed")
    if np.isfinite(stroke_rate):
        st = strokes(model)
        x = st.values(model, q)
        for n, j in enumerate(st.columns):
            rows.append(E[j])
            lo.append(-stroke_rate * (x[n] - st.lower[n]))
            hi.append(stroke_rate * (st.upper[n] - x[n]))
            unit = "m" if model.kinds[int(model.v_edge[j])].type == "prismatic" else "rad"
            names.append(f"stroke of {st.names[n]} ([{st.lower[n]:.4g}, {st.upper[n]:.4g}] "
                         f"{unit})")
            kinds.append("stroke")
    A = np.array(rows, dtype=float).reshape(len(rows), E.shape[1])
    return Bounds(A, np.array(lo, dtype=float), np.array(hi, dtype=float), tuple(names),
                  tuple(kinds))

"""The inelastic impact map of a support mode switch (DESIGN.md §10; docs/supports.md).

When supports become active (a touchdown) the tree speeds ``v⁻`` just before need not be
admissible in the new mode. rbc's convention is the **perfectly plastic (zero-restitution)
rigid impact on the new mode's constraints**: the impulse acts along the constraint
directions only, so the generalized momentum is kept in every admissible direction,

    E_Tᵀ M_T (v⁺ − v⁻) = 0,   v⁺ = E u⁺   ⇒   M_r u⁺ = E_Tᵀ M_T v_T⁻,

with E the new mode's lift at the impact configuration and ``M_r = E_Tᵀ M_T E_T``. So v⁺ is
the M-orthogonal projection of v⁻ onto the admissible speeds: the kinetic energy drops by
``½ (v⁻ − v⁺)ᵀ M_T (v⁻ − v⁺) ≥ 0`` and is unchanged when v⁻ is already admissible — a
lift-off (supports released) transfers the state exactly. (Hurmuzlu & Marghitu, "Rigid body
collisions of planar kinematic chains with multiple contact points", IJRR 1994; Grizzle,
Abba, Plestan, IEEE TAC 2001, for walking robots.) The impulse is
``Λ = M_T (v⁺ − v⁻)`` (tree efforts × s).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rbc.model.compiled import Partition
from rbc.model.dynamics import DynamicsData, DynamicsModel, lift_at, tree_terms


@dataclass(frozen=True, eq=False)
class Impact:
    """The outcome of an impact map.

    Attributes:
        u: (n_u,) independent speeds after the impact; v: (nv,) all speeds ``E u``.
        impulse: (nv_tree,) ``M_T (v_T⁺ − v_T⁻)`` [N·m·s | N·s].
        kinetic_before, kinetic_after: ``½ vᵀ M_T v`` [J] (armature included).
    """

    u: np.ndarray
    v: np.ndarray
    impulse: np.ndarray
    kinetic_before: float
    kinetic_after: float

    @property
    def loss(self) -> float:
        """Kinetic energy absorbed by the impact [J] (≥ 0)."""
        return self.kinetic_before - self.kinetic_after


def impact_map(dm: DynamicsModel, data: DynamicsData, part: Partition, q: np.ndarray,
               v_tree: np.ndarray) -> Impact:
    """Post-impact speeds in the mode of ``dm``/``part`` from pre-impact tree speeds.

    Args:
        dm, data: the new mode's dynamics model (the base model plus the active supports'
            closures, :func:`rbc.model.modes.model_for`) and its scratch data.
        part: the new mode's partition.
        q: (nq,) closed configuration of the new mode's model at the impact.
        v_tree: (nv_tree,) tree speeds just before the impact (rbc order).

    Raises:
        numpy.linalg.LinAlgError: singular reduced inertia.
    """
    k = dm.kin
    nt = k.nv_tree
    L = lift_at(dm, data, part, q)
    ET = L.E[:nt]
    M = tree_terms(dm, data, q, np.zeros(k.nv)).M
    vm = np.asarray(v_tree, dtype=float)
    Mr = ET.T @ M @ ET
    u = np.linalg.solve(Mr, ET.T @ (M @ vm)) if Mr.size else np.zeros(0)
    v = L.E @ u
    return Impact(u, v, M @ (v[:nt] - vm), 0.5 * float(vm @ M @ vm),
                  0.5 * float(v[:nt] @ M @ v[:nt]))

"""Measurements on a Pinocchio tree model (shared by the reduced and Pinocchio backends):
energies, task positions and the world-frame gaps between constraint anchors.
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin

from rbc.ir import spatial as sp
from rbc.model.tree import TreeModel


class TreeProbe:
    """Energies and task positions of a tree model in Pinocchio coordinates.

    Args:
        tree: the tree model (armature = rotor inertia included).
        tasks: ``((name, body index, T_body_task), …)``.
        data: a Data of ``tree.model`` to share (the backend's: every probe call recomputes
            what it reads); None creates one (≈ 32 nv³ bytes).
    """

    def __init__(self, tree: TreeModel, tasks: tuple[tuple[str, int, pin.SE3], ...],
                 data: pin.Data | None = None) -> None:
        self.tree = tree
        self.data = tree.model.createData() if data is None else data
        self.tasks = tasks
        # the bodies alone (the same structure: tree.model's data serves it)
        self._armature = np.array(tree.model.armature)
        self._bodies = pin.Model(tree.model)
        self._bodies.armature = np.zeros(tree.model.nv)

    def measure(self, q: np.ndarray, v: np.ndarray
                ) -> tuple[float, float, dict[str, np.ndarray]]:
        """``(½ vᵀ M v [J], gravitational potential [J], {task: (3,) world position [m]})`` at
        Pinocchio configuration q and speeds v, from one forward-kinematics pass
        (the bodies' ``computeKineticEnergy`` plus the armature's ½ Σ α v², which Pinocchio
        4.1 counts for some joint types only); the frame placements are left updated
        (:meth:`anchor_gaps` reads them)."""
        m, d = self._bodies, self.data
        pin.forwardKinematics(m, d, q, v)
        kinetic = float(pin.computeKineticEnergy(m, d)) + 0.5 * float(self._armature @ (v * v))
        potential = float(pin.computePotentialEnergy(m, d))
        pin.updateFramePlacements(m, d)
        return kinetic, potential, {name: np.array((d.oMf[int(self.tree.body_frame[b])]
                                                    * T).translation)
                                    for name, b, T in self.tasks}

    def momentum(self, q: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(p, L)``: linear momentum [N·s] and angular momentum about the centre of mass
        [N·m·s], world axes, of the bodies (Pinocchio's centroidal momentum; armature and
        rotor inertia are not bodies and do not count)."""
        h = pin.computeCentroidalMomentum(self.tree.model, self.data, q, v)
        return np.array(h.linear), np.array(h.angular)

    def anchor_gaps(self, specs) -> np.ndarray:
        """World distances [m] between the anchors of each constraint spec (after
        :meth:`measure` or any forward kinematics at the current q)."""
        d = self.data
        return np.array([np.linalg.norm((d.oMi[s.joint1] * s.placement1).translation
                                        - (d.oMi[s.joint2] * s.placement2).translation)
                         for s in specs])


def record_tasks(kin) -> tuple[tuple[str, int, pin.SE3], ...]:
    """``((name, body index, T_body_task), …)`` of the record's tasks."""
    idx = kin.record.body_index()
    return tuple((t.name, idx[t.body], sp.se3_from_pose(t.pose)) for t in kin.record.tasks)

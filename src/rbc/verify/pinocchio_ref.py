"""Reference forward dynamics: Pinocchio's ``constraintDynamics`` (DESIGN.md §6).

The tree model and one or two ``pin.RigidConstraintModel`` per cut joint come from the
Pinocchio export (:func:`rbc.backends.pinocchio.pinocchio_model`, the same models
:func:`rbc.backends.pinocchio.load` returns for a bundle). Mapping (frames ``Jb = A_e`` on
body b and ``Jc = B_e`` on body c; LOCAL reference frame, no Baumgarte correction):

=========  ===========================================================  ====  ====
cut type   Pinocchio constraints                                         rows  rank
=========  ===========================================================  ====  ====
spherical  ``CONTACT_3D`` between the origins of Jb and Jc                3     3
fixed      ``CONTACT_6D`` between Jb and Jc                              6     6
revolute   two ``CONTACT_3D``: the origins, and the points ``L·a`` on    6     5
           the axis in both frames (L: the partition's length scale)
other      not supported (``PinocchioExportError``: the check reports it) —     —
=========  ===========================================================  ====  ====

Pinocchio 4.1 has no per-axis row selection on ``RigidConstraintModel``
(``pin.ConstraintSelectionType`` only offers CURRENT/MAXIMAL Jacobian sparsity, and the
``FrameAnchorConstraintModel``/``PointAnchorConstraintModel`` of the new constraint API are
full anchors that ``constraintDynamics`` does not accept). The revolute pair therefore has
one redundant row (along the axis) and planar loops three more per loop; Pinocchio's
proximal solver (Carpentier, Budhiraja, Mansard, "Proximal and sparse resolution of
constrained dynamic equations", RSS 2021) handles the rank deficiency with ``mu > 0``; its
iterations converge to the exact solution, the measured deviation is in docs/dynamics.md.

The state is taken as given: ``(q, v)`` with v over the tree coordinates and the tree efforts
(gravity excluded — Pinocchio adds it). Efforts on cut coordinates have no place in the tree
model; a state with a nonzero one is refused (:class:`CutEffortError`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from rbc.backends.pinocchio import PinocchioModel, constraint_dynamics, pinocchio_model
from rbc.model.compiled import CompiledModel, Partition


class CutEffortError(ValueError):
    """An effort acts on a cut-joint coordinate, which the Pinocchio tree cannot carry."""


@dataclass(eq=False)
class PinocchioReference:
    """The exported Pinocchio model with its per-state data."""

    pmod: PinocchioModel
    data: pin.Data
    cdatas: object

    @classmethod
    def build(cls, kin: CompiledModel, part: Partition) -> PinocchioReference:
        """Tree model and constraints (raises ``PinocchioExportError`` for unsupported cuts)."""
        pmod = pinocchio_model(kin, part)
        data = pmod.tree.model.createData()
        cdatas = pmod.constraint_datas()
        pin.initConstraintDynamics(pmod.tree.model, data, pmod.constraints, cdatas)
        return cls(pmod, data, cdatas)

    def accelerations(self, q: np.ndarray, v: np.ndarray, tau: np.ndarray) -> np.ndarray:
        """Tree accelerations a* (nv_tree,) in rbc order.

        Args:
            q: (nq,) configuration; v: (nv,) speeds; tau: (nv,) generalized efforts over all
                coordinates, gravity excluded [N·m | N].

        Raises:
            CutEffortError: a nonzero effort on a cut coordinate.
        """
        nt = self.pmod.kin.nv_tree
        if np.any(tau[nt:]):
            raise CutEffortError("efforts on cut-joint coordinates cannot be applied to "
                                 "Pinocchio's tree model")
        return constraint_dynamics(self.pmod, self.data, self.cdatas, q, v, tau[:nt])

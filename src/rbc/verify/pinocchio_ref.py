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

**Couplings.** ``constraintDynamics`` has no joint-coupling constraint, so linear couplings
are added by Gauss's principle on top of its solution: the map τ ↦ a of
``constraintDynamics`` is affine, ``a(τ) = a₀ + P τ`` with P the constrained inverse inertia
(``P = Z (Zᵀ M Z)⁻¹ Zᵀ``), and the coupled accelerations are
``a = a₀ + P Gᵀ λ`` with ``(G P Gᵀ) λ = −γ_c − G a₀`` (the extra rows ``G a = −γ_c`` of
:func:`rbc.verify.kkt50.coupling_rows`, built from the tree's frame Jacobians in 50 digits,
never from our lift). The columns ``P Gᵀ`` are obtained from ``constraintDynamics`` itself, as the
responses to the efforts ``s·g_cᵀ`` (``a(τ + s g) − a(τ) = s P g``, exact up to the
solver's tolerance for s scaled to the efforts).

The state is taken as given: ``(q, v)`` with v over the tree coordinates and the tree efforts
(gravity excluded — Pinocchio adds it).

**Efforts on cut joints** (an actuated joint that had to be cut, or was declared cut) have
no tree coordinate. They act as the joint's equivalent wrench pair on its two bodies, which
in tree coordinates is ``τ_T += K_eᵀ τ_e`` with the rate rows ``q̇_e = K_e v_T``,
``K_e = S_e⁺ J_rel`` of :func:`rbc.verify.kkt50.cut_rows` (Pinocchio frame Jacobians of
the joint frames Jb and Jc, never our lift): virtual power ``τ_eᵀ q̇_e = (K_eᵀ τ_e)ᵀ v_T``.
For a revolute cut this is the torque ``τ_e a`` on the child and ``−τ_e a`` on the parent.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from rbc.backends.pinocchio import PinocchioModel, constraint_dynamics, pinocchio_model
from rbc.model.compiled import CompiledModel, Partition
from rbc.model.dynamics import PD_RTOL, DynamicsData, DynamicsModel
from rbc.model.tree import joint_space_inertia
from rbc.verify import kkt50


class SingularTreeInertia(ValueError):
    """The tree inertia M_T is singular (a tree coordinate moves only massless bodies):
    ``constraintDynamics`` factors M_T and has no answer there, although the reduced
    inertia may be positive definite (massless helper links closed by a cut joint)."""


def check_tree_inertia(kin: CompiledModel, pmod: PinocchioModel, q: np.ndarray) -> None:
    """Raise :class:`SingularTreeInertia` naming the tree coordinates of M_T's null
    direction when ``λ_min(M_T) ≤ PD_RTOL·λ_max`` at q (the reduced inertia's rule)."""
    t = pmod.tree
    M = t.matrix_rbc(joint_space_inertia(t.model, t.model.createData(),
                                         t.q_pin(q[: kin.nq_tree])))
    if M.size == 0:
        return
    w, V = np.linalg.eigh(M)
    if w[0] > PD_RTOL * max(abs(w[-1]), 1e-300):
        return
    names = [kin.v_names[j] for j in range(kin.nv_tree) if abs(V[j, 0]) > 0.1]
    raise SingularTreeInertia(
        f"the tree inertia M_T is singular (smallest eigenvalue {w[0]:.3g}; tree "
        f"coordinates {', '.join(names)} move only massless bodies), which "
        "pinocchio.constraintDynamics cannot factor")


@dataclass(eq=False)
class PinocchioReference:
    """The exported Pinocchio model with its per-state data."""

    pmod: PinocchioModel
    data: pin.Data
    cdatas: object
    coupled: tuple[DynamicsModel, DynamicsData] | None = None  # cut and coupling rows

    @classmethod
    def build(cls, kin: CompiledModel, part: Partition) -> PinocchioReference:
        """Tree model and constraints.

        Raises:
            PinocchioExportError: a cut joint without a Pinocchio constraint mapping.
            SingularTreeInertia: M_T singular at the partition's reference configuration.
        """
        pmod = pinocchio_model(kin, part)
        check_tree_inertia(kin, pmod, part.q_ref)
        data = pmod.tree.model.createData()
        cdatas = pmod.constraint_datas()
        pin.initConstraintDynamics(pmod.tree.model, data, pmod.constraints, cdatas)
        coupled = None
        if kin.coupling_rows or kin.n_chords:
            dm = DynamicsModel(kin, pmod.tree)
            coupled = (dm, DynamicsData.of(dm))
        return cls(pmod, data, cdatas, coupled)

    def accelerations(self, q: np.ndarray, v: np.ndarray, tau: np.ndarray) -> np.ndarray:
        """Tree accelerations a* (nv_tree,) in rbc order.

        Args:
            q: (nq,) configuration; v: (nv,) speeds; tau: (nv,) generalized efforts over all
                coordinates, gravity excluded [N·m | N]; those on cut coordinates act
                through the cut joints' wrench pairs (module docstring).
        """
        kin = self.pmod.kin
        nt = kin.nv_tree
        tau_t = np.array(tau[:nt], dtype=float)
        rows = None
        if np.any(tau[nt:]) and self.coupled is not None:
            dm, dd = self.coupled
            rows = kkt50.cut_rows(dm, dd, q)
            tau_t += rows.K.T @ np.asarray(tau, dtype=float)[rows.cut_cols]
        a0 = constraint_dynamics(self.pmod, self.data, self.cdatas, q, v, tau_t)
        if self.coupled is None or not kin.coupling_rows:
            return a0
        dm, dd = self.coupled
        rows = kkt50.cut_rows(dm, dd, q) if rows is None else rows
        G, gamma = kkt50.coupling_rows(dm, rows, kkt50.cut_drift(dm, dd, q, v)[1], v)
        # response to s·g_cᵀ, s scaled so the probe effort is of the size of τ (module doc)
        scale = max(1.0, float(np.abs(tau_t).max(initial=0.0)))
        PG = np.empty((nt, G.shape[0]))
        for c, g in enumerate(G):
            s = scale / max(float(np.abs(g).max()), 1e-300)
            PG[:, c] = (constraint_dynamics(self.pmod, self.data, self.cdatas, q, v,
                                            tau_t + s * g) - a0) / s
        lam = np.linalg.lstsq(G @ PG, -gamma - G @ a0, rcond=None)[0]
        return a0 + PG @ lam

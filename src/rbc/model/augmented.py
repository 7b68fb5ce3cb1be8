"""Closure geometry from Pinocchio: the spanning tree plus one branch per cut joint.

A second algorithm for the closure residual, its Jacobian and its velocity product, used at
run time where speed matters (reduced dynamics, simulation) and cross-checked against the
path-based evaluation of :mod:`rbc.model.kinematics` in the tests.

For each chord e = (b, c) the tree model gets a branch: the cut joint itself, hung from body
b at ``A_e``, ending in the frame ``F_chord = T_w_b·A_e·Q_e(q_e)``; on body c a frame
``F_tree = T_w_c·B_e``. Both are the cut joint's child frame Jc, one reached through the cut
joint and one through the tree. With ``D = F_tree·F_chord⁻¹``,

    Δ_e = T_b_c(tree)·X_e⁻¹ = T_b_w · D · T_w_b,      ρ_e = log Δ_e.

A first-order motion with world spatial twists ζ (Pinocchio WORLD Jacobians J_t, J_c, J_b of
F_tree, F_chord and body b) moves D to ``exp(ζ_t − Ad(D) ζ_c) D`` and T_w_b to
``exp(ζ_b) T_w_b``, so ``Δ' = exp(η) Δ`` with

    η = Ad(T_b_w) [ (J_t − J_b) − Ad(D) (J_c − J_b) ] δv,    C_e = J_l(ρ_e)⁻¹ η/δv.

On the closure manifold (D ≡ I, twists equal) the residual's second derivative is
``C v̇ + Ċ v`` with ``Ċ v = J_l⁻¹ Ad(T_b_w) (α_t − α_c)``, α the world spatial accelerations
of the two frames at zero joint acceleration (Pinocchio's ``forwardKinematics(q, v, 0)``).
All frame Jacobians and accelerations come from one C++ pass each (Featherstone 2008, §4;
Carpentier et al., "The Pinocchio C++ library", SII 2019).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from rbc.ir import spatial as sp
from rbc.ir.joints import pinocchio_placements
from rbc.model.compiled import CompiledModel
from rbc.model.tree import TreeModel


@dataclass(frozen=True, eq=False)
class AugmentedTree:
    """The tree model plus one branch per cut joint (chord), with the frames to compare.

    Attributes:
        kin: the compiled model.
        model: Pinocchio model (tree joints first, then one joint per chord with coordinates).
        q_perm, v_perm: rbc q (nq,) / v (nv,) → Pinocchio order of this model.
        tree_frame, chord_frame, body_frame: per chord the frame ids of F_tree, F_chord and
            of body b.
    """

    kin: CompiledModel
    model: pin.Model
    q_perm: np.ndarray
    v_perm: np.ndarray
    tree_frame: tuple[int, ...]
    chord_frame: tuple[int, ...]
    body_frame: tuple[int, ...]

    @classmethod
    def build(cls, kin: CompiledModel, tree: TreeModel) -> AugmentedTree:
        """Add a branch per chord to a copy of the tree model."""
        pm = pin.Model(tree.model)
        q_perm, v_perm = list(tree.q_perm), list(tree.v_perm)
        joints = {j.name: j for j in kin.record.joints}
        tree_f, chord_f, body_f = [], [], []
        for e in kin.chord_edges:
            joint = joints[kin.edge_names[e]]
            b, c = int(kin.parent[e]), int(kin.child[e])
            fb = pm.frames[int(tree.body_frame[b])]
            fc = pm.frames[int(tree.body_frame[c])]
            A_R0, B_R0 = pinocchio_placements(joint)
            kind = kin.kinds[e]
            B = sp.se3_from_pose(joint.child_frame)
            tree_f.append(pm.addFrame(pin.Frame(f"{joint.name}.tree", fc.parentJoint,
                                                fc.placement * B, pin.FrameType.OP_FRAME)))
            body_f.append(int(tree.body_frame[b]))
            if kind.nv:
                jid = pm.addJoint(fb.parentJoint, kind.pinocchio_model(), fb.placement * A_R0,
                                  f"{joint.name}.branch")
                # Jc = (joint frame)·R0⁻¹ since Q = R0·Q_pin·R0⁻¹
                chord_f.append(pm.addFrame(pin.Frame(f"{joint.name}.chord", jid,
                                                     kind.alignment().inverse(),
                                                     pin.FrameType.OP_FRAME)))
                qs, vs = kin.q_slice(e), kin.v_slice(e)
                q_perm += [qs.start + i for i in (kind._q_pin or range(kind.nq))]
                v_perm += [vs.start + i for i in (kind._v_pin or range(kind.nv))]
            else:
                A = sp.se3_from_pose(joint.parent_frame)
                chord_f.append(pm.addFrame(pin.Frame(f"{joint.name}.chord", fb.parentJoint,
                                                     fb.placement * A, pin.FrameType.OP_FRAME)))
        return cls(kin, pm, np.array(q_perm, dtype=np.int64), np.array(v_perm, dtype=np.int64),
                   tuple(tree_f), tuple(chord_f), tuple(body_f))


@dataclass(frozen=True, eq=False)
class AugmentedGeometry:
    """ρ and C at q from the augmented tree, plus what Ċv needs (same interface as
    :class:`rbc.model.kinematics.ClosureGeometry`).

    Attributes:
        q: (nq,); rho: (m,); C: (m, nv) in rbc column order.
    """

    aug: AugmentedTree
    data: pin.Data
    q: np.ndarray
    rho: np.ndarray
    C: np.ndarray
    left: tuple[np.ndarray, ...]  # per chord J_l⁻¹·Ad(T_b_w) (6, 6)

    def velocity_product(self, model: CompiledModel, v: np.ndarray) -> np.ndarray:
        """``Ċ v`` (m,): ``J_l⁻¹ Ad(T_b_w) (α_t − α_c)`` per chord; couplings are linear."""
        aug = self.aug
        pm, d = aug.model, self.data
        pin.forwardKinematics(pm, d, self.q[aug.q_perm], v[aug.v_perm], np.zeros(pm.nv))
        out = np.zeros(self.rho.size)
        world = pin.ReferenceFrame.WORLD
        for i, L in enumerate(self.left):
            at = pin.getFrameAcceleration(pm, d, aug.tree_frame[i], world).vector
            ac = pin.getFrameAcceleration(pm, d, aug.chord_frame[i], world).vector
            out[6 * i: 6 * i + 6] = L @ sp.from_pinocchio_motion(at - ac)
        return out


def augmented_geometry(aug: AugmentedTree, data: pin.Data, q: np.ndarray) -> AugmentedGeometry:
    """Residual and closure Jacobian (rbc order) at q by one Pinocchio kinematics pass."""
    kin, pm = aug.kin, aug.model
    qp = np.asarray(q)[aug.q_perm]
    pin.computeJointJacobians(pm, data, qp)
    pin.updateFramePlacements(pm, data)
    m = kin.n_rows
    rho, C = np.zeros(m), np.zeros((m, kin.nv))
    world = pin.ReferenceFrame.WORLD
    left = []
    for i in range(kin.n_chords):
        T_wb = data.oMf[aug.body_frame[i]]
        D = data.oMf[aug.tree_frame[i]] * data.oMf[aug.chord_frame[i]].inverse()
        delta = T_wb.inverse() * D * T_wb
        rho[6 * i: 6 * i + 6] = sp.log6(delta)
        Jt, Jc, Jb = (pin.getFrameJacobian(pm, data, f, world)
                      for f in (aug.tree_frame[i], aug.chord_frame[i], aug.body_frame[i]))
        # J_l⁻¹ Ad(T_b_w), then the twist difference, all in Pinocchio order; one re-ordering
        L_pin = pin.Jlog6(delta) @ delta.inverse().action @ T_wb.inverse().action
        L = sp.from_pinocchio_operator(L_pin)
        left.append(L)
        C[6 * i: 6 * i + 6, aug.v_perm] = sp.from_pinocchio_motion(
            L_pin @ ((Jt - Jb) - D.action @ (Jc - Jb)))
    base = 6 * kin.n_chords
    for c, terms in enumerate(kin.coupling_rows):
        rho[base + c] = sum(coef * q[qi] for _, qi, coef in terms) + kin.coupling_offset[c]
        for vi, _, coef in terms:
            C[base + c, vi] += coef
    return AugmentedGeometry(aug, data, np.asarray(q, dtype=float), rho, C, tuple(left))

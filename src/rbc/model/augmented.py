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

**Evaluation cost.** A WORLD frame Jacobian is the world joint Jacobian ``data.J`` restricted
to the columns of the frame's support, so ``J_t − J_b`` and ``J_c − J_b`` are ``data.J``
times a constant column mask in {−1, 0, 1} per chord, and every chord's 6 × nv block is one
batched product: with ``P₁ = J_l⁻¹ Ad(T_b_w)`` and ``P₂ = P₁ Ad(D)``,

    η = P₁ (J ∘ m_tb) − P₂ (J ∘ m_cb).

Only the per-chord SE(3) algebra (a few 6 × 6 operators) stays in a Python loop; it runs
on Pinocchio's C++ SE3 objects. Couplings are constant linear rows, precomputed.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from rbc.ir import spatial as sp
from rbc.ir.joints import pinocchio_placements
from rbc.model.compiled import CompiledModel
from rbc.model.couplings import form_terms
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
        mask_tb, mask_cb: (n_chords, 1, model.nv) support indicators of F_tree minus body b
            and of F_chord minus body b (so ``J_t − J_b = data.J ∘ mask_tb``).
        coupling_q: (n_couplings, nq) coefficients of the linear coupling rows on q;
        coupling_C: (n_couplings, nv) the same rows on v (constant); nonlinear couplings
            have zero rows here and are evaluated per call (:mod:`rbc.model.couplings`).
        nonlinear: indices of the nonlinear couplings.
    """

    kin: CompiledModel
    model: pin.Model
    q_perm: np.ndarray
    v_perm: np.ndarray
    tree_frame: tuple[int, ...]
    chord_frame: tuple[int, ...]
    body_frame: tuple[int, ...]
    mask_tb: np.ndarray
    mask_cb: np.ndarray
    coupling_q: np.ndarray
    coupling_C: np.ndarray
    nonlinear: tuple[int, ...] = ()

    @functools.cached_property
    def v_identity(self) -> bool:
        """True when this model orders velocities as rbc does (no column re-ordering)."""
        return bool(np.array_equal(self.v_perm, np.arange(self.kin.nv)))

    @functools.cached_property
    def chord_triples(self) -> tuple[tuple[int, int, int], ...]:
        """Per chord the frame ids (body b, F_tree, F_chord)."""
        return tuple(zip(self.body_frame, self.tree_frame, self.chord_frame, strict=True))

    @classmethod
    def build(cls, kin: CompiledModel, tree: TreeModel) -> AugmentedTree:
        """Add a branch per chord to a copy of the tree model."""
        pm = pin.Model(tree.model)
        q_perm, v_perm = list(tree.q_perm), list(tree.v_perm)
        tree_f, chord_f, body_f = [], [], []

        def frame_id(v: int) -> int:  # the world is Pinocchio's frame 0 (universe)
            return 0 if v == kin.n_bodies else int(tree.body_frame[v])

        for e in kin.chord_edges:
            joint = kin.edge_joints[e]
            b, c = int(kin.parent[e]), int(kin.child[e])
            fb = pm.frames[frame_id(b)]
            fc = pm.frames[frame_id(c)]
            A_R0, B_R0 = pinocchio_placements(joint)
            kind = kin.kinds[e]
            B = sp.se3_from_pose(joint.child_frame)
            tree_f.append(pm.addFrame(pin.Frame(f"{joint.name}.tree", fc.parentJoint,
                                                fc.placement * B, pin.FrameType.OP_FRAME)))
            body_f.append(frame_id(b))
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

        def support(frame: int) -> np.ndarray:
            out = np.zeros(pm.nv)
            for j in pm.supports[pm.frames[frame].parentJoint]:
                if j > 0:
                    out[pm.joints[j].idx_v: pm.joints[j].idx_v + pm.joints[j].nv] = 1.0
            return out

        n = len(tree_f)
        mask_tb = np.array([support(t) - support(b) for t, b in zip(tree_f, body_f,
                                                                     strict=True)])
        mask_cb = np.array([support(c) - support(b) for c, b in zip(chord_f, body_f,
                                                                     strict=True)])
        coupling_q = np.zeros((len(kin.coupling_rows), kin.nq))
        coupling_C = np.zeros((len(kin.coupling_rows), kin.nv))
        for c, form in enumerate(kin.coupling_forms):
            if form.linear:
                np.add.at(coupling_q[c], list(form.q_index), form.coef)
                np.add.at(coupling_C[c], list(form.v_index), form.coef)
        nonlinear = tuple(c for c, f in enumerate(kin.coupling_forms) if not f.linear)
        return cls(kin, pm, np.array(q_perm, dtype=np.int64), np.array(v_perm, dtype=np.int64),
                   tuple(tree_f), tuple(chord_f), tuple(body_f),
                   mask_tb.reshape(n, 1, pm.nv), mask_cb.reshape(n, 1, pm.nv),
                   coupling_q, coupling_C, nonlinear)


def integrate(aug: AugmentedTree, q: np.ndarray, v: np.ndarray) -> np.ndarray:
    """``q ⊕ v`` (nq,) by Pinocchio's ``integrate`` on the augmented model (every rbc
    coordinate is a tree or branch coordinate; same joint maps as
    :meth:`CompiledModel.integrate`, one C++ call instead of a loop over edges)."""
    out = np.empty(aug.kin.nq)
    out[aug.q_perm] = pin.integrate(aug.model, np.asarray(q, dtype=float)[aug.q_perm],
                                    np.asarray(v, dtype=float)[aug.v_perm])
    return out


#: Row order of a chord's 6 rows: rbc (angular first) from Pinocchio (linear first).
_SWAP = np.array(sp.PIN_MOTION_ORDER)


@dataclass(frozen=True, eq=False)
class AugmentedGeometry:
    """ρ and C at q from the augmented tree, plus what Ċv needs (same interface as
    :class:`rbc.model.kinematics.ClosureGeometry`).

    Attributes:
        q: (nq,); rho: (m,); C: (m, nv) in rbc column order.
        left: (n_chords, 6, 6) per chord ``J_l⁻¹·Ad(T_b_w)`` from Pinocchio-ordered
            (linear-first) twists to rbc-ordered (angular-first) residual rows.
    """

    aug: AugmentedTree
    data: pin.Data
    q: np.ndarray
    rho: np.ndarray
    C: np.ndarray
    left: np.ndarray

    def velocity_product(self, model: CompiledModel, v: np.ndarray) -> np.ndarray:
        """``Ċ v`` (m,): ``J_l⁻¹ Ad(T_b_w) (α_t − α_c)`` per chord; ``vᵀ D²γ v`` per
        nonlinear coupling (0 for linear ones)."""
        aug = self.aug
        pm, d = aug.model, self.data
        pin.forwardKinematics(pm, d, self.q[aug.q_perm], v[aug.v_perm], np.zeros(pm.nv))
        out = np.zeros(self.rho.size)
        n = len(aug.tree_frame)
        if n:
            world = pin.ReferenceFrame.WORLD
            acc = np.array([pin.getFrameAcceleration(pm, d, f, world).vector
                            for f in aug.tree_frame + aug.chord_frame])
            out[: 6 * n] = (self.left @ (acc[:n] - acc[n:])[:, :, None]).ravel()
        for c in aug.nonlinear:
            out[6 * n + c] = form_terms(model.coupling_forms[c], self.q, v)[2]
        return out


def augmented_geometry(aug: AugmentedTree, data: pin.Data, q: np.ndarray) -> AugmentedGeometry:
    """Residual and closure Jacobian (rbc order) at q by one Pinocchio kinematics pass."""
    kin, pm = aug.kin, aug.model
    q = np.asarray(q, dtype=float)
    pin.computeJointJacobians(pm, data, q[aug.q_perm])
    pin.updateFramePlacements(pm, data)
    n = kin.n_chords
    rho, C = np.empty(kin.n_rows), np.zeros((kin.n_rows, kin.nv))
    P1 = np.empty((0, 6, 6))
    if n:
        jlog, ad_inv, ad_bw = np.empty((n, 6, 6)), np.empty((n, 6, 6)), np.empty((n, 6, 6))
        xi = np.empty((n, 6))
        oMf = data.oMf
        for i, (b, t, c) in enumerate(aug.chord_triples):
            T_bw = oMf[b].inverse()
            delta = T_bw * oMf[t] * (T_bw * oMf[c]).inverse()  # Δ = T_b_w D T_w_b
            xi[i] = pin.log6(delta).vector
            jlog[i] = pin.Jlog6(delta)
            ad_inv[i] = delta.inverse().action
            ad_bw[i] = T_bw.action
        rho[: 6 * n] = xi[:, _SWAP].ravel()
        # P₁ = J_l⁻¹ Ad(T_b_w) with J_l⁻¹ = J_r⁻¹ Ad(Δ⁻¹); P₂ = P₁ Ad(D) = J_r⁻¹ Ad(T_b_w);
        # rows re-ordered to rbc's angular-first order here, columns stay Pinocchio's
        jlog = jlog[:, _SWAP]
        P2 = jlog @ ad_bw
        P1 = jlog @ (ad_inv @ ad_bw)
        J = data.J  # world joint Jacobian (6, nv_pin), a view valid until the next pass
        eta = (P1 @ (J * aug.mask_tb) - P2 @ (J * aug.mask_cb)).reshape(6 * n, pm.nv)
        if aug.v_identity:
            C[: 6 * n] = eta
        else:
            C[: 6 * n, aug.v_perm] = eta
    if aug.coupling_q.size:
        rho[6 * n:] = aug.coupling_q @ q + kin.coupling_offset
        C[6 * n:] = aug.coupling_C
        for c in aug.nonlinear:
            form = kin.coupling_forms[c]
            rho[6 * n + c], grad, _ = form_terms(form, q)
            C[6 * n + c, list(form.v_index)] = grad
    return AugmentedGeometry(aug, data, q, rho, C, P1)

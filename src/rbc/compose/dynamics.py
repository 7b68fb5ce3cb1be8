"""Member-wise dynamics of a composed system with the skew identity, and the inertial
regressor (docs/composition.md, "Member-wise dynamics").

**Members.** Every moving rigid body i (links, actuator barrels and rods, universal-joint
crosses) and every rotor r (an actuator's reflected inertia ``α = I_m N²``, N the gear ratio
or 2π/lead of a screw; a joint's ``armature``) is a member. With the composer lift
``v = E u`` (:mod:`rbc.compose.lift`):

* body i: world spatial Jacobian ``J_i = J_i^tree E_T`` (n_u columns; ``J_i^tree`` the
  world Jacobian of its host joint in the flat tree, Pinocchio ``data.J`` masked by its
  support), spatial inertia ``I_i`` in world axes about the world origin, twist
  ``V_i = J_i u`` and ``J̇_i = J̇_i^tree E_T + J_i^tree Ė_T`` (Pinocchio's Jacobian time
  variation and the lift's rate operator);
* rotor r on the coordinate p (a port or an armature joint): ``J_r = E[p]`` (1 × n_u),
  ``J̇_r = Ė[p]``, inertia α_r.

Each member contributes (Featherstone 2008 §7.2; the momentum-operator factorisation)

    Γ_i = J_iᵀ I_i J_i,      C_i = J_iᵀ (I_i J̇_i + (V_i ×*) I_i J_i),      g_i = −J_iᵀ I_i a_g,

(``×*`` the spatial force cross product, a_g the gravity acceleration ``[0; g]``), and
``Γ_r = α J_rᵀ J_r``, ``C_r = α J_rᵀ J̇_r``. **Skew identity:** since
``İ_i = (V_i ×*) I_i − I_i (V_i ×)`` and ``(V ×*) = −(V ×)ᵀ``,
``Γ̇_i = J̇ᵀ I J + Jᵀ I J̇ + Jᵀ (V×* I − I V×) J = C_i + C_iᵀ`` for every member, hence for any
sum: ``Γ̇ − 2C`` is skew. ``C`` acts on any speed: ``C(q, u) u_r`` (reference-velocity
control), with ``u`` fixing the motion (V_i, J̇_i) and u_r the vector acted on.

**Boltzmann–Hamel terms.** A floating base's speeds are quasi-velocities (the body-frame
twist), not coordinate rates; Lagrange's equations in them carry the Boltzmann–Hamel terms
(for a free body, ``−ad(V)ᵀ I V``: Euler's and Newton's gyroscopic terms in the body frame).
Here they are not added separately: J̇ is the time derivative of the quasi-velocity
Jacobian along the motion, so ``C u`` contains them (tests: a free rigid body against
``−ad(V)ᵀ I V``).

**The equations** in the composer's independent speeds u:

    Γ u̇ + C u + g + D u = Lᵀ f + τ_r,

``D = Eᵀ diag(d) E`` (joint and drive viscous damping), ``L = J_ℓ E`` (port speeds), and τ_r
the other loads reduced by Eᵀ (springs, spring-dampers, constant joint efforts, external
wrenches; Coulomb friction kept apart, as in :mod:`rbc.model.dynamics`).

**Regressor.** The terms are linear in each body's 10 inertial parameters π_i (Pinocchio's
order: m, m·c, and the rotational inertia about the body frame's origin ``I_xx, I_xy, I_yy,
I_xz, I_yz, I_zz``, body axes) and each rotor's α: ``Γ u̇_r + C u_r + g = Y(q, u, u̇_r, u_r) π``
(:func:`regressor`). An inertial edit ΔM is a new π (:meth:`InertialParameters.with_body`),
evaluated without rebuilding anything.

**Second algorithm.** The projected tree terms ``E_Tᵀ M_T E_T``, ``E_Tᵀ (h_T + M_T Ė_T u)``,
``E_Tᵀ g_T`` (Pinocchio's CRBA/RNEA on the flat tree, armature included;
:func:`projected_terms`) are the existing reduced-dynamics algorithm; the tests hold the two
equal.
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
import pinocchio as pin
from scipy.linalg import cho_factor, cho_solve

from rbc.compose.lift import ComposerLift, ComposerStructure, composer_lift
from rbc.compose.system import Composition
from rbc.model.compiled import CompiledModel
from rbc.model.dynamics import (
    DynamicsData,
    DynamicsModel,
    SingularInertiaError,
    Wrench,
    joint_passive_efforts,
    passive_efforts,
    tree_terms,
    wrench_efforts,
)
from rbc.model.interfaces import port_jacobian
from rbc.model.tree import inertia_tensor


def spatial_inertia(pi: np.ndarray) -> np.ndarray:
    """(…, 6, 6) spatial inertia (Pinocchio's linear-first layout, about the frame origin)
    from dynamic parameters (…, 10) (module docstring; linear in π)."""
    pi = np.asarray(pi, dtype=float)
    out = np.zeros((*pi.shape[:-1], 6, 6))
    m, mc = pi[..., 0], pi[..., 1:4]
    for i in range(3):
        out[..., i, i] = m
    x, y, z = mc[..., 0], mc[..., 1], mc[..., 2]
    S = np.zeros((*pi.shape[:-1], 3, 3))
    S[..., 0, 1], S[..., 0, 2], S[..., 1, 2] = -z, y, -x
    S[..., 1, 0], S[..., 2, 0], S[..., 2, 1] = z, -y, x
    out[..., 3:, :3] = S
    out[..., :3, 3:] = -S
    xx, xy, yy, xz, yz, zz = (pi[..., k] for k in range(4, 10))
    out[..., 3, 3], out[..., 3, 4], out[..., 3, 5] = xx, xy, xz
    out[..., 4, 3], out[..., 4, 4], out[..., 4, 5] = xy, yy, yz
    out[..., 5, 3], out[..., 5, 4], out[..., 5, 5] = xz, yz, zz
    return out


#: (10, 6, 6) the spatial inertias of the unit parameter vectors (the regressor's basis).
BASIS = spatial_inertia(np.eye(10))


@dataclass(frozen=True, eq=False)
class InertialParameters:
    """Inertial parameters of the members.

    Attributes:
        bodies: names of the moving bodies (flat names) in member order.
        pi: (n_b, 10) their dynamic parameters in the body frames (module docstring).
        rotors: names of the rotor members (``actuator`` or ``joint.armature``).
        alpha: (n_r,) their reflected inertias [kg·m² or kg].
    """

    bodies: tuple[str, ...]
    pi: np.ndarray
    rotors: tuple[str, ...]
    alpha: np.ndarray

    @property
    def vector(self) -> np.ndarray:
        """(10 n_b + n_r,) π stacked body by body, then α (the regressor's column order)."""
        return np.concatenate([self.pi.ravel(), self.alpha])

    def with_body(self, name: str, mass: float, com, inertia) -> InertialParameters:
        """An inertial edit ΔM: body ``name`` with new mass [kg], COM (3,) [m, body frame]
        and inertia about the COM ``[ixx iyy izz ixy ixz iyz]`` [kg·m²].

        Raises:
            KeyError: no such moving body.
        """
        i = self.bodies.index(name)
        pi = self.pi.copy()
        pi[i] = pin.Inertia(float(mass), np.asarray(com, float),
                            inertia_tensor(tuple(inertia))).toDynamicParameters()
        return replace(self, pi=pi)


@dataclass(frozen=True, eq=False)
class MemberModel:
    """The member-wise dynamics model of one composed mode (immutable).

    Attributes:
        structure: the composer's index data; dm: the mode model's dynamics model (flat
            tree with rotors, augmented tree).
        body_index: (n_b,) record indices of the moving bodies; joint: (n_b,) their host
            joints in the Pinocchio tree; placement: their frames in the host joints.
        mask: (n_b, nv_pin) support indicator of each host joint (``J_i = data.J ∘ mask``).
        rotor_col: (n_r,) the v-index each rotor member turns with.
        damping: (nv,) viscous coefficient per coordinate (joints and drives).
        params: the record's inertial parameters.
    """

    structure: ComposerStructure
    dm: DynamicsModel
    body_index: np.ndarray
    joint: np.ndarray
    placement: tuple[pin.SE3, ...]
    mask: np.ndarray
    rotor_col: np.ndarray
    damping: np.ndarray
    params: InertialParameters

    @property
    def kin(self) -> CompiledModel:
        return self.structure.model

    @classmethod
    def build(cls, comp: Composition, mode: str | None = None,
              anchors: np.ndarray | None = None) -> MemberModel:
        """The member model of a mode (default: the first) at its reference anchors."""
        md = comp.mode(mode)
        kin = comp.model(md, anchors)
        return cls.of(kin, comp.members, md.level2)

    @classmethod
    def of(cls, kin: CompiledModel, members, level2) -> MemberModel:
        dm = DynamicsModel.build(kin)
        t = dm.tree
        rec = kin.record
        idx = [i for i, b in enumerate(rec.bodies) if b.kind != "fixed"]
        frames = [t.model.frames[int(t.body_frame[i])] for i in idx]
        joints = np.array([f.parentJoint for f in frames], dtype=np.int64)
        mask = np.zeros((len(idx), t.model.nv))
        for n, j in enumerate(joints):
            for a in t.model.supports[int(j)]:
                if a > 0:
                    jm = t.model.joints[a]
                    mask[n, jm.idx_v: jm.idx_v + jm.nv] = 1.0
        pi = np.array([pin.Inertia(rec.bodies[i].mass, np.array(rec.bodies[i].com, float),
                                   inertia_tensor(rec.bodies[i].inertia)).toDynamicParameters()
                       for i in idx]).reshape(-1, 10)
        rotors, cols, alpha = [], [], []
        for a in rec.actuators:
            if a.joint is not None and a.rotor_inertia:
                rotors.append(a.name)
                cols.append(int(kin.v_offset[kin.edge(a.joint)]))
                alpha.append(a.rotor_inertia * a.transmission.reduction ** 2)
        for j in rec.joints:
            if j.armature:
                rotors.append(f"{j.name}.armature")
                cols.append(int(kin.v_offset[kin.edge(j.name)]))
                alpha.append(j.armature)
        zero = np.zeros(kin.nv)
        q = kin.initial_configuration()
        damping = joint_passive_efforts(dm, q, zero)[0] - joint_passive_efforts(
            dm, q, np.ones(kin.nv))[0]
        params = InertialParameters(tuple(rec.bodies[i].name for i in idx), pi, tuple(rotors),
                                    np.array(alpha, dtype=float))
        return cls(ComposerStructure.build(kin, members, level2), dm,
                   np.array(idx, dtype=np.int64), joints,
                   tuple(f.placement for f in frames), mask, np.array(cols, dtype=np.int64),
                   damping, params)


@dataclass(frozen=True, eq=False)
class BodyKinematics:
    """Per-body kinematics at (q, u) (module docstring), Pinocchio linear-first rows.

    Attributes:
        J: (n_b, 6, n_u) world spatial Jacobians in u; Jdot: (n_b, 6, n_u) their rates;
        V: (n_b, 6) twists; Xf: (n_b, 6, 6) force transforms body → world;
        Xm: (n_b, 6, 6) motion transforms world → body; Edot: (nv, n_u) ``Ė(v)``;
        JEdot: (n_b, 6, n_u) the curvature's part of Jdot, ``J_i^tree Ė``.
    """

    J: np.ndarray
    Jdot: np.ndarray
    V: np.ndarray
    Xf: np.ndarray
    Xm: np.ndarray
    Edot: np.ndarray
    JEdot: np.ndarray


@dataclass(frozen=True, eq=False)
class ComposedTerms:
    """Member-wise terms at (q, u) (module docstring).

    Attributes:
        Gamma: (n_u, n_u) Γ; C: (n_u, n_u) the Coriolis factor (acts on u_r); g: (n_u,);
        D: (n_u, n_u) damping; L: (n_act, n_u) actuator map; tau: (n_u,) the other smooth
        loads reduced (springs, constant efforts, wrenches, port efforts if given);
        tau_coulomb: (n_u,); v: (nv,) speeds; edu: (nv,) Ė u; lift: the composer lift;
        kin: the body kinematics.
    """

    Gamma: np.ndarray
    C: np.ndarray
    g: np.ndarray
    D: np.ndarray
    L: np.ndarray
    tau: np.ndarray
    tau_coulomb: np.ndarray
    v: np.ndarray
    edu: np.ndarray
    lift: ComposerLift
    kin: BodyKinematics

    def bias(self, u: np.ndarray) -> np.ndarray:
        """``C u + g + D u − τ − τ_c`` (n_u,): everything but Γ u̇ and the ports' Lᵀ f."""
        return self.C @ u + self.g + self.D @ u - self.tau - self.tau_coulomb


def body_kinematics(mm: MemberModel, data: DynamicsData, lifted: ComposerLift, v: np.ndarray
                    ) -> BodyKinematics:
    """Jacobians, rates and twists of every moving body at the lift's q with speeds v."""
    t, k = mm.dm.tree, mm.kin
    pd = data.pin_data
    nt = k.nv_tree
    qp, vp = t.q_pin(lifted.q[: k.nq_tree]), t.v_pin(v[:nt])
    pin.computeJointJacobiansTimeVariation(t.model, pd, qp, vp)
    pin.computeJointJacobians(t.model, pd, qp)
    n_u = lifted.E.shape[1]
    Edot = lifted.rate(mm.dm, data, v, np.eye(n_u))
    ET, EdT = lifted.E[:nt][t.v_perm], Edot[:nt][t.v_perm]
    # J_i = (data.J ∘ mask_i) E_T sums the columns of the host joint's supporting joints:
    # accumulated down the tree (parents before children), O(n_joints · n_u) instead of a
    # (6 n_b × nv) × (nv × n_u) product
    Pj, dPj = np.asarray(pd.J), np.asarray(pd.dJ)
    cols = np.concatenate([Pj[:, :, None] * ET[None], (dPj[:, :, None] * ET[None]
                                                       + Pj[:, :, None] * EdT[None]),
                           Pj[:, :, None] * EdT[None],
                           (Pj * vp[None])[:, :, None]], axis=2)  # (6, nv, 3 n_u + 1)
    acc = _down_the_tree(t.model, cols)[mm.joint]
    J, Jdot, JEdot = acc[:, :, :n_u], acc[:, :, n_u: 2 * n_u], acc[:, :, 2 * n_u: 3 * n_u]
    V = acc[:, :, 3 * n_u]
    Xf, Xm = _body_transforms(mm, pd)
    return BodyKinematics(J, Jdot, V, Xf, Xm, Edot, JEdot)


def _body_transforms(mm: MemberModel, pd) -> tuple[np.ndarray, np.ndarray]:
    """``(Xf, Xm)`` (n_b, 6, 6): every body's force transform body → world and motion
    transform world → body (Pinocchio linear-first) of its pose ``T = oMi[joint] · P``
    after a kinematics pass: ``Xf = [[R, 0], [p̂R, R]]`` (``T.toDualActionMatrix()``),
    ``Xm = [[Rᵀ, −Rᵀp̂], [0, Rᵀ]]`` (``T.inverse().toActionMatrix()``), batched."""
    oM = pd.oMi
    H = np.array([oM[j].homogeneous for j in range(len(oM))])[mm.joint]  # (n_b, 4, 4)
    Rj, pj = H[:, :3, :3], H[:, :3, 3]
    RP, pP = _placements(mm)
    R = Rj @ RP
    p = np.einsum("bij,bj->bi", Rj, pP) + pj
    ph = np.zeros_like(R)  # p̂
    ph[:, 0, 1], ph[:, 0, 2], ph[:, 1, 2] = -p[:, 2], p[:, 1], -p[:, 0]
    ph[:, 1, 0], ph[:, 2, 0], ph[:, 2, 1] = p[:, 2], -p[:, 1], p[:, 0]
    Rt = R.transpose(0, 2, 1)
    Xf = np.zeros((R.shape[0], 6, 6))
    Xf[:, :3, :3] = Xf[:, 3:, 3:] = R
    Xf[:, 3:, :3] = ph @ R
    Xm = np.zeros_like(Xf)
    Xm[:, :3, :3] = Xm[:, 3:, 3:] = Rt
    Xm[:, :3, 3:] = -(Rt @ ph)
    return Xf, Xm


def _placements(mm: MemberModel) -> tuple[np.ndarray, np.ndarray]:
    """(n_b, 3, 3) rotations and (n_b, 3) translations of the bodies' frames in their host
    joints (``mm.placement`` as arrays, once per member model)."""
    hit = _PLACEMENTS.get(mm)
    if hit is None:
        hit = _PLACEMENTS[mm] = (
            np.array([P.rotation for P in mm.placement]).reshape(-1, 3, 3),
            np.array([P.translation for P in mm.placement]).reshape(-1, 3))
    return hit


_PLACEMENTS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _down_the_tree(model: pin.Model, cols: np.ndarray) -> np.ndarray:
    """(n_joints, 6, k): for every joint of the Pinocchio tree the sum of ``cols[:, c, :]``
    (cols (6, nv, k)) over the v-columns c of the joint and of its supporting joints."""
    out = np.zeros((model.njoints, cols.shape[0], cols.shape[2]))
    for j, p, i, n in _tree_order(model):  # Pinocchio orders parents before children
        out[j] = out[p] + (cols[:, i] if n == 1 else cols[:, i: i + n].sum(axis=1))
    return out


@functools.lru_cache(maxsize=16)
def _tree_order(model: pin.Model) -> tuple[tuple[int, int, int, int], ...]:
    """``(joint, parent, idx_v, nv)`` of every joint of a Pinocchio model but the universe."""
    return tuple((j, int(model.parents[j]), int(model.joints[j].idx_v), int(model.joints[j].nv))
                 for j in range(1, model.njoints))


def _cross_force(V: np.ndarray) -> np.ndarray:
    """(n, 6, 6) the spatial force cross product ``V ×*`` (Pinocchio linear-first)."""
    return np.array([pin.Motion(x).dualAction for x in V])


def _gravity(mm: MemberModel) -> np.ndarray:
    return np.concatenate([np.asarray(mm.kin.record.gravity, dtype=float), np.zeros(3)])


def member_sums(mm: MemberModel, bk: BodyKinematics, E: np.ndarray,
                params: InertialParameters, curvature: bool = True
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(Γ, C, g)`` (n_u, n_u), (n_u, n_u), (n_u,) summed over the members (module
    docstring) from the body kinematics ``bk`` and the lift E (nv, n_u) at one state with
    the inertial parameters ``params`` (Γ not yet symmetrised). ``curvature=False`` leaves
    the lift's rate Ė out of the Jacobian rates (``J̇_i = J̇_i^tree E``; the rotors'
    ``α J_rᵀ Ė_r`` dropped): the "no curvature" ablation of issue #20."""
    Iw = bk.Xf @ spatial_inertia(params.pi) @ bk.Xm
    IJ = Iw @ bk.J
    n_u = bk.J.shape[2]
    J2 = bk.J.reshape(-1, n_u)  # (6 n_b, n_u): the sums over bodies as single products
    Jdot = bk.Jdot if curvature else bk.Jdot - bk.JEdot
    Gamma = J2.T @ IJ.reshape(-1, n_u)
    C = J2.T @ (Iw @ Jdot + _cross_force(bk.V) @ IJ).reshape(-1, n_u)
    g = -J2.T @ (Iw @ _gravity(mm)).reshape(-1)
    if params.alpha.size:
        Jr, Jrd = E[mm.rotor_col], bk.Edot[mm.rotor_col]
        Gamma = Gamma + Jr.T @ (params.alpha[:, None] * Jr)
        if curvature:
            C = C + Jr.T @ (params.alpha[:, None] * Jrd)
    return Gamma, C, g


def composed_terms(mm: MemberModel, data: DynamicsData, q: np.ndarray, u: np.ndarray,
                   f: np.ndarray | None = None, wrenches: tuple[Wrench, ...] = (),
                   params: InertialParameters | None = None,
                   lifted: ComposerLift | None = None) -> ComposedTerms:
    """Γ, C, g, D, L and the other loads at (q, u) member by member (module docstring).

    Args:
        q: (nq,) closed configuration of the mode model; u: (n_u,) independent speeds.
        f: (n_act,) port efforts (added to τ); wrenches: external wrenches.
        params: inertial parameters (default: the record's; an edit ΔM).
        lifted: the composer lift at q if the caller has it.
    """
    p = mm.params if params is None else params
    L_ = lifted if lifted is not None else composer_lift(mm.structure, mm.dm, data, q)
    v, edu = L_.curvature(np.asarray(u, dtype=float))
    bk = body_kinematics(mm, data, L_, v)
    Gamma, C, g = member_sums(mm, bk, L_.E, p)
    E = L_.E
    D = E.T @ (mm.damping[:, None] * E)
    Jl = port_jacobian(mm.kin, q)  # J_ℓ(q): distance and profile ports depend on q
    tau, coul = passive_efforts(mm.dm, q, v)
    tau = tau + mm.damping * v
    if wrenches:
        tau = tau + wrench_efforts(mm.dm, q, wrenches)
    if f is not None:
        tau = tau + Jl.T @ np.asarray(f, dtype=float)
    return ComposedTerms(0.5 * (Gamma + Gamma.T), C, g, D, Jl @ E, E.T @ tau,
                         E.T @ coul, v, edu, L_, bk)


def forward_dynamics(terms: ComposedTerms, u: np.ndarray, f: np.ndarray | None = None,
                     coulomb: bool = True) -> np.ndarray:
    """``u̇ = Γ⁻¹ (Lᵀ f + τ − C u − g − D u)`` (n_u,) by Cholesky (f: extra port efforts
    beyond those already in ``terms``).

    Raises:
        SingularInertiaError: Γ not positive definite.
    """
    rhs = terms.tau - terms.C @ u - terms.g - terms.D @ u
    if coulomb:
        rhs = rhs + terms.tau_coulomb
    if f is not None:
        rhs = rhs + terms.L.T @ np.asarray(f, dtype=float)
    try:
        return cho_solve(cho_factor(terms.Gamma), rhs)
    except np.linalg.LinAlgError as err:
        raise SingularInertiaError(f"the composed inertia Γ is not positive definite ({err})"
                                   ) from None


def accelerations(terms: ComposedTerms, udot: np.ndarray) -> np.ndarray:
    """All accelerations ``v̇ = E u̇ + Ė u`` (nv,)."""
    return terms.lift.E @ udot + terms.edu


def regressor(mm: MemberModel, terms: ComposedTerms, udot_r: np.ndarray, u_r: np.ndarray
              ) -> np.ndarray:
    """``Y`` (n_u, 10 n_b + n_r) with ``Y π = Γ u̇_r + C u_r + g`` at the state of ``terms``
    (module docstring; columns in :attr:`InertialParameters.vector` order)."""
    bk = terms.kin
    y = bk.Jdot @ u_r + bk.J @ udot_r - _gravity(mm)  # (n_b, 6)
    z = bk.J @ u_r
    Iw = bk.Xf[:, None] @ BASIS[None] @ bk.Xm[:, None]  # (n_b, 10, 6, 6)
    fk = Iw @ y[:, None, :, None] + _cross_force(bk.V)[:, None] @ (Iw @ z[:, None, :, None])
    Yb = np.einsum("bin,bki->nbk", bk.J, fk[..., 0]).reshape(u_r.size, -1)
    E = terms.lift.E
    Jr, Jrd = E[mm.rotor_col], bk.Edot[mm.rotor_col]
    Yr = Jr.T * (Jrd @ u_r + Jr @ udot_r)[None, :]
    return np.hstack([Yb, Yr])


def projected_terms(mm: MemberModel, data: DynamicsData, terms: ComposedTerms
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The second algorithm (module docstring): ``(E_Tᵀ M_T E_T, E_Tᵀ (h_T + M_T Ė_T u),
    E_Tᵀ g_T)`` from Pinocchio's tree terms at the same state."""
    k = mm.kin
    nt = k.nv_tree
    tt = tree_terms(mm.dm, data, terms.lift.q, terms.v)
    ET = terms.lift.E[:nt]
    return ET.T @ tt.M @ ET, ET.T @ (tt.h + tt.M @ terms.edu[:nt]), ET.T @ tt.g


def pinocchio_regressor_efforts(mm: MemberModel, data: DynamicsData, terms: ComposedTerms,
                                a: np.ndarray) -> np.ndarray:
    """``E_Tᵀ (Y_T π_T + armature ∘ a_T)`` (n_u,) with ``Y_T`` from
    ``pinocchio.computeJointTorqueRegressor`` on the flat tree at the state of ``terms``
    and the accelerations a (nv,): an independent evaluation of :func:`regressor` ``· π``
    with ``u_r = u`` (Pinocchio's regressor and its own inertias; rotors as armature)."""
    t, k = mm.dm.tree, mm.kin
    nt = k.nv_tree
    qp = t.q_pin(terms.lift.q[: k.nq_tree])
    Yp = pin.computeJointTorqueRegressor(t.model, data.pin_data, qp, t.v_pin(terms.v[:nt]),
                                         t.v_pin(a[:nt]))
    pi = np.concatenate([t.model.inertias[j].toDynamicParameters()
                         for j in range(1, t.model.njoints)])
    tau = Yp @ pi + np.asarray(t.model.armature) * t.v_pin(a[:nt])
    return terms.lift.E[:nt][t.v_perm].T @ tau


@functools.lru_cache(maxsize=8)
def member_model(comp: Composition, mode: str | None = None) -> MemberModel:
    """:meth:`MemberModel.build`, cached per composition and mode."""
    return MemberModel.build(comp, mode)


__all__: Sequence[str] = ("ComposedTerms", "InertialParameters", "MemberModel",
                          "composed_terms", "forward_dynamics", "member_sums",
                          "pinocchio_regressor_efforts", "projected_terms", "regressor")

"""Reduced dynamics on the closure manifold with actuator inertia (DESIGN.md §6).

Tree terms come from Pinocchio on the tree-only model (:mod:`rbc.model.tree`): the joint-
space inertia ``M_T`` (``crba``, armature = joint armature + reflected rotor inertia
``α = I_m N²``), the Coriolis/centrifugal term ``h_T`` (``nonLinearEffects`` minus gravity)
and gravity ``g_T``. All loads are generalized efforts over the full velocity vector
(tree and cut coordinates): gravity ``−g_T``, joint viscous damping, joint springs, actuator
viscous drag, point-to-point spring-dampers, constant joint efforts, external wrenches and
actuator port efforts ``J_ℓᵀ f``; Coulomb friction (joint ``friction`` and actuator
``coulomb``) is returned as a separate effort (it is set-valued at zero speed; a speed below
:data:`COULOMB_REST_SPEED` counts as zero, :func:`coulomb_direction`).

With ``v = E u`` and ``v̇ = E u̇ + Ė u`` (tree rows ``E_T``, ``Ė_T u``):

    M_r = E_Tᵀ M_T E_T,   h_r = E_Tᵀ (h_T + M_T Ė_T u),   τ_r = Eᵀ τ,
    M_r u̇ + h_r = τ_r                                   (Kane's/Maggi's equations;
                                                          Jain, *Robot and Multibody
                                                          Dynamics*, 2011, ch. 9)

Forward dynamics solves with a Cholesky factor (a failure names the coordinates lacking
inertia); actuator efforts solve ``Lᵀ f = τ_r,needed`` in the minimum-norm sense when
over-actuated (``L = J_ℓ E``); the ideal closure reactions λ on the selected rows follow
from the dependent equations ``(S C_p)ᵀ λ = (M a + h − τ)_p`` (cut coordinates are massless).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

import numpy as np
import pinocchio as pin

from rbc.errors import RbcError
from rbc.ir.record import JointEffort, SpringForce
from rbc.model.augmented import AugmentedTree, augmented_geometry
from rbc.model.compiled import CompiledModel, Partition
from rbc.model.extended import constraint_leak
from rbc.model.interfaces import actuator_map, port_jacobian
from rbc.model.kinematics import frame_jacobian
from rbc.model.partition import Lift, curvature, lift_from_jacobian
from rbc.model.tree import TreeModel, build_tree, joint_space_inertia


class SingularInertiaError(RbcError):
    """The reduced inertia M_r is not positive definite; names the coordinates lacking mass."""


@dataclass(frozen=True)
class Wrench:
    """An external wrench ``[n; f]`` [N·m; N] in world axes applied at a body point.

    Attributes:
        body: body name; point: (3,) point in body coordinates [m]; wrench: (6,).
    """

    body: str
    point: tuple[float, float, float]
    wrench: tuple[float, float, float, float, float, float]


@dataclass(frozen=True, eq=False)
class DynamicsModel:
    """Immutable dynamics model: the kinematic model, its Pinocchio tree, and the tree with a
    branch per cut joint that evaluates the closure geometry in C++ (:mod:`.augmented`)."""

    kin: CompiledModel
    tree: TreeModel
    augmented: AugmentedTree | None = None  # built from ``tree`` when not given

    def __post_init__(self) -> None:
        if self.augmented is None:
            object.__setattr__(self, "augmented", AugmentedTree.build(self.kin, self.tree))

    @classmethod
    def build(cls, kin: CompiledModel) -> DynamicsModel:
        """Build the tree model (reflected rotor inertia included) and its augmentation."""
        return cls(kin, build_tree(kin))


@dataclass
class DynamicsData:
    """Per-state scratch (Pinocchio data) for a :class:`DynamicsModel`."""

    pin_data: pin.Data = field(repr=False)
    augmented_data: pin.Data = field(repr=False)

    @classmethod
    def of(cls, dm: DynamicsModel) -> DynamicsData:
        return cls(dm.tree.model.createData(), dm.augmented.model.createData())


@dataclass(frozen=True, eq=False)
class TreeTerms:
    """Tree-model terms at (q, v) in rbc tree order.

    Attributes:
        M: (nv_tree, nv_tree) joint-space inertia (armature included).
        h: (nv_tree,) Coriolis and centrifugal effort (no gravity).
        g: (nv_tree,) gravity effort (``M v̇ + h + g = τ``).
    """

    M: np.ndarray
    h: np.ndarray
    g: np.ndarray


def tree_terms(dm: DynamicsModel, data: DynamicsData, q: np.ndarray, v: np.ndarray) -> TreeTerms:
    """``M_T``, ``h_T``, ``g_T`` from Pinocchio (crba, nonLinearEffects, gravity)."""
    t, k = dm.tree, dm.kin
    qp, vp = t.q_pin(q[: k.nq_tree]), t.v_pin(v[: k.nv_tree])
    M = joint_space_inertia(t.model, data.pin_data, qp)
    nle = pin.nonLinearEffects(t.model, data.pin_data, qp, vp)
    g = pin.computeGeneralizedGravity(t.model, data.pin_data, qp)
    return TreeTerms(t.matrix_rbc(M), t.v_rbc(nle - g), t.v_rbc(g))


def reduced_inertia(dm: DynamicsModel, data: DynamicsData, q: np.ndarray, E: np.ndarray
                    ) -> np.ndarray:
    """``M_r = E_Tᵀ M_T E_T`` (n_u, n_u) alone (no velocity or load terms) at q with the lift
    E (nv, n_u) there [kg·m², kg]."""
    t, k = dm.tree, dm.kin
    M = t.matrix_rbc(joint_space_inertia(t.model, data.pin_data, t.q_pin(q[: k.nq_tree])))
    ET = E[: k.nv_tree]
    return ET.T @ M @ ET


def _point_jacobian(k: CompiledModel, q: np.ndarray, body: str, xyz
                    ) -> tuple[np.ndarray, np.ndarray]:
    b = k.record.body_index()[body]
    T, J = frame_jacobian(k, q, b, pin.SE3(np.eye(3), np.array(xyz, dtype=float)))
    return np.array(T.translation), J


@dataclass(frozen=True)
class _Coefficients:
    """Per velocity coordinate: viscous, Coulomb and spring coefficients (joints and their
    actuators combined); ``q_index`` maps each coordinate to its q entry (springs exist
    only on 1-coordinate joints, where q and v coincide)."""

    damping: np.ndarray
    friction: np.ndarray
    stiffness: np.ndarray
    rest: np.ndarray
    q_index: np.ndarray


@functools.lru_cache(maxsize=64)
def load_coefficients(k: CompiledModel) -> _Coefficients:
    damping, friction = np.zeros(k.nv), np.zeros(k.nv)
    stiffness, rest = np.zeros(k.nv), np.zeros(k.nv)
    q_index = np.zeros(k.nv, dtype=np.int64)
    for j in k.record.joints:
        e = k.edge(j.name)
        sl = k.v_slice(e)
        damping[sl] += j.damping
        friction[sl] += j.friction
        if j.spring.stiffness and k.kinds[e].nv == 1:
            stiffness[sl] = j.spring.stiffness
            rest[sl] = j.spring.rest
            q_index[sl] = k.q_slice(e).start
    for a in k.record.actuators:  # drive friction: joint ports only (schema)
        if a.joint is not None:
            col = int(k.v_offset[k.edge(a.joint)])
            damping[col] += a.viscous
            friction[col] += a.coulomb
    return _Coefficients(damping, friction, stiffness, rest, q_index)


@dataclass(frozen=True, eq=False)
class SpringState:
    """A point-to-point spring-damper at (q, v).

    Attributes:
        a, b: the body names of its two ends; pa, pb: (3,) end points in world axes [m];
        n: (3,) unit vector from a to b; tension: ``k(ℓ − ℓ₀) + c ℓ̇`` [N] (positive pulls
        the ends together: ``+T n`` on a, ``−T n`` on b); Ja, Jb: (6, nv) world-aligned point
        Jacobians of the ends.
    """

    a: str
    b: str
    pa: np.ndarray
    pb: np.ndarray
    n: np.ndarray
    tension: float
    Ja: np.ndarray
    Jb: np.ndarray


def spring_states(dm: DynamicsModel, q: np.ndarray, v: np.ndarray) -> list[SpringState]:
    """Every point-to-point spring-damper of the record at (q, v), in record order."""
    out = []
    for f in dm.kin.record.forces:
        if isinstance(f, SpringForce):
            pa, Ja = _point_jacobian(dm.kin, q, f.a.body, f.a.xyz)
            pb, Jb = _point_jacobian(dm.kin, q, f.b.body, f.b.xyz)
            d = pb - pa
            length = float(np.linalg.norm(d))
            n = d / length
            rate = float(n @ (Jb[3:] @ v - Ja[3:] @ v))
            tension = f.stiffness * (length - f.rest_length) + f.damping * rate
            out.append(SpringState(f.a.body, f.b.body, pa, pb, n, tension, Ja, Jb))
    return out


#: Speeds [rad/s or m/s] at or below which Coulomb friction takes no direction (sign 0). A
#: coordinate at rest in a lifted motion ``v = E u`` comes out as round-off, about
#: ``n ε ‖E‖ ‖u‖`` ≈ 1e-15 at unit speeds; its sign is noise, and two algebraically equal lifts
#: (a composed and a one-level one) then disagree by the full friction effort. 1e-12 is
#: three orders above that round-off for speeds up to ~10 rad/s or m/s and far below any
#: sliding speed a simulation resolves.
COULOMB_REST_SPEED = 1e-12


def coulomb_direction(v: np.ndarray) -> np.ndarray:
    """The direction ``sign(v)`` (same shape as v) of Coulomb friction ``−μ sign(v)``, 0 where
    ``|v| ≤`` :data:`COULOMB_REST_SPEED` (at rest: the set-valued law's zero choice)."""
    v = np.asarray(v, dtype=float)
    return np.where(np.abs(v) > COULOMB_REST_SPEED, np.sign(v), 0.0)


def joint_passive_efforts(dm: DynamicsModel, q: np.ndarray, v: np.ndarray
                          ) -> tuple[np.ndarray, np.ndarray]:
    """The joint-level part of :func:`passive_efforts` (no point-to-point elements):
    smooth τ_j (nv,) and Coulomb (nv,) efforts acting along the joints' own coordinates."""
    k = dm.kin
    c = load_coefficients(k)
    v = np.asarray(v, dtype=float)
    tau = -c.damping * v - c.stiffness * (np.asarray(q)[c.q_index] - c.rest)
    coul = -c.friction * coulomb_direction(v)
    for f in k.record.forces:
        if isinstance(f, JointEffort):
            tau[k.v_slice(k.edge(f.joint))] += f.value
    return tau, coul


def passive_efforts(dm: DynamicsModel, q: np.ndarray, v: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray]:
    """Smooth passive efforts τ_p (nv,) and Coulomb efforts τ_c (nv,) at (q, v), gravity excluded.

    Joint damping ``−d·v`` and Coulomb ``−μ·sign(v)`` act on every coordinate of a joint;
    springs ``−k(q − rest)`` on 1-coordinate joints; actuators add ``−b·v_port`` and
    ``−μ_a·sign(v_port)``; point-to-point elements add ``J_aᵀ(T n) − J_bᵀ(T n)`` with
    tension ``T = k(ℓ − ℓ₀) + c ℓ̇`` along the unit vector n from a to b.
    """
    tau, coul = joint_passive_efforts(dm, q, v)
    for s in spring_states(dm, q, v):
        tau += s.Ja[3:].T @ (s.tension * s.n) - s.Jb[3:].T @ (s.tension * s.n)
    return tau, coul


def wrench_efforts(dm: DynamicsModel, q: np.ndarray, wrenches: tuple[Wrench, ...]) -> np.ndarray:
    """Generalized efforts (nv,) of external wrenches: ``Σ Jᵀ [n; f]`` (world axes)."""
    tau = np.zeros(dm.kin.nv)
    for w in wrenches:
        _, J = _point_jacobian(dm.kin, q, w.body, w.point)
        tau += J.T @ np.asarray(w.wrench, dtype=float)
    return tau


@dataclass(frozen=True, eq=False)
class ReducedTerms:
    """Reduced dynamics at (q, u).

    Attributes:
        M: (n_u, n_u) reduced inertia M_r; h: (n_u,) h_r; tau: (n_u,) τ_r of all smooth
        loads given (gravity, passive, wrenches, actuators); tau_coulomb: (n_u,) reduced
        Coulomb effort; v: (nv,) all speeds; edu: (nv,) Ė u; lifted: the lift; tree: tree
        terms; tau_full: (nv,) the generalized efforts before reduction; independent:
        (n_u,) v-indices of u; passive: (nv,) the passive efforts alone (damping, springs,
        drive drag, spring-dampers, constant joint efforts and Coulomb friction; gravity
        excluded), whose power ``passive · v`` the energy ledger integrates; q: (nq,) the
        configuration; coulomb: (nv,) the Coulomb friction efforts (part of ``passive``).
    """

    M: np.ndarray
    h: np.ndarray
    tau: np.ndarray
    tau_coulomb: np.ndarray
    v: np.ndarray
    edu: np.ndarray
    lifted: Lift
    tree: TreeTerms
    tau_full: np.ndarray
    independent: np.ndarray
    passive: np.ndarray | None = None
    q: np.ndarray | None = None
    coulomb: np.ndarray | None = None


def reduced_terms(
    dm: DynamicsModel,
    data: DynamicsData,
    part: Partition,
    q: np.ndarray,
    u: np.ndarray,
    f: np.ndarray | None = None,
    wrenches: tuple[Wrench, ...] = (),
    curvature_term: bool = True,
    lifted: Lift | None = None,
) -> ReducedTerms:
    """All reduced terms at (q, u) with port efforts f (n_act,) and external wrenches.

    ``curvature_term=False`` drops Ė u (for the omission study only). ``lifted``: the lift
    at this q if the caller has it (e.g. from :func:`lift_at` in a corrector), with its
    geometry set; otherwise it is evaluated here.
    """
    k = dm.kin
    L = lifted if lifted is not None else lift_at(dm, data, part, q)
    v, edu = curvature(k, part, q, u, L)
    if not curvature_term:
        edu = np.zeros_like(edu)
    tt = tree_terms(dm, data, q, v)
    nt = k.nv_tree
    ET = L.E[:nt]
    tau, coul = passive_efforts(dm, q, v)
    passive = tau + coul
    tau[:nt] -= tt.g
    if wrenches:
        tau += wrench_efforts(dm, q, wrenches)
    if f is not None:
        tau += port_jacobian(k, q).T @ np.asarray(f, dtype=float)
    M_r = ET.T @ tt.M @ ET
    h_r = ET.T @ (tt.h + tt.M @ edu[:nt])
    return ReducedTerms(M_r, h_r, L.E.T @ tau, L.E.T @ coul, v, edu, L, tt, tau,
                        part.independent, passive, np.asarray(q, dtype=float), coul)


def lift_at(dm: DynamicsModel, data: DynamicsData, part: Partition, q: np.ndarray) -> Lift:
    """The lift at q from the augmented tree's closure geometry (geometry attached, so the
    curvature uses its velocity product)."""
    geo = augmented_geometry(dm.augmented, data.augmented_data, q)
    return lift_from_jacobian(part, geo.C, geo)


def forward_dynamics(dm: DynamicsModel, terms: ReducedTerms, coulomb: bool = True) -> np.ndarray:
    """``u̇ = M_r⁻¹ (τ_r − h_r + (C E)ᵀλ)`` (n_u,) by Cholesky, with the constraint-force
    leak ``(C E)ᵀλ`` of the double-precision lift removed once
    (:func:`rbc.model.extended.constraint_leak`: C E in extended precision, λ from the tree
    equations at the first solution). The correction is round-off on well-conditioned
    mechanisms; on the idle spin of a 1e-5 kg coupler it is the difference between 7.6e-10
    and ~1e-12 against the 50-digit reference (docs/dynamics.md).

    Raises:
        SingularInertiaError: M_r not positive definite; names the independent coordinates
            that make up its null direction.
    """
    coul = terms.coulomb if coulomb and terms.coulomb is not None else 0.0
    rhs = terms.tau - terms.h + (terms.tau_coulomb if coulomb else 0.0)
    if rhs.size == 0:
        return rhs
    # imported here: rbc compile imports this module (through rbc.api) and never solves;
    # scipy.linalg at module level was ~0.3 s of its 1 s start-up (a sys.modules hit later)
    from scipy.linalg import lapack

    factor, info = lapack.dpotrf(terms.M, lower=1)
    if info != 0:
        raise SingularInertiaError(_not_pd_message(dm, terms))
    udot = lapack.dpotrs(factor, rhs, lower=1)[0]
    if terms.q is None or dm.kin.n_rows == 0:
        return udot
    nt = dm.kin.nv_tree
    E = terms.lifted.E
    a = E @ udot + terms.edu
    residual = -(terms.tau_full + coul)
    residual[:nt] += terms.tree.M @ a[:nt] + terms.tree.h
    leak = constraint_leak(dm.kin, terms.q, E, residual)
    return udot + lapack.dpotrs(factor, leak, lower=1)[0]


def _not_pd_message(dm: DynamicsModel, terms: ReducedTerms) -> str:
    w, V = np.linalg.eigh(terms.M)
    names = [dm.kin.v_names[j] for j, x in zip(terms.independent, V[:, 0], strict=True)
             if abs(x) > 0.1]
    return (f"{dm.kin.record.source}: the reduced inertia is not positive definite "
            f"(smallest eigenvalue {w[0]:.3g}); coordinates {', '.join(names)} lack inertia — "
            "give the bodies they move mass and inertia, or add armature/rotor inertia")


#: M_r counts as positive definite when its smallest eigenvalue exceeds this fraction of
#: the largest (a condition number of 1e12 leaves ~4 significant digits in u̇).
PD_RTOL = 1e-12


def check_mass_pd(dm: DynamicsModel, terms: ReducedTerms) -> float:
    """Smallest eigenvalue of M_r [kg·m² or kg].

    Raises:
        SingularInertiaError: smallest eigenvalue ≤ PD_RTOL × largest; names coordinates.
    """
    w = np.linalg.eigvalsh(terms.M)
    if w.size and w[0] <= PD_RTOL * max(abs(w[-1]), 1e-300):
        raise SingularInertiaError(_not_pd_message(dm, terms))
    return float(w[0]) if w.size else np.inf


def inverse_dynamics(terms: ReducedTerms, udot: np.ndarray) -> np.ndarray:
    """Reduced effort still needed, ``M_r u̇ + h_r − τ_r`` (n_u,), beyond the loads given."""
    return terms.M @ udot + terms.h - terms.tau


def actuator_efforts(dm: DynamicsModel, terms: ReducedTerms, udot: np.ndarray) -> np.ndarray:
    """Port efforts f (n_act,) producing u̇ with the loads in ``terms`` (minimum norm).

    Solves ``Lᵀ f = M_r u̇ + h_r − τ_r`` with ``L = J_ℓ E``; the loads in ``terms`` should
    not already include port efforts.
    """
    L = actuator_map(dm.kin, terms.lifted.E, terms.q)
    return np.linalg.lstsq(L.T, inverse_dynamics(terms, udot), rcond=None)[0]


def collocated_efforts(dm: DynamicsModel, terms: ReducedTerms, udot: np.ndarray
                       ) -> tuple[np.ndarray, np.ndarray]:
    """Port efforts f (n_act,) producing the reference's port accelerations, the directions
    no port drives left to the dynamics (collocated inverse dynamics).

    With ``L = J_ℓ E`` (n_act, n_u) and N an orthonormal basis of its null space (speeds
    that move no port — a free-flying robot's rigid motion with its joints held), the
    accelerations are ``u̇ + N z`` with z from the undriven equations
    ``Nᵀ M_r N z = −Nᵀ (M_r u̇ + h_r − τ_r)`` (no port effort does work along N), then f
    solves ``Lᵀ f = M_r (u̇ + N z) + h_r − τ_r`` exactly (minimum norm). In free flight this is
    the ballistic base motion the joints' reference implies, where :func:`actuator_efforts`
    would fit the reference's base acceleration in least squares with efforts that cannot
    produce it. Source: the collocated partial feedback linearisation of underactuated
    systems (Spong, "The swing up control problem for the Acrobot", 1995), here in the
    reduced coordinates.

    Returns:
        ``(f (n_act,) [N or N·m], u̇ + N z (n_u,))``.
    """
    from scipy.linalg import null_space

    L = actuator_map(dm.kin, terms.lifted.E, terms.q)
    N = null_space(L)
    ud = np.asarray(udot, dtype=float)
    if N.shape[1]:
        z = np.linalg.solve(N.T @ terms.M @ N, -N.T @ inverse_dynamics(terms, ud))
        ud = ud + N @ z
    return np.linalg.lstsq(L.T, inverse_dynamics(terms, ud), rcond=None)[0], ud


def tree_acceleration(terms: ReducedTerms, udot: np.ndarray) -> np.ndarray:
    """All accelerations ``v̇ = E u̇ + Ė u`` (nv,)."""
    return terms.lifted.E @ udot + terms.edu


def closure_reactions(dm: DynamicsModel, terms: ReducedTerms, part: Partition,
                      udot: np.ndarray) -> np.ndarray:
    """Ideal closure reactions λ (r,) on the selected residual rows.

    From ``M a + h − τ = Cᵀ Sᵀ λ`` over all coordinates (cut coordinates massless), taking
    the dependent equations ``(S C_p)ᵀ λ = (M a + h − τ)_p``. Rows are angular-first per
    chord in the chord's parent-body frame: moments [N·m] then forces [N] (scaled by J_l⁻¹,
    the identity at closure).
    """
    k = dm.kin
    a = tree_acceleration(terms, udot)
    nt = k.nv_tree
    lhs = -terms.tau_full.copy()
    lhs[:nt] += terms.tree.M @ a[:nt] + terms.tree.h
    Rp = terms.lifted.C[np.ix_(part.rows, part.dependent)]
    return np.linalg.solve(Rp.T, lhs[part.dependent])


#: An independent speed "carries almost no inertia" when it dominates an eigenvector of M_r
#: whose eigenvalue is below this fraction of the largest: beyond κ = 1e5 double-precision
#: dynamics lose five digits in that direction, and an explicit simulator must resolve its
#: fast motion (a slender rod's free spin between two balls, a massless link between
#: coaxial revolutes).
LOW_INERTIA_RTOL = 1e-5
#: A speed dominates an eigenvector when its component exceeds this (unit eigenvectors).
DOMINANT_COMPONENT = 0.3


def low_inertia_speeds(dm: DynamicsModel, part: Partition, q: np.ndarray
                       ) -> list[tuple[tuple[str, ...], float]]:
    """The directions of M_r at q (at rest) with almost no inertia (:data:`LOW_INERTIA_RTOL`).

    Returns:
        ``[(independent speed names, λ/λ_max), …]`` from the smallest eigenvalue up; empty
        when M_r is well conditioned.
    """
    terms = reduced_terms(dm, DynamicsData.of(dm), part, q, np.zeros(part.independent.size))
    if not terms.M.size:
        return []
    w, V = np.linalg.eigh(terms.M)
    top = max(abs(w[-1]), 1e-300)
    names = [dm.kin.v_names[int(j)] for j in part.independent]
    return [(tuple(names[i] for i in np.flatnonzero(np.abs(V[:, n]) > DOMINANT_COMPONENT)),
             float(w[n] / top)) for n in range(len(w)) if w[n] < LOW_INERTIA_RTOL * top]


#: :func:`low_inertia_report` evaluates the reduced inertia only up to this many tree speeds
#: (Pinocchio's per-model data holds dense nv × nv matrices).
INERTIA_REPORT_MAX_NV = 600


def low_inertia_report(kin: CompiledModel) -> dict:
    """``low_inertia`` of ``rbc inspect --json`` (docs/cli.md): the independent speeds of the
    default partition that carry almost no inertia at its q_ref.

    Returns:
        ``{"partition", "limit", "evaluated", "directions": [{"speeds", "ratio"}…], "why"}``;
        ``evaluated`` is False (with ``why``) without a partition, beyond
        :data:`INERTIA_REPORT_MAX_NV` tree speeds, or when the dynamics cannot be built.
    """
    from rbc.model.solve import get_partition

    out = {"partition": None, "limit": LOW_INERTIA_RTOL, "evaluated": False,
           "directions": [], "why": ""}
    if not kin.partitions:
        out["why"] = "no partition"
        return out
    part = get_partition(kin, None)
    out["partition"] = part.name
    if kin.nv_tree > INERTIA_REPORT_MAX_NV:
        out["why"] = f"{kin.nv_tree} tree speeds (more than {INERTIA_REPORT_MAX_NV})"
        return out
    try:
        dirs = low_inertia_speeds(DynamicsModel.build(kin), part, part.q_ref)
    except RbcError as err:  # e.g. a tree the dynamics model cannot build
        out["why"] = str(err)
        return out
    out["evaluated"] = True
    out["directions"] = [{"speeds": list(n), "ratio": r} for n, r in dirs]
    return out

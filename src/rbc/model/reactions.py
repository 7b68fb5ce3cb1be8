"""Joint reactions of every joint, tree and cut alike, at one state (``rbc forces``).

Method (docs/dynamics.md, "Joint reactions"). At a closed state (q, u) with independent
accelerations u̇ the reduced solution gives every acceleration ``a = E u̇ + Ė u``. Then

1. **Cut-joint wrenches.** For each cut joint e = (b, c) an unknown wrench ``W_e`` [N·m; N]
   (world axes, about the world origin) that body b exerts on body c through the joint. Its
   generalized force is ``G_eᵀ W_e`` with ``G_e = J_t − J_c``: the world spatial Jacobians
   of the cut joint's child frame Jc reached through the tree (on c) and through the cut
   joint (body b and the cut coordinates; the augmented tree of :mod:`rbc.model.augmented`).
   Coupling rows add multipliers μ with generalized force ``Dγᵀ μ``. All coordinates' equations
   (tree and cut, the cut coordinates massless)

       M a + h + g − τ = Aᵀ x,    Aᵀ = [G_1ᵀ … G_nᵀ, Dγᵀ],   x = [W_1; …; W_n; μ]

   are solved for x in the least-squares, minimum-norm sense (truncated SVD, σ > 1e-9 σ₁).
2. **Tree-joint wrenches.** A body-by-body Newton–Euler recursion from the leaves: each
   moving body's demand ``Ḣ_i − (gravity, external wrenches, spring-dampers)`` (Featherstone
   2008 §5.3; Pinocchio frame velocities and spatial accelerations at (q, v, a)) minus the
   cut-joint wrenches acting on it, summed over the subtree below each tree joint, is the
   wrench that joint transmits (the recursive Newton–Euler backward pass with the cut-joint
   reactions as known external loads).
3. **Frames.** Every wrench is reported as the wrench the record parent exerts on the record
   child, in world axes, about the origin of the joint's child frame Jc (the record's
   ``child_frame`` placed on the child body).
4. **Free directions.** With ``w_Jc`` the wrench in Jc axes and ``S_j(q_j)`` the motion
   subspace, ``along = S_jᵀ w_Jc`` (one value per joint coordinate, N·m or N) must equal the
   joint's applied effort ``τ_j − α_j a_j + (Dγᵀ μ)_j`` (actuator port effort, damping,
   springs, constant efforts, Coulomb friction at v ≠ 0, minus the armature / reflected rotor
   inertia, plus coupling multipliers); ``free_residual = along − effort`` is the check.
   ``across`` is the rest of the wrench, the constraint part ``w − S S⁺ w`` (in world axes).
5. **Indeterminate reactions.** The null space of Aᵀ (self-stress: cut wrenches with no
   generalized force, e.g. a planar loop's out-of-plane components or a redundant closure)
   leaves the reactions non-unique. Among all admissible sets the one with the smallest
   Euclidean norm of all joints' stacked ``[n; f]`` (about each joint origin, N·m and N taken
   as numbers) and μ is reported; the joints whose reaction changes along a self-stress are
   listed as indeterminate. A self-stress does not change any ``along`` value.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from rbc.errors import RbcError, did_you_mean
from rbc.ir import spatial as sp
from rbc.model.compiled import CompiledModel, Partition
from rbc.model.couplings import coupling_terms
from rbc.model.dynamics import (
    DynamicsData,
    DynamicsModel,
    ReducedTerms,
    Wrench,
    forward_dynamics,
    inverse_dynamics,
    joint_passive_efforts,
    reduced_terms,
    spring_states,
    tree_acceleration,
)
from rbc.model.interfaces import actuator_map, port_jacobian
from rbc.model.tree import inertia_tensor

#: Singular values of Aᵀ (and of K, the self-stress images) above this fraction of the
#: largest are retained: the same cut as the maximal-coordinate reference, which drops the
#: out-of-plane rows of planar loops (exactly dependent, σ ≈ 1e-16 σ₁) and keeps every
#: physical row of the shipped records (σ_min/σ₁ ≥ 1e-4).
RANK_RTOL = 1e-9
#: A joint is indeterminate when a unit self-stress changes its wrench by more than this
#: (the images of orthonormal self-stress vectors are O(1); round-off leaves ~1e-15).
INDETERMINATE_TOL = 1e-9
#: Inverse dynamics: the actuators realize the requested accelerations when the unmet
#: reduced effort is below this fraction of max(1, ‖needed‖∞) (least-squares round-off
#: is ~1e-15 relative; an unactuated direction leaves O(1)).
REALIZE_RTOL = 1e-9

LOCAL = pin.ReferenceFrame.LOCAL


class ForcesError(RbcError):
    """A forces request cannot be met (e.g. actuators that cannot produce the motion)."""


@dataclass(frozen=True, eq=False)
class JointReaction:
    """The load one joint transmits.

    Attributes:
        name: record joint name; cut: whether it is a cut joint.
        point: (3,) world position of the joint origin (origin of Jc) [m].
        wrench: (6,) ``[n; f]`` the parent exerts on the child, world axes, about ``point``.
        along: (nv_j,) ``S_jᵀ w_Jc`` per joint coordinate [N·m or N].
        effort: (nv_j,) the joint's applied effort (module docstring, step 4).
        across: (6,) the constraint part of ``wrench`` (world axes, about ``point``).
        indeterminate: whether a self-stress changes this joint's reaction.
    """

    name: str
    cut: bool
    point: np.ndarray
    wrench: np.ndarray
    along: np.ndarray
    effort: np.ndarray
    across: np.ndarray
    indeterminate: bool

    @property
    def free_residual(self) -> np.ndarray:
        """(nv_j,) ``along − effort`` (vanishes when the loads balance)."""
        return self.along - self.effort


@dataclass(frozen=True, eq=False)
class Reactions:
    """Every record joint's reaction at one state.

    Attributes:
        joints: per record joint, in record order.
        couplings: (n_couplings,) multipliers μ [N·m or N per unit coefficient].
        null_space: dimension of the self-stress space (0: every reaction is unique).
        unbalanced: ‖Aᵀ x − (M a + h + g − τ)‖∞, the part of the generalized equations the
            joints cannot carry (0 at a consistent state).
    """

    joints: tuple[JointReaction, ...]
    couplings: np.ndarray
    null_space: int
    unbalanced: float

    def by_name(self) -> dict[str, JointReaction]:
        return {j.name: j for j in self.joints}


@dataclass(frozen=True, eq=False)
class LoadSolution:
    """A solved forces request.

    Attributes:
        mode: ``"inverse"`` (efforts computed for the accelerations) or ``"forward"``
            (accelerations produced by the given efforts).
        q: (nq,); v, a: (nv,) all speeds and accelerations; udot: (n_u,).
        efforts: (n_act,) port efforts [N·m or N].
        effort_null_space: dimension of the port efforts that produce no motion (n_act −
            rank L; 0 in forward mode).
        reactions: the joint reactions.
    """

    mode: str
    q: np.ndarray
    v: np.ndarray
    a: np.ndarray
    udot: np.ndarray
    efforts: np.ndarray
    effort_null_space: int
    reactions: Reactions


@dataclass(frozen=True, eq=False)
class Request:
    """A resolved forces request: the closed state and the loads, as arrays.

    Attributes:
        q: (nq,) closed configuration; u: (n_u,) independent speeds; udot: (n_u,) or None;
        efforts: (n_act,) or None (inverse dynamics); wrenches: external wrenches.
    """

    q: np.ndarray
    u: np.ndarray
    udot: np.ndarray | None
    efforts: np.ndarray | None
    wrenches: tuple[Wrench, ...]


def named_vector(names: Sequence[str], values: Mapping[str, float], option: str,
                 what: str) -> np.ndarray:
    """``{name: value}`` → a vector over ``names`` (zeros elsewhere).

    Raises:
        ForcesError: a name not in ``names`` (did-you-mean and the valid names).
    """
    out = np.zeros(len(names))
    index = {n: i for i, n in enumerate(names)}
    for name, value in values.items():
        if name not in index:
            close = did_you_mean(name, names)
            hint = f" (did you mean '{close}'?)" if close else ""
            valid = ", ".join(names) if names else "none"
            raise ForcesError(f"{option} {name}: not {what}{hint}; valid: {valid}")
        out[index[name]] = float(value)
    return out


def resolve_request(kin: CompiledModel, part: Partition, *,
                    assignments: Mapping[str, float], velocity: Mapping[str, float],
                    acceleration: Mapping[str, float] | None,
                    efforts: Mapping[str, float] | None,
                    wrenches: Sequence[Wrench] = ()) -> Request:
    """Close the mechanism at the prescribed independent coordinates and map the named
    speeds, accelerations, efforts and wrench bodies to arrays.

    Raises:
        SolveError, ClosureError: bad ``--set`` or a closure that cannot be reached.
        ForcesError: an unknown speed/acceleration coordinate or actuator (the valid ones
            listed), a wrench on an unknown or fixed body, or both accelerations and
            efforts given.
    """
    from rbc.model.solve import solve_named

    if acceleration and efforts:
        raise ForcesError("--acceleration and --effort exclude each other: accelerations "
                          "ask for the efforts that produce them (inverse dynamics), efforts "
                          "for the accelerations they produce (forward dynamics)")
    ind = [kin.v_names[int(j)] for j in part.independent]
    what = f"an independent coordinate of partition '{part.name}'"
    u = named_vector(ind, velocity, "--velocity", what)
    udot = (named_vector(ind, acceleration, "--acceleration", what)
            if acceleration else None)
    acts = [a.name for a in kin.record.actuators]
    f = named_vector(acts, efforts, "--effort", "an actuator") if efforts else None
    bodies = kin.record.body_index()
    for w in wrenches:
        if w.body not in bodies:
            close = did_you_mean(w.body, list(bodies))
            hint = f" (did you mean '{close}'?)" if close else ""
            raise ForcesError(f"--wrench {w.body}@…: unknown body{hint}; bodies: "
                              f"{', '.join(bodies)}")
        if kin.record.bodies[bodies[w.body]].kind == "fixed":
            raise ForcesError(f"--wrench {w.body}@…: '{w.body}' is welded to the world; a "
                              "wrench on it loads no joint of the mechanism")
    q = solve_named(kin, part.name, dict(assignments)).q
    return Request(q, u, udot, f, tuple(wrenches))


def solve_loads(dm: DynamicsModel, data: DynamicsData, part: Partition, q: np.ndarray,
                u: np.ndarray, *, udot: np.ndarray | None = None,
                efforts: np.ndarray | None = None, wrenches: tuple[Wrench, ...] = ()
                ) -> LoadSolution:
    """Efforts or accelerations, and every joint reaction, at a closed state (q, u).

    Args:
        q: (nq,) closed configuration; u: (n_u,) independent speeds.
        udot: (n_u,) independent accelerations for inverse dynamics (default 0: statics or
            steady motion); not with ``efforts``.
        efforts: (n_act,) port efforts for forward dynamics. Without actuators the request
            is forward with no efforts.
        wrenches: external wrenches (world axes) at body points.

    Raises:
        ForcesError: both udot and efforts given; the actuators cannot produce udot (names
            the independent coordinates of the unmet direction).
        SingularInertiaError: forward dynamics with a singular reduced inertia.
    """
    k = dm.kin
    n_act = len(k.record.actuators)
    if udot is not None and efforts is not None:
        raise ForcesError("give either accelerations (inverse dynamics: the efforts are "
                          "computed) or efforts (forward dynamics: the accelerations are "
                          "computed), not both")
    if efforts is None and n_act == 0:
        efforts = np.zeros(0)
    if efforts is not None:
        terms = reduced_terms(dm, data, part, q, u, np.asarray(efforts, dtype=float), wrenches)
        udot = forward_dynamics(dm, terms)
        f, null, mode = np.asarray(efforts, dtype=float), 0, "forward"
    else:
        udot = np.zeros(part.independent.size) if udot is None else np.asarray(udot, float)
        bare = reduced_terms(dm, data, part, q, u, None, wrenches)
        f, null = port_efforts(dm, bare, udot)
        terms = reduced_terms(dm, data, part, q, u, f, wrenches, lifted=bare.lifted)
        mode = "inverse"
    reactions = joint_reactions(dm, data, q, terms, udot, f, wrenches)
    return LoadSolution(mode, np.asarray(q, dtype=float), terms.v,
                        tree_acceleration(terms, udot), udot, f, null, reactions)


def port_efforts(dm: DynamicsModel, terms: ReducedTerms, udot: np.ndarray
                 ) -> tuple[np.ndarray, int]:
    """Minimum-norm port efforts f (n_act,) with ``Lᵀ f = M_r u̇ + h_r − τ_r`` (Coulomb
    friction included) and dim null(Lᵀ); ``terms`` without port efforts.

    Raises:
        ForcesError: the actuators cannot produce ``udot`` (names the unmet coordinates).
    """
    L = actuator_map(dm.kin, terms.lifted.E, terms.q)  # (n_act, n_u)
    need = inverse_dynamics(terms, udot) - terms.tau_coulomb
    f, _, rank, _ = np.linalg.lstsq(L.T, need, rcond=None)
    unmet = L.T @ f - need
    scale = max(1.0, float(np.abs(need).max(initial=0.0)))
    if np.abs(unmet).max(initial=0.0) > REALIZE_RTOL * scale:
        k = dm.kin
        names = [k.v_names[int(j)] for j, x in zip(terms.independent, unmet, strict=True)
                 if abs(x) > REALIZE_RTOL * scale]
        raise ForcesError(
            f"the actuators cannot produce the requested accelerations: an effort of "
            f"{np.abs(unmet).max():.4g} (N·m or N) is unmet along the independent "
            f"coordinates {', '.join(names)}; give --effort ACTUATOR=VALUE for forward "
            "dynamics (the accelerations are then computed)")
    return f, int(L.shape[0] - rank)


def joint_reactions(dm: DynamicsModel, data: DynamicsData, q: np.ndarray,
                    terms: ReducedTerms, udot: np.ndarray, f: np.ndarray | None = None,
                    wrenches: tuple[Wrench, ...] = ()) -> Reactions:
    """Every record joint's reaction (module docstring) at the state of ``terms``.

    Args:
        q: (nq,) the configuration ``terms`` was evaluated at.
        terms: reduced terms at (q, u) with the port efforts f and the wrenches included.
        udot: (n_u,) independent accelerations (from forward dynamics or prescribed).
        f: (n_act,) port efforts (None: none); wrenches: as given to ``terms``.
    """
    k = dm.kin
    q = np.asarray(q, dtype=float)
    a = tree_acceleration(terms, udot)
    v = terms.v
    tau_joint = _joint_efforts(dm, q, v, f)
    # generalized equations over all coordinates: M a + h + g − τ (cut coordinates massless)
    need = -(terms.tau_full + joint_passive_efforts(dm, q, v)[1])
    nt = k.nv_tree
    need[:nt] += terms.tree.M @ a[:nt] + terms.tree.h
    At = constraint_map(dm, data, q)  # (nv, 6 n_c + n_cp)
    x, null = _min_norm(At, need)
    unbalanced = float(np.abs(At @ x - need).max(initial=0.0))
    loads = _body_demands(dm, data, q, v, a, wrenches)
    frames = [_joint_frame(dm, data, k.edge(j.name)) for j in k.record.joints]
    points = np.array([T.translation for T in frames]).reshape(-1, 3)
    W, Wn = x[: 6 * k.n_chords], null[: 6 * k.n_chords]
    w0 = _joint_wrenches(k, _with_cut_loads(k, loads[:, :, None], W[:, None]),
                         W[:, None], points)[..., 0]
    x_cp = x[6 * k.n_chords:]
    indeterminate = np.zeros(len(k.record.joints), dtype=bool)
    if null.shape[1]:
        zero = np.zeros((k.n_bodies + 1, 6, null.shape[1]))
        K = _joint_wrenches(k, _with_cut_loads(k, zero, Wn), Wn, points)  # (n_j, 6, n_null)
        Kmu = null[6 * k.n_chords:]
        stack = np.concatenate([K.reshape(-1, K.shape[-1]), Kmu])
        z = -np.linalg.lstsq(stack, np.concatenate([w0.ravel(), x_cp]), rcond=RANK_RTOL)[0]
        w0 = w0 + K @ z
        x_cp = x_cp + Kmu @ z
        indeterminate = np.abs(K).max(axis=(1, 2)) > INDETERMINATE_TOL
    gen_cp = _coupling_matrix(k, q).T @ x_cp
    arm = _armature(dm)
    chords = set(k.chord_edges)
    out = []
    for i, (joint, T) in enumerate(zip(k.record.joints, frames, strict=True)):
        e = k.edge(joint.name)
        w = w0[i]
        R = T.rotation
        w_jc = np.concatenate([R.T @ w[:3], R.T @ w[3:]])
        S = k.kinds[e].motion_subspace(q[k.q_slice(e)])
        vs = k.v_slice(e)
        along = S.T @ w_jc
        effort = tau_joint[vs] - arm[vs] * a[vs] + gen_cp[vs]
        across_jc = w_jc - S @ np.linalg.lstsq(S, w_jc, rcond=None)[0] if S.size else w_jc
        across = np.concatenate([R @ across_jc[:3], R @ across_jc[3:]])
        out.append(JointReaction(joint.name, e in chords, np.array(T.translation), w, along,
                                 effort, across, bool(indeterminate[i])))
    return Reactions(tuple(out), x_cp, null.shape[1], unbalanced)


def support_reactions(dm: DynamicsModel, data: DynamicsData, q: np.ndarray,
                      terms: ReducedTerms, udot: np.ndarray) -> dict[str, np.ndarray]:
    """The wrench the ground exerts on each active support of a mode model (docs/supports.md).

    The supports are the last chords of the mode model (:mod:`rbc.model.modes`); their
    wrenches are the cut-joint wrenches of step 1 of the module docstring (the world is the
    cut joint's parent), moved to the support point.

    Args:
        q: (nq,) the configuration ``terms`` was evaluated at (port efforts included).
        udot: (n_u,) independent accelerations.

    Returns:
        ``{support: (6,) [n; f]}`` world axes, about the support frame's origin [N·m; N]
        (minimum norm when the supports are redundant, e.g. three points on one foot).
    """
    k = dm.kin
    a = tree_acceleration(terms, udot)
    coulomb = (terms.coulomb if terms.coulomb is not None
               else joint_passive_efforts(dm, q, terms.v)[1])  # the terms' own (e.g. held)
    need = -(terms.tau_full + coulomb)
    nt = k.nv_tree
    need[:nt] += terms.tree.M @ a[:nt] + terms.tree.h
    x, _ = _min_norm(constraint_map(dm, data, q), need)
    aug, pd = dm.augmented, data.augmented_data
    pin.updateFramePlacements(aug.model, pd)  # joint placements are from constraint_map
    out = {}
    first = k.n_chords - len(k.supports)
    for i, name in enumerate(k.supports):
        c = first + i
        w = x[6 * c: 6 * c + 6]
        p = pd.oMf[aug.tree_frame[c]].translation  # the support frame (Jc through the tree)
        out[name] = np.concatenate([w[:3] - np.cross(p, w[3:]), w[3:]])
    return out


def _joint_efforts(dm: DynamicsModel, q: np.ndarray, v: np.ndarray, f: np.ndarray | None
                   ) -> np.ndarray:
    """(nv,) joint-level efforts: passive (Coulomb included) plus port efforts."""
    smooth, coulomb = joint_passive_efforts(dm, q, v)
    tau = smooth + coulomb
    if f is not None and len(f):
        tau += port_jacobian(dm.kin, q).T @ np.asarray(f, dtype=float)
    return tau


def _armature(dm: DynamicsModel) -> np.ndarray:
    """(nv,) armature plus reflected rotor inertia per coordinate (0 on cut coordinates)."""
    out = np.zeros(dm.kin.nv)
    out[: dm.kin.nv_tree] = dm.tree.v_rbc(np.asarray(dm.tree.model.armature))
    return out


def _coupling_matrix(k: CompiledModel, q: np.ndarray) -> np.ndarray:
    """(n_couplings, nv) coupling rows ``Dγ(q)`` (:mod:`rbc.model.couplings`)."""
    return coupling_terms(k.coupling_forms, k.nv, q)[1]


def constraint_map(dm: DynamicsModel, data: DynamicsData, q: np.ndarray) -> np.ndarray:
    """``Aᵀ`` (nv, 6 n_c + n_cp): generalized force of unit cut-joint wrenches (world axes,
    about the world origin, ``[n; f]``, each acting on the cut joint's child through the tree
    and reacting on its parent through the cut joint) and of unit coupling multipliers."""
    k, aug = dm.kin, dm.augmented
    pd = data.augmented_data
    pin.computeJointJacobians(aug.model, pd, np.asarray(q, dtype=float)[aug.q_perm])
    n = k.n_chords
    At = np.zeros((k.nv, 6 * n + len(k.coupling_rows)))
    if n:
        G = (pd.J * (aug.mask_tb - aug.mask_cb))  # (n, 6, nv_pin): world twists, linear-first
        G = sp.from_pinocchio_motion(np.moveaxis(G, 1, 0).reshape(6, -1)).reshape(
            6, n, -1)
        cols = np.zeros((6 * n, k.nv))
        cols[:, aug.v_perm] = np.moveaxis(G, 0, 1).reshape(6 * n, -1)
        At[:, : 6 * n] = cols.T
    At[:, 6 * n:] = _coupling_matrix(k, q).T
    return At


def _min_norm(At: np.ndarray, rhs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Minimum-norm least-squares x of ``Aᵀ x = rhs`` and an orthonormal basis (m, d) of
    null(Aᵀ), by truncated SVD (:data:`RANK_RTOL`)."""
    m = At.shape[1]
    if m == 0:
        return np.zeros(0), np.zeros((0, 0))
    U, s, Vt = np.linalg.svd(At, full_matrices=True)
    r = int(np.sum(s > RANK_RTOL * s[0])) if s.size and s[0] > 0 else 0
    x = Vt[:r].T @ ((U[:, :r].T @ rhs) / s[:r])
    return x, Vt[r:].T


def _body_demands(dm: DynamicsModel, data: DynamicsData, q: np.ndarray, v: np.ndarray,
                  a: np.ndarray, wrenches: tuple[Wrench, ...]) -> np.ndarray:
    """(B + 1, 6) per vertex (bodies, then the world) ``Ḣ_i − F_i``: rate of spatial
    momentum minus gravity, external wrenches and spring-damper forces, ``[n; f]`` in world
    axes about the world origin (0 for fixed bodies and the world)."""
    k, t = dm.kin, dm.tree
    rec = k.record
    pd = data.pin_data
    pin.forwardKinematics(t.model, pd, t.q_pin(q[: k.nq_tree]), t.v_pin(v[: k.nv_tree]),
                          t.v_pin(a[: k.nv_tree]))
    pin.updateFramePlacements(t.model, pd)
    out = np.zeros((k.n_bodies + 1, 6))
    gravity = pin.Motion(np.array(rec.gravity, dtype=float), np.zeros(3))
    moving = [i for i, b in enumerate(rec.bodies) if b.kind != "fixed"]
    for i in moving:
        body, fid = rec.bodies[i], int(t.body_frame[i])
        T = pd.oMf[fid]
        inertia = pin.Inertia(body.mass, np.array(body.com, dtype=float),
                              inertia_tensor(body.inertia))
        V = pin.getFrameVelocity(t.model, pd, fid, LOCAL)
        A = pin.getFrameAcceleration(t.model, pd, fid, LOCAL)
        f_body = inertia * (A - T.actInv(gravity)) + V.cross(inertia * V)
        out[i] = sp.from_pinocchio_force(T.act(f_body).vector)
    bidx = rec.body_index()

    def load(body: str, p: np.ndarray, force: np.ndarray, moment: np.ndarray) -> None:
        i = bidx[body]
        if rec.bodies[i].kind != "fixed":
            out[i, :3] -= moment + np.cross(p, force)
            out[i, 3:] -= force

    for w in wrenches:
        i = bidx[w.body]
        p = pd.oMf[int(t.body_frame[i])].act(np.array(w.point, dtype=float))
        load(w.body, p, np.array(w.wrench[3:], dtype=float), np.array(w.wrench[:3], float))
    for s in spring_states(dm, q, v):
        load(s.a, s.pa, s.tension * s.n, np.zeros(3))
        load(s.b, s.pb, -s.tension * s.n, np.zeros(3))
    return out


def _with_cut_loads(k: CompiledModel, demands: np.ndarray, W: np.ndarray) -> np.ndarray:
    """Demands (B + 1, 6, m) minus the cut-joint wrenches W (6 n_c, m) acting on the bodies
    (+W_e on the cut joint's child, −W_e on its parent)."""
    out = np.array(demands, dtype=float)
    for n, e in enumerate(k.chord_edges):
        We = W[6 * n: 6 * n + 6]
        out[int(k.child[e])] -= We
        out[int(k.parent[e])] += We
    return out


def _joint_wrenches(k: CompiledModel, demands: np.ndarray, W: np.ndarray,
                    points: np.ndarray) -> np.ndarray:
    """(n_joints, 6, m) record joints' wrenches (parent on child, world axes about the joint
    origins ``points`` (n_joints, 3)) from the per-vertex demands (B + 1, 6, m) (cut loads
    already subtracted) and the cut-joint wrenches W (6 n_c, m) about the world origin.

    The backward pass: in reverse depth-first order each tree edge transmits the summed
    demand of the subtree below it, which is then added to the vertex above.
    """
    acc = np.array(demands, dtype=float)
    about_origin = np.zeros((len(k.edge_names), 6, acc.shape[2]))
    for e in reversed(k.tree_edges):
        down, up = ((int(k.child[e]), int(k.parent[e])) if k.sign[e] > 0
                    else (int(k.parent[e]), int(k.child[e])))
        about_origin[e] = acc[down] if k.sign[e] > 0 else -acc[down]
        acc[up] += acc[down]
    for n, e in enumerate(k.chord_edges):
        about_origin[e] = W[6 * n: 6 * n + 6]
    out = about_origin[[k.edge(j.name) for j in k.record.joints]]
    # about the joint origin p: n_p = n_O − p × f (column by column)
    out[:, :3] -= np.cross(points[:, :, None], out[:, 3:], axis=1)
    return out


def _joint_frame(dm: DynamicsModel, data: DynamicsData, e: int) -> pin.SE3:
    """World pose of edge e's child frame Jc (tree data at the current state)."""
    k, t = dm.kin, dm.tree
    return data.pin_data.oMf[int(t.body_frame[int(k.child[e])])] * k.B[e]


#: The along-free-direction check passes when every |free_residual| is below this fraction
#: of max(1, the largest reaction component): at a consistent state it is round-off
#: (measured ≤ 3e-14 relative on the shipped records); a load the joints cannot carry (an
#: inconsistent state) leaves O(1).
FREE_RESIDUAL_RTOL = 1e-9


def forces_report(kin: CompiledModel, part: Partition, sol: LoadSolution) -> dict:
    """The ``rbc forces --json`` document (docs/cli.md; keys are a contract)."""
    from rbc.model.solve import configuration_by_joint

    ind = [kin.v_names[int(j)] for j in part.independent]
    r = sol.reactions
    scale = max([1.0] + [float(np.abs(j.wrench).max()) for j in r.joints])
    worst = max([0.0] + [float(np.abs(j.free_residual).max(initial=0.0)) for j in r.joints])

    def vec(x: np.ndarray) -> list[float]:
        return [float(v) for v in x]

    reactions = {
        j.name: {"cut": j.cut, "point": vec(j.point), "force": vec(j.wrench[3:]),
                 "moment": vec(j.wrench[:3]), "along": vec(j.along), "effort": vec(j.effort),
                 "free_residual": vec(j.free_residual),
                 "across": {"force": vec(j.across[3:]), "moment": vec(j.across[:3])},
                 "indeterminate": j.indeterminate}
        for j in r.joints}
    return {
        "partition": part.name,
        "mode": sol.mode,
        "state": {"configuration": configuration_by_joint(kin, sol.q),
                  "velocity": dict(zip(kin.v_names, vec(sol.v), strict=True)),
                  "acceleration": dict(zip(kin.v_names, vec(sol.a), strict=True))},
        "accelerations": dict(zip(ind, vec(sol.udot), strict=True)),
        "efforts": dict(zip((a.name for a in kin.record.actuators), vec(sol.efforts),
                            strict=True)),
        "effort_null_space": sol.effort_null_space,
        "reactions": reactions,
        "indeterminate": [j.name for j in r.joints if j.indeterminate],
        "reaction_null_space": r.null_space,
        "couplings": dict(zip((c.name for c in kin.record.couplings), vec(r.couplings),
                              strict=True)),
        "checks": {"free_residual": worst, "free_residual_limit": FREE_RESIDUAL_RTOL,
                   "scale": scale, "unbalanced": r.unbalanced,
                   "passed": worst <= FREE_RESIDUAL_RTOL * scale},
    }

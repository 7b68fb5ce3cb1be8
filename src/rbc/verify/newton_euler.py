"""Reference forward dynamics: maximal-coordinate Newton–Euler from the record (DESIGN.md §6).

No tree, no lift, no closure Jacobian: every non-fixed body is a free rigid body and every
record joint (tree or cut alike) is a set of constraint rows between its two bodies.

**Unknowns** per body i: ``x_i = [ω̇_i; a_i]`` — world angular acceleration and centre-of-
mass acceleration (world axes) [rad/s², m/s²]. Newton–Euler about the COM (Featherstone
2008 §2.15): ``I_w ω̇ + ω × I_w ω = n``, ``m a = f``, ``I_w = R I Rᵀ``.

**Joint rows.** Joint j = (b, c) — every record joint, and in a support mode every active
support's closure to the world (a cut joint from the resting world, :mod:`rbc.model.modes`),
whose rows carry the support reactions — with frames ``Jb = T_b A_j`` and ``Jc = T_c B_j`` (record
attachment frames). With ``p`` the origin of Jc, ``r_i = p − c_i`` and the rigid velocity
fields ``v_i(p) = v_ci + ω_i × r_i``, the relative twist of Jc w.r.t. body b written in
Jc is ``V_rel = R̄ᵀ [ω_c − ω_b; v_c(p) − v_b(p)]`` (``R̄ = diag(R_Jc, R_Jc)``), and the joint
allows ``V_rel = S_j(q_j) q̇_j``. The constraint rows are the annihilator ``P_j`` of S_j
(``P_j V_rel = 0``). Differentiating ``R̄ᵀ y`` (``d/dt R_Jcᵀ y = R_Jcᵀ(ẏ − ω_c × y)``) with p
moving with body c:

    V̇_rel = R̄ᵀ [ω̇_c − ω̇_b; a_c(p) − a_b(p)] + β,
    β = R̄ᵀ [−ω_c × Δω; ω_c × (ω_c × r_c) − ω_b × (ω_b × r_b) − (ω_b + ω_c) × Δv],

``a_i(p) = a_ci + ω̇_i × r_i + ω_i × (ω_i × r_i)`` minus its velocity product (kept in β),
``Δω = ω_c − ω_b``, ``Δv = v_c(p) − v_b(p)``. With ``Ṗ V_rel = −P Ṡ q̇`` (from ``P S = 0``)
the rows are ``P R̄ᵀ [D_c x_c − D_b x_b] = −P (β − Ṡ q̇)``, ``D_i = [I 0; −[r_i]× I]``.

**Coupling rows.** A coupling ``γ(q) = 0`` between 1-coordinate joints adds the row
``Σ_k g_k k_k x = −Σ_k g_k κ_k − Σ ∂²γ q̇ q̇`` (from ``q̈_k = k_k x + κ_k``, below) with the
gradient ``g = Dγ`` taken from the record's definition (a linear coupling's coefficients;
``(1, −h'(q_in))`` and ``−h'' q̇_in²`` for ``γ = q_out − h(q_in)``): the joints' own rates,
whether the joint is a tree or a cut joint.

**Loads.** Joint efforts τ_j (damping, Coulomb friction, springs, constant joint efforts,
actuator port efforts at joint, tendon, profile (``h'(q) f``) and velocity ports, drag)
act on the two bodies as equal and opposite wrenches along the
motion subspace: the generalized body force is ``k_jᵀ τ_j`` with ``q̇_j = k_j ν`` (ν: the body
velocities), ``k_j = S⁺ R̄ᵀ [−D_b, D_c]`` (so the pair does power τ_jᵀ q̇_j and no other).
Armature and reflected rotor inertia α_j add ``α_j k_jᵀ k_j`` to the mass matrix and
``−α_j k_jᵀ κ_j`` to the force (``q̈_j = k_j x + κ_j``). Gravity ``m g`` at the COM,
gyroscopic moments, point-to-point spring-dampers, distance ports (``∓f n`` at their two
attachment points, n from a to b) and external wrenches at body points.

**Solve.** ``M x = F + Gᵀλ``, ``G x = −γ`` by the null-space method in double precision
(SVD of G truncated at 1e-9 σ₁: the out-of-plane rows of planar loops are redundant).

**Blocks.** The bodies fall into the connected components of the record's joints (the
members of a composed system; one component for a single robot). Every joint row — and
every support closure, to the resting world — involves the bodies of one component only;
the rows of a mode model's extra chords joining two components (the hand links of a
composition) are the coupling rows. The null space of G is then taken in two levels: per
component the SVD of its own rows gives a particular solution and a basis Z_c; the coupling
rows on ``Z = diag(Z_c)`` give the rest (``G_R Z w = −γ_R − G_R x_p``, one more SVD). The
multipliers follow the same way: the coupling rows' from ``(G_R Z)ᵀ λ_R = Zᵀ(Mx − F)`` (the
consistency of every component's equations), then each component's minimum-norm ones; when
the coupling rows are redundant (λ_R not unique) the multipliers are solved in one level,
so they are always the minimum-norm ones. This is exact algebra on the same system (not a
different model): on the ring of five humanoids it replaces SVDs of a 1230-column G by five
of 246 columns and one of 135.

**State.** Body poses and velocities are evaluated from (q, v) by Pinocchio forward
kinematics of the tree model; the joint coordinates q_j (for S_j(q_j) and springs) are read
from q. The implied accelerations of the reduced solution are the Pinocchio frame
accelerations for ``(q, v, a = E u̇ + Ė u)`` (:meth:`NewtonEuler.implied`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from rbc.ir import spatial as sp
from rbc.ir.record import JointEffort, SpringForce
from rbc.ir.unionfind import UnionFind
from rbc.model.dynamics import DynamicsModel, Wrench, coulomb_direction
from rbc.model.profiles import profile_terms
from rbc.model.tree import inertia_tensor
from rbc.verify.kkt50 import annihilator

#: Singular values of G above this fraction of σ₁ are retained (as the 50-digit reference).
SVD_RTOL = 1e-9
LWA = pin.ReferenceFrame.LOCAL_WORLD_ALIGNED


@dataclass(frozen=True)
class BodyState:
    """World pose and motion of one body: R (3, 3), com (3,), omega (3,), vcom (3,)."""

    R: np.ndarray
    com: np.ndarray
    omega: np.ndarray
    vcom: np.ndarray


@dataclass(eq=False)
class NewtonEuler:
    """The maximal-coordinate model of a record (free bodies, joint constraint rows)."""

    dm: DynamicsModel
    data: pin.Data
    moving: tuple[int, ...]
    #: per record body its component (module docstring, "Blocks"); −1: fixed or the world
    component: np.ndarray | None = None
    _last: tuple | None = None  # (state key, system, solution, null spaces)

    @classmethod
    def build(cls, dm: DynamicsModel) -> NewtonEuler:
        rec, k = dm.kin.record, dm.kin
        moving = tuple(i for i, b in enumerate(rec.bodies) if b.kind != "fixed")
        uf = UnionFind(len(rec.bodies) + 1)
        nb = len(rec.bodies)
        for e in range(len(rec.joints)):
            b, c = int(k.parent[e]), int(k.child[e])
            if b in moving and c in moving:
                uf.union(b, c)
        roots = {r: n for n, r in enumerate(dict.fromkeys(uf.find(i) for i in moving))}
        comp = np.full(nb + 1, -1, dtype=np.int64)
        for i in moving:
            comp[i] = roots[uf.find(i)]
        return cls(dm, dm.tree.model.createData(), moving, comp)

    # ------------------------------------------------------------------ state
    def _fk(self, q: np.ndarray, v: np.ndarray, a: np.ndarray | None = None) -> None:
        t, k = self.dm.tree, self.dm.kin
        qp, vp = t.q_pin(q[: k.nq_tree]), t.v_pin(v[: k.nv_tree])
        ap = t.v_pin(a[: k.nv_tree]) if a is not None else np.zeros(t.model.nv)
        pin.forwardKinematics(t.model, self.data, qp, vp, ap)
        pin.updateFramePlacements(t.model, self.data)

    def _bodies(self) -> list[BodyState]:
        t, rec = self.dm.tree, self.dm.kin.record
        out = []
        for i, body in enumerate(rec.bodies):
            fid = int(t.body_frame[i])
            T = self.data.oMf[fid]
            c = T.act(np.array(body.com, dtype=float))
            V = pin.getFrameVelocity(t.model, self.data, fid, LWA)
            w = np.array(V.angular)
            out.append(BodyState(np.array(T.rotation), c, w,
                                 np.array(V.linear) + np.cross(w, c - T.translation)))
        z = np.zeros(3)
        out.append(BodyState(np.eye(3), z, z, z))  # the world (vertex B), at rest
        return out

    def implied(self, q: np.ndarray, v: np.ndarray, a: np.ndarray) -> np.ndarray:
        """Body accelerations (n_moving, 6) ``[ω̇; a_com]`` (world) of tree motion (q, v, a)."""
        self._fk(q, v, a)
        t, rec = self.dm.tree, self.dm.kin.record
        out = np.zeros((len(self.moving), 6))
        for n, i in enumerate(self.moving):
            fid = int(t.body_frame[i])
            T = self.data.oMf[fid]
            r = T.rotation @ np.array(rec.bodies[i].com, dtype=float)
            A = pin.getFrameClassicalAcceleration(t.model, self.data, fid, LWA)
            V = pin.getFrameVelocity(t.model, self.data, fid, LWA)
            wd, w = np.array(A.angular), np.array(V.angular)
            out[n] = np.concatenate([wd, np.array(A.linear) + np.cross(wd, r)
                                     + np.cross(w, np.cross(w, r))])
        return out

    # ------------------------------------------------------------------ the model
    def accelerations(self, q: np.ndarray, v: np.ndarray, f: np.ndarray | None = None,
                      wrenches: tuple[Wrench, ...] = ()) -> tuple[np.ndarray, float]:
        """Reference body accelerations (n_moving, 6) and the velocity residual ‖G ν‖∞.

        Args:
            q: (nq,) closed configuration; v: (nv,) speeds (tree part used for the body
                motion, joint coordinates' speeds re-derived from it); f: (n_act,) port
                efforts; wrenches: external wrenches ``[n; f]`` (world axes) at body points.
        """
        sys, x, _ = self._solve(q, v, f, wrenches)
        return x.reshape(-1, 6), float(np.abs(sys.G @ sys.nu).max(initial=0.0))

    def _solve(self, q: np.ndarray, v: np.ndarray, f: np.ndarray | None,
               wrenches: tuple[Wrench, ...]) -> tuple[_System, np.ndarray, tuple]:
        """The system, its solution x and its null spaces at a state (the last state's kept:
        :meth:`accelerations` and :meth:`reactions` at one state build and solve once)."""
        key = (np.asarray(q, float).tobytes(), np.asarray(v, float).tobytes(),
               None if f is None else np.asarray(f, float).tobytes(), tuple(wrenches))
        if self._last is not None and self._last[0] == key:
            return self._last[1:]
        sys = self._system(q, v, f, wrenches)
        null = _null_spaces(sys.G, sys.gamma, sys.blocks)
        x = _null_space_solve(sys.M, sys.F, null)
        self._last = (key, sys, x, null)
        return sys, x, null

    def reactions(self, q: np.ndarray, v: np.ndarray, f: np.ndarray | None = None,
                  wrenches: tuple[Wrench, ...] = ()) -> dict[str, np.ndarray]:
        """Reference joint reactions: per record joint the wrench (6,) ``[n; f]`` the parent
        exerts on the child, world axes, about the origin of Jc.

        From the multipliers of the same system, ``Gᵀ λ = M x − F`` (minimum-norm λ: with
        orthonormal annihilator rows this is the smallest Euclidean norm of the joints'
        constraint wrenches in Jc), the constraint part ``R̄ P_jᵀ λ_j`` plus the joint's
        effort along its free directions ``R̄ (S⁺)ᵀ (τ_j − α_j q̈_j)`` with ``q̈_j = k_j x + κ_j``.
        """
        sys, x, null = self._solve(q, v, f, wrenches)
        lam = _min_norm_multipliers(sys.G, sys.M @ x - sys.F, sys.blocks, null)
        coupled: dict[str, float] = {}  # coupling multipliers act as joint efforts c_k μ
        for row, terms in sys.couplings:
            for n, c in terms:
                coupled[n] = coupled.get(n, 0.0) + c * lam[row]
        out = {}
        for j in sys.joints:
            w = j.P.T @ lam[j.rows]
            if j.S.shape[1]:
                qdd = j.k @ x + j.kappa
                tau = j.tau - j.alpha * qdd + coupled.get(j.name, 0.0)
                w = w + np.linalg.pinv(j.S).T @ tau
            out[j.name] = np.concatenate([j.R @ w[:3], j.R @ w[3:]])
        return out

    def _system(self, q: np.ndarray, v: np.ndarray, f: np.ndarray | None,
                wrenches: tuple[Wrench, ...]) -> _System:
        """The maximal-coordinate system ``M x = F + Gᵀλ``, ``G x = −γ`` (module docstring)."""
        k, rec = self.dm.kin, self.dm.kin.record
        self._fk(q, v)
        bs = self._bodies()
        nb = len(self.moving)
        col = {i: 6 * n for n, i in enumerate(self.moving)}
        M = np.zeros((6 * nb, 6 * nb))
        F = np.zeros(6 * nb)
        nu = np.zeros(6 * nb)
        g = np.array(rec.gravity, dtype=float)
        for i, o in col.items():
            b, s = rec.bodies[i], bs[i]
            Iw = s.R @ inertia_tensor(b.inertia) @ s.R.T
            M[o: o + 3, o: o + 3] = Iw
            M[o + 3: o + 6, o + 3: o + 6] = b.mass * np.eye(3)
            F[o: o + 3] -= np.cross(s.omega, Iw @ s.omega)
            F[o + 3: o + 6] += b.mass * g
            nu[o: o + 6] = np.concatenate([s.omega, s.vcom])
        bidx = rec.body_index()

        def point_load(body: str, p: np.ndarray, force: np.ndarray, moment: np.ndarray) -> None:
            i = bidx[body]
            if i in col:
                o = col[i]
                F[o: o + 3] += moment + np.cross(p - bs[i].com, force)
                F[o + 3: o + 6] += force

        def point_motion(body: str, xyz) -> tuple[np.ndarray, np.ndarray]:
            s = bs[bidx[body]]
            T = self.data.oMf[int(self.dm.tree.body_frame[bidx[body]])]
            p = T.act(np.array(xyz, dtype=float))
            return p, s.vcom + np.cross(s.omega, p - s.com)

        for w in wrenches:
            p, _ = point_motion(w.body, w.point)
            point_load(w.body, p, np.array(w.wrench[3:]), np.array(w.wrench[:3]))
        efforts = {j.name: np.zeros(k.kinds[k.edge(j.name)].nv) for j in rec.joints}
        for fo in rec.forces:
            if isinstance(fo, SpringForce):
                pa, va = point_motion(fo.a.body, fo.a.xyz)
                pb, vb = point_motion(fo.b.body, fo.b.xyz)
                length = float(np.linalg.norm(pb - pa))
                n = (pb - pa) / length
                tension = fo.stiffness * (length - fo.rest_length) + fo.damping * n @ (vb - va)
                point_load(fo.a.body, pa, tension * n, np.zeros(3))
                point_load(fo.b.body, pb, -tension * n, np.zeros(3))
            elif isinstance(fo, JointEffort):
                efforts[fo.joint] = efforts[fo.joint] + fo.value
        armature = {j.name: j.armature for j in rec.joints}
        # joint → (actuator, index, coefficient): a tendon port pulls on each of its joints
        # with c_k f (it has no drive data, the schema refuses it)
        acts = {n: (a, i, c) for i, a in enumerate(rec.actuators) for n, c in a.port_terms}
        if f is not None:  # ports that are not linear in q (the schema refuses drive data)
            for i, a in enumerate(rec.actuators):
                if a.distance is not None:  # +f pushes the attachment points apart
                    pa, _ = point_motion(a.distance[0].body, a.distance[0].xyz)
                    pb, _ = point_motion(a.distance[1].body, a.distance[1].xyz)
                    n = (pb - pa) / np.linalg.norm(pb - pa)
                    point_load(a.distance[0].body, pa, -f[i] * n, np.zeros(3))
                    point_load(a.distance[1].body, pb, f[i] * n, np.zeros(3))
                elif a.profile is not None:  # τ_j = h'(q_j) f
                    name, prof = a.profile
                    slope = profile_terms(prof, float(q[k.q_slice(k.edge(name))][0]))[1]
                    efforts[name] = efforts[name] + slope * f[i]
                for name, c_k, coef in a.velocity:  # τ_k = c_k f on its coordinate
                    efforts[name] = efforts[name] + coef * f[i] * np.eye(
                        len(efforts[name]))[c_k]
        G_rows, gam, joints = [], [], []
        row_comp: list[int] = []  # per row of G its component (−1: coupling)
        rates: dict[str, tuple[np.ndarray, np.ndarray]] = {}  # joint: (k_j, κ_j)
        row = 0
        for j in _constraint_joints(k):
            e = k.edge(j.name)
            kind = k.kinds[e]
            b, c = int(k.parent[e]), int(k.child[e])
            T_Jc = self.data.oMf[int(self.dm.tree.body_frame[c])] * k.B[e]
            p, Rc = T_Jc.translation, T_Jc.rotation
            sb, sc = bs[b], bs[c]
            rb, rc = p - sb.com, p - sc.com
            dw = sc.omega - sb.omega
            dv = (sc.vcom + np.cross(sc.omega, rc)) - (sb.vcom + np.cross(sb.omega, rb))
            beta = np.concatenate([
                Rc.T @ -np.cross(sc.omega, dw),
                Rc.T @ (np.cross(sc.omega, np.cross(sc.omega, rc))
                        - np.cross(sb.omega, np.cross(sb.omega, rb))
                        - np.cross(sb.omega + sc.omega, dv))])
            # (6, 6nb) map from body velocities/accelerations to the relative twist in Jc
            Dm = np.zeros((6, 6 * nb))
            for i, r, sgn in ((c, rc, 1.0), (b, rb, -1.0)):
                if i in col:
                    D = np.eye(6)
                    D[3:, :3] = -sp.skew(r)
                    Dm[:, col[i]: col[i] + 6] += sgn * np.kron(np.eye(2), Rc.T) @ D
            qj = q[k.q_slice(e)]
            S = kind.motion_subspace(qj)
            P = annihilator(S)
            qd = np.linalg.pinv(S) @ (Dm @ nu) if kind.nv else np.zeros(0)
            bias = beta - kind.motion_subspace_rate(qj, qd)
            G_rows.append(P @ Dm)
            gam.append(P @ bias)
            row_comp.extend([self._block(b, c)] * P.shape[0])
            rows = slice(row, row + P.shape[0])
            row += P.shape[0]
            if not kind.nv:
                joints.append(_JointRows(j.name, rows, P, S, Rc, np.zeros((0, 6 * nb)),
                                         np.zeros(0), np.zeros(0), 0.0))
                continue
            kj = np.linalg.pinv(S) @ Dm  # (nv_j, 6nb): q̇_j = k_j ν
            tau = efforts.get(j.name, 0.0) - j.damping * qd - j.friction * coulomb_direction(qd)
            if j.spring.stiffness and kind.nv == 1:
                tau = tau - j.spring.stiffness * (qj - j.spring.rest)
            alpha = armature.get(j.name, 0.0)
            if j.name in acts:
                act, ia, coef = acts[j.name]
                tau = tau - act.viscous * qd - act.coulomb * coulomb_direction(qd)
                if f is not None:
                    tau = tau + coef * f[ia]
                alpha += act.rotor_inertia * act.transmission.reduction ** 2
            F += kj.T @ tau
            kappa = np.linalg.pinv(S) @ bias  # q̈_j = k_j x + κ_j
            rates[j.name] = (kj, kappa, qd)
            if alpha:  # on the two bodies' columns only
                nz = np.flatnonzero(np.any(kj != 0.0, axis=0))
                M[np.ix_(nz, nz)] += alpha * kj[:, nz].T @ kj[:, nz]
                F -= alpha * kj.T @ kappa
            joints.append(_JointRows(j.name, rows, P, S, Rc, kj, kappa, tau, alpha))
        couplings = []
        for cp in rec.couplings:
            grad, curv = _coupling_gradient(cp, {n: float(r[2][0]) for n, r in rates.items()},
                                            q, k)
            G_rows.append(sum(c * rates[n][0] for n, c in grad))
            gam.append(sum(c * rates[n][1] for n, c in grad) + curv)
            ends = [int(x) for n, _ in grad for x in (k.parent[k.edge(n)], k.child[k.edge(n)])]
            row_comp.append(self._block(*ends))
            couplings.append((row, grad))
            row += 1
        G = np.vstack(G_rows) if G_rows else np.zeros((0, 6 * nb))
        gamma = np.concatenate(gam) if gam else np.zeros(0)
        return _System(M, F, G, gamma, nu, tuple(joints), tuple(couplings),
                       self._blocks(np.array(row_comp, dtype=np.int64)))

    def _block(self, *bodies: int) -> int:
        """The component whose rows a joint (or coupling) between ``bodies`` adds to, or −1:
        a coupling row (bodies of two components, or none moving; module docstring)."""
        if self.component is None:
            return -1
        found = {int(self.component[i]) for i in bodies} - {-1}
        return found.pop() if len(found) == 1 else -1

    def _blocks(self, row_comp: np.ndarray) -> Blocks | None:
        """The two-level structure of G (module docstring), None for one component."""
        n_comp = -1 if self.component is None else int(self.component.max(initial=-1)) + 1
        if n_comp <= 1:
            return None
        body_comp = self.component[list(self.moving)]
        cols = tuple(np.flatnonzero(np.repeat(body_comp == c, 6)) for c in range(n_comp))
        rows = tuple(np.flatnonzero(row_comp == c) for c in range(n_comp))
        return Blocks(cols, rows, np.flatnonzero(row_comp == -1))


@dataclass(frozen=True, eq=False)
class _JointRows:
    """One joint's share of the system: its rows of G, annihilator P (rows, 6), motion
    subspace S (6, nv_j), Jc rotation R (3, 3), ``q̇_j = k ν`` (nv_j, 6 n_b), ``q̈_j = k x + κ``,
    effort τ (nv_j,) and armature α."""

    name: str
    rows: slice
    P: np.ndarray
    S: np.ndarray
    R: np.ndarray
    k: np.ndarray
    kappa: np.ndarray
    tau: np.ndarray
    alpha: float


@dataclass(frozen=True, eq=False)
class Blocks:
    """The two-level structure of G (module docstring, "Blocks"): per component its columns
    (6 per body) and rows; the coupling rows."""

    cols: tuple[np.ndarray, ...]
    rows: tuple[np.ndarray, ...]
    coupling: np.ndarray


@dataclass(frozen=True, eq=False)
class _System:
    """``M x = F + Gᵀλ``, ``G x = −γ`` with body velocities ν, the joints' rows, the
    coupling rows (row of G, coefficients by joint name) and the block structure."""

    M: np.ndarray
    F: np.ndarray
    G: np.ndarray
    gamma: np.ndarray
    nu: np.ndarray
    joints: tuple[_JointRows, ...]
    couplings: tuple[tuple[int, tuple[tuple[str, float], ...]], ...]  # (row, terms)
    blocks: Blocks | None = None


def _coupling_gradient(cp, speeds: dict[str, float], q: np.ndarray, k
                       ) -> tuple[tuple[tuple[str, float], ...], float]:
    """``(((joint, ∂γ/∂q_joint), …), Σ ∂²γ q̇ q̇)`` of record coupling cp at q, from the
    record's definition (linear: its terms, no curvature; profile ``γ = q_out − h(q_in)``:
    ``(1, −h')`` and ``−h'' q̇_in²``), with the joints' speeds q̇ from the body motion."""
    if cp.profile is None:
        return tuple(cp.terms), 0.0
    x = float(q[k.q_slice(k.edge(cp.input))][0])
    _, dh, d2h = profile_terms(cp.profile, x)
    return ((cp.joint, 1.0), (cp.input, -dh)), -d2h * speeds[cp.input] ** 2


def _min_norm_multipliers(G: np.ndarray, rhs: np.ndarray, blocks: Blocks | None = None,
                          null: tuple | None = None) -> np.ndarray:
    """Minimum-norm λ with ``Gᵀ λ = rhs`` (least squares, truncated SVD at SVD_RTOL), in
    two levels over ``blocks`` when the coupling rows' multipliers are unique (module
    docstring, "Blocks"; ``null``: :func:`_null_spaces`' result)."""
    if G.shape[0] == 0:
        return np.zeros(0)
    if blocks is None or null is None or null[2] is None:
        return np.linalg.lstsq(G.T, rhs, rcond=SVD_RTOL)[0]
    R, Zb = blocks.coupling, null[2]
    lam = np.zeros(G.shape[0])
    if R.size:
        A = (G[R] @ Zb).T  # each component's equations consistent: (G_R Z)ᵀ λ_R = Zᵀ rhs
        s = np.linalg.svd(A, compute_uv=False)
        if s.size < R.size or s[-1] <= SVD_RTOL * s[0]:  # λ_R not unique: one level
            return np.linalg.lstsq(G.T, rhs, rcond=SVD_RTOL)[0]
        lam[R] = np.linalg.lstsq(A, Zb.T @ rhs, rcond=None)[0]
    rest = rhs - G[R].T @ lam[R]
    for cols, rows in zip(blocks.cols, blocks.rows, strict=True):
        if rows.size:
            lam[rows] = np.linalg.lstsq(G[np.ix_(rows, cols)].T, rest[cols],
                                        rcond=SVD_RTOL)[0]
    return lam


def _particular_null(G: np.ndarray, gamma: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(x_p, Z)``: the minimum-norm least-squares solution of ``G x = −γ`` and a basis of
    the null space of G (columns), by one SVD truncated at SVD_RTOL σ₁."""
    n = G.shape[1]
    if G.shape[0] == 0:
        return np.zeros(n), np.eye(n)
    U, s, Vt = np.linalg.svd(G, full_matrices=True)
    r = int(np.sum(s > SVD_RTOL * s[0])) if s.size and s[0] > 0 else 0
    return -Vt[:r].T @ ((U[:, :r].T @ gamma) / s[:r]), Vt[r:].T


def _null_spaces(G: np.ndarray, gamma: np.ndarray, blocks: Blocks | None
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """``(x_p, Z, Z_blocks)``: a solution of ``G x = −γ``, a basis of null(G), and the
    components' own null spaces ``diag(Z_c)`` (None in one level; module docstring)."""
    if blocks is None:
        return (*_particular_null(G, gamma), None)
    n = G.shape[1]
    x_p = np.zeros(n)
    parts = []
    for cols, rows in zip(blocks.cols, blocks.rows, strict=True):
        xc, Zc = _particular_null(G[np.ix_(rows, cols)], gamma[rows])
        x_p[cols] = xc
        Zb = np.zeros((n, Zc.shape[1]))
        Zb[cols] = Zc
        parts.append(Zb)
    Zb = np.hstack(parts)
    R = blocks.coupling
    if R.size == 0:
        return x_p, Zb, Zb
    GZ = G[R] @ Zb
    w_p, Z2 = _particular_null(GZ, gamma[R] + G[R] @ x_p)
    return x_p + Zb @ w_p, Zb @ Z2, Zb


def _constraint_joints(k) -> list:
    """The joints that constrain the bodies: the record's joints, then the support closures
    of a mode model (cut joints to the world, :mod:`rbc.model.modes`)."""
    n = len(k.record.joints)
    return [*k.record.joints, *(k.edge_joints[e] for e in k.chord_edges if e >= n
                                and not k.edge_names[e].endswith(".root"))]


def _null_space_solve(M: np.ndarray, F: np.ndarray, null: tuple) -> np.ndarray:
    """x with ``G x = −γ`` (least squares) and ``Zᵀ(M x − F) = 0``, from the particular
    solution and null space ``null`` of :func:`_null_spaces`."""
    x_p, Z = null[0], null[1]
    if Z.shape[1] == 0:
        return x_p
    w = np.linalg.solve(Z.T @ M @ Z, Z.T @ (F - M @ x_p))
    return x_p + Z @ w

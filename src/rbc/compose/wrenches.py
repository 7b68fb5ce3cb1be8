"""Wrench recovery in a composed system: the reaction of every closure (soles, hand links,
the members' loops) at a state, and the affine support-wrench maps λ_b(f) at a fixed state
(docs/composition.md, "Wrench recovery").

**Reactions.** With all accelerations ``a = E u̇ + Ė u`` known, every coordinate's equation
(tree and cut coordinates, the latter massless)

    M_T a + h_T + g_T − τ = Aᵀ x,       Aᵀ = [G_1ᵀ … G_nᵀ, Dγᵀ],

is solved for the closure wrenches x (minimum norm: :func:`min_norm_solve`; ``G_e = J_t − J_c`` the
generalized force of a unit wrench of chord e, :func:`rbc.model.reactions.constraint_map`).
Chord e's wrench is what its first body (the world, for a support) exerts on its second:
the ground on the sole, palm a on palm b. Reported in world axes about the origin of the
chord's second frame (the sole frame, palm b). Only self-stresses (the out-of-plane
components of the members' planar loops) are indeterminate; supports and links are
unique whenever their rows are independent.

**Affine maps.** At a fixed state (q, u) the accelerations are affine in the port efforts,
``u̇(f) = u̇₀ + Γ⁻¹ Lᵀ f``, and so is the right-hand side, hence the support wrenches:

    λ_b(f) = λ_b0 + Λ_b f,      Λ = X [M_T E_T Γ⁻¹ Lᵀ; 0] − X J_ℓᵀ  (rows of support b),

with X the minimum-norm pseudo-inverse of Aᵀ. At a prescribed acceleration (inverse
dynamics) these make the support-wrench limits (centre of pressure, friction) linear
inequalities in f — what the allocation of issue #20 needs. The same solve gives the
mode's link chords' rows (the hand links: ``λ_l(f) = λ_l0 + Λ_l f``, palm a on palm b), the
link forces the allocated efforts imply.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg

from rbc.compose.dynamics import ComposedTerms, MemberModel, forward_dynamics
from rbc.model.dynamics import DynamicsData, passive_efforts, tree_terms
from rbc.model.interfaces import port_jacobian
from rbc.model.reactions import constraint_map

#: Singular values of Aᵀ above this fraction of the largest are kept (the reactions
#: module's cut: drops the exactly redundant out-of-plane rows of planar loops).
RANK_RTOL = 1e-9


@dataclass(frozen=True, eq=False)
class ChordWrenches:
    """Closure wrenches at one state.

    Attributes:
        names: chord (cut joint) names of the mode model, in chord order.
        wrench: (n_c, 6) ``[n; f]`` [N·m; N], world axes, about each chord's point.
        point: (n_c, 3) the chord's second frame origin (world) [m].
        unbalanced: ‖Aᵀ x − rhs‖∞ (round-off at a consistent state).
    """

    names: tuple[str, ...]
    wrench: np.ndarray
    point: np.ndarray
    unbalanced: float

    def by_name(self) -> dict[str, np.ndarray]:
        return dict(zip(self.names, self.wrench, strict=True))


def min_norm_solve(At: np.ndarray, B: np.ndarray, chords: int = 0, rank: int | None = None
                   ) -> np.ndarray:
    """The minimum-norm least-squares solution X of ``At X = B`` (At (m, n); B (m,) or
    (m, k)), the effective rank cut at :data:`RANK_RTOL` of the largest singular value:
    LAPACK's complete orthogonal factorization with column pivoting (``gelsy``), the same
    solution as the truncated-SVD pseudo-inverse (tests/compose/test_fast_paths.py: ≤ 1e-10
    on seeded rank-deficient matrices, ≤ 1e-11 on the pair's support-wrench map) at a third
    of its cost on the ring's 330 × 330 map.

    ``chords``: At's first ``6 chords`` columns are closure chords, 6 each, and ``rank`` its
    rank: then :func:`chord_reduced_solve` (sparse, each chord's own null space removed
    first) where it applies, gelsy otherwise."""
    if At.size == 0:
        return np.zeros((At.shape[1],) + np.shape(B)[1:])
    if chords and rank is not None:
        X = chord_reduced_solve(At, B, chords, rank)
        if X is not None:
            return X
    return scipy.linalg.lstsq(At, B, cond=RANK_RTOL, lapack_driver="gelsy",
                              check_finite=False)[0]


#: A chord block's singular values below this fraction of ‖At‖_F are its own null space;
#: between it and :data:`CHORD_GAP` the block is too close to a rank change to tell
#: (:func:`chord_reduced_solve` declines). A planar loop's out-of-plane directions are
#: null to round-off (measured 1e-21 – 1e-18 of ‖At‖ on the ring), the other singular
#: values of the blocks ≥ 0.1.
CHORD_NULL, CHORD_GAP = 1e-12, 1e-6


def chord_reduced_solve(At: np.ndarray, B: np.ndarray, chords: int, rank: int
                        ) -> np.ndarray | None:
    """:func:`min_norm_solve` of a closure map At (m, n) whose first ``6 chords`` columns
    are chord blocks, exploiting its sparsity, or None where it does not apply.

    The method: a chord whose 6 columns ``A_e`` are rank deficient by themselves (a planar
    loop's out-of-plane wrench: self-stress) has null directions ``N_e`` that are null
    directions of At. Where those make up At's whole null space (their count is
    ``n − rank``), the minimum-norm solution lies in their orthogonal complement, spanned
    by ``R = diag(V_e)`` (V_e an orthonormal basis of ``A_e``'s row space, identity on the
    other columns): ``X = R Y`` with Y the least-squares solution of the full-column-rank
    ``(At R) Y = B`` — exactly the pseudo-inverse solution — found from the sparse
    augmented system ``[[I, A], [Aᵀ, 0]] [r; Y] = [B; 0]`` (one SuperLU; Björck,
    *Numerical Methods for Least Squares Problems*, 1996, §2.5, §7.6; ``A = At R``).

    Returns None (the caller takes the dense path) when a block's singular value lies in
    the undecided band ``[CHORD_NULL, CHORD_GAP] · ‖At‖_F``, when the local null spaces do
    not account for ``n − rank``, or when the augmented system is singular.
    """
    from scipy.sparse import coo_matrix
    from scipy.sparse.linalg import splu

    m, n = At.shape
    scale = float(np.linalg.norm(At))
    if not scale or 6 * chords > n:
        return None
    blocks = At[:, : 6 * chords].reshape(m, chords, 6)
    touched = np.any(blocks != 0.0, axis=2)  # (m, chords): a block's non-zero rows
    counts = touched.sum(axis=0)
    r = max(int(counts.max(initial=0)), 1)
    # every block's non-zero rows first (padded with zero rows): one batched SVD
    first = np.argsort(~touched, axis=0, kind="stable")[:r]  # (r, chords)
    G = blocks[first, np.arange(chords)] * (np.arange(r)[:, None] < counts)[..., None]
    sv, vt = np.linalg.svd(G.transpose(1, 0, 2), full_matrices=False)[1:]
    if np.any((sv > CHORD_NULL * scale) & (sv < CHORD_GAP * scale)):
        return None
    keep = np.count_nonzero(sv >= CHORD_GAP * scale, axis=1)  # each block's rank
    if n - int(np.sum(6 - keep)) != rank:
        return None
    reduced = {int(e): vt[e, : keep[e]].T for e in np.flatnonzero(keep < 6)}
    parts = [blocks[:, e] @ reduced[e] if e in reduced else blocks[:, e]
             for e in range(chords)]
    sizes = [x.shape[1] for x in parts]
    parts.append(At[:, 6 * chords:])
    Ar = np.hstack(parts)
    p = Ar.shape[1]
    i, j = np.nonzero(Ar)
    a = Ar[i, j]
    K = coo_matrix((np.concatenate([np.ones(m), a, a]),
                    (np.concatenate([np.arange(m), i, m + j]),
                     np.concatenate([np.arange(m), m + j, i]))),
                   shape=(m + p, m + p)).tocsc()
    Bm = np.asarray(B, dtype=float).reshape(m, -1)
    try:
        Y = splu(K, permc_spec="MMD_AT_PLUS_A").solve(
            np.vstack([Bm, np.zeros((p, Bm.shape[1]))]))[m:]
    except RuntimeError:  # SuperLU: "Factor is exactly singular"
        return None
    if not np.all(np.isfinite(Y)):
        return None
    X = np.empty((n, Bm.shape[1]))
    c = 0
    for e in range(chords):
        X[6 * e: 6 * e + 6] = reduced[e] @ Y[c: c + sizes[e]] if e in reduced else \
            Y[c: c + 6]
        c += sizes[e]
    X[6 * chords:] = Y[c:]
    return X.reshape((n,) + np.shape(B)[1:])


def _points(mm: MemberModel, data: DynamicsData, q: np.ndarray) -> np.ndarray:
    """(n_c, 3) world origins of the chords' second frames (through the tree)."""
    return _frames(mm, data, q)[0]


def _frames(mm: MemberModel, data: DynamicsData, q: np.ndarray
            ) -> tuple[np.ndarray, np.ndarray]:
    """``(origins (n_c, 3), rotations (n_c, 3, 3))`` of the chords' second frames in the
    world (through the tree: one Pinocchio frame pass)."""
    k, t = mm.kin, mm.dm.tree
    import pinocchio as pin

    pin.framesForwardKinematics(t.model, data.pin_data, t.q_pin(q[: k.nq_tree]))
    p, R = [], []
    for e in k.chord_edges:
        c = int(k.child[e])
        T = data.pin_data.oMf[int(t.body_frame[c])] * k.B[e]
        p.append(np.array(T.translation))
        R.append(np.array(T.rotation))
    return np.array(p).reshape(-1, 3), np.array(R).reshape(-1, 3, 3)


def _about(W: np.ndarray, p: np.ndarray) -> np.ndarray:
    """Wrenches (…, 6) about the world origin → about the points p (…, 3)."""
    out = np.array(W, dtype=float)
    out[..., :3] -= np.cross(p, out[..., 3:])
    return out


def _rhs(mm: MemberModel, data: DynamicsData, terms: ComposedTerms, udot: np.ndarray,
         f: np.ndarray | None, coulomb: bool = True, tt=None) -> np.ndarray:
    k = mm.kin
    nt = k.nv_tree
    a = terms.lift.E @ udot + terms.edu
    if tt is None:
        tt = tree_terms(mm.dm, data, terms.lift.q, terms.v)
    smooth, coul = passive_efforts(mm.dm, terms.lift.q, terms.v)
    tau = smooth + coul if coulomb else smooth
    if f is not None:
        tau = tau + port_jacobian(k, terms.lift.q).T @ np.asarray(f, dtype=float)
    need = -tau
    need[:nt] += tt.M @ a[:nt] + tt.h + tt.g
    return need


def chord_wrenches(mm: MemberModel, data: DynamicsData, terms: ComposedTerms,
                   udot: np.ndarray, f: np.ndarray | None = None, wrench_loads=()
                   ) -> ChordWrenches:
    """Every chord's wrench at the state of ``terms`` with independent accelerations udot
    (module docstring). ``f``: the port efforts that act (as given to the terms, or the
    ones an inverse-dynamics solve found); ``wrench_loads``: external wrenches."""
    from rbc.model.dynamics import wrench_efforts

    k = mm.kin
    q = terms.lift.q
    need = _rhs(mm, data, terms, udot, f)
    if wrench_loads:
        need -= wrench_efforts(mm.dm, q, tuple(wrench_loads))
    At = constraint_map(mm.dm, data, q)
    x = min_norm_solve(At, need)
    n = k.n_chords
    W = x[: 6 * n].reshape(n, 6)
    p = _points(mm, data, q)
    return ChordWrenches(tuple(k.edge_names[e] for e in k.chord_edges), _about(W, p), p,
                         float(np.abs(At @ x - need).max(initial=0.0)))


@dataclass(frozen=True, eq=False)
class SupportWrenchMap:
    """The affine support-wrench maps at a fixed state: ``λ_b(f) = lam0[b] + Lam[b] f``.

    Attributes:
        supports: support names; point: (k, 3) their frame origins (world) [m];
        lam0: (k, 6) wrenches at f = 0 [N·m; N] (world axes, about the support origin, the
        ground on the sole); Lam: (k, 6, n_act) their sensitivity to the port efforts.
        links: the mode's link chords (the chords of the mode that are not supports);
        link_lam0: (n_l, 6) and link_Lam: (n_l, 6, n_act) their wrenches' maps likewise
        (palm a on palm b, world axes, about the link's second frame origin).
        rotation: (k, 3, 3) the support frames' world orientations (the poses of
        :func:`rbc.model.modes.support_poses`, from the same frame pass as ``point``).
    """

    supports: tuple[str, ...]
    point: np.ndarray
    lam0: np.ndarray
    Lam: np.ndarray
    links: tuple[str, ...] = ()
    link_lam0: np.ndarray | None = None
    link_Lam: np.ndarray | None = None
    rotation: np.ndarray | None = None

    def __call__(self, f: np.ndarray) -> np.ndarray:
        """(k, 6) the support wrenches produced with port efforts f (n_act,)."""
        return self.lam0 + self.Lam @ np.asarray(f, dtype=float)

    def link_wrenches(self, f: np.ndarray) -> np.ndarray:
        """(n_l, 6) the link wrenches produced with port efforts f (n_act,)."""
        if self.link_lam0 is None:
            return np.zeros((0, 6))
        return self.link_lam0 + self.link_Lam @ np.asarray(f, dtype=float)


def support_wrench_map(mm: MemberModel, data: DynamicsData, terms: ComposedTerms,
                       coulomb: bool = True) -> SupportWrenchMap:
    """λ_b(f) at the state of ``terms`` (computed without port efforts; module docstring):
    forward dynamics for each f, so the accelerations are the ones the efforts induce.
    ``coulomb=False`` leaves the model's Coulomb friction out of both (a friction-free
    nominal model, as effort allocation with separate friction compensation uses)."""
    k = mm.kin
    nt = k.nv_tree
    q = terms.lift.q
    u0 = _speeds(terms)
    udot0 = forward_dynamics(terms, u0, coulomb=coulomb)
    At = constraint_map(mm.dm, data, q)
    tt = tree_terms(mm.dm, data, q, terms.v)
    need0 = _rhs(mm, data, terms, udot0, None, coulomb, tt)
    Jl = port_jacobian(k, q)
    sens = np.linalg.solve(terms.Gamma, terms.L.T)  # u̇ per unit f
    N = -Jl.T.copy()
    N[:nt] += tt.M @ (terms.lift.E[:nt] @ sens)
    n0 = k.n_chords - len(k.supports)
    nl = link_chord_count(mm)
    rows = np.arange(6 * (n0 - nl), 6 * k.n_chords)
    p, R = _frames(mm, data, q)
    p, R = p[n0 - nl:], R[n0:]
    X = min_norm_solve(At, np.column_stack([need0, N]), k.n_chords,
                       k.nv - terms.lift.E.shape[1])[rows]
    lam0 = _about(X[:, 0].reshape(-1, 6), p)
    Lam = X[:, 1:].reshape(-1, 6, Jl.shape[0])
    Lam[:, :3] -= np.cross(p[:, :, None], Lam[:, 3:], axis=1)
    links = tuple(k.edge_names[e] for e in k.chord_edges[n0 - nl:n0])
    return SupportWrenchMap(tuple(k.supports), p[nl:], lam0[nl:], Lam[nl:], links,
                            lam0[:nl], Lam[:nl], R)


def link_chord_count(mm: MemberModel) -> int:
    """The number of the mode's link chords: the mode's own chords (after the members'
    loops; :attr:`rbc.compose.analysis.Level2.chord_rows`, 6 rows each) that are not
    supports (which come last)."""
    return int(mm.structure.level2.chord_rows.size // 6) - len(mm.kin.supports)


def _speeds(terms: ComposedTerms) -> np.ndarray:
    """The independent speeds u of ``terms`` (v at the independent coordinates)."""
    l2 = terms.lift.structure.level2
    return terms.v[l2.w[l2.independent]]


def link_and_support_report(comp, mode: str, q: np.ndarray, v: np.ndarray, udot: np.ndarray,
                            f: np.ndarray, wrench_loads=()) -> dict:
    """The ``links`` and ``supports`` keys of ``rbc forces --json`` on a composed bundle: the
    wrench of every active hand link (palm a on palm b) and support (the ground on the sole)
    at a solved state, by the composed path (:func:`chord_wrenches` on the member-wise
    terms), world axes, about the link's second frame or the support frame.

    Args:
        comp: the composition; mode: its mode name; q: (nq,) closed configuration of the
        mode model; v: (nv,) its speeds; udot: (n_u,) independent accelerations (the mode
        partition's order); f: (n_act,) port efforts; wrench_loads: external wrenches.
    """
    from rbc.compose.dynamics import composed_terms, member_model

    mm = member_model(comp, mode)
    md = comp.modes[mode]
    data = DynamicsData.of(mm.dm)
    u = np.asarray(v, dtype=float)[md.partition.independent]
    T = composed_terms(mm, data, q, u)
    W = chord_wrenches(mm, data, T, np.asarray(udot, dtype=float), f, tuple(wrench_loads))
    by = dict(zip(W.names, zip(W.wrench, W.point, strict=True), strict=True))

    def entry(name: str) -> dict:
        w, p = by[name]
        return {"force": w[3:].tolist(), "moment": w[:3].tolist(), "point": p.tolist()}

    return {"links": {n: entry(n) for n in md.links},
            "supports": {s: entry(s + ".support") for s in md.supports},
            "unbalanced": W.unbalanced}

"""Closure kinematics: residuals, the analytic closure Jacobian, and its velocity product.

For chord e = (b, c) with ordered factors ``(j_i, σ_i)`` (DESIGN.md §4–5):

    Δ_e(q) = X_{j_1}^{σ_1} ⋯ X_{j_m}^{σ_m} · X_e⁻¹ = T_b_c(tree) · T_b_c(chord)⁻¹,
    ρ_e = log(Δ_e)  (6 rows, angular-first, in frame b).

**Differential.** A joint increment δv_j moves its factor as ``X_j(q ⊕ δv) = X_j·exp(ζ)``
with ``ζ = Ad(B_j) S_j(q_j) δv_j``, a twist in the child body frame. Written as a twist
inserted into the product, σ = +1 inserts ``ζ`` right after ``X_j``; σ = −1 inserts ``−ζ``
right before ``X_j⁻¹`` (``(X e^ζ)⁻¹ = e^{−ζ} X⁻¹``); the chord's own coordinates insert
``−Ad(B_e) S_e δv_e`` before ``X_e⁻¹``. With ``W_i`` the product to the left of insertion i
(``T_b_frame``), the left perturbation of Δ is ``η = Σ_i Ad(W_i) ζ_i`` and, because
``log(exp(η)·Δ) = ρ + J_l(ρ)⁻¹ η + O(η²)``,

    C_e = J_l(ρ_e)⁻¹ · [ … Ad(W_i) (±Ad(B_j) S_j) … ]          (one 6 × n_v_j block per factor)

J_l⁻¹ is kept (``spatial.left_jacobian_inverse``); it is the identity only at closure.
Fixed factors contribute nothing themselves but move every later ``W_i`` (the transports).
Coupling rows are ``Dγ·N`` (1-coordinate joints, N = 1; :mod:`rbc.model.couplings`): the
coefficients of a linear coupling, ``(1, −h'(q_in))`` of a profile coupling, whose velocity
product adds ``vᵀ D²γ v = −h'' v_in²``.

**Velocity product** ``Ċ v`` (the curvature source): with ``η_i = Ad(W_i) ζ_i`` the twist
rates, ``d/dt Ad(W_i) = ad(Σ_{k<i} η_k) Ad(W_i)`` (the insertion frame moves with every
factor to its left), so along a motion with velocity v

    Ċ v = J_l⁻¹ · Σ_i [ ad(Σ_{k<i} η_k) η_i + Ad(W_i) (±Ad(B_j) Ṡ_j v_j) ],

exact on the closure manifold (there ``ρ̇ = C v = 0`` so J_l⁻¹ is constant to first order).
``Ṡ_j v_j`` is the joint's bias acceleration (``JointKind.motion_subspace_rate``).
References: Featherstone 2008 §2.8–2.11 and §4.4; Solà, Deray, Atchuthan 2018, App. D.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from rbc.ir import spatial as sp
from rbc.model.compiled import CompiledModel
from rbc.model.couplings import coupling_terms, form_terms

ANGULAR = slice(0, 3)
LINEAR = slice(3, 6)


class TransformCache:
    """Per-state cache of edge transforms ``X_k(q)`` (part of the per-state Data).

    Args:
        model: the compiled model.
        q: (nq,) configuration; the cache is valid for this q only.
    """

    def __init__(self, model: CompiledModel, q: np.ndarray) -> None:
        self.model = model
        self.q = np.asarray(q, dtype=float)
        self._X: dict[int, pin.SE3] = {}

    def X(self, k: int) -> pin.SE3:
        """``X_k = T_parent_child`` of edge k at the cached q."""
        X = self._X.get(k)
        if X is None:
            X = self._X[k] = self.model.edge_transform(k, self.q)
        return X


def _cross_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise cross products of (n, 3) arrays (``np.cross`` without its axis handling,
    which dominates at these sizes)."""
    a0, a1, a2 = a[:, 0], a[:, 1], a[:, 2]
    b0, b1, b2 = b[:, 0], b[:, 1], b[:, 2]
    return np.stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], axis=1)


def _adjoint_columns(R: np.ndarray, p: np.ndarray, X: np.ndarray) -> np.ndarray:
    """Apply ``Ad(T_c)`` column by column: ``R`` (n, 3, 3), ``p`` (n, 3), ``X`` (6, n).

    ``Ad(T) x = [R ω; p × (R ω) + R v]`` for ``x = [ω; v]`` (angular-first).
    """
    w = np.einsum("nij,jn->in", R, X[:3])
    lin = np.einsum("nij,jn->in", R, X[3:]) + _cross_rows(p, w.T).T
    return np.vstack([w, lin])


@dataclass(frozen=True, eq=False)
class ChordGeometry:
    """One chord's closure geometry at a configuration q (arrays over its columns).

    Attributes:
        rho: (6,) residual ρ_e in frame b.
        jl: (6, 6) ``J_l(ρ_e)⁻¹``.
        cols: (n,) global v-indices of the columns the chord touches, in path order (an
            index may repeat for loops through the world; callers add).
        G: (6, n) raw columns ``±Ad(W_i) Ad(B_j) S_j`` (before J_l⁻¹), in frame b.
        factor: (n,) factor position of each column (0 … n_factors−1).
        n_factors: number of factors with coordinates.
        varying: ``((edge, AdWB (6, 6)), …)`` for kinds whose S varies with q, with
            ``AdWB = ±Ad(W_i) Ad(B_j)`` (for the Ṡ v term).
    """

    rho: np.ndarray
    jl: np.ndarray
    cols: np.ndarray
    G: np.ndarray
    factor: np.ndarray
    n_factors: int
    varying: tuple[tuple[int, np.ndarray], ...]

    def blocks(self) -> tuple[np.ndarray, np.ndarray]:
        """``(cols (n,), J_l⁻¹ G (6, n))``: the chord's Jacobian columns."""
        return self.cols, self.jl @ self.G

    def velocity_product(self, model: CompiledModel, q: np.ndarray, v: np.ndarray) -> np.ndarray:
        """``Ċ_e v`` (6,) = ``J_l⁻¹ Σ_i [ad(Σ_{k<i} η_k) η_i + AdWB_i Ṡ_i v_i]``.

        ``ad(V) η = [ω_V × ω_η; v_V × ω_η + ω_V × v_η]`` evaluated for all factors at once.
        """
        eta = np.zeros((self.n_factors, 6))
        np.add.at(eta, self.factor, (self.G * v[self.cols]).T)
        before = np.cumsum(eta, axis=0) - eta
        w, lin = before[:, :3], before[:, 3:]
        acc = np.concatenate([
            _cross_rows(w, eta[:, :3]).sum(axis=0),
            (_cross_rows(lin, eta[:, :3]) + _cross_rows(w, eta[:, 3:])).sum(axis=0),
        ])
        for k, AdWB in self.varying:
            acc += AdWB @ model.kinds[k].motion_subspace_rate(q[model.q_slice(k)],
                                                             v[model.v_slice(k)])
        return self.jl @ acc


def chord_geometry(model: CompiledModel, i: int, cache: TransformCache) -> ChordGeometry:
    """Residual, J_l⁻¹ and raw Jacobian columns of chord ``i`` (one pass over its path).

    The prefix transforms ``W_i`` are composed factor by factor (SE(3) products); the
    adjoint action on the constant columns ``Ad(B_j) S_j`` is then applied to all columns
    in one vectorized step.

    Args:
        model: compiled model.
        i: chord position (0 … n_chords−1).
        cache: transforms at the configuration q.
    """
    q = cache.q
    W = pin.SE3.Identity()
    Rs, ps, blocks, cols, factor, varying = [], [], [], [], [], []
    n = 0
    for k, s in (*model.paths[i], (model.chord_edges[i], 0)):
        kind = model.kinds[k]
        if s > 0:
            W = W * cache.X(k)
        if kind.nv:
            sgn = 1.0 if s > 0 else -1.0
            BS = model.AdB[k] @ kind.motion_subspace(q[model.q_slice(k)])
            Rs += [W.rotation] * kind.nv
            ps += [W.translation] * kind.nv
            blocks.append(sgn * BS)
            sl = model.v_slice(k)
            cols.extend(range(sl.start, sl.stop))
            factor += [n] * kind.nv
            if not kind.constant_S:
                varying.append((k, sgn * (sp.adjoint(W) @ model.AdB[k])))
            n += 1
        if s < 0:
            W = W * cache.X(k).inverse()
    delta = W * cache.X(model.chord_edges[i]).inverse()
    G = (_adjoint_columns(np.array(Rs), np.array(ps), np.hstack(blocks)) if blocks
         else np.zeros((6, 0)))
    return ChordGeometry(sp.log6(delta), sp.left_jacobian_inverse(delta),
                         np.array(cols, dtype=np.int64), G, np.array(factor, dtype=np.int64), n,
                         tuple(varying))


def chord_terms(
    model: CompiledModel, i: int, cache: TransformCache, v: np.ndarray | None = None
) -> tuple[np.ndarray, list[tuple[int, np.ndarray]], np.ndarray | None]:
    """Residual, Jacobian blocks and velocity product of chord ``i``.

    Returns:
        ``(ρ (6,), (cols (n,), J (6, n)), Ċv (6,) or None)``, all in frame b, angular-first;
        J includes J_l(ρ)⁻¹ and its columns are the global v-indices ``cols`` (repeats add).
    """
    geo = chord_geometry(model, i, cache)
    cv = geo.velocity_product(model, cache.q, v) if v is not None else None
    return geo.rho, geo.blocks(), cv


def residual(model: CompiledModel, q: np.ndarray, chords: Iterable[int] | None = None,
             couplings: Iterable[int] | None = None) -> np.ndarray:
    """Closure residual ``[ρ_e…; γ…]`` (rows,) [rad, m]; all rows unless subsets are given.

    Only the pruned path below each chord's lowest common ancestor is evaluated.
    """
    cache = TransformCache(model, q)
    ch = range(model.n_chords) if chords is None else chords
    cp = range(len(model.coupling_rows)) if couplings is None else couplings
    shared = _SharedStretches(model, cache)
    parts = [_chord_residual(model, i, cache, shared) for i in ch]
    parts.append(np.array([coupling_value(model, c, q) for c in cp]))
    return np.concatenate(parts) if parts else np.zeros(0)


def _product(factors, cache: TransformCache) -> pin.SE3:
    """``∏ X_k^{σ}`` over factors ``((edge, sign), …)`` in order."""
    W = pin.SE3.Identity()
    for k, s in factors:
        W = W * (cache.X(k) if s > 0 else cache.X(k).inverse())
    return W


class _SharedStretches:
    """Per-state products of the path families' shared stretches, each evaluated once
    (:func:`rbc.ir.paths.path_families`: N_p paths to a common endpoint, N_p − 1
    comparisons, the common tree branch composed once)."""

    def __init__(self, model: CompiledModel, cache: TransformCache) -> None:
        self.model, self.cache = model, cache
        self.products: dict[int, pin.SE3] = {}  # family index → its shared product

    def split(self, i: int, path) -> tuple[pin.SE3, pin.SE3]:
        """``(left, right)`` with ``left · right`` = chord i's path product."""
        n_f = self.model.family_of.get(i)
        if n_f is None:
            return _product(path, self.cache), pin.SE3.Identity()
        f = self.model.families[n_f]
        if n_f not in self.products:
            self.products[n_f] = _product(f.shared, self.cache)
        S, n = self.products[n_f], len(f.shared)
        if f.side == "suffix":
            return _product(path[:len(path) - n], self.cache), S
        return S, _product(path[n:], self.cache)


def _chord_residual(model: CompiledModel, i: int, cache: TransformCache,
                    shared: _SharedStretches) -> np.ndarray:
    left, right = shared.split(i, model.paths[i])
    return sp.log6(left * right * cache.X(model.chord_edges[i]).inverse())


def coupling_value(model: CompiledModel, c: int, q: np.ndarray) -> float:
    """``γ_c(q)`` of coupling c (:mod:`rbc.model.couplings`)."""
    return form_terms(model.coupling_forms[c], q)[0]


@dataclass(frozen=True, eq=False)
class ClosureGeometry:
    """Residual, closure Jacobian and per-chord geometry at one configuration.

    Attributes:
        q: (nq,) the configuration; rho: (m,); C: (m, nv); chords: per-chord geometry.
    """

    q: np.ndarray
    rho: np.ndarray
    C: np.ndarray
    chords: tuple[ChordGeometry, ...]

    def velocity_product(self, model: CompiledModel, v: np.ndarray) -> np.ndarray:
        """``Ċ v`` (m,) at this configuration (coupling rows: ``vᵀ D²γ v``, 0 when linear)."""
        out = np.zeros(self.rho.size)
        for i, geo in enumerate(self.chords):
            out[6 * i: 6 * i + 6] = geo.velocity_product(model, self.q, v)
        out[6 * len(self.chords):] = coupling_velocity_product(model, self.q, v)
        return out


def coupling_velocity_product(model: CompiledModel, q: np.ndarray, v: np.ndarray
                              ) -> np.ndarray:
    """(n_couplings,) ``vᵀ D²γ v`` of every coupling (zeros for linear ones)."""
    return np.array([form_terms(f, q, v)[2] for f in model.coupling_forms])


def closure_geometry(model: CompiledModel, q: np.ndarray) -> ClosureGeometry:
    """One pass over every chord's path: ρ, the analytic C and what Ċv needs."""
    m = model.n_rows
    rho = np.zeros(m)
    C = np.zeros((m, model.nv))
    cache = TransformCache(model, q)
    geos = []
    for i in range(model.n_chords):
        geo = chord_geometry(model, i, cache)
        geos.append(geo)
        rows = slice(6 * i, 6 * i + 6)
        rho[rows] = geo.rho
        cols, J = geo.blocks()
        np.add.at(C[rows], (slice(None), cols), J)
    base = 6 * model.n_chords
    if model.coupling_forms:
        rho[base:], C[base:], _ = coupling_terms(model.coupling_forms, model.nv, cache.q)
    return ClosureGeometry(cache.q, rho, C, tuple(geos))


def closure_jacobian(model: CompiledModel, q: np.ndarray, v: np.ndarray | None = None
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Residual, analytic closure Jacobian and (optionally) its velocity product.

    Args:
        model: compiled model.
        q: (nq,) configuration.
        v: (nv,) velocity or None.

    Returns:
        ``(ρ (m,), C (m, nv), Ċv (m,) or None)`` with m = 6·n_chords + n_couplings. C maps
        velocity coordinates to residual rates: ``ρ̇ = C v``. Its nonzeros lie in the
        pattern of :func:`sparsity_pattern`.
    """
    geo = closure_geometry(model, q)
    return geo.rho, geo.C, (geo.velocity_product(model, v) if v is not None else None)


def local_jacobian(
    model: CompiledModel,
    q: np.ndarray,
    chords: Iterable[int],
    couplings: Iterable[int],
    cols: np.ndarray,
    v: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Residual, Jacobian and velocity product of a subset of rows, on a subset of columns.

    Args:
        chords, couplings: the row blocks (chords first: 6 rows each, then one per coupling).
        cols: (n,) global v-indices of the columns to keep (they must cover every column the
            rows touch that the caller cares about; others are dropped).
        v: (nv,) velocity for the velocity product, or None.

    Returns:
        ``(ρ (m_sub,), C_sub (m_sub, n), Ċv (m_sub,) or None)``. Memory is O(m_sub·n), so
        module-wise analysis of very large mechanisms stays linear.
    """
    chords, couplings = list(chords), list(couplings)
    local = {int(j): n for n, j in enumerate(cols)}
    cache = TransformCache(model, q)
    m = 6 * len(chords) + len(couplings)
    rho, C = np.zeros(m), np.zeros((m, len(cols)))
    cv = np.zeros(m) if v is not None else None
    for n, i in enumerate(chords):
        r, (gcols, J), acc = chord_terms(model, i, cache, v)
        rows = slice(6 * n, 6 * n + 6)
        rho[rows] = r
        if cv is not None:
            cv[rows] = acc
        keep = [c for c, j in enumerate(gcols) if int(j) in local]
        np.add.at(C[rows], (slice(None), [local[int(gcols[c])] for c in keep]), J[:, keep])
    for n, c in enumerate(couplings):
        row = 6 * len(chords) + n
        form = model.coupling_forms[c]
        rho[row], grad, curv = form_terms(form, cache.q, v)
        for vi, g in zip(form.v_index, grad, strict=True):
            if vi in local:
                C[row, local[vi]] += g
        if cv is not None:
            cv[row] = curv
    return rho, C, cv


def sparsity_pattern(model: CompiledModel) -> np.ndarray:
    """(m, nv) bool: the entries of C that may be nonzero, generated from the paths."""
    P = np.zeros((model.n_rows, model.nv), dtype=bool)
    for i in range(model.n_chords):
        for k, _ in list(model.paths[i]) + [(model.chord_edges[i], 0)]:
            P[6 * i: 6 * i + 6, model.v_slice(k)] = True
    base = 6 * model.n_chords
    for c, terms in enumerate(model.coupling_rows):
        for vi, _, _ in terms:
            P[base + c, vi] = True
    return P


def body_poses(model: CompiledModel, q: np.ndarray) -> list[pin.SE3]:
    """World poses ``T_world_body`` of every body (B,) through the spanning tree."""
    cache = TransformCache(model, q)
    T: list[pin.SE3 | None] = [None] * (model.n_bodies + 1)
    T[model.n_bodies] = pin.SE3.Identity()
    for k in model.tree_edges:  # depth-first: parents before children
        if model.sign[k] > 0:
            p, c = int(model.parent[k]), int(model.child[k])
            T[c] = T[p] * cache.X(k)
        else:
            p, c = int(model.child[k]), int(model.parent[k])
            T[c] = T[p] * cache.X(k).inverse()
    return T[: model.n_bodies]  # type: ignore[return-value]


def tree_path(model: CompiledModel, body: int) -> list[tuple[int, int]]:
    """Factors ``(edge, sign)`` from the world down to ``body`` through the tree."""
    out = []
    v = body
    while v != model.n_bodies:
        k = int(model.parent_edge[v])
        out.append((k, int(model.sign[k])))
        v = int(model.parent[k]) if model.sign[k] > 0 else int(model.child[k])
    return out[::-1]


def frame_jacobian(model: CompiledModel, q: np.ndarray, body: int, frame: pin.SE3
                   ) -> tuple[pin.SE3, np.ndarray]:
    """World pose and world-aligned Jacobian of a frame fixed in a body.

    Args:
        body: body index; frame: ``T_body_frame``.

    Returns:
        ``(T_world_frame, J (6, nv))``: ``J v = [ω; ṗ]`` — the frame's angular velocity and
        the velocity of its origin, both in world axes (Pinocchio's LOCAL_WORLD_ALIGNED,
        angular-first). Uses the same insertion rule as the closure Jacobian.
    """
    cache = TransformCache(model, q)
    W = pin.SE3.Identity()
    J = np.zeros((6, model.nv))
    for k, s in tree_path(model, body):
        kind = model.kinds[k]
        if s > 0:
            W = W * cache.X(k)
        if kind.nv:
            G = (1.0 if s > 0 else -1.0) * (sp.adjoint(W) @ model.AdB[k]
                                            @ kind.motion_subspace(q[model.q_slice(k)]))
            J[:, model.v_slice(k)] += G
        if s < 0:
            W = W * cache.X(k).inverse()
    T = W * frame
    # spatial (world-frame) twist → angular velocity and velocity of the frame origin
    p = T.translation
    J[LINEAR] = J[LINEAR] - sp.skew(p) @ J[ANGULAR]
    return T, J

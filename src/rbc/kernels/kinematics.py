"""Kinematics kernels: body poses, world motion columns, closure geometry, velocity product.

Everything is written in the world frame (Featherstone 2008, §2 and §4, "spatial"
coordinates, angular-first). For each edge k = (b, c) with coordinates, its **world column**
``g_k = Ad(T_w_c B_k) S_k(q_k)`` (6, nv_k) is the world spatial twist of the joint's child
frame Jc per unit speed; a tree edge moves its tree child's subtree by ``σ_k g_k v_k``
(σ = −1 for edges traversed child to parent, where Jc sits on the tree-parent side).

**Closure** (DESIGN.md §4–5). For chord e = (b, c) with path factors (j, σ_j):
``Δ_e = T_b_c(tree) X_e⁻¹``, ``ρ_e = log Δ_e``, and (a first-order motion moves
``Δ ↦ exp(η) Δ`` with η in frame b)

    C_e = J_l(ρ_e)⁻¹ Ad(T_b_w) [ Σ_j σ_j g_j − g_e ],

the same matrix as both reference algorithms (:mod:`rbc.model.kinematics`: ``±Ad(W_i) Ad(B_j)
S_j`` = ``σ_j Ad(T_b_w) g_j``; :mod:`rbc.model.augmented`: ``Ad(D) Ad(F_chord) = Ad(F_tree)``).
An extra chord to the world (a support) or between robots is one more chord: b may be the
world (``T_b_w = I``).

**Velocity product** (the curvature source): ``Ċ_e v = J_l⁻¹ Ad(T_b_w) (α_c − α_e)`` with
α the world spatial accelerations at zero joint acceleration of body c and of the cut joint's
child frame reached through the chord (``α_b + ad(V_b)(g'_e v_e) + Ad(F_e) Ṡ_e v_e`` with
``F_e = T_w_b A_e Q_e``, ``g'_e = Ad(F_e) S_e``), exactly the augmented tree's definition.
Body twists and bias accelerations: ``V_x = V_p + σ g v``,
``α_x = α_p + σ (ad(V_p) g v + Ad(T_w_Jc) Ṡ v)`` (p the tree parent).

Arrays (flat, indexed in place — a view costs a reference count, an allocation ~50 ns, and
both add up per edge; with two threads the counts on the shared layout arrays bounce between
cores): world poses ``Tw`` (12 (n_bodies + 1),), transform records of
:data:`rbc.kernels.se3.TR` floats, the world last; joint child frames ``Jw`` (12 n_edges,)
``T_w_Jc``; world columns ``G`` (6 nv,), column j at ``G[6j:6j+6]``; chord frames ``Fch``
(12 n_chords,) ``F_e``; twists ``V`` and bias accelerations ``A0`` (6 (n_bodies + 1),).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from rbc.kernels import joints as jk
from rbc.kernels.access import fseg, iseg
from rbc.kernels.layout import (
    F_CP_COEF,
    F_CP_OFFSET,
    F_E_A,
    F_E_B,
    F_E_JOINT,
    I_CH_COL_PTR,
    I_CH_COLS,
    I_CH_EDGE,
    I_CH_POINT,
    I_CH_TERM_LOCAL,
    I_CH_TERM_PTR,
    I_CH_TERM_SIGN,
    I_CH_TERM_V,
    I_CP_PTR,
    I_CP_Q,
    I_CP_V,
    I_E_CHILD,
    I_E_CODE,
    I_E_NV,
    I_E_PARENT,
    I_E_QO,
    I_E_SIGN,
    I_E_SKIP,
    I_E_VO,
    I_SIZES,
    I_TREE,
    S_NB,
    S_NCH,
    S_NCP,
    S_NE,
)
from rbc.kernels.se3 import (
    JL_WORK,
    TR,
    adjoint_apply,
    adjoint_matrix,
    compose,
    compose_inv,
    inv_compose,
    inverse,
    left_jacobian_inverse,
    log6,
    motion_cross,
)


@njit(cache=True, inline="always")
def edge_transform(I, IO, F, FO, k, q, X, x, w):
    """``X[x:x+12] = A_k Q_k(q_k) B_k⁻¹ = T_parent_child`` of edge k; ``w`` (24,) scratch
    holds ``A_k Q_k`` at ``w[12:24]`` afterwards."""
    jk.motion(I[IO[I_E_CODE] + k], q, I[IO[I_E_QO] + k], F, FO[F_E_JOINT] + jk.JP * k, w, 0)
    compose(F, FO[F_E_A] + TR * k, w, 0, w, TR)
    compose_inv(w, TR, F, FO[F_E_B] + TR * k, X, x)


@njit(cache=True)
def poses(I, IO, F, FO, q, Tw, Jw, G):
    """World poses of every body, joint child frames and the world columns of every edge.

    Args:
        q: (nq,) configuration.
        Tw: (12 (n_bodies + 1),) out: ``T_w_x`` (last: the world).
        Jw: (12 n_edges,) out: ``T_w_Jc = T_w_c B`` of every edge with coordinates.
        G: (6 nv,) out: the world column ``g`` of every velocity coordinate (Jw and G are
            not written for a point chord's cut joint, ``e_skip``: nothing reads them).
    """
    sizes = iseg(I, IO, I_SIZES)
    nb, ne = sizes[S_NB], sizes[S_NE]
    parent, child, sign = iseg(I, IO, I_E_PARENT), iseg(I, IO, I_E_CHILD), iseg(I, IO, I_E_SIGN)
    e_nv, e_vo, e_qo, codes = (iseg(I, IO, I_E_NV), iseg(I, IO, I_E_VO), iseg(I, IO, I_E_QO),
                               iseg(I, IO, I_E_CODE))
    w = TR * nb
    for n in range(TR):
        Tw[w + n] = 1.0 if n < 9 and n % 4 == 0 else 0.0
    X = np.empty(TR)
    scratch = np.empty(2 * TR)
    for k in iseg(I, IO, I_TREE):
        edge_transform(I, IO, F, FO, k, q, X, 0, scratch)
        if sign[k] > 0:
            compose(Tw, TR * parent[k], X, 0, Tw, TR * child[k])
        else:
            compose_inv(Tw, TR * child[k], X, 0, Tw, TR * parent[k])
    oB, oJ = FO[F_E_B], FO[F_E_JOINT]
    S = np.empty(36)
    skip = iseg(I, IO, I_E_SKIP)
    for k in range(ne):
        n = e_nv[k]
        if n == 0 or skip[k]:
            continue
        compose(Tw, TR * child[k], F, oB + TR * k, Jw, TR * k)
        jk.subspace(codes[k], q, e_qo[k], F, oJ + jk.JP * k, S)
        for d in range(n):
            adjoint_apply(Jw, TR * k, S, 6 * d, G, 6 * (e_vo[k] + d))


@njit(cache=True, inline="always")
def _point_factor(Tw, tc, F, tB, Fch, tf, w, rho, r0, P, i):
    """A point chord's residual and left factor (:mod:`rbc.kernels.layout`): with
    ``T_w_Jc = T_w_c B_e = (R, p_c)`` and the ball centre reached through the chord
    ``p_b`` (the translation of ``F_e = T_w_b A_e Q_e``: Q_e is a rotation),
    ``ρ[r0:r0+3] = 0``, ``ρ[r0+3:r0+6] = p_c − p_b`` and ``P = [[Rᵀ, 0], [−p̂_c, 1]]``: row
    block 0 maps a relative world twist to the cut joint's speeds (``g_e = Ad(T_w_Jc)
    [1; 0]``), row block 1 to the relative velocity of the ball points at p_c (where
    ``P g_e = [1; 0]``: the cut coordinates drop out of rows 3–5)."""
    compose(Tw, tc, F, tB, w, 0)
    for r in range(3):
        rho[r0 + r] = 0.0
        rho[r0 + 3 + r] = w[9 + r] - Fch[tf + 9 + r]
        for k in range(6):
            P[i, r, k] = w[3 * k + r] if k < 3 else 0.0  # Rᵀ[r, k] = R[k, r]
            P[i, 3 + r, k] = 1.0 if k == 3 + r else 0.0
    p0, p1, p2 = w[9], w[10], w[11]
    # −p̂_c = [[0, p2, −p1], [−p2, 0, p0], [p1, −p0, 0]]
    P[i, 3, 0], P[i, 3, 1], P[i, 3, 2] = 0.0, p2, -p1
    P[i, 4, 0], P[i, 4, 1], P[i, 4, 2] = -p2, 0.0, p0
    P[i, 5, 0], P[i, 5, 1], P[i, 5, 2] = p1, -p0, 0.0


@njit(cache=True)
def closure(I, IO, F, FO, q, Tw, G, rho, Cc, P, Fch):
    """Residual, compact closure Jacobian, the per-chord left factor and the chord frames.

    Args:
        rho: (n_rows,) out: ``[ρ_e…; γ…]`` [rad, m].
        Cc: out: per chord i its (6, n_cols_i) block over the compact columns (row-major at
            ``6·ch_col_ptr[i]``), ``C_e = P_e [Σ σ_j g_j − g_e]`` (a point chord: without
            its cut coordinates' columns, ``P_e g_e = [1; 0]``).
        P: (n_chords, 6, 6) out: ``P_e = J_l(ρ_e)⁻¹ Ad(T_b_w)``; a point chord's
            ``[[R_Jcᵀ, 0], [−p̂_c, 1]]`` (:func:`_point_factor`, whose ρ it writes).
        Fch: (12 n_chords,) out: ``F_e = T_w_b A_e Q_e(q_e)``, the cut joint's child frame Jc
            reached through the chord (the velocity product's frame).
    """
    sizes = iseg(I, IO, I_SIZES)
    nch, ncp = sizes[S_NCH], sizes[S_NCP]
    ch_edge = iseg(I, IO, I_CH_EDGE)
    parent, child = iseg(I, IO, I_E_PARENT), iseg(I, IO, I_E_CHILD)
    col_ptr = iseg(I, IO, I_CH_COL_PTR)
    t_ptr, t_v = iseg(I, IO, I_CH_TERM_PTR), iseg(I, IO, I_CH_TERM_V)
    t_loc, t_sg = iseg(I, IO, I_CH_TERM_LOCAL), iseg(I, IO, I_CH_TERM_SIGN)
    w = np.empty(4 * TR)  # T_b_c, X, Δ, T_b_w
    scratch = np.empty(2 * TR)
    jl_work = np.empty(JL_WORK)
    xi = np.empty(6)
    Jl = np.empty((6, 6))
    Ad = np.empty((6, 6))
    point = iseg(I, IO, I_CH_POINT)
    oB = FO[F_E_B]
    for i in range(nch):
        e = ch_edge[i]
        b, c = parent[e], child[e]
        edge_transform(I, IO, F, FO, e, q, w, TR, scratch)
        compose(Tw, TR * b, scratch, TR, Fch, TR * i)
        if point[i]:
            _point_factor(Tw, TR * c, F, oB + TR * e, Fch, TR * i, w, rho, 6 * i, P, i)
        else:
            inv_compose(Tw, TR * b, Tw, TR * c, w, 0)
            compose_inv(w, 0, w, TR, w, 2 * TR)
            log6(w, 2 * TR, xi)
            for r in range(6):
                rho[6 * i + r] = xi[r]
            left_jacobian_inverse(xi, Jl, jl_work)
            inverse(Tw, TR * b, w, 3 * TR)
            adjoint_matrix(w, 3 * TR, Ad)
            for r in range(6):
                for c2 in range(6):
                    s = 0.0
                    for k in range(6):
                        s += Jl[r, k] * Ad[k, c2]
                    P[i, r, c2] = s
        n = col_ptr[i + 1] - col_ptr[i]
        base = 6 * col_ptr[i]
        for m in range(base, base + 6 * n):
            Cc[m] = 0.0
        if point[i]:  # P = [[Rᵀ, 0], [−p̂_c, 1]]: 15 products per column instead of 36
            for t in range(t_ptr[i], t_ptr[i + 1]):
                gv, loc, sg = 6 * t_v[t], t_loc[t], t_sg[t]
                w0, w1, w2 = G[gv], G[gv + 1], G[gv + 2]
                for r in range(3):
                    Cc[base + r * n + loc] += sg * (P[i, r, 0] * w0 + P[i, r, 1] * w1
                                                    + P[i, r, 2] * w2)
                    Cc[base + (3 + r) * n + loc] += sg * (
                        G[gv + 3 + r] + P[i, 3 + r, 0] * w0 + P[i, 3 + r, 1] * w1
                        + P[i, 3 + r, 2] * w2)
            continue
        for t in range(t_ptr[i], t_ptr[i + 1]):
            gv, loc, sg = 6 * t_v[t], t_loc[t], t_sg[t]
            for r in range(6):
                s = 0.0
                for k in range(6):
                    s += P[i, r, k] * G[gv + k]
                Cc[base + r * n + loc] += sg * s
    cp_ptr, cp_q = iseg(I, IO, I_CP_PTR), iseg(I, IO, I_CP_Q)
    coef, off = fseg(F, FO, F_CP_COEF), fseg(F, FO, F_CP_OFFSET)
    for c in range(ncp):
        s = off[c]
        for t in range(cp_ptr[c], cp_ptr[c + 1]):
            s += coef[t] * q[cp_q[t]]
        rho[6 * nch + c] = s


@njit(cache=True)
def dense_jacobian(I, IO, F, FO, Cc, C):
    """Scatter the compact blocks into a dense C (n_rows, nv) (tests and diagnostics); a
    point chord's rows 0–2 get −1 on its cut coordinates (``C E = 0`` holds for all rows)."""
    sizes = iseg(I, IO, I_SIZES)
    nch, ncp = sizes[S_NCH], sizes[S_NCP]
    col_ptr, cols = iseg(I, IO, I_CH_COL_PTR), iseg(I, IO, I_CH_COLS)
    C[:] = 0.0
    for i in range(nch):
        n = col_ptr[i + 1] - col_ptr[i]
        blk = Cc[6 * col_ptr[i]: 6 * col_ptr[i + 1]].reshape((6, n))
        for loc in range(n):
            C[6 * i: 6 * i + 6, cols[col_ptr[i] + loc]] += blk[:, loc]
    point, ch_edge, e_vo = iseg(I, IO, I_CH_POINT), iseg(I, IO, I_CH_EDGE), iseg(I, IO, I_E_VO)
    for i in range(nch):  # a point chord's rows 0–2 give its cut coordinates: C = [… −1]
        if point[i]:
            for d in range(3):
                C[6 * i + d, e_vo[ch_edge[i]] + d] = -1.0
    cp_ptr, cp_v = iseg(I, IO, I_CP_PTR), iseg(I, IO, I_CP_V)
    coef = fseg(F, FO, F_CP_COEF)
    for c in range(ncp):
        for t in range(cp_ptr[c], cp_ptr[c + 1]):
            C[6 * nch + c, cp_v[t]] += coef[t]


@njit(cache=True)
def velocities(I, IO, F, FO, q, v, Jw, G, V, A0):
    """World spatial twists V (6 (n_bodies + 1),) and bias accelerations A0 (same; zero
    joint accelerations, no gravity) of every body (module docstring); Jw from
    :func:`poses`."""
    sizes = iseg(I, IO, I_SIZES)
    nb = sizes[S_NB]
    parent, child, sign = iseg(I, IO, I_E_PARENT), iseg(I, IO, I_E_CHILD), iseg(I, IO, I_E_SIGN)
    e_nv, e_vo, e_qo = iseg(I, IO, I_E_NV), iseg(I, IO, I_E_VO), iseg(I, IO, I_E_QO)
    codes = iseg(I, IO, I_E_CODE)
    oJ = FO[F_E_JOINT]
    for r in range(6):
        V[6 * nb + r] = 0.0
        A0[6 * nb + r] = 0.0
    gv = np.empty(6)
    tmp = np.empty(6)
    sd = np.empty(6)
    for k in iseg(I, IO, I_TREE):
        if sign[k] > 0:
            top, low = 6 * parent[k], 6 * child[k]
        else:
            top, low = 6 * child[k], 6 * parent[k]
        n = e_nv[k]
        if n == 0:
            for r in range(6):
                V[low + r] = V[top + r]
                A0[low + r] = A0[top + r]
            continue
        vo = e_vo[k]
        for r in range(6):
            s = 0.0
            for d in range(n):
                s += G[6 * (vo + d) + r] * v[vo + d]
            gv[r] = s
        s = float(sign[k])
        motion_cross(V, top, gv, 0, tmp, 0)
        for r in range(6):
            V[low + r] = V[top + r] + s * gv[r]
            A0[low + r] = A0[top + r] + s * tmp[r]
        if jk.subspace_rate(codes[k], q, e_qo[k], v, vo, F, oJ + jk.JP * k, sd):
            adjoint_apply(Jw, TR * k, sd, 0, tmp, 0)
            for r in range(6):
                A0[low + r] += s * tmp[r]


@njit(cache=True)
def velocity_product(I, IO, F, FO, q, v, Fch, V, A0, P, cv):
    """``Ċ v`` (n_rows,) out: ``J_l⁻¹ Ad(T_b_w)(α_c − α_e)`` per chord; couplings 0. Fch and
    P from :func:`closure`, V and A0 from :func:`velocities`."""
    sizes = iseg(I, IO, I_SIZES)
    nch = sizes[S_NCH]
    cv[:] = 0.0
    ch_edge = iseg(I, IO, I_CH_EDGE)
    parent, child = iseg(I, IO, I_E_PARENT), iseg(I, IO, I_E_CHILD)
    e_nv, e_vo, e_qo = iseg(I, IO, I_E_NV), iseg(I, IO, I_E_VO), iseg(I, IO, I_E_QO)
    codes = iseg(I, IO, I_E_CODE)
    oJ = FO[F_E_JOINT]
    S = np.empty(36)
    s_v = np.empty(6)
    g = np.empty(6)
    tmp = np.empty(6)
    sd = np.empty(6)
    acc = np.empty(6)
    for i in range(nch):
        e = ch_edge[i]
        b, c = parent[e], child[e]
        for r in range(6):
            acc[r] = A0[6 * c + r] - A0[6 * b + r]
        n = e_nv[e]
        if n:
            vo = e_vo[e]
            jk.subspace(codes[e], q, e_qo[e], F, oJ + jk.JP * e, S)
            for r in range(6):
                s = 0.0
                for d in range(n):
                    s += S[6 * d + r] * v[vo + d]
                s_v[r] = s
            adjoint_apply(Fch, TR * i, s_v, 0, g, 0)
            motion_cross(V, 6 * b, g, 0, tmp, 0)
            for r in range(6):
                acc[r] -= tmp[r]
            if jk.subspace_rate(codes[e], q, e_qo[e], v, vo, F, oJ + jk.JP * e, sd):
                adjoint_apply(Fch, TR * i, sd, 0, tmp, 0)
                for r in range(6):
                    acc[r] -= tmp[r]
        for r in range(6):
            s = 0.0
            for k in range(6):
                s += P[i, r, k] * acc[k]
            cv[6 * i + r] = s


@njit(cache=True)
def cut_rates(I, IO, G, P, cv, x):
    """A point chord's cut coordinates of ``x = Ė u`` (nv,) from its path's, in place:
    ``x_e = R_Jcᵀ (Σ σ_j g_j x_j)_ω + (Ċ v)[6 i: 6 i + 3]`` — the chord's rows 0–2 of
    ``C Ė u + Ċ v = 0`` (:func:`closure`'s P, :func:`velocity_product`'s cv)."""
    sizes = iseg(I, IO, I_SIZES)
    point, ch_edge, e_vo = iseg(I, IO, I_CH_POINT), iseg(I, IO, I_CH_EDGE), iseg(I, IO, I_E_VO)
    t_ptr, t_v, t_sg = (iseg(I, IO, I_CH_TERM_PTR), iseg(I, IO, I_CH_TERM_V),
                        iseg(I, IO, I_CH_TERM_SIGN))
    for i in range(sizes[S_NCH]):
        if not point[i]:
            continue
        vo = e_vo[ch_edge[i]]
        for d in range(3):
            s = cv[6 * i + d]
            for t in range(t_ptr[i], t_ptr[i + 1]):
                gv = 6 * t_v[t]
                a = 0.0
                for k in range(3):
                    a += P[i, d, k] * G[gv + k]
                s += t_sg[t] * a * x[t_v[t]]
            x[vo + d] = s


@njit(cache=True)
def integrate(I, IO, q, v, out):
    """``q ⊕ v`` (nq,) edge by edge (the joints' own group maps)."""
    sizes = iseg(I, IO, I_SIZES)
    out[:] = q
    e_nv, e_vo, e_qo = iseg(I, IO, I_E_NV), iseg(I, IO, I_E_VO), iseg(I, IO, I_E_QO)
    codes = iseg(I, IO, I_E_CODE)
    for k in range(sizes[S_NE]):
        n = e_nv[k]
        if n == 0:
            continue
        vo = e_vo[k]
        moved = False
        for d in range(n):
            if v[vo + d] != 0.0:
                moved = True
        if moved:
            jk.integrate(codes[k], q[e_qo[k]:], v[vo: vo + n], out[e_qo[k]:])

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
"""

from __future__ import annotations

import numpy as np
from numba import njit

from rbc.kernels import joints as jk
from rbc.kernels.access import fseg, iseg
from rbc.kernels.layout import (
    F_CP_COEF,
    F_CP_OFFSET,
    F_E_AP,
    F_E_AR,
    F_E_AXIS,
    F_E_AXIS2,
    F_E_BP,
    F_E_BR,
    F_E_PITCH,
    F_E_R0,
    I_CH_COL_PTR,
    I_CH_COLS,
    I_CH_EDGE,
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
    I_E_VO,
    I_SIZES,
    I_TREE,
    S_NB,
    S_NCH,
    S_NCP,
    S_NE,
    S_NV,
)
from rbc.kernels.se3 import (
    adjoint_apply,
    adjoint_matrix,
    compose,
    compose_inv,
    inv_compose,
    left_jacobian_inverse,
    log6,
    matvec6,
    motion_cross,
    mul6,
)


@njit(cache=True, inline="always")
def edge_motion(I, IO, F, FO, k, q, R, p):
    """``Q_k(q_k)`` of edge k (R (3, 3), p (3,))."""
    code = iseg(I, IO, I_E_CODE)[k]
    qo = iseg(I, IO, I_E_QO)[k]
    axis = fseg(F, FO, F_E_AXIS)[3 * k: 3 * k + 3]
    axis2 = fseg(F, FO, F_E_AXIS2)[3 * k: 3 * k + 3]
    R0 = fseg(F, FO, F_E_R0)[9 * k: 9 * k + 9].reshape((3, 3))
    jk.motion(code, q[qo:], axis, axis2, fseg(F, FO, F_E_PITCH)[k], R0, R, p)


@njit(cache=True, inline="always")
def edge_subspace(I, IO, F, FO, k, q, S):
    """``S_k(q_k)`` (6, nv_k) in Jc."""
    code = iseg(I, IO, I_E_CODE)[k]
    qo = iseg(I, IO, I_E_QO)[k]
    axis = fseg(F, FO, F_E_AXIS)[3 * k: 3 * k + 3]
    axis2 = fseg(F, FO, F_E_AXIS2)[3 * k: 3 * k + 3]
    R0 = fseg(F, FO, F_E_R0)[9 * k: 9 * k + 9].reshape((3, 3))
    jk.subspace(code, q[qo:], axis, axis2, fseg(F, FO, F_E_PITCH)[k], R0, S)


@njit(cache=True, inline="always")
def edge_transform(I, IO, F, FO, k, q, R, p):
    """``X_k = A_k Q_k(q_k) B_k⁻¹ = T_parent_child`` of edge k."""
    AR = fseg(F, FO, F_E_AR)[9 * k: 9 * k + 9].reshape((3, 3))
    Ap = fseg(F, FO, F_E_AP)[3 * k: 3 * k + 3]
    BR = fseg(F, FO, F_E_BR)[9 * k: 9 * k + 9].reshape((3, 3))
    Bp = fseg(F, FO, F_E_BP)[3 * k: 3 * k + 3]
    QR = np.empty((3, 3))
    Qp = np.empty(3)
    edge_motion(I, IO, F, FO, k, q, QR, Qp)
    R1 = np.empty((3, 3))
    p1 = np.empty(3)
    compose(AR, Ap, QR, Qp, R1, p1)
    compose_inv(R1, p1, BR, Bp, R, p)


@njit(cache=True)
def poses(I, IO, F, FO, q, Rw, pw, G):
    """World poses of every body and the world columns of every edge.

    Args:
        q: (nq,) configuration.
        Rw, pw: (n_bodies + 1, 3, 3), (n_bodies + 1, 3) out: ``T_w_x`` (last: the world).
        G: (6, nv) out: the world column ``g`` of every velocity coordinate.
    """
    sizes = iseg(I, IO, I_SIZES)
    nb, ne = sizes[S_NB], sizes[S_NE]
    parent, child, sign = iseg(I, IO, I_E_PARENT), iseg(I, IO, I_E_CHILD), iseg(I, IO, I_E_SIGN)
    Rw[nb] = np.eye(3)
    pw[nb] = 0.0
    X = np.empty((3, 3))
    x = np.empty(3)
    for k in iseg(I, IO, I_TREE):
        edge_transform(I, IO, F, FO, k, q, X, x)
        if sign[k] > 0:
            compose(Rw[parent[k]], pw[parent[k]], X, x, Rw[child[k]], pw[child[k]])
        else:
            compose_inv(Rw[child[k]], pw[child[k]], X, x, Rw[parent[k]], pw[parent[k]])
    e_nv, e_vo = iseg(I, IO, I_E_NV), iseg(I, IO, I_E_VO)
    BRs, Bps = fseg(F, FO, F_E_BR), fseg(F, FO, F_E_BP)
    JR = np.empty((3, 3))
    Jp = np.empty(3)
    S = np.empty((6, 6))
    col = np.empty(6)
    sv = np.empty(6)
    for k in range(ne):
        n = e_nv[k]
        if n == 0:
            continue
        c = child[k]
        compose(Rw[c], pw[c], BRs[9 * k: 9 * k + 9].reshape((3, 3)), Bps[3 * k: 3 * k + 3],
                JR, Jp)
        edge_subspace(I, IO, F, FO, k, q, S[:, :n])
        for d in range(n):
            for r in range(6):
                sv[r] = S[r, d]
            adjoint_apply(JR, Jp, sv, col)
            for r in range(6):
                G[r, e_vo[k] + d] = col[r]


@njit(cache=True)
def chord_frame(I, IO, F, FO, i, q, Rw, pw, R, p):
    """``F_e = T_w_b A_e Q_e(q_e)``: the cut joint's child frame Jc reached through the chord."""
    e = iseg(I, IO, I_CH_EDGE)[i]
    b = iseg(I, IO, I_E_PARENT)[e]
    QR = np.empty((3, 3))
    Qp = np.empty(3)
    edge_motion(I, IO, F, FO, e, q, QR, Qp)
    R1 = np.empty((3, 3))
    p1 = np.empty(3)
    compose(Rw[b], pw[b], fseg(F, FO, F_E_AR)[9 * e: 9 * e + 9].reshape((3, 3)),
            fseg(F, FO, F_E_AP)[3 * e: 3 * e + 3], R1, p1)
    compose(R1, p1, QR, Qp, R, p)


@njit(cache=True)
def closure(I, IO, F, FO, q, Rw, pw, G, rho, Cc, P):
    """Residual, compact closure Jacobian and the per-chord left factor.

    Args:
        rho: (n_rows,) out: ``[ρ_e…; γ…]`` [rad, m].
        Cc: out: per chord i its (6, n_cols_i) block over the compact columns (row-major at
            ``6·ch_col_ptr[i]``), ``C_e = J_l⁻¹ Ad(T_b_w) [Σ σ_j g_j − g_e]``.
        P: (n_chords, 6, 6) out: ``J_l(ρ_e)⁻¹ Ad(T_b_w)``.
    """
    sizes = iseg(I, IO, I_SIZES)
    nch, ncp = sizes[S_NCH], sizes[S_NCP]
    ch_edge = iseg(I, IO, I_CH_EDGE)
    parent, child = iseg(I, IO, I_E_PARENT), iseg(I, IO, I_E_CHILD)
    col_ptr = iseg(I, IO, I_CH_COL_PTR)
    t_ptr, t_v = iseg(I, IO, I_CH_TERM_PTR), iseg(I, IO, I_CH_TERM_V)
    t_loc, t_sg = iseg(I, IO, I_CH_TERM_LOCAL), iseg(I, IO, I_CH_TERM_SIGN)
    Rbc = np.empty((3, 3))
    pbc = np.empty(3)
    X = np.empty((3, 3))
    x = np.empty(3)
    DR = np.empty((3, 3))
    Dp = np.empty(3)
    Rbw = np.empty((3, 3))
    pbw = np.empty(3)
    xi = np.empty(6)
    Jl = np.empty((6, 6))
    Ad = np.empty((6, 6))
    for i in range(nch):
        e = ch_edge[i]
        b, c = parent[e], child[e]
        inv_compose(Rw[b], pw[b], Rw[c], pw[c], Rbc, pbc)
        edge_transform(I, IO, F, FO, e, q, X, x)
        compose_inv(Rbc, pbc, X, x, DR, Dp)
        log6(DR, Dp, xi)
        rho[6 * i: 6 * i + 6] = xi
        left_jacobian_inverse(xi, Jl)
        for r in range(3):
            for c2 in range(3):
                Rbw[r, c2] = Rw[b, c2, r]
        for r in range(3):
            pbw[r] = -(Rbw[r, 0] * pw[b, 0] + Rbw[r, 1] * pw[b, 1] + Rbw[r, 2] * pw[b, 2])
        adjoint_matrix(Rbw, pbw, Ad)
        Pi = P[i]
        mul6(Jl, Ad, Pi)
        n = col_ptr[i + 1] - col_ptr[i]
        blk = Cc[6 * col_ptr[i]: 6 * col_ptr[i + 1]].reshape((6, n))
        blk[:] = 0.0
        for t in range(t_ptr[i], t_ptr[i + 1]):
            gv, loc, sg = t_v[t], t_loc[t], t_sg[t]
            for r in range(6):
                s = 0.0
                for k in range(6):
                    s += Pi[r, k] * G[k, gv]
                blk[r, loc] += sg * s
    cp_ptr, cp_q = iseg(I, IO, I_CP_PTR), iseg(I, IO, I_CP_Q)
    coef, off = fseg(F, FO, F_CP_COEF), fseg(F, FO, F_CP_OFFSET)
    for c in range(ncp):
        s = off[c]
        for t in range(cp_ptr[c], cp_ptr[c + 1]):
            s += coef[t] * q[cp_q[t]]
        rho[6 * nch + c] = s


@njit(cache=True)
def dense_jacobian(I, IO, F, FO, Cc, C):
    """Scatter the compact blocks into a dense C (n_rows, nv) (tests and diagnostics)."""
    sizes = iseg(I, IO, I_SIZES)
    nch, ncp = sizes[S_NCH], sizes[S_NCP]
    col_ptr, cols = iseg(I, IO, I_CH_COL_PTR), iseg(I, IO, I_CH_COLS)
    C[:] = 0.0
    for i in range(nch):
        n = col_ptr[i + 1] - col_ptr[i]
        blk = Cc[6 * col_ptr[i]: 6 * col_ptr[i + 1]].reshape((6, n))
        for loc in range(n):
            C[6 * i: 6 * i + 6, cols[col_ptr[i] + loc]] += blk[:, loc]
    cp_ptr, cp_v = iseg(I, IO, I_CP_PTR), iseg(I, IO, I_CP_V)
    coef = fseg(F, FO, F_CP_COEF)
    for c in range(ncp):
        for t in range(cp_ptr[c], cp_ptr[c + 1]):
            C[6 * nch + c, cp_v[t]] += coef[t]


@njit(cache=True)
def velocities(I, IO, F, FO, q, v, Rw, pw, G, V, A0):
    """World spatial twists V (n_bodies + 1, 6) and bias accelerations A0 (same shape; zero
    joint accelerations, no gravity) of every body (module docstring)."""
    sizes = iseg(I, IO, I_SIZES)
    nb = sizes[S_NB]
    parent, child, sign = iseg(I, IO, I_E_PARENT), iseg(I, IO, I_E_CHILD), iseg(I, IO, I_E_SIGN)
    e_nv, e_vo, e_qo = iseg(I, IO, I_E_NV), iseg(I, IO, I_E_VO), iseg(I, IO, I_E_QO)
    codes = iseg(I, IO, I_E_CODE)
    V[nb] = 0.0
    A0[nb] = 0.0
    gv = np.empty(6)
    tmp = np.empty(6)
    sd = np.empty(6)
    JR = np.empty((3, 3))
    Jp = np.empty(3)
    BRs, Bps = fseg(F, FO, F_E_BR), fseg(F, FO, F_E_BP)
    for k in iseg(I, IO, I_TREE):
        if sign[k] > 0:
            top, low = parent[k], child[k]
        else:
            top, low = child[k], parent[k]
        n = e_nv[k]
        if n == 0:
            V[low] = V[top]
            A0[low] = A0[top]
            continue
        gv[:] = 0.0
        for d in range(n):
            for r in range(6):
                gv[r] += G[r, e_vo[k] + d] * v[e_vo[k] + d]
        s = float(sign[k])
        motion_cross(V[top], gv, tmp)
        for r in range(6):
            V[low, r] = V[top, r] + s * gv[r]
            A0[low, r] = A0[top, r] + s * tmp[r]
        axis = fseg(F, FO, F_E_AXIS)[3 * k: 3 * k + 3]
        axis2 = fseg(F, FO, F_E_AXIS2)[3 * k: 3 * k + 3]
        if jk.subspace_rate(codes[k], q[e_qo[k]:], v[e_vo[k]:], axis, axis2, sd):
            c = child[k]
            compose(Rw[c], pw[c], BRs[9 * k: 9 * k + 9].reshape((3, 3)),
                    Bps[3 * k: 3 * k + 3], JR, Jp)
            adjoint_apply(JR, Jp, sd, tmp)
            for r in range(6):
                A0[low, r] += s * tmp[r]


@njit(cache=True)
def velocity_product(I, IO, F, FO, q, v, Rw, pw, V, A0, P, cv):
    """``Ċ v`` (n_rows,) out: ``J_l⁻¹ Ad(T_b_w)(α_c − α_e)`` per chord; couplings 0."""
    sizes = iseg(I, IO, I_SIZES)
    nch = sizes[S_NCH]
    cv[:] = 0.0
    ch_edge = iseg(I, IO, I_CH_EDGE)
    parent, child = iseg(I, IO, I_E_PARENT), iseg(I, IO, I_E_CHILD)
    e_nv, e_vo, e_qo = iseg(I, IO, I_E_NV), iseg(I, IO, I_E_VO), iseg(I, IO, I_E_QO)
    codes = iseg(I, IO, I_E_CODE)
    FR = np.empty((3, 3))
    Fp = np.empty(3)
    S = np.empty((6, 6))
    s_v = np.empty(6)
    g = np.empty(6)
    tmp = np.empty(6)
    sd = np.empty(6)
    acc = np.empty(6)
    for i in range(nch):
        e = ch_edge[i]
        b, c = parent[e], child[e]
        for r in range(6):
            acc[r] = A0[c, r] - A0[b, r]
        n = e_nv[e]
        if n:
            chord_frame(I, IO, F, FO, i, q, Rw, pw, FR, Fp)
            edge_subspace(I, IO, F, FO, e, q, S[:, :n])
            s_v[:] = 0.0
            for d in range(n):
                for r in range(6):
                    s_v[r] += S[r, d] * v[e_vo[e] + d]
            adjoint_apply(FR, Fp, s_v, g)
            motion_cross(V[b], g, tmp)
            for r in range(6):
                acc[r] -= tmp[r]
            axis = fseg(F, FO, F_E_AXIS)[3 * e: 3 * e + 3]
            axis2 = fseg(F, FO, F_E_AXIS2)[3 * e: 3 * e + 3]
            if jk.subspace_rate(codes[e], q[e_qo[e]:], v[e_vo[e]:], axis, axis2, sd):
                adjoint_apply(FR, Fp, sd, tmp)
                for r in range(6):
                    acc[r] -= tmp[r]
        matvec6(P[i], acc, cv[6 * i: 6 * i + 6])


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


@njit(cache=True)
def n_velocities(I, IO):
    """nv of the layout."""
    return iseg(I, IO, I_SIZES)[S_NV]

"""Lift kernels: the module-blocked ``R_p`` factorization, ``E``, and solves with ``R_p⁻¹``.

``R_p = S C Π_p`` is block diagonal by dependency module (a module's selected rows touch
only its own dependent columns; :func:`rbc.kernels.layout.layout` checks it and falls back
to one block otherwise), so each block is LU-factored on its own (partial pivoting, Golub
& Van Loan, *Matrix Computations*, Alg. 3.4.1) and the cost is linear in the number of
modules. ``E[ind] = I``, ``E[dep_m] = −R_p,m⁻¹ R_a,m`` (DESIGN.md §5), solved only for the
independent columns the module's rows touch; the curvature ``(Ė u)_dep = −R_p⁻¹ S Ċ v`` and
the Newton step ``δq_dep = −R_p⁻¹ S ρ`` reuse the factors. A block's columns are laid out in
a fill-reducing order (the columns the fewest rows touch first: each loop's own coordinates
before shared ones), so the factors stay sparse and the solves skip their zeros. The blocks
``R_p,m`` and ``R_a,m`` are gathered from the compact C through static maps laid out once
(:func:`rbc.kernels.layout.layout`): no per-row search at run time.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from rbc.kernels.access import fseg, iseg
from rbc.kernels.layout import (
    F_CP_COEF,
    I_CH_COL_PTR,
    I_CH_COLS,
    I_CH_EDGE,
    I_CH_POINT,
    I_E_VO,
    I_IND,
    I_MOD_A_DST,
    I_MOD_A_PTR,
    I_MOD_A_SRC,
    I_MOD_DEP,
    I_MOD_LU_PTR,
    I_MOD_P_DST,
    I_MOD_P_PTR,
    I_MOD_P_SRC,
    I_MOD_PTR,
    I_MOD_ROWS,
    I_MOD_U,
    I_MOD_U_PTR,
    I_SIZES,
    S_NCH,
    S_NMOD,
    S_NU,
)


@njit(cache=True, inline="always")
def _gather(Cc, coef, src, dst, lo, hi, B, base):
    """``B[base + dst[e]] += value(src[e])`` for the map entries lo … hi (sources: compact C
    index, or ``−1 − t`` for coupling coefficient t)."""
    for e in range(lo, hi):
        k = src[e]
        B[base + dst[e]] += Cc[k] if k >= 0 else coef[-1 - k]


@njit(cache=True)
def _lu(A, piv):
    """In-place LU with partial pivoting (``P A = L U``); False on an exactly zero pivot
    (LAPACK getrf's ``info > 0``, the reference's singular test)."""
    n = A.shape[0]
    ok = True
    for k in range(n):
        p = k
        big = abs(A[k, k])
        for i in range(k + 1, n):
            if abs(A[i, k]) > big:
                big = abs(A[i, k])
                p = i
        piv[k] = p
        if p != k:
            for j in range(n):
                A[k, j], A[p, j] = A[p, j], A[k, j]
        if A[k, k] == 0.0:
            ok = False
            continue
        inv = 1.0 / A[k, k]
        for i in range(k + 1, n):
            A[i, k] *= inv
            f = A[i, k]
            if f != 0.0:
                for j in range(k + 1, n):
                    A[i, j] -= f * A[k, j]
    return ok


@njit(cache=True)
def _lu_solve_many(A, piv, B):
    """Solve with the factors of :func:`_lu` for every column of B (n, k), in place: one
    sweep over the factors, skipping their zeros (sparse after the fill-reducing column
    order of :func:`rbc.kernels.layout.layout`)."""
    n, k = B.shape
    for i in range(n):
        p = piv[i]
        if p != i:
            for t in range(k):
                B[i, t], B[p, t] = B[p, t], B[i, t]
    for i in range(n):
        for j in range(i):
            a = A[i, j]
            if a != 0.0:
                for t in range(k):
                    B[i, t] -= a * B[j, t]
    for i in range(n - 1, -1, -1):
        for j in range(i + 1, n):
            a = A[i, j]
            if a != 0.0:
                for t in range(k):
                    B[i, t] -= a * B[j, t]
        d = 1.0 / A[i, i]
        for t in range(k):
            B[i, t] *= d


@njit(cache=True, inline="always")
def _lu_solve(A, piv, b):
    """Solve with the factors of :func:`_lu`, in place on b (n,), skipping their zeros."""
    n = A.shape[0]
    for k in range(n):
        p = piv[k]
        if p != k:
            b[k], b[p] = b[p], b[k]
    for i in range(n):
        s = b[i]
        for j in range(i):
            a = A[i, j]
            if a != 0.0:
                s -= a * b[j]
        b[i] = s
    for i in range(n - 1, -1, -1):
        s = b[i]
        for j in range(i + 1, n):
            a = A[i, j]
            if a != 0.0:
                s -= a * b[j]
        b[i] = s / A[i, i]


@njit(cache=True)
def factor(I, IO, F, FO, Cc, lu, piv):
    """Build and LU-factor every module's ``R_p`` block from the compact C (the layout's
    static gather map).

    Args:
        lu: (lu_size,) out: the packed factors; piv: (rank,) out: pivots per module.

    Returns:
        False when a block is exactly singular.
    """
    sizes = iseg(I, IO, I_SIZES)
    ptr, lu_ptr = iseg(I, IO, I_MOD_PTR), iseg(I, IO, I_MOD_LU_PTR)
    p_ptr, p_src = iseg(I, IO, I_MOD_P_PTR), iseg(I, IO, I_MOD_P_SRC)
    p_dst = iseg(I, IO, I_MOD_P_DST)
    coef = fseg(F, FO, F_CP_COEF)
    ok = True
    for m in range(sizes[S_NMOD]):
        r = ptr[m + 1] - ptr[m]
        for k in range(lu_ptr[m], lu_ptr[m + 1]):
            lu[k] = 0.0
        _gather(Cc, coef, p_src, p_dst, p_ptr[m], p_ptr[m + 1], lu, lu_ptr[m])
        if not _lu(lu[lu_ptr[m]: lu_ptr[m + 1]].reshape((r, r)), piv[ptr[m]: ptr[m + 1]]):
            ok = False
    return ok


@njit(cache=True)
def solve_rows(I, IO, lu, piv, rhs, out):
    """``out[dep_m] = R_p,m⁻¹ rhs[rows_m]`` for every module (rhs (n_rows,), out (nv,)).

    Only the dependent entries of ``out`` are written.
    """
    sizes = iseg(I, IO, I_SIZES)
    ptr, rows, dep = iseg(I, IO, I_MOD_PTR), iseg(I, IO, I_MOD_ROWS), iseg(I, IO, I_MOD_DEP)
    lu_ptr = iseg(I, IO, I_MOD_LU_PTR)
    for m in range(sizes[S_NMOD]):
        r = ptr[m + 1] - ptr[m]
        b = np.empty(r)
        for a in range(r):
            b[a] = rhs[rows[ptr[m] + a]]
        _lu_solve(lu[lu_ptr[m]: lu_ptr[m + 1]].reshape((r, r)), piv[ptr[m]: ptr[m + 1]], b)
        for a in range(r):
            out[dep[ptr[m] + a]] = b[a]


@njit(cache=True)
def module_solve(I, IO, F, FO, Cc, lu, piv, m):
    """``R_p,m⁻¹ R_a,m`` (r_m, nt_m) of module m over the independent columns its rows touch
    (``mod_u``, in first-touch order), with the factors of :func:`factor`; the lift's block
    is its negative (module docstring)."""
    ptr, lu_ptr = iseg(I, IO, I_MOD_PTR), iseg(I, IO, I_MOD_LU_PTR)
    a_ptr, a_src = iseg(I, IO, I_MOD_A_PTR), iseg(I, IO, I_MOD_A_SRC)
    a_dst, u_ptr = iseg(I, IO, I_MOD_A_DST), iseg(I, IO, I_MOD_U_PTR)
    coef = fseg(F, FO, F_CP_COEF)
    r = ptr[m + 1] - ptr[m]
    nt = u_ptr[m + 1] - u_ptr[m]
    Ra = np.zeros(r * nt)  # R_a,m over the touched columns: nt right-hand sides
    _gather(Cc, coef, a_src, a_dst, a_ptr[m], a_ptr[m + 1], Ra, 0)
    B = Ra.reshape((r, nt))
    _lu_solve_many(lu[lu_ptr[m]: lu_ptr[m + 1]].reshape((r, r)), piv[ptr[m]: ptr[m + 1]], B)
    return B


@njit(cache=True)
def lift_matrix(I, IO, F, FO, Cc, lu, piv, E):
    """``E`` (nv, n_u) out: ``E[ind] = I``, ``E[dep_m] = −R_p,m⁻¹ R_a,m`` (factors from
    :func:`factor`), solved only for the independent columns the module's rows touch."""
    sizes = iseg(I, IO, I_SIZES)
    nu = sizes[S_NU]
    ind = iseg(I, IO, I_IND)
    ptr, dep = iseg(I, IO, I_MOD_PTR), iseg(I, IO, I_MOD_DEP)
    u_ptr, us = iseg(I, IO, I_MOD_U_PTR), iseg(I, IO, I_MOD_U)
    E[:] = 0.0
    for n in range(nu):
        E[ind[n], n] = 1.0
    for m in range(sizes[S_NMOD]):
        B = module_solve(I, IO, F, FO, Cc, lu, piv, m)
        for t in range(B.shape[1]):
            j = us[u_ptr[m] + t]
            for a in range(B.shape[0]):
                E[dep[ptr[m] + a], j] = -B[a, t]
    if has_point_chords(I, IO):
        nv, nu = E.shape
        cut_rows(I, IO, Cc, E.reshape(E.size), np.arange(nv) * nu, np.full(nv, nu))


@njit(cache=True, inline="always")
def has_point_chords(I, IO):
    """Whether the layout has a point chord (:mod:`rbc.kernels.layout`)."""
    point = iseg(I, IO, I_CH_POINT)
    return point.size > 0 and point.max() > 0


@njit(cache=True)
def cut_rows(I, IO, Cc, X, roff, rlen):
    """A point chord's cut coordinates' rows of E from its path's, in place:
    ``E_e = C_e[0:3] E_path`` — the chord's rows 0–2 (:mod:`rbc.kernels.layout`) give the
    cut joint's speeds from the path's. E is flat, X: coordinate j's row at
    ``X[roff[j]: roff[j] + rlen[j]]`` (the dense E, or the blocks by node of
    :func:`rbc.kernels.articulated.node_lift`: a chord's coordinates share a node)."""
    sizes = iseg(I, IO, I_SIZES)
    point, ch_edge, e_vo = iseg(I, IO, I_CH_POINT), iseg(I, IO, I_CH_EDGE), iseg(I, IO, I_E_VO)
    col_ptr, cols = iseg(I, IO, I_CH_COL_PTR), iseg(I, IO, I_CH_COLS)
    for i in range(sizes[S_NCH]):
        if not point[i]:
            continue
        n, base = col_ptr[i + 1] - col_ptr[i], 6 * col_ptr[i]
        for d in range(3):
            je = e_vo[ch_edge[i]] + d
            row, L = roff[je], rlen[je]
            for t in range(L):
                X[row + t] = 0.0
            for loc in range(n):
                a = Cc[base + d * n + loc]
                rj = roff[cols[col_ptr[i] + loc]]
                for t in range(L):
                    X[row + t] += a * X[rj + t]


@njit(cache=True)
def scaled_blocks(I, IO, F, FO, Cc, row_scale, col_scale, out):
    """The module blocks of the scaled dependent block ``D_r R_p D_c`` from the compact C,
    row-major one after another in out (``Σ r_m²``,: :func:`blocks_size`).

    Args:
        row_scale: (n_rows,) the row scales by closure row; col_scale: (nv,) by coordinate.
    """
    sizes = iseg(I, IO, I_SIZES)
    ptr, rows, dep = iseg(I, IO, I_MOD_PTR), iseg(I, IO, I_MOD_ROWS), iseg(I, IO, I_MOD_DEP)
    p_ptr, p_src = iseg(I, IO, I_MOD_P_PTR), iseg(I, IO, I_MOD_P_SRC)
    p_dst = iseg(I, IO, I_MOD_P_DST)
    coef = fseg(F, FO, F_CP_COEF)
    off = 0
    for m in range(sizes[S_NMOD]):
        r = ptr[m + 1] - ptr[m]
        out[off: off + r * r] = 0.0
        _gather(Cc, coef, p_src, p_dst, p_ptr[m], p_ptr[m + 1], out, off)
        for a in range(r):
            for d in range(r):
                out[off + a * r + d] *= row_scale[rows[ptr[m] + a]] * col_scale[dep[ptr[m] + d]]
        off += r * r


@njit(cache=True)
def blocks_size(I, IO):
    """``Σ r_m²``: the length of :func:`scaled_blocks`' output."""
    ptr = iseg(I, IO, I_MOD_PTR)
    n = 0
    for m in range(iseg(I, IO, I_SIZES)[S_NMOD]):
        n += (ptr[m + 1] - ptr[m]) ** 2
    return n


@njit(cache=True)
def scaled_cond(I, IO, F, FO, Cc, row_scale, col_scale):
    """2-norm condition number of the scaled dependent block ``D_r R_p D_c`` from the compact
    C (the quantity of :func:`rbc.model.partition.scaled_cond`): R_p is block diagonal by
    module, so its singular values are the blocks' (largest over smallest of all blocks).

    Args:
        row_scale: (n_rows,) the row scales by closure row; col_scale: (nv,) by coordinate.
    """
    nmod = iseg(I, IO, I_SIZES)[S_NMOD]
    blocks = np.empty(blocks_size(I, IO))
    sv = np.empty((nmod, 2))
    return scaled_cond_anchor(I, IO, F, FO, Cc, row_scale, col_scale, blocks, sv)


@njit(cache=True)
def scaled_cond_anchor(I, IO, F, FO, Cc, row_scale, col_scale, blocks, sv):
    """:func:`scaled_cond`, keeping what :func:`scaled_cond_bound` starts from: the scaled
    blocks (``Σ r_m²``,) and each block's ``(σ_min, σ_max)`` in sv (n_modules, 2), out."""
    ptr = iseg(I, IO, I_MOD_PTR)
    nmod = iseg(I, IO, I_SIZES)[S_NMOD]
    if nmod == 0:
        return 1.0
    scaled_blocks(I, IO, F, FO, Cc, row_scale, col_scale, blocks)
    big, small = 0.0, np.inf
    off = 0
    for m in range(nmod):
        r = ptr[m + 1] - ptr[m]
        lo, hi = _extreme_singular_values(blocks[off: off + r * r].copy().reshape((r, r)))
        sv[m, 0], sv[m, 1] = lo, hi
        big = max(big, hi)
        small = min(small, lo)
        off += r * r
    return big / small if small > 0.0 else np.inf


#: Relative slack of :func:`scaled_cond_bound` over the Weyl bound: it covers the rounding
#: of the anchor's singular values (≤ 1e-8 relative, :data:`GRAM_FLOOR`) and of the bound's
#: own sums, so that a bound at or below a threshold certifies that :func:`scaled_cond`
#: would be at or below it too.
COND_BOUND_SLACK = 1e-6


@njit(cache=True)
def scaled_cond_bound(I, IO, F, FO, Cc, row_scale, col_scale, blocks, sv):
    """An upper bound of :func:`scaled_cond` at the compact C from an anchor (blocks and
    sv from :func:`scaled_cond_anchor` at another configuration), in ``O(Σ r_m²)``.

    Weyl's inequality (Golub & Van Loan, *Matrix Computations*, 4th ed., Cor. 8.6.2):
    ``|σ_i(A + Δ) − σ_i(A)| ≤ ‖Δ‖₂ ≤ ‖Δ‖_F`` per block, so ``cond ≤ max_m(σ_max,m + δ_m) /
    min_m(σ_min,m − δ_m)`` with δ_m the Frobenius norm of block m's change, times
    ``1 +`` :data:`COND_BOUND_SLACK`; inf when a block's change reaches its σ_min.
    """
    ptr = iseg(I, IO, I_MOD_PTR)
    nmod = iseg(I, IO, I_SIZES)[S_NMOD]
    if nmod == 0:
        return 1.0
    now = np.empty(blocks.size)
    scaled_blocks(I, IO, F, FO, Cc, row_scale, col_scale, now)
    big, small = 0.0, np.inf
    off = 0
    for m in range(nmod):
        r = ptr[m + 1] - ptr[m]
        d2 = 0.0
        for k in range(off, off + r * r):
            d = now[k] - blocks[k]
            d2 += d * d
        delta = math.sqrt(d2)
        big = max(big, sv[m, 1] + delta)
        small = min(small, sv[m, 0] - delta)
        off += r * r
    return (1.0 + COND_BOUND_SLACK) * big / small if small > 0.0 else np.inf


#: Below this ratio of the Gram matrix's extreme eigenvalues (cond > 1e4) the singular values
#: come from the SVD: the eigenvalues of AᵀA carry an absolute error ~ε λ_max, i.e. σ_min a
#: relative error ~ε cond²/2 (≤ 1e-8 above the bound).
GRAM_FLOOR = 1e-8


@njit(cache=True)
def _extreme_singular_values(A):
    """``(σ_min, σ_max)`` of a square A: from the eigenvalues of AᵀA (a third of the SVD's
    time on a 30 × 30 block) while cond(A) ≤ 1e4, else from the SVD."""
    n = A.shape[0]
    Gm = np.empty((n, n))
    for i in range(n):
        for j in range(i, n):
            s = 0.0
            for k in range(n):
                s += A[k, i] * A[k, j]
            Gm[i, j] = s
            Gm[j, i] = s
    lam = np.linalg.eigvalsh(Gm)
    if lam[0] > GRAM_FLOOR * lam[n - 1]:
        return math.sqrt(lam[0]), math.sqrt(lam[n - 1])
    s = np.linalg.svd(A)[1]  # numba has no compute_uv; the blocks are small
    return s[n - 1], s[0]

"""Reduced forward dynamics in time linear in the loops: articulated nodes of the lift.

The lift E is block diagonal by dependency module (:mod:`rbc.kernels.lift`); grouping each
module's dependent coordinates with the independent ones its rows touch (and an edge's
coordinates together) gives **nodes** n with their own speeds u_n, coordinates and bodies
(:func:`rbc.kernels.layout._nodes`). Every body x of node n moves as

    V_x = V_b(n) + H_x u_n,   H_x = Σ_{k on the path from b(n) to x, in n} σ_k g_k E_k,

with b(n) the node's base body (the world or a body of an earlier node) and g_k the world
columns, all in world coordinates (Featherstone 2008, §2 "spatial" coordinates), so no
transform moves a quantity from a body to its base. A node is a macro-joint with motion
subspace H (constraint embedding, Jain 2011, *Robot and Multibody Dynamics*, ch. 9): the
articulated-body recursion (Featherstone 2008, §7.3) runs over the nodes, tip to root

    D_n = Σ_x H_xᵀ P_x H_x + E_nᵀ diag(armature) E_n,   U_n = Σ_x P_x H_x,
    b_n = E_nᵀ τ − Σ_x H_xᵀ p_x − E_nᵀ (armature ⊙ Ė u),
    P_b += Σ_x P_x − U_n D_n⁻¹ U_nᵀ,   p_b += Σ_x p_x + U_n D_n⁻¹ b_n,

(P_x, p_x start as the body's world inertia and its RNEA wrench at the bias accelerations
``v̇ = Ė u``, :func:`rbc.kernels.dynamics.body_forces`), then root to tip

    u̇_n = D_n⁻¹ (b_n − U_nᵀ Δα_b),   Δα_x = Δα_b + H_x u̇_n   (Δα_world = 0).

It solves ``E_Tᵀ M_T E_T u̇ = Eᵀ τ − E_Tᵀ RNEA(q, v, Ė_T u)`` — the system the dense path
(:func:`rbc.kernels.dynamics.reduced`) forms and factors — without forming M_T or M_r: the
cost is Σ_n (bodies_n · n_u,n² + n_u,n³) instead of O(nv_tree · depth + n_u³). On a serial
chain of four-bars every node is one loop (one speed, three bodies).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from rbc.kernels.access import fseg, iseg
from rbc.kernels.dynamics import cholesky, cholesky_apply
from rbc.kernels.layout import (
    F_ARMATURE,
    I_E_NV,
    I_E_SIGN,
    I_E_VO,
    I_IND,
    I_MOD_DEP,
    I_MOD_PTR,
    I_MOD_U,
    I_MOD_U_PTR,
    I_ND_BASE,
    I_ND_BODY,
    I_ND_C,
    I_ND_C_PTR,
    I_ND_D_PTR,
    I_ND_E_PTR,
    I_ND_EDGE,
    I_ND_H_PTR,
    I_ND_PTR,
    I_ND_TOP,
    I_ND_U,
    I_ND_U_PTR,
    I_SIZES,
    I_U_NDPOS,
    I_V_NDROW,
    I_V_NODE,
    S_NB,
    S_NMOD,
    S_NNODE,
    S_NU,
    S_NV_TREE,
)
from rbc.kernels.lift import cut_rows, has_point_chords, module_solve


@njit(cache=True)
def node_lift(I, IO, F, FO, Cc, lu, piv, En):
    """The lift by node: En (``nd_e_ptr[-1]``,) out, node n's block (its coordinates × its
    speeds, row-major, in the orders of ``nd_c`` and ``nd_u``) at ``nd_e_ptr[n]``; the same
    entries as :func:`rbc.kernels.lift.lift_matrix` (factors from its ``factor``)."""
    sizes = iseg(I, IO, I_SIZES)
    ind = iseg(I, IO, I_IND)
    ptr, dep = iseg(I, IO, I_MOD_PTR), iseg(I, IO, I_MOD_DEP)
    mu_ptr, mus = iseg(I, IO, I_MOD_U_PTR), iseg(I, IO, I_MOD_U)
    u_ptr, e_ptr = iseg(I, IO, I_ND_U_PTR), iseg(I, IO, I_ND_E_PTR)
    v_node, v_row, u_pos = iseg(I, IO, I_V_NODE), iseg(I, IO, I_V_NDROW), iseg(I, IO, I_U_NDPOS)
    En[:] = 0.0
    for n in range(sizes[S_NU]):
        j = ind[n]
        d = v_node[j]
        En[e_ptr[d] + v_row[j] * (u_ptr[d + 1] - u_ptr[d]) + u_pos[n]] = 1.0
    for m in range(sizes[S_NMOD]):
        B = module_solve(I, IO, F, FO, Cc, lu, piv, m)
        for a in range(B.shape[0]):
            j = dep[ptr[m] + a]
            d = v_node[j]
            row = e_ptr[d] + v_row[j] * (u_ptr[d + 1] - u_ptr[d])
            for t in range(B.shape[1]):
                En[row + u_pos[mus[mu_ptr[m] + t]]] = -B[a, t]
    # a point chord's cut coordinates (in its path's node) from its rows 0–2: E_e = C_e E_path
    if not has_point_chords(I, IO):
        return
    nv = v_node.size
    roff, rlen = np.empty(nv, dtype=np.int64), np.empty(nv, dtype=np.int64)
    for j in range(nv):
        d = v_node[j]
        rlen[j] = u_ptr[d + 1] - u_ptr[d]
        roff[j] = e_ptr[d] + v_row[j] * rlen[j]
    cut_rows(I, IO, Cc, En, roff, rlen)


@njit(cache=True)
def node_apply(I, IO, En, u, v):
    """``v = E u`` (nv,) out from the node blocks of :func:`node_lift` (each entry summed
    over its node's speeds in ascending order: the dense product's bits)."""
    sizes = iseg(I, IO, I_SIZES)
    u_ptr, us = iseg(I, IO, I_ND_U_PTR), iseg(I, IO, I_ND_U)
    c_ptr, cs, e_ptr = iseg(I, IO, I_ND_C_PTR), iseg(I, IO, I_ND_C), iseg(I, IO, I_ND_E_PTR)
    for n in range(sizes[S_NNODE]):
        uo, nn = u_ptr[n], u_ptr[n + 1] - u_ptr[n]
        for r in range(c_ptr[n + 1] - c_ptr[n]):
            row = e_ptr[n] + r * nn
            s = 0.0
            for c in range(nn):
                s += En[row + c] * u[us[uo + c]]
            v[cs[c_ptr[n] + r]] = s


@njit(cache=True)
def articulated(I, IO, F, FO, En, G, Iw, f0, tau, edu, udot):
    """u̇ (n_u,) out by the recursion over nodes (module docstring).

    Args:
        En: the node blocks of E (:func:`node_lift`); G: (6 nv,) world columns; Iw:
            (n_bodies, 6, 6) world inertias; f0: (n_bodies + 1, 6) the bodies' RNEA wrenches
            at ``v̇ = Ė u`` (:func:`rbc.kernels.dynamics.body_forces`) — both overwritten by
            the articulated inertias and biases (no copies: at 1000 loops Iw is 0.9 MB);
            tau: (nv,) the loads of :func:`rbc.kernels.dynamics.loads`; edu: (nv,) ``Ė u``.

    Returns:
        False if a node's D_n is not positive definite (then M_r is not either).
    """
    sizes = iseg(I, IO, I_SIZES)
    nb, nt, nnode = sizes[S_NB], sizes[S_NV_TREE], sizes[S_NNODE]
    e_nv, e_vo, sign = iseg(I, IO, I_E_NV), iseg(I, IO, I_E_VO), iseg(I, IO, I_E_SIGN)
    b_ptr, bodies = iseg(I, IO, I_ND_PTR), iseg(I, IO, I_ND_BODY)
    edges, tops, bases = iseg(I, IO, I_ND_EDGE), iseg(I, IO, I_ND_TOP), iseg(I, IO, I_ND_BASE)
    u_ptr, us = iseg(I, IO, I_ND_U_PTR), iseg(I, IO, I_ND_U)
    c_ptr, cs, e_ptr = iseg(I, IO, I_ND_C_PTR), iseg(I, IO, I_ND_C), iseg(I, IO, I_ND_E_PTR)
    h_ptr, d_ptr = iseg(I, IO, I_ND_H_PTR), iseg(I, IO, I_ND_D_PTR)
    v_row = iseg(I, IO, I_V_NDROW)
    arm = fseg(F, FO, F_ARMATURE)
    nu = sizes[S_NU]
    Pb, pb = Iw, f0  # the articulated inertias and biases, accumulated in place
    H = np.empty(h_ptr[nnode])
    Dn = np.empty(d_ptr[nnode])
    Un = np.empty(6 * nu)
    bn = np.empty(nu)
    nmax = 0
    for n in range(nnode):
        nmax = max(nmax, u_ptr[n + 1] - u_ptr[n])
    W = np.empty((6, nmax))
    X = np.empty((nmax, 6))
    col = np.empty(nmax)
    y = np.empty(nmax)
    Ptot = np.empty((6, 6))
    ptot = np.empty(6)
    for n in range(nnode - 1, -1, -1):
        uo, nn = u_ptr[n], u_ptr[n + 1] - u_ptr[n]
        ho, eo = h_ptr[n], e_ptr[n]
        D = Dn[d_ptr[n]: d_ptr[n + 1]].reshape((nn, nn))
        D[:] = 0.0
        for i in range(6 * nn):
            Un[6 * uo + i] = 0.0
        for c in range(nn):
            bn[uo + c] = 0.0
        Ptot[:] = 0.0
        ptot[:] = 0.0
        for p in range(b_ptr[n + 1] - b_ptr[n]):
            x, k, tp = bodies[b_ptr[n] + p], edges[b_ptr[n] + p], tops[b_ptr[n] + p]
            hb = ho + 6 * nn * p
            for i in range(6 * nn):
                H[hb + i] = H[ho + 6 * nn * tp + i] if tp >= 0 else 0.0
            s = float(sign[k])
            for d in range(e_nv[k]):
                j = e_vo[k] + d
                row = eo + v_row[j] * nn
                for r in range(6):
                    g = s * G[6 * j + r]
                    for c in range(nn):
                        H[hb + r * nn + c] += g * En[row + c]
            for r in range(6):  # W = P_x H_x
                for c in range(nn):
                    acc = 0.0
                    for t in range(6):
                        acc += Pb[x, r, t] * H[hb + t * nn + c]
                    W[r, c] = acc
                    Un[6 * uo + r * nn + c] += acc
            for c in range(nn):
                acc = 0.0
                for r in range(6):
                    acc -= H[hb + r * nn + c] * pb[x, r]
                bn[uo + c] += acc
                for c2 in range(nn):
                    acc = 0.0
                    for r in range(6):
                        acc += H[hb + r * nn + c] * W[r, c2]
                    D[c, c2] += acc
            for r in range(6):
                ptot[r] += pb[x, r]
                for t in range(6):
                    Ptot[r, t] += Pb[x, r, t]
        for i in range(c_ptr[n], c_ptr[n + 1]):  # loads on the node's coordinates, armature
            j = cs[i]
            row = eo + v_row[j] * nn
            for c in range(nn):
                bn[uo + c] += En[row + c] * tau[j]
            if j < nt and arm[j] != 0.0:
                for c in range(nn):
                    bn[uo + c] -= En[row + c] * arm[j] * edu[j]
                    for c2 in range(nn):
                        D[c, c2] += arm[j] * En[row + c] * En[row + c2]
        if not cholesky(D):
            return False
        base = bases[n]
        if base == nb:
            continue
        for t in range(6):  # X = D⁻¹ Uᵀ
            for c in range(nn):
                col[c] = Un[6 * uo + t * nn + c]
            cholesky_apply(D, col[:nn], col[:nn])
            for c in range(nn):
                X[c, t] = col[c]
        for c in range(nn):
            y[c] = bn[uo + c]
        cholesky_apply(D, y[:nn], y[:nn])
        for r in range(6):
            acc = ptot[r]
            for c in range(nn):
                acc += Un[6 * uo + r * nn + c] * y[c]
            pb[base, r] += acc
            for t in range(6):
                acc = Ptot[r, t]
                for c in range(nn):
                    acc -= Un[6 * uo + r * nn + c] * X[c, t]
                Pb[base, r, t] += acc
    dA = np.zeros((nb + 1, 6))
    for n in range(nnode):
        uo, nn = u_ptr[n], u_ptr[n + 1] - u_ptr[n]
        ho, base = h_ptr[n], bases[n]
        D = Dn[d_ptr[n]: d_ptr[n + 1]].reshape((nn, nn))
        for c in range(nn):
            acc = bn[uo + c]
            for r in range(6):
                acc -= Un[6 * uo + r * nn + c] * dA[base, r]
            y[c] = acc
        cholesky_apply(D, y[:nn], y[:nn])
        for c in range(nn):
            udot[us[uo + c]] = y[c]
        for p in range(b_ptr[n + 1] - b_ptr[n]):
            x = bodies[b_ptr[n] + p]
            hb = ho + 6 * nn * p
            for r in range(6):
                acc = dA[base, r]
                for c in range(nn):
                    acc += H[hb + r * nn + c] * y[c]
                dA[x, r] = acc
    return True

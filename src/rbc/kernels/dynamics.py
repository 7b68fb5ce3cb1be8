"""Dynamics kernels: tree terms, loads, reduced terms and the Cholesky solve (DESIGN.md §6).

World-frame recursions (Featherstone 2008, §5.3 RNEA and §6.2 CRBA, in spatial world
coordinates; angular-first): body inertias ``I^w_x = Ad(T_x_w)ᵀ I_x Ad(T_x_w)``, forces
``f_x = I^w_x (α_x + a_x + a_g) + V_x ×* I^w_x V_x − w_x`` (``a_g = [0; −g]``, w the external
wrenches of point-to-point springs), accumulated tip to root; ``τ_k = σ_k g_kᵀ f_subtree``.
Composite inertias give ``M_T[k', k] = σ_k' g_k'ᵀ I^c_k σ_k g_k`` for k' on the path from k
to the root; armature (joint armature plus reflected rotor inertia) on the diagonal. M_T
itself is never formed: each entry goes straight into ``M_T E_T`` (:func:`crba_product`).

Reduced (Kane/Maggi; Jain 2011, ch. 9): one RNEA at the tree accelerations ``a = Ė_T u``
gives ``h_T + M_T Ė_T u + g_T``, so

    M_r = E_Tᵀ M_T E_T,   rhs = Eᵀ (τ + τ_coulomb) − E_Tᵀ RNEA(q, v, Ė_T u),
    M_r u̇ = rhs           (Cholesky, L Lᵀ),

with τ the smooth loads on every coordinate (damping, springs, constant efforts, port
efforts) and τ_coulomb ``−μ sign(v)`` (0 at rest): the same terms as :func:`rbc.model.dynamics.
reduced_terms` and :func:`~rbc.model.dynamics.forward_dynamics`.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from rbc.kernels.access import fseg, iseg
from rbc.kernels.layout import (
    F_ARMATURE,
    F_B_INERTIA,
    F_GRAVITY,
    F_LD_DAMPING,
    F_LD_EFFORT,
    F_LD_FRICTION,
    F_LD_REST,
    F_LD_STIFFNESS,
    F_SP_COEF,
    F_SP_XYZ,
    I_E_CHILD,
    I_E_NV,
    I_E_PARENT,
    I_E_SIGN,
    I_E_VO,
    I_LD_QIDX,
    I_PORTS,
    I_SIZES,
    I_SP_BODY,
    I_TREE,
    I_TREE_UP,
    S_NB,
    S_NSP,
    S_NV,
    S_NV_TREE,
)
from rbc.kernels.se3 import TR, force_cross
from rbc.model.dynamics import COULOMB_REST_SPEED


@njit(cache=True)
def world_inertias(I, IO, F, FO, Tw, Iw):
    """``I^w_x`` (n_bodies, 6, 6) out: every body's spatial inertia in world coordinates
    (Tw the world poses of :func:`rbc.kernels.kinematics.poses`).

    ``Ad(T_x_w)ᵀ I_x Ad(T_x_w)`` in 3 × 3 blocks: with the body's inertia at its origin
    ``[[A, ĥ], [ĥᵀ, m 1]]`` (``h = m c``, body axes) and ``T_w_x = (R, p)``, ``h' = R h``:
    ``[[R A Rᵀ + m p̂p̂ᵀ + p̂ĥ'ᵀ + ĥ'p̂ᵀ, m p̂ + ĥ'], [(m p̂ + ĥ')ᵀ, m 1]]`` (Featherstone
    2008, §2.13, the parallel-axis shift from the body origin to the world origin).
    """
    nb = iseg(I, IO, I_SIZES)[S_NB]
    ob = FO[F_B_INERTIA]
    RA = np.empty((3, 3))
    for x in range(nb):
        o, t = ob + 36 * x, TR * x
        m = F[o + 21]  # [3, 3]
        # h = m c from the off-diagonal block ĥ = [[0, −h2, h1], [h2, 0, −h0], [−h1, h0, 0]]
        h0, h1, h2 = F[o + 6 * 2 + 4], F[o + 6 * 0 + 5], F[o + 6 * 1 + 3]
        for i in range(3):  # RA = R A
            for j in range(3):
                RA[i, j] = (Tw[t + 3 * i] * F[o + j] + Tw[t + 3 * i + 1] * F[o + 6 + j]
                            + Tw[t + 3 * i + 2] * F[o + 12 + j])
        g0 = Tw[t] * h0 + Tw[t + 1] * h1 + Tw[t + 2] * h2  # h' = R h
        g1 = Tw[t + 3] * h0 + Tw[t + 4] * h1 + Tw[t + 5] * h2
        g2 = Tw[t + 6] * h0 + Tw[t + 7] * h1 + Tw[t + 8] * h2
        p0, p1, p2 = Tw[t + 9], Tw[t + 10], Tw[t + 11]
        # p̂p̂ᵀ = |p|² 1 − p pᵀ;  p̂ĥ'ᵀ + ĥ'p̂ᵀ = 2 (p·h') 1 − p h'ᵀ − h' pᵀ
        pp, ph = p0 * p0 + p1 * p1 + p2 * p2, p0 * g0 + p1 * g1 + p2 * g2
        pv = (p0, p1, p2)
        gv = (g0, g1, g2)
        for i in range(3):
            for j in range(3):
                s = (RA[i, 0] * Tw[t + 3 * j] + RA[i, 1] * Tw[t + 3 * j + 1]
                     + RA[i, 2] * Tw[t + 3 * j + 2])
                s += -m * pv[i] * pv[j] - pv[i] * gv[j] - gv[i] * pv[j]
                if i == j:
                    s += m * pp + 2.0 * ph
                Iw[x, i, j] = s
                Iw[x, 3 + i, 3 + j] = m if i == j else 0.0
        # top-right m p̂ + ĥ' (skew of k = m p + h'), bottom-left its transpose
        k0, k1, k2 = m * p0 + g0, m * p1 + g1, m * p2 + g2
        Iw[x, 0, 3], Iw[x, 0, 4], Iw[x, 0, 5] = 0.0, -k2, k1
        Iw[x, 1, 3], Iw[x, 1, 4], Iw[x, 1, 5] = k2, 0.0, -k0
        Iw[x, 2, 3], Iw[x, 2, 4], Iw[x, 2, 5] = -k1, k0, 0.0
        for i in range(3):
            for j in range(3):
                Iw[x, 3 + i, j] = Iw[x, j, 3 + i]


@njit(cache=True, inline="always")
def _point(Tw, x, xyz, o, out):
    """World position (3,) of the point ``xyz[o:o+3]`` of body x."""
    t = TR * x
    for i in range(3):
        out[i] = (Tw[t + 9 + i] + Tw[t + 3 * i] * xyz[o] + Tw[t + 3 * i + 1] * xyz[o + 1]
                  + Tw[t + 3 * i + 2] * xyz[o + 2])


@njit(cache=True, inline="always")
def _point_velocity(V, x, p, out):
    """Velocity (3,) of the point p (world) of body x with world spatial twist V[6x:6x+6]."""
    w = 6 * x
    out[0] = V[w + 3] + V[w + 1] * p[2] - V[w + 2] * p[1]
    out[1] = V[w + 4] + V[w + 2] * p[0] - V[w + 0] * p[2]
    out[2] = V[w + 5] + V[w + 0] * p[1] - V[w + 1] * p[0]


@njit(cache=True, inline="always")
def _add_point_force(w, x, p, f):
    """``w[x] += [p × f; f]``: a force f (3,) at the world point p as a world wrench."""
    w[x, 0] += p[1] * f[2] - p[2] * f[1]
    w[x, 1] += p[2] * f[0] - p[0] * f[2]
    w[x, 2] += p[0] * f[1] - p[1] * f[0]
    w[x, 3] += f[0]
    w[x, 4] += f[1]
    w[x, 5] += f[2]


@njit(cache=True)
def spring_wrenches(I, IO, F, FO, Tw, V, fext):
    """World wrenches (n_bodies + 1, 6) out of the point-to-point spring-dampers (tension
    ``k(ℓ − ℓ₀) + c ℓ̇`` along a→b; +T n on a, −T n on b, at the attachment points)."""
    fext[:] = 0.0
    ns = iseg(I, IO, I_SIZES)[S_NSP]
    if ns == 0:
        return
    body, xyz, coef = iseg(I, IO, I_SP_BODY), fseg(F, FO, F_SP_XYZ), fseg(F, FO, F_SP_COEF)
    pa = np.empty(3)
    pb = np.empty(3)
    va = np.empty(3)
    vb = np.empty(3)
    n = np.empty(3)
    fa = np.empty(3)
    fb = np.empty(3)
    for s in range(ns):
        a, b = body[2 * s], body[2 * s + 1]
        _point(Tw, a, xyz, 6 * s, pa)
        _point(Tw, b, xyz, 6 * s + 3, pb)
        _point_velocity(V, a, pa, va)
        _point_velocity(V, b, pb, vb)
        length = math.sqrt((pb[0] - pa[0]) ** 2 + (pb[1] - pa[1]) ** 2 + (pb[2] - pa[2]) ** 2)
        rate = 0.0
        for i in range(3):
            n[i] = (pb[i] - pa[i]) / length
            rate += n[i] * (vb[i] - va[i])
        t = coef[3 * s] * (length - coef[3 * s + 1]) + coef[3 * s + 2] * rate
        for i in range(3):
            fa[i] = t * n[i]
            fb[i] = -t * n[i]
        _add_point_force(fext, a, pa, fa)
        _add_point_force(fext, b, pb, fb)


@njit(cache=True)
def body_forces(I, IO, F, FO, G, V, A0, a, Iw, fext, f):
    """Every body's own world wrench ``f_x = I^w_x (α_x + a_g) + V_x ×* I^w_x V_x − w_x``
    (n_bodies + 1, 6) out at the tree accelerations a (nv,) (tree part used; the world's
    row 0): RNEA's forward pass, before the tip-to-root accumulation."""
    sizes = iseg(I, IO, I_SIZES)
    nb = sizes[S_NB]
    parent, child, sign = iseg(I, IO, I_E_PARENT), iseg(I, IO, I_E_CHILD), iseg(I, IO, I_E_SIGN)
    e_nv, e_vo = iseg(I, IO, I_E_NV), iseg(I, IO, I_E_VO)
    tree = iseg(I, IO, I_TREE)
    g = fseg(F, FO, F_GRAVITY)
    acc = np.zeros((nb + 1, 6))
    for r in range(3):
        acc[nb, 3 + r] = -g[r]
    f[:] = 0.0
    h = np.empty(6)
    cr = np.empty(6)
    tot = np.empty(6)
    for k in tree:
        top, low = (parent[k], child[k]) if sign[k] > 0 else (child[k], parent[k])
        s = float(sign[k])
        for r in range(6):
            acc[low, r] = acc[top, r]
        for d in range(e_nv[k]):
            j = e_vo[k] + d
            for r in range(6):
                acc[low, r] += s * G[6 * j + r] * a[j]
        for r in range(6):
            tot[r] = acc[low, r] + A0[6 * low + r]
        for r in range(6):
            x = 0.0
            for c in range(6):
                x += Iw[low, r, c] * V[6 * low + c]
            h[r] = x
        force_cross(V, 6 * low, h, cr)
        for r in range(6):
            x = 0.0
            for c in range(6):
                x += Iw[low, r, c] * tot[c]
            f[low, r] = x + cr[r] - fext[low, r]


@njit(cache=True)
def rnea(I, IO, F, FO, G, V, A0, a, Iw, fext, tau):
    """``τ_T = M_T a + h_T + g_T − Jᵀ w`` (nv_tree,) out, a (nv,) accelerations (tree part
    used); G from :func:`rbc.kernels.kinematics.poses`, V, A0 from :func:`~rbc.kernels.
    kinematics.velocities`. M_T is :func:`crba`'s, with the armature (as Pinocchio's
    ``rnea`` adds ``armature · a``)."""
    sizes = iseg(I, IO, I_SIZES)
    nb = sizes[S_NB]
    parent, child, sign = iseg(I, IO, I_E_PARENT), iseg(I, IO, I_E_CHILD), iseg(I, IO, I_E_SIGN)
    e_nv, e_vo = iseg(I, IO, I_E_NV), iseg(I, IO, I_E_VO)
    tree = iseg(I, IO, I_TREE)
    f = np.empty((nb + 1, 6))
    body_forces(I, IO, F, FO, G, V, A0, a, Iw, fext, f)
    for t in range(tree.size - 1, -1, -1):
        k = tree[t]
        top, low = (parent[k], child[k]) if sign[k] > 0 else (child[k], parent[k])
        s = float(sign[k])
        for d in range(e_nv[k]):
            j = e_vo[k] + d
            acc_t = 0.0
            for r in range(6):
                acc_t += G[6 * j + r] * f[low, r]
            tau[j] = s * acc_t
        for r in range(6):
            f[top, r] += f[low, r]
    arm = fseg(F, FO, F_ARMATURE)
    for j in range(tau.size):
        tau[j] += arm[j] * a[j]


@njit(cache=True)
def crba_product(I, IO, F, FO, G, Iw, E, Y):
    """``Y = M_T E_T`` (nv_tree, n_u) out without forming M_T: the composite-rigid-body
    entries (Featherstone 2008, §6.2: each tree coordinate against those on its path to the
    root, ``M_T[k', k] = σ_k' g_k'ᵀ I^c_k σ_k g_k``) applied to E's rows as they are made,
    armature on the diagonal — O(nnz(M_T) n_u) instead of O(nv_tree² n_u) (Stewart: 81 of
    M_T's 441 entries are structurally nonzero)."""
    sizes = iseg(I, IO, I_SIZES)
    nb = sizes[S_NB]
    parent, child, sign = iseg(I, IO, I_E_PARENT), iseg(I, IO, I_E_CHILD), iseg(I, IO, I_E_SIGN)
    e_nv, e_vo = iseg(I, IO, I_E_NV), iseg(I, IO, I_E_VO)
    tree, up = iseg(I, IO, I_TREE), iseg(I, IO, I_TREE_UP)
    nu = E.shape[1]
    Ic = np.zeros((nb + 1, 6, 6))
    for x in range(nb):
        for r in range(6):
            for c in range(6):
                Ic[x, r, c] = Iw[x, r, c]
    for t in range(tree.size - 1, -1, -1):
        k = tree[t]
        top, low = (parent[k], child[k]) if sign[k] > 0 else (child[k], parent[k])
        for r in range(6):
            for c in range(6):
                Ic[top, r, c] += Ic[low, r, c]
    Y[:] = 0.0
    Fk = np.empty((6, 6))
    for k in tree:
        n = e_nv[k]
        if n == 0:
            continue
        low = child[k] if sign[k] > 0 else parent[k]
        s = float(sign[k])
        vo = e_vo[k]
        for d in range(n):
            for r in range(6):
                acc = 0.0
                for c in range(6):
                    acc += Ic[low, r, c] * G[6 * (vo + d) + c]
                Fk[r, d] = s * acc
        kk = k
        while kk >= 0:
            m = e_nv[kk]
            if m:
                s2 = float(sign[kk])
                for d2 in range(m):
                    a = e_vo[kk] + d2
                    for d in range(n):
                        b = vo + d
                        acc = 0.0
                        for r in range(6):
                            acc += G[6 * a + r] * Fk[r, d]
                        acc *= s2  # M_T[a, b] = M_T[b, a]
                        for j in range(nu):
                            Y[a, j] += acc * E[b, j]
                        if kk != k:  # the own block visits (a, b) and (b, a) itself
                            for j in range(nu):
                                Y[b, j] += acc * E[a, j]
            kk = up[kk]
    arm = fseg(F, FO, F_ARMATURE)
    for a in range(Y.shape[0]):
        for j in range(nu):
            Y[a, j] += arm[a] * E[a, j]


@njit(cache=True)
def loads(I, IO, F, FO, q, v, f, tau):
    """Smooth loads plus Coulomb efforts on every coordinate (nv,) out (gravity and springs
    between points are in the RNEA): ``−d v − k (q − q₀) + τ_const − μ sign(v)`` and the
    port efforts f (n_act,) on their columns."""
    nv = iseg(I, IO, I_SIZES)[S_NV]
    damp, fric = fseg(F, FO, F_LD_DAMPING), fseg(F, FO, F_LD_FRICTION)
    stiff, rest, eff = fseg(F, FO, F_LD_STIFFNESS), fseg(F, FO, F_LD_REST), fseg(F, FO, F_LD_EFFORT)
    qidx = iseg(I, IO, I_LD_QIDX)
    for j in range(nv):
        t = -damp[j] * v[j] - stiff[j] * (q[qidx[j]] - rest[j]) + eff[j]
        if v[j] > COULOMB_REST_SPEED:  # at rest below it (model.dynamics.coulomb_direction)
            t -= fric[j]
        elif v[j] < -COULOMB_REST_SPEED:
            t += fric[j]
        tau[j] = t
    ports = iseg(I, IO, I_PORTS)
    for n in range(ports.size):
        tau[ports[n]] += f[n]


@njit(cache=True)
def cholesky(M):
    """In place: the lower triangle of M (n, n) SPD becomes L (``M = L Lᵀ``; the strict upper
    triangle is not read). False if M is not positive definite (a pivot ≤ 0)."""
    n = M.shape[0]
    for j in range(n):
        s = M[j, j]
        for k in range(j):
            s -= M[j, k] * M[j, k]
        if not s > 0.0:
            return False
        d = math.sqrt(s)
        M[j, j] = d
        for i in range(j + 1, n):
            s = M[i, j]
            for k in range(j):
                s -= M[i, k] * M[j, k]
            M[i, j] = s / d
    return True


@njit(cache=True)
def cholesky_apply(L, b, out):
    """``out = (L Lᵀ)⁻¹ b`` (n,) with the factor of :func:`cholesky` (out may be b)."""
    n = L.shape[0]
    for i in range(n):
        s = b[i]
        for k in range(i):
            s -= L[i, k] * out[k]
        out[i] = s / L[i, i]
    for i in range(n - 1, -1, -1):
        s = out[i]
        for k in range(i + 1, n):
            s -= L[k, i] * out[k]
        out[i] = s / L[i, i]


@njit(cache=True)
def cholesky_solve(M, b, out):
    """``out = M⁻¹ b`` by Cholesky (M (n, n) SPD, overwritten by L). False if M is not
    positive definite (a pivot ≤ 0)."""
    if not cholesky(M):
        return False
    cholesky_apply(M, b, out)
    return True


@njit(cache=True)
def powers(I, IO, v, f, tau, V, fext, out):
    """``out = (P_act, P_passive)`` [W]: the port efforts' power ``Σ f_n v_port(n)`` and the
    passive elements' ``τ_p · v`` — the loads τ (nv,) of :func:`loads` without the port
    efforts, plus the spring-dampers' world wrenches against the body twists (``Σ w_x · V_x``,
    both angular-first in world coordinates)."""
    ports = iseg(I, IO, I_PORTS)
    nb = iseg(I, IO, I_SIZES)[S_NB]
    p_act = 0.0
    for n in range(ports.size):
        p_act += f[n] * v[ports[n]]
    p = 0.0
    for j in range(v.size):
        p += tau[j] * v[j]
    if iseg(I, IO, I_SIZES)[S_NSP]:
        for x in range(nb):
            for r in range(6):
                p += fext[x, r] * V[6 * x + r]
    out[0] = p_act
    out[1] = p - p_act


@njit(cache=True)
def reduced(I, IO, F, FO, q, v, edu, f, G, V, A0, Iw, fext, E, Mr, rhs, power):
    """``M_r`` (n_u, n_u), ``rhs`` (n_u,) and ``power`` (2,) (:func:`powers`) out (module
    docstring)."""
    sizes = iseg(I, IO, I_SIZES)
    nv, nt = sizes[S_NV], sizes[S_NV_TREE]
    tau_id = np.empty(nt)
    rnea(I, IO, F, FO, G, V, A0, edu, Iw, fext, tau_id)
    tau = np.empty(nv)
    loads(I, IO, F, FO, q, v, f, tau)
    powers(I, IO, v, f, tau, V, fext, power)
    nu = E.shape[1]
    Y = np.empty((nt, nu))  # M_T E_T over M_T's structural nonzeros
    crba_product(I, IO, F, FO, G, Iw, E, Y)
    # E is sparse (a module's dependent rows touch only its inputs): E_Tᵀ Y runs over its
    # nonzeros, O(nnz(E_T)·n_u)
    for a in range(nu):
        for b in range(a, nu):
            Mr[a, b] = 0.0
        for i in range(nt):  # row a of M_r over column a's nonzeros (i ascending per entry)
            e = E[i, a]
            if e != 0.0:
                for b in range(a, nu):
                    Mr[a, b] += e * Y[i, b]
        for b in range(a + 1, nu):
            Mr[b, a] = Mr[a, b]
        s = 0.0
        for i in range(nv):
            s += E[i, a] * tau[i]
        for i in range(nt):
            s -= E[i, a] * tau_id[i]
        rhs[a] = s

"""Whole evaluations in one kernel call: reduced forward dynamics, the closure corrector,
one Runge–Kutta stage, and a batch of states over the cores (``prange``).

A **stage** is what an integrator asks of the reduced model at ``(x, u, f)``: close the
mechanism at the independent values x from the last closed configuration (lift predictor
``q⁻ = q ⊕ E δu``, the prescribed coordinates set exactly, Newton on ``S ρ = 0`` over the
dependent columns with the module-blocked ``R_p`` factors — :class:`rbc.sim.manifold.
LiftedCloser`'s algorithm), then evaluate ``u̇ = M_r⁻¹ rhs`` at the closed configuration
with the lift computed there. The state (q, E, x at q) lives in caller-owned arrays that a
successful stage updates in place.

Status codes (:data:`OK`, …) tell the Python side what to fall back to: a singular
``R_p``, a non-positive-definite ``M_r`` or a corrector that did not converge is handed to
the reference path, which raises the user-facing errors or runs the continuation.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from rbc.kernels.access import iseg
from rbc.kernels.articulated import articulated, node_apply, node_lift
from rbc.kernels.dynamics import (
    body_forces,
    cholesky,
    cholesky_apply,
    cholesky_solve,
    loads,
    reduced,
    spring_wrenches,
    world_inertias,
)
from rbc.kernels.kinematics import (
    closure,
    cut_rates,
    integrate,
    poses,
    velocities,
    velocity_product,
)
from rbc.kernels.layout import (
    I_CH_COL_PTR,
    I_DEP,
    I_IND,
    I_KEEP_Q,
    I_KEEP_U,
    I_ND_E_PTR,
    I_PORTS,
    I_SIZES,
    S_NB,
    S_NCH,
    S_NCP,
    S_NE,
    S_NNODE,
    S_NQ,
    S_NU,
    S_NV,
    S_RANK,
    S_RECURSE,
)
from rbc.kernels.lift import factor, lift_matrix, solve_rows
from rbc.kernels.se3 import TR

OK, SINGULAR_LIFT, NOT_PD, NOT_CLOSED = 0, 1, 2, 3


@njit(cache=True, inline="always")
def _matvec(A, x, out):
    """``out = A x`` (loops: the sizes here are small and numba's ``@`` calls BLAS)."""
    for i in range(A.shape[0]):
        s = 0.0
        for j in range(A.shape[1]):
            s += A[i, j] * x[j]
        out[i] = s


@njit(cache=True)
def _geometry(I, IO, F, FO, q, Tw, Jw, G, Fch, rho, Cc, P, lu, piv):
    poses(I, IO, F, FO, q, Tw, Jw, G)
    closure(I, IO, F, FO, q, Tw, G, rho, Cc, P, Fch)
    return factor(I, IO, F, FO, Cc, lu, piv)


@njit(cache=True)
def _work(I, IO, lu_size):
    """The geometry's work arrays: world poses Tw, joint frames Jw, world columns G, chord
    frames Fch (flat, :mod:`rbc.kernels.kinematics`), ρ, compact C, the left factors P, the
    LU factors and pivots."""
    sizes = iseg(I, IO, I_SIZES)
    nb, nv, nch, ne = sizes[S_NB], sizes[S_NV], sizes[S_NCH], sizes[S_NE]
    n_rows = 6 * nch + sizes[S_NCP]
    ncols = iseg(I, IO, I_CH_COL_PTR)[nch]
    return (np.empty(TR * (nb + 1)), np.empty(TR * ne), np.zeros(6 * nv), np.empty(TR * nch),
            np.empty(n_rows), np.empty(6 * ncols), np.empty((nch, 6, 6)),
            np.empty(lu_size), np.empty(sizes[S_RANK], dtype=np.int64))


@njit(cache=True)
def evaluate(I, IO, F, FO, lu_size, q, u, f, udot, v, edu, E, Mr, rhs):
    """Reduced forward dynamics at (q, u) with port efforts f (one call).

    Args:
        q: (nq,); u: (n_u,); f: (n_act,).
        udot, v, edu: (n_u,), (nv,), (nv,) out: u̇, all speeds ``E u``, ``Ė u``.
        E: (nv, n_u) out: the lift; Mr: (n_u, n_u) out: M_r; rhs: (n_u,) out.

    Returns:
        :data:`OK`, :data:`SINGULAR_LIFT` or :data:`NOT_PD`.
    """
    Tw, Jw, G, Fch, rho, Cc, P, lu, piv = _work(I, IO, lu_size)
    if not _geometry(I, IO, F, FO, q, Tw, Jw, G, Fch, rho, Cc, P, lu, piv):
        return SINGULAR_LIFT
    lift_matrix(I, IO, F, FO, Cc, lu, piv, E)
    return _dynamics(I, IO, F, FO, q, u, f, Tw, Jw, G, Fch, P, lu, piv, E, udot, v, edu, Mr,
                     rhs, np.empty(2))


@njit(cache=True)
def forward(I, IO, F, FO, lu_size, q, u, f, udot):
    """u̇ (n_u,) out at (q, u, f): by the recursion over the lift's nodes
    (:mod:`rbc.kernels.articulated`, linear in the loops) when the layout chose it
    (:func:`rbc.kernels.layout.layout`'s ``recursion``), else
    :func:`evaluate` with its other outputs kept inside (one call with few arguments: the
    per-call face for Python). Returns the status of :func:`evaluate`."""
    sizes = iseg(I, IO, I_SIZES)
    nv, nu = sizes[S_NV], sizes[S_NU]
    if not sizes[S_RECURSE]:
        return evaluate(I, IO, F, FO, lu_size, q, u, f, udot, np.empty(nv), np.empty(nv),
                        np.empty((nv, nu)), np.empty((nu, nu)), np.empty(nu))
    Tw, Jw, G, Fch, rho, Cc, P, lu, piv = _work(I, IO, lu_size)
    if not _geometry(I, IO, F, FO, q, Tw, Jw, G, Fch, rho, Cc, P, lu, piv):
        return SINGULAR_LIFT
    En = np.empty(iseg(I, IO, I_ND_E_PTR)[sizes[S_NNODE]])
    node_lift(I, IO, F, FO, Cc, lu, piv, En)
    v = np.empty(nv)
    node_apply(I, IO, En, u, v)
    nb = sizes[S_NB]
    V = np.empty(6 * (nb + 1))
    A0 = np.empty(6 * (nb + 1))
    edu = np.empty(nv)
    _bias(I, IO, F, FO, q, v, Jw, G, Fch, P, lu, piv, V, A0, edu)
    Iw = np.empty((nb, 6, 6))
    world_inertias(I, IO, F, FO, Tw, Iw)
    fext = np.empty((nb + 1, 6))
    spring_wrenches(I, IO, F, FO, Tw, V, fext)
    f0 = np.empty((nb + 1, 6))
    body_forces(I, IO, F, FO, G, V, A0, edu, Iw, fext, f0)
    tau = np.empty(nv)
    loads(I, IO, F, FO, q, v, f, tau)
    if not articulated(I, IO, F, FO, En, G, Iw, f0, tau, edu, udot):
        return NOT_PD
    return OK


@njit(cache=True)
def _bias(I, IO, F, FO, q, v, Jw, G, Fch, P, lu, piv, V, A0, edu):
    """Body twists V, bias accelerations A0 (6 (n_bodies + 1),) and ``Ė u`` (nv,) out at
    (q, v = E u) from the geometry's arrays: ``(Ė u)_dep = −R_p⁻¹ Ċ v``, 0 elsewhere."""
    velocities(I, IO, F, FO, q, v, Jw, G, V, A0)
    cv = np.empty(rho_size(I, IO))
    velocity_product(I, IO, F, FO, q, v, Fch, V, A0, P, cv)
    edu[:] = 0.0
    solve_rows(I, IO, lu, piv, cv, edu)
    for j in iseg(I, IO, I_DEP):
        edu[j] = -edu[j]
    cut_rates(I, IO, G, P, cv, edu)  # point chords' cut coordinates (rbc.kernels.layout)


@njit(cache=True)
def _dynamics(I, IO, F, FO, q, u, f, Tw, Jw, G, Fch, P, lu, piv, E, udot, v, edu, Mr, rhs,
              power):
    sizes = iseg(I, IO, I_SIZES)
    nb = sizes[S_NB]
    _matvec(E, u, v)
    V = np.empty(6 * (nb + 1))
    A0 = np.empty(6 * (nb + 1))
    _bias(I, IO, F, FO, q, v, Jw, G, Fch, P, lu, piv, V, A0, edu)
    Iw = np.empty((nb, 6, 6))
    world_inertias(I, IO, F, FO, Tw, Iw)
    fext = np.empty((nb + 1, 6))
    spring_wrenches(I, IO, F, FO, Tw, V, fext)
    reduced(I, IO, F, FO, q, v, edu, f, G, V, A0, Iw, fext, E, Mr, rhs, power)
    if not cholesky_solve(Mr.copy(), rhs, udot):
        return NOT_PD
    return OK


@njit(cache=True)
def rho_size(I, IO):
    """Closure rows: 6 per chord plus one per coupling."""
    sizes = iseg(I, IO, I_SIZES)
    return 6 * sizes[S_NCH] + sizes[S_NCP]


@njit(cache=True)
def geometry(I, IO, F, FO, lu_size, q, rho, C_compact, E):
    """ρ (n_rows,), the compact C and E (nv, n_u) at q (tests and the Python closer).

    Returns False when R_p is exactly singular (E is then not written)."""
    Tw, Jw, G, Fch, rho_w, Cc, P, lu, piv = _work(I, IO, lu_size)
    ok = _geometry(I, IO, F, FO, q, Tw, Jw, G, Fch, rho_w, Cc, P, lu, piv)
    rho[:] = rho_w
    C_compact[:] = Cc
    if ok:
        lift_matrix(I, IO, F, FO, Cc, lu, piv, E)
    return ok


@njit(cache=True)
def curvature(I, IO, F, FO, lu_size, q, u, v, edu):
    """``v = E u`` and ``Ė u`` (nv,) out at (q, u); False when R_p is singular. E by node
    (:func:`rbc.kernels.articulated.node_lift`) when the layout has nodes, else dense."""
    Tw, Jw, G, Fch, rho, Cc, P, lu, piv = _work(I, IO, lu_size)
    if not _geometry(I, IO, F, FO, q, Tw, Jw, G, Fch, rho, Cc, P, lu, piv):
        return False
    sizes = iseg(I, IO, I_SIZES)
    if sizes[S_NNODE]:
        En = np.empty(iseg(I, IO, I_ND_E_PTR)[sizes[S_NNODE]])
        node_lift(I, IO, F, FO, Cc, lu, piv, En)
        node_apply(I, IO, En, u, v)
    else:
        E = np.empty((sizes[S_NV], sizes[S_NU]))
        lift_matrix(I, IO, F, FO, Cc, lu, piv, E)
        _matvec(E, u, v)
    nb = sizes[S_NB]
    _bias(I, IO, F, FO, q, v, Jw, G, Fch, P, lu, piv, np.empty(6 * (nb + 1)),
          np.empty(6 * (nb + 1)), edu)
    return True


@njit(cache=True)
def node_geometry(I, IO, F, FO, lu_size, q, En):
    """The lift by node En (``nd_e_ptr[-1]``,) out at q (:func:`rbc.kernels.articulated.
    node_lift`; the layout must have nodes): the geometry and ``R_p`` factors with E kept
    compact. False when R_p is exactly singular."""
    Tw, Jw, G, Fch, rho, Cc, P, lu, piv = _work(I, IO, lu_size)
    if not _geometry(I, IO, F, FO, q, Tw, Jw, G, Fch, rho, Cc, P, lu, piv):
        return False
    node_lift(I, IO, F, FO, Cc, lu, piv, En)
    return True


@njit(cache=True)
def _close(I, IO, F, FO, q, E, x0, x, tol, max_iter, Tw, Jw, G, Fch, rho, Cc, P, lu, piv):
    """Corrector from the closed q (with its lift E and prescribed values x0) to values x;
    on success q holds the closed configuration and the geometry arrays hold its geometry."""
    sizes = iseg(I, IO, I_SIZES)
    nq, nv, nu = sizes[S_NQ], sizes[S_NV], sizes[S_NU]
    keep_u, keep_q = iseg(I, IO, I_KEEP_U), iseg(I, IO, I_KEEP_Q)
    ind = iseg(I, IO, I_IND)
    du = np.zeros(nu)
    for n in range(keep_u.size):
        du[keep_u[n]] = x[n] - x0[n]
    dv = np.empty(nv)
    _matvec(E, du, dv)
    for n in range(keep_u.size):
        dv[ind[keep_u[n]]] = 0.0
    qn = np.empty(nq)
    integrate(I, IO, q, dv, qn)
    for n in range(keep_u.size):
        qn[keep_q[n]] = x[n]
    dep = iseg(I, IO, I_DEP)
    step = np.zeros(nv)
    for it in range(max_iter + 1):
        if not _geometry(I, IO, F, FO, qn, Tw, Jw, G, Fch, rho, Cc, P, lu, piv):
            return SINGULAR_LIFT
        worst = 0.0
        finite = True
        for r in range(rho.size):
            a = abs(rho[r])
            if not a < np.inf:
                finite = False
            elif a > worst:
                worst = a
        if finite and worst <= tol:
            q[:] = qn
            return OK
        if it == max_iter or not finite:
            return NOT_CLOSED
        solve_rows(I, IO, lu, piv, rho, step)
        for j in dep:
            step[j] = -step[j]
        q1 = qn.copy()
        integrate(I, IO, q1, step, qn)
    return NOT_CLOSED


@njit(cache=True)
def _advance(I, IO, F, FO, q, E, x0, x, tol, max_iter, Tw, Jw, G, Fch, rho, Cc, P, lu, piv):
    """Close at the prescribed values x from the closed state (q, E, x0): the geometry at
    the closed q is in the work arrays after an :data:`OK` (E is not refreshed)."""
    same = True
    for n in range(x.size):
        if x[n] != x0[n]:
            same = False
    if same:
        if not _geometry(I, IO, F, FO, q, Tw, Jw, G, Fch, rho, Cc, P, lu, piv):
            return SINGULAR_LIFT
        return OK
    status = _close(I, IO, F, FO, q, E, x0, x, tol, max_iter, Tw, Jw, G, Fch, rho, Cc, P, lu, piv)
    if status == OK:
        x0[:] = x
    return status


@njit(cache=True)
def _kept_values(I, IO, y):
    """The prescribed independent values (n_kept,) of a state y = (x, u, …)."""
    keep_u = iseg(I, IO, I_KEEP_U)
    x = np.empty(keep_u.size)
    for n in range(keep_u.size):
        x[n] = y[keep_u[n]]
    return x


@njit(cache=True)
def stage(I, IO, F, FO, lu_size, q, E, x0, rho_out, Cc_out, y, f, tol, max_iter, ydot, v):
    """One Runge–Kutta stage of the reduced backend's state ``y = (x, u, W_act, W_passive)``
    with port efforts f, from the closed state (q, E, x0) (module docstring).

    Args:
        q: (nq,), E: (nv, n_u), x0: (n_kept,): the last closed configuration, its lift and
            its prescribed values; rho_out: (n_rows,), Cc_out: compact C there (the
            residual and the Jacobian for the measurement and the partition check); all
            updated in place when the stage succeeds.
        y: (2 n_u + 2,) the state [rad or m, rad/s or m/s, J]; f: (n_act,) [N or N·m].
        tol: closure tolerance on ‖ρ‖∞; max_iter: Newton iterations.
        ydot: (2 n_u + 2,) out: ``(u, u̇, P_act, P_passive)`` — ẋ = u (the caller replaces
            the value rates of a planar joint's x, y), the powers of :func:`rbc.kernels.
            dynamics.powers`; v: (nv,) out: ``E u`` at the closed configuration.

    Returns:
        :data:`OK`, :data:`SINGULAR_LIFT`, :data:`NOT_PD` or :data:`NOT_CLOSED`.
    """
    nu = iseg(I, IO, I_SIZES)[S_NU]
    return _stage(I, IO, F, FO, lu_size, q, E, x0, rho_out, Cc_out, y, f, tol, max_iter,
                  ydot, v, np.empty((nu, nu)))


@njit(cache=True)
def _stage(I, IO, F, FO, lu_size, q, E, x0, rho_out, Cc_out, y, f, tol, max_iter, ydot, v,
           Mr):
    """:func:`stage` with ``M_r`` (n_u, n_u) out at the closed configuration."""
    Tw, Jw, G, Fch, rho, Cc, P, lu, piv = _work(I, IO, lu_size)
    status = _project(I, IO, F, FO, q, E, x0, rho_out, Cc_out, y, tol, max_iter, Tw, Jw, G,
                      Fch, rho, Cc, P, lu, piv)
    if status != OK:
        return status
    sizes = iseg(I, IO, I_SIZES)
    nu, nv = sizes[S_NU], sizes[S_NV]
    u = y[nu: 2 * nu]
    edu = np.empty(nv)
    rhs = np.empty(nu)
    udot = np.empty(nu)
    power = np.empty(2)
    status = _dynamics(I, IO, F, FO, q, u, f, Tw, Jw, G, Fch, P, lu, piv, E, udot, v, edu,
                       Mr, rhs, power)
    for n in range(nu):
        ydot[n] = u[n]
        ydot[nu + n] = udot[n]
    ydot[2 * nu] = power[0]
    ydot[2 * nu + 1] = power[1]
    return status


@njit(cache=True)
def project(I, IO, F, FO, lu_size, q, E, x0, rho_out, Cc_out, y, tol, max_iter):
    """Close at the values of the state y from the closed state (q, E, x0) and refresh E, ρ
    and the compact C there (the projection after a step); arguments and status as
    :func:`stage`."""
    Tw, Jw, G, Fch, rho, Cc, P, lu, piv = _work(I, IO, lu_size)
    return _project(I, IO, F, FO, q, E, x0, rho_out, Cc_out, y, tol, max_iter, Tw, Jw, G,
                    Fch, rho, Cc, P, lu, piv)


@njit(cache=True)
def _project(I, IO, F, FO, q, E, x0, rho_out, Cc_out, y, tol, max_iter, Tw, Jw, G, Fch,
             rho, Cc, P, lu, piv):
    """:func:`project` on the caller's work arrays (which hold the geometry at the closed q
    afterwards)."""
    status = _advance(I, IO, F, FO, q, E, x0, _kept_values(I, IO, y), tol, max_iter, Tw, Jw,
                      G, Fch, rho, Cc, P, lu, piv)
    if status != OK:
        return status
    lift_matrix(I, IO, F, FO, Cc, lu, piv, E)
    rho_out[:] = rho
    Cc_out[:] = Cc
    return OK


@njit(cache=True, parallel=True)
def evaluate_batch(I, IO, F, FO, lu_size, Q, U, Fp, UD, status, n_chunks):
    """:func:`forward` over N states in parallel: Q (N, nq), U (N, n_u), Fp (N, n_act);
    UD (N, n_u) out, status (N,) out.

    The states go in ``n_chunks`` contiguous chunks (one per thread), each evaluated on its
    own copies of the layout arrays and of its states: a view of an array shared between
    threads updates that array's reference count atomically, and two cores updating the
    same counts ping-pong its cache line (the batch ran slower per state on two threads than
    one call at a time did).
    """
    n = Q.shape[0]
    for c in prange(n_chunks):
        lo, hi = c * n // n_chunks, (c + 1) * n // n_chunks
        Ic, IOc, Fc, FOc = I.copy(), IO.copy(), F.copy(), FO.copy()
        Qc, Uc, Fpc = Q[lo:hi].copy(), U[lo:hi].copy(), Fp[lo:hi].copy()
        sizes = iseg(Ic, IOc, I_SIZES)
        nv, nu = sizes[S_NV], sizes[S_NU]
        v = np.empty(nv)
        edu = np.empty(nv)
        E = np.empty((nv, nu))
        Mr = np.empty((nu, nu))
        rhs = np.empty(nu)
        UDc = np.empty((hi - lo, nu))
        st = np.empty(hi - lo, dtype=np.int64)
        nodes = sizes[S_RECURSE] > 0
        for s in range(hi - lo):
            if nodes:  # forward's recursion (the single-state face: the same bits)
                st[s] = forward(Ic, IOc, Fc, FOc, lu_size, Qc[s], Uc[s], Fpc[s], UDc[s])
            else:
                st[s] = evaluate(Ic, IOc, Fc, FOc, lu_size, Qc[s], Uc[s], Fpc[s], UDc[s], v, edu,
                                 E, Mr, rhs)
        UD[lo:hi] = UDc
        status[lo:hi] = st


@njit(cache=True)
def rk_step(I, IO, F, FO, lu_size, q, E, x0, rho_out, Cc_out, A, b, e, y, k1, f, h, tol,
            max_iter, y1, k_end, err, gain, v):
    """One explicit Runge–Kutta step of the reduced backend's state in one call: the stages
    2…s of a tableau from the first k1, the new state, the stage there, the error vector —
    what :func:`rbc.sim.integrators.rk_step` and :meth:`rbc.sim.backends.reduced.
    ReducedBackend.rhs` do stage by stage, with each stage :func:`stage` (the closed state
    (q, E, x0, ρ, C) is updated in place by every stage that succeeds).

    Args:
        A: (s, s) strictly lower-triangular coefficients; b: (s,) weights; e: (s + 1,)
            error weights over the s stages and the stage at y1 (DOPRI5: its ``b − b̂``, the
            last stage first-same-as-last; RK4: ``(0, 0, 0, 1/6, −1/6)``, its embedded
            third-order difference, :data:`rbc.sim.integrators.RK4`).
        y: (N,) the state; k1: (N,) ẏ at y with efforts f (n_act,); h: the step [s].
        y1: (N,) out ``y + h Σ b_i k_i``; k_end: (N,) out ẏ at y1; err: (N,) out
            ``h Σ e_i k_i``; gain: (n_u, n_act) out ``M_r⁻¹ E[ports]ᵀ`` at y1 (u̇ is affine
            in the efforts: the next first stage with other efforts is k_end plus its
            product, :meth:`ReducedBackend._first_stage`); v: (nv,) out ``E u`` at y1.

    Returns:
        ``(status, stages evaluated)``: :data:`OK` or the first failing stage's status
        (the outputs are then not written; the closed state is the last successful
        stage's).
    """
    s, N = b.size, y.size
    nu = iseg(I, IO, I_SIZES)[S_NU]
    K = np.empty((s, N))
    K[0] = k1
    z = np.empty(N)
    Mr = np.empty((nu, nu))
    for i in range(1, s):
        for c in range(N):
            acc = 0.0
            for j in range(i):
                acc += A[i, j] * K[j, c]
            z[c] = y[c] + h * acc
        status = _stage(I, IO, F, FO, lu_size, q, E, x0, rho_out, Cc_out, z, f, tol,
                        max_iter, K[i], v, Mr)
        if status != OK:
            return status, i - 1
    for c in range(N):
        acc = 0.0
        for j in range(s):
            acc += b[j] * K[j, c]
        y1[c] = y[c] + h * acc
    status = _stage(I, IO, F, FO, lu_size, q, E, x0, rho_out, Cc_out, y1, f, tol, max_iter,
                    k_end, v, Mr)
    if status != OK:
        return status, s - 1
    for c in range(N):
        acc = e[s] * k_end[c]
        for j in range(s):
            acc += e[j] * K[j, c]
        err[c] = h * acc
    _port_gain(I, IO, E, Mr, gain)
    return OK, s


@njit(cache=True)
def _port_gain(I, IO, E, Mr, gain):
    """``M_r⁻¹ E[ports]ᵀ`` (n_u, n_act) out: u̇'s change per unit port effort (the efforts
    enter the reduced right-hand side as ``E[ports]ᵀ f``, :func:`rbc.kernels.dynamics.
    loads`). M_r is positive definite here (its stage succeeded)."""
    ports = iseg(I, IO, I_PORTS)
    L = Mr.copy()
    cholesky(L)
    col = np.empty(Mr.shape[0])
    for n in range(ports.size):
        for a in range(col.size):
            col[a] = E[ports[n], a]
        cholesky_apply(L, col, col)
        for a in range(col.size):
            gain[a, n] = col[a]

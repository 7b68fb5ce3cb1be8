"""Loop velocities in extended precision, and the constraint-force leak they remove.

The reduced equations ``Eᵀ(M a + h − τ) = 0`` assume that the lift's columns are tangent to
the closure manifold, ``C E = 0``. In double precision C is rounded: its columns go through
world positions and carry ε·(lever arm) of rounding, so the computed E leaves
``C_true E ≈ 1e-17`` instead of zero, and the constraint force λ enters the reduced equations
as ``(C_true E)ᵀ λ``. Where an independent direction has almost no inertia of its own (the
spin of a light coupler about the axis through its two ball centres), that term is divided by
the tiny inertia: on a 1e-5 kg coupler it moved the accelerations by 7.6e-10 (docs/dynamics.md,
"Accuracy under ill-conditioning"). No rearrangement of the double-precision solve recovers
those digits; the residual of the *exact* rows does.

This module evaluates the loop velocities ``C E`` with the chord geometry of
:mod:`rbc.model.kinematics` — the same rows, angular-first in the chord's frame b — in x87
extended precision (``numpy.longdouble``, 64-bit significand, ε = 1.1e-19 on x86-64; the joint
transforms, the prefix products ``W_i`` and the adjoint columns all in extended precision from
the double q and the record's double constants), and corrects the reduced accelerations once:

    λ = argmin ‖Cᵀλ − r‖,  r = [M a + h; 0] − τ      (the tree equations at our own a)
    u̇ ← u̇ + M_r⁻¹ (C E)ᵀ λ

(``Eᵀ r = (C_true E)ᵀ λ`` for the exact accelerations, so the correction is the leak). On the
light RSSR it takes δ_a against the 50-digit KKT reference from 7.6e-10 to the level of the
reference itself (tests/verify/test_kkt50_rows.py). On a well-conditioned mechanism the
correction is round-off. Where ``longdouble`` is no wider than double (some platforms) the
correction is still evaluated but gains nothing.
"""

from __future__ import annotations

import functools

import numpy as np
import pinocchio as pin

from rbc.ir import spatial as sp
from rbc.model.compiled import CompiledModel
from rbc.model.couplings import coupling_terms

LD = np.longdouble
#: π in extended precision (``math.pi`` is π rounded to double, 1e-16 off: it would put the
#: double's rounding back into a helical joint's pitch).
PI = 4 * np.arctan(LD(1))


def _pitch(kind) -> np.ndarray:
    """A helical joint's translation per radian, lead/(2π) [m/rad], in extended precision."""
    return LD(kind.lead) / (2 * PI)


def _skew(a: np.ndarray) -> np.ndarray:
    return np.array([[0, -a[2], a[1]], [a[2], 0, -a[0]], [-a[1], a[0], 0]], dtype=LD)


def _rotation(axis: np.ndarray, angle: float) -> np.ndarray:
    """``Rot(axis, θ)`` (3, 3) by Rodrigues' formula in extended precision (unit axis)."""
    K = _skew(np.asarray(axis, dtype=LD))
    th = LD(angle)
    return np.eye(3, dtype=LD) + np.sin(th) * K + (1 - np.cos(th)) * (K @ K)


def _quat_rotation(q_wxyz: np.ndarray) -> np.ndarray:
    """The rotation (3, 3) of the normalised quaternion ``[w, x, y, z]``, extended precision."""
    q = np.asarray(q_wxyz, dtype=LD)
    w, x, y, z = q / np.sqrt(np.sum(q * q))
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
        [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
        [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
    ], dtype=LD)


def joint_motion(kind, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``Q(q)`` of a joint kind as ``(R (3, 3), p (3,))`` in extended precision.

    The same maps as :meth:`rbc.ir.joints.JointKind.motion` (tested against it to round-off).

    Raises:
        NotImplementedError: a kind without an extended-precision map (none today).
    """
    t = kind.type
    zero = np.zeros(3, dtype=LD)
    if t == "fixed":
        return np.eye(3, dtype=LD), zero
    if t == "revolute":
        return _rotation(kind.axis, q[0]), zero
    if t == "prismatic":
        return np.eye(3, dtype=LD), np.asarray(kind.axis, dtype=LD) * LD(q[0])
    if t == "helical":
        axis = np.asarray(kind.axis, dtype=LD)
        return _rotation(kind.axis, q[0]), axis * (_pitch(kind) * LD(q[0]))
    if t == "cylindrical":
        return _rotation(kind.axis, q[1]), np.asarray(kind.axis, dtype=LD) * LD(q[0])
    if t == "universal":
        return _rotation(kind.axes[0], q[0]) @ _rotation(kind.axes[1], q[1]), zero
    if t == "spherical":
        return _quat_rotation(q), zero
    if t == "free":
        return _quat_rotation(q[3:]), np.asarray(q[:3], dtype=LD)
    if t == "planar":
        R0 = np.asarray(kind.alignment().rotation, dtype=LD)
        x, y, c, s = (LD(v) for v in q)
        Rz = np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]], dtype=LD)
        return R0 @ Rz @ R0.T, R0 @ np.array([x, y, 0], dtype=LD)
    raise NotImplementedError(f"no extended-precision motion for joint type '{t}'")


def motion_subspace(kind, q: np.ndarray) -> np.ndarray:
    """S (6, nv) in Jc, extended precision (the kinds whose S involves a rounded quantity
    recomputed: the helical pitch, the universal joint's turned first axis)."""
    if kind.type == "helical":
        a = np.asarray(kind.axis, dtype=LD)
        return np.concatenate([a, a * _pitch(kind)])[:, None]
    if kind.type == "universal":
        a1, a2 = (np.asarray(a, dtype=LD) for a in kind.axes)
        S = np.zeros((6, 2), dtype=LD)
        S[:3, 0] = _rotation(kind.axes[1], q[1]).T @ a1
        S[:3, 1] = a2
        return S
    return np.asarray(kind.motion_subspace(q), dtype=LD)


def _se3(T: pin.SE3) -> tuple[np.ndarray, np.ndarray]:
    return np.asarray(T.rotation, dtype=LD), np.asarray(T.translation, dtype=LD)


def _compose(a, b):
    return a[0] @ b[0], a[0] @ b[1] + a[1]


def _inverse(a):
    return a[0].T, -(a[0].T @ a[1])


def _cross(p: np.ndarray, w: np.ndarray) -> np.ndarray:
    """``p × w`` column by column: p (3,), w (3, n)."""
    return np.stack([p[1] * w[2] - p[2] * w[1], p[2] * w[0] - p[0] * w[2],
                     p[0] * w[1] - p[1] * w[0]])


def _adjoint_columns(W, X: np.ndarray) -> np.ndarray:
    """``Ad(W) X`` for twists X (6, n), angular-first: ``[R ω; p × (R ω) + R v]``."""
    R, p = W
    w = R @ X[:3]
    return np.concatenate([w, R @ X[3:] + _cross(p, w)])


@functools.lru_cache(maxsize=16)
def _constants(model: CompiledModel):
    """Per edge ``(A_k, B_k⁻¹, Ad(B_k) S_k or None)`` in extended precision (the last only
    for kinds with a constant S whose entries are exact in double)."""
    out = []
    for k, kind in enumerate(model.kinds):
        AdB = np.asarray(model.AdB[k], dtype=LD)
        const = (kind.constant_S and kind.type != "helical" and kind.nv > 0)
        BS = AdB @ motion_subspace(kind, np.zeros(kind.nq)) if const else None
        out.append((_se3(model.A[k]), _inverse(_se3(model.B[k])), AdB, BS))
    return tuple(out)


def loop_velocities(model: CompiledModel, q: np.ndarray, E: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray]:
    """``C E`` in extended precision, and C in double, at configuration q.

    Args:
        model: compiled model (chord paths as in :func:`rbc.model.kinematics.chord_geometry`).
        q: (nq,) configuration.
        E: (nv, n) columns to transport, e.g. the lift (double).

    Returns:
        ``(CE (m, n) longdouble, C (m, nv) double)``, m = 6·n_chords + n_couplings; the rows
        are those of :func:`rbc.model.kinematics.closure_jacobian` (``J_l(ρ)⁻¹`` applied in
        double: it multiplies a vector of size ~ε, so its own rounding is second order).
    """
    q = np.asarray(q, dtype=float)
    E_ld = np.asarray(E, dtype=LD)
    m, n = model.n_rows, E.shape[1]
    CE = np.zeros((m, n), dtype=LD)
    C = np.zeros((m, model.nv))
    consts = _constants(model)
    cache: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    def X(k):
        if k not in cache:
            A, Binv, _, _ = consts[k]
            cache[k] = _compose(_compose(A, joint_motion(model.kinds[k], q[model.q_slice(k)])),
                                Binv)
        return cache[k]

    for i in range(model.n_chords):
        W = (np.eye(3, dtype=LD), np.zeros(3, dtype=LD))
        G = np.zeros((6, model.nv), dtype=LD)
        for k, s in (*model.paths[i], (model.chord_edges[i], 0)):
            kind = model.kinds[k]
            if s > 0:
                W = _compose(W, X(k))
            if kind.nv:
                _, _, AdB, BS = consts[k]
                if BS is None:
                    BS = AdB @ motion_subspace(kind, q[model.q_slice(k)])
                col = _adjoint_columns(W, BS)
                G[:, model.v_slice(k)] += col if s > 0 else -col
            if s < 0:
                W = _compose(W, _inverse(X(k)))
        delta = _compose(W, _inverse(X(model.chord_edges[i])))
        jl = sp.left_jacobian_inverse(pin.SE3(np.asarray(delta[0], dtype=float),
                                              np.asarray(delta[1], dtype=float)))
        rows = slice(6 * i, 6 * i + 6)
        CE[rows] = np.asarray(jl, dtype=LD) @ (G @ E_ld)
        C[rows] = jl @ np.asarray(G, dtype=float)
    base = 6 * model.n_chords
    if model.coupling_forms:
        _, C[base:], _ = coupling_terms(model.coupling_forms, model.nv, q)
        CE[base:] = np.asarray(C[base:], dtype=LD) @ E_ld
    return CE, C


def constraint_leak(model: CompiledModel, q: np.ndarray, E: np.ndarray, residual: np.ndarray
                    ) -> np.ndarray:
    """``(C E)ᵀ λ`` (n,) with C E in extended precision and λ the constraint force that best
    explains the generalized-force residual.

    Args:
        model: compiled model; q: (nq,) configuration; E: (nv, n) the lift.
        residual: (nv,) ``[M a + h; 0] − τ`` at the computed accelerations [N, N·m]; on the
            exact solution it equals ``C_trueᵀ λ``.

    Returns:
        (n,) the generalized force the double-precision reduction leaked [N, N·m]; add
        ``M_r⁻¹`` of it to u̇ (:func:`rbc.model.dynamics.forward_dynamics`).
    """
    if model.n_rows == 0:
        return np.zeros(E.shape[1])
    CE, C = loop_velocities(model, q, E)
    lam = np.linalg.lstsq(C.T, residual, rcond=None)[0]
    return np.asarray(CE.T @ np.asarray(lam, dtype=LD), dtype=float)

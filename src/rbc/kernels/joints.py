"""Joint maps for the kernels: motion ``Q(q)``, motion subspace ``S(q)``, ``Ṡ v`` and ``q ⊕ v``.

The same maps as :mod:`rbc.ir.joints` (DESIGN.md §2: ``Q = T_Jb_Jc``; S angular-first in the
child joint frame Jc; rbc's q/v layouts), selected by the joint code of
:data:`rbc.kernels.layout.CODES`; tested against the Pinocchio one-joint models behind
:class:`~rbc.ir.joints.JointKind` (``tests/kernels/test_joints.py``). Arguments: the joint
code, its axis (3,), second axis (3,) (universal), pitch [m/rad] (helical) and planar
alignment R0 (3, 3); q and v are the joint's own coordinate slices.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from rbc.kernels.se3 import exp3_scaled, mul3, quat_to_rotation

FIXED, REVOLUTE, PRISMATIC, HELICAL, UNIVERSAL, CYLINDRICAL, PLANAR, SPHERICAL, FREE = range(9)


@njit(cache=True, inline="always")
def _identity(R):
    for i in range(3):
        for j in range(3):
            R[i, j] = 1.0 if i == j else 0.0


@njit(cache=True, inline="always")
def motion(code, q, axis, axis2, pitch, R0, R, p):
    """``Q(q) = T_Jb_Jc``: writes R (3, 3) and p (3,)."""
    p[0] = 0.0
    p[1] = 0.0
    p[2] = 0.0
    if code == FIXED:
        _identity(R)
    elif code == REVOLUTE:
        exp3_scaled(axis, q[0], R)
    elif code == PRISMATIC:
        _identity(R)
        for i in range(3):
            p[i] = axis[i] * q[0]
    elif code == HELICAL:
        exp3_scaled(axis, q[0], R)
        for i in range(3):
            p[i] = axis[i] * (pitch * q[0])
    elif code == UNIVERSAL:
        R1 = np.empty((3, 3))
        R2 = np.empty((3, 3))
        exp3_scaled(axis, q[0], R1)
        exp3_scaled(axis2, q[1], R2)
        mul3(R1, R2, R)
    elif code == CYLINDRICAL:
        exp3_scaled(axis, q[1], R)
        for i in range(3):
            p[i] = axis[i] * q[0]
    elif code == PLANAR:
        # Q = R0·(Rz(θ), [x, y, 0])·R0ᵀ with cos θ, sin θ stored (normalised here)
        n = math.sqrt(q[2] * q[2] + q[3] * q[3])
        c, s = q[2] / n, q[3] / n
        for i in range(3):
            a0 = R0[i, 0] * c + R0[i, 1] * s  # (R0 Rz)[i, 0]
            a1 = -R0[i, 0] * s + R0[i, 1] * c  # (R0 Rz)[i, 1]
            a2 = R0[i, 2]
            for j in range(3):
                R[i, j] = a0 * R0[j, 0] + a1 * R0[j, 1] + a2 * R0[j, 2]
            p[i] = R0[i, 0] * q[0] + R0[i, 1] * q[1]
    elif code == SPHERICAL:
        quat_to_rotation(q[0], q[1], q[2], q[3], R)
    else:  # FREE: [x, y, z, w, qx, qy, qz]
        quat_to_rotation(q[3], q[4], q[5], q[6], R)
        p[0], p[1], p[2] = q[0], q[1], q[2]


@njit(cache=True, inline="always")
def subspace(code, q, axis, axis2, pitch, R0, S):
    """``S(q)`` (6, nv) angular-first in Jc (writes S, shape (6, nv))."""
    for r in range(6):
        for c in range(S.shape[1]):
            S[r, c] = 0.0
    if code == REVOLUTE:
        for i in range(3):
            S[i, 0] = axis[i]
    elif code == PRISMATIC:
        for i in range(3):
            S[3 + i, 0] = axis[i]
    elif code == HELICAL:
        for i in range(3):
            S[i, 0] = axis[i]
            S[3 + i, 0] = pitch * axis[i]
    elif code == UNIVERSAL:
        R2 = np.empty((3, 3))
        exp3_scaled(axis2, q[1], R2)
        for i in range(3):
            S[i, 0] = R2[0, i] * axis[0] + R2[1, i] * axis[1] + R2[2, i] * axis[2]
            S[i, 1] = axis2[i]
    elif code == CYLINDRICAL:
        for i in range(3):
            S[3 + i, 0] = axis[i]
            S[i, 1] = axis[i]
    elif code == PLANAR:
        for i in range(3):
            S[3 + i, 0] = R0[i, 0]
            S[3 + i, 1] = R0[i, 1]
            S[i, 2] = R0[i, 2]
    elif code == SPHERICAL:
        for i in range(3):
            S[i, i] = 1.0
    elif code == FREE:
        for i in range(6):
            S[i, i] = 1.0


@njit(cache=True, inline="always")
def subspace_rate(code, q, v, axis, axis2, out):
    """``Ṡ(q) v`` (6,) in Jc: ``[−θ̇₂ θ̇₁ a₂ × (R₂ᵀ a₁); 0]`` for the universal joint (its
    first axis turns in Jc with θ₂), zero for every other kind. Returns False when zero."""
    if code != UNIVERSAL:
        return False
    R2 = np.empty((3, 3))
    exp3_scaled(axis2, q[1], R2)
    b = np.empty(3)
    for i in range(3):
        b[i] = R2[0, i] * axis[0] + R2[1, i] * axis[1] + R2[2, i] * axis[2]
    k = -v[1] * v[0]
    out[0] = k * (axis2[1] * b[2] - axis2[2] * b[1])
    out[1] = k * (axis2[2] * b[0] - axis2[0] * b[2])
    out[2] = k * (axis2[0] * b[1] - axis2[1] * b[0])
    out[3] = 0.0
    out[4] = 0.0
    out[5] = 0.0
    return True


@njit(cache=True)
def _quat_mul_exp(w, x, y, z, om, out):
    """``out = normalise(q ⊗ exp(ω/2))`` (wxyz), ω (3,) [rad] in the local frame."""
    t = math.sqrt(om[0] * om[0] + om[1] * om[1] + om[2] * om[2])
    if t < 1e-4:  # sin(t/2)/t = ½ − t²/48 + t⁴/3840 (next term < 1e-21 here)
        k = 0.5 - t * t / 48.0 + t ** 4 / 3840.0
    else:
        k = math.sin(0.5 * t) / t
    c = math.cos(0.5 * t)
    bw, bx, by, bz = c, k * om[0], k * om[1], k * om[2]
    rw = w * bw - x * bx - y * by - z * bz
    rx = w * bx + x * bw + y * bz - z * by
    ry = w * by - x * bz + y * bw + z * bx
    rz = w * bz + x * by - y * bx + z * bw
    n = math.sqrt(rw * rw + rx * rx + ry * ry + rz * rz)
    out[0], out[1], out[2], out[3] = rw / n, rx / n, ry / n, rz / n


@njit(cache=True)
def integrate(code, q, v, out):
    """``q ⊕ v`` in the joint's group (``Q(q ⊕ v) = Q(q)·exp(S v)``, v local): v is the
    joint's (nv,) slice; q and out start at the joint's first coordinate."""
    if code == FIXED:
        return
    if code <= CYLINDRICAL:  # vector-space coordinates (nq = nv; v is the joint's slice)
        for i in range(v.size):
            out[i] = q[i] + v[i]
    elif code == PLANAR:
        # SE(2) exponential of [vx, vy, ω] (local) composed on the right
        c0, s0 = q[2], q[3]
        n0 = math.sqrt(c0 * c0 + s0 * s0)
        c0, s0 = c0 / n0, s0 / n0
        om = v[2]
        if abs(om) < 1e-4:  # sin ω/ω and (1 − cos ω)/ω as series (error < 1e-17)
            a = 1.0 - om * om / 6.0 + om ** 4 / 120.0
            b = 0.5 * om - om ** 3 / 24.0
        else:
            a = math.sin(om) / om
            b = (1.0 - math.cos(om)) / om
        dx = a * v[0] - b * v[1]
        dy = b * v[0] + a * v[1]
        out[0] = q[0] + c0 * dx - s0 * dy
        out[1] = q[1] + s0 * dx + c0 * dy
        co, so = math.cos(om), math.sin(om)
        out[2] = c0 * co - s0 * so
        out[3] = s0 * co + c0 * so
    elif code == SPHERICAL:
        _quat_mul_exp(q[0], q[1], q[2], q[3], v, out)
    else:  # FREE: Q·exp6([ω; v]): p' = p + R V(ω) v, quaternion q ⊗ exp(ω/2)
        R = np.empty((3, 3))
        quat_to_rotation(q[3], q[4], q[5], q[6], R)
        om = v[:3]
        t2 = om[0] * om[0] + om[1] * om[1] + om[2] * om[2]
        if t2 < 0.25:
            b, c = 0.5, 1.0 / 6.0
            tb, tc = 0.5, 1.0 / 6.0
            for k in range(1, 9):
                tb *= -t2 / ((2 * k + 1) * (2 * k + 2))
                tc *= -t2 / ((2 * k + 2) * (2 * k + 3))
                b += tb
                c += tc
        else:
            t = math.sqrt(t2)
            b = (1.0 - math.cos(t)) / t2
            c = (t - math.sin(t)) / (t2 * t)
        lin = v[3:]
        wl = np.empty(3)
        wl[0] = om[1] * lin[2] - om[2] * lin[1]
        wl[1] = om[2] * lin[0] - om[0] * lin[2]
        wl[2] = om[0] * lin[1] - om[1] * lin[0]
        wwl = np.empty(3)
        wwl[0] = om[1] * wl[2] - om[2] * wl[1]
        wwl[1] = om[2] * wl[0] - om[0] * wl[2]
        wwl[2] = om[0] * wl[1] - om[1] * wl[0]
        d = np.empty(3)
        for i in range(3):
            d[i] = lin[i] + b * wl[i] + c * wwl[i]  # V(ω) v
        for i in range(3):
            out[i] = q[i] + R[i, 0] * d[0] + R[i, 1] * d[1] + R[i, 2] * d[2]
        qq = np.empty(4)
        _quat_mul_exp(q[3], q[4], q[5], q[6], om, qq)
        out[3:7] = qq

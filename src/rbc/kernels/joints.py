"""Joint maps for the kernels: motion ``Q(q)``, motion subspace ``S(q)``, ``Ṡ v`` and ``q ⊕ v``.

The same maps as :mod:`rbc.ir.joints` (DESIGN.md §2: ``Q = T_Jb_Jc``; S angular-first in the
child joint frame Jc; rbc's q/v layouts), selected by the joint code of
:data:`rbc.kernels.layout.CODES`; tested against the Pinocchio one-joint models behind
:class:`~rbc.ir.joints.JointKind` (``tests/kernels/test_joints.py``). Arguments: the joint
code, the configuration and its offset ``(q, qo)`` (and ``(v, vo)``), the joint's parameter
record ``(P, po)`` (:data:`JP` floats: axis, second axis (universal), pitch [m/rad]
(helical), planar alignment R0) and outputs at offsets of flat arrays (a transform record,
:data:`rbc.kernels.se3.TR`): no views and no allocations on the hot path. ``integrate``
takes the joint's own coordinate slices.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from rbc.kernels.se3 import quat_to_rotation, rotation, rotation_entries

FIXED, REVOLUTE, PRISMATIC, HELICAL, UNIVERSAL, CYLINDRICAL, PLANAR, SPHERICAL, FREE = range(9)

#: Floats of a joint's parameter record: axis (3), second axis (3, universal), pitch [m/rad]
#: (1, helical), planar alignment R0 (9, row-major); offsets :data:`AXIS` … :data:`ALIGN`.
JP = 16
AXIS, AXIS2, PITCH, ALIGN = 0, 3, 6, 7


def parameters(axis, axis2, pitch, R0) -> np.ndarray:
    """A joint's parameter record (:data:`JP`,) from its axis (3,), second axis (3,), pitch
    and alignment R0 (3, 3) (the layout's and the tests' one place that packs it)."""
    return np.concatenate([np.asarray(axis, dtype=float).ravel(),
                           np.asarray(axis2, dtype=float).ravel(), [float(pitch)],
                           np.asarray(R0, dtype=float).ravel()])


@njit(cache=True, inline="always")
def motion(code, q, qo, P, po, T, t):
    """``Q(q) = T_Jb_Jc`` into the transform record ``T[t:t+12]``: the joint's coordinates
    start at ``q[qo]``, its parameter record at ``P[po]``."""
    T[t + 9] = 0.0
    T[t + 10] = 0.0
    T[t + 11] = 0.0
    if code == FIXED or code == PRISMATIC:
        for n in range(9):
            T[t + n] = 1.0 if n % 4 == 0 else 0.0
        if code == PRISMATIC:
            for i in range(3):
                T[t + 9 + i] = P[po + AXIS + i] * q[qo]
    elif code == REVOLUTE:
        rotation(P, po + AXIS, q[qo], T, t)
    elif code == HELICAL:
        rotation(P, po + AXIS, q[qo], T, t)
        for i in range(3):
            T[t + 9 + i] = P[po + AXIS + i] * (P[po + PITCH] * q[qo])
    elif code == UNIVERSAL:  # R = exp(a1 q0) exp(a2 q1)
        rotation(P, po + AXIS, q[qo], T, t)
        a = q[qo + 1]
        r = rotation_entries(a * P[po + AXIS2], a * P[po + AXIS2 + 1], a * P[po + AXIS2 + 2])
        for i in range(3):
            x0, x1, x2 = T[t + 3 * i], T[t + 3 * i + 1], T[t + 3 * i + 2]
            for j in range(3):
                T[t + 3 * i + j] = x0 * r[j] + x1 * r[3 + j] + x2 * r[6 + j]
    elif code == CYLINDRICAL:
        rotation(P, po + AXIS, q[qo + 1], T, t)
        for i in range(3):
            T[t + 9 + i] = P[po + AXIS + i] * q[qo]
    elif code == PLANAR:
        # Q = R0·(Rz(θ), [x, y, 0])·R0ᵀ with cos θ, sin θ stored (normalised here)
        n = math.sqrt(q[qo + 2] * q[qo + 2] + q[qo + 3] * q[qo + 3])
        c, s = q[qo + 2] / n, q[qo + 3] / n
        r0 = po + ALIGN
        for i in range(3):
            a0 = P[r0 + 3 * i] * c + P[r0 + 3 * i + 1] * s  # (R0 Rz)[i, 0]
            a1 = -P[r0 + 3 * i] * s + P[r0 + 3 * i + 1] * c  # (R0 Rz)[i, 1]
            a2 = P[r0 + 3 * i + 2]
            for j in range(3):
                T[t + 3 * i + j] = (a0 * P[r0 + 3 * j] + a1 * P[r0 + 3 * j + 1]
                                    + a2 * P[r0 + 3 * j + 2])
            T[t + 9 + i] = P[r0 + 3 * i] * q[qo] + P[r0 + 3 * i + 1] * q[qo + 1]
    elif code == SPHERICAL:
        quat_to_rotation(q[qo], q[qo + 1], q[qo + 2], q[qo + 3], T, t)
    else:  # FREE: [x, y, z, w, qx, qy, qz]
        quat_to_rotation(q[qo + 3], q[qo + 4], q[qo + 5], q[qo + 6], T, t)
        T[t + 9], T[t + 10], T[t + 11] = q[qo], q[qo + 1], q[qo + 2]


@njit(cache=True, inline="always")
def _first_axis_in_jc(q, qo, P, po):
    """The universal joint's first axis in Jc, ``R₂ᵀ a₁`` (R₂ = exp(a₂ q₁)), as scalars."""
    a = q[qo + 1]
    r = rotation_entries(a * P[po + AXIS2], a * P[po + AXIS2 + 1], a * P[po + AXIS2 + 2])
    x, y, z = P[po + AXIS], P[po + AXIS + 1], P[po + AXIS + 2]
    return (r[0] * x + r[3] * y + r[6] * z, r[1] * x + r[4] * y + r[7] * z,
            r[2] * x + r[5] * y + r[8] * z)


@njit(cache=True, inline="always")
def subspace(code, q, qo, P, po, S):
    """``S(q)`` angular-first in Jc into S (≥ 6 nv,): column d at ``S[6d:6d+6]``."""
    for n in range(36):
        S[n] = 0.0
    if code == REVOLUTE:
        for i in range(3):
            S[i] = P[po + AXIS + i]
    elif code == PRISMATIC:
        for i in range(3):
            S[3 + i] = P[po + AXIS + i]
    elif code == HELICAL:
        for i in range(3):
            S[i] = P[po + AXIS + i]
            S[3 + i] = P[po + PITCH] * P[po + AXIS + i]
    elif code == UNIVERSAL:
        S[0], S[1], S[2] = _first_axis_in_jc(q, qo, P, po)
        for i in range(3):
            S[6 + i] = P[po + AXIS2 + i]
    elif code == CYLINDRICAL:
        for i in range(3):
            S[3 + i] = P[po + AXIS + i]
            S[6 + i] = P[po + AXIS + i]
    elif code == PLANAR:
        for i in range(3):
            S[3 + i] = P[po + ALIGN + 3 * i]
            S[9 + i] = P[po + ALIGN + 3 * i + 1]
            S[12 + i] = P[po + ALIGN + 3 * i + 2]
    elif code == SPHERICAL:
        for i in range(3):
            S[7 * i] = 1.0
    elif code == FREE:
        for i in range(6):
            S[7 * i] = 1.0


@njit(cache=True, inline="always")
def subspace_rate(code, q, qo, v, vo, P, po, out):
    """``Ṡ(q) v`` (6,) in Jc: ``[−θ̇₂ θ̇₁ a₂ × (R₂ᵀ a₁); 0]`` for the universal joint (its
    first axis turns in Jc with θ₂), zero for every other kind. Returns False when zero
    (out is then not written)."""
    if code != UNIVERSAL:
        return False
    b0, b1, b2 = _first_axis_in_jc(q, qo, P, po)
    k = -v[vo + 1] * v[vo]
    x, y, z = P[po + AXIS2], P[po + AXIS2 + 1], P[po + AXIS2 + 2]
    out[0] = k * (y * b2 - z * b1)
    out[1] = k * (z * b0 - x * b2)
    out[2] = k * (x * b1 - y * b0)
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
        R = np.empty(9)
        quat_to_rotation(q[3], q[4], q[5], q[6], R, 0)
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
            out[i] = q[i] + R[3 * i] * d[0] + R[3 * i + 1] * d[1] + R[3 * i + 2] * d[2]
        qq = np.empty(4)
        _quat_mul_exp(q[3], q[4], q[5], q[6], om, qq)
        out[3:7] = qq

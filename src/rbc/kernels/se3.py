"""SE(3) algebra for the run-time kernels (numba, angular-first ``[ω; v]``, DESIGN.md §2).

Transforms are passed as a rotation ``R`` (3, 3) and a translation ``p`` (3,) (``T_a_b``:
``x_a = R x_b + p``). Twists and wrenches are angular-first. This is the one place where
rbc writes its own spatial algebra (DESIGN.md §13); every function is tested against
Pinocchio (``tests/kernels/test_se3.py``) and, in the small-angle band where Pinocchio's
``Jlog6`` loses digits, against a 50-digit mpmath evaluation of the same closed forms.

Small angles use Taylor series instead of the closed forms, which cancel catastrophically
there (e.g. ``(θ − sin θ)/θ³`` loses ``log10(6/θ²)`` digits): every coefficient below is
an even power series, summed for ``θ < SERIES_ANGLE`` (Solà, Deray, Atchuthan, "A micro Lie
theory for state estimation in robotics", 2018, App. D; Barfoot, *State Estimation for
Robotics*, 2017, §7.1.5 for the SE(3) Jacobian blocks; the series of ``x cot x`` is the
Bernoulli series, Abramowitz & Stegun 4.3.70).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

#: Below this rotation angle [rad] the coefficient functions are summed as Taylor series.
#: With the terms kept (to θ¹⁶ at least) the truncation error at θ = 0.5 is below 1e-19
#: relative, and above it the closed forms lose at most ~log10(120/θ⁴) ≈ 3.3 digits on
#: the worst coefficient (c3), i.e. ~5e-14 of a term that is itself O(θ³) ≤ 0.125·|v|:
#: well inside the kernels' 1e-13 agreement with Pinocchio.
SERIES_ANGLE = 0.5


@njit(cache=True, inline="always")
def cross(a, b, out):
    """``out = a × b`` for (3,) arrays (``out`` must not alias a or b)."""
    out[0] = a[1] * b[2] - a[2] * b[1]
    out[1] = a[2] * b[0] - a[0] * b[2]
    out[2] = a[0] * b[1] - a[1] * b[0]


@njit(cache=True, inline="always")
def mul3(A, B, out):
    """``out = A B`` for (3, 3) arrays (explicit loops: numba's ``@`` calls BLAS, ~1 µs)."""
    for i in range(3):
        for j in range(3):
            out[i, j] = A[i, 0] * B[0, j] + A[i, 1] * B[1, j] + A[i, 2] * B[2, j]


@njit(cache=True, inline="always")
def mul6(A, B, out):
    """``out = A B`` for (6, 6) arrays."""
    for i in range(6):
        for j in range(6):
            s = 0.0
            for k in range(6):
                s += A[i, k] * B[k, j]
            out[i, j] = s


@njit(cache=True, inline="always")
def matvec6(A, x, out):
    """``out = A x`` for A (6, 6), x (6,)."""
    for i in range(6):
        s = 0.0
        for k in range(6):
            s += A[i, k] * x[k]
        out[i] = s


@njit(cache=True, inline="always")
def compose(R1, p1, R2, p2, R, p):
    """``T = T1 · T2``: ``R = R1 R2``, ``p = R1 p2 + p1`` (outputs must not alias inputs)."""
    for i in range(3):
        s = p1[i]
        for k in range(3):
            s += R1[i, k] * p2[k]
        p[i] = s
        for j in range(3):
            s = 0.0
            for k in range(3):
                s += R1[i, k] * R2[k, j]
            R[i, j] = s


@njit(cache=True, inline="always")
def compose_inv(R1, p1, R2, p2, R, p):
    """``T = T1 · T2⁻¹``: ``R = R1 R2ᵀ``, ``p = p1 − R p2``."""
    for i in range(3):
        for j in range(3):
            s = 0.0
            for k in range(3):
                s += R1[i, k] * R2[j, k]
            R[i, j] = s
    for i in range(3):
        s = p1[i]
        for k in range(3):
            s -= R[i, k] * p2[k]
        p[i] = s


@njit(cache=True, inline="always")
def inv_compose(R1, p1, R2, p2, R, p):
    """``T = T1⁻¹ · T2``: ``R = R1ᵀ R2``, ``p = R1ᵀ (p2 − p1)``."""
    for i in range(3):
        s = 0.0
        for k in range(3):
            s += R1[k, i] * (p2[k] - p1[k])
        p[i] = s
        for j in range(3):
            s = 0.0
            for k in range(3):
                s += R1[k, i] * R2[k, j]
            R[i, j] = s


@njit(cache=True, inline="always")
def adjoint_apply(R, p, x, out):
    """``out = Ad(T) x`` for a twist x (6,): ``[R ω; p × Rω + R v]``."""
    w = np.empty(3)
    for i in range(3):
        w[i] = R[i, 0] * x[0] + R[i, 1] * x[1] + R[i, 2] * x[2]
    for i in range(3):
        out[3 + i] = R[i, 0] * x[3] + R[i, 1] * x[4] + R[i, 2] * x[5]
    out[3] += p[1] * w[2] - p[2] * w[1]
    out[4] += p[2] * w[0] - p[0] * w[2]
    out[5] += p[0] * w[1] - p[1] * w[0]
    out[0], out[1], out[2] = w[0], w[1], w[2]


@njit(cache=True, inline="always")
def adjoint_matrix(R, p, out):
    """``out = Ad(T)`` (6, 6) angular-first: ``[[R, 0], [p̂ R, R]]``."""
    out[:] = 0.0
    for i in range(3):
        for j in range(3):
            out[i, j] = R[i, j]
            out[3 + i, 3 + j] = R[i, j]
    for j in range(3):
        out[3, j] = p[1] * R[2, j] - p[2] * R[1, j]
        out[4, j] = p[2] * R[0, j] - p[0] * R[2, j]
        out[5, j] = p[0] * R[1, j] - p[1] * R[0, j]


@njit(cache=True, inline="always")
def motion_cross(a, b, out):
    """``out = ad(a) b = a ×ₘ b`` for twists (6,): ``[ω_a × ω_b; v_a × ω_b + ω_a × v_b]``."""
    out[0] = a[1] * b[2] - a[2] * b[1]
    out[1] = a[2] * b[0] - a[0] * b[2]
    out[2] = a[0] * b[1] - a[1] * b[0]
    out[3] = a[4] * b[2] - a[5] * b[1] + a[1] * b[5] - a[2] * b[4]
    out[4] = a[5] * b[0] - a[3] * b[2] + a[2] * b[3] - a[0] * b[5]
    out[5] = a[3] * b[1] - a[4] * b[0] + a[0] * b[4] - a[1] * b[3]


@njit(cache=True, inline="always")
def force_cross(a, f, out):
    """``out = a ×* f = −ad(a)ᵀ f`` for a twist a and a wrench f = [n; f]:
    ``[ω × n + v × f; ω × f]``."""
    out[0] = a[1] * f[2] - a[2] * f[1] + a[4] * f[5] - a[5] * f[4]
    out[1] = a[2] * f[0] - a[0] * f[2] + a[5] * f[3] - a[3] * f[5]
    out[2] = a[0] * f[1] - a[1] * f[0] + a[3] * f[4] - a[4] * f[3]
    out[3] = a[1] * f[5] - a[2] * f[4]
    out[4] = a[2] * f[3] - a[0] * f[5]
    out[5] = a[0] * f[4] - a[1] * f[3]


@njit(cache=True)
def exp3(w, R):
    """``R = exp(ŵ)`` (Rodrigues) for a rotation vector w (3,) [rad]."""
    exp3_scaled(w, 1.0, R)


@njit(cache=True, inline="always")
def exp3_scaled(axis, angle, R):
    """``R = exp(angle·âxis)`` without forming the product (array expressions on (3,)
    arrays cost ~0.3 µs in numba; the kernels write every small operation as loops)."""
    w0, w1, w2 = angle * axis[0], angle * axis[1], angle * axis[2]
    t2 = w0 * w0 + w1 * w1 + w2 * w2
    if t2 < SERIES_ANGLE * SERIES_ANGLE:
        # sin θ/θ and (1 − cos θ)/θ² as series (terms to θ¹⁶: error < 1e-19 at θ = 0.5)
        a = 1.0
        b = 0.5
        term_a = 1.0
        term_b = 0.5
        for k in range(1, 9):
            term_a *= -t2 / ((2 * k) * (2 * k + 1))
            term_b *= -t2 / ((2 * k + 1) * (2 * k + 2))
            a += term_a
            b += term_b
    else:
        t = math.sqrt(t2)
        a = math.sin(t) / t
        b = (1.0 - math.cos(t)) / t2
    x, y, z = w0, w1, w2
    R[0, 0] = 1.0 - b * (y * y + z * z)
    R[1, 1] = 1.0 - b * (x * x + z * z)
    R[2, 2] = 1.0 - b * (x * x + y * y)
    R[0, 1] = b * x * y - a * z
    R[1, 0] = b * x * y + a * z
    R[0, 2] = b * x * z + a * y
    R[2, 0] = b * x * z - a * y
    R[1, 2] = b * y * z - a * x
    R[2, 1] = b * y * z + a * x


@njit(cache=True, inline="always")
def quat_to_rotation(qw, qx, qy, qz, R):
    """Rotation (3, 3) of the quaternion (w, x, y, z), normalised first."""
    n = math.sqrt(qw * qw + qx * qx + qy * qy + qz * qz)
    w, x, y, z = qw / n, qx / n, qy / n, qz / n
    R[0, 0] = 1.0 - 2.0 * (y * y + z * z)
    R[0, 1] = 2.0 * (x * y - w * z)
    R[0, 2] = 2.0 * (x * z + w * y)
    R[1, 0] = 2.0 * (x * y + w * z)
    R[1, 1] = 1.0 - 2.0 * (x * x + z * z)
    R[1, 2] = 2.0 * (y * z - w * x)
    R[2, 0] = 2.0 * (x * z - w * y)
    R[2, 1] = 2.0 * (y * z + w * x)
    R[2, 2] = 1.0 - 2.0 * (x * x + y * y)


@njit(cache=True)
def log3(R, w):
    """Rotation vector w (3,) [rad] of R, ``|w| ∈ [0, π]``.

    The angle is ``atan2(|a|, (tr R − 1)/2)`` with ``a = (R − Rᵀ)^∨/2`` (``|a| = sin θ``),
    accurate at every angle (``acos`` loses half the digits near 0 and π). Near π the axis
    comes from the symmetric part ``(R + Rᵀ)/2 = cos θ I + (1 − cos θ) n nᵀ``.
    """
    ax = 0.5 * (R[2, 1] - R[1, 2])
    ay = 0.5 * (R[0, 2] - R[2, 0])
    az = 0.5 * (R[1, 0] - R[0, 1])
    s = math.sqrt(ax * ax + ay * ay + az * az)
    c = 0.5 * (R[0, 0] + R[1, 1] + R[2, 2] - 1.0)
    t = math.atan2(s, c)
    if c > -0.9:  # θ < ~2.69 rad: sin θ ≥ 0.43, the antisymmetric part fixes the axis
        f = t / s if s > 0.0 else 1.0
        w[0], w[1], w[2] = f * ax, f * ay, f * az
        return
    # near π: n nᵀ = ((R + Rᵀ)/2 − c I)/(1 − c); the largest diagonal entry is the best row
    d0 = (R[0, 0] - c) / (1.0 - c)
    d1 = (R[1, 1] - c) / (1.0 - c)
    d2 = (R[2, 2] - c) / (1.0 - c)
    n = np.empty(3)
    if d0 >= d1 and d0 >= d2:
        n[0] = math.sqrt(max(d0, 0.0))
        n[1] = 0.5 * (R[0, 1] + R[1, 0]) / (1.0 - c) / n[0]
        n[2] = 0.5 * (R[0, 2] + R[2, 0]) / (1.0 - c) / n[0]
    elif d1 >= d2:
        n[1] = math.sqrt(max(d1, 0.0))
        n[0] = 0.5 * (R[0, 1] + R[1, 0]) / (1.0 - c) / n[1]
        n[2] = 0.5 * (R[1, 2] + R[2, 1]) / (1.0 - c) / n[1]
    else:
        n[2] = math.sqrt(max(d2, 0.0))
        n[0] = 0.5 * (R[0, 2] + R[2, 0]) / (1.0 - c) / n[2]
        n[1] = 0.5 * (R[1, 2] + R[2, 1]) / (1.0 - c) / n[2]
    nn = math.sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2])
    if n[0] * ax + n[1] * ay + n[2] * az < 0.0:  # the axis of sin θ > 0
        nn = -nn
    for i in range(3):
        w[i] = t * n[i] / nn


@njit(cache=True, inline="always")
def _coefficients(t2, out):
    """Coefficients of the SE(3) log and Jacobians at θ² = t2 (module docstring):

    ``out[0] = d = (1 − (θ/2) cot(θ/2))/θ²``  (SO(3) ``J_l⁻¹ = I − ½ŵ + d ŵ²``),
    ``out[1] = c1 = (θ − sin θ)/θ³``, ``out[2] = c2 = (θ² + 2 cos θ − 2)/(2θ⁴)``,
    ``out[3] = c3 = (2θ − 3 sin θ + θ cos θ)/(2θ⁵)`` (Barfoot's Q matrix).
    """
    if t2 < SERIES_ANGLE * SERIES_ANGLE:
        # d = Σ_{n≥1} (−1)^{n+1} B_{2n} θ^{2n−2}/(2n)!  (Bernoulli numbers B_2 … B_20)
        d = 0.0
        p = 1.0
        for k in range(_BERN.size):
            d += _BERN[k] * p
            p *= t2
        # c1 = Σ (−1)^k θ^{2k}/(2k+3)!, c2 = Σ (−1)^k θ^{2k}/(2k+4)!,
        # c3 = Σ_{n≥2} (−1)^n (n−1) θ^{2n−4}/(2n+1)!
        c1 = 0.0
        c2 = 0.0
        c3 = 0.0
        a1 = 1.0 / 6.0
        a2 = 1.0 / 24.0
        a3 = 1.0 / 120.0
        for k in range(10):
            c1 += a1
            c2 += a2
            c3 += a3 * (k + 1)
            a1 *= -t2 / ((2 * k + 4) * (2 * k + 5))
            a2 *= -t2 / ((2 * k + 5) * (2 * k + 6))
            a3 *= -t2 / ((2 * k + 6) * (2 * k + 7))
        out[0], out[1], out[2], out[3] = d, c1, c2, c3
        return
    t = math.sqrt(t2)
    s, c = math.sin(t), math.cos(t)
    out[0] = (1.0 - 0.5 * t / math.tan(0.5 * t)) / t2
    out[1] = (t - s) / (t2 * t)
    out[2] = (t2 + 2.0 * c - 2.0) / (2.0 * t2 * t2)
    out[3] = (2.0 * t - 3.0 * s + t * c) / (2.0 * t2 * t2 * t)


#: (−1)^{n+1} B_{2n}/(2n)! for n = 1 … 10: the Taylor coefficients of d(θ) in θ².
_BERN = np.array([
    1.0 / 12.0,
    1.0 / 720.0,
    1.0 / 30240.0,
    1.0 / 1209600.0,
    1.0 / 47900160.0,
    691.0 / 1307674368000.0,
    1.0 / 74724249600.0,
    3617.0 / 10670622842880000.0,
    43867.0 / 5109094217170944000.0,
    174611.0 / 802857662698291200000.0,
])


@njit(cache=True, inline="always")
def skew_apply(w, x, out):
    """``out = ŵ x`` (3,)."""
    out[0] = w[1] * x[2] - w[2] * x[1]
    out[1] = w[2] * x[0] - w[0] * x[2]
    out[2] = w[0] * x[1] - w[1] * x[0]


@njit(cache=True)
def log6(R, p, xi):
    """SE(3) logarithm: the twist ``ξ = [ω; v]`` (6,) with ``exp(ξ) = T`` (principal branch).

    ``v = V(ω)⁻¹ p`` with ``V⁻¹ = I − ½ω̂ + d(θ) ω̂²`` (same d as the SO(3) ``J_l⁻¹``).
    """
    w = np.empty(3)
    log3(R, w)
    co = np.empty(4)
    _coefficients(w[0] * w[0] + w[1] * w[1] + w[2] * w[2], co)
    wp = np.empty(3)
    wwp = np.empty(3)
    skew_apply(w, p, wp)
    skew_apply(w, wp, wwp)
    for i in range(3):
        xi[i] = w[i]
        xi[3 + i] = p[i] - 0.5 * wp[i] + co[0] * wwp[i]


@njit(cache=True)
def left_jacobian_inverse(xi, out):
    """``J_l(ξ)⁻¹`` (6, 6) angular-first: ``log(exp(δ)·exp(ξ)) = ξ + J_l⁻¹ δ + O(δ²)``.

    ``[[J⁻¹, 0], [−J⁻¹ Q J⁻¹, J⁻¹]]`` with the SO(3) ``J⁻¹ = I − ½ω̂ + d ω̂²`` and Barfoot's
    ``Q(v, ω) = ½v̂ + c1 (ω̂v̂ + v̂ω̂ + ω̂v̂ω̂) + c2 (ω̂²v̂ + v̂ω̂² − 3ω̂v̂ω̂)
    + c3 (ω̂v̂ω̂² + ω̂²v̂ω̂)`` (Barfoot 2017, Eq. 7.86; rbc's angular-first order).
    """
    W = np.zeros((3, 3))
    V = np.zeros((3, 3))
    W[0, 1], W[0, 2], W[1, 2] = -xi[2], xi[1], -xi[0]
    W[1, 0], W[2, 0], W[2, 1] = xi[2], -xi[1], xi[0]
    V[0, 1], V[0, 2], V[1, 2] = -xi[5], xi[4], -xi[3]
    V[1, 0], V[2, 0], V[2, 1] = xi[5], -xi[4], xi[3]
    co = np.empty(4)
    _coefficients(xi[0] * xi[0] + xi[1] * xi[1] + xi[2] * xi[2], co)
    d, c1, c2, c3 = co[0], co[1], co[2], co[3]
    WW = np.empty((3, 3))
    WV = np.empty((3, 3))
    VW = np.empty((3, 3))
    WVW = np.empty((3, 3))
    WWV = np.empty((3, 3))
    VWW = np.empty((3, 3))
    WVWW = np.empty((3, 3))
    WWVW = np.empty((3, 3))
    mul3(W, W, WW)
    mul3(W, V, WV)
    mul3(V, W, VW)
    mul3(WV, W, WVW)
    mul3(W, WV, WWV)
    mul3(VW, W, VWW)
    mul3(WVW, W, WVWW)
    mul3(W, WVW, WWVW)
    Ji = np.empty((3, 3))
    Q = np.empty((3, 3))
    for i in range(3):
        for j in range(3):
            Ji[i, j] = (1.0 if i == j else 0.0) - 0.5 * W[i, j] + d * WW[i, j]
            Q[i, j] = (0.5 * V[i, j] + c1 * (WV[i, j] + VW[i, j] + WVW[i, j])
                       + c2 * (WWV[i, j] + VWW[i, j] - 3.0 * WVW[i, j])
                       + c3 * (WVWW[i, j] + WWVW[i, j]))
    T = np.empty((3, 3))
    low = np.empty((3, 3))
    mul3(Ji, Q, T)
    mul3(T, Ji, low)
    for i in range(3):
        for j in range(3):
            out[i, j] = Ji[i, j]
            out[3 + i, 3 + j] = Ji[i, j]
            out[3 + i, j] = -low[i, j]
            out[i, 3 + j] = 0.0

"""SE(3) algebra for the run-time kernels (numba, angular-first ``[ω; v]``, DESIGN.md §2).

Transforms are records of :data:`TR` floats at an offset of a flat array — the rotation
``R`` row-major, then the translation ``p`` (``T_a_b``: ``x_a = R x_b + p``) — and every
function reads and writes flat arrays at offsets: no views (each costs a reference count,
atomically) and no allocations (~50 ns each) on the hot path. Twists and wrenches are
angular-first. This is the one place where
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


#: Floats of a transform record: ``T_a_b`` as R (row-major, 9) then p (3), at an offset of
#: a flat float64 array (the kernels index flat arrays: a view costs a reference count).
TR = 12


@njit(cache=True, inline="always")
def compose(A, a, B, b, C, c):
    """``C[c:] = A[a:] · B[b:]`` (transform records; C must not overlap A or B)."""
    for i in range(3):
        a0, a1, a2 = A[a + 3 * i], A[a + 3 * i + 1], A[a + 3 * i + 2]
        for j in range(3):
            C[c + 3 * i + j] = a0 * B[b + j] + a1 * B[b + 3 + j] + a2 * B[b + 6 + j]
        C[c + 9 + i] = A[a + 9 + i] + a0 * B[b + 9] + a1 * B[b + 10] + a2 * B[b + 11]


@njit(cache=True, inline="always")
def compose_inv(A, a, B, b, C, c):
    """``C[c:] = A[a:] · B[b:]⁻¹``: ``R = R_A R_Bᵀ``, ``p = p_A − R p_B``."""
    for i in range(3):
        a0, a1, a2 = A[a + 3 * i], A[a + 3 * i + 1], A[a + 3 * i + 2]
        for j in range(3):
            C[c + 3 * i + j] = a0 * B[b + 3 * j] + a1 * B[b + 3 * j + 1] + a2 * B[b + 3 * j + 2]
    for i in range(3):
        C[c + 9 + i] = A[a + 9 + i] - (C[c + 3 * i] * B[b + 9] + C[c + 3 * i + 1] * B[b + 10]
                                       + C[c + 3 * i + 2] * B[b + 11])


@njit(cache=True, inline="always")
def inv_compose(A, a, B, b, C, c):
    """``C[c:] = A[a:]⁻¹ · B[b:]``: ``R = R_Aᵀ R_B``, ``p = R_Aᵀ (p_B − p_A)``."""
    d0, d1, d2 = B[b + 9] - A[a + 9], B[b + 10] - A[a + 10], B[b + 11] - A[a + 11]
    for i in range(3):
        a0, a1, a2 = A[a + i], A[a + 3 + i], A[a + 6 + i]
        C[c + 9 + i] = a0 * d0 + a1 * d1 + a2 * d2
        for j in range(3):
            C[c + 3 * i + j] = a0 * B[b + j] + a1 * B[b + 3 + j] + a2 * B[b + 6 + j]


@njit(cache=True, inline="always")
def inverse(A, a, C, c):
    """``C[c:] = A[a:]⁻¹``: ``R = R_Aᵀ``, ``p = −R_Aᵀ p_A``."""
    for i in range(3):
        for j in range(3):
            C[c + 3 * i + j] = A[a + 3 * j + i]
    for i in range(3):
        C[c + 9 + i] = -(A[a + i] * A[a + 9] + A[a + 3 + i] * A[a + 10]
                         + A[a + 6 + i] * A[a + 11])


@njit(cache=True, inline="always")
def adjoint_apply(T, t, x, xo, out, oo):
    """``out[oo:oo+6] = Ad(T[t:]) x[xo:xo+6]`` for a twist: ``[R ω; p × Rω + R v]`` (out
    must not overlap x)."""
    w0 = T[t] * x[xo] + T[t + 1] * x[xo + 1] + T[t + 2] * x[xo + 2]
    w1 = T[t + 3] * x[xo] + T[t + 4] * x[xo + 1] + T[t + 5] * x[xo + 2]
    w2 = T[t + 6] * x[xo] + T[t + 7] * x[xo + 1] + T[t + 8] * x[xo + 2]
    px, py, pz = T[t + 9], T[t + 10], T[t + 11]
    out[oo] = w0
    out[oo + 1] = w1
    out[oo + 2] = w2
    out[oo + 3] = (T[t] * x[xo + 3] + T[t + 1] * x[xo + 4] + T[t + 2] * x[xo + 5]
                   + py * w2 - pz * w1)
    out[oo + 4] = (T[t + 3] * x[xo + 3] + T[t + 4] * x[xo + 4] + T[t + 5] * x[xo + 5]
                   + pz * w0 - px * w2)
    out[oo + 5] = (T[t + 6] * x[xo + 3] + T[t + 7] * x[xo + 4] + T[t + 8] * x[xo + 5]
                   + px * w1 - py * w0)


@njit(cache=True, inline="always")
def adjoint_matrix(T, t, out):
    """``out = Ad(T[t:])`` (6, 6) angular-first: ``[[R, 0], [p̂ R, R]]``."""
    px, py, pz = T[t + 9], T[t + 10], T[t + 11]
    for i in range(3):
        for j in range(3):
            r = T[t + 3 * i + j]
            out[i, j] = r
            out[3 + i, 3 + j] = r
            out[i, 3 + j] = 0.0
    for j in range(3):
        r0, r1, r2 = T[t + j], T[t + 3 + j], T[t + 6 + j]
        out[3, j] = py * r2 - pz * r1
        out[4, j] = pz * r0 - px * r2
        out[5, j] = px * r1 - py * r0


@njit(cache=True, inline="always")
def motion_cross(A, a, B, b, out, o):
    """``out[o:o+6] = ad(A[a:a+6]) B[b:b+6]`` for twists: ``[ω_a × ω_b; v_a × ω_b + ω_a × v_b]``
    (out must not overlap the inputs)."""
    a0, a1, a2, a3, a4, a5 = A[a], A[a + 1], A[a + 2], A[a + 3], A[a + 4], A[a + 5]
    b0, b1, b2, b3, b4, b5 = B[b], B[b + 1], B[b + 2], B[b + 3], B[b + 4], B[b + 5]
    out[o] = a1 * b2 - a2 * b1
    out[o + 1] = a2 * b0 - a0 * b2
    out[o + 2] = a0 * b1 - a1 * b0
    out[o + 3] = a4 * b2 - a5 * b1 + a1 * b5 - a2 * b4
    out[o + 4] = a5 * b0 - a3 * b2 + a2 * b3 - a0 * b5
    out[o + 5] = a3 * b1 - a4 * b0 + a0 * b4 - a1 * b3


@njit(cache=True, inline="always")
def force_cross(A, a, f, out):
    """``out = a ×* f = −ad(a)ᵀ f`` (6,) for the twist ``A[a:a+6]`` and a wrench f = [n; f]:
    ``[ω × n + v × f; ω × f]``."""
    a0, a1, a2, a3, a4, a5 = A[a], A[a + 1], A[a + 2], A[a + 3], A[a + 4], A[a + 5]
    out[0] = a1 * f[2] - a2 * f[1] + a4 * f[5] - a5 * f[4]
    out[1] = a2 * f[0] - a0 * f[2] + a5 * f[3] - a3 * f[5]
    out[2] = a0 * f[1] - a1 * f[0] + a3 * f[4] - a4 * f[3]
    out[3] = a1 * f[5] - a2 * f[4]
    out[4] = a2 * f[3] - a0 * f[5]
    out[5] = a0 * f[4] - a1 * f[3]


@njit(cache=True, inline="always")
def rotation_entries(w0, w1, w2):
    """The entries ``(r00, r01, …, r22)`` of ``exp(ŵ)`` (Rodrigues) for the rotation vector
    ``(w0, w1, w2)`` [rad], as scalars (array expressions on (3,) arrays cost ~0.3 µs in
    numba; the kernels write every small operation as loops or scalars)."""
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
    return (1.0 - b * (y * y + z * z), b * x * y - a * z, b * x * z + a * y,
            b * x * y + a * z, 1.0 - b * (x * x + z * z), b * y * z - a * x,
            b * x * z - a * y, b * y * z + a * x, 1.0 - b * (x * x + y * y))


@njit(cache=True, inline="always")
def rotation(axis, ao, angle, T, t):
    """``T[t:t+9] = exp(angle · âxis)`` (row-major), the axis at ``axis[ao:ao+3]``."""
    r = rotation_entries(angle * axis[ao], angle * axis[ao + 1], angle * axis[ao + 2])
    for n in range(9):
        T[t + n] = r[n]


@njit(cache=True, inline="always")
def quat_to_rotation(qw, qx, qy, qz, T, t):
    """``T[t:t+9]``: the rotation (row-major) of the quaternion (w, x, y, z), normalised."""
    n = math.sqrt(qw * qw + qx * qx + qy * qy + qz * qz)
    w, x, y, z = qw / n, qx / n, qy / n, qz / n
    T[t] = 1.0 - 2.0 * (y * y + z * z)
    T[t + 1] = 2.0 * (x * y - w * z)
    T[t + 2] = 2.0 * (x * z + w * y)
    T[t + 3] = 2.0 * (x * y + w * z)
    T[t + 4] = 1.0 - 2.0 * (x * x + z * z)
    T[t + 5] = 2.0 * (y * z - w * x)
    T[t + 6] = 2.0 * (x * z - w * y)
    T[t + 7] = 2.0 * (y * z + w * x)
    T[t + 8] = 1.0 - 2.0 * (x * x + y * y)


@njit(cache=True)
def log3(T, t, w):
    """Rotation vector ``w[0:3]`` [rad] of the rotation ``T[t:t+9]``, ``|w| ∈ [0, π]``.

    The angle is ``atan2(|a|, (tr R − 1)/2)`` with ``a = (R − Rᵀ)^∨/2`` (``|a| = sin θ``),
    accurate at every angle (``acos`` loses half the digits near 0 and π). Near π the axis
    comes from the symmetric part ``(R + Rᵀ)/2 = cos θ I + (1 − cos θ) n nᵀ``.
    """
    r00, r01, r02 = T[t], T[t + 1], T[t + 2]
    r10, r11, r12 = T[t + 3], T[t + 4], T[t + 5]
    r20, r21, r22 = T[t + 6], T[t + 7], T[t + 8]
    ax = 0.5 * (r21 - r12)
    ay = 0.5 * (r02 - r20)
    az = 0.5 * (r10 - r01)
    s = math.sqrt(ax * ax + ay * ay + az * az)
    c = 0.5 * (r00 + r11 + r22 - 1.0)
    th = math.atan2(s, c)
    if c > -0.9:  # θ < ~2.69 rad: sin θ ≥ 0.43, the antisymmetric part fixes the axis
        f = th / s if s > 0.0 else 1.0
        w[0], w[1], w[2] = f * ax, f * ay, f * az
        return
    # near π: n nᵀ = ((R + Rᵀ)/2 − c I)/(1 − c); the largest diagonal entry is the best row
    d0 = (r00 - c) / (1.0 - c)
    d1 = (r11 - c) / (1.0 - c)
    d2 = (r22 - c) / (1.0 - c)
    if d0 >= d1 and d0 >= d2:
        n0 = math.sqrt(max(d0, 0.0))
        n1 = 0.5 * (r01 + r10) / (1.0 - c) / n0
        n2 = 0.5 * (r02 + r20) / (1.0 - c) / n0
    elif d1 >= d2:
        n1 = math.sqrt(max(d1, 0.0))
        n0 = 0.5 * (r01 + r10) / (1.0 - c) / n1
        n2 = 0.5 * (r12 + r21) / (1.0 - c) / n1
    else:
        n2 = math.sqrt(max(d2, 0.0))
        n0 = 0.5 * (r02 + r20) / (1.0 - c) / n2
        n1 = 0.5 * (r12 + r21) / (1.0 - c) / n2
    nn = math.sqrt(n0 * n0 + n1 * n1 + n2 * n2)
    if n0 * ax + n1 * ay + n2 * az < 0.0:  # the axis of sin θ > 0
        nn = -nn
    w[0], w[1], w[2] = th * n0 / nn, th * n1 / nn, th * n2 / nn


@njit(cache=True, inline="always")
def _coefficients(t2):
    """Coefficients ``(d, c1, c2, c3)`` of the SE(3) log and Jacobians at θ² = t2 (module
    docstring):

    ``d = (1 − (θ/2) cot(θ/2))/θ²``  (SO(3) ``J_l⁻¹ = I − ½ŵ + d ŵ²``),
    ``c1 = (θ − sin θ)/θ³``, ``c2 = (θ² + 2 cos θ − 2)/(2θ⁴)``,
    ``c3 = (2θ − 3 sin θ + θ cos θ)/(2θ⁵)`` (Barfoot's Q matrix).
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
        return d, c1, c2, c3
    t = math.sqrt(t2)
    s, c = math.sin(t), math.cos(t)
    return ((1.0 - 0.5 * t / math.tan(0.5 * t)) / t2, (t - s) / (t2 * t),
            (t2 + 2.0 * c - 2.0) / (2.0 * t2 * t2),
            (2.0 * t - 3.0 * s + t * c) / (2.0 * t2 * t2 * t))


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


@njit(cache=True)
def log6(T, t, xi):
    """SE(3) logarithm: the twist ``ξ = [ω; v]`` (6,) with ``exp(ξ) = T[t:]`` (principal
    branch). ``v = V(ω)⁻¹ p`` with ``V⁻¹ = I − ½ω̂ + d(θ) ω̂²`` (same d as the SO(3)
    ``J_l⁻¹``)."""
    log3(T, t, xi)
    w0, w1, w2 = xi[0], xi[1], xi[2]
    d = _coefficients(w0 * w0 + w1 * w1 + w2 * w2)[0]
    p0, p1, p2 = T[t + 9], T[t + 10], T[t + 11]
    a0 = w1 * p2 - w2 * p1  # ω × p
    a1 = w2 * p0 - w0 * p2
    a2 = w0 * p1 - w1 * p0
    xi[3] = p0 - 0.5 * a0 + d * (w1 * a2 - w2 * a1)
    xi[4] = p1 - 0.5 * a1 + d * (w2 * a0 - w0 * a2)
    xi[5] = p2 - 0.5 * a2 + d * (w0 * a1 - w1 * a0)


@njit(cache=True, inline="always")
def mul3(A, a, B, b, C, c):
    """``C[c:c+9] = A[a:a+9] B[b:b+9]`` (row-major 3 × 3 blocks of flat arrays)."""
    for i in range(3):
        for j in range(3):
            C[c + 3 * i + j] = (A[a + 3 * i] * B[b + j] + A[a + 3 * i + 1] * B[b + 3 + j]
                                + A[a + 3 * i + 2] * B[b + 6 + j])


#: Floats of the work array of :func:`left_jacobian_inverse` (twelve 3 × 3 blocks).
JL_WORK = 108


@njit(cache=True)
def left_jacobian_inverse(xi, out, work):
    """``J_l(ξ)⁻¹`` (6, 6) angular-first: ``log(exp(δ)·exp(ξ)) = ξ + J_l⁻¹ δ + O(δ²)``.

    ``[[J⁻¹, 0], [−J⁻¹ Q J⁻¹, J⁻¹]]`` with the SO(3) ``J⁻¹ = I − ½ω̂ + d ω̂²`` and Barfoot's
    ``Q(v, ω) = ½v̂ + c1 (ω̂v̂ + v̂ω̂ + ω̂v̂ω̂) + c2 (ω̂²v̂ + v̂ω̂² − 3ω̂v̂ω̂)
    + c3 (ω̂v̂ω̂² + ω̂²v̂ω̂)`` (Barfoot 2017, Eq. 7.86; rbc's angular-first order). ``work``:
    (:data:`JL_WORK`,) scratch.
    """
    W, V, WW, WV, VW, WVW, WWV, VWW, WVWW, WWVW, JI, Q = range(0, 108, 9)
    for n in range(18):
        work[n] = 0.0
    work[W + 1], work[W + 2], work[W + 5] = -xi[2], xi[1], -xi[0]
    work[W + 3], work[W + 6], work[W + 7] = xi[2], -xi[1], xi[0]
    work[V + 1], work[V + 2], work[V + 5] = -xi[5], xi[4], -xi[3]
    work[V + 3], work[V + 6], work[V + 7] = xi[5], -xi[4], xi[3]
    d, c1, c2, c3 = _coefficients(xi[0] * xi[0] + xi[1] * xi[1] + xi[2] * xi[2])
    mul3(work, W, work, W, work, WW)
    mul3(work, W, work, V, work, WV)
    mul3(work, V, work, W, work, VW)
    mul3(work, WV, work, W, work, WVW)
    mul3(work, W, work, WV, work, WWV)
    mul3(work, VW, work, W, work, VWW)
    mul3(work, WVW, work, W, work, WVWW)
    mul3(work, W, work, WVW, work, WWVW)
    for n in range(9):
        work[JI + n] = (1.0 if n % 4 == 0 else 0.0) - 0.5 * work[W + n] + d * work[WW + n]
        work[Q + n] = (0.5 * work[V + n] + c1 * (work[WV + n] + work[VW + n] + work[WVW + n])
                       + c2 * (work[WWV + n] + work[VWW + n] - 3.0 * work[WVW + n])
                       + c3 * (work[WVWW + n] + work[WWVW + n]))
    mul3(work, JI, work, Q, work, WV)  # J⁻¹ Q
    mul3(work, WV, work, JI, work, VW)  # J⁻¹ Q J⁻¹
    for i in range(3):
        for j in range(3):
            out[i, j] = work[JI + 3 * i + j]
            out[3 + i, 3 + j] = work[JI + 3 * i + j]
            out[3 + i, j] = -work[VW + 3 * i + j]
            out[i, 3 + j] = 0.0

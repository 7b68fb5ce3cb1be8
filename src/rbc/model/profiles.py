"""Scalar profiles ``h(x)`` of one joint coordinate and their first two derivatives.

A :class:`~rbc.ir.record.Profile` is record data; these are the pure functions that
evaluate it (value, slope and curvature at x), used by nonlinear couplings
``γ = q_joint − h(q_input)`` (:mod:`rbc.model.couplings`) and by profile ports
``ℓ = h(q_j)`` (:mod:`rbc.model.interfaces`). Inputs are plain floats and tuples, so the
same formulas can run over flat arrays in the run-time kernels.

* ``polynomial``: ``h = Σ_i c_i (x − x₀)^i`` by Horner's rule with its derivatives
  (Knuth, TAOCP vol. 2, §4.6.4).
* ``table``: the cubic Hermite interpolant through knots ``(x_i, y_i)`` with slopes
  ``m_i`` (de Boor, *A Practical Guide to Splines*, ch. IV): on ``[x_i, x_{i+1}]`` with
  ``Δ = x_{i+1} − x_i`` and ``t = (x − x_i)/Δ``,
  ``h = H₀₀(t) y_i + Δ H₁₀(t) m_i + H₀₁(t) y_{i+1} + Δ H₁₁(t) m_{i+1}``. It is C¹; its second
  derivative jumps at the knots (the curvature term is piecewise smooth). Beyond the ends
  the profile continues linearly with the end slope (h'' = 0), unless periodic (x wraps).
"""

from __future__ import annotations

import bisect
import math

from rbc.ir.record import Profile


def polynomial_terms(coefficients: tuple[float, ...], center: float, x: float
                     ) -> tuple[float, float, float]:
    """``(h, h', h'')`` of ``Σ c_i (x − center)^i`` at x (Horner, all three at once)."""
    s = x - center
    h = dh = d2h = 0.0
    for c in reversed(coefficients):
        d2h = d2h * s + 2.0 * dh
        dh = dh * s + h
        h = h * s + c
    return h, dh, d2h


def hermite_terms(xk: tuple[float, ...], yk: tuple[float, ...], mk: tuple[float, ...],
                  periodic: bool, x: float) -> tuple[float, float, float]:
    """``(h, h', h'')`` of the cubic Hermite table at x (module docstring)."""
    x0, x1 = xk[0], xk[-1]
    if periodic:
        x = x0 + math.fmod(x - x0, x1 - x0)
        if x < x0:
            x += x1 - x0
    elif x <= x0:
        return yk[0] + mk[0] * (x - x0), mk[0], 0.0
    elif x >= x1:
        return yk[-1] + mk[-1] * (x - x1), mk[-1], 0.0
    i = min(max(bisect.bisect_right(xk, x) - 1, 0), len(xk) - 2)
    d = xk[i + 1] - xk[i]
    t = (x - xk[i]) / d
    t2, t3 = t * t, t * t * t
    y0, y1, m0, m1 = yk[i], yk[i + 1], mk[i] * d, mk[i + 1] * d
    h = (2 * t3 - 3 * t2 + 1) * y0 + (t3 - 2 * t2 + t) * m0 + (-2 * t3 + 3 * t2) * y1 \
        + (t3 - t2) * m1
    dh = (6 * t2 - 6 * t) * y0 + (3 * t2 - 4 * t + 1) * m0 + (-6 * t2 + 6 * t) * y1 \
        + (3 * t2 - 2 * t) * m1
    d2h = (12 * t - 6) * y0 + (6 * t - 4) * m0 + (-12 * t + 6) * y1 + (6 * t - 2) * m1
    return h, dh / d, d2h / (d * d)


def profile_terms(profile: Profile, x: float) -> tuple[float, float, float]:
    """``(h(x), h'(x), h''(x))`` of a record profile [unit of h, per unit of x, …]."""
    if profile.type == "polynomial":
        return polynomial_terms(profile.coefficients, profile.center, float(x))
    return hermite_terms(profile.x, profile.y, profile.slope, profile.periodic, float(x))

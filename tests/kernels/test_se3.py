"""SE(3) kernels against Pinocchio and, in the small-angle band where Pinocchio's ``Jlog6``
loses digits, against a 50-digit evaluation of the series definition of ``J_l``."""

from __future__ import annotations

import mpmath as mp
import numpy as np
import pinocchio as pin
import pytest

from rbc.ir import spatial as sp
from rbc.kernels import se3

RNG = np.random.default_rng(20260927)


def _random_twist(angle: float) -> np.ndarray:
    w = RNG.normal(size=3)
    return np.concatenate([angle * w / np.linalg.norm(w), RNG.normal(size=3)])


def _kernel_log(T: pin.SE3) -> np.ndarray:
    xi = np.empty(6)
    se3.log6(np.concatenate([T.rotation.ravel(), T.translation]), 0, xi)
    return xi


def _kernel_jl(xi: np.ndarray) -> np.ndarray:
    out = np.empty((6, 6))
    se3.left_jacobian_inverse(xi, out, np.empty(se3.JL_WORK))
    return out


@pytest.mark.parametrize("angle", [0.0, 1e-9, 1e-2, 0.3, 0.49, 0.51, 1.0, 2.0, 2.7, 3.1, 3.14])
def test_log6_and_exp3_match_pinocchio(angle):
    for _ in range(5):
        xi = _random_twist(angle)
        T = sp.exp6(xi)
        # both are exact to a few roundings of O(1) entries; 1e-13 relative leaves margin.
        # Near π the log is ill-conditioned (an entry error ε of R moves the axis by
        # ~ε/(π − θ)), and the two codes take the axis from different parts of R: 1e-11.
        ref = sp.log6(T)
        tol = 1e-13 if angle < 3.0 else 1e-11
        assert np.abs(_kernel_log(T) - ref).max() <= tol * max(1.0, np.abs(ref).max())
        R = np.empty(se3.TR)
        se3.rotation(xi[:3].copy(), 0, 1.0, R, 0)
        assert np.abs(R[:9].reshape(3, 3) - sp.exp3(xi[:3])).max() <= 1e-15


@pytest.mark.parametrize("angle", [0.3, 0.49, 0.51, 1.0, 2.0, 3.0])
def test_left_jacobian_inverse_matches_pinocchio_outside_the_small_angle_band(angle):
    for _ in range(5):
        xi = _random_twist(angle)
        ref = sp.left_jacobian_inverse(sp.exp6(xi))
        # Pinocchio's Jlog6 is accurate here (θ ≥ 0.3); 1e-13 relative to the O(1) entries
        assert np.abs(_kernel_jl(xi) - ref).max() <= 1e-13 * max(1.0, np.abs(ref).max())


def _jl_inverse_50_digits(xi: np.ndarray) -> np.ndarray:
    """``J_l⁻¹`` from its definition ``J_l = Σ_k ad(ξ)^k/(k+1)!`` at 50 digits, inverted."""
    with mp.workdps(50):
        w, v = [mp.mpf(float(x)) for x in xi[:3]], [mp.mpf(float(x)) for x in xi[3:]]

        def hat(a):
            return mp.matrix([[0, -a[2], a[1]], [a[2], 0, -a[0]], [-a[1], a[0], 0]])

        ad = mp.zeros(6, 6)
        W, Vh = hat(w), hat(v)
        for i in range(3):
            for j in range(3):
                ad[i, j] = W[i, j]
                ad[3 + i, 3 + j] = W[i, j]
                ad[3 + i, j] = Vh[i, j]
        J = mp.eye(6)
        term = mp.eye(6)
        for k in range(1, 60):
            term = term * ad / (k + 1)
            J += term
        Ji = J ** -1
        return np.array([[float(Ji[i, j]) for j in range(6)] for i in range(6)])


@pytest.mark.parametrize("angle", [1e-8, 1e-6, 1e-5, 1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 0.1, 0.49,
                                   0.51])
def test_left_jacobian_inverse_against_50_digits_through_the_small_angle_band(angle):
    """In 1e-4…1e-3 rad Pinocchio's Jlog6 loses digits; the kernel's series does not."""
    for _ in range(3):
        xi = _random_twist(angle)
        ref = _jl_inverse_50_digits(xi)
        # the kernel sums the exact series: a few roundings of O(1) entries (4e-16 each)
        assert np.abs(_kernel_jl(xi) - ref).max() <= 2e-15 * max(1.0, np.abs(ref).max()), angle


def test_log6_near_pi_picks_the_axis_from_the_symmetric_part():
    for _ in range(10):
        xi = _random_twist(np.pi - 1e-7)
        T = sp.exp6(xi)
        out = _kernel_log(T)
        # the round trip is what matters near π (the log jumps between ±axis at π)
        back = sp.exp6(out)
        assert np.abs(back.homogeneous - T.homogeneous).max() <= 1e-12

"""Property tests of rbc.ir.spatial: orderings, quaternions, RPY, exp/log, Ad, Jacobians."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy.spatial.transform import Rotation

from rbc.ir import spatial as sp
from rbc.ir.record import Pose

SEED = 20260927
# Round trips through permutations / conversions are exact up to a few ulps of O(1) values.
EXACT = 1e-12
finite = st.floats(-3.0, 3.0, allow_nan=False, allow_infinity=False)
vec6 = arrays(np.float64, (6,), elements=finite)
vec4 = arrays(np.float64, (4,), elements=finite)
# Twists with rotation angle safely below π so log is smooth (principal branch).
small_twist = arrays(np.float64, (6,), elements=st.floats(-1.5, 1.5)).filter(
    lambda x: np.linalg.norm(x[:3]) < 2.5
)


def random_transforms(n: int) -> list[pin.SE3]:
    rng = np.random.default_rng(SEED)
    out = []
    for _ in range(n):
        q = rng.normal(size=4)
        out.append(pin.SE3(sp.rotation_from_quat(q), rng.uniform(-2, 2, 3)))
    return out


TRANSFORMS = random_transforms(8)


# ------------------------------------------------------------------ orderings
@given(vec6)
def test_motion_permutation_round_trip(x):
    assert np.array_equal(sp.from_pinocchio_motion(sp.to_pinocchio_motion(x)), x)
    assert np.array_equal(sp.to_pinocchio_motion(x)[:3], x[3:])  # linear part first in pin
    assert np.array_equal(sp.from_pinocchio_force(sp.to_pinocchio_force(x)), x)


def test_motion_permutation_matrix_and_operator():
    rng = np.random.default_rng(SEED)
    J = rng.normal(size=(6, 4))
    assert np.array_equal(sp.from_pinocchio_motion(sp.to_pinocchio_motion(J)), J)
    A = rng.normal(size=(6, 6))
    x = rng.normal(size=6)
    # y = A x in rbc order ⇔ P y = (P A P)(P x) in pinocchio order.
    lhs = sp.to_pinocchio_motion(A @ x)
    rhs = sp.to_pinocchio_operator(A) @ sp.to_pinocchio_motion(x)
    np.testing.assert_allclose(lhs, rhs, atol=EXACT)
    assert np.array_equal(sp.from_pinocchio_operator(sp.to_pinocchio_operator(A)), A)


@pytest.mark.parametrize("shape", [(5,), (3, 6), (6, 6, 1)])
def test_motion_permutation_rejects_bad_shapes(shape):
    with pytest.raises(ValueError):
        sp.to_pinocchio_motion(np.zeros(shape))


def test_pinocchio_motion_is_linear_first():
    m = pin.Motion(np.array([1.0, 2, 3]), np.array([4.0, 5, 6]))  # (linear, angular)
    np.testing.assert_array_equal(sp.from_pinocchio_motion(m.vector), [4, 5, 6, 1, 2, 3])


# ------------------------------------------------------------------ quaternions
@given(vec4.filter(lambda q: np.linalg.norm(q) > 1e-3))
def test_quaternion_order_round_trip_and_double_cover(q):
    assert np.array_equal(sp.quat_xyzw_to_wxyz(sp.quat_wxyz_to_xyzw(q)), q)
    R = sp.rotation_from_quat(q)
    np.testing.assert_allclose(R, sp.rotation_from_quat(-q), atol=EXACT)
    np.testing.assert_allclose(R @ R.T, np.eye(3), atol=EXACT)
    # Against scipy (which is xyzw): same matrix.
    np.testing.assert_allclose(
        R, Rotation.from_quat(sp.quat_wxyz_to_xyzw(q)).as_matrix(), atol=1e-10
    )  # scipy normalises differently; agreement to ~1e-15 relative, 1e-10 is generous
    qc = sp.quat_from_rotation(R)
    assert qc[0] >= 0.0
    qn = sp.normalize_quat(q)
    # The canonical representative is ±q: 1e-9 allows the round trip through a matrix.
    assert min(np.abs(qc - qn).max(), np.abs(qc + qn).max()) < 1e-9
    np.testing.assert_allclose(sp.quat_from_rotation(sp.rotation_from_quat(-q)), qc, atol=1e-9)


def test_pinocchio_quaternion_coeffs_are_xyzw():
    q = np.array([0.5, 0.5, -0.5, 0.5])  # wxyz
    R = sp.rotation_from_quat(q)
    np.testing.assert_allclose(pin.Quaternion(R).coeffs(), sp.quat_wxyz_to_xyzw(q), atol=EXACT)


def test_zero_quaternion_rejected():
    with pytest.raises(ValueError):
        sp.rotation_from_quat(np.zeros(4))


# ------------------------------------------------------------------ rpy
@given(
    st.floats(-np.pi, np.pi),
    st.floats(-np.pi / 2 + 1e-3, np.pi / 2 - 1e-3),
    st.floats(-np.pi, np.pi),
)
def test_rpy_matches_scipy_and_round_trips(r, p, y):
    rpy = np.array([r, p, y])
    R = sp.rotation_from_rpy(rpy)
    np.testing.assert_allclose(R, Rotation.from_euler("xyz", rpy).as_matrix(), atol=1e-12)
    # Round trip via the matrix (angles may wrap by 2π, so compare matrices);
    # away from gimbal lock the recovery is well conditioned: 1e-9.
    np.testing.assert_allclose(sp.rotation_from_rpy(sp.rpy_from_rotation(R)), R, atol=1e-9)


def test_rpy_is_z_y_x_product():
    r, p, y = 0.3, -0.2, 1.1
    Rx = Rotation.from_rotvec([r, 0, 0]).as_matrix()
    Ry = Rotation.from_rotvec([0, p, 0]).as_matrix()
    Rz = Rotation.from_rotvec([0, 0, y]).as_matrix()
    np.testing.assert_allclose(sp.rotation_from_rpy(np.array([r, p, y])), Rz @ Ry @ Rx, atol=1e-14)


# ------------------------------------------------------------------ poses
@pytest.mark.parametrize("T", TRANSFORMS[:4])
def test_pose_round_trip(T):
    pose = sp.pose_from_se3(T)
    assert pose.quat[0] >= 0.0
    np.testing.assert_allclose(sp.se3_from_pose(pose).homogeneous, T.homogeneous, atol=1e-12)
    np.testing.assert_allclose(sp.homogeneous(pose), T.homogeneous, atol=1e-12)


def test_pose_maps_child_to_parent():
    # Frame f at x = 1 in a, rotated 90° about z: the point (1, 0, 0)_f is at (1, 1, 0)_a.
    s = np.sqrt(0.5)
    pose = Pose(xyz=(1.0, 0.0, 0.0), quat=(s, 0.0, 0.0, s))
    np.testing.assert_allclose(sp.homogeneous(pose) @ [1, 0, 0, 1], [1, 1, 0, 1], atol=1e-15)


# ------------------------------------------------------------------ exp / log / Ad
@settings(max_examples=50)
@given(small_twist)
def test_exp_log_round_trip(xi):
    # log∘exp on the principal branch is exact up to rounding amplified near angle π.
    np.testing.assert_allclose(sp.log6(sp.exp6(xi)), xi, atol=1e-9)


@pytest.mark.parametrize("T", TRANSFORMS)
def test_log_exp_round_trip(T):
    np.testing.assert_allclose(sp.exp6(sp.log6(T)).homogeneous, T.homogeneous, atol=1e-10)
    # log(T_a_b) is invariant under Ad(T_a_b): same coordinates in a and in b.
    xi = sp.log6(T)
    np.testing.assert_allclose(sp.adjoint(T) @ xi, xi, atol=1e-10)


def test_log6_angular_first():
    T = pin.SE3(sp.exp3(np.array([0.0, 0.0, 0.4])), np.zeros(3))
    np.testing.assert_allclose(sp.log6(T), [0, 0, 0.4, 0, 0, 0], atol=1e-15)


@pytest.mark.parametrize("i", range(4))
def test_adjoint_homomorphism_and_inverse(i):
    T1, T2 = TRANSFORMS[2 * i], TRANSFORMS[2 * i + 1]
    # Products of O(1) matrices: 1e-12 covers accumulated rounding.
    np.testing.assert_allclose(sp.adjoint(T1 * T2), sp.adjoint(T1) @ sp.adjoint(T2), atol=1e-12)
    np.testing.assert_allclose(sp.adjoint(T1.inverse()), np.linalg.inv(sp.adjoint(T1)), atol=1e-12)


@pytest.mark.parametrize("T", TRANSFORMS[:4])
def test_adjoint_maps_twists_b_to_a(T):
    # T exp(ξ_b) T⁻¹ = exp(Ad(T) ξ_b): a twist in b re-expressed in a.
    xi_b = np.array([0.1, -0.2, 0.3, 0.5, 0.1, -0.4])
    lhs = T * sp.exp6(xi_b) * T.inverse()
    np.testing.assert_allclose(
        lhs.homogeneous, sp.exp6(sp.adjoint(T) @ xi_b).homogeneous, atol=1e-12
    )


def test_adjoint_block_structure():
    T = TRANSFORMS[0]
    Ad = sp.adjoint(T)
    R, p = T.rotation, T.translation
    np.testing.assert_allclose(Ad[:3, :3], R, atol=EXACT)
    np.testing.assert_allclose(Ad[:3, 3:], 0.0, atol=EXACT)
    np.testing.assert_allclose(Ad[3:, :3], sp.skew(p) @ R, atol=EXACT)
    np.testing.assert_allclose(Ad[3:, 3:], R, atol=EXACT)


# ------------------------------------------------------------------ Jacobians of log
H = 1e-6  # FD step: centred differences have O(h²) ≈ 1e-12 truncation, rounding ~ ε/h ≈ 1e-10
FD_TOL = 1e-7  # well above rounding (1e-10) and truncation (1e-12) for O(1) Jacobians


def _fd(f, n=6):
    cols = []
    for k in range(n):
        e = np.zeros(n)
        e[k] = H
        cols.append((f(e) - f(-e)) / (2 * H))
    return np.column_stack(cols)


@pytest.mark.parametrize("T", TRANSFORMS)
def test_jlog6_is_right_jacobian_inverse(T):
    # d/dε log(Δ·exp(ε ξ)) = Jlog6(Δ) ξ (local / right perturbation).
    J = _fd(lambda d: sp.log6(T * sp.exp6(d)))
    np.testing.assert_allclose(J, sp.jlog6(T), atol=FD_TOL)


@pytest.mark.parametrize("T", TRANSFORMS)
def test_left_jacobian_inverse_identity(T):
    # DESIGN §5: d/dε log(exp(ε ξ)·Δ) = J_l(ρ)⁻¹ ξ with J_l⁻¹ = Jlog6(Δ)·Ad(Δ⁻¹).
    J = _fd(lambda d: sp.log6(sp.exp6(d) * T))
    np.testing.assert_allclose(J, sp.left_jacobian_inverse(T), atol=FD_TOL)
    np.testing.assert_allclose(sp.jl_inv(sp.log6(T)), sp.left_jacobian_inverse(T), atol=1e-10)
    # ... and it is NOT the right Jacobian inverse unless Δ commutes with everything.
    assert not np.allclose(J, sp.jlog6(T), atol=1e-3)


@pytest.mark.parametrize("T", TRANSFORMS)
def test_so3_left_jacobian_inverse(T):
    # d/dε log3(exp3(ε δ)·R) = J_l(φ)⁻¹ δ (world-frame perturbation of a rotation)
    R = T.rotation
    J = np.column_stack([(sp.log3(sp.exp3(H * e) @ R) - sp.log3(sp.exp3(-H * e) @ R)) / (2 * H)
                         for e in np.eye(3)])
    np.testing.assert_allclose(J, sp.left_jacobian_inverse3(R), atol=FD_TOL)
    # it is the rotation block of the SE(3) J_l⁻¹, and J_l⁻¹ φ = φ
    np.testing.assert_allclose(sp.left_jacobian_inverse3(R),
                               sp.left_jacobian_inverse(T)[:3, :3], atol=1e-12)
    phi = sp.log3(R)
    np.testing.assert_allclose(sp.left_jacobian_inverse3(R) @ phi, phi, atol=1e-12)


def test_jacobians_at_identity_are_identity():
    np.testing.assert_allclose(sp.jlog6(pin.SE3.Identity()), np.eye(6), atol=EXACT)
    np.testing.assert_allclose(sp.left_jacobian_inverse(pin.SE3.Identity()), np.eye(6), atol=EXACT)


@pytest.mark.parametrize("a, b", [((0, 0, 1), (0, 0, 1)), ((0, 0, 1), (0, 0, -1)),
                                  ((0, 0, 1), (1, 0, 0)), ((0.3, 0.1, 0.9), (0, 0, 1)),
                                  ((1, 2, 3), (-1, -2, -3))])
def test_rotation_between_takes_a_onto_b(a, b):
    # a proper rotation (det 1, orthonormal) with R a along b — opposite vectors included
    a, b = np.asarray(a, float), np.asarray(b, float)
    R = sp.rotation_between(a, b)
    assert np.allclose(R.T @ R, np.eye(3), atol=1e-14) and np.linalg.det(R) == pytest.approx(1)
    assert np.allclose(R @ (a / np.linalg.norm(a)), b / np.linalg.norm(b), atol=1e-14)


def test_up_direction_opposes_gravity():
    assert np.allclose(sp.up_direction([0.0, -3.0, -4.0]), [0.0, 0.6, 0.8])
    assert np.array_equal(sp.up_direction([0.0, 0.0, 0.0]), [0.0, 0.0, 1.0])  # no gravity

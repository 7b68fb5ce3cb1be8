"""Property tests of rbc.ir.joints, parameterized over every joint kind."""

from __future__ import annotations

import math

import numpy as np
import pinocchio as pin
import pytest
from scipy.spatial.transform import Rotation

from rbc.ir import joints as jt
from rbc.ir import spatial as sp
from rbc.ir.record import JOINT_TYPES, Joint, Pose

SEED = 20260927
# Centred differences with step H: truncation O(H²) ≈ 1e-12, rounding ≈ ε/H ≈ 1e-10 for
# O(1) maps; FD_TOL sits well above both.
H = 1e-6
FD_TOL = 1e-7
# Algebraic round trips (integrate/difference, products of O(1) transforms): rounding only,
# amplified by log near small angles; 1e-10 is ~1e6 ulps of headroom.
RT_TOL = 1e-10

_S = 1 / math.sqrt(3)
A_POSE = Pose(xyz=(0.1, -0.2, 0.3), quat=tuple(sp.normalize_quat(np.array([0.9, 0.1, -0.3, 0.2]))))
B_POSE = Pose(xyz=(-0.4, 0.05, 0.2), quat=tuple(sp.normalize_quat(np.array([0.7, -0.4, 0.1, 0.5]))))


def _joint(type_: str, **kw) -> Joint:
    return Joint(
        name=f"j_{type_}",
        type=type_,
        parent="a",
        child="b",
        parent_frame=A_POSE,
        child_frame=B_POSE,
        **kw,
    )


AXIS = (0.3, -0.5, 0.8)
JOINTS = {
    "fixed": _joint("fixed"),
    "revolute": _joint("revolute", axis=AXIS),
    "prismatic": _joint("prismatic", axis=AXIS),
    "helical": _joint("helical", axis=AXIS, lead=0.05),
    "universal": _joint("universal", axes=((1.0, 0.0, 0.0), (0.0, _S * 1.5, _S))),
    "cylindrical": _joint("cylindrical", axis=AXIS),
    "planar": _joint("planar"),
    "planar_tilted": _joint("planar", axis=(1.0, 1.0, 0.0)),
    "planar_down": _joint("planar", axis=(0.0, 0.0, -1.0)),
    "spherical": _joint("spherical"),
    "free": _joint("free"),
}
NAMES = list(JOINTS)


@pytest.fixture(params=NAMES)
def case(request):
    joint = JOINTS[request.param]
    kind = jt.joint_kind(joint)
    rng = np.random.default_rng(SEED + NAMES.index(request.param))
    return joint, kind, rng


def _same_motion(M1: pin.SE3, M2: pin.SE3, tol: float = RT_TOL) -> None:
    np.testing.assert_allclose(M1.homogeneous, M2.homogeneous, atol=tol)


def _fd(f, n: int) -> np.ndarray:
    """Centred-difference Jacobian of f at 0 over R^n."""
    cols = []
    for k in range(n):
        e = np.zeros(n)
        e[k] = H
        cols.append((f(e) - f(-e)) / (2 * H))
    return np.column_stack(cols) if cols else np.zeros((np.size(f(np.zeros(n))), 0))


# ---------------------------------------------------------------- registry and sizes
def test_registry_covers_every_record_type():
    assert set(jt.JOINT_KINDS) == set(JOINT_TYPES)
    for name, cls in jt.JOINT_KINDS.items():
        assert cls.type == name


def test_sizes_and_neutral(case):
    _, kind, _ = case
    q0 = kind.neutral()
    assert q0.shape == (kind.nq,)
    _same_motion(kind.motion(q0), pin.SE3.Identity())
    assert kind.motion_subspace(q0).shape == (6, kind.nv)
    assert kind.N(q0).shape == (kind.nq, kind.nv)
    jm = kind.pinocchio_model()
    if kind.type == "fixed":
        assert jm is None
    else:
        assert (jm.nq, jm.nv) == (kind.nq, kind.nv)


# ---------------------------------------------------------------- integrate / difference
def test_integrate_difference_round_trip(case):
    _, kind, rng = case
    q0, q1 = kind.random(rng), kind.random(rng)
    d = kind.difference(q0, q1)
    _same_motion(kind.motion(kind.integrate(q0, d)), kind.motion(q1))
    v = 0.3 * rng.normal(size=kind.nv)  # small: stays on the principal branch of log
    np.testing.assert_allclose(kind.difference(q0, kind.integrate(q0, v)), v, atol=RT_TOL)
    np.testing.assert_allclose(kind.difference(q0, q0), 0.0, atol=RT_TOL)


def test_chart_round_trip_near_and_far(case):
    _, kind, rng = case
    q_ref = kind.random(rng)
    for scale in (1e-4, 0.5, 2.0):  # near the reference, moderate, far (|φ| < π)
        phi = rng.normal(size=kind.nv)
        phi *= scale / max(np.linalg.norm(phi), 1e-300) if kind.nv else 0.0
        q = kind.from_chart(q_ref, phi)
        np.testing.assert_allclose(kind.chart(q_ref, q), phi, atol=RT_TOL)


# ---------------------------------------------------------------- motion subspace by FD
def test_motion_subspace_is_body_derivative_of_motion_map(case):
    """d/dε Q(q)⁻¹·Q(q ⊕ εv) at 0 equals S(q) v (twist of Jc rel. Jb, in Jc)."""
    _, kind, rng = case
    for _ in range(3):
        q = kind.random(rng)
        Qinv = kind.motion(q).inverse()
        J = _fd(
            lambda e, q=q, Qinv=Qinv: sp.log6(Qinv * kind.motion(kind.integrate(q, e))), kind.nv
        )
        np.testing.assert_allclose(J.reshape(6, kind.nv), kind.motion_subspace(q), atol=FD_TOL)


def test_motion_map_to_second_order(case):
    """Q(q ⊕ εv) = Q(q)·exp(ε S(q) v) + O(ε²): the error shrinks ~4× when ε halves."""
    _, kind, rng = case
    if kind.nv == 0:
        pytest.skip("no motion")
    q, v = kind.random(rng), rng.normal(size=kind.nv)
    S = kind.motion_subspace(q)

    def err(eps: float) -> float:
        lhs = kind.motion(kind.integrate(q, eps * v))
        rhs = kind.motion(q) * sp.exp6(eps * S @ v)
        return float(np.abs(sp.log6(rhs.inverse() * lhs)).max())

    e1, e2 = err(1e-3), err(5e-4)
    # Constant-S kinds are exact (error ≈ rounding 1e-15); otherwise ratio ≈ 4 (O(ε²)).
    assert e1 < 1e-12 or 3.0 < e1 / e2 < 5.0, (e1, e2)


def test_N_is_derivative_of_integrate(case):
    _, kind, rng = case
    q = kind.random(rng)
    J = _fd(lambda e: kind.integrate(q, e), kind.nv)
    np.testing.assert_allclose(J.reshape(kind.nq, kind.nv), kind.N(q), atol=FD_TOL)


# ---------------------------------------------------------------- transform
def test_value_rates_are_derivatives_of_the_values(case):
    """value_rates(q, v) = d/dt limited_coordinates(q ⊕ t v) at t = 0 (centred differences,
    h = 1e-6: truncation and round-off ≲ 1e-9), for every kind with scalar values."""
    _, kind, rng = case
    if not kind.limited or len(kind.limited) != kind.nv:
        pytest.skip(f"{kind.type} joints have no scalar values")
    q, v = kind.random(rng), rng.standard_normal(kind.nv)
    h = 1e-6
    fd = (kind.limited_coordinates(kind.integrate(q, h * v))
          - kind.limited_coordinates(kind.integrate(q, -h * v))) / (2 * h)
    np.testing.assert_allclose(kind.value_rates(q, v), fd, atol=1e-8)


def test_transform_is_A_Q_Binv(case):
    joint, kind, rng = case
    q = kind.random(rng)
    A, B = sp.homogeneous(joint.parent_frame), sp.homogeneous(joint.child_frame)
    expected = A @ kind.motion(q).homogeneous @ np.linalg.inv(B)
    np.testing.assert_allclose(jt.transform(joint, q).homogeneous, expected, atol=RT_TOL)


def test_pinocchio_placements_reproduce_transform(case):
    joint, kind, rng = case
    if kind.nq == 0:
        pytest.skip("fixed joints have no pinocchio joint model")
    Ap, Bp = jt.pinocchio_placements(joint)
    model = pin.Model()
    model.addJoint(0, kind.pinocchio_model(), Ap, "j")
    data = model.createData()
    q = kind.random(rng)
    pin.forwardKinematics(model, data, kind.to_pinocchio_q(q))
    _same_motion(data.oMi[1] * Bp.inverse(), jt.transform(joint, q))


# ---------------------------------------------------------------- independent conventions
def _rot(axis, angle) -> np.ndarray:
    a = np.asarray(axis, dtype=float)
    return Rotation.from_rotvec(a / np.linalg.norm(a) * angle).as_matrix()


@pytest.mark.parametrize("theta", [-2.5, 0.0, 0.4, 3.0])
def test_revolute_prismatic_cylindrical_against_numpy(theta):
    a = np.asarray(AXIS) / np.linalg.norm(AXIS)
    rev = jt.joint_kind(JOINTS["revolute"]).motion(np.array([theta]))
    np.testing.assert_allclose(rev.rotation, _rot(a, theta), atol=1e-14)
    pri = jt.joint_kind(JOINTS["prismatic"]).motion(np.array([theta]))
    np.testing.assert_allclose(pri.translation, theta * a, atol=1e-14)
    cyl = jt.joint_kind(JOINTS["cylindrical"]).motion(np.array([0.7, theta]))
    np.testing.assert_allclose(cyl.rotation, _rot(a, theta), atol=1e-14)
    np.testing.assert_allclose(cyl.translation, 0.7 * a, atol=1e-14)


@pytest.mark.parametrize("q", [(0.3, 0.7), (-2.0, 1.2), (3.0, -3.0)])
def test_universal_convention_matches_scipy(q):
    kind = jt.joint_kind(JOINTS["universal"])
    a1, a2 = kind.axes
    expected = _rot(a1, q[0]) @ _rot(a2, q[1])  # Q = Rot(a1, θ1)·Rot(a2, θ2)
    M = kind.motion(np.array(q))
    np.testing.assert_allclose(M.rotation, expected, atol=1e-14)
    np.testing.assert_allclose(M.translation, 0.0, atol=1e-15)


@pytest.mark.parametrize("theta", [0.5, 2 * math.pi, -1.0])
def test_helical_lead(theta):
    joint = JOINTS["helical"]
    kind = jt.joint_kind(joint)
    a = np.asarray(AXIS) / np.linalg.norm(AXIS)
    M = kind.motion(np.array([theta]))
    # Translation lead/(2π)·θ along the axis (one full turn advances one lead).
    np.testing.assert_allclose(M.translation, joint.lead / (2 * math.pi) * theta * a, atol=1e-14)
    np.testing.assert_allclose(M.rotation, _rot(a, theta), atol=1e-14)


def test_planar_layout():
    kind = jt.joint_kind(JOINTS["planar"])
    th = 0.6
    q = np.array([1.0, 2.0, math.cos(th), math.sin(th)])
    M = kind.motion(q)
    np.testing.assert_allclose(M.translation, [1.0, 2.0, 0.0], atol=1e-15)
    np.testing.assert_allclose(M.rotation, _rot([0, 0, 1], th), atol=1e-15)
    # v = [vx, vy, ω] with (vx, vy) in the moving frame Jc.
    q1 = kind.integrate(q, np.array([0.1, 0.0, 0.0]))
    np.testing.assert_allclose(
        q1[:2], [1.0 + 0.1 * math.cos(th), 2.0 + 0.1 * math.sin(th)], atol=1e-15
    )
    np.testing.assert_allclose(kind.limited_coordinates(q), [1.0, 2.0, th], atol=1e-15)


@pytest.mark.parametrize("name", ["planar_tilted", "planar_down"])
def test_planar_normal_is_preserved(name):
    kind = jt.joint_kind(JOINTS[name])
    n = np.asarray(kind.normal)
    q = kind.compose(np.array([0.3, -0.7, 1.1]))
    M = kind.motion(q)
    np.testing.assert_allclose(M.translation @ n, 0.0, atol=1e-15)  # stays in the plane
    np.testing.assert_allclose(M.rotation, _rot(n, 1.1), atol=1e-14)  # turns about n
    np.testing.assert_allclose(np.linalg.norm(M.translation), math.hypot(0.3, 0.7), atol=1e-15)


def test_free_layout_and_angular_first_velocity():
    kind = jt.Free()
    qr = sp.normalize_quat(np.array([0.8, 0.2, -0.1, 0.4]))
    q = np.concatenate([[1.0, 2.0, 3.0], qr])
    M = kind.motion(q)
    np.testing.assert_allclose(M.translation, [1, 2, 3], atol=1e-15)
    np.testing.assert_allclose(M.rotation, sp.rotation_from_quat(qr), atol=1e-15)
    # v = [ω; v] in Jc: a pure ω leaves the origin in place; q ⊕ v = Q(q)·exp6(v).
    v = np.array([0.3, -0.2, 0.1, 0.0, 0.0, 0.0])
    np.testing.assert_allclose(kind.integrate(q, v)[:3], [1, 2, 3], atol=1e-15)
    v = np.array([0.3, -0.2, 0.1, 0.5, 0.4, -0.6])
    _same_motion(kind.motion(kind.integrate(q, v)), M * sp.exp6(v))
    np.testing.assert_allclose(kind.motion_subspace(q), np.eye(6), atol=1e-15)


@pytest.mark.parametrize("name", ["spherical", "free"])
def test_quaternion_double_cover(name):
    kind = jt.joint_kind(JOINTS[name])
    rng = np.random.default_rng(SEED)
    q = kind.random(rng)
    qm = q.copy()
    qm[-4:] *= -1.0
    _same_motion(kind.motion(q), kind.motion(qm))
    np.testing.assert_allclose(kind.difference(q, qm), 0.0, atol=RT_TOL)
    assert kind.neutral()[-4] == 1.0  # rbc order: w first


# ---------------------------------------------------------------- spherical charts
@pytest.mark.parametrize("scale", [1e-6, 0.3, 1.5, 3.0])  # up to just below the |φ| = π edge
def test_spherical_chart_round_trip(scale):
    rng = np.random.default_rng(SEED)
    q_ref = jt.Spherical().random(rng)
    phi = rng.normal(size=3)
    phi *= scale / np.linalg.norm(phi)
    q = jt.spherical_from_chart(q_ref, phi)
    # Near π the log is ill-conditioned (1/sin φ factors): 1e-8 there, RT_TOL otherwise.
    np.testing.assert_allclose(
        jt.spherical_chart(q_ref, q), phi, atol=1e-8 if scale > 2 else RT_TOL
    )
    np.testing.assert_allclose(jt.Spherical().chart(q_ref, q), phi, atol=1e-8)
    np.testing.assert_allclose(
        sp.rotation_from_quat(q), sp.rotation_from_quat(q_ref) @ sp.exp3(phi), atol=RT_TOL
    )


def test_spherical_chart_wraps_beyond_pi():
    q_ref = np.array([1.0, 0.0, 0.0, 0.0])
    phi = np.array([0.0, 0.0, 3.5])  # |φ| > π: outside the chart domain
    back = jt.spherical_chart(q_ref, jt.spherical_from_chart(q_ref, phi))
    np.testing.assert_allclose(back, [0.0, 0.0, 3.5 - 2 * math.pi], atol=RT_TOL)


# ---------------------------------------------------------------- record values and sampling
def test_from_record_initial(case):
    _, kind, _ = case
    np.testing.assert_allclose(kind.from_record_initial(None), kind.neutral())
    n = len(kind.limited) + 4 * kind.has_quat
    vals = [0.2] * len(kind.limited) + ([2.0, 0.0, 0.0, 0.0] if kind.has_quat else [])
    q = kind.from_record_initial(vals)
    assert q.shape == (kind.nq,)
    np.testing.assert_allclose(kind.limited_coordinates(q), [0.2] * len(kind.limited), atol=1e-15)
    if kind.has_quat:
        np.testing.assert_allclose(q[-4:], [1, 0, 0, 0])  # normalised
    with pytest.raises(jt.JointSpecError):
        kind.from_record_initial([0.0] * (n + 2))  # (n + 1 is planar's [x, y, cos, sin] form)


def test_planar_initial_accepts_cos_sin():
    kind = jt.Planar()
    q = kind.from_record_initial([1.0, 2.0, 0.0, 3.0])  # θ = π/2, (cos, sin) normalised
    np.testing.assert_allclose(q, [1.0, 2.0, 0.0, 1.0], atol=1e-15)


def test_random_respects_limits(case):
    _, kind, rng = case
    nl = len(kind.limited)
    lo, hi = np.full(nl, -0.3), np.full(nl, 0.5)
    for _ in range(20):
        x = kind.limited_coordinates(kind.random(rng, lo, hi))
        assert np.all(x >= lo) and np.all(x <= hi)
        x = kind.limited_coordinates(kind.random(rng))
        bound = np.array(
            [math.pi if k == "angle" else jt.UNBOUNDED_LENGTH_RANGE for k in kind.limited]
        )
        assert np.all(np.abs(x) <= bound)
    a, b = kind.random(np.random.default_rng(1)), kind.random(np.random.default_rng(1))
    np.testing.assert_array_equal(a, b)  # seeded


@pytest.mark.parametrize(
    "joint",
    [
        _joint("revolute"),
        _joint("prismatic", axis=(0.0, 0.0, 0.0)),
        _joint("helical", axis=AXIS),
        _joint("universal", axes=((1.0, 0.0, 0.0), (2.0, 0.0, 0.0))),
        _joint("hinge", axis=AXIS),
    ],
)
def test_bad_joint_parameters_raise(joint):
    with pytest.raises(jt.JointSpecError):
        jt.joint_kind(joint)


def test_helical_pitch_meaning_in_pinocchio():
    # Pinocchio's HelicalUnaligned(axis, pitch) translates pitch·θ: pitch is in m/rad.
    model = pin.Model()
    model.addJoint(
        0, pin.JointModelHelicalUnaligned(np.array([0.0, 0.0, 1.0]), 0.1), pin.SE3.Identity(), "h"
    )
    data = model.createData()
    pin.forwardKinematics(model, data, np.array([2.0]))
    np.testing.assert_allclose(data.oMi[1].translation, [0, 0, 0.2], atol=1e-15)


def test_motion_subspace_rate_is_the_derivative_of_S(case):
    """Ṡ(q)v (Pinocchio's joint bias c) against centered differences of S along q ⊕ tv."""
    joint, kind, rng = case
    q = kind.random(rng)
    v = rng.normal(size=kind.nv)
    if kind.nv == 0:
        assert np.all(kind.motion_subspace_rate(q, v) == 0.0)
        return
    Sdot = (kind.motion_subspace(kind.integrate(q, H * v))
            - kind.motion_subspace(kind.integrate(q, -H * v))) / (2 * H)
    np.testing.assert_allclose(kind.motion_subspace_rate(q, v), Sdot @ v, atol=FD_TOL)


@pytest.mark.parametrize("name", ["revolute", "prismatic", "universal", "spherical"])
def test_closed_form_maps_equal_pinocchio(name):
    """The closed-form motion maps and subspaces equal Pinocchio's one-joint model."""
    kind = jt.joint_kind(JOINTS[name])
    rng = np.random.default_rng(SEED)
    for _ in range(5):
        q = kind.random(rng)
        _same_motion(kind.motion(q), jt.JointKind.motion(kind, q))
        np.testing.assert_allclose(kind.motion_subspace(q), kind._pinocchio_S(q), atol=1e-14)

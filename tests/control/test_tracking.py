"""The tracking law (issue #20 item 1): the SE(3) and SO(3) error rates and the transported
reference rates against finite differences along trajectories, u̇_r against differences of
u_r along a closed motion of a humanoid on both soles, Q at the reference against the
projected-tree inverse dynamics (Pinocchio CRBA/RNEA), and the closed loop's storage
½ sᵀΓs decaying at 2 k_s with Γ̇ taken by finite differences."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

from rbc.compose.dynamics import MemberModel, composed_terms, projected_terms
from rbc.control.tracking import (
    IndependentCoordinates,
    TrackingGains,
    commanded_force,
    se3_error,
    so3_error,
    tracking_state,
)
from rbc.ir import spatial as sp
from rbc.model.closure import ClosureState
from rbc.model.dynamics import DynamicsData


def _richardson(fn, h: float = 1e-3):
    """d/dt fn at 0: centred differences at h and h/2, one Richardson level (O(h⁴))."""
    d1 = (fn(h) - fn(-h)) / (2 * h)
    d2 = (fn(h / 2) - fn(-h / 2)) / h
    return (4 * d2 - d1) / 3


def _exp_curve(T0: pin.SE3, a: np.ndarray, b: np.ndarray):
    """T(t) = T0 exp(ξ(t)), ξ = t a + t²/2 b, and its body twist J_r(ξ) ξ̇ (rbc order)."""
    def pose(t):
        return T0 * sp.exp6(t * a + 0.5 * t * t * b)

    def twist(t):
        xi = t * a + 0.5 * t * t * b
        Jr = sp.from_pinocchio_operator(pin.Jexp6(pin.Motion(sp.to_pinocchio_motion(xi))))
        return Jr @ (a + t * b)
    return pose, twist


@pytest.mark.parametrize("seed", range(4))
def test_se3_error_rate_by_finite_differences(seed):
    rng = np.random.default_rng(seed)
    T0, Td0 = pin.SE3.Random(), pin.SE3.Random()
    Td0 = T0 * sp.exp6(rng.uniform(-0.6, 0.6, 6))  # errors well inside |ω| < π
    pose, twist = _exp_curve(T0, *rng.uniform(-1, 1, (2, 6)))
    pose_d, twist_d = _exp_curve(Td0, *rng.uniform(-1, 1, (2, 6)))
    t0 = 0.3

    def at(dt):
        t = t0 + dt
        vd_dot = _richardson(lambda h: twist_d(t + h), 1e-3)
        return se3_error(pose(t), pose_d(t), twist(t), twist_d(t), vd_dot)

    e, e_dot, u_d, udot_d = at(0.0)
    assert np.allclose(e, sp.log6(pose_d(t0).inverse() * pose(t0)), atol=1e-15)
    # the form J_l⁻¹(−e) is the right Jacobian inverse J_r⁻¹(e) (= Pinocchio's Jlog6)
    D = pose_d(t0).inverse() * pose(t0)
    assert np.abs(sp.jl_inv(-e) @ (twist(t0) - u_d) - e_dot).max() < 1e-12
    fd_e = _richardson(lambda h: at(h)[0])
    fd_u = _richardson(lambda h: at(h)[2])
    # O(h⁴) truncation at h = 1e-3 and round-off 1e-16/h: a few 1e-11 on O(1) rates
    assert np.abs(fd_e - e_dot).max() < 1e-8 * max(1.0, np.abs(e_dot).max())
    assert np.abs(fd_u - udot_d).max() < 1e-7 * max(1.0, np.abs(udot_d).max())
    assert np.abs(u_d - sp.adjoint(D.inverse()) @ twist_d(t0)).max() < 1e-14


def test_so3_error_rate_by_finite_differences():
    rng = np.random.default_rng(9)
    R0 = sp.exp3(rng.uniform(-2, 2, 3))
    Rd0 = R0 @ sp.exp3(rng.uniform(-0.5, 0.5, 3))
    a, b, c, d = rng.uniform(-1, 1, (4, 3))

    def curve(R, a, b):
        def rot(t):
            return R @ sp.exp3(t * a + 0.5 * t * t * b)

        def rate(t):
            phi = t * a + 0.5 * t * t * b
            return np.asarray(pin.Jexp3(phi)) @ (a + t * b)
        return rot, rate

    rot, w = curve(R0, a, b)
    rot_d, w_d = curve(Rd0, c, d)

    def at(t):
        return so3_error(rot(t), rot_d(t), w(t), w_d(t), _richardson(lambda h: w_d(t + h)))

    e, e_dot, u_d, udot_d = at(0.2)
    assert np.abs(_richardson(lambda h: at(0.2 + h)[0]) - e_dot).max() < 1e-8
    assert np.abs(_richardson(lambda h: at(0.2 + h)[2]) - udot_d).max() < 1e-7


@pytest.fixture(scope="module")
def stand(solo):
    mm = MemberModel.build(solo, "stand")
    md = solo.modes["stand"]
    coords = IndependentCoordinates.of(mm.kin, md.partition)
    return mm, DynamicsData.of(mm.dm), md.partition, coords


def _closed(mm, part, q, u, h):
    return ClosureState(mm.kin, part, q.copy()).step(u, h)


def test_independent_coordinates_of_the_standing_humanoid(stand):
    mm, data, part, coords = stand
    groups = {b.name: b.group for b in coords.blocks}
    assert groups["h/pelvis.root"] == "se3"  # the floating base stays independent (#17)
    assert coords.n_u == 15 and sum(b.pos.size for b in coords.blocks) == 15
    assert sorted(np.concatenate([b.pos for b in coords.blocks]).tolist()) == list(range(15))


def test_reference_speed_rate_along_a_closed_motion(stand):
    """u̇_r is the time derivative of u_r = u_d − Λe along the measured closed motion (with
    the reference moving on its own closed motion)."""
    mm, data, part, coords = stand
    rng = np.random.default_rng(3)
    n = coords.n_u
    q0 = _closed(mm, part, part.q_ref, rng.uniform(-1, 1, n), 0.02)
    qd0 = _closed(mm, part, part.q_ref, rng.uniform(-1, 1, n), 0.02)
    u, ud = rng.uniform(-0.5, 0.5, (2, n))

    def state(h):
        q = _closed(mm, part, q0, u, h) if h else q0
        qd = _closed(mm, part, qd0, ud, h) if h else qd0
        T = composed_terms(mm, data, q, u)
        Td = composed_terms(mm, data, qd, ud)
        return tracking_state(coords, q, T.v, qd, Td.v, Td.edu)

    s0 = state(0.0)
    assert np.abs(s0.u - u).max() == 0.0
    fd = _richardson(lambda h: state(h).u_r, 2e-3)
    # closure corrector noise (1e-12) over h plus O(h⁴) truncation
    assert np.abs(fd - s0.udot_r).max() < 1e-7 * max(1.0, np.abs(s0.udot_r).max())
    fe = _richardson(lambda h: state(h).e, 2e-3)
    assert np.abs(fe - s0.e_dot).max() < 1e-8 * max(1.0, np.abs(s0.e_dot).max())


def test_commanded_force_at_the_reference_is_inverse_dynamics(stand):
    """On the reference (e = 0, s = 0) Q = Γ u̇_d + C u + g + D u: against the projected tree
    terms E_Tᵀ(M_T a + h_T + g_T) (Pinocchio's CRBA/RNEA, the second algorithm) + D u."""
    mm, data, part, coords = stand
    rng = np.random.default_rng(4)
    n = coords.n_u
    q = _closed(mm, part, part.q_ref, rng.uniform(-1, 1, n), 0.02)
    u, udot = rng.uniform(-0.5, 0.5, (2, n))
    T = composed_terms(mm, data, q, u)
    a_d = T.lift.E @ udot + T.edu
    ts = tracking_state(coords, q, T.v, q, T.v, a_d)
    assert np.abs(ts.e).max() < 1e-15 and np.abs(ts.s).max() < 1e-15
    Q = commanded_force(T, ts)
    G, h, g = projected_terms(mm, data, T)
    ref = G @ udot + h + g + T.D @ u
    # two double-precision algorithms: round-off relative to the largest term
    assert np.abs(Q - ref).max() <= 1e-11 * np.abs(ref).max()


@pytest.mark.parametrize("seed", [5, 6])
def test_closed_loop_storage_decays_at_twice_k_s(stand, seed):
    """Q applied exactly (Γ u̇ + C u + g + D u = Q) makes V = ½ sᵀΓs decay at −2 k_s V: with
    Γ̇ by Richardson differences along the motion, V̇ = sᵀΓṡ + ½ sᵀΓ̇s = −2 k_s V (the law's
    form: C acting on u_r and the skew identity). Replacing C u_r by C u breaks it."""
    mm, data, part, coords = stand
    rng = np.random.default_rng(seed)
    n = coords.n_u
    gains = TrackingGains()
    q = _closed(mm, part, part.q_ref, rng.uniform(-1, 1, n), 0.02)
    qd = _closed(mm, part, part.q_ref, rng.uniform(-1, 1, n), 0.02)
    u, ud, udd = rng.uniform(-0.5, 0.5, (3, n))
    T = composed_terms(mm, data, q, u)
    Td = composed_terms(mm, data, qd, ud)
    ts = tracking_state(coords, q, T.v, qd, Td.v, Td.lift.E @ udd + Td.edu, gains)
    Gdot = _richardson(lambda h: composed_terms(mm, data, _closed(mm, part, q, u, h), u).Gamma,
                       2e-4)
    V = 0.5 * ts.s @ T.Gamma @ ts.s

    def vdot(Q):
        udot = np.linalg.solve(T.Gamma, Q - T.C @ u - T.g - T.D @ u)
        return ts.s @ T.Gamma @ (udot - ts.udot_r) + 0.5 * ts.s @ Gdot @ ts.s

    Q = commanded_force(T, ts, gains)
    # Γ̇ by differences (1e-9 relative) against V's rate, O(k_s V)
    assert abs(vdot(Q) + 2 * gains.k_s * V) <= 1e-6 * 2 * gains.k_s * V
    wrong = Q - T.C @ ts.u_r + T.C @ u
    assert abs(vdot(wrong) + 2 * gains.k_s * V) > 1e-3 * 2 * gains.k_s * V


def test_planar_independent_joint_is_refused(tmp_path):
    """A partition whose independent joint is planar (v is not q̇, no group error here) is a
    clear TrackingError naming the joint and the types handled."""
    from rbc.compiler import compile_record
    from rbc.control.tracking import TrackingError
    from tests.sim.test_manifold import PLANAR_LOOP

    path = tmp_path / "planar_loop.yaml"
    path.write_text(PLANAR_LOOP)
    _, report = compile_record(path)
    parted = report.stages["rank"]
    with pytest.raises(TrackingError, match="'P' is planar.*revolute"):
        IndependentCoordinates.of(parted.model, parted.partitions[0])

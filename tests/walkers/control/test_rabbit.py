"""RABBIT under virtual-constraint feedback linearization walks on flat ground."""

import numpy as np
import pytest

from rbc.walkers.control.controllers import make_controller
from rbc.walkers.control.vc import Bezier, VirtualConstraints, vc_initial_state
from rbc.walkers.errors import WalkerError
from rbc.walkers.hybrid.registry import load_model
from rbc.walkers.hybrid.simulate import walk


def test_rabbit_fl_walks_20_strides_with_all_impact_checks():
    m = load_model("rabbit")
    ctrl = make_controller("fl", m, 0.0)
    x0 = vc_initial_state(ctrl, m.params["controller"]["initial_phase_rate"])
    res = walk(m, ctrl, 0.0, x0, 20, dt=1e-3)
    assert not res.fell, res.fall_reason
    assert len(res.strides) == 20
    for s in res.strides:
        assert s.impact.normal_ok and s.impact.cone_ok and s.impact.liftoff_ok
        assert s.length > 0.2
    # impact-invariant constraints: outputs stay at zero through every impact
    # (integration error only; 1e-6 rad is far below any visible gait deviation)
    y = np.array([ctrl.vc.outputs(x[:5], x[5:])[0] for x in res.x])
    assert np.abs(y).max() < 1e-6
    # the gait settles: stride durations converge (hybrid zero dynamics is 1-D and stable)
    d = np.array([s.duration for s in res.strides])
    assert abs(d[-1] - d[-2]) < 0.1 * abs(d[1] - d[0])


def test_fl_equals_explicit_decoupling_matrix():
    m = load_model("rabbit")
    ctrl = make_controller("fl", m, 0.02)
    rng = np.random.default_rng(0)
    q, qd = rng.uniform(-0.5, 0.5, 5), rng.uniform(-1, 1, 5)
    a, b = ctrl.accel(q, qd), ctrl.accel_decoupling(q, qd)
    # two factorizations of the same linear system, round-off on torques O(100 N m)
    np.testing.assert_allclose(a[0], b[0], atol=1e-10)
    np.testing.assert_allclose(a[1], b[1], atol=1e-9)
    # the closed loop obeys d2y/dt2 = -kp y - kd dy (round-off on accelerations O(10..100))
    y, dy, J, drift = ctrl.vc.outputs(q, qd)
    np.testing.assert_allclose(J @ a[0] - drift, -ctrl.kp * y - ctrl.kd * dy, atol=1e-9)


def test_bezier_derivatives_match_finite_differences():
    bz = Bezier(np.array([[0.1, 0.7, -0.3, 0.4, 0.2]]))
    s, h = 0.37, 1e-5
    v, d1, d2 = bz(s)
    # central differences: O(h^2) truncation, round-off eps/h^2 ~ 1e-6 for d2
    np.testing.assert_allclose(d1, (bz(s + h)[0] - bz(s - h)[0]) / (2 * h), atol=1e-8)
    np.testing.assert_allclose(d2, (bz(s + h)[0] - 2 * v + bz(s - h)[0]) / h**2, atol=1e-4)
    np.testing.assert_allclose(bz(0.0)[0], [0.1])  # endpoints interpolate
    np.testing.assert_allclose(bz(1.0)[0], [0.2])


def test_non_monotone_phase_is_rejected():
    with pytest.raises(WalkerError, match="monotone"):
        VirtualConstraints(np.eye(1, 2), np.array([1.0, 0.0]), 0.3, 0.3,
                           Bezier(np.zeros((1, 2))), ("y",))
    m = load_model("rabbit")
    with pytest.raises(WalkerError, match="cannot start"):
        vc_initial_state(make_controller("fl", m, 0.0), -1.0)
    x0 = vc_initial_state(make_controller("fl", m, 0.0), 1.0)
    x0[5:] *= -1  # walking backwards
    with pytest.raises(WalkerError, match="cannot start a stride"):
        walk(m, make_controller("fl", m, 0.0), 0.0, x0, 1)


@pytest.mark.slow
def test_rabbit_poincare_eigenvalue_is_hybrid_zero_dynamics_delta_squared():
    """Newton + FD Jacobian of the full 10-D Poincaré map vs. the closed-form HZD result:
    the restricted map is zeta -> delta^2 zeta - V_zero, so its eigenvalue is delta^2 with
    delta = sigma+ / sigma- the ratio of angular momenta about the stance contact across the
    impact (Westervelt et al. 2007, Thm. 5.3 / eq. (5.68)); the transverse eigenvalues are
    ~exp(-20 T) ~ 0 under the (s + 20)^2 output dynamics."""
    from rbc.walkers.api import find_gait
    from rbc.walkers.hybrid.impact import point_foot_impact, relabel
    from rbc.walkers.hybrid.model import angular_momentum

    m = load_model("rabbit")
    vc = make_controller("fl", m, 0.0).vc
    hd, hd1, _ = vc.shapes(1.0)
    qm = np.linalg.solve(np.vstack([vc.H0, vc.c]), np.append(hd, vc.theta_minus))
    J = vc.H0 - np.outer(hd1, vc.c / vc.dtheta)
    qdm = np.linalg.solve(np.vstack([J, vc.c]), np.append(np.zeros(4), 1.0))
    rep = point_foot_impact(m, qm, qdm)
    qp, qdp = relabel(m, qm, rep.qd_e[:5])
    delta = (angular_momentum(m, qp, qdp, np.zeros(2))
             / angular_momentum(m, qm, qdm, np.zeros(2)))
    fp = find_gait("rabbit", "fl", 0.0)
    ev = sorted(np.abs(fp.eigenvalues))
    # FD Jacobian (eps 1e-6) of a map computed to ~1e-12: eigenvalue error ~1e-6
    assert ev[-1] == pytest.approx(delta**2, abs=1e-5)
    assert ev[-2] < 1e-3
    assert fp.spectral_radius < 1

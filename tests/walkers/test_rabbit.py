"""RABBIT under virtual-constraint feedback linearization walks on flat ground."""

import numpy as np
import pytest

from rbc.walkers.controllers import make_controller
from rbc.walkers.errors import WalkerError
from rbc.walkers.registry import load_model
from rbc.walkers.simulate import walk
from rbc.walkers.vc import Bezier, VirtualConstraints, vc_initial_state


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
    # the closed loop obeys d2y/dt2 = -kp y - kd dy
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

"""Task charts: J_x = D_e Df_x N E against finite differences along closed motions, the
feedforward against the time derivative of the error, and the specification errors."""

from __future__ import annotations

import numpy as np
import pytest

from rbc.ir import spatial as sp
from rbc.model.closure import ClosureState
from rbc.model.partition import scales
from rbc.tasks.charts import Desired, TaskError, stack
from tests.tasks.conftest import dynamics, states

#: FD step [s] of the closed motion at unit-scale speeds, with one Richardson level (h, h/2):
#: O(h⁴) truncation (a centred difference alone left 4e-5 at a strongly curved Stewart
#: sample); the closure tolerance 1e-13 divided by h adds ≈ 1e-9.
H = 1e-4
#: relative tolerance: 1000× the closure-noise bound above.
TOL = 1e-6

CASES = [("excavator", ["bucket_tip"]), ("excavator", ["bucket_tip:xz"]),
         ("excavator", ["joint:boom_foot"]), ("excavator", ["bucket_tip:xz", "joint:slew"]),
         ("stewart", ["platform"]), ("stewart", ["platform:position"]),
         ("fivebar", ["tool:xy"])]


def _offset_desired(ch, model, q, rng) -> Desired:
    """A desired value near the task value at q (pose: a rotation of ~0.3 rad away)."""
    x = ch.value(model, q)
    numbers = rng.normal(size=ch.target_size) * 0.3
    far = ch.from_target(numbers)
    # move the target part of the way from x toward an arbitrary value (same representation)
    return ch.interpolate(x, far, 0.2, 0.0)


@pytest.mark.parametrize(("name", "spec"), CASES)
def test_chart_jacobian_matches_finite_differences(name, spec):
    dm, part = dynamics(name)
    model = dm.kin
    ch = stack(model, spec)
    rng = np.random.default_rng(5)
    sc = scales(model, part.length_scale).cols[part.independent]
    for q, E in states(name, 3):
        desired = _offset_desired(ch, model, q, rng)
        u = rng.standard_normal(part.independent.size) * sc
        ts = ch.state(model, q, E, desired)

        def e(h: float, q=q, u=u, desired=desired, E=E) -> np.ndarray:
            return ch.state(model, ClosureState(model, part, q).step(u, h), E, desired).e

        def centred(h: float) -> np.ndarray:
            return (e(h) - e(-h)) / (2 * h)

        fd = (4 * centred(H / 2) - centred(H)) / 3
        ref = ts.J @ u
        assert np.abs(fd - ref).max() <= TOL * max(1.0, np.abs(ref).max()), (spec, fd, ref)
        assert ts.e.shape == (ch.dim,) and ts.J.shape == (ch.dim, part.independent.size)


@pytest.mark.parametrize(("name", "spec"), [("stewart", ["platform"]),
                                            ("excavator", ["bucket_tip", "joint:slew"])])
def test_feedforward_is_minus_the_error_rate_of_the_target(name, spec):
    """At a fixed q, a moving desired value changes e_x at the rate −φ_d."""
    dm, part = dynamics(name)
    model = dm.kin
    ch = stack(model, spec)
    rng = np.random.default_rng(9)
    (q, E), = states(name, 1)
    x0 = ch.value(model, q)
    x1 = ch.interpolate(x0, ch.from_target(rng.normal(size=ch.target_size)), 0.1, 0.0).value

    def at(s: float):
        return ch.state(model, q, E, ch.interpolate(x0, x1, s, 1.0))

    fd = (at(0.3 + 1e-6).e - at(0.3 - 1e-6).e) / 2e-6
    np.testing.assert_allclose(fd, -at(0.3).feedforward, atol=1e-7)


def test_pose_error_is_the_log_map_and_decays_with_the_command():
    """e = [log(R R_dᵀ); p − p_d]; with J u = w the error rate is −K e."""
    dm, part = dynamics("stewart")
    model = dm.kin
    ch = stack(model, ["platform"])
    (q, E), = states("stewart", 1)
    x = ch.value(model, q)
    target = ch.from_target([*(x[:3] + [0.01, -0.02, 0.005]), 0.05, -0.02, 0.03])
    ts = ch.state(model, q, E, Desired(target, np.zeros(6)))
    np.testing.assert_allclose(ts.e[3:], x[:3] - target[:3], atol=1e-15)
    R = sp.rotation_from_quat(x[3:]) @ sp.rotation_from_quat(target[3:]).T
    np.testing.assert_allclose(ts.e[:3], sp.log3(R), atol=1e-15)
    K = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    u = np.linalg.solve(ts.J, ts.command(K))
    assert np.allclose(ts.J @ u - ts.feedforward, -K * ts.e, atol=1e-14)


def test_specification_errors_name_the_choices():
    dm, _ = dynamics("excavator")
    with pytest.raises(TaskError, match="did you mean 'bucket_tip'.*tasks: bucket_tip"):
        stack(dm.kin, ["bucket_tp"])
    with pytest.raises(TaskError, match="unknown chart 'xw'.*bucket_tip:xz"):
        stack(dm.kin, ["bucket_tip:xw"])
    with pytest.raises(TaskError, match="did you mean 'joint:boom_cyl'"):
        stack(dm.kin, ["joint:boom_cly"])
    with pytest.raises(TaskError, match="give a task"):
        stack(dm.kin, [])

"""Design model vs true plant: the controller only ever sees the design model."""

import numpy as np
import pytest

from rbc.walkers.control.learning import HierarchyController, hierarchy_gains
from rbc.walkers.control.vc import vc_initial_state
from rbc.walkers.environment.plant import Actuation, Mismatch, true_model
from rbc.walkers.environment.plant_sim import Scenario, walk_plant
from rbc.walkers.errors import WalkerError
from rbc.walkers.hybrid.model import FusedTerms, centrifugal, gravity, mass_matrix
from rbc.walkers.hybrid.registry import load_model


def test_true_model_scales_and_adds_payload_at_heaviest_link():
    m = load_model("rabbit")
    t = true_model(m, Mismatch(mass_scale=1.1, inertia_scale=0.8, payload=3.0))
    k = int(np.argmax(m.m))
    assert m.name == t.name and t.A.shape[0] == m.A.shape[0] + 1
    np.testing.assert_array_equal(t.A[-1], m.A[k])  # payload on the torso's centre of mass
    # sums of a handful of O(10 kg) values: rounding only
    assert t.m_total == pytest.approx(1.1 * m.m_total + 3.0, rel=1e-14)
    np.testing.assert_array_equal(t.I, m.I * 0.8)  # the same single multiplication
    # nominal mismatch leaves the dynamics bit-identical
    same = true_model(m, Mismatch())
    q = np.array([0.1, -0.2, 0.3, 0.05, -0.4])
    np.testing.assert_array_equal(mass_matrix(same, q), mass_matrix(m, q))
    assert Mismatch().nominal and not Mismatch(bias=1.0).nominal


def test_actuation_and_mismatch_validation():
    a = Actuation.from_mismatch(Mismatch(effectiveness=0.9, bias=(1.0, 2.0, 3.0, 4.0)), 4)
    np.testing.assert_array_equal(a(np.ones(4)), [1.9, 2.9, 3.9, 4.9])
    with pytest.raises(WalkerError, match="bias needs 1 or 4"):
        Actuation.from_mismatch(Mismatch(bias=(1.0, 2.0)), 4)
    with pytest.raises(WalkerError, match="effectiveness"):
        Mismatch(effectiveness=0.0)
    with pytest.raises(WalkerError, match="payload"):
        Mismatch(payload=-1.0)


def test_fused_terms_equal_reference_terms():
    m = load_model("rabbit")
    rng = np.random.default_rng(3)
    q, qd = rng.uniform(-1, 1, 5), rng.uniform(-2, 2, 5)
    D, mhg = FusedTerms(m, 0.05)(q, qd)
    # same formulas, cos(x) evaluated as sin(x + pi/2): a few ulp of O(10) entries
    np.testing.assert_allclose(D, mass_matrix(m, q), atol=1e-13)
    np.testing.assert_allclose(mhg, -centrifugal(m, q, qd) - gravity(m, q, 0.05), atol=1e-12)


def test_hierarchy_fl_is_the_model_file_feedback_linearization(ctx):
    lam, k = hierarchy_gains(ctx.kp, ctx.kd)
    # roots of s^2 + 40 s + 400 through a square root of ~0: a few ulp of 400 and 40
    assert lam * k == pytest.approx(ctx.kp, rel=1e-12)
    assert lam + k == pytest.approx(ctx.kd, rel=1e-12)
    h = HierarchyController(ctx)
    rng = np.random.default_rng(0)
    for _ in range(5):
        q, qd = rng.uniform(-0.5, 0.5, 5), rng.uniform(-1, 1, 5)
        # two factorizations of one linear system; torques O(100 N m): round-off
        np.testing.assert_allclose(h(0.0, q, qd), ctx.extra["fl"].accel(q, qd)[1], atol=1e-9)
    with pytest.raises(WalkerError, match="complex poles"):
        hierarchy_gains(400.0, 20.0)


def test_user_controller_receives_design_model_only(ctx):
    seen = []

    def factory(c):
        seen.append(c)
        fl = c.extra["fl"]
        return lambda t, q, qd: fl.accel(q, qd)[1]

    x0 = vc_initial_state(ctx.extra["fl"], 1.2)
    res = walk_plant(ctx, factory, Scenario(Mismatch(payload=5.0)), x0, 1)
    assert seen[0].model is ctx.model
    assert res.true.m_total == pytest.approx(ctx.model.m_total + 5.0)
    assert ctx.model.m_total == pytest.approx(32.0)  # RABBIT's published masses, unchanged
    with pytest.raises(WalkerError, match="valid choices: fl, adaptive"):
        walk_plant(ctx, "pid", Scenario(), x0, 1)


def test_plant_path_reproduces_builtin_fl_without_mismatch(ctx):
    """Nominal plant + sampled FL walks like the issue-7 simulator (ZOH vs. per-stage FL)."""
    from rbc.walkers.control.controllers import make_controller
    from rbc.walkers.hybrid.simulate import walk

    x0 = vc_initial_state(ctx.extra["fl"], 1.2)
    a = walk_plant(ctx, "fl", Scenario(), x0, 3)
    b = walk(ctx.model, make_controller("fl", ctx.model, 0.0), 0.0, x0, 3, dt=1e-3)
    assert not a.fell and len(a.strides) == 3
    for sa, sb in zip(a.strides, b.strides, strict=True):
        # zero-order hold of a 1 kHz controller vs. RK4-stage evaluation: O(dt) differences
        assert sa.duration == pytest.approx(sb.duration, abs=5e-3)
        assert sa.length == pytest.approx(sb.length, abs=1e-3)

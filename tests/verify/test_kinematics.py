"""The kinematic checks of rbc verify on the shipped records, and that they can fail."""

from __future__ import annotations

import numpy as np
import pytest

from rbc.ir import spatial as sp
from rbc.model.compiled import CompiledModel
from rbc.verify import kinematics as K
from rbc.verify.catalogue import catalogue
from rbc.verify.checks import make_check, report


def by_name(checks):
    return {c.name: c for c in checks}


@pytest.mark.slow
def test_stewart_acceptance(bundle):
    m = CompiledModel.from_bundle(bundle("stewart"))
    part = m.partitions["default"]
    c = by_name(K.run_kinematic_checks(m, part, samples=100))
    assert "100 samples" in c["closure.residual"].detail
    assert c["closure.residual"].value <= 1e-12
    assert c["jacobian.fd"].value <= 1e-7
    assert c["jacobian.sparsity"].passed
    assert c["lift.fd"].passed
    assert c["curvature.acceleration_residual"].value <= 1e-9
    assert c["curvature.without_term"].passed
    assert c["rank"].passed and "[30]" in c["rank"].detail
    # acceptance: at every sampled state the residual without Ė u is ≥ 1e-2 m/s²
    rng = np.random.default_rng(20260927)
    qs = K.sample_configurations(m, part, 5, rng).q
    assert min(K.acceleration_residuals(m, part, q, rng)[1] for q in qs) >= 1e-2


@pytest.mark.parametrize(("name", "partition"), [
    ("fourbar", "default"), ("slider_crank", "default"), ("fivebar", "default"),
    ("excavator", "joint_space"), ("excavator", "stroke")])
def test_shipped_records_pass(bundle, name, partition):
    m = CompiledModel.from_bundle(bundle(name))
    checks = K.run_kinematic_checks(m, m.partitions[partition], samples=20)
    assert [c.name for c in checks] == list(K.CHECK_NAMES)
    assert all(c.passed for c in checks), [c for c in checks if not c.passed]


def test_jacobian_check_detects_dropping_jl_inverse(bundle, monkeypatch):
    """Replacing J_l(ρ)⁻¹ by I (wrong away from closure, DESIGN §5) must fail jacobian.fd."""
    m = CompiledModel.from_bundle(bundle("fourbar"))
    q = m.partitions["default"].q_ref
    assert K.check_jacobian(m, [q], np.random.default_rng(0))[0].passed
    monkeypatch.setattr(sp, "left_jacobian_inverse", lambda delta: np.eye(6))
    assert not K.check_jacobian(m, [q], np.random.default_rng(0))[0].passed


def test_second_derivative_of_a_known_function():
    f = lambda t: np.array([np.sin(3 * t), np.exp(t)])  # noqa: E731
    dd, err = K.second_derivative(f, 0.2, 8)
    # exact f'' = (0, 1); the tableau reaches round-off ~1e-10 at these steps
    np.testing.assert_allclose(dd, [0.0, 1.0], atol=1e-9)
    assert err < 1e-8


def test_catalogue_and_report():
    names = catalogue()
    assert set(K.CHECK_NAMES) <= set(names)
    fail = make_check("x.y", 2.0, 1.0, "1")
    low = make_check("x.z", 2.0, 1.0, "1", lower_bound=True)
    nan = make_check("x.w", float("nan"), 1.0, "1")
    assert not fail.passed and low.passed and not nan.passed
    doc = report("b.h5", [fail, low])
    assert doc["passed"] is False
    assert set(doc["checks"][0]) == {"name", "value", "limit", "unit", "passed", "detail"}

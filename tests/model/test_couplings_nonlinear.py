"""Nonlinear holonomic couplings (issue 23 item 4): polynomial and tabulated cam profiles.

Independent checks: the profile evaluation against NumPy's polynomial class and SciPy's
``CubicHermiteSpline`` (values, slopes, curvatures); the closure rows and the curvature
``vᵀ D²γ v`` against finite differences of the residual inside ``rbc verify``'s kinematic
catalogue (``jacobian.fd``, ``curvature.acceleration_residual`` by Richardson differences of
ρ(t)); the reduced dynamics against the 50-digit KKT, Pinocchio and the maximal-coordinate
Newton–Euler references (each with the coupling row taken from the record); MJCF
``polycoef`` import and export.
"""

from __future__ import annotations

import functools
import math
from pathlib import Path

import mujoco
import numpy as np
import pytest
from numpy.polynomial import Polynomial
from scipy.interpolate import CubicHermiteSpline

from rbc.backends.mjcf_export import export_mjcf, polynomial_about_zero
from rbc.backends.mjcf_import import import_mjcf
from rbc.backends.record_writer import render_record
from rbc.compiler import compile_record
from rbc.errors import CompileError, RecordError
from rbc.ir.record import Profile
from rbc.ir.schema import parse_record_text
from rbc.model.dynamics import (
    DynamicsData,
    DynamicsModel,
    forward_dynamics,
    reduced_terms,
    tree_acceleration,
)
from rbc.model.kinematics import closure_jacobian
from rbc.model.profiles import hermite_terms, polynomial_terms
from rbc.verify.dynamics import run_dynamic_checks
from rbc.verify.kinematics import run_kinematic_checks

HERE = Path(__file__).parent / "records"
NONLINEAR = ("fourbar_polynomial_cut", "cam_follower")


@functools.cache
def compiled(name: str):
    _, report = compile_record(HERE / f"{name}.yaml")
    parted = report.stages["rank"]
    return parted.model, parted.partitions[0]


def test_polynomial_profile_against_numpy():
    coef, center = (0.3, -1.2, 0.7, 0.25, -0.05), 0.4
    p = Polynomial(coef)
    for x in np.linspace(-2, 3, 11):
        h, dh, d2h = polynomial_terms(coef, center, x)
        s = x - center
        # Horner vs NumPy's evaluation: both O(1e-15) relative for O(10) values
        assert abs(h - p(s)) <= 1e-13 and abs(dh - p.deriv()(s)) <= 1e-13
        assert abs(d2h - p.deriv(2)(s)) <= 1e-13
    expanded = polynomial_about_zero(coef, center)
    assert np.allclose(Polynomial(expanded)(np.array([0.1, 1.3])),
                       p(np.array([0.1, 1.3]) - center), atol=1e-13)


def test_table_profile_against_scipy():
    xk = (0.0, 0.3, 1.0, 1.4, 2.0)
    yk = (0.0, 0.2, -0.1, 0.4, 0.0)
    mk = (0.5, 0.0, 0.3, -1.0, 0.5)
    ref = CubicHermiteSpline(xk, yk, mk)
    for x in np.linspace(0.001, 1.999, 37):
        got = hermite_terms(xk, yk, mk, False, x)
        want = (ref(x), ref(x, 1), ref(x, 2))
        assert np.allclose(got, want, atol=1e-12)  # the same cubic, two evaluations
    # linear beyond the ends; periodic wraps (end values and slopes agree here)
    assert hermite_terms(xk, yk, mk, False, -1.0) == (-0.5, 0.5, 0.0)
    # (inside a segment: h'' jumps at the knots; wrapping by fmod costs a few ulps)
    assert np.allclose(hermite_terms(xk, yk, mk, True, 2.5),
                       hermite_terms(xk, yk, mk, True, 0.5), atol=1e-13)
    assert np.allclose(hermite_terms(xk, yk, mk, True, -1.5),
                       hermite_terms(xk, yk, mk, True, 0.5), atol=1e-13)


@pytest.mark.parametrize("name", NONLINEAR)
def test_verify_passes_with_nonlinear_couplings(name):
    model, part = compiled(name)
    assert not model.curvature_free
    checks = run_kinematic_checks(model, part, samples=6)
    checks += run_dynamic_checks(model, part, samples=3)
    by = {c.name: c for c in checks}
    for c in checks:
        assert c.passed, f"{name}: {c.name} = {c.value:.3g}: {c.detail}"
    # the curvature of the coupling row is real: without Ė u the accelerations break it
    assert by["curvature.without_term"].value >= by["curvature.without_term"].limit
    assert "not applicable" not in by["curvature.without_term"].detail
    assert "not applicable" not in by["curvature.omitted"].detail


def test_coupling_holds_at_the_acceleration_level():
    model, part = compiled("cam_follower")
    dm = DynamicsModel.build(model)
    data = DynamicsData.of(dm)
    q, u = part.q_ref, np.array([3.0])
    t = reduced_terms(dm, data, part, q, u, np.array([0.2]))
    a = tree_acceleration(t, forward_dynamics(dm, t))
    # F = h(A): F̈ = h'(A) Ä + h''(A) Ȧ² — with h from the record's table through SciPy
    prof = model.record.couplings[0].profile
    ref = CubicHermiteSpline(prof.x, prof.y, prof.slope)
    iA, iF = model.v_offset[model.edge("A")], model.v_offset[model.edge("F")]
    A = q[model.q_offset[model.edge("A")]]
    want = ref(A, 1) * a[iA] + ref(A, 2) * t.v[iA] ** 2
    assert abs(a[iF] - want) <= 1e-12 * max(1.0, abs(want))  # round-off of O(1) terms
    _, C, cv = closure_jacobian(model, q, t.v)
    assert abs(C[0] @ a + cv[0]) <= 1e-12


POLY_MJCF = """<mujoco model="polycam">
  <compiler angle="radian"/>
  <worldbody>
    <body name="crank">
      <inertial pos="0.1 0 0" mass="1" diaginertia="0.01 0.01 0.01"/>
      <joint name="a" type="hinge" axis="0 0 1" ref="0.2"/>
    </body>
    <body name="slider">
      <inertial pos="0 0 0" mass="1" diaginertia="0.01 0.01 0.01"/>
      <joint name="s" type="slide" axis="1 0 0" ref="0.05"/>
    </body>
  </worldbody>
  <equality>
    <joint name="cam" joint1="s" joint2="a" polycoef="0.01 0.1 -0.3 0.02 0"/>
  </equality>
  <actuator><motor name="m" joint="a"/></actuator>
</mujoco>
"""


def test_mjcf_polycoef_imports_as_a_polynomial_coupling(tmp_path):
    src = tmp_path / "polycam.xml"
    src.write_text(POLY_MJCF)
    record = parse_record_text(render_record(import_mjcf(src)), "polycam.yaml")
    (c,) = record.couplings
    assert c.type == "polynomial" and (c.joint, c.input) == ("s", "a")
    # MuJoCo: s − 0.05 = 0.01 + 0.1 (a − 0.2) − 0.3 (a − 0.2)² + 0.02 (a − 0.2)³
    for a in (-0.4, 0.2, 1.1):
        want = 0.05 + 0.01 + 0.1 * (a - 0.2) - 0.3 * (a - 0.2) ** 2 + 0.02 * (a - 0.2) ** 3
        assert abs(polynomial_terms(c.profile.coefficients, c.profile.center, a)[0]
                   - want) <= 1e-15
    # MuJoCo's own constraint violation at arbitrary (a, s) is our γ = s − h(a)
    m = mujoco.MjModel.from_xml_path(str(src))
    d = mujoco.MjData(m)
    for a, s_ in ((0.7, 0.3), (-0.5, 0.0)):
        d.qpos[:] = [a, s_]
        mujoco.mj_forward(m, d)
        gamma = s_ - polynomial_terms(c.profile.coefficients, c.profile.center, a)[0]
        assert abs(d.efc_pos[0] - gamma) <= 1e-12  # both evaluate the same quartic


def test_mjcf_export_writes_polycoef_and_refuses_tables(tmp_path):
    text = (HERE / "cam_follower.yaml").read_text()
    text = text[: text.index("couplings:")] + (
        "couplings:\n  - {name: cam_profile, type: polynomial, joint: F, input: A,\n"
        "     coefficients: [0.001, 0.004, 0.002, -0.0005], center: 0.3}\n")
    (tmp_path / "poly.yaml").write_text(text)
    _, report = compile_record(tmp_path / "poly.yaml")
    model, part = report.stages["rank"].model, report.stages["rank"].partitions[0]
    xml = export_mjcf(model, part).to_string()
    m = mujoco.MjModel.from_xml_string(xml)
    prof = model.record.couplings[0].profile
    want = polynomial_about_zero(prof.coefficients, prof.center)
    got = m.eq_data[0][:5]
    assert np.allclose(got[: len(want)], want, atol=1e-14)
    cam, cpart = compiled("cam_follower")
    with pytest.raises(CompileError, match="table"):
        export_mjcf(cam, cpart)


BAD = [
    ("self", "{name: c, type: polynomial, joint: a, input: a, coefficients: [0, 1]}",
     "relates joint 'a' to itself"),
    ("empty_poly", "{name: c, type: polynomial, joint: a, input: b, coefficients: []}",
     "no coefficients"),
    ("table_short", "{name: c, type: table, joint: a, input: b, x: [0], y: [0], slope: [0]}",
     "at least 2 knots"),
    ("linear_key_on_poly", "{name: c, type: polynomial, joint: a, input: b, "
     "coefficients: [0, 1], offset: 1}", "unknown key 'offset'"),
    ("unknown_input", "{name: c, type: polynomial, joint: a, input: z, coefficients: [0, 1]}",
     "unknown joint 'z'"),
]


@pytest.mark.parametrize(("coupling", "message"), [b[1:] for b in BAD],
                         ids=[b[0] for b in BAD])
def test_bad_nonlinear_couplings(coupling, message):
    text = f"""rbc: 1
name: bad
bodies: [{{name: g, fixed: true}}, {{name: l, mass: 1, inertia: [1, 1, 1, 0, 0, 0]}},
         {{name: k, mass: 1, inertia: [1, 1, 1, 0, 0, 0]}}]
joints: [{{name: a, type: revolute, parent: g, child: l, axis: [0, 0, 1]}},
         {{name: b, type: revolute, parent: g, child: k, axis: [0, 0, 1]}}]
couplings: [{coupling}]
"""
    with pytest.raises(RecordError, match=message):
        parse_record_text(text, "bad.yaml")


def test_profile_is_plain_data():
    p = Profile("polynomial", coefficients=(1.0, 2.0))
    assert polynomial_terms(p.coefficients, p.center, 2.0) == (5.0, 2.0, 0.0)
    assert math.isclose(hermite_terms((0.0, 1.0), (0.0, 1.0), (1.0, 1.0), False, 0.5)[0], 0.5)

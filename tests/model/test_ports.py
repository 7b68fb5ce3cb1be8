"""General actuator ports (issue 23 items 1-2): distance, profile and velocity ports.

Independent checks: the same cylinder written as a barrel/rod prismatic pair of massless
bodies (a loop closed by the rank analysis, the port a joint coordinate) and written only by
its two attachment points (no loop, ℓ = |p_b − p_a|) must give the same actuator map and
reduced dynamics; every port's Jacobian against finite differences of its displacement
along the closure manifold; virtual power ``uᵀ τ_r = fᵀ ℓ̇``; MuJoCo's spatial tendon
(moment arm and length) against ``J_ℓ`` and ℓ.
"""

from __future__ import annotations

import functools
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from rbc.compiler import compile_record
from rbc.errors import RecordError
from rbc.ir.schema import parse_record_text
from rbc.model.closure import ClosureState
from rbc.model.dynamics import DynamicsData, DynamicsModel, forward_dynamics, reduced_terms
from rbc.model.interfaces import (
    PortGeometryError,
    actuator_map,
    distance_port,
    port_jacobian,
    port_state,
    port_unit,
    port_values,
    ports,
)
from rbc.model.partition import lift
from rbc.model.solve import solve_named

HERE = Path(__file__).parent / "records"


@functools.cache
def compiled(name: str, partitions: tuple = ()):
    _, report = compile_record(HERE / f"{name}.yaml", partitions=partitions)
    parted = report.stages["rank"]
    parts = {p.name: p for p in parted.partitions}
    return replace(parted.model, partitions=parts), parts


def _state(model, part, theta: float) -> np.ndarray:
    """The closed configuration with the boom at ``foot = theta``."""
    return solve_named(model, part.name, {"foot": theta}).q


@pytest.mark.parametrize("theta", [-0.9, -0.5, -0.1, 0.3])
def test_distance_port_is_the_massless_cylinder_pair(theta):
    pair, pp = compiled("boom_cylinder_pair", (("js", ("foot",)),))
    dist, dp = compiled("boom_cylinder_distance")
    part_a, part_b = pp["js"], dp["default"]
    qa, qb = _state(pair, part_a, theta), _state(dist, part_b, theta)
    u, f = np.array([0.7]), np.array([23456.0])
    out = []
    for model, part, q in ((pair, part_a, qa), (dist, part_b, qb)):
        dm = DynamicsModel.build(model)
        data = DynamicsData.of(dm)
        t = reduced_terms(dm, data, part, q, u, f)
        out.append((actuator_map(model, t.lifted.E, q), t.M, t.h, t.tau,
                    forward_dynamics(dm, t), port_values(model, q)))
    for name, xa, xb in zip(("L", "M_r", "h_r", "tau_r", "udot", "ell"), *out, strict=True):
        # both are exact (loop closed to 1e-13, analytic Jacobians): round-off of O(1e4)
        # efforts and O(1e2) inertias leaves ~1e-12 relative
        scale = max(1.0, float(np.abs(xb).max()))
        assert np.abs(xa - xb).max() <= 1e-12 * scale, (name, xa, xb)


def manifold_rate(model, part, fn, q, u, h=1e-5):
    """d/dt fn(q(t)) at q along the lift with independent speeds u (centred differences of
    two closed motion steps, each corrected to 1e-13)."""
    plus = ClosureState(model, part, q.copy()).step(u, h)
    minus = ClosureState(model, part, q.copy()).step(-u, h)
    return (fn(plus) - fn(minus)) / (2 * h)


PROFILE_RECORD = """
rbc: 1
name: profile_port
bodies:
  - {name: ground, fixed: true}
  - {name: crank, mass: 1, com: [0.5, 0, 0], inertia: [0.001, 0.08, 0.08, 0, 0, 0]}
  - {name: slider, mass: 2, inertia: [0.01, 0.01, 0.01, 0, 0, 0]}
joints:
  - {name: knee, type: revolute, parent: ground, child: crank, axis: [0, 0, 1], initial: 0.3}
  - {name: slide, type: prismatic, parent: ground, child: slider, axis: [1, 0, 0],
     initial: 0.1}
actuators:
  - name: linkage_motor
    profile: {joint: knee, type: polynomial, coefficients: [0.2, 1.5, -0.4, 0.05],
              center: 0.1}
  - name: cam_drive
    profile: {joint: slide, type: table, x: [-1, 0, 0.5, 1.5], y: [0, 0.3, 0.45, 1.2],
              slope: [0.2, 0.4, 0.5, 0.9]}
    unit: rad
  - {name: belt, velocity: {knee: 0.5, slide: 2.0}, effort: {knee: 0.5, slide: 2.0},
     unit: rad}
"""


def _profile_model():
    path = Path("/tmp") / "rbc_test_profile_port.yaml"
    path.write_text(PROFILE_RECORD)
    _, report = compile_record(path)
    parted = report.stages["rank"]
    return parted.model, parted.partitions[0]


@pytest.mark.parametrize("record", ["boom_cylinder_distance", "profile"])
def test_port_jacobian_is_the_rate_of_the_displacement(record):
    if record == "profile":
        model, part = _profile_model()
    else:
        model, parts = compiled(record)
        part = parts["default"]
    rng = np.random.default_rng(20260927)
    for _ in range(3):
        q = ClosureState(model, part, part.q_ref.copy()).step(
            rng.normal(size=part.independent.size), 0.2)
        u = rng.normal(size=part.independent.size)
        ell, J = port_state(model, q)
        L = actuator_map(model, lift(model, part, q).E, q)
        fd = manifold_rate(model, part, lambda x: port_values(model, x), q, u)
        held = np.isfinite(ell)  # a velocity port has no displacement to differentiate
        # centred differences at h = 1e-5 of O(1) curvature: truncation ~1e-10
        assert np.allclose((L @ u)[held], fd[held], atol=1e-8)
        assert np.allclose(J @ lift(model, part, q).E, L)


def test_profile_and_velocity_ports_do_virtual_power():
    model, part = _profile_model()
    dm = DynamicsModel.build(model)
    data = DynamicsData.of(dm)
    q = part.q_ref
    u = np.array([0.3, -1.1])
    f = np.array([2.0, -3.0, 5.0])
    t_f = reduced_terms(dm, data, part, q, u, f)
    t_0 = reduced_terms(dm, data, part, q, u)
    L = actuator_map(model, t_f.lifted.E, q)
    # the ports' share of τ_r does power fᵀ ℓ̇ (all efforts O(1): round-off)
    assert abs(u @ (t_f.tau - t_0.tau) - f @ (L @ u)) <= 1e-12
    ell = port_values(model, q)
    assert np.isnan(ell[2]) and np.isfinite(ell[:2]).all()
    assert port_unit(model, 1) == ("rad", "N·m") and port_unit(model, 0) == ("rad", "N·m")
    pm = ports(model)
    with pytest.raises(ValueError, match="depend on the configuration"):
        _ = pm.jacobian  # a property: reading it raises
    with pytest.raises(ValueError, match="depend"):
        port_jacobian(model)


def test_distance_port_degenerate_and_units():
    model, parts = compiled("boom_cylinder_distance")
    assert port_unit(model, 0) == ("m", "N")
    assert ports(model).kinds == ("distance",)
    with pytest.raises(PortGeometryError, match="coincide"):
        distance_port(np.zeros(3), np.zeros(3), np.zeros((3, 1)), np.zeros((3, 1)))


def test_mujoco_spatial_tendon_matches_the_distance_port():
    import mujoco

    from rbc.backends.mjcf_export import export_mjcf

    model, parts = compiled("boom_cylinder_distance")
    part = parts["default"]
    q = _state(model, part, -0.3)
    m = mujoco.MjModel.from_xml_string(
        export_mjcf(model, replace(part, q_ref=q)).to_string())
    d = mujoco.MjData(m)
    mujoco.mj_resetDataKeyframe(m, d, 0)
    mujoco.mj_forward(m, d)
    ell, J = port_state(model, q)
    assert abs(d.actuator_length[0] - ell[0]) <= 1e-12  # both exact geometry [m]
    # MuJoCo's moment arm d(length)/d(qpos) of the hinge (the same axis and sense as foot)
    moment = np.zeros((m.nu, m.nv))
    mujoco.mju_sparse2dense(moment, d.actuator_moment, d.moment_rownnz, d.moment_rowadr,
                            d.moment_colind)
    assert abs(moment[0, 0] - J[0, 0]) <= 1e-12 and J[0, 0] != 0.0


BAD = [
    ("two_ports", "joint: a, distance: {a: {body: g}, b: {body: l}}",
     "exactly one port definition"),
    ("same_body", "distance: {a: {body: l}, b: {body: l, xyz: [1, 0, 0]}}",
     "both ends are on body 'l'"),
    ("unknown_body", "distance: {a: {body: g}, b: {body: lnk}}", "unknown body 'lnk'"),
    ("profile_drive_data", "profile: {joint: a, type: polynomial, coefficients: [0, 1]}, "
     "rotor_inertia: 0.1", "rotor_inertia on a profile port is not supported"),
    ("table_not_increasing", "profile: {joint: a, type: table, x: [0, 0], y: [0, 1], "
     "slope: [1, 1]}", "x is not strictly increasing"),
    ("table_periodic_open", "profile: {joint: a, type: table, x: [0, 1], y: [0, 1], "
     "slope: [1, 1], periodic: true}", "a periodic table ends where it starts"),
    ("velocity_unknown", "velocity: {a.wx: 1}", "unknown velocity coordinate 'a.wx'"),
    ("velocity_dual", "velocity: {a: 1.0}, effort: {a: 2.0}",
     "is not the velocity coefficient 1.0"),
    ("unit_on_joint", "joint: a, unit: m", "unit follows from its geometry"),
]


@pytest.mark.parametrize(("port", "message"), [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_ports(port, message):
    text = f"""rbc: 1
name: bad
bodies: [{{name: g, fixed: true}}, {{name: l, mass: 1, inertia: [1, 1, 1, 0, 0, 0]}}]
joints: [{{name: a, type: revolute, parent: g, child: l, axis: [0, 0, 1]}}]
actuators: [{{name: m, {port}}}]
"""
    with pytest.raises(RecordError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_record_text(text, "bad.yaml")

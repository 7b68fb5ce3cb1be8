"""Rolling constraints (issue 23 item 7): nonholonomic rows on top of the holonomic reduction.

Independent checks: the rows against finite differences of the contact point's material
velocity, their rate ``Ȧ v`` against finite differences of ``A v`` along the motion, the
projected dynamics against the 50-digit KKT solve with the rolling rows appended, the
upright rolling disk's tilt frequency and stability threshold (closed form: Routh), energy
conservation of the rolling disk, the same disk on a free joint (three rows, the normal one
active) against the disk held on the floor by its joints (two active rows), and the
differential-drive vehicle's closed-form inertia and circular motion under constant wheel
rates.
"""

from __future__ import annotations

import functools
from dataclasses import replace

import numpy as np
import pytest

from rbc.compiler import compile_record
from rbc.errors import CompileError, RecordError
from rbc.ir.schema import parse_record_text
from rbc.model import rolling as ro
from rbc.model.dynamics import DynamicsData, DynamicsModel, tree_terms
from rbc.model.kinematics import body_poses
from rbc.verify import kkt50
from rbc.verify import rolling as rolling_checks
from tests.conftest import RECORDS

G = 9.81
# the disk of records/rolling_disk.yaml: mass, radius, axial and diametral moments
M_D, A_R, C_AX, A_DI = 1.0, 0.1, 0.005, 0.0025

FREE_DISK = """
rbc: 1
name: free_disk
gravity: [0, 0, -9.81]
bodies:
  - {name: floor, fixed: true}
  - {name: disk, mass: 1.0, inertia: [0.0025, 0.005, 0.0025, 0, 0, 0]}
joints:
  - {name: F, type: free, parent: floor, child: disk, initial: [0, 0, 0.1, 1, 0, 0, 0]}
rolling:
  - {name: rim, wheel: disk, radius: 0.1, axis: [0, 1, 0]}
"""


@functools.cache
def _compiled(path: str):
    _, report = compile_record(path)
    parted = report.stages["rank"]
    parts = {p.name: p for p in parted.partitions}
    model = replace(parted.model, partitions=parts)
    part = parts["default"]
    dm = DynamicsModel.build(model)
    return model, part, dm, ro.rolling_partition(model, part)


def _text_model(tmp_path, text: str, name: str = "r.yaml"):
    path = tmp_path / name
    path.write_text(text)
    return _compiled(str(path))


def disk():
    return _compiled(str(RECORDS / "rolling_disk.yaml"))


def vehicle():
    return _compiled(str(RECORDS / "diff_drive.yaml"))


def _random_state(model, part, rp, rng, spread=0.4):
    q = model.integrate(part.q_ref, spread * rng.normal(size=model.nv))
    return q, rng.normal(size=rp.independent.size)


def _disk_state(model, theta, spin, yaw_rate=0.0, tilt_rate=0.0):
    """The chain disk at tilt theta with w = (yaw rate, tilt rate, spin rate)."""
    q = np.array(model.partitions["default"].q_ref)
    q[model.q_slice(model.edge("T"))] = theta
    return q, np.array([yaw_rate, tilt_rate, spin])


# --------------------------------------------------------------------------- record


def test_record_errors_name_the_field():
    base = (RECORDS / "diff_drive.yaml").read_text()
    cases = [
        ("wheel: wheel_l, radius: 0.1", "wheel: wheel_x, radius: 0.1", "rolling[0].wheel",
         "unknown body 'wheel_x'"),
        ("wheel: wheel_l, radius: 0.1", "wheel: floor, radius: 0.1", "rolling[0].wheel",
         "fixed to the world"),
        ("wheel: wheel_l, radius: 0.1", "wheel: wheel_l, radius: -0.1", "rolling[0].radius",
         "> 0"),
        ("{name: left, wheel: wheel_l, radius: 0.1, axis: [0, 1, 0]}",
         "{name: left, wheel: wheel_l, radius: 0.1, axis: [0, 0, 0]}", "rolling[0].axis",
         "zero axis"),
        ("{name: left, wheel: wheel_l, radius: 0.1, axis: [0, 1, 0]}",
         "{name: left, wheel: wheel_l, radius: 0.1, axis: [0, 1, 0], slip: 0}",
         "rolling[0].slip", "unknown key"),
        ("{name: right,", "{name: left,", "rolling[1].name", "duplicate name"),
        ("{name: left, wheel: wheel_l, radius: 0.1, axis: [0, 1, 0]}",
         "{name: left, wheel: wheel_l, axis: [0, 1, 0]}", "rolling[0].radius",
         "missing required field"),
    ]
    for old, new, where, what in cases:
        text = base.replace(old, new, 1)
        assert text != base
        with pytest.raises(RecordError) as err:
            parse_record_text(text, "v.yaml")
        msg = str(err.value)
        assert where in msg and what in msg and "v.yaml" in msg, msg


def test_record_defaults_and_normalisation():
    rec = parse_record_text((RECORDS / "diff_drive.yaml").read_text().replace(
        "axis: [0, 1, 0]}\n  - {name: right", "axis: [0, 2, 0], normal: [0, 0, 3]}\n"
        "  - {name: right"))
    w = rec.rolling[0]
    assert w.axis == (0.0, 1.0, 0.0) and w.normal == (0.0, 0.0, 1.0)
    assert w.center == (0.0, 0.0, 0.0) and w.height == 0.0


def test_render_round_trip():
    from rbc.ir.render import record_yaml

    rec = parse_record_text((RECORDS / "diff_drive.yaml").read_text())
    back = parse_record_text(record_yaml(rec))
    assert back.rolling == rec.rolling


def test_wheel_off_the_ground_is_a_compile_error(tmp_path):
    text = (RECORDS / "diff_drive.yaml").read_text().replace(
        "{name: left, wheel: wheel_l, radius: 0.1,", "{name: left, wheel: wheel_l, radius: 0.12,")
    path = tmp_path / "gap.yaml"
    path.write_text(text)
    with pytest.raises(CompileError, match=r"rolling 'left'.*does not touch the ground.*gap"):
        compile_record(path)


# --------------------------------------------------------------------------- rows and rates


@pytest.mark.parametrize("which", ["disk", "vehicle", "free"])
def test_rows_and_rate_against_finite_differences(which, tmp_path):
    model, part, dm, rp = {"disk": disk, "vehicle": vehicle,
                           "free": lambda: _text_model(tmp_path, FREE_DISK)}[which]()
    data = DynamicsData.of(dm)
    rng = np.random.default_rng(20260927)
    for _ in range(4):
        q = model.integrate(part.q_ref, 0.3 * rng.normal(size=model.nv))
        v = rng.normal(size=model.nv)  # any motion, on the constraint or not
        # central differences at h = 1e-6: error ~ h² |v|³ L + 1e-16 L / h ≈ 1e-10
        err, scale = rolling_checks.rows_fd(model, q, v)
        assert err < 1e-8 * max(1.0, scale), which
        err, scale = rolling_checks.drift_fd(dm, data, q, v)
        assert err < 1e-7 * max(1.0, scale), which


def test_verify_and_inspect_report_rolling(tmp_path, capsys):
    import json

    from rbc.cli.main import main

    bundle = tmp_path / "dd.h5"
    assert main(["compile", str(RECORDS / "diff_drive.yaml"), "-o", str(bundle)]) == 0
    out = tmp_path / "v.json"
    assert main(["verify", str(bundle), "--dynamics", "--dynamics-samples", "8",
                 "--json", str(out)]) == 0
    checks = {c["name"]: c for c in json.loads(out.read_text())["checks"]}
    for name in ("rolling.rows.fd", "rolling.drift.fd", "dynamics.delta_a.rolling_kkt50"):
        assert checks[name]["passed"] and checks[name]["value"] is not None, name
    capsys.readouterr()
    assert main(["inspect", str(bundle), "--json"]) == 0
    rolling = json.loads(capsys.readouterr().out)["rolling"]
    assert rolling["wheels"] == ["left", "right"] and rolling["rows"] == 6
    assert rolling["partitions"] == [{"name": "default", "rank": 3, "independent_speeds":
                                      ["L", "R"], "n_independent": 2}]
    assert main(["inspect", str(bundle)]) == 0
    assert "2 rolling-independent speeds (L, R)" in capsys.readouterr().out
    # exports refuse, and leave nothing behind
    xml = tmp_path / "dd.xml"
    assert main(["compile", str(RECORDS / "diff_drive.yaml"), "-o", str(tmp_path / "b2.h5"),
                 "--mjcf", str(xml)]) == 2
    assert "rolling constraints" in capsys.readouterr().err
    assert not xml.exists() and not (tmp_path / "b2.h5").exists()


@pytest.mark.parametrize("backend", ["reduced", "mujoco", "pinocchio"])
def test_plants_and_exports_refuse_rolling(backend):
    from rbc.backends.pinocchio import PinocchioExportError, write_pinocchio
    from rbc.sim.backends import BackendError, backend_class

    model, part, _, _ = vehicle()
    with pytest.raises(BackendError, match="rolling constraints"):
        backend_class(backend).check(model, part)
    if backend == "pinocchio":
        with pytest.raises(PinocchioExportError, match="rolling"):
            write_pinocchio(model, part, "/nonexistent/never-written")


def test_partitions():
    model, part, _, rp = disk()
    assert rp.rank == 2 and rp.names == ("P.wz", "T", "S")  # two tangential rows
    model, part, _, rp = vehicle()
    assert rp.rank == 3 and rp.names == ("L", "R")  # the lateral rows coincide


# --------------------------------------------------------------------------- dynamics


@pytest.mark.parametrize("which", ["disk", "vehicle", "free", "offset", "skid"])
def test_dynamics_against_kkt50(which, tmp_path):
    vtext = (RECORDS / "diff_drive.yaml").read_text()
    makers = {
        "disk": disk, "vehicle": vehicle,
        "free": lambda: _text_model(tmp_path, FREE_DISK),
        # centre of mass 0.15 m ahead of the axle: Coriolis terms in the rolling layer
        "offset": lambda: _text_model(tmp_path, vtext.replace(
            "mass: 10.0\n", "mass: 10.0\n    com: [0.15, 0, 0.05]\n")),
        # four wheels, each side's two chained (linear couplings: E ≠ I), 12 rows of rank 4
        "skid": lambda: _text_model(tmp_path, _skid_steer()),
    }
    model, part, dm, rp = makers[which]()
    rng = np.random.default_rng(7)
    n_act = len(model.record.actuators)
    for _ in range(3):
        q, w = _random_state(model, part, rp, rng)
        f = rng.normal(size=n_act) if n_act else None
        # 50-digit reference on double rows: the projection's round-off (cond ~ 10)
        data = DynamicsData.of(dm)
        p = kkt50.problem(dm, data, q, rp_u(model, part, dm, rp, q, w), part.independent, f)
        assert np.abs(ro.rolling_rows(model, q)[1] @ p.v).max() < 1e-12  # v* rolls too
        assert rolling_checks.delta_a_kkt50(dm, data, part, rp, q, w, f) < 1e-12, which


def rp_u(model, part, dm, rp, q, w):
    return ro.rolling_lift(model, part, rp, q).N @ w


def _skid_steer() -> str:
    text = (RECORDS / "diff_drive.yaml").read_text()
    wheels = ""
    joints = ""
    rolling = ""
    for side, y in (("l", 0.25), ("r", -0.25)):
        wheels += (f"  - name: rear_{side}\n    mass: 0.5\n"
                   "    inertia: [0.00125, 0.0025, 0.00125, 0, 0, 0]\n")
        joints += (f"  - {{name: RR{side}, type: revolute, parent: chassis, child: rear_{side}, "
                   f"parent_frame: {{xyz: [-0.4, {y}, 0.1]}}, axis: [0, 1, 0]}}\n")
        rolling += (f"  - {{name: rear_{side}, wheel: rear_{side}, radius: 0.1, "
                    "axis: [0, 1, 0]}\n")
    text = text.replace("joints:\n", wheels + "joints:\n", 1)
    text = text.replace("actuators:\n", joints + "actuators:\n", 1)
    couplings = ("couplings:\n  - {name: chain_l, type: linear, terms: {L: 1, RRl: -1}}\n"
                 "  - {name: chain_r, type: linear, terms: {R: 1, RRr: -1}}\n")
    return text.replace("rolling:\n", couplings + "rolling:\n", 1) + rolling


def test_skid_steer_goes_straight(tmp_path):
    model, part, dm, rp = _text_model(tmp_path, _skid_steer(), "skid.yaml")
    assert rp.rank == 4 and rp.independent.size == 1  # no turning without slip


def test_upright_disk_tilt_frequency_closed_form():
    """Linearised about upright rolling at spin rate W: the tilt θ and the yaw rate obey
    (A + m a²) θ̈ = m g a θ − (C + m a²) W ψ̇ and A ψ̈ = C W θ̇ (Routh), so
    λ² = −[C (C + m a²) W² − A m g a] / [A (A + m a²)] (oscillation when W² > g / (3a))."""
    model, part, dm, rp = disk()
    data = DynamicsData.of(dm)
    T = model.q_slice(model.edge("T")).start

    def rates(x, W):  # x = (θ, ψ̇, θ̇) → (θ̇, ψ̈, θ̈)
        q, w = _disk_state(model, x[0], W, x[1], x[2])
        wd = ro.forward_dynamics(ro.rolling_terms(dm, data, part, rp, q, w))
        return np.array([x[2], wd[0], wd[1]])

    assert model.q_slice(model.edge("T")).start == T
    for W in (3.0, 5.0, 8.0, 20.0):
        eps = 1e-6
        J = np.column_stack([(rates(eps * e, W) - rates(-eps * e, W)) / (2 * eps)
                             for e in np.eye(3)])
        lam2 = np.sort_complex(np.linalg.eigvals(J) ** 2)
        ref = -(C_AX * (C_AX + M_D * A_R ** 2) * W ** 2 - A_DI * M_D * G * A_R) / (
            A_DI * (A_DI + M_D * A_R ** 2))
        nonzero = lam2[np.argmax(np.abs(lam2))]
        # central differences of a smooth map: ~1e-9 relative
        assert abs(nonzero - ref) < 1e-6 * abs(ref), (W, nonzero, ref)
        assert (ref < 0) == (W ** 2 > G / (3 * A_R))


def _energy(model, dm, data, q, v):
    tt = tree_terms(dm, data, q, v)
    vt = v[: model.nv_tree]
    poses = body_poses(model, q)
    pot = -sum(b.mass * np.dot(model.record.gravity, poses[i].act(np.array(b.com)))
               for i, b in enumerate(model.record.bodies))
    return 0.5 * vt @ tt.M @ vt + pot


def test_rolling_disk_conserves_energy():
    model, part, dm, rp = disk()
    data = DynamicsData.of(dm)
    q, w = _disk_state(model, 0.3, 15.0, yaw_rate=2.0, tilt_rate=-0.5)
    e0 = _energy(model, dm, data, q, ro.rolling_terms(dm, data, part, rp, q, w).base.v)
    h = 2e-3
    for _ in range(250):
        q, w = ro.step(dm, data, part, rp, q, w, h)
    terms = ro.rolling_terms(dm, data, part, rp, q, w)
    e1 = _energy(model, dm, data, q, terms.base.v)
    # RK4 at h = 2 ms over 0.5 s: local error ~ h⁵ |w|⁵-scaled, measured 1e-10 relative
    assert abs(e1 - e0) < 1e-8 * abs(e0)
    assert np.abs(terms.lift.D @ terms.u).max() < 1e-12  # the contact point stays at rest


def test_free_disk_moves_as_the_disk_held_on_the_floor(tmp_path):
    """Three rows (the normal one is the gap rate) on a free joint vs two rows on the joints
    that hold the disk on the floor: one mechanism, the same centre trajectory."""
    model, part, dm, rp = disk()
    data = DynamicsData.of(dm)
    fm, fpart, fdm, frp = _text_model(tmp_path, FREE_DISK, "free.yaml")
    fdata = DynamicsData.of(fdm)
    assert frp.rank == 3 and frp.independent.size == 3
    q, w = _disk_state(model, 0.0, 12.0, yaw_rate=0.0, tilt_rate=0.8)
    # the free disk at the same pose and velocity: choose w_f so that its disk twist matches
    b = model.record.body_index()["disk"]
    fb = fm.record.body_index()["disk"]
    T0 = body_poses(model, q)[b]
    qf = np.array(fpart.q_ref)
    qf[:3] = T0.translation
    import pinocchio as pin

    quat = pin.Quaternion(T0.rotation)
    qf[3:7] = [quat.w, quat.x, quat.y, quat.z]
    from rbc.model.kinematics import frame_jacobian

    V = frame_jacobian(model, q, b, pin.SE3.Identity())[1] @ ro.rolling_terms(
        dm, data, part, rp, q, w).base.v
    fl = ro.rolling_lift(fm, fpart, frp, qf)
    Jf = frame_jacobian(fm, qf, fb, pin.SE3.Identity())[1] @ fpart_E(fm, fpart, qf) @ fl.N
    wf = np.linalg.lstsq(Jf, V, rcond=None)[0]
    assert np.allclose(Jf @ wf, V, atol=1e-12)
    h = 1e-3
    for _ in range(300):
        q, w = ro.step(dm, data, part, rp, q, w, h)
        qf, wf = ro.step(fdm, fdata, fpart, frp, qf, wf, h)
    c = body_poses(model, q)[b].translation
    cf = body_poses(fm, qf)[fb].translation
    # two fourth-order integrations of one motion (0.3 s, h = 1 ms): measured 2e-11 m apart
    # (halving h divides it by 16; plain q ⊕ h Σ b_i v_i on the free joint left 4e-6 m)
    assert np.allclose(c, cf, atol=1e-9), c - cf
    assert abs(ro.contacts(fm, qf)[0].gap) < 1e-12  # the gap, integrated, stays closed


def fpart_E(model, part, q):
    from rbc.model.partition import lift

    return lift(model, part, q).E


def test_vehicle_closed_form_inertia_and_circle():
    model, part, dm, rp = vehicle()
    data = DynamicsData.of(dm)
    r, b = 0.1, 0.5
    m_tot = 10.0 + 2 * 0.5
    I_z = 0.5 + 2 * (0.00125 + 0.5 * (b / 2) ** 2)  # chassis + wheels' diametral + offset
    I_a = 0.0025
    M_ref = (m_tot * r ** 2 / 4 * np.ones((2, 2)) + I_z * r ** 2 / b ** 2
             * np.array([[1, -1], [-1, 1]]) + I_a * np.eye(2))
    rng = np.random.default_rng(3)
    for _ in range(3):
        q, w = _random_state(model, part, rp, rng, spread=2.0)
        f = rng.normal(size=2)
        t = ro.rolling_terms(dm, data, part, rp, q, w, f)
        assert np.allclose(t.M, M_ref, rtol=1e-13, atol=1e-15)
        assert np.abs(t.h).max() < 1e-13  # COM on the axle: no velocity terms
        assert np.allclose(t.tau, f, atol=1e-13)  # wheel torques act on the wheel rates
    # constant wheel rates (no torque) drive a circle of radius (b/2)(φ_r + φ_l)/(φ_r − φ_l)
    wl, wr = 4.0, 6.0
    v, om = r * (wl + wr) / 2, r * (wr - wl) / b
    q, w = np.array(part.q_ref), np.array([wl, wr])
    h, n = 5e-3, 400
    for _ in range(n):
        q, w = ro.step(dm, data, part, rp, q, w, h)
    t_end = h * n
    base = model.q_slice(model.edge("base"))
    x, y, c, s = q[base]
    R = v / om
    assert np.allclose(w, [wl, wr], atol=1e-12)
    # RK4 at 5 ms on a circle traversed at 2π·0.08 rad/s: ~1e-11 m
    assert np.allclose([x, y], [R * np.sin(om * t_end), R * (1 - np.cos(om * t_end))],
                       atol=1e-9)
    assert np.isclose(np.arctan2(s, c), om * t_end, atol=1e-10)


def test_vehicle_contact_forces_are_the_centripetal_force():
    """Turning at constant wheel rates, the wheels' lateral contact forces sum to m v ω
    towards the centre (the COM is on the axle; gravity is carried by the planar joint)."""
    model, part, dm, rp = vehicle()
    data = DynamicsData.of(dm)
    r, b, m_tot = 0.1, 0.5, 11.0
    wl, wr = 4.0, 6.0
    rng = np.random.default_rng(5)
    q, _ = _random_state(model, part, rp, rng, spread=2.0)
    terms = ro.rolling_terms(dm, data, part, rp, q, np.array([wl, wr]))
    F = ro.contact_forces(rp, terms, ro.forward_dynamics(terms))
    x, y, c, s = q[model.q_slice(model.edge("base"))]
    lateral = np.array([-s, c, 0.0])  # the chassis y axis in the world
    heading = np.array([c, s, 0.0])
    v, om = r * (wl + wr) / 2, r * (wr - wl) / b
    assert np.isclose(F.sum(axis=0) @ lateral, m_tot * v * om, rtol=1e-12)
    assert abs(F.sum(axis=0) @ heading) < 1e-12  # no torque: no traction

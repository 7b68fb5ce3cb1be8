"""Simulation runs: Stewart tracking (PD vs PD+FF), engine agreement, payload, excavator,
request errors raised before anything runs."""

from __future__ import annotations

import numpy as np
import pytest

from rbc.errors import RbcError, UsageError
from rbc.sim.controllers import ControllerError, port_inertia
from rbc.sim.mismatch import MismatchError
from rbc.sim.reference import ReferenceError
from rbc.sim.run import SimOptions, SimulationError, prepare, simulate
from tests.sim.conftest import REFERENCES

STEWART = REFERENCES / "stewart.csv"


def run(bundles, name, **kw):
    ref = STEWART if name == "stewart" else REFERENCES / "excavator.yaml"
    opts = SimOptions(reference=ref, reference_dt=0.02, **kw)
    return simulate(prepare(bundles[name], opts))


@pytest.fixture(scope="module")
def stewart_mujoco(bundles):
    """3 s of the Stewart reference on MuJoCo with each controller (the fade-in and the
    first second of the motion)."""
    return {c: run(bundles, "stewart", backend="mujoco", controller=c, duration=3.0)
            for c in ("pd", "pd+ff")}


def test_feedforward_cuts_the_stewart_tracking_error(stewart_mujoco):
    pd = stewart_mujoco["pd"].summary["tracking_rms"]["platform"]
    ff = stewart_mujoco["pd+ff"].summary["tracking_rms"]["platform"]
    assert pd > 1e-4  # m: the PD loop alone sags under gravity and lags
    assert ff * 3.0 <= pd  # acceptance: at least 3× lower with the model's feedforward


def test_stewart_leg_forces_stay_within_limits(stewart_mujoco):
    s = stewart_mujoco["pd+ff"].summary
    assert max(s["peak_effort"].values()) < 900.0  # N, the record's limit
    assert s["clipped_steps"] == 0


def test_reduced_and_mujoco_agree_on_the_platform_trajectory(bundles, stewart_mujoco):
    red = run(bundles, "stewart", backend="reduced", controller="pd+ff", duration=0.3)
    mj = stewart_mujoco["pd+ff"].log["tasks/platform/position"][: 301]
    diff = np.linalg.norm(red.log["tasks/platform/position"] - mj, axis=1).max()
    assert diff < 1e-3  # m: acceptance (1 mm); measured ≈ 1e-6 m on this horizon
    assert red.summary["max_loop_gap"] < 1e-12  # the reduced plant is projected each step
    # the exact model's ledger closes to integration error
    assert red.summary["energy_ledger_residual"] < 1e-6


def test_payload_in_the_plant_only_degrades_tracking(bundles, stewart_mujoco):
    r = run(bundles, "stewart", backend="mujoco", controller="pd+ff", duration=3.0,
            payload=(("platform", 14.0),))
    nominal = stewart_mujoco["pd+ff"].summary["tracking_rms"]["platform"]
    assert r.summary["payload"] == {"platform": 14.0}
    assert r.summary["tracking_rms"]["platform"] > 3.0 * nominal  # the FF is now wrong
    assert max(r.summary["peak_effort"].values()) < 900.0
    # the controller kept the nominal model: same gains as the nominal run
    assert r.summary["gains"] == stewart_mujoco["pd+ff"].summary["gains"]


def test_default_gains_follow_the_reflected_inertia_rule(bundles, stewart_mujoco):
    from rbc.model.compiled import CompiledModel
    from rbc.model.dynamics import DynamicsModel

    kin = CompiledModel.from_bundle(bundles["stewart"])
    part = kin.partitions["default"]
    m = port_inertia(DynamicsModel.build(kin), part, part.q_ref)
    rotor = 3.0e-5 * (2 * np.pi / 0.01) ** 2  # the screw's reflected rotor inertia
    assert np.all(m > rotor)  # plus the legs' and platform's share
    g = stewart_mujoco["pd"].summary["gains"]["act_1"]
    w = 2 * np.pi * 5.0
    assert g["kp"] == pytest.approx(g["reflected_inertia"] * w * w)
    assert g["kd"] == pytest.approx(2.0 * g["reflected_inertia"] * w)


@pytest.mark.parametrize("backend", ["reduced", "mujoco"])
def test_excavator_cycle_runs_and_reports_the_loop_gap(bundles, backend):
    r = run(bundles, "excavator", backend=backend, controller="pd+ff", duration=0.2)
    s = r.summary
    assert set(s["tracking_rms"]) == {"bucket_tip"}
    assert 0.0 < s["max_loop_gap"] < 1e-3  # m: closed to round-off (reduced) or softly
    assert len(s["max_loop_gap_by_constraint"]) >= 4  # one or more per arm loop
    # the swing motor turns a revolute joint, the cylinders are prismatic
    assert s["port_units"]["swing_motor"] == ("rad", "N·m")
    assert s["port_units"]["boom_cylinder"] == ("m", "N")


def test_pinocchio_backend_tracks_like_mujoco(bundles, stewart_mujoco):
    r = run(bundles, "stewart", backend="pinocchio", controller="pd+ff", duration=0.5)
    mj = stewart_mujoco["pd+ff"].log["tasks/platform/position"][: 501]
    # both integrate semi-implicitly at 1 ms with stabilised loops: agreement far below 1 mm
    assert np.linalg.norm(r.log["tasks/platform/position"] - mj, axis=1).max() < 1e-4


@pytest.mark.parametrize("kw, error, message", [
    (dict(backend="bullet"), RbcError, "unknown backend 'bullet'"),
    (dict(controller="lqr"), SimulationError, "unknown controller 'lqr'"),
    (dict(control_dt=1.5e-3), SimulationError, "integer multiple of --dt"),
    (dict(duration=0.0), SimulationError, r"^--duration 0: must be positive and finite$"),
    (dict(duration=float("inf")), SimulationError, r"^--duration inf: must be positive"),
    (dict(dt=0.0), SimulationError, r"^--dt 0: must be positive and finite$"),
    (dict(control_dt=0.0), SimulationError, r"^--control-dt 0: must be positive and finite$"),
    (dict(duration=4e-4), SimulationError, "shorter than one control period"),
    (dict(payload=(("platfrom", 1.0),)), MismatchError, "did you mean 'platform'"),
    (dict(inertia_scale=0.0), MismatchError, "must be positive"),
    (dict(kp={"act_9": 1.0}), ControllerError, "no such actuator"),
    (dict(initial={"P1": 0.7}), UsageError, "conflict with --reference"),
])
def test_bad_requests_fail_before_running(bundles, kw, error, message):
    opts = SimOptions(**{"reference": STEWART, "duration": 0.01, **kw})
    with pytest.raises(error, match=message):
        prepare(bundles["stewart"], opts)


def test_duration_is_rounded_to_whole_control_periods(bundles):
    prep = prepare(bundles["stewart"], SimOptions(reference=STEWART, duration=0.0104,
                                                  control_dt=2e-3))
    assert prep.duration == pytest.approx(0.010, abs=1e-15)  # 5 periods of 2 ms
    assert prep.substeps == 2


def test_tracking_controller_needs_a_reference_and_actuators(bundles):
    with pytest.raises(SimulationError, match="give --reference"):
        prepare(bundles["stewart"], SimOptions(controller="pd", duration=0.1))
    with pytest.raises(ReferenceError, match="dependent coordinate"):
        prepare(bundles["stewart"], SimOptions(reference=REFERENCES / "excavator.yaml"))


FLOATING = """rbc: 1
name: floatbar
gravity: [0, 0, -9.81]
bodies:
  - {name: base, floating: true, mass: 2, inertia: [0.1, 0.1, 0.1, 0, 0, 0]}
  - {name: link, mass: 1, com: [0.1, 0, 0], inertia: [0.01, 0.01, 0.01, 0, 0, 0]}
joints:
  - {name: A, type: revolute, parent: base, child: link, axis: [0, 1, 0], initial: 0.3}
"""


def test_fix_root_welds_a_floating_base(tmp_path):
    from rbc.compiler import compile_to_file

    (tmp_path / "floatbar.yaml").write_text(FLOATING)
    compile_to_file(tmp_path / "floatbar.yaml", tmp_path / "floatbar.h5")
    opts = dict(backend="reduced", controller="passive", duration=0.05)
    r = simulate(prepare(tmp_path / "floatbar.h5", SimOptions(fix_root=True, **opts)))
    assert r.log["q"].shape[1] == 1  # only the pendulum joint is left
    assert abs(r.log["q"][-1, 0] - r.log["q"][0, 0]) > 1e-3  # and it swings


def test_reduced_backend_integrates_a_floating_base(tmp_path):
    """The free base is integrated in its chart (body-frame twist, right Jacobian of SE(3)):
    a tumbling, falling bar keeps its energy, its horizontal momentum and its angular
    momentum about the centre of mass."""
    from rbc.compiler import compile_to_file
    from rbc.model.compiled import CompiledModel
    from rbc.model.dynamics import DynamicsModel
    from rbc.sim.backends.tree_probe import TreeProbe

    (tmp_path / "floatbar.yaml").write_text(FLOATING)
    compile_to_file(tmp_path / "floatbar.yaml", tmp_path / "floatbar.h5")
    spin = {"base.root.wx": 1.0, "base.root.wy": 2.0, "base.root.wz": -3.0, "base.root.vx": 0.5,
            "A": 4.0}
    r = simulate(prepare(tmp_path / "floatbar.h5", SimOptions(
        backend="reduced", controller="passive", duration=0.5, velocity=spin)))
    # RK4 at 1 ms over 0.5 s of tumbling: energy drift is round-off and O(h⁴) truncation
    assert r.summary["energy_ledger_residual"] < 1e-8
    kin = CompiledModel.from_bundle(tmp_path / "floatbar.h5")
    tree = DynamicsModel.build(kin).tree
    probe = TreeProbe(tree, {})
    h = [probe.momentum(tree.q_pin(q), tree.v_pin(v)) for q, v in zip(r.log["q"], r.log["v"],
                                                                     strict=True)]
    g = np.array([0.0, 0.0, -9.81]) * 3.0  # total weight / 1 kg
    for t, (p, L) in zip(r.log["time"], h, strict=True):
        np.testing.assert_allclose(p, h[0][0] + g * t, atol=1e-9)  # linear momentum [N·s]
        np.testing.assert_allclose(L, h[0][1], atol=1e-9)  # about the COM [N·m·s]


def test_plant_mismatch_changes_only_the_plant_inertia(bundles):
    from rbc.model.compiled import CompiledModel
    from rbc.sim.mismatch import plant_model

    kin = CompiledModel.from_bundle(bundles["stewart"])
    plant = plant_model(kin, (("platform", 14.0), ("platform", 1.0)), inertia_scale=2.0)
    nominal = {b.name: b for b in kin.record.bodies}
    for b in plant.record.bodies:
        extra = 15.0 if b.name == "platform" else 0.0
        assert b.mass == pytest.approx(2.0 * nominal[b.name].mass + extra)
        assert b.inertia == pytest.approx(tuple(2.0 * x for x in nominal[b.name].inertia))
        assert b.com == nominal[b.name].com  # the payload sits at the COM
    assert plant.record.joints == kin.record.joints  # kinematics untouched
    assert plant_model(kin) is kin


FRICTION_PENDULUM = """rbc: 1
name: rubbing
gravity: [0, 0, -9.81]
bodies:
  - {name: base, fixed: true}
  - {name: link, mass: 1, com: [0.2, 0, 0], inertia: [0.01, 0.01, 0.01, 0, 0, 0]}
joints:
  - {name: A, type: revolute, parent: base, child: link, axis: [0, 1, 0], initial: 0.8,
     friction: 0.3}
"""


def test_coulomb_friction_does_not_stall_the_adaptive_step(tmp_path):
    """A pendulum with Coulomb friction released from rest swings through several speed
    reversals: with the friction direction held per step dopri5 keeps steps of control-period
    size (a discontinuous sign(v) drove them to ~1e-11 s), and the ledger, which counts the
    held friction's work, stays at the integration error."""
    from rbc.compiler import compile_to_file

    (tmp_path / "rubbing.yaml").write_text(FRICTION_PENDULUM)
    compile_to_file(tmp_path / "rubbing.yaml", tmp_path / "rubbing.h5")
    r = simulate(prepare(tmp_path / "rubbing.h5", SimOptions(
        backend="reduced", controller="passive", duration=2.0)))
    v = r.log["v"][:, 0]
    assert np.count_nonzero(np.diff(np.sign(v[np.abs(v) > 1e-6])) != 0) >= 3  # reversals
    assert r.summary["work_passive"] < -0.1  # friction took energy out
    steps = r.summary["integration"]["accepted_steps"] + r.summary["integration"][
        "rejected_steps"]
    assert steps < 20_000  # 2000 control periods; a stalled step needs millions
    # relative to the largest energy term: dopri5's local errors at rtol 1e-9, summed
    assert r.summary["energy_ledger_relative"] < 1e-7

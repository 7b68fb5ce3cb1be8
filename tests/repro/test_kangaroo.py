"""The Kangaroo-like biped's studies (issue 21 item 2): the locked-upper-body record, its
references, the fixed-pelvis feedforward ablation (``kangaroo-ablation``)."""

from __future__ import annotations

import importlib.util
import json

import numpy as np
import pytest
import yaml

from rbc.cli.main import main
from rbc.repro import kangaroo_ablation as ab
from rbc.repro import kangaroo_landing as la
from rbc.repro import models


def _script(path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def locked_script():
    return _script(models.RECORDS / "make_kangaroo_locked.py")


@pytest.fixture(scope="module")
def refs_script():
    return _script(models.REFERENCES / "make_kangaroo_references.py")


def test_locked_record_is_its_generator_output(locked_script):
    assert locked_script.text() == models.record_path("kangaroo_locked").read_text()


def test_locked_record_changes_only_the_locked_joints(locked_script):
    full = yaml.safe_load(models.record_path("kangaroo").read_text())
    locked = yaml.safe_load(models.record_path("kangaroo_locked").read_text())
    assert locked["bodies"] == full["bodies"]  # every mass and inertia kept
    assert locked["actuators"] == full["actuators"] and locked["supports"] == full["supports"]
    joints = {j["name"]: j for j in full["joints"]}
    for j in locked["joints"]:
        if j["name"] in locked_script.LOCKED:
            assert j["type"] == "fixed" and joints[j["name"]]["type"] == "revolute"
            assert j.get("parent_frame") == joints[j["name"]].get("parent_frame")
            assert "initial" not in joints[j["name"]]  # locked at its value 0
        else:
            assert j == joints[j["name"]]
    assert {j["name"] for j in locked["joints"]} == set(joints)


def test_locked_record_poses_equal_the_full_record_at_zero():
    """Locking a revolute joint at 0 moves nothing: every body's world pose at the reference
    configuration is the same in both records (the locked joints at 0 in the full one)."""
    from rbc.model.kinematics import body_poses

    full, locked = models.compiled("kangaroo"), models.compiled("kangaroo_locked")
    pf = body_poses(full, full.partitions["default"].q_ref)
    pl = body_poses(locked, locked.partitions["default"].q_ref)
    assert len(pl) == len(pf) == len(locked.record.bodies)
    for body, a, b in zip(locked.record.bodies, pl, pf, strict=True):
        # 1e-12 m: the two records close their knee loops by separate Newton solves (1e-13)
        assert np.allclose(a.homogeneous, b.homogeneous, atol=1e-12), body.name


def test_legs_reference_is_its_generator_output(refs_script):
    assert refs_script.legs_text() == ab.REFERENCE.read_text()


def test_legs_reference_lies_on_the_closure_manifold():
    """Lifted on the welded locked model: the closure residual at every 10 ms sample, and the
    leg-length stroke and the fade (at rest at both ends) as generated."""
    from rbc.model.compiled import CompiledModel
    from rbc.model.dynamics import DynamicsModel
    from rbc.model.kinematics import residual
    from rbc.sim.reference import lift_reference, load_knots, spline_reference
    from rbc.sim.run import welded

    kin = welded(CompiledModel.from_bundle(models.bundle(ab.RECORD)))
    part = kin.partitions["default"]
    splined = spline_reference(kin, part, load_knots(ab.REFERENCE))
    lifted = lift_reference(DynamicsModel.build(kin), part, splined, 4.0, 0.01)
    worst = max(float(np.abs(residual(kin, q)).max()) for q in lifted.q)
    assert worst < 1e-10  # the corrector's tolerance is 1e-13; 1e-10 m leaves margin
    assert np.abs(lifted.u[0]).max() < 1e-12 and np.abs(lifted.u[-1]).max() < 1e-12
    doc = yaml.safe_load(ab.REFERENCE.read_text())
    stroke = np.asarray(doc["joints"]["leg_left_length_joint"])
    assert 0.03 < np.ptp(stroke) / 2 <= 0.04 + 1e-12  # the documented ±40 mm bound


def test_gains_reproduce_the_papers_linear_gains_and_share_omega_zeta():
    g = ab.gains()
    assert g["kp"] == {"left_leg_length": 4e4, "right_leg_length": 4e4}
    assert g["kd"] == {"left_leg_length": 600.0, "right_leg_length": 600.0}
    w = 2 * np.pi * g["bandwidth"]
    m = g["inertia"]["left_leg_length"]
    assert m * w * w == pytest.approx(4e4, rel=1e-12)
    assert 2 * g["zeta"] * m * w == pytest.approx(600.0, rel=1e-12)


def test_feedforward_lowers_the_port_rms_100x_on_a_short_horizon():
    """0.2 s on MuJoCo at 100 µs: the RMS from the logged ports against SciPy's spline of the
    raw knots (independent of rbc's reference lift) falls at least 100× with the
    feedforward, and agrees with rbc's own figure."""
    pd, ff = (ab.simulate_case(("mujoco", c, 0.2)) for c in ab.CONTROLLERS)
    assert pd["physics_steps"] == ff["physics_steps"] == 2000
    assert pd["linear_rms_spline"] / ff["linear_rms_spline"] >= ab.MIN_RATIO
    assert pd["rotary_rms"] / ff["rotary_rms"] >= ab.MIN_RATIO
    for r in (pd, ff):
        assert r["linear_rms_spline"] == pytest.approx(r["linear_rms"], rel=ab.SPLINE_RTOL)
        assert r["clipped_steps"] == 0 and r["max_loop_gap"] < 1e-8


def test_repro_kangaroo_ablation_quick(tmp_path):
    code = main(["repro", "kangaroo-ablation", "--quick", "--scheduler", "synchronous",
                 "--out", str(tmp_path)])
    res = json.loads((tmp_path / "kangaroo-ablation" / "results.json").read_text())
    assert code == 0 and res["status"] == "pass"
    assert {c["name"] for c in res["checks"]} >= {"kangaroo.mujoco.linear_ratio",
                                                  "kangaroo.pinocchio.linear_ratio"}
    rows = {r["key"]: r for r in res["comparison"]}
    assert "1.653" in (tmp_path / "kangaroo-ablation" / "report.md").read_text()
    assert (tmp_path / "kangaroo-ablation" / "port_errors.png").stat().st_size > 5000
    assert rows["mujoco.linear_ratio"]["ours"] >= ab.MIN_RATIO
    assert rows["mujoco.pd.linear_rms_mm"]["paper"] == 1.653


# ------------------------------------------------------------------ landing (item 2b)


def test_landing_reference_is_its_generator_output(refs_script):
    assert refs_script.landing_text() == refs_script.LANDING.read_text()


def test_landing_reference_heights_match_the_record(refs_script):
    """The generator's pelvis height over the soles is the record's (at q_ref), the
    touchdown is the free-fall time, and the stance soles sit on the contact box (1 mm)."""
    from rbc.model.compiled import CompiledModel
    from rbc.model.modes import support_poses

    kin = CompiledModel.from_bundle(la.bundle())
    q = kin.partitions["default"].q_ref
    z = [T.translation[2] for T in support_poses(kin, q, ("left_sole", "right_sole"))]
    assert -z[0] == pytest.approx(refs_script.PELVIS_OVER_SOLE, abs=1e-9)
    assert z[0] == pytest.approx(z[1], abs=1e-12)
    doc = refs_script.landing_reference(0.05)
    t_land = doc["modes"][1]["time"]
    assert 0.5 * 9.81 * t_land ** 2 == pytest.approx(0.05, abs=1e-6)
    assert doc["base"]["z"][0] - doc["base"]["z"][1] == pytest.approx(0.05, abs=1e-12)
    assert set(doc["supports"]["left_sole"]["z"][1:]) == {refs_script.SOLE_Z}
    assert min(doc["base"]["z"]) == pytest.approx(doc["base"]["z"][1] - 0.12, abs=1e-12)


def test_collocated_efforts_in_free_fall_are_zero_and_the_base_falls_at_g():
    """Released at rest with the joints' reference at rest (u̇ = 0 requested everywhere),
    the free-flight feedforward needs no effort — a rigid body falls freely — and the base
    acceleration it implies is gravity; the least-squares fit instead spends efforts on the
    requested zero base acceleration. Independent check: forward dynamics with f gives the
    same accelerations."""
    from rbc.model.compiled import CompiledModel
    from rbc.model.dynamics import (
        DynamicsData,
        DynamicsModel,
        actuator_efforts,
        collocated_efforts,
        forward_dynamics,
        reduced_terms,
    )
    from rbc.model.modes import model_for

    kin = CompiledModel.from_bundle(la.bundle())
    mm = model_for(kin, kin.modes["free"])
    part = next(iter(mm.partitions.values()))
    dm = DynamicsModel.build(mm)
    data = DynamicsData.of(dm)
    q = part.q_ref
    zero = np.zeros(part.independent.size)
    f, ud = collocated_efforts(dm, reduced_terms(dm, data, part, q, zero), zero)
    # 1e-9 N: round-off of M_r (≈ 56 kg) times g through one null-space solve
    assert np.abs(f).max() < 1e-9
    base = [i for i, j in enumerate(part.independent) if j < 6]
    assert ud[base] == pytest.approx([0, 0, 0, 0, 0, -9.81], abs=1e-9)  # body twist [ω; v]
    fd = forward_dynamics(dm, reduced_terms(dm, data, part, q, zero, f))
    assert fd == pytest.approx(ud, abs=1e-9)
    assert np.abs(actuator_efforts(dm, reduced_terms(dm, data, part, q, zero), zero)).max() > 1


def test_landing_gains_follow_the_documented_rule():
    g = la.gains()
    T = la.CONTROL_DT
    assert g["kp"]["left_leg_length"] == g["kp"]["right_leg_length"] == 4e4
    m_l = np.mean([g["inertia_stance"][f"{s}_leg_length"] for s in ("left", "right")])
    w2 = 4e4 / m_l
    for name, kp in g["kp"].items():
        m_st, m_fl = g["inertia_stance"][name], g["inertia_flight"][name]
        if not name.endswith("leg_length"):
            assert kp == pytest.approx(min(m_st * w2, la.CAP * m_fl / T ** 2), rel=1e-9)
        assert g["kd"][name] == pytest.approx(min(2 * m_st * np.sqrt(w2), la.CAP * m_fl / T),
                                              rel=1e-9)
    assert g["kp"]["left_ankle_pitch"] < 0.1 * g["inertia_stance"]["left_ankle_pitch"] * w2


def test_landing_touches_down_on_pinocchio_at_the_free_fall_time():
    """0.15 s on the Pinocchio plant: one switch free → double at the first control instant
    after √(2h/g), a positive plastic impact loss, the pelvis within 2 cm of its reference."""
    r = la.simulate_case(("nominal", "pinocchio", 0.15))
    (sw,) = r["switches"]
    assert (sw["from"], sw["to"]) == ("free", "double")
    assert sw["time"] == pytest.approx(0.101, abs=1e-9)
    assert r["impact_losses"] > 0 and r["base_max_error"] < 0.02


@pytest.mark.slow
def test_repro_kangaroo_landing_quick(tmp_path):
    code = main(["repro", "kangaroo-landing", "--quick", "--scheduler", "synchronous",
                 "--out", str(tmp_path)])
    res = json.loads((tmp_path / "kangaroo-landing" / "results.json").read_text())
    assert code == 0 and res["status"] == "pass"
    assert (tmp_path / "kangaroo-landing" / "pelvis.png").stat().st_size > 5000
    assert res["key_figures"].startswith("paired MuJoCo–Pinocchio")


def test_landing_push_per_condition():
    """The torso push is in every 10 s run, 25 % stronger with the higher release, and its
    --push text reads back as the same push; a run that ends before it has none."""
    from rbc.sim.push import parse_push

    bodies = ["base_link", "pelvis_2_link"]
    (nominal,) = la.pushes("nominal", 10.0)
    (strong,) = la.pushes("high_release_push", 10.0)
    assert parse_push(nominal, bodies) == la.PUSH
    assert parse_push(strong, bodies).force == pytest.approx((0.0, 75.0, 0.0), abs=0)
    assert la.pushes("nominal", la.DURATION[True]) == ()

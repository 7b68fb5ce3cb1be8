"""The ``dances`` target (issue #20): its measurement helpers against independent forward
kinematics, and its quick case list end to end (the pair of humanoids: sampled
allocation, the proposed policy and actuator PD on the reduced plant, the proposed policy
on the ideal MuJoCo plant)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from rbc.cli.main import main
from rbc.repro import dances


def test_points_are_the_pelvis_origins_and_palms():
    from rbc.control.dances import palm_position
    from rbc.model.kinematics import body_poses

    comp = dances.formation("pair")
    kin = comp.model(comp.modes[dances.MODE])
    q = comp.modes[dances.MODE].partition.q_ref
    pelvis, palms = dances.points(kin, q)
    assert pelvis.shape == (2, 3) and palms.shape == (4, 3)
    idx = kin.record.body_index()
    assert np.abs(pelvis[1] - body_poses(kin, q)[idx["h2/pelvis"]].translation).max() == 0.0
    # h1's right palm and h2's left palm are linked: they coincide on the manifold
    assert np.abs(palms[1] - palms[2]).max() <= 1e-12
    assert np.abs(palms[3] - palm_position(kin, q, "h2/forearm_r")).max() == 0.0


@pytest.mark.slow
def test_quick_case_list_passes_and_reports(tmp_path):
    code = main(["repro", "dances", "--quick", "--out", str(tmp_path), "--scheduler",
                 "synchronous"])
    res = json.loads((tmp_path / "dances" / "results.json").read_text())
    assert code == 0 and res["status"] == "pass"
    runs = res["data"]["runs"]
    assert {(r["policy"], r["plant"]) for r in runs} == {
        ("proposed", "reduced"), ("actuator_pd", "reduced"), ("proposed", "mujoco-ideal"),
        ("proposed", "mujoco-realistic")}
    for r in runs:
        assert r["completed"] and r["pelvis_rms"] is not None and len(r["time"]) >= 2
        assert r["compensated"] == (r["plant"] == "mujoco-realistic")
        assert set(r["timing"]) == {"policy", "plant", "measure", "reference", "metrics"}
        # the force prediction: every 100 Hz sample of the 10 ms window (one: the policy
        # runs at t = 21.30 s, the window's end has no step), none without an allocation
        fp = r["force_prediction"]
        if r["policy"] == "actuator_pd":
            assert fp is None and r["force_error"] is None
        else:
            assert fp["samples"] == 1 and fp["sole_rms"] is not None
    interp = res["data"]["interpolation"][0]
    assert interp["residual"] <= dances.INTERPOLATED_RESIDUAL and interp["knots"] >= 2
    # starting on the reference, the proposed policy tracks it within a millimetre
    prop = next(r for r in runs if r["policy"] == "proposed" and r["plant"] == "reduced")
    assert prop["pelvis_rms"] < 1e-3 and prop["palm_rms"] < 1e-3
    samp = res["data"]["sampled"][0]
    assert max(r["slack"] for r in samp["rows"]) <= 1e-9
    assert samp["worst_residual"] <= 1e-11
    report = (tmp_path / "dances" / "report.md").read_text()
    assert "Position RMS at 100 Hz" in report and "Allocation slack" in report
    assert "Stored references" in report and "Where the time goes" in report
    assert "Force prediction after 0.5 s" in report
    for p in ("trajectories.png", "rms.png", "slack.png", "forces.png"):
        assert (tmp_path / "dances" / p).stat().st_size > 5000


def test_a_fall_or_a_solver_failure_ends_a_run_with_its_cause(monkeypatch):
    """A run stops with a reported cause, not an exception: a pelvis below its reference
    by more than FALL (here FALL < 0: at once), a policy raising (a failed allocation), a
    run that would not fit in memory."""
    from rbc.control import policies
    from rbc.control.allocation import AllocationError

    case = ("pair", "proposed", *dances.WINDOW[True], False, "reduced")
    monkeypatch.setattr(dances, "FALL", -1.0)
    r = dances.run_policy(case)
    assert not r["completed"] and r["cause"].startswith("fall at t = 21.300 s")
    monkeypatch.setattr(dances, "FALL", 0.2)

    def broken(ctx, ref, q, v):
        raise AllocationError("no efforts keep the wrenches in their cones", 2)

    monkeypatch.setitem(policies.POLICIES, "proposed", broken)
    r = dances.run_policy(case)
    assert not r["completed"] and r["cause"].startswith("AllocationError at t = 21.300 s")
    assert r["steps"] == 0
    monkeypatch.setenv("RBC_MEMORY_LIMIT", "1e-6")
    r = dances.run_policy(case)
    assert not r["completed"] and r["cause"].startswith("refused: pair: mode 'stand'")


@pytest.mark.slow
def test_force_prediction_on_the_rigid_plant(monkeypatch):
    """On the Pinocchio plant (rigid constraints, no Coulomb friction: the policies' nominal
    model) the proposed policy's allocation predicts the sole normal forces and the hand
    link's force the plant produces — exactly at the reference (the first sample; the
    plant's forces equal the composed recovery to 1e-8, docs/composition.md) and along the
    run up to the plant's own drift off the closure manifold (semi-implicit Euler, loops open
    by ~1e-6 m after 40 ms): quartering the physics step shrinks the error ~15× (measured).
    A plant whose h1 pelvis is 2 kg heavier than the model is mispredicted by a part of
    that weight."""
    from dataclasses import replace

    window = (21.3, 0.05)  # 25 control steps, 5 samples at 100 Hz, all counted (< 1 s)
    monkeypatch.setattr(dances, "OWN_WINDOWS", frozenset({window}))
    case = ("pair", "proposed", *window, False, "pinocchio")
    r = dances.run_policy(case)
    fp, fe = r["force_prediction"], r["force_error"]
    assert r["completed"] and fp["samples"] == 5 and fp["after"] == window[0]
    weight = fp["sole_mean"]  # ≈ 283 N per sole
    # at the reference: the composed recovery's 1e-8 (measured 3.9e-12 N, 1.2e-13 N)
    assert fe["sole"][0] <= 1e-8 * weight and fe["link"][0] <= 1e-8 * weight
    # along the run the drift's effect (measured 2.8e-5 of the mean normal force, 3.3e-3
    # of the ~5.4 N link force); it falls faster than first order in the step (measured
    # 15.4× at a quarter step: 8 leaves room between first (4×) and second order (16×))
    assert fp["sole_relative"] <= 1e-4 and fp["link_relative"] <= 1e-2
    monkeypatch.setattr(dances, "PHYSICS_DT", dances.PHYSICS_DT / 4)
    fine = dances.run_policy(case)["force_prediction"]
    assert fine["sole_rms"] <= fp["sole_rms"] / 8 and fine["link_rms"] <= fp["link_rms"] / 8
    monkeypatch.setattr(dances, "PHYSICS_DT", dances.PHYSICS_DT * 4)

    make = dances.make_plant

    def heavier(plant, comp, kin, *args, **kw):
        rec = kin.record
        i = rec.body_index()["h1/pelvis"]
        bodies = list(rec.bodies)
        bodies[i] = replace(bodies[i], mass=bodies[i].mass + 2.0)
        return make(plant, comp, replace(kin, record=replace(rec, bodies=tuple(bodies))),
                    *args, **kw)

    monkeypatch.setattr(dances, "make_plant", heavier)
    bad = dances.run_policy(case)["force_prediction"]
    # 2 kg · 9.81 m/s² more weight: split evenly on h1's two soles, an RMS over the four of
    # Δm g / (2√2) = 6.9 N; measured 5.2 N (the pelvis sags under efforts sized for the
    # model, and some of the weight goes through the hand link to h2): at least half of it,
    # and a hundred times the nominal error
    even = 2.0 * 9.81 / (2.0 * np.sqrt(2.0))
    assert bad["sole_rms"] >= 0.5 * even and bad["sole_rms"] >= 100 * fp["sole_rms"]


def test_force_samples_leave_the_run_unchanged(monkeypatch):
    """Reading the plant's wrenches at the 100 Hz samples (MuJoCo: ``mj_forward`` with the
    efforts about to be applied) does not change the trajectory: the same RMS to the bit
    without the sampling."""
    case = (dances.QUICK_FORMATION, "proposed", *dances.WINDOW[True], False, "mujoco-ideal")
    with_samples = dances.run_policy(case)
    assert with_samples["force_prediction"]["samples"] == 1
    monkeypatch.setattr(dances.ForceSamples, "sample", lambda self, t, step, m, f: None)
    without = dances.run_policy(case)
    assert without["force_prediction"]["samples"] == 0
    assert (with_samples["pelvis_rms"], with_samples["palm_rms"]) == (
        without["pelvis_rms"], without["palm_rms"])

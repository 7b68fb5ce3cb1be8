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
    for p in ("trajectories.png", "rms.png", "slack.png"):
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

"""The go2-course target (issue 21 item 1): its quick case list through the harness, and the
published figures it is compared with."""

from __future__ import annotations

import json

import numpy as np
import pytest

from rbc.repro import go2_course
from rbc.repro.harness import run_targets
from rbc.repro.published import load_published


def test_published_figures_name_our_keys() -> None:
    """Every published figure is one the target reports (plant.variant.rms_late), and the
    issue's three numbers are there with their plants."""
    pub = {p.key: p for p in load_published("go2-course")}
    ours = {f"{p}.{go2_course._slug(v)}.rms_late" for v in go2_course.VARIANTS
            for p in go2_course.PLANTS}
    assert set(pub) <= ours and len(pub) == 4
    assert pub["mujoco.nominal.rms_late"].paper == 10.60
    assert pub["pinocchio.nominal.rms_late"].paper == 5.991
    assert pub["mujoco.payload.rms_late"].paper == 8.897


@pytest.mark.slow
def test_quick_case_passes_and_reports(tmp_path) -> None:
    """`rbc repro go2-course --quick`: the first 1.3 s on Pinocchio, in this process."""
    (run,) = run_targets(["go2-course"], tmp_path, quick=True, scheduler="synchronous")
    assert run.status == "pass", run.error or run.outcome.checks
    res = json.loads((tmp_path / "go2-course" / "results.json").read_text())
    (row,) = res["data"]["runs"]
    assert row["plant"] == "pinocchio" and row["transitions"] == 1  # RL lifted at 1.1 s
    assert row["rms"] < 2e-3 and row["peak_command_ratio"] < 1.0
    assert res["data"]["reference"]["gap"] < 1e-10
    report = (tmp_path / "go2-course" / "report.md").read_text()
    assert "10.6" in report and "go2_course.png" in report


#: The window of the ideal-weld test: the walk's two steps (touchdowns at 1.55, 2.6 s) and
#: the first trot touchdowns (3.2, 3.8, 4.2 s), up to the four-foot phase ending at 4.7 s.
TROT_WINDOW = 4.6


@pytest.mark.slow
def test_pinocchio_touchdowns_land_on_the_floor() -> None:
    """On the ideal-weld plant a touchdown welds the foot on the floor, not where a tilted
    robot holds it (docs/supports.md, "Touchdown on the floor"). Across the first trot
    touchdowns, where the old placement let the undriven roll about the diagonal accumulate
    (base height error 4.0 mm and tilt 2° by 4.5 s, 22 mm off at 5 s), every anchor is at
    the height the feet stood at t = 0 and the base keeps its height."""
    from rbc.sim.run import simulate

    res = simulate(go2_course.prepared("pinocchio", "nominal", TROT_WINDOW))
    log, sm = res.log, res.summary["support_modes"]
    assert len(sm["switches"]) == 11  # 1.1 … 4.3 s: walk 4 → 3 → 4, trot 4 → 2 → 4
    feet = ("FL", "FR", "RL", "RR")
    # the floor is under the feet at t = 0 (all four on it): the logged positions, not
    # the plant's floor computation, give the height the anchors must have
    z0 = log["supports/FL/position"][0, 2]
    assert all(abs(log[f"supports/{f}/position"][0, 2] - z0) < 1e-9 for f in feet)
    for f in feet:
        a = log[f"supports/{f}/anchor"][:, 2]
        a = a[~np.isnan(a)]
        # an anchor is a copy of the floor height plus the sphere radius: round-off only
        assert np.abs(a - z0).max() < 1e-12, f
    dz = np.abs(log["base/position"][:, 2] - log["base/reference"][:, 2])
    # the old placement: 3.97 mm at 4.5 s; with the floor 0.19 mm (the roll of the
    # two-foot phases moves the base a little); 1 mm separates the two by ~4×
    assert dz.max() < 1e-3
    err = np.linalg.norm(log["base/position"] - log["base/reference"], axis=1)
    assert err.max() < 5e-3  # old: 11.3 mm at 4.5 s; now 2.3 mm
    assert res.summary["clipped_steps"] == 0

"""The go2-course target (issue 21 item 1): its quick case list through the harness, and the
published figures it is compared with."""

from __future__ import annotations

import json

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

"""``rbc walk`` through typer's CliRunner on the walk sub-app."""

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from rbc.cli.walk import app
from rbc.errors import RbcError

runner = CliRunner()


def test_run_json_compass(tmp_path):
    r = runner.invoke(app, ["run", "--model", "compass", "--slope", "0.0523599",
                            "--strides", "3", "--out", str(tmp_path), "--json"])
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    assert data["strides_completed"] == 3 and data["fell"] is False
    assert data["fall_reason"] is None
    assert len(data["strides"]) == 3
    s = data["strides"][-1]
    # speed is length / duration, independently recomputed; JSON floats round-trip exactly,
    # so only the division's rounding (1 ulp) separates the two
    assert s["speed"] == pytest.approx(s["length"] / s["duration"], rel=1e-12)
    names = {p.name for p in tmp_path.iterdir()}
    assert {"compass_phase.png", "compass.gif"} <= names
    assert any(n.startswith("compass_log.") for n in names)


def test_run_human_table():
    r = runner.invoke(app, ["run", "--model", "compass", "--strides", "2"])
    assert r.exit_code == 0, r.output
    assert "2 strides completed" in r.stdout and "cone use" in r.stdout


def test_fixedpoint_json():
    r = runner.invoke(app, ["fixedpoint", "--model", "compass", "--slope", "0.0523599",
                            "--json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert set(d) == {"fixed_point", "eigenvalues", "spectral_radius", "step_period",
                      "jacobian", "jacobian_method", "fd_difference"}
    assert d["jacobian_method"] == "variational" and d["fd_difference"] < 1e-7
    mags = [np.hypot(*e) for e in d["eigenvalues"]]
    # same numbers through JSON and hypot: rounding only (pytest's default rel 1e-6)
    assert d["spectral_radius"] == pytest.approx(max(mags))
    assert d["spectral_radius"] < 1
    assert len(d["fixed_point"]) == 4


@pytest.mark.parametrize("args, needle", [
    (["run", "--model", "rabit"], "rabbit"),
    (["run", "--controller", "pid"], "passive, fl"),
    (["run", "--model", "compass", "--slope", "0.0"], "downhill"),
    (["run", "--model", "humanoid", "--controller", "passive"], "fl"),
    (["fixedpoint", "--model", "nope"], "compass"),
])
def test_errors_are_rbc_errors_with_choices(args, needle):
    r = runner.invoke(app, args)
    assert r.exit_code != 0
    assert isinstance(r.exception, RbcError)
    assert needle in str(r.exception)


def test_run_true_plant_options_json():
    r = runner.invoke(app, ["run", "--model", "rabbit", "--controller", "composite",
                            "--payload", "3", "--bias", "4:-4:4:-4", "--effectiveness", "0.9",
                            "--friction", "2", "--strides", "2", "--json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert d["strides_completed"] == 2 and not d["fell"]
    assert d["tracking_ema"] > 0
    assert all(s["friction_work"] > 0 and s["slip"] == 0.0 for s in d["strides"])


def test_run_safety_filter_and_push_via_cli():
    r = runner.invoke(app, ["run", "--model", "rabbit", "--controller", "fl", "--strides", "2",
                            "--push", "1:0.15:5:0", "--safety-filter", "qp", "--json"])
    assert r.exit_code == 0, r.output
    assert not json.loads(r.stdout)["fell"]


@pytest.mark.parametrize("args, needle", [
    (["run", "--model", "rabbit", "--controller", "lbd"], "adaptive, rise, composite"),
    (["run", "--model", "rabbit", "--controller", "fl", "--safety-filter", "lp"],
     "none, projection, qp"),
    (["run", "--model", "humanoid", "--controller", "rise"], "fl, lbdnn, composite"),
    (["run", "--model", "humanoid", "--controller", "lbdnn", "--friction", "1"], "rabbit"),
    (["run", "--model", "rabbit", "--controller", "fl", "--ice", "1:2"], "3 numbers"),
])
def test_true_plant_errors_list_choices(args, needle):
    r = runner.invoke(app, args)
    assert isinstance(r.exception, RbcError)
    assert needle in str(r.exception)


def test_unknown_controller_exits_2_through_main():
    from rbc.cli.main import main

    assert main(["walk", "run", "--model", "rabbit", "--controller", "nope"]) == 2


def test_run_humanoid_lbdnn_under_payload():
    r = runner.invoke(app, ["run", "--model", "humanoid", "--controller", "composite",
                            "--payload", "0.5", "--strides", "1", "--json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert d["strides_completed"] == 1 and not d["fell"]

"""`rbc solve` and `rbc verify` end to end: output, JSON, exit codes, messages."""

from __future__ import annotations

import json
import shutil

import h5py
import pytest

from rbc.cli.main import main
from rbc.verify import kinematics as K
from tests.conftest import RECORDS
from tests.verify.conftest import compile_bundle


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    directory = tmp_path_factory.mktemp("cli")
    return lambda name: compile_bundle(directory, name)


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_solve_prints_and_jsons(bundle, capsys):
    b = bundle("fourbar")
    code, out, _ = run(capsys, "solve", b, "--set", "A=1.5")
    assert code == 0 and "residual" in out and "iterations" in out and "B" in out
    code, out, _ = run(capsys, "solve", b, "--set", "A=1.5", "--json")
    doc = json.loads(out)
    assert code == 0 and set(doc) == {"partition", "configuration", "residual", "iterations",
                                      "start", "notes", "events"}
    assert doc["start"] == "q_ref" and doc["notes"] == []
    assert doc["configuration"]["A"] == 1.5 and doc["residual"] <= 1e-12
    assert set(doc["configuration"]) == {"A", "B", "C", "D"}


def test_solve_multicoordinate_joints_are_lists(bundle, capsys):
    code, out, _ = run(capsys, "solve", bundle("stewart"), "--set", "P1=0.8", "--json")
    doc = json.loads(out)
    assert code == 0 and len(doc["configuration"]["S1"]) == 4
    assert len(doc["configuration"]["U1"]) == 2 and doc["configuration"]["P1"] == 0.8


@pytest.mark.parametrize(("args", "message"), [
    (("--set", "Aa=1"), "unknown coordinate 'Aa' (did you mean 'A'?)"),
    (("--set", "B=1"), "'B' is a dependent coordinate in partition 'default'"),
    (("--set", "A"), "expected NAME=VALUE"),
    (("--partition", "nope"), "unknown partition 'nope'"),
])
def test_solve_errors_exit_2(bundle, capsys, args, message):
    code, out, err = run(capsys, "solve", bundle("fourbar"), *args)
    assert code == 2 and message in err and "Traceback" not in err and out == ""


def test_solve_from_a_guess_takes_the_guessed_branch(bundle, capsys):
    """--guess seeds the solve: a 3-decimal guess of the four-bar's crossed assembly lands
    on the crossed branch (rocker at −2.2664 rad at crank 1 rad, from circle intersections),
    the stored reference on the open one (1.7893 rad)."""
    b = bundle("fourbar")
    code, out, _ = run(capsys, "solve", b, "--set", "A=1.0", "--json")
    assert code == 0 and json.loads(out)["configuration"]["D"] == pytest.approx(1.78925140339)
    code, out, err = run(capsys, "solve", b, "--set", "A=1.0", "--guess", "B=-2.116",
                         "--guess", "C=-1.150", "--guess", "D=-2.266", "--json")
    doc = json.loads(out)
    assert code == 0 and doc["start"] == "guess" and doc["residual"] <= 1e-12
    assert doc["configuration"]["D"] == pytest.approx(-2.266427966, abs=1e-9)
    assert doc["configuration"]["A"] == 1.0


def test_solve_guess_quaternion_note_and_errors(bundle, capsys):
    b = bundle("stewart")
    code, out, err = run(capsys, "solve", b, "--guess", "S1=0.8055,-0.1572,0.1094,0.5607")
    assert code == 0 and "note: --guess S1: the guessed quaternion has norm" in err
    for args, message in ((("--guess", "S1=2,0,0,0"), "quaternion norm 2.0 is not 1"),
                          (("--guess", "S1=1,0,0"), "takes 4 value(s)"),
                          (("--guess", "Q1=0.1"), "not a coordinate or joint"),
                          (("--guess", "P1"), "expected NAME=VALUE")):
        code, out, err = run(capsys, "solve", b, *args)
        assert code == 2 and message in err and "Traceback" not in err and out == "", args


def test_solve_unreachable_exit_2(bundle, capsys):
    code, _, err = run(capsys, "solve", bundle("excavator"), "--set", "boom_cyl=9")
    assert code == 2 and "outside the joint limits [1.73, 2.93]" in err
    code, _, err = run(capsys, "solve", bundle("fivebar"), "--set", "A1=3", "--set", "A2=0")
    assert code == 2 and "stay open: C" in err and "Traceback" not in err


def test_solve_other_schema_version_exit_2(bundle, capsys, tmp_path):
    b = tmp_path / "old.h5"
    shutil.copy(bundle("fourbar"), b)
    with h5py.File(b, "a") as h5:
        h5["meta"].attrs["bundle_schema"] = 999
    code, _, err = run(capsys, "solve", b, "--set", "A=1")
    assert code == 2 and "schema" in err and "Traceback" not in err


def test_verify_json_and_exit_codes(bundle, capsys, tmp_path, monkeypatch):
    b, out = bundle("slider_crank"), tmp_path / "v.json"
    code, text, _ = run(capsys, "verify", b, "--samples", "10", "--json", out)
    doc = json.loads(out.read_text())
    assert code == 0 and doc["passed"] is True and doc["bundle"] == str(b)
    assert [c["name"] for c in doc["checks"]] == list(K.CHECK_NAMES)
    assert "closure.residual" in text
    monkeypatch.setattr(K, "CLOSURE_LIMIT", 0.0)  # nothing closes to exactly zero
    code, _, _ = run(capsys, "verify", b, "--samples", "10", "--json", out)
    assert code == 1 and json.loads(out.read_text())["passed"] is False


def test_excavator_partitions_same_speeds_and_largest_block(bundle, capsys):
    code, out, _ = run(capsys, "inspect", bundle("excavator"), "--json")
    parts = {p["name"]: p for p in json.loads(out)["partitions"]}
    assert code == 0 and {"joint_space", "stroke"} <= parts.keys()
    assert parts["joint_space"]["speeds"] == parts["stroke"]["speeds"] == 4
    # recount from the run-time model: dependent coordinates of each module's own edges
    from rbc.model.compiled import CompiledModel

    m = CompiledModel.from_bundle(bundle("excavator"))
    for name in ("joint_space", "stroke"):
        dep = set(m.partitions[name].dependent.tolist())
        expected = max(sum(1 for k in mod.edges for j in range(m.v_slice(k).start,
                                                               m.v_slice(k).stop) if j in dep)
                       for mod in m.modules)
        assert parts[name]["largest_block"] == expected
    # the cylinders are passive in joint space: the bucket linkage module keeps one more
    # dependent coordinate when the strokes are independent
    assert parts["stroke"]["largest_block"] == parts["joint_space"]["largest_block"] + 1


def test_solve_names_the_coordinates_of_a_multi_coordinate_joint(tmp_path, capsys):
    """A joint name that is not itself a coordinate gets its coordinate names listed, and a
    wrongly cased name gets the right spelling."""
    from rbc.cli.main import main

    out = tmp_path / "s.h5"
    assert main(["compile", str(RECORDS / "stewart.yaml"), "-o", str(out)]) == 0
    capsys.readouterr()
    assert main(["solve", str(out), "--set", "U1=0.1"]) == 2
    assert "U1.theta1, U1.theta2" in capsys.readouterr().err
    assert main(["solve", str(out), "--set", "p1=0.8"]) == 2
    assert "did you mean 'P1'" in capsys.readouterr().err


def test_verify_reads_back_exports(tmp_path, capsys):
    """`rbc verify --mjcf --pinocchio` adds the export.* readback checks to the report."""
    out, xml, pdir, js = (tmp_path / n for n in ("f.h5", "f.xml", "pin", "v.json"))
    assert main(["compile", str(RECORDS / "fourbar.yaml"), "-o", str(out), "--mjcf", str(xml),
                 "--pinocchio", str(pdir)]) == 0
    assert main(["verify", str(out), "--samples", "2", "--mjcf", str(xml), "--pinocchio",
                 str(pdir), "--json", str(js)]) == 0
    names = [c["name"] for c in json.loads(js.read_text())["checks"]]
    assert any(n.startswith("export.mjcf.readback") for n in names)
    assert any(n.startswith("export.pinocchio.readback") for n in names)


@pytest.mark.parametrize("command", [
    ["solve"], ["forces"],
    ["plan", "--task", "platform", "--to", "0,0,0.8,0,0,0", "--duration", "1"],
    ["simulate", "--duration", "0.01", "--controller", "passive"],
])
def test_coordinate_errors_name_the_bundle_and_the_option(bundle, capsys, tmp_path, command):
    """An unknown or unreachable --set value: the message names the bundle and --set (the
    model layer that finds the mistake knows neither); exit 2, no output directory."""
    b = bundle("stewart")
    out = ["--out", str(tmp_path / "plan")] if command[0] in ("plan", "simulate") else []
    for value, problem in (("nope=1", "unknown coordinate 'nope'"), ("P1=5", "unreachable")):
        code, _, err = run(capsys, command[0], b, "--set", value, *command[1:], *out)
        assert code == 2
        assert err.startswith(f"error: {b}: --set: ") and problem in err, err
    assert not (tmp_path / "plan").exists()

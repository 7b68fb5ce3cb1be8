"""`rbc forces` end to end: the --json contract, the table, forward/inverse modes, errors."""

from __future__ import annotations

import json

import numpy as np
import pytest

from rbc.cli.main import main
from tests.verify.conftest import compile_bundle

KEYS = {"bundle", "partition", "mode", "state", "accelerations", "efforts",
        "effort_null_space", "reactions", "indeterminate", "reaction_null_space", "couplings",
        "checks"}
REACTION_KEYS = {"cut", "point", "force", "moment", "along", "effort", "free_residual",
                 "across", "indeterminate"}


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    directory = tmp_path_factory.mktemp("forces")
    return lambda name: compile_bundle(directory, name)


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_json_contract_inverse_statics(bundle, capsys):
    code, out, err = run(capsys, "forces", bundle("fourbar"), "--set", "A=0.5", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert set(doc) == KEYS and doc["mode"] == "inverse"
    assert set(doc["reactions"]) == {"A", "B", "C", "D"}
    for r in doc["reactions"].values():
        assert set(r) == REACTION_KEYS
        assert len(r["force"]) == 3 and len(r["moment"]) == 3 and len(r["free_residual"]) == 1
    assert doc["state"]["configuration"]["A"] == 0.5
    assert doc["accelerations"] == {"A": 0.0}
    # statics: the motor holds the weight, and its torque is the moment about z at A
    tau = doc["efforts"]["motor_A"]
    assert tau != 0.0 and abs(doc["reactions"]["A"]["moment"][2] - tau) <= 1e-12 * abs(tau)
    assert doc["reactions"]["C"]["cut"] and not doc["reactions"]["A"]["cut"]
    assert doc["indeterminate"] == ["A", "B", "C", "D"] and doc["reaction_null_space"] == 3
    assert doc["checks"]["passed"] and doc["checks"]["free_residual"] < 1e-12


def test_forward_with_efforts_speeds_and_a_wrench(bundle, capsys):
    b = bundle("fourbar")
    code, out, err = run(capsys, "forces", b, "--set", "A=0.5", "--velocity", "A=2",
                         "--effort", "motor_A=1", "--wrench",
                         "coupler@0.1,0,0=0,0,0.1,1,2,0", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["mode"] == "forward" and doc["efforts"] == {"motor_A": 1.0}
    assert doc["state"]["velocity"]["A"] == 2.0
    # inverse dynamics at the accelerations produced gives the effort back
    acc = doc["accelerations"]["A"]
    code, out, _ = run(capsys, "forces", b, "--set", "A=0.5", "--velocity", "A=2",
                       "--acceleration", f"A={acc!r}", "--wrench",
                       "coupler@0.1,0,0=0,0,0.1,1,2,0", "--json")
    back = json.loads(out)
    assert code == 0 and abs(back["efforts"]["motor_A"] - 1.0) <= 1e-9
    for name, r in doc["reactions"].items():
        assert np.allclose(r["force"], back["reactions"][name]["force"], rtol=0, atol=1e-9)


def test_table(bundle, capsys):
    code, out, _ = run(capsys, "forces", bundle("stewart"))
    assert code == 0
    assert "actuator efforts (inverse dynamics" in out and "act_1" in out
    assert "joint reactions" in out and "S6" in out and "cut" in out and "pass" in out


@pytest.mark.parametrize(("args", "message"), [
    (("--effort", "motr_A=1"), "--effort motr_A: not an actuator (did you mean 'motor_A'?)"),
    (("--velocity", "B=1"), "--velocity B: not an independent coordinate of partition "
                            "'default'"),
    (("--acceleration", "A=1", "--effort", "motor_A=1"), "exclude each other"),
    (("--wrench", "coupler@0,0=0,0,0,0,0,1"), "expected BODY@x,y,z=nx,ny,nz,fx,fy,fz"),
    (("--wrench", "coupler@0,0,0=0,0,0,0,0,nan"), "expected BODY@x,y,z"),
    (("--wrench", "couple@0,0,0=0,0,0,0,0,1"), "unknown body (did you mean 'coupler'?)"),
    (("--wrench", "ground@0,0,0=0,0,0,0,0,1"), "welded to the world"),
    (("--set", "A=1", "--set", "A=2"), "--set A is given twice"),
    (("--acceleration", "A"), "--acceleration 'A': expected NAME=VALUE"),
    (("--set", "Aa=1"), "unknown coordinate 'Aa'"),
])
def test_errors_exit_2(bundle, capsys, args, message):
    code, out, err = run(capsys, "forces", bundle("fourbar"), *args)
    assert code == 2 and message in err, err
    assert out == "" and "Traceback" not in err

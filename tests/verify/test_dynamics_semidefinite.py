"""Physically valid edge inputs: semi-definite body inertias (slender rods, massless helper
links) compile, verify and simulate; only a singular reduced inertia is refused."""

from __future__ import annotations

import json

import pytest
import yaml

from rbc.cli.main import main
from rbc.compiler import compile_record, compile_to_file
from rbc.model.compiled import CompiledModel
from rbc.verify.dynamics import run_dynamic_checks
from tests.conftest import RECORDS


def _fourbar(tmp_path, name: str, edit) -> object:
    doc = yaml.safe_load((RECORDS / "fourbar.yaml").read_text())
    doc["name"] = name
    edit({b["name"]: b for b in doc["bodies"]})
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def _slender(bodies: dict) -> None:
    """Every link a slender rod along its x axis: I = m L²/12 about y and z, 0 about x."""
    for name, length in (("crank", 0.1), ("coupler", 0.35), ("rocker", 0.3)):
        b = bodies[name]
        i = b["mass"] * length ** 2 / 12.0
        b["inertia"] = [0.0, i, i, 0.0, 0.0, 0.0]


def _massless_rocker(bodies: dict) -> None:
    bodies["rocker"]["mass"] = 0.0
    bodies["rocker"]["inertia"] = [0.0] * 6


def test_slender_rod_fourbar_compiles_verifies_and_simulates(tmp_path, capsys):
    path = _fourbar(tmp_path, "fourbar_slender", _slender)
    bundle = tmp_path / "slender.h5"
    compile_to_file(path, bundle)
    kin = CompiledModel.from_bundle(bundle)
    checks = run_dynamic_checks(kin, kin.partitions["default"], samples=4)
    assert all(c.passed for c in checks), [c for c in checks if not c.passed]
    assert {c.name for c in checks if "not applicable" in c.detail} <= {"curvature.omitted"}
    code = main(["simulate", str(bundle), "--controller", "passive", "--duration", "0.2",
                 "--json"])
    out = capsys.readouterr().out
    assert code == 0 and json.loads(out)["duration"] == pytest.approx(0.2)


def test_massless_helper_link_pinocchio_reference_not_applicable(tmp_path):
    """A massless rocker: M_T is singular (its pivot D moves only massless matter), the
    reduced inertia is not (D is dependent). Pinocchio's constraintDynamics cannot factor
    M_T, so that reference reports "not applicable" with the reason; the 50-digit and
    Newton–Euler references still run and pass."""
    _, report = compile_record(_fourbar(tmp_path, "fourbar_massless_rocker", _massless_rocker))
    parted = report.stages["rank"]
    checks = {c.name: c for c in run_dynamic_checks(parted.model, parted.partitions[0],
                                                    samples=4)}
    pin_check = checks["dynamics.delta_a.pinocchio"]
    assert pin_check.passed and "not applicable" in pin_check.detail
    assert "tree inertia M_T is singular" in pin_check.detail and "D" in pin_check.detail
    for name in ("dynamics.delta_a.kkt50", "dynamics.delta_f.kkt50",
                 "dynamics.delta_b.newton_euler", "dynamics.mass_pd"):
        assert checks[name].passed and checks[name].value == checks[name].value, name

"""A record whose reduced inertia is singular fails with the coordinates named."""

from __future__ import annotations

import math

import pytest
import yaml

from rbc.compiler import compile_record
from rbc.model.compiled import CompiledModel
from rbc.model.dynamics import (
    DynamicsData,
    DynamicsModel,
    SingularInertiaError,
    forward_dynamics,
    reduced_terms,
)
from rbc.verify.dynamics import run_dynamic_checks
from tests.conftest import RECORDS


@pytest.fixture
def massless_fourbar(tmp_path):
    """The shipped four-bar with massless links and a rotorless motor."""
    rec = yaml.safe_load((RECORDS / "fourbar.yaml").read_text())
    rec["name"] = "massless_fourbar"
    for b in rec["bodies"]:
        if not b.get("fixed"):
            b["mass"] = 0.0
            b["inertia"] = [0.0] * 6
    for a in rec["actuators"]:
        a["rotor_inertia"] = 0.0
    path = tmp_path / "massless_fourbar.yaml"
    path.write_text(yaml.safe_dump(rec))
    _, report = compile_record(path)
    parted = report.stages["rank"]
    return CompiledModel.from_ir(parted.modules), parted.partitions[0]


def test_forward_dynamics_names_the_coordinates(massless_fourbar):
    model, part = massless_fourbar
    dm = DynamicsModel.build(model)
    terms = reduced_terms(dm, DynamicsData.of(dm), part, part.q_ref, part.independent * 0.0)
    with pytest.raises(SingularInertiaError) as err:
        forward_dynamics(dm, terms)
    msg = str(err.value)
    assert "not positive definite" in msg
    names = [model.v_names[j] for j in part.independent]
    assert names and all(n in msg for n in names), msg


def test_verify_dynamics_fails_mass_pd_with_the_message(massless_fourbar):
    model, part = massless_fourbar
    checks = {c.name: c for c in run_dynamic_checks(model, part, samples=2)}
    pd = checks["dynamics.mass_pd"]
    assert not pd.passed and math.isnan(pd.value)
    assert "lack inertia" in pd.detail
    assert all(model.v_names[j] in pd.detail for j in part.independent)
    assert not any(c.passed for c in checks.values())

"""Declared cuts (issue 23 item 5): ``cut: required`` is a user decision the forest obeys.

The compiler still chooses the rest of the tree; a declared set that leaves some body
without a path to a root is refused naming those bodies; pre-authored trees stay refused.
Checked on the four-bar (whose default cut is C) and the Stewart platform with its cuts
declared at the five base universal joints instead of the platform spheres (the kinematic
catalogue of ``rbc verify`` must pass with the declared cuts).
"""

from __future__ import annotations

import re

import pytest

from rbc.compiler import compile_record
from rbc.errors import CompileError, RecordError
from rbc.ir.schema import parse_record_text
from rbc.verify.kinematics import run_kinematic_checks
from tests.conftest import RECORDS
from tests.passes.util import front_text


def _declare(text: str, joints: list[str]) -> str:
    """The record text with ``cut: required`` added to the named joints (block style)."""
    for name in joints:
        text, n = re.subn(rf"(\n  - name: {name}\n)", r"\1    cut: required\n", text)
        assert n == 1, name
    return text


def test_a_declared_cut_is_a_chord():
    base = (RECORDS / "fourbar.yaml").read_text()
    g = front_text(base).paths.forest.graph
    default = [g.edge_names[k] for k in front_text(base).paths.forest.chords]
    assert default == ["C"]
    mods = front_text(_declare(base, ["A"]))
    f = mods.paths.forest
    assert [f.graph.edge_names[k] for k in f.chords] == ["A"]
    assert [f.graph.edge_names[k] for k in f.declared_cuts] == ["A"]
    # A is actuated: the declared cut is reported as forced too (it should have stayed)
    assert [f.graph.edge_names[k] for k in f.forced_cuts] == ["A"]
    assert "declared: cut: required" in f.dump()


def test_declared_cuts_that_leave_no_spanning_tree_are_refused(tmp_path):
    path = tmp_path / "fourbar.yaml"
    path.write_text(_declare((RECORDS / "fourbar.yaml").read_text(), ["B", "C"]))
    with pytest.raises(CompileError) as info:
        compile_record(path)
    msg = str(info.value)
    assert "(B, C) leave no spanning tree" in msg and "bodies coupler" in msg
    assert str(path) in msg and "cycle rank 1" in msg


def test_stewart_with_cuts_declared_at_the_base(tmp_path):
    text = _declare((RECORDS / "stewart.yaml").read_text(), [f"U{i}" for i in range(2, 7)])
    path = tmp_path / "stewart.yaml"
    path.write_text(text)
    _, report = compile_record(path)
    parted = report.stages["rank"]
    model = parted.model
    assert [model.edge_names[k] for k in model.chord_edges] == [f"U{i}" for i in range(2, 7)]
    for c in run_kinematic_checks(model, parted.partitions[0], samples=4):
        assert c.passed, f"{c.name} = {c.value:.3g}: {c.detail}"


@pytest.mark.parametrize("value", ["true", "yes", "always", "forced"])
def test_other_cut_values_stay_refused(value):
    text = _declare((RECORDS / "fourbar.yaml").read_text(), ["D"]).replace(
        "cut: required", f"cut: {value}")
    with pytest.raises(RecordError, match="would pre-author the cut joints"):
        parse_record_text(text, "fourbar.yaml")

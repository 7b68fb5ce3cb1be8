"""``rbc verify --dynamics`` appends the dynamics checks to the JSON report."""

from __future__ import annotations

import json

from rbc.cli.main import main
from rbc.verify.dynamics import CHECK_NAMES


def test_verify_dynamics_json(bundle, tmp_path, capsys):
    out = tmp_path / "report.json"
    code = main(["verify", str(bundle("fourbar")), "--samples", "2", "--dynamics",
                 "--dynamics-samples", "2", "--json", str(out)])
    doc = json.loads(out.read_text())
    names = [c["name"] for c in doc["checks"]]
    assert code == 0 and doc["passed"], doc
    assert names[-len(CHECK_NAMES):] == list(CHECK_NAMES)
    assert "dynamics.delta_a.kkt50" in capsys.readouterr().out


def test_verify_without_dynamics_has_none(bundle, tmp_path):
    out = tmp_path / "report.json"
    main(["verify", str(bundle("fourbar")), "--samples", "2", "--json", str(out)])
    names = {c["name"] for c in json.loads(out.read_text())["checks"]}
    assert not names & set(CHECK_NAMES)

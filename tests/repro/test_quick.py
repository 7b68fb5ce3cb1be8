"""``make repro-quick`` in CI: every registered target on its small case list, on a local
Dask cluster, must pass and write its report, results and plots (so no target can rot)."""

from __future__ import annotations

import json

import pytest

from rbc.cli.main import main
from rbc.repro.registry import TARGETS


@pytest.mark.slow
def test_every_target_passes_on_its_quick_case_list(tmp_path):
    code = main(["repro", "--quick", "--out", str(tmp_path)])
    entries = json.loads((tmp_path / "index.json").read_text())["targets"]
    assert {n: e["status"] for n, e in entries.items()} == dict.fromkeys(TARGETS, "pass")
    assert code == 0
    for name in TARGETS:
        res = json.loads((tmp_path / name / "results.json").read_text())
        assert res["comparison"] and res["key_figures"]
        assert res["plots"] and all((tmp_path / name / p).stat().st_size > 5000
                                    for p in res["plots"])
        assert res["provenance"]["rbc_version"] and res["provenance"]["packages"]["pin"]
    index = (tmp_path / "index.md").read_text()
    assert all(f"[{n}]({n}/report.md) | pass |" in index for n in TARGETS)

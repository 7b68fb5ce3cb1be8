"""``rbc bench api`` runs, compares the API with the internal calls on the same states (the
same numbers, bit for bit) and reports its ratios; the timing itself is not asserted
(speed targets are measured by the benchmark, never by a timed unit test)."""

from __future__ import annotations

import json

from rbc.bench.api import RATIO_LIMIT, bench_api
from rbc.cli.main import main
from rbc.compiler import compile_to_file
from tests.conftest import RECORDS


def test_bench_api_reports(tmp_path, capsys):
    h5 = tmp_path / "fourbar.h5"
    compile_to_file(RECORDS / "fourbar.yaml", h5)
    r = bench_api(h5, n_states=3, rounds=2)
    assert set(r["calls"]) == {"forward_dynamics", "forward_dynamics_wrench",
                               "inverse_dynamics"}
    for c in r["calls"].values():
        assert c["api_us"] > 0 and c["internal_us"] > 0 and c["ratio"] > 0
        assert c["max_difference"] == 0.0  # the API computes exactly what it wraps
    assert r["calls"]["forward_dynamics"]["evaluator"] == "kernel"
    assert r["passed"] == all(c["ratio"] <= RATIO_LIMIT for c in r["calls"].values())
    code = main(["bench", "api", str(h5), "--states", "2", "--rounds", "1", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == (0 if doc["passed"] else 1) and doc["states"] == 2
    code = main(["bench", "api", str(h5), "--states", "2", "--rounds", "1"])
    text = capsys.readouterr().out
    assert "inverse_dynamics" in text and "limit 1.1" in text and code in (0, 1)

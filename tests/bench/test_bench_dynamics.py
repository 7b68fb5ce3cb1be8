"""``rbc bench dynamics`` runs and reports positive timings, ratios and a small δ_a."""

from __future__ import annotations

import json

from rbc.bench.dynamics import bench_dynamics
from rbc.cli.main import main
from rbc.compiler import compile_to_file
from tests.conftest import RECORDS


def test_bench_dynamics_reports(tmp_path, capsys):
    h5 = tmp_path / "fourbar.h5"
    compile_to_file(RECORDS / "fourbar.yaml", h5)
    r = bench_dynamics(h5, n_states=3, single_repeats=2)
    for side in ("ours", "pinocchio"):
        assert r[side]["single_us"] > 0 and r[side]["batched_us"] > 0
    assert r["ratio"]["single"] > 0 and r["ratio"]["batched"] > 0
    # the kernel and the reference evaluator each agree with Pinocchio (issue 4 limit): a fast
    # wrong answer fails
    assert r["delta_a"] < 1e-9 and r["delta_a_reference"] < 1e-9
    assert main(["bench", "dynamics", str(h5), "--states", "3", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["states"] == 3 and out["ratio"]["batched"] > 0
    assert main(["bench", "dynamics", str(h5), "--states", "2"]) == 0
    text = capsys.readouterr().out
    assert "Pinocchio" in text and "batched (2 states)" in text

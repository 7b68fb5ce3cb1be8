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


def test_peer_sees_friction_at_tree_and_cut_joints(tmp_path):
    """Coulomb friction on every pin of the four-bar — the cut joint C's too, which the
    Pinocchio peer has no coordinate for (carried to the tree by virtual power,
    rbc.bench.dynamics.peer_efforts) — and drive friction at the motor: the peer's
    accelerations still equal rbc's (δ_a at round-off; without the carried efforts it read
    ~1e-1 on the humanoid's screws)."""
    text = (RECORDS / "fourbar.yaml").read_text()
    text = text.replace("    axis: [0, 0, 1]\n", "    axis: [0, 0, 1]\n    friction: 0.4\n")
    text = text.replace("    speed_limit: 10", "    speed_limit: 10\n    coulomb: 0.05")
    assert text.count("friction: 0.4") == 4
    rec = tmp_path / "fourbar_friction.yaml"
    rec.write_text(text)
    h5 = tmp_path / "f.h5"
    compile_to_file(rec, h5)
    r = bench_dynamics(h5, n_states=4, single_repeats=2)
    # the same model in two formulations: round-off amplified by the four-bar's conditioning
    assert r["delta_a"] < 1e-9 and r["delta_a_reference"] < 1e-9

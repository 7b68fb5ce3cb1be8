"""`rbc walk` through the real entry point: exit codes and JSON."""

from __future__ import annotations

import json

from rbc.cli.main import main


def test_unknown_walker_model_is_exit_2(capsys):
    code = main(["walk", "run", "--model", "rabit", "--controller", "fl", "--strides", "1"])
    err = capsys.readouterr().err
    assert code == 2 and "rabbit" in err and "Traceback" not in err


def test_walk_fixedpoint_json(capsys):
    code = main(["walk", "fixedpoint", "--model", "compass", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["spectral_radius"] < 1.0
    assert {"fixed_point", "eigenvalues", "step_period"} <= out.keys()


def test_walk_rejects_a_file_as_out_dir_and_a_non_positive_step(tmp_path, capsys):
    existing = tmp_path / "x.yaml"
    existing.write_text("")
    assert main(["walk", "run", "--model", "compass", "--strides", "1",
                 "--out", str(existing)]) == 2
    assert "not a directory" in capsys.readouterr().err
    assert main(["walk", "run", "--model", "compass", "--dt", "-0.001"]) == 2


def test_walk_rejects_bad_batch_and_environment_words(capsys):
    assert main(["walk", "batch", "--workers", "0", "--samples", "1"]) == 2
    for bad in (["--ice", "2:1:0.3"], ["--ice", "1:2:-0.3"], ["--trip", "1.5:0.1:3:0"],
                ["--safety-filter", "projection", "--torso-bounds", "0.2:0.1"]):
        assert main(["walk", "run", "--model", "rabbit", "--controller", "fl", "--strides",
                     "1", *bad]) == 2, bad
    assert "Traceback" not in capsys.readouterr().err

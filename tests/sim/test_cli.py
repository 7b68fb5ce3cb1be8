"""``rbc simulate``: outputs, JSON summary keys, exit status 2 on bad requests."""

from __future__ import annotations

import json
import re

import h5py
import pytest

from rbc.cli.main import main
from tests.sim.conftest import REFERENCES

SUMMARY_KEYS = {"tracking_rms", "port_rms", "peak_effort", "clipped_steps", "max_loop_gap",
                "energy_ledger_residual", "real_time_factor"}


def test_simulate_writes_log_summary_and_plots(bundles, tmp_path, capsys):
    out = tmp_path / "run"
    code = main(["simulate", str(bundles["stewart"]), "--backend", "mujoco", "--reference",
                 str(REFERENCES / "stewart.csv"), "--duration", "0.1", "--reference-dt",
                 "0.02", "--out", str(out), "--json"])
    assert code == 0
    summary = json.loads(capsys.readouterr().out)
    assert SUMMARY_KEYS <= set(summary)
    assert set(summary["port_rms"]) == {f"act_{i}" for i in range(1, 7)}
    assert json.loads((out / "summary.json").read_text()) == summary
    with h5py.File(out / "log.h5") as h5:
        assert h5["time"].shape == (101,)
        assert h5["control/effort"].shape == (100, 6)
        assert h5["tasks/platform/position"].shape == (101, 3)
        assert h5.attrs["backend"] == "mujoco"
    for png in ("tracking.png", "efforts.png", "loop_gaps.png"):
        assert (out / png).stat().st_size > 1000


def test_passive_release_from_set_values(bundles, capsys):
    code = main(["simulate", str(bundles["fourbar"]), "--controller", "passive", "--set",
                 "A=0.5", "--velocity", "A=1.0", "--duration", "0.02"])
    assert code == 0
    assert "energy ledger residual" in capsys.readouterr().out


@pytest.mark.parametrize("args, message", [
    (["--backend", "bullet"], "unknown backend 'bullet'"),
    (["--controller", "pd"], "give --reference"),
    (["--reference", "EXC"], "unknown coordinate 'slew'"),
    (["--controller", "passive", "--set", "B=0.3"], "dependent coordinate"),
    (["--controller", "passive", "--velocity", "D=1"], "not an independent coordinate"),
    (["--controller", "passive", "--dt", "0.001", "--control-dt", "0.0025"],
     "integer multiple"),
])
def test_bad_requests_exit_2_with_a_message(bundles, tmp_path, capsys, args, message):
    args = [str(REFERENCES / "excavator.yaml") if a == "EXC" else a for a in args]
    out = tmp_path / "never"
    code = main(["simulate", str(bundles["fourbar"]), "--duration", "0.01", "--out",
                 str(out), *args])
    assert code == 2
    err = capsys.readouterr().err
    assert "error:" in err
    assert re.search(message, err), err
    assert not out.exists()  # nothing written

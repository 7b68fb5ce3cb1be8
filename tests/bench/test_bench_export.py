"""``rbc bench export``: rows per chain (fresh-process export, peak memory, MuJoCo loads),
the JSON keys, and exit 2 on bad loop counts."""

from __future__ import annotations

import json

from rbc.bench.export import bench_export
from rbc.cli.main import main

ROW_KEYS = {"loops", "joints", "export_seconds", "per_loop_ms", "ratio", "load_seconds",
            "peak_mb_before", "peak_mb_export", "peak_mb_load", "xml_mb", "loads", "message"}


def test_rows_and_json(capsys):
    rows = bench_export([3, 2])
    assert [r["loops"] for r in rows] == [2, 3] and rows[0]["ratio"] == 1.0
    for r in rows:
        assert set(r) == ROW_KEYS and r["loads"] and r["message"] == ""
        assert 0 < r["peak_mb_before"] <= r["peak_mb_export"] <= r["peak_mb_load"]
        assert r["export_seconds"] > 0 and r["xml_mb"] > 0 and r["joints"] == 4 * r["loops"]
    assert main(["bench", "export", "--loops", "1", "--json"]) == 0
    assert set(json.loads(capsys.readouterr().out)["chains"][0]) == ROW_KEYS


def test_bad_loop_counts_exit_2(capsys):
    for text in ("0", "a,b", "10001"):
        assert main(["bench", "export", "--loops", text]) == 2
        assert "--loops" in capsys.readouterr().err

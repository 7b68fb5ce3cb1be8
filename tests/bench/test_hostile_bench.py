"""``rbc bench hostile``: the case catalogue and its measuring run (two cases here; the full
table is the closing note of issue #14, `rbc bench hostile`)."""

from __future__ import annotations

from rbc.bench.hostile import CASES, run_cases
from rbc.cli.main import main


def test_catalogue_covers_every_class_and_lists(capsys):
    assert {c.group for c in CASES} == {0, 1, 2, 3, 4, 5, 6}
    assert len({c.name for c in CASES}) == len(CASES)
    assert main(["bench", "hostile", "--list"]) == 0
    out = capsys.readouterr().out
    assert all(c.name in out for c in CASES)
    assert main(["bench", "hostile", "no-such-case"]) == 2


def test_cases_run_in_a_fresh_interpreter_with_their_peak_memory():
    peer, bomb = run_cases(["peer", "yaml-bomb-record"])
    assert peer.ok and peer.code == 0
    assert bomb.ok and bomb.code == 2 and "YAML aliases expand" in bomb.message
    # both are the interpreter and its imports (tens of MiB); the 9⁹-leaf tree, had it been
    # built, would be tens of GiB
    assert 10 < peer.peak_mib < 1024 and 10 < bomb.peak_mib < 1024

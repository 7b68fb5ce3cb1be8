"""The reproduction harness: registry, published tables, the shared writer (report,
results, index), plot labels, statuses, failed cases kept with their inputs."""

from __future__ import annotations

import json

import pytest

from rbc.errors import UsageError
from rbc.repro import registry, report
from rbc.repro.harness import run_targets
from rbc.repro.plots import pyplot, save
from rbc.repro.published import load_published, parse_published
from rbc.safeio import OUTPUT_MARKER
from tests.repro import fake_target

FAKE = "fake-target"
TABLE = """
target: fake-target
figures:
  - {key: count, figure: squares computed, unit: '1', paper: 4, paper_robot: p,
     ours_robot: o, compare: ratio, source: a made-up number for the test}
  - {key: sum, figure: their sum, unit: '1', paper: null, paper_robot: —, ours_robot: o,
     compare: difference, source: not published}
"""


@pytest.fixture
def fake(monkeypatch):
    """The fake target registered, with its published table; quiet progress."""
    monkeypatch.setitem(registry.TARGETS, FAKE, "tests.repro.fake_target")
    monkeypatch.setattr(report, "load_published",
                        lambda name: parse_published(TABLE, FAKE) if name == FAKE
                        else load_published(name))
    for k, v in {"raise": False, "unlabelled": False, "fail_case": True}.items():
        monkeypatch.setitem(fake_target.MODE, k, v)
    return {"scheduler": "synchronous", "progress": lambda label: (lambda *_: None)}


def test_every_registered_target_resolves_with_a_published_table():
    for name in registry.TARGETS:
        module = registry.target_module(name)
        assert module.TITLE and callable(module.run)
        pub = load_published(name)
        assert pub, f"{name}: no published/{name}.yaml"
        for p in pub:  # every number has a source, and "not published" says so
            assert p.source
            assert (p.paper is None) == p.source.startswith("not published"), p.key


def test_unknown_target_is_a_usage_error():
    with pytest.raises(UsageError, match="unknown reproduction target 'table5-solver' "
                                         r"\(did you mean 'table5-solvers'\?\)"):
        registry.select(["table5-solver"])
    assert registry.select([]) == list(registry.TARGETS)


@pytest.mark.parametrize("text, message", [
    ("target: other\nfigures: []", "expected a mapping with `target: fake-target`"),
    ("target: fake-target\nfigures: [{key: a}]", "missing figure, unit, paper"),
    (TABLE.replace("compare: ratio", "compare: percent"), "compare: 'percent'"),
    (TABLE.replace("paper: 4", "paper: four"), "paper: expected a number or null"),
    (TABLE.replace("key: sum", "key: count"), "'count' is listed twice"),
])
def test_malformed_published_tables_are_refused(text, message):
    with pytest.raises(ValueError, match=message):
        parse_published(text, FAKE)


def test_comparison_ratio_difference_and_not_published():
    pub = parse_published(TABLE, FAKE)
    rows = report.comparison(pub, {"count": 3.0, "sum": 14.0})
    assert rows[0]["ratio"] == pytest.approx(0.75) and rows[0]["paper"] == 4.0
    assert rows[1]["paper"] is None and rows[1]["difference"] is None
    assert report.comparison(pub, {})[0]["ours"] is None
    assert report.fmt(None) == "—" and report.fmt(1.5e-14) == "1.500e-14"


def test_plots_need_labelled_units(tmp_path):
    plt = pyplot()
    fig, ax = plt.subplots()
    ax.plot([0, 1], [1, 2])
    ax.set_xlabel("time")  # no unit
    ax.set_ylabel("gap [m]")
    with pytest.raises(ValueError, match="x label 'time'"):
        save(fig, tmp_path / "bad.png")
    assert not (tmp_path / "bad.png").exists()


def test_a_run_writes_report_results_and_index(fake, tmp_path):
    (run,) = run_targets([FAKE], tmp_path, quick=True, **fake)
    assert run.status == "fail"  # case 2 raised: kept with its input, not lost
    d = tmp_path / FAKE
    assert sorted(p.name for p in d.iterdir()) == [OUTPUT_MARKER, "line.png", "report.md",
                                                    "results.json"]
    res = json.loads((d / "results.json").read_text())
    assert res["status"] == "fail" and res["quick"] is True
    assert res["failures"][0]["index"] == 2 and res["failures"][0]["input"] == "2"
    assert res["failures"][0]["error"] == "ValueError: two is refused"
    prov = res["provenance"]
    assert prov["rbc_version"] and prov["packages"]["numpy"] and "commit" in prov["git"]
    assert prov["scheduler"] == "synchronous" and res["seeds"] == {"root": 20260927,
                                                                   "none": 0}
    assert res["comparison"][0]["ours"] == 3.0 and res["comparison"][0]["ratio"] == 0.75
    text = (d / "report.md").read_text()
    assert "| squares computed | p / o | 4 | 3 | 1 | 0.75× |" in text
    assert "not published" in text and "## Failed cases" in text and "two is refused" in text
    assert "Nothing differs." in text and "![line.png](line.png)" in text
    index = (tmp_path / "index.md").read_text()
    assert f"[{FAKE}]({FAKE}/report.md) | fail | 3 squares |" in index
    assert "| [table5-solvers](table5-solvers/report.md) | not run |" in index


def test_statuses_and_index_across_runs(fake, tmp_path, monkeypatch):
    monkeypatch.setitem(fake_target.MODE, "fail_case", False)
    (ok,) = run_targets([FAKE], tmp_path, **fake)
    assert ok.status == "pass" and ok.outcome.figures["count"] == 6.0
    monkeypatch.setitem(fake_target.MODE, "raise", True)
    (bad,) = run_targets([FAKE], tmp_path, **fake)
    assert bad.status == "error" and "RuntimeError: the fake target broke" in bad.error
    text = (tmp_path / FAKE / "report.md").read_text()
    assert "## Error" in text and "the fake target broke" in text
    assert not list(tmp_path.glob(".*"))  # no partial directories left behind
    entries = json.loads((tmp_path / "index.json").read_text())["targets"]
    assert entries[FAKE]["status"] == "error"
    monkeypatch.setitem(fake_target.MODE, "raise", False)
    monkeypatch.setitem(fake_target.MODE, "unlabelled", True)
    (unlabelled,) = run_targets([FAKE], tmp_path, **fake)
    assert unlabelled.status == "error" and "every axis needs a label" in unlabelled.error


def test_cli_lists_targets_and_exits_1_unless_all_pass(fake, tmp_path, capsys):
    from rbc.cli.main import main

    assert main(["repro", "--list"]) == 0
    listing = capsys.readouterr().out
    assert all(name in listing for name in registry.TARGETS)
    assert main(["repro", FAKE, "--quick", "--scheduler", "synchronous", "--out",
                 str(tmp_path), "--json"]) == 1
    line = json.loads(capsys.readouterr().out.splitlines()[0])
    assert line["target"] == FAKE and line["status"] == "fail"
    assert main(["repro", "nope"]) == 2
    # a negative root seed is refused at option parsing (numpy seeds are ≥ 0), nothing written
    assert main(["repro", FAKE, "--quick", "--seed", "-5", "--out", str(tmp_path / "neg")]) == 2
    assert not (tmp_path / "neg").exists()


def test_a_directory_rbc_did_not_write_is_refused_before_any_target_runs(fake, tmp_path):
    """`rbc repro --out ROOT` never replaces ROOT/NAME, a file ROOT or a foreign index.md."""
    from rbc.errors import UsageError

    mine = tmp_path / "mine"
    (mine / FAKE).mkdir(parents=True)
    (mine / FAKE / "thesis.tex").write_text("years of work")
    with pytest.raises(UsageError, match="not written by rbc"):
        run_targets([FAKE], mine, **fake)
    assert (mine / FAKE / "thesis.tex").read_text() == "years of work"
    assert not (mine / "index.md").exists()
    afile = tmp_path / "afile"
    afile.write_text("x")
    with pytest.raises(UsageError, match="not a directory"):
        run_targets([FAKE], afile, **fake)
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "index.md").write_text("# my notes")
    with pytest.raises(UsageError, match="index.md rbc did not write"):
        run_targets([FAKE], notes, **fake)
    assert (notes / "index.md").read_text() == "# my notes"
    inputs = tmp_path / "inputs"  # a folder of someone's files (say records/)
    inputs.mkdir()
    (inputs / "robot.yaml").write_text("name: r")
    with pytest.raises(UsageError, match="not written by rbc"):
        run_targets([FAKE], inputs, **fake)
    assert sorted(p.name for p in inputs.iterdir()) == ["robot.yaml"]
    (ok,) = run_targets([FAKE], tmp_path / "fresh", **fake)  # a new root is fine, twice
    (again,) = run_targets([FAKE], tmp_path / "fresh", **fake)
    assert (tmp_path / "fresh" / FAKE / "report.md").is_file()

"""`rbc compile` and `rbc inspect` end to end: bundle contents, JSON keys, errors, exit codes."""

from __future__ import annotations

import hashlib
import json

import h5py
import pytest

from rbc.cli.main import main
from rbc.ir.bundle import BUNDLE_SCHEMA
from tests.conftest import EXAMPLES, RECORDS

SHIPPED = ["fourbar", "slider_crank", "fivebar", "stewart", "excavator"]
JSON_KEYS = {"bodies", "joints", "components", "cycle_rank", "tree_joints", "cut_joints",
             "chords", "modules", "nq", "nv", "nq_tree", "nv_tree"}


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("name", SHIPPED)
def test_every_shipped_record_compiles(tmp_path, capsys, name):
    out = tmp_path / f"{name}.h5"
    code, text, _ = run(capsys, "compile", str(RECORDS / f"{name}.yaml"), "-o", str(out))
    assert code == 0 and out.is_file() and f"compiled {name}" in text
    code, text, _ = run(capsys, "inspect", str(out), "--json")
    assert code == 0
    summary = json.loads(text)
    assert JSON_KEYS <= summary.keys()
    assert summary["cycle_rank"] == len(summary["cut_joints"]) == len(summary["chords"])
    assert all({"joint", "path_length"} <= c.keys() for c in summary["chords"])
    assert all({"chords", "size"} <= m.keys() for m in summary["modules"])


def test_conformance_example_compiles(tmp_path, capsys):
    code, _, err = run(capsys, "compile", str(EXAMPLES / "fourbar_v1.yaml"),
                       "-o", str(tmp_path / "f.h5"))
    assert code == 0, err


def test_bundle_provenance_and_schema(tmp_path, capsys):
    rec = RECORDS / "stewart.yaml"
    out = tmp_path / "s.h5"
    assert run(capsys, "compile", str(rec), "-o", str(out))[0] == 0
    with h5py.File(out) as h5:
        meta = h5["meta"].attrs
        assert int(meta["bundle_schema"]) == BUNDLE_SCHEMA
        assert meta["record_sha256"] == hashlib.sha256(rec.read_bytes()).hexdigest()
        for key in ("rbc_version", "numpy_version", "pinocchio_version", "mujoco_version"):
            assert meta[key] and meta[key] != "not installed"
        assert h5["record/text"][()].decode() == rec.read_text()
        assert h5["coordinates"].attrs["nv_tree"] == 21
        names = [s.decode() for s in h5["coordinates/q_name"][()]]
        assert len(names) == h5["coordinates"].attrs["nq"] and "S2.qw" in names


def test_excavator_loops_and_modules_are_listed(tmp_path, capsys):
    out = tmp_path / "e.h5"
    assert run(capsys, "compile", str(RECORDS / "excavator.yaml"), "-o", str(out))[0] == 0
    code, text, _ = run(capsys, "inspect", str(out))
    assert code == 0 and "dependency modules" in text
    summary = json.loads(run(capsys, "inspect", str(out), "--json")[1])
    # one loop per hydraulic cylinder (boom, arm, bucket) plus the bucket four-bar linkage
    assert summary["cycle_rank"] == 4
    cylinders = [a["joint"] for a in summary["actuators"] if a["joint"] != "slew"]
    assert all(c in summary["tree_joints"] for c in cylinders)
    assert sorted(len(m["chords"]) for m in summary["modules"]) == [1, 1, 2]


def test_dump_after_and_time_passes(tmp_path, capsys):
    code, out, err = run(capsys, "compile", str(RECORDS / "fourbar.yaml"), "-o",
                         str(tmp_path / "f.h5"), "--dump-after", "paths", "--time-passes")
    assert code == 0
    assert "IR after paths" in out and "lca" in out
    assert all(p in err for p in ("parse", "graph", "forest", "paths", "modules", "codegen"))


def test_unknown_pass_name_is_exit_2(tmp_path, capsys):
    out = tmp_path / "f.h5"
    code, _, err = run(capsys, "compile", str(RECORDS / "fourbar.yaml"), "-o", str(out),
                       "--dump-after", "forrest")
    assert code == 2 and "forest" in err and not out.exists()


BAD = {
    "unknown key": ("rbc: 1\nname: x\nbodys: []\n", "bodies"),
    "empty file": ("", "empty"),
    "not a mapping": ("- 1\n- 2\n", "mapping"),
    "schema version": ("rbc: 7\nname: x\nbodies: []\njoints: []\n", "schema"),
    "pre-authored tree": ("rbc: 1\nname: x\nbodies: [{name: g, fixed: true}]\njoints: []\n"
                          "spanning_tree: [a]\n", "generat"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_records_exit_2_without_output(tmp_path, capsys, case):
    text, needle = BAD[case]
    rec = tmp_path / "bad.yaml"
    rec.write_text(text)
    out = tmp_path / "bad.h5"
    code, stdout, err = run(capsys, "compile", str(rec), "-o", str(out))
    assert code == 2
    assert str(rec) in err and needle in err.lower()
    assert "Traceback" not in err and not out.exists()
    assert list(tmp_path.iterdir()) == [rec]  # no temporary file left behind either


def test_missing_record_and_bad_bundle_exit_2(tmp_path, capsys):
    code, _, err = run(capsys, "compile", str(tmp_path / "nope.yaml"), "-o", str(tmp_path / "o.h5"))
    assert code == 2 and "nope.yaml" in err
    fake = tmp_path / "fake.h5"
    fake.write_text("not hdf5")
    code, _, err = run(capsys, "inspect", str(fake))
    assert code == 2 and "HDF5" in err


def test_bundle_of_another_schema_is_refused(tmp_path, capsys):
    out = tmp_path / "s.h5"
    assert run(capsys, "compile", str(RECORDS / "fourbar.yaml"), "-o", str(out))[0] == 0
    with h5py.File(out, "a") as h5:
        h5["meta"].attrs["bundle_schema"] = BUNDLE_SCHEMA + 1
    code, _, err = run(capsys, "inspect", str(out))
    assert code == 2 and "schema" in err and "recompile" in err


def test_output_directory_missing_is_exit_2(tmp_path, capsys):
    code, _, err = run(capsys, "compile", str(RECORDS / "fourbar.yaml"), "-o",
                       str(tmp_path / "no" / "dir" / "f.h5"))
    assert code == 2 and "does not exist" in err


def test_bench_compile_reports_ratios(capsys):
    code, out, _ = run(capsys, "bench", "compile", "--loops", "2,8", "--repeats", "1", "--json")
    assert code == 0
    rows = json.loads(out)["chains"]
    assert [r["loops"] for r in rows] == [2, 8] and rows[0]["ratio"] == 1.0


def test_outputs_have_normal_permissions(tmp_path, capsys):
    """Atomic writes must not leak mkstemp's 0600 mode onto the user's files."""
    import os

    old = os.umask(0o022)
    try:
        out = tmp_path / "f.h5"
        assert run(capsys, "compile", str(RECORDS / "fourbar.yaml"), "-o", str(out),
                   "--mjcf", str(tmp_path / "f.xml"))[0] == 0
    finally:
        os.umask(old)
    assert out.stat().st_mode & 0o777 == 0o644
    assert (tmp_path / "f.xml").stat().st_mode & 0o777 == 0o644


@pytest.mark.parametrize("name", ["a/b", ".", ".."])
def test_partition_name_that_cannot_name_a_group_keeps_the_old_bundle(tmp_path, capsys, name):
    """'a/b' wrote a nested group and '.' the root's own datasets: a bundle that does not read
    back, written over a good one. Refused before any work, the old bundle untouched."""
    out = tmp_path / "keep.h5"
    assert run(capsys, "compile", str(RECORDS / "fourbar.yaml"), "-o", str(out))[0] == 0
    before = out.read_bytes()
    code, _, err = run(capsys, "compile", str(RECORDS / "fourbar.yaml"), "-o", str(out),
                       "--partition", f"{name}=D")
    assert code == 2 and f"--partition '{name}=D'" in err and "plain name" in err
    assert out.read_bytes() == before and sorted(tmp_path.iterdir()) == [out]


def test_bundle_writer_refuses_a_dot_component(tmp_path):
    """The writer's own guard (rbc.ir.bundle.write_bundle), whatever slipped past the
    option checks: a '.' or empty path component writes nothing."""
    from rbc.errors import BundleError
    from rbc.ir.bundle import BundleData, write_bundle

    for path in ("/partitions/./independent", "/modes//q", "meta/x"):
        data = BundleData()
        data.datasets[path] = [1, 2]
        with pytest.raises(BundleError, match="nothing was written"):
            write_bundle(tmp_path / "x.h5", data)
        assert not list(tmp_path.iterdir())


def test_modes_all_with_a_slash_in_a_support_name_names_the_field(tmp_path, capsys):
    """A '/' is allowed in a support name (a composed record's member prefix) but cannot go
    into the mode names --modes all builds: the error names the file and the field."""
    rec = tmp_path / "go2.yaml"
    rec.write_text((RECORDS / "go2.yaml").read_text().replace("- name: FL\n", "- name: F/L\n"))
    out = tmp_path / "go2.h5"
    code, _, err = run(capsys, "compile", str(rec), "-o", str(out), "--modes", "all")
    assert code == 2 and f"{rec}: supports[0].name" in err and "'/'" in err
    assert not out.exists()


@pytest.mark.parametrize("json_flag", [False, True])
def test_closed_standard_output_is_status_141_without_a_traceback(tmp_path, capsys, json_flag):
    """``rbc inspect B | head``: the reader gone, the command ends quietly with 141 (128 +
    SIGPIPE), never 1 (a failed check) — through rich's console and through click's echo."""
    import os
    import subprocess
    import sys

    bundle = tmp_path / "s.h5"
    assert run(capsys, "compile", str(RECORDS / "stewart.yaml"), "-o", str(bundle))[0] == 0
    read, write = os.pipe()
    os.close(read)  # the reader is gone before the first write: EPIPE on it, deterministically
    argv = [sys.executable, "-m", "rbc.cli.main", "inspect", str(bundle)]
    argv += ["--json"] if json_flag else []
    done = subprocess.run(argv, stdout=write, stderr=subprocess.PIPE, text=True, timeout=120)
    os.close(write)
    assert done.returncode == 141, done.stderr
    assert "Traceback" not in done.stderr

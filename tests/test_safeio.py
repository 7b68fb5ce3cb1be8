"""The shared untrusted-input and output mechanisms (rbc.safeio), one hostile case each,
plus property-based checks of the YAML and JSON decoders and of the name sanitiser."""

from __future__ import annotations

import io
import json
import os
import signal
import stat
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rbc import safeio
from rbc.bench import hostile
from rbc.errors import InputError, RbcError, UsageError

# bounded for CI: each property runs at most this many examples, none over 2 s
FUZZ = settings(max_examples=150, deadline=2000, suppress_health_check=[HealthCheck.too_slow])


alias_bomb = hostile.alias_bomb  # (a YAML alias tree of 9⁹ leaves, shared with the bench)


# ------------------------------------------------------------------------------ reading


def test_dev_zero_is_refused_before_reading() -> None:
    # refused by stat: reading it would never end
    with pytest.raises(InputError, match="character device; rbc reads regular files only"):
        safeio.read_bytes("/dev/zero", "record")


def test_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.yaml"
    os.mkfifo(fifo)
    with pytest.raises(InputError, match="FIFO"):
        safeio.read_bytes(fifo, "record")


def test_directory_missing_and_oversized(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="is a directory"):
        safeio.read_text(tmp_path, "record")
    with pytest.raises(InputError, match="file not found"):
        safeio.read_text(tmp_path / "nope.yaml", "record")
    big = tmp_path / "big.yaml"
    big.write_bytes(b"#" * 2048)
    with pytest.raises(InputError, match=r"exceeds the config size limit of 1 KiB.*--limit "
                       r"config=SIZE"):
        safeio.read_text(big, "config", limit=1024)
    safeio.set_size_limit("config", 4096)
    try:
        assert len(safeio.read_text(big, "config")) == 2048
    finally:
        safeio.reset_size_limits()
    with pytest.raises(UsageError, match="unknown kind"):
        safeio.set_size_limit("nope", 10)


def test_not_utf8(tmp_path: Path) -> None:
    p = tmp_path / "x.yaml"
    p.write_bytes(b"name: \xff\xfe")
    with pytest.raises(InputError, match="not UTF-8"):
        safeio.read_text(p, "record")


def test_parse_size() -> None:
    assert safeio.parse_size("4096") == 4096
    assert safeio.parse_size("64M") == 64 << 20
    assert safeio.parse_size("1.5GiB") == 3 << 29
    with pytest.raises(UsageError):
        safeio.parse_size("lots")


# ------------------------------------------------------------------------------ YAML


def test_alias_bomb_is_refused_before_construction() -> None:
    # measured on the node graph (113 nodes); constructing it would build 9e8 objects
    with pytest.raises(InputError, match=r"YAML aliases expand the document to 926177116 "
                       r"nodes, beyond the budget"):
        safeio.load_yaml(alias_bomb(), "bomb.yaml")


def test_shared_anchors_within_budget_are_fine() -> None:
    text = "base: &b {mass: 1.0, inertia: [1, 1, 1, 0, 0, 0]}\nbodies:\n" + "".join(
        f"  - {{name: b{i}, props: *b}}\n" for i in range(2000))
    data = safeio.load_yaml(text, "ok.yaml")
    assert data["bodies"][1999]["props"]["mass"] == 1.0


def test_recursive_alias_duplicate_keys_and_depth() -> None:
    with pytest.raises(InputError, match="recursive YAML alias"):
        safeio.load_yaml("a: &a [1, *a]\n", "r.yaml")
    with pytest.raises(InputError, match=r"r\.yaml: x: duplicate key 'y' \(line 3\)"):
        safeio.load_yaml("x:\n  y: 1\n  y: 2\n", "r.yaml")
    deep = "[" * 70 + "]" * 70
    with pytest.raises(InputError, match="nesting depth"):
        safeio.load_yaml(deep, "r.yaml")
    with pytest.raises(InputError, match="YAML syntax error at line 2"):
        safeio.load_yaml("a: [1, 2\n", "r.yaml")
    with pytest.raises(InputError, match="YAML error at line 1, column 4: could not determine "
                       "a constructor"):  # plain data only, never Python objects
        safeio.load_yaml("a: !!python/object/apply:os.system ['true']\n", "r.yaml")


def test_merge_key_hiding_a_field_is_refused() -> None:
    text = "base: &b {mass: 1.0, com: [0, 0, 0]}\nbody: {<<: *b, mass: 2.0}\n"
    with pytest.raises(InputError, match=r"body\.mass: key 'mass' is given twice through the "
                       r"merge key '<<'"):
        safeio.load_yaml(text, "m.yaml")
    two = "a: &a {x: 1}\nb: &b {x: 2}\nc: {<<: [*a, *b]}\n"
    with pytest.raises(InputError, match="given twice through the merge key"):
        safeio.load_yaml(two, "m.yaml")
    fine = safeio.load_yaml("base: &b {mass: 1.0}\nbody: {<<: *b, com: [0, 0, 0]}\n", "m.yaml")
    assert fine["body"] == {"mass": 1.0, "com": [0, 0, 0]}


yaml_text = st.one_of(
    st.text(max_size=300),
    st.lists(st.sampled_from(["a:", " b:", "- ", "&x ", "*x", "<<: ", "[", "]", "{", "}", ",",
                              "1", "1e308", ".nan", "!!str", "? ", "\n", "  ", "'q'", "&y",
                              "*y", "~", ": "]), max_size=60).map("".join),
)


@FUZZ
@given(yaml_text)
def test_load_yaml_returns_data_or_input_error(text: str) -> None:
    try:
        safeio.load_yaml(text, "fuzz.yaml")
    except InputError as err:
        assert str(err).startswith("fuzz.yaml")


# ------------------------------------------------------------------------------ JSON


def test_json_depth_bomb_and_nan() -> None:
    with pytest.raises(InputError, match="nesting"):
        safeio.load_json("[" * 200_000 + "]" * 200_000, "p.json")
    with pytest.raises(InputError, match="nesting"):
        safeio.load_json("[" * 100 + "]" * 100, "p.json")
    with pytest.raises(InputError, match="non-finite number NaN"):
        safeio.load_json('{"w": NaN}', "p.json")
    assert safeio.load_json('{"w": [1, 2]}', "p.json") == {"w": [1, 2]}


@FUZZ
@given(st.text(alphabet='[]{}":,0123456789.eE-tnrufalsNI ', max_size=200))
def test_load_json_returns_data_or_input_error(text: str) -> None:
    try:
        safeio.load_json(text, "fuzz.json")
    except InputError as err:
        assert str(err).startswith("fuzz.json")


# ------------------------------------------------------------------------------ zip


def _zip_bytes(members: dict[str, bytes]) -> zipfile.ZipFile:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in members.items():
            z.writestr(name, data)
    return zipfile.ZipFile(io.BytesIO(buf.getvalue()))


def test_zip_ratio_and_size_limits() -> None:
    with pytest.raises(InputError, match=r"a\.pt: archive/data/0: inflates .* zip bomb"):
        safeio.check_zip(_zip_bytes({"archive/data/0": bytes(8 << 20)}), "a.pt", "policy")
    safeio.check_zip(_zip_bytes({"archive/data/0": bytes(1 << 20)}), "a.pt", "policy")
    safeio.set_size_limit("policy", 1 << 20)
    try:
        with pytest.raises(InputError, match="member archive/data/0 .* exceeds"):
            safeio.check_zip(_zip_bytes({"archive/data/0": os.urandom(2 << 20)}), "a.pt",
                             "policy")
    finally:
        safeio.reset_size_limits()


# ------------------------------------------------------------------------------ outputs


def test_atomic_directory_replaces_only_its_own_outputs(tmp_path: Path) -> None:
    out = tmp_path / "run"
    with safeio.atomic_directory(out) as d:
        (d / "log.txt").write_text("first")
    assert (out / "log.txt").read_text() == "first"
    assert (out / safeio.OUTPUT_MARKER).is_file()
    with safeio.atomic_directory(out) as d:
        (d / "other.txt").write_text("second")
    assert sorted(p.name for p in out.iterdir()) == [safeio.OUTPUT_MARKER, "other.txt"]
    with pytest.raises(KeyboardInterrupt), safeio.atomic_directory(out) as d:
        (d / "half.txt").write_text("partial")
        raise KeyboardInterrupt
    assert sorted(p.name for p in out.iterdir()) == [safeio.OUTPUT_MARKER, "other.txt"]
    assert [p.name for p in tmp_path.iterdir()] == ["run"]  # no temporary left
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "thesis.tex").write_text("precious")
    with pytest.raises(UsageError, match="not empty and was not written by rbc"):
        with safeio.atomic_directory(mine):
            pass
    assert (mine / "thesis.tex").read_text() == "precious"
    afile = tmp_path / "afile"
    afile.write_text("x")
    with pytest.raises(UsageError, match="exists and is not a directory"):
        with safeio.atomic_directory(afile):
            pass


def test_staged_outputs_appear_together_or_not_at_all(tmp_path: Path) -> None:
    a, b, d = tmp_path / "a.h5", tmp_path / "b.xml", tmp_path / "pin"
    a.write_text("previous a")
    with pytest.raises(RuntimeError), safeio.staged_outputs():
        safeio.atomic_write_text(a, "new a")
        assert a.read_text() == "previous a"  # staged, not yet in place …
        assert safeio.staged_path(a).read_text() == "new a"  # … but readable back
        with safeio.atomic_directory(d) as tmp:
            (tmp / "x.urdf").write_text("x")
        raise RuntimeError("the second export fails")
    assert a.read_text() == "previous a" and not d.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.h5"]  # no temporary left
    with safeio.staged_outputs():
        safeio.atomic_write_text(a, "new a")
        safeio.atomic_write_text(b, "b")
        with safeio.atomic_directory(d) as tmp:
            (tmp / "x.urdf").write_text("x")
    assert a.read_text() == "new a" and b.read_text() == "b" and (d / "x.urdf").is_file()
    assert safeio.staged_path(a) == a


def test_devices_fifos_and_directories_are_never_replaced(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    targets = [fifo, tmp_path]
    try:  # a device node like /dev/null: renaming a file over it (as root) destroys it
        dev = tmp_path / "null"
        os.mknod(dev, 0o600 | stat.S_IFCHR, os.makedev(1, 3))
        targets.append(dev)
    except PermissionError:
        pass
    link = tmp_path / "to-pipe"
    link.symlink_to(fifo)
    for target in [*targets, link]:
        with pytest.raises(InputError, match="is a (FIFO|character device|directory)"):
            safeio.atomic_write_text(target, "x")
        with pytest.raises(UsageError, match="^-o .*is a"):
            safeio.check_outputs({}, {"-o": target})
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and link.is_symlink()
    with pytest.raises(UsageError, match="the directory .* does not exist"):
        safeio.check_outputs({}, {"-o": tmp_path / "no" / "x.h5"})


def test_stale_temporaries_of_killed_runs_are_cleaned(tmp_path: Path) -> None:
    target = tmp_path / "model.yaml"
    code = ("import sys, time; from rbc import safeio\n"
            "safeio.atomic_write(sys.argv[1], lambda tmp: time.sleep(60))\n")
    proc = subprocess.Popen([sys.executable, "-c", code, str(target)])
    for _ in range(200):
        if any(p.name.endswith(".tmp") for p in tmp_path.iterdir()):
            break
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    stale = [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    assert len(stale) == 1 and not target.exists()
    safeio.atomic_write_text(target, "ok")
    assert [p.name for p in tmp_path.iterdir()] == ["model.yaml"]


def test_check_outputs(tmp_path: Path) -> None:
    rec = tmp_path / "r.yaml"
    rec.write_text("x")
    link = tmp_path / "alias.yaml"
    link.symlink_to(rec)
    hard = tmp_path / "hard.yaml"
    os.link(rec, hard)
    for out in (rec, link, hard, tmp_path / "." / "r.yaml"):
        with pytest.raises(UsageError, match="is the input RECORD"):
            safeio.check_outputs({"RECORD": rec}, {"-o": out})
    with pytest.raises(UsageError, match="name the same path"):
        safeio.check_outputs({"RECORD": rec}, {"-o": tmp_path / "a.h5",
                                               "--mjcf": tmp_path / "a.h5"})
    with pytest.raises(UsageError, match="holds the input RECORD"):
        safeio.check_outputs({"RECORD": rec}, {"--pinocchio": tmp_path}, ["--pinocchio"])
    with pytest.raises(UsageError, match="inside the directory output --pinocchio"):
        safeio.check_outputs({}, {"-o": tmp_path / "p" / "a.h5", "--pinocchio": tmp_path / "p"},
                             ["--pinocchio"])
    safeio.check_outputs({"RECORD": rec}, {"-o": tmp_path / "a.h5", "--mjcf": None})


@FUZZ
@given(st.text(max_size=300))
def test_safe_basename_never_escapes(name: str) -> None:
    base = safeio.safe_basename(name)
    assert base and "/" not in base and "\0" not in base and base not in (".", "..")
    assert not base.startswith(".") and len(base) <= 100


def test_check_number_and_named_values() -> None:
    assert safeio.check_number("--dt", 1e-3, gt=0) == 1e-3
    for bad in (float("nan"), float("inf"), 0.0, -1.0):
        with pytest.raises(UsageError, match=r"--dt .*expected a finite number > 0"):
            safeio.check_number("--dt", bad, gt=0)

    def parse(text: str) -> tuple[str, float]:
        name, _, value = text.partition("=")
        return name, float(value)

    assert safeio.named_values(["a=1", "b=2"], "--set", parse) == {"a": 1.0, "b": 2.0}
    with pytest.raises(UsageError, match="--set a: given twice"):
        safeio.named_values(["a=1", "a=2"], "--set", parse)
    with pytest.raises(UsageError, match="--set a nan: expected a finite number"):
        safeio.named_values(["a=nan"], "--set", parse)


def test_errors_are_rbc_errors() -> None:
    assert issubclass(InputError, RbcError)
    assert json.loads(json.dumps({"ok": True}))  # the module's own json use is stdlib


TRICKY_SCALARS = ["0", "-0", "+7", "012", "0o17", "0x1F", "0b101", "1_000", "190:20:30",
                  "1.5", "-1.5", "+.5", "1.", "1e5", "1.0e+5", "1.0E-5", "-0.0", "1_0.5",
                  ".inf", "-.Inf", ".NaN", "yes", "No", "on", "OFF", "true", "~", "null", "",
                  "2001-12-14", "2001-12-14t21:59:43.10-05:00", "'012'", '"1.5"', "!!float 1",
                  "!!float '1e5'", "!!int '7'", "!!str 1.5", "!!binary aGk=", "=", "a b"]


@pytest.mark.parametrize("scalar", TRICKY_SCALARS)
def test_plain_construction_equals_safe_load(scalar: str) -> None:
    """The fast constructor (plain str/int/float/bool/null, maps, lists) gives what
    yaml.safe_load gives, and leaves every other form to PyYAML's constructor: as a value,
    a list item and a key; with a merge key and an alias in the same document."""
    import math

    def same(a, b) -> bool:
        if isinstance(a, float) and isinstance(b, float) and math.isnan(a):
            return math.isnan(b)
        if isinstance(a, dict) and isinstance(b, dict):
            return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
        if isinstance(a, list) and isinstance(b, list):
            return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
        return type(a) is type(b) and (a == b or repr(a) == repr(b))

    docs = [f"v: {scalar}\n", f"- {scalar}\n- x\n", f"{{{scalar}: 1}}\n" if scalar else "a: 1\n",
            f"a: &k {{x: {scalar}}}\nb: *k\n", f"base: &b {{x: {scalar}}}\nc:\n  <<: *b\n  y: 2\n"]
    for text in docs:
        try:
            ref = yaml.safe_load(text)
        except yaml.YAMLError:
            with pytest.raises(InputError):
                safeio.load_yaml(text, "t.yaml")
            continue
        assert same(safeio.load_yaml(text, "t.yaml"), ref), text


def test_plain_construction_equals_safe_load_on_the_records() -> None:
    from tests.conftest import RECORDS

    for path in sorted(RECORDS.rglob("*.yaml")):
        text = path.read_text()
        assert safeio.load_yaml(text, path) == yaml.safe_load(text), path
        loader = safeio._Loader(text)  # and the records take the fast path (no fallback)
        try:
            assert safeio._construct(loader, loader.get_single_node()) == yaml.safe_load(text)
        finally:
            loader.dispose()

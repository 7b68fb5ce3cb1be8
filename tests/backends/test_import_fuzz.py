"""Property-based: the MJCF and URDF importers and the loops-sidecar reader on mutated
vendored models (an attribute anywhere replaced by hostile text, an element dropped, a file
path pointed at /dev/zero). Invariant: ``rbc import`` exits 0 with a record that parses, or 2
naming the input; never another status, a traceback, a file outside the output, a changed
input."""

from __future__ import annotations

import hashlib

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lxml import etree

from rbc.backends.record_writer import ModelImportError
from rbc.backends.urdf import read_sidecar
from rbc.cli.main import main
from rbc.errors import InputError
from rbc.ir.schema import parse_record
from tests.conftest import EXTERNAL

# bounded for CI: an import (with MuJoCo's compile) is ~0.2 s
FUZZ = settings(max_examples=40, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])

MODELS = {"mjcf": [EXTERNAL / "agility_cassie" / "cassie.xml",
                   EXTERNAL / "franka_emika_panda" / "panda_nohand.xml"],
          "urdf": [EXTERNAL / "gepetto" / "5bar_linkage" / "robot.urdf",
                   EXTERNAL / "gepetto" / "cassie_like" / "robot.urdf"]}
VALUES = st.one_of(
    st.sampled_from(["", "nan", "inf", "-inf", "1e308", "-1e308", "1e400", "0", "-1", "0 0 0",
                     "1 2", "1 2 3 4 5 6 7 8 9 10", "1 0 0 0", "0 0 0 0", "abc", "/dev/zero",
                     "../../x", "true", "false", "hinge", "ball", "free", "slide", "radian",
                     "continuous", "floating", "planar", "world", "-3 3", "3 -3"]),
    st.text(alphabet="0123456789.-+e ", max_size=20))


def _mutated(src, tmp_path, pick: int, value: str, drop: bool) -> tuple:
    root = etree.parse(str(src)).getroot()
    elements = [el for el in root.iter() if isinstance(el.tag, str)]
    el = elements[pick % len(elements)]
    if drop and el.getparent() is not None:
        el.getparent().remove(el)
    else:
        attrs = sorted(el.attrib) or ["name"]
        el.set(attrs[pick % len(attrs)], value)
    path = tmp_path / src.name
    path.write_bytes(etree.tostring(root))
    return path


def _run(capsys, tmp_path, kind, path, *extra) -> None:
    out = tmp_path / "out" / "rec.yaml"
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    listing = sorted(p.name for p in tmp_path.iterdir() if p.name != "out")
    out.parent.mkdir(exist_ok=True)  # (rbc creates no directory for a file output)
    code = main(["import", kind, str(path), "-o", str(out), *map(str, extra)])
    err = capsys.readouterr().err
    assert code in (0, 2), err
    assert "Traceback" not in err
    if code == 0:
        parse_record(out)
    else:
        assert not out.exists() and str(path) in err, err
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before
    assert sorted(p.name for p in tmp_path.iterdir() if p.name != "out") == listing


@FUZZ
@given(which=st.integers(0, 1), pick=st.integers(0, 10**6), value=VALUES, drop=st.booleans())
def test_mutated_mjcf_imports_or_exits_2(tmp_path_factory, capsys, which, pick, value, drop):
    tmp = tmp_path_factory.mktemp("mjcf")
    path = _mutated(MODELS["mjcf"][which], tmp, pick, value, drop)
    _run(capsys, tmp, "mjcf", path, "--repair-inertia")


@FUZZ
@given(which=st.integers(0, 1), pick=st.integers(0, 10**6), value=VALUES, drop=st.booleans(),
       loops=st.booleans())
def test_mutated_urdf_imports_or_exits_2(tmp_path_factory, capsys, which, pick, value, drop,
                                         loops):
    src = MODELS["urdf"][which]
    tmp = tmp_path_factory.mktemp("urdf")
    path = _mutated(src, tmp, pick, value, drop)
    extra = ["--repair-inertia"] + (["--loops", src.parent / "robot.yaml"] if loops else [])
    _run(capsys, tmp, "urdf", path, *extra)


sidecar_values = st.one_of(
    st.none(), st.integers(-5, 5), st.text(max_size=8),
    st.lists(st.one_of(st.text(max_size=8), st.lists(st.text(max_size=8), max_size=3),
                       st.integers()), max_size=4),
    st.dictionaries(st.text(max_size=5), st.integers(), max_size=2))


@settings(max_examples=200, deadline=None, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(doc=st.dictionaries(st.sampled_from(["closed_loop", "type", "name_mot", "joint_name",
                                            "joint_type", "other"]), sidecar_values,
                           max_size=5))
def test_loop_sidecar_reads_or_raises(tmp_path_factory, doc):
    p = tmp_path_factory.mktemp("side") / "robot.yaml"
    p.write_text(yaml.safe_dump(doc))
    try:
        side = read_sidecar(p)
    except (ModelImportError, InputError) as err:
        assert str(p) in str(err)
    else:
        assert {"closed_loop", "type", "name_mot"} <= set(side)

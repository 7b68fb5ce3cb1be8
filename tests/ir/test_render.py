"""ir/render.py writes a record that parses back to the same record (every shipped one)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from rbc.ir.render import record_yaml
from rbc.ir.schema import parse_record, parse_record_text
from tests.conftest import RECORDS

MODEL_RECORDS = Path(__file__).parents[1] / "model" / "records"  # new port kinds, couplings
FILES = sorted([p for p in RECORDS.glob("**/*.yaml")
                if p.parent.name in ("records", "humanoid", "examples", "hard")]
               + list(MODEL_RECORDS.glob("*.yaml")))


def _fields(record):
    d = dataclasses.asdict(record)
    for k in ("text", "source", "sha256"):
        d.pop(k)
    return d


def _close(a, b, path=""):
    if isinstance(a, dict):
        assert a.keys() == b.keys(), path
        for k in a:
            _close(a[k], b[k], f"{path}.{k}")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _close(x, y, f"{path}[{i}]")
    elif isinstance(a, float):
        # the parser renormalises unit quaternions: at most an ulp or two
        assert abs(a - b) <= 4e-16 * max(1.0, abs(a)), (path, a, b)
    else:
        assert a == b, (path, a, b)


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_round_trip(path):
    try:
        rec = parse_record(path)
    except Exception:  # noqa: BLE001 (composition files live beside the humanoid records)
        pytest.skip("not a record")
    _close(_fields(rec), _fields(parse_record_text(record_yaml(rec))))


def test_round_trip_of_profile_velocity_ports_and_a_declared_cut():
    """The port kinds and keys no shipped file uses: a profile port with a unit, a velocity
    port on a ball joint's angular-velocity component, ``cut: required``."""
    from tests.model.test_ports import PROFILE_RECORD

    rec = parse_record_text(PROFILE_RECORD)
    _close(_fields(rec), _fields(parse_record_text(record_yaml(rec))))
    text = (RECORDS / "hard" / "rssr.yaml").read_text(encoding="utf-8")
    rec = parse_record_text(text.replace("actuators:", "actuators:\n- {name: spin_drive, "
                                         "velocity: {S1.wx: 1.0}, unit: rad}", 1))
    assert rec.actuators[0].kind == "velocity"
    again = parse_record_text(record_yaml(rec))
    _close(_fields(rec), _fields(again))
    doc = (RECORDS / "fourbar.yaml").read_text(encoding="utf-8")
    rec = parse_record_text(doc.replace("  - name: A\n", "  - name: A\n    cut: required\n", 1))
    assert [j.name for j in rec.joints if j.cut_required] == ["A"]
    _close(_fields(rec), _fields(parse_record_text(record_yaml(rec))))

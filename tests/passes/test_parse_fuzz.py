"""Property-based: the record parser on mutated shipped records (a value anywhere replaced by
hostile YAML, a key dropped or renamed, the text cut or bytes flipped). Invariant: a checked
Record, or a RecordError naming the file; never another exception."""

from __future__ import annotations

import math

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rbc.errors import RecordError
from rbc.ir.schema import parse_record_text
from tests.conftest import RECORDS

# bounded for CI (a parse is ~1 ms)
FUZZ = settings(max_examples=200, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow])

TEXTS = {n: (RECORDS / f"{n}.yaml").read_text() for n in ("fourbar", "stewart", "excavator")}
DOCS = {n: yaml.safe_load(t) for n, t in TEXTS.items()}

hostile = st.one_of(
    st.none(), st.booleans(), st.integers(-10**30, 10**30),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([1e308, -1e308, 1e13, 5e-324, 0.0, -0.0, "", "x", "../../x", "a\x00b",
                     "deg", "rad", "prefer", "world", "revolute", [], {}, [0, 0], [0, 0, 0],
                     [1, 0, 0, 0], [math.nan] * 3, {"xyz": [0, 0, 0]}, {"frame": "nope"},
                     {"lower": 1, "upper": -1}, [[0, 0, 1], [0, 0, 1]]]),
    st.text(max_size=20),
    st.lists(st.floats(allow_nan=True), max_size=8),
)


def _paths(node, prefix=()):
    yield prefix
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _paths(v, (*prefix, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _paths(v, (*prefix, i))


def _set(doc, path, value, action):
    if not path:
        return value
    parent = doc
    for key in path[:-1]:
        parent = parent[key]
    if action == "drop" and isinstance(parent, dict):
        del parent[path[-1]]
    elif action == "rename" and isinstance(parent, dict):
        parent[f"{path[-1]}_x"] = parent.pop(path[-1])
    else:
        parent[path[-1]] = value
    return doc


def _check(text: str, source: str = "fuzz.yaml") -> None:
    try:
        parse_record_text(text, source)
    except RecordError as err:
        assert str(err).startswith(source), str(err)


@FUZZ
@given(name=st.sampled_from(sorted(DOCS)), pick=st.integers(0, 10**6), value=hostile,
       action=st.sampled_from(["set", "set", "drop", "rename"]))
def test_mutated_records_parse_or_raise_record_error(name, pick, value, action):
    doc = yaml.safe_load(TEXTS[name])
    paths = list(_paths(doc))
    doc = _set(doc, paths[pick % len(paths)], value, action)
    try:
        text = yaml.safe_dump(doc, sort_keys=False, allow_unicode=True)
    except yaml.YAMLError:
        return
    _check(text)


@FUZZ
@given(name=st.sampled_from(sorted(TEXTS)), cut=st.integers(0, 10**6),
       flips=st.lists(st.tuples(st.integers(0, 10**6), st.sampled_from(
           list(":-[]{},&*!|>'\"#%@`\t\n ") + ["<<", "\x00", "\ufeff"])), max_size=6))
def test_cut_and_corrupted_text_raises_record_error(name, cut, flips):
    text = TEXTS[name]
    text = text[: cut % (len(text) + 1)]
    for at, ch in flips:
        if text:
            i = at % len(text)
            text = text[:i] + ch + text[i + 1:]
    _check(text)

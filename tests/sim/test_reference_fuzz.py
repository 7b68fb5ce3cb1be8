"""Property-based: the reference-motion reader on hostile CSV and YAML. Invariant: Knots with
finite, strictly increasing times, or an RbcError naming the file; never another exception."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rbc.errors import RbcError
from rbc.sim.reference import load_knots

# bounded for CI (a read is well under 1 ms)
FUZZ = settings(max_examples=200, deadline=None, database=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture])

cells = st.one_of(st.sampled_from(["", "nan", "inf", "-inf", "1e308", "x", "time", "0", "1",
                                   "-1", "1e-300", "#", '"', "A", "A.x"]),
                  st.floats(allow_nan=True, allow_infinity=True).map(repr))


def _ok_or_error(path) -> None:
    try:
        k = load_knots(path)
    except RbcError as err:
        assert str(path) in str(err)
    else:
        assert np.all(np.isfinite(k.time)) and np.all(np.diff(k.time) > 0)
        assert np.all(np.isfinite(k.values)) and k.values.shape == (k.time.size, len(k.names))


@FUZZ
@given(rows=st.lists(st.lists(cells, max_size=4), max_size=6),
       sep=st.sampled_from([",", ";", "\t"]))
def test_csv_reference(tmp_path_factory, rows, sep):
    p = tmp_path_factory.mktemp("ref") / "r.csv"
    p.write_text("\n".join(sep.join(r) for r in [["time", "A"], *rows]) + "\n")
    _ok_or_error(p)


values = st.one_of(st.none(), st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=5),
                   st.lists(st.one_of(st.floats(allow_nan=True), st.text(max_size=3),
                                      st.lists(st.floats(), max_size=2)), max_size=5))


@FUZZ
@given(time=values, joints=st.one_of(values, st.dictionaries(st.text(max_size=4), values,
                                                             max_size=3)))
def test_yaml_reference(tmp_path_factory, time, joints):
    import yaml

    p = tmp_path_factory.mktemp("ref") / "r.yaml"
    p.write_text(yaml.safe_dump({"time": time, "joints": joints}))
    _ok_or_error(p)

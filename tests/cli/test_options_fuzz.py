"""Property-based: numeric command-line options with hostile values (NaN, ±inf, zero,
negative, huge, not a number), on the commands that take them. Invariant: exit 0, 1 or 2 —
2 with a message — never a traceback."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rbc.cli.main import main
from tests.conftest import RECORDS

# bounded for CI: the valid values run tiny simulations (≤ 10 control steps)
FUZZ = settings(max_examples=40, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])

# hostile values only: non-finite, zero, negative, absurdly large or small, not numbers
# (moderate values are valid and could ask for long, legitimate runs)
HOSTILE = st.one_of(
    st.sampled_from(["nan", "-nan", "inf", "-inf", "0", "-0", "-1", "1e308", "-1e308", "1e-320",
                     "5e-324", "abc", "", "0x10", "1,5", "9" * 400, "1e400", "-1e-9"]),
    st.floats(max_value=0.0, allow_infinity=True).map(repr),
    st.floats(min_value=1e200, allow_infinity=True).map(repr),
    st.floats(min_value=0.0, max_value=1e-200, allow_subnormal=True).map(repr))


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    out = tmp_path_factory.mktemp("opts") / "fourbar.h5"
    assert main(["compile", str(RECORDS / "fourbar.yaml"), "-o", str(out)]) == 0
    return out


SIM = ["--controller", "passive", "--dt", "0.002", "--duration", "0.01"]
CASES = {
    "simulate": (["simulate", "{b}", *SIM], ["--dt", "--duration", "--control-dt", "--zeta",
                                            "--bandwidth", "--inertia-scale", "--reference-dt"]),
    "simulate-pairs": (["simulate", "{b}", *SIM], ["--set A=", "--velocity A=",
                                                  "--payload crank="]),
    "solve": (["solve", "{b}"], ["--set A="]),
    "verify": (["verify", "{b}", "--samples", "2"], ["--seed", "--samples"]),
    "compile": (["compile", str(RECORDS / "fourbar.yaml"), "-o", "{o}"], ["--length-scale"]),
    "walk": (["walk", "run", "--model", "compass", "--strides", "1"], ["--slope", "--dt",
                                                                       "--strides"]),
}


@FUZZ
@given(case=st.sampled_from(sorted(CASES)), pick=st.integers(0, 100), value=HOSTILE)
def test_hostile_numeric_options(tmp_path_factory, capsys, bundle, case, pick, value):
    base, options = CASES[case]
    option = options[pick % len(options)]
    out = tmp_path_factory.mktemp("o") / "x.h5"
    argv = [a.format(b=bundle, o=out) for a in base]
    flag, _, key = option.partition(" ")
    argv += [flag, key + value] if key else [flag, value]
    code = main(argv)
    err = capsys.readouterr().err
    assert code in (0, 1, 2), err
    assert "Traceback" not in err
    if code == 2:  # a message: on the option, another it conflicts with, or the input
        assert err.startswith("error:") or "Usage" in err, err

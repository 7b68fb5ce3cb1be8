"""Property-based: every public API call with hostile arguments — wrong types, shapes and
names, non-finite numbers, strings, nesting. Invariant: the call succeeds or raises an
RbcError (a message naming the argument), never a raw TypeError/ValueError/KeyError."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rbc
from rbc.errors import RbcError
from tests.verify.conftest import compile_bundle

FUZZ = settings(max_examples=60, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow,
                                       HealthCheck.function_scoped_fixture])

SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-10, 10),
                    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=4),
                    st.just(1e400), st.just(float("nan")))
NAMES = st.one_of(st.sampled_from(["A", "motor_A", "coupler", "crank", "B", "A.x", ""]),
                  st.text(max_size=6), st.integers(), st.none())
HOSTILE = st.one_of(
    SCALARS,
    st.lists(SCALARS, max_size=4),
    st.lists(st.floats(allow_nan=True, allow_infinity=True), min_size=0, max_size=3).map(
        np.array),
    st.dictionaries(NAMES, SCALARS, max_size=3),
    st.dictionaries(NAMES, st.lists(SCALARS, max_size=3), max_size=2),
    st.just(np.zeros((1, 1))), st.just(np.array(["a"])), st.just(object()),
)


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    return rbc.load(compile_bundle(tmp_path_factory.mktemp("fuzz"), "fourbar"))


CALLS = {
    "close": lambda m, s, x: m.close(x),
    "close_speeds": lambda m, s, x: m.close(speeds=x),
    "close_guess": lambda m, s, x: m.close(guess=x),
    "state_q": lambda m, s, x: m.state(x),
    "state_u": lambda m, s, x: m.state(s.q, x),
    "state_tol": lambda m, s, x: m.state(s.q, tol=x),
    "with_speeds": lambda m, s, x: m.with_speeds(s, x),
    "forward_efforts": lambda m, s, x: m.forward_dynamics(s, x),
    "forward_wrenches": lambda m, s, x: m.forward_dynamics(s, wrenches=x),
    "forward_state": lambda m, s, x: m.forward_dynamics(x),
    "wrench_fields": lambda m, s, x: m.forward_dynamics(s, wrenches=[rbc.Wrench(x, x, x)]),
    "wrench_point": lambda m, s, x: m.forward_dynamics(
        s, wrenches=[rbc.Wrench("coupler", x, (0.0,) * 6)]),
    "inverse_udot": lambda m, s, x: m.inverse_dynamics(s, x),
    "reactions": lambda m, s, x: m.reactions(s, udot=x),
    "reactions_efforts": lambda m, s, x: m.reactions(s, efforts=x),
    "task": lambda m, s, x: m.task_jacobian(s, x),
    "lift": lambda m, s, x: m.lift(x),
    "ports": lambda m, s, x: m.port_map(x),
    "partition": lambda m, s, x: m.with_partition(x),
    "mode": lambda m, s, x: m.with_mode(x),
    "mode_anchors": lambda m, s, x: m.with_mode("free", x),
    "vector": lambda m, s, x: m.vector(x, "independent"),
    "vector_over": lambda m, s, x: m.vector({}, x),
    "plant_backend": lambda m, s, x: m.plant(s, x),
    "plant_dt": lambda m, s, x: m.plant(s, "reduced", x),
    "load": lambda m, s, x: rbc.load(x),
    "load_partition": lambda m, s, x: rbc.load(m.source, x),
}


@pytest.mark.parametrize("call", sorted(CALLS))
@FUZZ
@given(x=HOSTILE)
def test_hostile_arguments_raise_rbc_errors(model, call, x):
    s = model.close()
    try:
        CALLS[call](model, s, x)
    except RbcError as err:
        assert str(err).strip()

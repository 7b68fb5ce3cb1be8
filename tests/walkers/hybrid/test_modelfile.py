"""Model files: the reader's validation (built-in and user files alike), ``--model FILE``,
the stride time limit, default slopes, and controllers that work for every shipped model."""

import copy
import math

import numpy as np
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rbc.cli.main import main
from rbc.walkers.api import run_walk
from rbc.walkers.control.controllers import RUN_CONTROLLERS, controllers_for, make_controller
from rbc.walkers.errors import WalkerError
from rbc.walkers.hybrid.modelfile import model_from_dict, read_model_file
from rbc.walkers.hybrid.registry import (
    MODELS,
    default_slope,
    load_model,
    model_names,
    resolve_model,
    stride_time_limit,
)

COMPASS = {
    "name": "mine", "coordinates": ["stance", "swing"], "relabel": ["swing", "stance"],
    "masses": [{"name": "a", "mass": 5.0, "path": {"stance": 0.5}},
               {"name": "hip", "mass": 10.0, "path": {"stance": 1.0}},
               {"name": "b", "mass": 5.0, "path": {"stance": 1.0, "swing": -0.5}}],
    "points": {"hip": {"stance": 1.0}, "swing_foot": {"stance": 1.0, "swing": -1.0}},
    "actuators": [{"name": "hip", "parent": "stance", "child": "swing"}],
    "mu": 0.8, "leg_length": 1.0, "phase": {"coefficients": {"stance": 1.0}},
    "initial_state": [-0.27, 0.27, 1.09, 0.38], "slope_degrees": 3,
}


def _write(tmp_path, data, name="mine.yaml"):
    p = tmp_path / name
    p.write_text(yaml.safe_dump(data) if not isinstance(data, str) else data)
    return p


def test_compass_default_slope_is_exactly_three_degrees():
    assert default_slope(load_model("compass")) == math.pi / 60


def test_default_stride_time_limit_is_four_pendulum_periods():
    assert stride_time_limit(load_model("compass")) == pytest.approx(
        4 * 2 * math.pi * math.sqrt(1.0 / 9.81), rel=1e-15)
    # Garcia's walker in units g = l = 1: its 3.88 period is far inside the limit
    assert stride_time_limit(load_model("garcia")) > 6 * 3.88


@pytest.mark.parametrize("name", model_names())
def test_every_shipped_model_walks_with_its_first_controller(name):
    m = load_model(name)
    ok = controllers_for(m)
    assert ok, name
    if ok[0] not in ("passive", "fl"):  # pragma: no cover - every shipped model has one
        pytest.fail(f"{name}: no issue-7 controller")
    res = run_walk(name, ok[0], default_slope(m), 2)
    assert not res.fell and len(res.strides) == 2, (name, res.fall_reason)


@pytest.mark.parametrize("name", model_names())
def test_refusals_list_only_working_controllers(name):
    m = load_model(name)
    for c in RUN_CONTROLLERS:
        if c in controllers_for(m) or c not in ("passive", "fl"):
            continue
        with pytest.raises(WalkerError) as err:
            run_walk(name, c, default_slope(m), 1)
        assert err.value.choices == controllers_for(m), (name, c)


def test_user_model_file_runs_from_the_command_line(tmp_path, capsys):
    f = _write(tmp_path, COMPASS)
    out = tmp_path / "out"
    assert main(["walk", "run", "--model", str(f), "--strides", "2", "--out", str(out),
                 "--json"]) == 0
    names = {p.name for p in out.iterdir()}
    assert {"mine_phase.png", "mine.gif"} <= names  # stem of the argument
    # the user file equals the shipped compass: the same gait to the last bit
    a = run_walk(str(f), "passive", math.pi / 60, 2)
    b = run_walk("compass", "passive", math.pi / 60, 2)
    np.testing.assert_array_equal(a.poincare, b.poincare)
    assert main(["walk", "fixedpoint", "--model", str(f), "--json"]) == 0


def test_stride_time_limit_option(tmp_path, capsys):
    assert main(["walk", "run", "--model", "compass", "--strides", "1",
                 "--stride-time-limit", "0.05", "--json"]) == 0
    assert "no touchdown within 0.05 s" in capsys.readouterr().out


def _bad(path, value):
    d = copy.deepcopy(COMPASS)
    node = d
    for k in path[:-1]:
        node = node[k]
    if value is _DEL:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return d


_DEL = object()
BAD = [
    (("coordinates",), _DEL, "coordinates: missing field"),
    (("masses", 0, "mass"), -1.0, "masses[0].mass: expected a value > 0"),
    (("masses", 0, "mass"), True, "masses[0].mass: expected a number"),
    (("masses", 1, "path"), {"stanse": 1.0}, "masses[1].path.stanse: unknown coordinate"),
    (("points", "swing_foot"), _DEL, "points.swing_foot: missing field"),
    (("relabel",), ["swing", "swing"], "relabel: not a permutation"),
    (("initial_state",), [0.1, 0.2], "initial_state: expected 4 numbers"),
    (("slope_degrees",), 60, "slope_degrees: expected a value < 45"),
    (("mu",), float("nan"), "mu: expected a finite number"),
    (("phase", "coefficients"), {"stance": 0.0}, "phase.coefficients: all zero"),
    (("dt",), 0.0, "dt: expected a value > 0"),
    (("stride_time_limit",), -1, "stride_time_limit: expected a value > 0"),
    (("masses", 2, "path"), {"stance": 1.0}, "coordinate 'swing' carries no mass"),
    (("masses", 0, "path"), {"stance": {"length": 0.5, "offset": "x"}},
     "masses[0].path.stance.offset: expected a number"),
    (("sketch",), [["knee"]], "sketch[0][0]: unknown point 'knee'"),
    (("colour",), "red", "colour: unknown field"),
]


@pytest.mark.parametrize(("path", "value", "msg"), BAD)
def test_invalid_file_names_file_and_field(tmp_path, capsys, path, value, msg):
    f = _write(tmp_path, _bad(path, value))
    with pytest.raises(WalkerError) as err:
        read_model_file(f)
    assert str(f) in str(err.value) and msg in str(err.value)
    out = tmp_path / "out"
    assert main(["walk", "run", "--model", str(f), "--out", str(out)]) == 2
    assert not any(out.iterdir()) if out.exists() else True  # no partial output
    assert "Traceback" not in capsys.readouterr().err


@pytest.mark.parametrize(("text", "msg"), [
    ("a: &x [1]\nb: *x\n", "aliases are not allowed"),
    ("name: a\nname: b\n", "duplicate key 'name'"),
    ("[1, 2", "YAML syntax error"),
    ("- 1\n", "expected a mapping"),
])
def test_hostile_yaml_is_refused(tmp_path, text, msg):
    with pytest.raises(WalkerError, match=msg):
        read_model_file(_write(tmp_path, text))


def test_scientific_notation_without_a_dot_is_a_number():
    """YAML 1.1 reads ``1e-6`` as text; the reader takes it as the number a user meant."""
    d = copy.deepcopy(COMPASS)
    d["masses"][0]["mass"] = "5e0"
    assert model_from_dict(d, "sci.yaml").m[0] == 5.0
    d["masses"][0]["mass"] = "five"
    with pytest.raises(WalkerError, match="expected a number"):
        model_from_dict(d, "sci.yaml")


def test_missing_file_and_unknown_name(tmp_path):
    with pytest.raises(WalkerError, match="no such model file"):
        resolve_model(str(tmp_path / "nope.yaml"))
    with pytest.raises(WalkerError) as err:
        resolve_model("rimles")
    assert "did you mean 'rimless'" in str(err.value) and "FILE.yaml" in str(err.value)


def test_singular_mass_matrix_is_named_not_solved():
    """Two links carrying one point mass: D = m [[1, cos d], [cos d, 1]] is singular when
    the links are parallel. Today's LAPACK flag is read: a named error, not garbage."""
    d = copy.deepcopy(COMPASS)
    d["masses"] = [{"name": "hip", "mass": 10.0, "path": {"stance": 1.0, "swing": 0.3}}]
    m = model_from_dict(d, "two_links.yaml")  # regular at a generic configuration
    ctrl = make_controller("passive", m, 0.05)
    with pytest.raises(WalkerError, match="mass matrix is singular at q"):
        ctrl.accel(np.array([0.3, 0.3]), np.zeros(2))
    from rbc.walkers.hybrid.swing import forward_dynamics

    with pytest.raises(WalkerError, match="singular"):
        forward_dynamics(m, np.array([0.3, 0.3]), np.zeros(2), None, 0.05)


def test_massless_swing_leg_without_limit_is_named(tmp_path):
    d = copy.deepcopy(COMPASS)
    d["masses"] = [{"name": "hip", "mass": 1.0, "path": {"stance": 1.0}}]
    with pytest.raises(WalkerError, match="coordinate 'swing' carries no mass and no inertia"):
        model_from_dict(d, "garcia_wrong.yaml")
    d["masses"].append({"name": "foot", "mass": 1.0, "infinitesimal": True,
                        "path": {"stance": 1.0, "swing": -1.0}})
    assert model_from_dict(d, "garcia_ok.yaml").is_limit


def _mutations():
    """A valid file with one field replaced by a value of another kind, or deleted."""
    leaves = []

    def walk(node, path):
        items = node.items() if isinstance(node, dict) else enumerate(node)
        for k, v in items:
            leaves.append((*path, k))
            if isinstance(v, dict | list):
                walk(v, (*path, k))

    walk(COMPASS, ())
    junk = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.floats(allow_nan=True),
                     st.text(max_size=3), st.lists(st.integers(), max_size=2),
                     st.dictionaries(st.text(max_size=2), st.integers(), max_size=2))
    return st.tuples(st.sampled_from(leaves), st.one_of(st.just(_DEL), junk))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_mutations())
def test_fuzzed_files_load_or_fail_cleanly(mut):
    """Property: a corrupted file either loads or raises WalkerError, never anything else."""
    try:
        model_from_dict(_bad(*mut), "fuzz.yaml")
    except WalkerError as err:
        assert "fuzz.yaml" in str(err)


def test_shipped_files_are_the_registry():
    assert set(MODELS) == set(model_names()) >= {"garcia", "rimless"}

"""rbc.model.solve: continuation to prescribed independent coordinates."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.optimize as so

from rbc.errors import UsageError
from rbc.model.closure import ClosureError
from rbc.model.compiled import CompiledModel
from rbc.model.kinematics import residual
from rbc.model.solve import (
    SolveError,
    coordinate_value,
    get_partition,
    parse_assignment,
    resolve_targets,
    solve_named,
)
from tests.verify.conftest import compile_bundle


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    directory = tmp_path_factory.mktemp("solve")
    return lambda name: CompiledModel.from_bundle(compile_bundle(directory, name))


@pytest.mark.parametrize(("name", "speeds"), [("fourbar", 1), ("slider_crank", 1),
                                              ("fivebar", 2), ("stewart", 6),
                                              ("excavator", 4)])
def test_independent_speeds(model, name, speeds):
    part = get_partition(model(name), None)
    assert part.independent.size == speeds


def test_stewart_partition_is_the_leg_lengths(model):
    m = model("stewart")
    part = get_partition(m, None)
    assert [m.v_names[j] for j in part.independent] == [f"P{i}" for i in range(1, 7)]
    assert part.rank == 30


def test_fourbar_against_least_squares(model):
    """Our continuation and scipy's least_squares (2-point FD Jacobian, no lift) from q_ref
    reach the same closed configuration."""
    m = model("fourbar")
    part = get_partition(m, None)
    r = solve_named(m, None, {"A": 1.6})
    assert r.residual <= 1e-12  # acceptance target of the shipped records
    assert coordinate_value(m, r.q, m.v_names.index("A")) == 1.6
    dep = part.dependent

    def f(x):
        q = part.q_ref.copy()
        q[m.v_names.index("A")] = 1.6
        q[dep] = x  # 1-coordinate revolute joints: q and v indices coincide here
        return residual(m, q)

    ref = so.least_squares(f, part.q_ref[dep], xtol=1e-15, ftol=1e-15, gtol=1e-15)
    # both converge to ~1e-13 residual with cond(R_p) ~ 1–10: agreement to 1e-9 rad
    np.testing.assert_allclose(r.q[dep], ref.x, atol=1e-9)


def test_stewart_reaches_targets_and_keeps_others(model):
    m = model("stewart")
    part = get_partition(m, None)
    r = solve_named(m, None, {"P1": 0.8, "P4": 0.7})
    assert r.residual <= 1e-12 and r.iterations > 0
    vals = {m.v_names[j]: coordinate_value(m, r.q, int(j)) for j in part.independent}
    assert vals["P1"] == 0.8 and vals["P4"] == 0.7
    assert vals["P2"] == coordinate_value(m, part.q_ref, m.v_names.index("P2"))


def test_excavator_partitions_agree(model):
    """Solving in joint space, then prescribing the resulting strokes in the stroke
    partition, returns the same configuration (two partitions as mutual references)."""
    m = model("excavator")
    a = solve_named(m, "joint_space", {"boom_foot": -0.5, "arm_pin": 1.8})
    strokes = {n: coordinate_value(m, a.q, m.v_names.index(n))
               for n in ("boom_cyl", "arm_cyl", "bucket_cyl")}
    b = solve_named(m, "stroke", strokes)
    # both residuals ≤ 1e-13 with moderate conditioning: configurations agree to 1e-9
    np.testing.assert_allclose(m.difference(a.q, b.q), 0.0, atol=1e-9)


def test_errors(model):
    m = model("excavator")
    part = get_partition(m, None)
    with pytest.raises(SolveError, match="did you mean 'boom_cyl'"):
        resolve_targets(m, part, {"boom_cly": 2.5})
    with pytest.raises(SolveError, match="dependent.*independent in partition joint_space"):
        resolve_targets(m, part, {"boom_foot": 0.1})
    with pytest.raises(SolveError, match="outside the joint limits"):
        resolve_targets(m, part, {"boom_cyl": 5.0})
    with pytest.raises(SolveError, match="unknown partition 'strok'.*did you mean 'stroke'"):
        get_partition(m, "strok")
    with pytest.raises(UsageError):
        parse_assignment("boom_cyl")
    assert parse_assignment("A=0.5") == ("A", 0.5)


def test_unreachable_closure_names_open_chords(model):
    m = model("fivebar")
    with pytest.raises(ClosureError, match="stay open: C"):
        solve_named(m, None, {"A1": 3.0, "A2": 0.0})


@pytest.mark.parametrize("name", ["fourbar", "fivebar", "stewart", "excavator"])
def test_module_predictor_is_the_lift_predictor(model, name):
    """The module-by-module predictor of the acquisition equals E du from the global lift
    (dense C, one LU of R_p) at random independent increments (round-off only: 1e-12 of
    the step, the blocks' LU pivots in another order than the global one)."""
    from rbc.model.partition import lift
    from rbc.model.solve import module_plan, module_predictor

    m = model(name)
    part = get_partition(m, None)
    plan = module_plan(m, part)
    E = lift(m, part, part.q_ref).E
    rng = np.random.default_rng(7)
    for _ in range(3):
        du = np.zeros(m.nv)
        du[part.independent] = rng.normal(size=part.independent.size)
        ref = np.zeros(m.nv)
        ref[part.dependent] = E[part.dependent] @ du[part.independent]
        got = module_predictor(m, part, part.q_ref, du, plan)
        assert np.abs(got - ref).max() <= 1e-12 * max(1.0, np.abs(ref).max()), name


def test_module_predictor_chain_of_loops(tmp_path):
    """On the compile benchmark's chain (one module per loop) the predictor is per module and
    equals the global lift's; only the modules whose inputs moved are solved."""
    from rbc.bench.compile import chain_record
    from rbc.compiler import compile_to_file
    from rbc.model.partition import lift
    from rbc.model.solve import module_plan, module_predictor

    (tmp_path / "chain.yaml").write_text(chain_record(6))
    compile_to_file(tmp_path / "chain.yaml", tmp_path / "chain.h5")
    m = CompiledModel.from_bundle(tmp_path / "chain.h5")
    part = get_partition(m, None)
    plan = module_plan(m, part)
    assert len(plan) == 6
    du = np.zeros(m.nv)
    du[part.independent[2]] = 0.1  # one crank moves: only its loop's coordinates change
    E = lift(m, part, part.q_ref).E
    ref = np.zeros(m.nv)
    ref[part.dependent] = E[part.dependent] @ du[part.independent]
    got = module_predictor(m, part, part.q_ref, du, plan)
    assert np.abs(got - ref).max() <= 1e-13
    moved = np.flatnonzero(got)
    assert moved.size and set(moved) <= set(plan[2][1].tolist())

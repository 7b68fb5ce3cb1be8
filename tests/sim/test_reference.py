"""Reference motions: file formats, spline, errors, lift onto the manifold, shipped data."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import numpy as np
import pytest

from rbc.model.compiled import CompiledModel
from rbc.model.dynamics import DynamicsModel
from rbc.model.kinematics import closure_jacobian
from rbc.model.partition import curvature, lift
from rbc.sim.reference import (
    ReferenceError,
    lift_reference,
    load_knots,
    spline_reference,
)
from tests.sim.conftest import REFERENCES


def model(bundles, name):
    kin = CompiledModel.from_bundle(bundles[name])
    return kin, kin.partitions["default"]


def write_csv(path, header, rows):
    path.write_text(header + "\n" + "\n".join(",".join(map(str, r)) for r in rows) + "\n")
    return path


def test_csv_and_yaml_give_the_same_clamped_spline(bundles, tmp_path):
    kin, part = model(bundles, "fourbar")
    rows = [(0.0, 1.0), (0.5, 1.3), (1.0, 0.8)]
    csv = write_csv(tmp_path / "r.csv", "time,A", rows)
    yml = tmp_path / "r.yaml"
    yml.write_text("time: [0, 0.5, 1.0]\njoints: {A: [1.0, 1.3, 0.8]}\n")
    a, b = spline_reference(kin, part, load_knots(csv)), spline_reference(kin, part,
                                                                          load_knots(yml))
    for t in (0.0, 0.25, 0.5, 0.9):
        assert a(t) == pytest.approx(b(t), abs=0)
    assert a(0.5)[0] == pytest.approx(1.3, abs=1e-15)  # interpolates the knots
    # clamped: at rest at both ends (exactly zero up to round-off of the spline solve)
    assert abs(a(0.0, 1)[0]) < 1e-12 and abs(a(1.0, 1)[0]) < 1e-12
    assert a(2.0)[0] == pytest.approx(0.8)  # held after the last knot


@pytest.mark.parametrize("header, rows, message", [
    ("time,Z", [(0, 1.0), (1, 1.1)], "unknown coordinate 'Z'"),
    ("time,B", [(0, 0.0), (1, 0.1)], "'B' is a dependent coordinate"),
    ("time,A", [(0, 1.0), (0, 1.1)], "must increase strictly"),
    ("t,A", [(0, 1.0), (1, 1.1)], "first CSV column must be `time`"),
    ("time,A", [(-1, 1.0), (1, 1.1)], "the first knot is at -1 s; expected knot times from 0"),
])
def test_bad_references_are_rejected_with_the_reason(bundles, tmp_path, header, rows, message):
    kin, part = model(bundles, "fourbar")
    path = write_csv(tmp_path / "bad.csv", header, rows)
    with pytest.raises(ReferenceError, match=message):
        spline_reference(kin, part, load_knots(path))


@pytest.mark.parametrize("text, message", [
    ("time: [0, 1]\njoints: {A: [1.0, 1.1]}\ncontroler: pd\n", "controler: unknown key"),
    ("tme: [0, 1]\njoints: {A: [1.0, 1.1]}\n", "tme: unknown key (did you mean 'time'?)"),
    ("time: [0, 1]\njoint: {A: [1.0, 1.1]}\n", "joint: unknown key (did you mean 'joints'?)"),
    ("time: [0, 1]\n", "joints: missing"),
    ("time: [0, 1]\njoints: [1, 2]\n", "joints: expected a mapping"),
])
def test_yaml_reference_keys_are_strict(tmp_path, text, message):
    # a typo was silently ignored (or met a message naming no key)
    path = tmp_path / "ref.yaml"
    path.write_text(text)
    with pytest.raises(ReferenceError, match=re.escape(f"{path}: {message}")):
        load_knots(path)


def test_a_directory_is_not_a_reference(tmp_path):
    with pytest.raises(ReferenceError, match="is a directory"):
        load_knots(tmp_path)


def test_reference_outside_the_joint_limits_names_coordinate_and_time(bundles, tmp_path):
    kin, part = model(bundles, "stewart")
    home = float(part.q_ref[kin.q_slice(kin.edge("P1"))][0])
    path = write_csv(tmp_path / "far.csv", "time,P1", [(0, home), (1, home + 0.2)])
    with pytest.raises(ReferenceError, match=r"P1 = .* at t = .* outside the joint limits"):
        spline_reference(kin, part, load_knots(path))


def test_unreachable_reference_is_reported_before_running(bundles, tmp_path):
    # the four-bar's crank is a crank (full turns); pushing the excavator's boom cylinder
    # alone to its stroke end is within limits, so use a Stewart leg pair pulled apart:
    kin, part = model(bundles, "stewart")
    home = float(part.q_ref[kin.q_slice(kin.edge("P1"))][0])
    # adjacent legs 1 and 2 share a platform edge of 0.25 m·√2 sin 15°; one at the short and
    # one at the long end of the stroke cannot both reach it
    path = write_csv(tmp_path / "split.csv", "time,P1,P2",
                     [(0, home, home), (1, home - 0.149, home + 0.149)])
    ref = spline_reference(kin, part, load_knots(path))
    with pytest.raises(ReferenceError, match="unreachable on the closure manifold"):
        lift_reference(DynamicsModel.build(kin), part, ref, 1.0, 0.05)


def test_lifted_reference_is_closed_and_consistent(bundles):
    kin, part = model(bundles, "stewart")
    ref = spline_reference(kin, part, load_knots(REFERENCES / "stewart.csv"))
    lr = lift_reference(DynamicsModel.build(kin), part, ref, 3.0, 0.05)
    k = 50  # t = 2.5 s, well inside the motion
    C, cv = closure_jacobian(kin, lr.q[k], lr.v[k])[1:]
    # v = E u annihilates C and a = E u̇ + Ė u satisfies C a + Ċ v = 0 (round-off of a
    # 30-row Jacobian of unit-size entries times speeds below 1)
    assert np.abs(C @ lr.v[k]).max() < 1e-12
    assert np.abs(C @ lr.a[k] + cv).max() < 1e-10
    # the independent speeds are the spline's
    assert lr.u[k] == pytest.approx(ref(2.5, 1), abs=1e-15)
    # port displacement between grid points: Hermite interpolation vs the spline itself
    # (O(h⁴) with h = 50 ms and |d⁴x/dt⁴| ≲ 10 m/s⁴ gives ≲ 1e-6 m)
    assert lr.port_reference(2.525)[0] == pytest.approx(ref(2.525), abs=1e-6)


def test_shipped_stewart_reference_meets_its_specification():
    knots = load_knots(REFERENCES / "stewart.csv")
    assert knots.time[-1] == pytest.approx(22.0)
    assert np.diff(knots.time) == pytest.approx(np.full(knots.time.size - 1, 0.02))
    speed = np.abs(np.diff(knots.values, axis=0) / 0.02).max()
    assert 0.2 < speed < 0.24  # "peak leg speed about 0.23 m/s" (finite differences)
    home = knots.values[0]
    assert np.abs(knots.values - home).max() < 0.15  # the ±0.15 m stroke


def test_stewart_reference_is_reproducible_from_its_generator():
    spec = importlib.util.spec_from_file_location("make_references",
                                                  REFERENCES / "make_references.py")
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    knots = load_knots(REFERENCES / "stewart.csv")
    first = (REFERENCES / "stewart.csv").read_text().splitlines()[0]
    scale = float(first.rsplit("=", 1)[1])
    rows = [0, 300, 700, 1100]
    # the CSV stores 9 decimals
    assert gen.leg_lengths(knots.time[rows], scale) == pytest.approx(knots.values[rows],
                                                                     abs=1e-9)


def test_shipped_excavator_cycle_is_within_limits_and_speeds(bundles):
    kin, part = model(bundles, "excavator")
    ref = spline_reference(kin, part, load_knots(REFERENCES / "excavator.yaml"))
    assert 38.0 <= ref.duration <= 42.0
    t = np.arange(0.0, ref.duration, 0.01)
    speed = np.abs(np.array([ref(x, 1) for x in t])).max(axis=0)
    limits = {a.joint: a.speed_limit for a in kin.record.actuators}
    for j, s in zip(part.independent, speed, strict=True):
        assert s < limits[kin.v_names[int(j)]]


def test_curvature_of_the_lift_matches_the_model(bundles):
    """The lifted acceleration uses the model's curvature term (not a plain E u̇)."""
    kin, part = model(bundles, "fourbar")
    ref = spline_reference(kin, part, load_knots(Path(__file__).parent / "fourbar_swing.csv"))
    lr = lift_reference(DynamicsModel.build(kin), part, ref, 1.0, 0.1)
    k = 3  # t = 0.3 s: moving (the swing peaks at rest at 0.5 s)
    L = lift(kin, part, lr.q[k])
    _, edu = curvature(kin, part, lr.q[k], lr.u[k], L)
    assert np.abs(edu).max() > 1e-3  # the term is not negligible on this motion
    assert lr.a[k] == pytest.approx(L.E @ lr.udot[k] + edu, abs=1e-12)

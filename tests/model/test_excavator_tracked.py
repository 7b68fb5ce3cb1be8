"""The tracked excavator (issue 23 item 9): records/excavator_tracked.yaml.

Checks against independent references: the generator reproduces the shipped file; the
joint-space partition has the seven independent inputs; module grouping shrinks the
largest correction block from all 33 dependent speeds to 6; the digging front has
excavator.yaml's reduced inertia and gravity efforts in the front's coordinates (the
tracked machine's front is that front with the boom cylinder split into two halves, off
the boom's plane: the same pitch-plane dynamics); the track couplings turn idler and
rollers at the ratio of the radii; the kinematic and dynamic catalogues of ``rbc verify``
pass.
"""

from __future__ import annotations

import functools
import importlib.util
from dataclasses import replace

import numpy as np
import pytest

from rbc.compiler import compile_record, compile_to_file
from rbc.ir.bundle import write_bundle
from rbc.ir.summary import summarize
from rbc.model.dynamics import DynamicsData, DynamicsModel, reduced_terms
from rbc.model.partition import lift, partition_at
from rbc.sim.run import SimOptions, prepare, simulate
from rbc.verify.dynamics import run_dynamic_checks
from tests.conftest import RECORDS

SEVEN = {"sprocket_l", "sprocket_r", "slew", "boom_cyl_l", "arm_cyl", "bucket_cyl", "blade_cyl"}
#: front coordinates of excavator.yaml and their names in the tracked record (the boom
#: cylinders are a left and a right one; the left is independent, the right follows it)
FRONT = {"boom_cyl": "boom_cyl_l", "arm_cyl": "arm_cyl", "bucket_cyl": "bucket_cyl"}


@functools.cache
def compiled(name: str):
    _, report = compile_record(RECORDS / f"{name}.yaml")
    parted = report.stages["rank"]
    parts = {p.name: p for p in parted.partitions}
    return replace(parted.model, partitions=parts), parts["default"]


def _generator():
    spec = importlib.util.spec_from_file_location("make_excavator_tracked",
                                                  RECORDS / "make_excavator_tracked.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_generator_reproduces_the_record():
    gen = _generator()
    assert gen.render(gen.build()) == (RECORDS / "excavator_tracked.yaml").read_text()


def test_seven_independent_inputs_and_the_module_saving(tmp_path):
    model, part = compiled("excavator_tracked")
    assert set(part.joints) == SEVEN and part.independent.size == 7
    assert model.nv - part.rank == 7
    data, _ = compile_record(RECORDS / "excavator_tracked.yaml")
    s = summarize(write_bundle(tmp_path / "ext.rbc", data))
    assert s["cycle_rank"] == 9
    (p,) = [p for p in s["partitions"] if p["name"] == "default"]
    # before grouping one block holds every dependent speed; after it the largest module's
    # (the bucket four-bar with the bucket cylinder: 6) — the paper's 25 → 10 on its machine
    assert s["nv"] - p["speeds"] == 33 and p["largest_block"] == 6
    assert len(s["modules"]) == 14


def test_track_couplings_turn_idler_and_rollers_with_the_sprocket():
    model, part = compiled("excavator_tracked")
    gen = _generator()
    E = lift(model, part, part.q_ref).E
    col = {n: int(model.v_offset[model.edge(n)]) for n in model.edge_names}
    sprocket = list(part.independent).index(col["sprocket_l"])
    for wheel, r in (("idler_l", gen.R_IDLER), ("roller_l2", gen.R_ROLLER)):
        # no slip on an inextensible track: r_w ω_w = r_s ω_s
        assert E[col[wheel], sprocket] == pytest.approx(gen.R_SPROCKET / r, rel=1e-14)


def test_the_front_has_the_dynamics_of_excavator_yaml():
    """Same front, same pitch-plane dynamics: the boom, arm and bucket block of M_r and the
    gravity efforts at the shared initial configuration. The split boom cylinders sit off
    the plane (±y), which leaves moments about the pin axes (y) unchanged; the slew row,
    which sees those offsets, is left out."""
    a, pa = compiled("excavator_tracked")
    b, pb = compiled("excavator")
    out = []
    for model, part, names in ((a, pa, list(FRONT.values())), (b, pb, list(FRONT))):
        dm = DynamicsModel.build(model)
        t = reduced_terms(dm, DynamicsData.of(dm), part, part.q_ref,
                          np.zeros(part.independent.size))
        pos = [part.joints.index(n) for n in names]
        out.append((t.M[np.ix_(pos, pos)], t.tau[pos]))
    for xa, xb in zip(*out, strict=True):
        # the same bodies along other tree paths: round-off of O(1e5) kg m² terms (measured
        # 8e-16 relative)
        assert np.abs(xa - xb).max() <= 1e-12 * np.abs(xb).max(), (xa, xb)


@pytest.mark.slow
def test_verify_dynamics_passes():
    model, part = compiled("excavator_tracked")
    for c in run_dynamic_checks(model, part, samples=4):
        assert c.passed, f"{c.name} = {c.value:.3g}: {c.detail}"


@pytest.mark.parametrize("backend,duration", [("reduced", 0.2), ("mujoco", 0.5)])
def test_simulate_along_the_shipped_reference(tmp_path, backend, duration):
    """pd+ff along records/references/excavator_tracked.yaml: ports track, the loops stay
    closed and the energy ledger closes (reduced: exact works integrated with the motion;
    MuJoCo: its soft constraints leave a small drift)."""
    bundle = tmp_path / "ext.h5"
    compile_to_file(RECORDS / "excavator_tracked.yaml", bundle)
    opts = SimOptions(backend=backend, reference=RECORDS / "references/excavator_tracked.yaml",
                      duration=duration)
    s = simulate(prepare(bundle, opts)).summary
    if backend == "reduced":
        assert s["max_loop_gap"] < 1e-12  # projected to the 1e-13 solve tolerance
        assert s["energy_ledger_relative"] < 1e-10  # measured 1.5e-13 over 2 s
    else:
        assert s["max_loop_gap"] < 1e-5  # measured 1.6e-7 m over 2 s
        assert s["energy_ledger_relative"] < 1e-3  # measured 7.7e-5 over 2 s
    assert len(s["port_rms"]) == 8
    assert max(s["port_rms"].values()) < 1e-4  # measured ≤ 2e-5 rad or m over 2 s


def test_best_conditioned_partition_solves_each_coordinate_in_one_module():
    """The four couplings of a track share the sprocket as input; the best-conditioned
    split (rbc solve's re-partitioning, preferred=()) used to pick the sprocket as the
    dependent coordinate of two of them (roller ratio 3.5 > 1) and was refused."""
    model, part = compiled("excavator_tracked")
    p = partition_at(model, part.q_ref, name="best", length=part.length_scale, preferred=())
    assert p.independent.size == 7 and p.rank == part.rank
    E = lift(model, p, p.q_ref).E  # a regular lift: every dependent block is invertible
    assert np.all(np.isfinite(E))

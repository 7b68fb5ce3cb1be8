"""Support modes (rbc.model.modes): the Go2 mode table, per-mode modules and partitions, the
support closures as chords to the world, and bad mode requests."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from rbc.compiler import compile_record, compile_to_file
from rbc.errors import CompileError, UsageError
from rbc.model.augmented import augmented_geometry
from rbc.model.compiled import CompiledModel
from rbc.model.dynamics import DynamicsData, DynamicsModel
from rbc.model.kinematics import closure_geometry, residual
from rbc.model.modes import (
    FREE,
    _tiers,
    analyse_mode,
    anchors_array,
    enumerate_modes,
    extend_configuration,
    mode_model,
    model_for,
    parse_mode_request,
    reference_q,
    support_poses,
)
from rbc.model.partition import lift, partition_at
from rbc.verify.kinematics import jacobian_fd
from tests.conftest import RECORDS

GO2 = RECORDS / "go2.yaml"
LEGS = ("FL", "FR", "RL", "RR")


@pytest.fixture(scope="module")
def go2(tmp_path_factory) -> CompiledModel:
    """The shipped Go2 record compiled with ``--modes all`` and read back."""
    h5 = tmp_path_factory.mktemp("go2") / "go2.h5"
    compile_to_file(GO2, h5, all_modes=True)
    return CompiledModel.from_bundle(h5)


def test_go2_mode_table(go2: CompiledModel) -> None:
    """The issue's acceptance: free (18) and the 11 two-, three- and four-foot sets with
    closure ranks 6/9/12 on the tree speeds and 12/9/6 independent speeds."""
    table = {n: (len(m.supports), m.tree_rank, m.partition.independent.size, m.actuation_rank)
             for n, m in go2.modes.items()}
    assert table.pop(FREE) == (0, 0, 18, 12)
    assert len(table) == 11
    for feet, rank, n_u, act in table.values():
        assert (rank, n_u) == {2: (6, 12), 3: (9, 9), 4: (12, 6)}[feet]
        # two point feet leave one undriven direction: tipping about the line through them
        assert act == (11 if feet == 2 else n_u)
    for m in go2.modes.values():  # the base twist stays independent in every mode
        assert m.partition.joints[0] == "base.root" and m.root_inputs


def test_go2_one_foot_sets_are_left_out_with_a_reason(tmp_path: Path) -> None:
    _, report = compile_record(GO2, all_modes=True)
    notes = report.stages["rank"].mode_notes
    assert [n.split(":")[0] for n in notes] == list(LEGS)
    assert all("15 independent speeds for 12 actuators" in n for n in notes)


def test_stance_legs_are_modules(go2: CompiledModel) -> None:
    """With the base an input, each stance foot and its leg form one module (a local edit
    re-solves one leg): 3 leg joints and the foot's 3 spherical cut coordinates."""
    for name in ("FL+FR+RL+RR", "FL+RL+RR"):
        mm = model_for(go2, go2.modes[name])
        assert len(mm.modules) == len(go2.modes[name].supports)
        root = mm.edge("base.root")
        for mod, leg in zip(mm.modules, go2.modes[name].supports, strict=True):
            names = {mm.edge_names[k] for k in mod.edges}
            assert names == {f"{leg}_hip_joint", f"{leg}_thigh_joint", f"{leg}_calf_joint",
                             f"{leg}.support"}
            assert mod.inputs == (root,)
        dep = set(go2.modes[name].partition.dependent.tolist())
        assert all(sum(j in dep for j in b.cols) == 6 for b in mm.blocks)


def test_mode_model_is_the_base_plus_chords_to_the_world(go2: CompiledModel) -> None:
    info = go2.modes["FL+FR+RR"]
    mm = model_for(go2, info)
    assert mm.supports == info.supports and mm.nv_tree == go2.nv_tree == 18
    assert (mm.nq, mm.nv) == (go2.nq + 4 * 3, go2.nv + 3 * 3)  # a spherical cut per foot
    for e, s in zip(mm.chord_edges, info.supports, strict=True):
        assert mm.edge_names[e] == f"{s}.support" and mm.edge_types[e] == "spherical"
        assert int(mm.parent[e]) == mm.n_bodies  # the world
    # the reference anchors are the support poses at the reference configuration
    q_base = go2.partitions["default"].q_ref
    np.testing.assert_allclose(info.anchors, anchors_array(support_poses(go2, q_base,
                                                                         info.supports)))
    assert np.abs(residual(mm, info.partition.q_ref)).max() <= 1e-15


def test_mode_geometry_two_algorithms_and_fd(go2: CompiledModel) -> None:
    """Path products and the augmented Pinocchio tree agree on ρ and C off the manifold and
    on Ċv on it; C matches centred differences of ρ."""
    info = go2.modes["FL+FR+RL+RR"]
    mm, part = model_for(go2, info), info.partition
    dm = DynamicsModel.build(mm)
    data = DynamicsData.of(dm)
    rng = np.random.default_rng(7)
    qp = mm.integrate(part.q_ref, 0.05 * rng.standard_normal(mm.nv))
    g1, g2 = closure_geometry(mm, qp), augmented_geometry(dm.augmented, data.augmented_data, qp)
    # both evaluate the same SE(3) products in double precision: round-off agreement
    assert np.abs(g1.rho - g2.rho).max() < 1e-13 and np.abs(g1.C - g2.C).max() < 1e-13
    assert np.abs(g1.C - jacobian_fd(mm, qp, 1e-6)).max() < 1e-7  # FD error budget ~1e-10
    q = part.q_ref
    v = lift(mm, part, q).E @ rng.standard_normal(part.independent.size)
    g1, g2 = closure_geometry(mm, q), augmented_geometry(dm.augmented, data.augmented_data, q)
    assert np.abs(g1.velocity_product(mm, v) - g2.velocity_product(mm, v)).max() < 1e-12


def test_bundle_round_trip_keeps_the_modes(go2: CompiledModel) -> None:
    _, report = compile_record(GO2, all_modes=True)
    compiled = {m.name: m for m in report.stages["rank"].modes}
    assert set(compiled) == set(go2.modes)
    for name, m in compiled.items():
        stored = go2.modes[name]
        assert stored.supports == m.supports and stored.root_inputs == m.root_inputs
        for key in ("independent", "dependent", "rows", "q_ref"):
            np.testing.assert_array_equal(getattr(stored.partition, key),
                                          getattr(m.partition, key))


BOX = """rbc: 1
name: box
bodies:
  - {name: box, floating: true, mass: 2, inertia: [0.1, 0.1, 0.1, 0, 0, 0]}
supports:
  - {name: pad, body: box, xyz: [0, 0, -0.1], half_extents: [0.1, 0.1]}
  - {name: tip, body: box, xyz: [0.1, 0, -0.1]}
"""


def _box(tmp_path: Path) -> CompiledModel:
    src = tmp_path / "box.yaml"
    src.write_text(BOX)
    _, report = compile_record(src)
    stage = report.stages["rank"]
    return replace(stage.model, partitions={p.name: p for p in stage.partitions})


def test_root_becomes_dependent_when_no_leg_can_absorb_the_support(tmp_path: Path) -> None:
    """A floating box: no joint can take a support's rows, so the root is dependent. One
    support's module holds the root as its own input; two supports both need it, so their
    modules fall back to one module with the root as a candidate."""
    box = _box(tmp_path)
    pad = analyse_mode(box, "pad", ("pad",))
    assert (pad.tree_rank, pad.partition.independent.size, pad.root_inputs) == (6, 0, True)
    tip = analyse_mode(box, "tip", ("tip",))  # a point: the box may still turn about it
    assert (tip.tree_rank, tip.partition.independent.size) == (3, 3)
    both = analyse_mode(box, "both", ("pad", "tip"))  # 9 rows, rank 6 on the tree speeds
    assert (both.tree_rank, both.partition.independent.size, both.root_inputs) == (6, 0, False)
    assert len(model_for(box, both).modules) == 1


def test_legs_needing_different_root_coordinates_form_one_module() -> None:
    """Cassie on both soles: each leg (5 drives, 16 dependent coordinates for 17 rows) needs
    one root coordinate. With the root an input, the first leg takes one and the second
    another (partition_at never gives one coordinate to two modules): each module's own
    block is regular, but each reads the other's, and the dependent block was singular
    (cond 1e17, rank E 1). Such a cycle is refused, so the supports fall back to one module
    with the root as a candidate, and the lift is a null-space basis of the closure rows."""
    stage = compile_record(RECORDS / "cassie.yaml")[1].stages["rank"]
    model = replace(stage.model, partitions={p.name: p for p in stage.partitions})
    names = ("left_sole", "right_sole")
    mode = mode_model(model, names, root_inputs=True)
    q = extend_configuration(model, mode, reference_q(model))
    with pytest.raises(CompileError, match="cycle"):
        partition_at(mode, q, preferred=_tiers(mode)[0], last=_tiers(mode)[1])
    info = analyse_mode(model, "double", names)
    assert not info.root_inputs and info.partition.independent.size == 10
    mm = model_for(model, info)
    assert len(mm.modules) == 1
    L = lift(mm, info.partition, info.partition.q_ref)
    # C E = 0 to round-off of a well-conditioned solve (cond R_p ≈ 4e3 here)
    assert np.abs(L.C @ L.E).max() < 1e-12 and np.linalg.matrix_rank(L.E) == 10
    assert info.actuation_rank == 8  # invariant of the partition: rank(J_ℓ E) on null(C)


def test_requests_and_names(tmp_path: Path) -> None:
    box = _box(tmp_path)
    modes, notes = enumerate_modes(box, requests=(("stand", ("tip", "pad")),))
    assert [m.name for m in modes] == ["stand"] and modes[0].supports == ("pad", "tip")
    assert parse_mode_request("stance=pad, tip") == ("stance", ("pad", "tip"))
    assert parse_mode_request("free=") == ("free", ())
    for text in ("stance", "=pad", "stance="):
        with pytest.raises(UsageError, match="expected NAME=support1,support2"):
            parse_mode_request(text)
    bad = {(("s", ("pda",)),): "unknown support 'pda' (did you mean 'pad'?)",
           (("s", ("pad", "pad")),): "support(s) pad listed twice",
           (("free", ("pad",)),): "reserved",
           (("a/b", ("pad",)),): "contains '/'",
           (("s", ("pad",)), ("s", ("tip",))): "the name is used twice"}
    for requests, message in bad.items():
        with pytest.raises(UsageError) as info:
            enumerate_modes(box, requests=requests)
        assert message in str(info.value)

"""Acceptance (issue #19): the same two-robot system with a hand link written as ONE flat
record and compiled directly gives the same accelerations and reactions as the composed
bundle; the composed sole and hand reactions equal the maximal-coordinate Newton–Euler
reference; the affine support-wrench maps λ_b(f) equal the reactions at any f.

"Compiled directly": the flat record (the members' records side by side and the link as
one more record joint, rendered as YAML and parsed) goes through the compiler's passes
(graph, forest, paths, modules) and its own one-level rank analysis of the support mode
(rbc.model.modes), at the closed configuration of the composition — a record cannot
place floating bases, so the acquisition from the record's initial guesses is the one
step not taken.
"""

from __future__ import annotations

import numpy as np
import pytest

from rbc.compose.dynamics import MemberModel, accelerations, composed_terms, forward_dynamics
from rbc.compose.flat import flat_record
from rbc.compose.wrenches import chord_wrenches, support_wrench_map
from rbc.ir.record import coordinate_names
from rbc.model.closure import ClosureState
from rbc.model.compiled import CompiledModel
from rbc.model.dynamics import DynamicsData, DynamicsModel, reduced_terms, tree_acceleration
from rbc.model.dynamics import forward_dynamics as flat_forward
from rbc.model.modes import _tiers, anchors_se3, mode_model
from rbc.model.partition import partition_at
from rbc.model.reactions import joint_reactions
from rbc.verify.newton_euler import NewtonEuler


def _q_names(m: CompiledModel) -> list[str]:
    out = [""] * m.nq
    for e, (t, n) in enumerate(zip(m.edge_types, m.edge_names, strict=True)):
        out[m.q_slice(e)] = coordinate_names(t, n)[0]
    return out


@pytest.fixture(scope="module")
def systems(pair):
    from rbc.ir.render import record_yaml
    from rbc.ir.schema import parse_record_text
    from rbc.passes.forest import BuildForest
    from rbc.passes.graph import BuildGraph
    from rbc.passes.modules import BuildModules
    from rbc.passes.paths import BuildPaths

    comp = pair[1]
    md = comp.modes["stand"]
    mm = MemberModel.build(comp, "stand")
    rec = flat_record("pair_flat", [(m.name, m.model.record) for m in comp.members],
                      extra_joints=tuple(comp.links.values()))
    rec = parse_record_text(record_yaml(rec), "pair_flat.yaml")  # one YAML record
    mods = BuildModules().run(BuildPaths().run(BuildForest().run(BuildGraph().run(rec))))
    fm = CompiledModel.from_ir(mods)
    assert "hands" in [fm.edge_names[e] for e in fm.chord_edges]
    mode = mode_model(fm, md.supports, anchors_se3(md.anchors))
    return comp, md, mm, mode


def _state(mm, md, rng):
    q = ClosureState(mm.kin, md.partition, md.partition.q_ref.copy()).step(
        rng.uniform(-1, 1, md.partition.independent.size), 0.01)
    u = rng.uniform(-0.5, 0.5, md.partition.independent.size)
    f = np.array([rng.uniform(*a.effort_limits) * 0.05 for a in mm.kin.record.actuators])
    return q, u, f


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_composed_equals_flat(systems, seed):
    comp, md, mm, mode = systems
    rng = np.random.default_rng(seed)
    data = DynamicsData.of(mm.dm)
    q, u, f = _state(mm, md, rng)
    T = composed_terms(mm, data, q, u, f)
    udot = forward_dynamics(T, u)
    a = accelerations(T, udot)
    qi = {n: i for i, n in enumerate(_q_names(mm.kin))}
    vi = {n: i for i, n in enumerate(mm.kin.v_names)}
    qf = np.array([q[qi[n]] for n in _q_names(mode)])
    pref, last = _tiers(mode)
    part = partition_at(mode, qf, name="stand", preferred=pref, last=last)
    vf = np.array([T.v[vi[n]] for n in mode.v_names])
    dm = DynamicsModel.build(mode)
    df = DynamicsData.of(dm)
    Tf = reduced_terms(dm, df, part, qf, vf[part.independent], f)
    assert np.abs(Tf.v - vf).max() <= 1e-12 * max(1.0, np.abs(vf).max())
    udf = flat_forward(dm, Tf)
    af = tree_acceleration(Tf, udf)
    a_c = np.array([a[vi[n]] for n in mode.v_names])
    # two pipelines (nested vs one-level lift, member-wise vs CRBA/RNEA terms): round-off
    assert np.abs(af - a_c).max() <= 1e-12 * max(1.0, np.abs(af).max())
    W = chord_wrenches(mm, data, T, udot, f).by_name()
    R = joint_reactions(dm, df, qf, Tf, udf, f).by_name()  # rbc forces on the flat record
    scale = max(1.0, max(np.abs(r.wrench).max() for r in R.values()))
    for name, r in R.items():
        if r.cut and not r.indeterminate:
            assert np.abs(W[name] - r.wrench).max() <= 1e-12 * scale, name
    ne = NewtonEuler.build(dm).reactions(qf, Tf.v, f)
    for name in ("hands", *(s + ".support" for s in md.supports)):
        ref = ne[name]
        # Newton–Euler is itself double precision (maximal coordinates): 1e-9 (docs)
        assert np.abs(W[name] - ref).max() <= 1e-9 * max(1.0, np.abs(ref).max()), name


def test_support_wrench_map_is_affine_in_the_efforts(systems):
    comp, md, mm, mode = systems
    rng = np.random.default_rng(7)
    data = DynamicsData.of(mm.dm)
    q, u, _ = _state(mm, md, rng)
    m = support_wrench_map(mm, data, composed_terms(mm, data, q, u))
    assert m.supports == md.supports and m.links == md.links == ("hands",)
    for _ in range(3):
        f = np.array([rng.uniform(*a.effort_limits) * 0.05 for a in mm.kin.record.actuators])
        T = composed_terms(mm, data, q, u, f)
        W = chord_wrenches(mm, data, T, forward_dynamics(T, u), f).by_name()
        want = np.array([W[s + ".support"] for s in md.supports])
        assert np.abs(m(f) - want).max() <= 1e-12 * max(1.0, np.abs(want).max())
        # the link rows of the same solve: the hand link's wrench (palm a on palm b)
        link = np.array([W[n] for n in md.links])
        assert np.abs(m.link_wrenches(f) - link).max() <= 1e-12 * max(1.0, np.abs(want).max())


@pytest.mark.parametrize("name", ["boom_cylinder_distance", "cam_follower",
                                  "fourbar_polynomial_cut"])
def test_flat_record_prefixes_every_port_kind_and_nonlinear_coupling(name):
    """Distance and profile ports and nonlinear couplings name bodies and joints too: the flat
    record of two copies prefixes them all (it parses, so every reference resolves) and
    each copy's actuators and couplings equal the member's own but for the prefix."""
    from pathlib import Path

    from rbc.compose.flat import prefixed
    from rbc.ir.schema import parse_record

    rec = parse_record(Path(__file__).parents[1] / "model" / "records" / f"{name}.yaml")
    flat = flat_record("two", [("a", rec), ("b", rec)])
    assert len(flat.actuators) == 2 * len(rec.actuators)
    assert len(flat.couplings) == 2 * len(rec.couplings)
    for m, half in (("a", 0), ("b", 1)):
        n = len(rec.actuators)
        for own, copy in zip(rec.actuators, flat.actuators[half * n:(half + 1) * n],
                             strict=True):
            assert copy.name == prefixed(m, own.name) and copy.kind == own.kind
            assert copy.port_joints == tuple(prefixed(m, j) for j in own.port_joints)
            if own.distance is not None:
                assert [e.body for e in copy.distance] == [prefixed(m, e.body)
                                                          for e in own.distance]
        n = len(rec.couplings)
        for own, copy in zip(rec.couplings, flat.couplings[half * n:(half + 1) * n],
                             strict=True):
            assert copy.joints == tuple(prefixed(m, j) for j in own.joints)
            assert copy.profile == own.profile

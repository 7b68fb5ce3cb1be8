"""Graph and forest passes: counts, tree rules, determinism, and shipped-record acceptance."""

from __future__ import annotations

import numpy as np
import pytest

from rbc.errors import CompileError
from rbc.ir.schema import parse_record_text
from rbc.passes.graph import BuildGraph
from tests.conftest import RECORDS
from tests.passes.util import front, front_file, front_text


def incidence_cycle_rank(g) -> int:
    """Cycle rank from the rank of the vertex–edge incidence matrix (independent of union–find).

    For a graph with V vertices, E edges and c components, rank(incidence) = V − c over the
    reals, so the cycle rank is E − rank(incidence).
    """
    V = g.n_bodies + 1
    inc = np.zeros((V, g.n_edges))
    inc[g.parent, np.arange(g.n_edges)] = 1.0
    inc[g.child, np.arange(g.n_edges)] = -1.0
    return g.n_edges - int(np.linalg.matrix_rank(inc))


def test_stewart_acceptance():
    m = front_file(RECORDS / "stewart.yaml")
    f = m.paths.forest
    g = f.graph
    assert (g.n_bodies, g.n_joints, g.components, g.cycle_rank) == (14, 18, 1, 5)
    tree_types = [g.edge_types[k] for k in f.tree_edges]
    cut_types = [g.edge_types[k] for k in f.chords]
    assert tree_types.count("spherical") == 1
    assert cut_types == ["spherical"] * 5
    assert sum(1 for k in f.tree_edges if g.edge_types[k] == "prismatic") == 6
    assert f.nv_tree == 21
    assert incidence_cycle_rank(g) == g.cycle_rank


@pytest.mark.parametrize("name", ["fourbar", "slider_crank", "fivebar"])
def test_planar_linkages_have_one_loop(name):
    g = front_file(RECORDS / f"{name}.yaml").paths.forest.graph
    assert g.cycle_rank == 1
    assert incidence_cycle_rank(g) == 1


def test_fourbar_is_cut_away_from_the_ground():
    """Balancing: the loop is split on the side away from the root (C, not D or A)."""
    f = front_file(RECORDS / "fourbar.yaml").paths.forest
    assert [f.graph.edge_names[k] for k in f.chords] == ["C"]


def test_actuated_joint_stays_in_tree_even_when_written_last(tmp_path):
    text = (RECORDS / "fourbar.yaml").read_text()
    rec = parse_record_text(text)
    # Actuate every joint but one: the single free choice must be the one cut.
    from dataclasses import replace

    from rbc.ir.record import Actuator

    names = [j.name for j in rec.joints]
    acts = tuple(Actuator(name=f"m{n}", joint=n) for n in names[1:])
    f = front(replace(rec, actuators=acts)).paths.forest
    assert [f.graph.edge_names[k] for k in f.chords] == [names[0]]
    assert f.forced_cuts == ()


def test_loop_of_only_actuated_joints_reports_the_forced_cut():
    rec = parse_record_text((RECORDS / "fourbar.yaml").read_text())
    from dataclasses import replace

    from rbc.ir.record import Actuator

    acts = tuple(Actuator(name=f"m{j.name}", joint=j.name) for j in rec.joints)
    f = front(replace(rec, actuators=acts)).paths.forest
    assert len(f.forced_cuts) == 1 and f.forced_cuts == f.chords


def test_prefer_cut_hint_is_honoured():
    text = (RECORDS / "fourbar.yaml").read_text()
    rec = parse_record_text(text)
    from dataclasses import replace

    target = next(j for j in rec.joints if j.name not in rec.actuated_joints()
                  and j.name != "C")
    joints = tuple(replace(j, cut_prefer=(j.name == target.name)) for j in rec.joints)
    f = front(replace(rec, joints=joints)).paths.forest
    assert [f.graph.edge_names[k] for k in f.chords] == [target.name]


def test_depth_first_order_keeps_subtrees_contiguous():
    f = front_file(RECORDS / "stewart.yaml").paths.forest
    g = f.graph
    order = list(f.tree_edges)
    child = [int(g.child[k]) if f.sign[k] > 0 else int(g.parent[k]) for k in order]
    # In a preorder, every vertex's subtree is a contiguous run right after it.
    for i, v in enumerate(child):
        d = f.depth[v]
        j = i + 1
        while j < len(child) and f.depth[child[j]] > d:
            # each vertex in the run descends from v
            w = child[j]
            while f.depth[w] > d:
                w = int(f.parent_vertex[w])
            assert w == v
            j += 1


def test_compilation_is_deterministic():
    a = front_file(RECORDS / "stewart.yaml").paths.forest
    b = front_file(RECORDS / "stewart.yaml").paths.forest
    assert a.tree_edges == b.tree_edges and a.chords == b.chords


def test_unrooted_component_is_a_compile_error():
    text = """
rbc: 1
name: island
bodies:
  - {name: ground, fixed: true}
  - {name: a, mass: 1, inertia: [1, 1, 1, 0, 0, 0]}
  - {name: b, mass: 1, inertia: [1, 1, 1, 0, 0, 0]}
joints:
  - {name: j, type: revolute, parent: a, child: b, axis: [0, 0, 1]}
"""
    # The parser rejects it first with a named field; the graph pass repeats the check for
    # records built in code.
    from rbc.errors import RecordError

    with pytest.raises(RecordError, match="fixed: true"):
        parse_record_text(text)
    from rbc.ir.record import Body, Joint, Record

    rec = Record(name="island", gravity=(0, 0, -9.81),
                 bodies=(Body("ground", "fixed"), Body("a", mass=1.0), Body("b", mass=1.0)),
                 joints=(Joint("j", "revolute", "a", "b", axis=(0, 0, 1)),))
    with pytest.raises(CompileError, match="a, b"):
        BuildGraph().run(rec)


def test_two_fixed_bodies_close_a_loop_through_the_world():
    text = """
rbc: 1
name: split_ground
bodies:
  - {name: left, fixed: true}
  - {name: right, fixed: true}
  - {name: bar, mass: 1, com: [0.5, 0, 0], inertia: [0.01, 0.1, 0.1, 0, 0, 0]}
joints:
  - {name: L, type: revolute, parent: left, child: bar, axis: [0, 0, 1]}
  - {name: R, type: prismatic, parent: right, child: bar, axis: [1, 0, 0]}
"""
    m = front_text(text)
    g, f = m.paths.forest.graph, m.paths.forest
    assert g.components == 1 and g.cycle_rank == 1 == incidence_cycle_rank(g)
    (path,) = m.paths.paths
    assert path.lca == g.world
    assert [fa.name for fa in path.factors][0] in {"right.root", "left.root"}
    assert len(f.chords) == 1


def test_floating_root_has_free_coordinates():
    text = """
rbc: 1
name: flyer
bodies:
  - {name: torso, floating: true, mass: 10, inertia: [1, 1, 1, 0, 0, 0]}
  - {name: leg, mass: 1, inertia: [0.1, 0.1, 0.01, 0, 0, 0]}
joints:
  - {name: hip, type: revolute, parent: torso, child: leg, axis: [0, 1, 0]}
"""
    f = front_text(text).paths.forest
    assert (f.nq, f.nv, f.nq_tree, f.nv_tree) == (8, 7, 8, 7)
    assert f.graph.edge_names[f.tree_edges[0]] == "torso.root"


def test_joint_with_armature_stays_in_the_tree():
    """Armature is drive data: its joint is kept so its inertia lands on a tree coordinate."""
    from dataclasses import replace

    rec = parse_record_text((RECORDS / "fourbar.yaml").read_text())
    joints = tuple(replace(j, armature=0.01) if j.name == "C" else j for j in rec.joints)
    f = front(replace(rec, joints=joints)).paths.forest
    assert "C" not in [f.graph.edge_names[k] for k in f.chords]

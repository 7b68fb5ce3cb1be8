"""Paths and modules on seeded random mechanisms and on the shipped records."""

from __future__ import annotations

import numpy as np
import pytest

from rbc.bench.compile import chain_record
from rbc.ir.record import JOINT_TYPES, Body, Joint, Record
from tests.conftest import RECORDS
from tests.passes.util import front, front_file, front_text

SEED = 20260927


def random_mechanism(rng: np.random.Generator, n_bodies: int, n_extra: int) -> Record:
    """A random connected mechanism: a random tree plus ``n_extra`` loop-closing joints."""
    bodies = [Body("b0", "fixed")] + [Body(f"b{i}", mass=1.0, inertia=(1, 1, 1, 0, 0, 0))
                                      for i in range(1, n_bodies)]
    types = [t for t in JOINT_TYPES if t != "free"]
    joints = []
    for i in range(1, n_bodies):
        p = int(rng.integers(0, i))
        pair = (f"b{p}", f"b{i}") if rng.random() < 0.7 else (f"b{i}", f"b{p}")
        joints.append((pair, types[int(rng.integers(len(types)))]))
    for _ in range(n_extra):
        a, b = rng.choice(n_bodies, size=2, replace=False)
        joints.append(((f"b{a}", f"b{b}"), types[int(rng.integers(len(types)))]))
    order = rng.permutation(len(joints))
    js = tuple(Joint(f"j{n}", joints[k][1], *joints[k][0], axis=(0, 0, 1))
               for n, k in enumerate(order))
    return Record(name="random", gravity=(0, 0, -9.81), bodies=tuple(bodies), joints=js)


def sharing_components(m) -> set[frozenset[int]]:
    """Chord groups by brute force: chords linked when they share a candidate edge."""
    g = m.paths.forest.graph
    cand = []
    for p in m.paths.paths:
        edges = {p.chord} | {fa.edge for fa in p.factors if not g.keep[fa.edge]}
        cand.append({k for k in edges if g.nv[k] > 0})
    n = len(cand)
    seen, groups = set(), set()
    for s in range(n):
        if s in seen:
            continue
        stack, comp = [s], set()
        while stack:
            i = stack.pop()
            if i in comp:
                continue
            comp.add(i)
            stack += [j for j in range(n) if j not in comp and cand[i] & cand[j]]
        seen |= comp
        groups.add(frozenset(comp))
    return groups


@pytest.mark.parametrize("case", range(40))
def test_random_mechanisms(case):
    rng = np.random.default_rng(SEED + case)
    rec = random_mechanism(rng, int(rng.integers(2, 25)), int(rng.integers(0, 8)))
    m = front(rec)  # every pass's verify() runs
    f = m.paths.forest
    g = f.graph
    assert len(f.chords) == g.cycle_rank == g.n_joints + 1 - g.n_bodies
    for p in m.paths.paths:
        # common-ancestor pruning: exactly the two half-paths below the LCA
        assert p.length == f.depth[p.b] + f.depth[p.c] - 2 * f.depth[p.lca]
    got = {frozenset(mod.chords) for mod in m.modules if mod.chords}
    assert got == sharing_components(m)


def test_chain_of_loops_has_linear_path_total():
    """Σ|P_e| grows linearly: each four-bar of the chain closes within itself (|P| = 3)."""
    import tempfile
    from pathlib import Path

    for n in (1, 7, 50):
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "c.yaml"
            path.write_text(chain_record(n))
            m = front_file(path)
        assert [p.length for p in m.paths.paths] == [3] * n
        assert len(m.modules) == n  # loops share only actuated cranks: one module each


def test_stewart_is_one_module_of_thirty_rows():
    m = front_file(RECORDS / "stewart.yaml")
    (mod,) = m.modules
    assert mod.rows == 30 and len(mod.chords) == 5


def test_couplings_join_modules():
    text = """
rbc: 1
name: two_fingers
bodies:
  - {name: palm, fixed: true}
  - {name: f1, mass: 0.1, inertia: [1e-4, 1e-4, 1e-4, 0, 0, 0]}
  - {name: f2, mass: 0.1, inertia: [1e-4, 1e-4, 1e-4, 0, 0, 0]}
joints:
  - {name: s1, type: prismatic, parent: palm, child: f1, axis: [1, 0, 0]}
  - {name: s2, type: prismatic, parent: palm, child: f2, axis: [-1, 0, 0]}
couplings:
  - {name: equal_travel, type: linear, terms: {s1: -1, s2: 1}, offset: 0}
"""
    m = front_text(text)
    (mod,) = m.modules
    assert mod.couplings == (0,) and mod.chords == () and mod.rows == 1


@pytest.mark.parametrize("path", sorted(RECORDS.glob("*.yaml")) + [None],
                         ids=lambda p: p.stem if p else "chain50")
def test_normalized_record_is_asdict(path, tmp_path):
    """The bundle's normalized record (codegen's own dataclass walk) is the JSON of
    ``dataclasses.asdict``, byte for byte, on every shipped record and a generated chain."""
    import dataclasses
    import json

    from rbc.passes.codegen import normalized_record
    from rbc.passes.parse import Parse

    if path is None:
        path = tmp_path / "chain.yaml"
        path.write_text(chain_record(50))
    record = Parse().run(path)
    data = dataclasses.asdict(record)
    data.pop("text", None)
    assert normalized_record(record) == json.dumps(data, sort_keys=True, default=str)

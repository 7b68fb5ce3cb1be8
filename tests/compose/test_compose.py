"""Composition core: the composed bundle, the composer lift against the one-level lift of
the same mode model, its rates against finite differences, and the counts of the ring."""

from __future__ import annotations

import json

import numpy as np

from rbc.compose.lift import ComposerStructure, composer_lift
from rbc.model.closure import ClosureState
from rbc.model.dynamics import DynamicsData, DynamicsModel
from rbc.model.kinematics import residual
from rbc.model.partition import curvature, lift


def _setup(comp, mode="stand"):
    md = comp.modes[mode]
    model = comp.model(md)
    dm = DynamicsModel.build(model)
    return md, model, dm, DynamicsData.of(dm), ComposerStructure.build(model, comp.members,
                                                                      md.level2)


def test_pair_counts_and_reference(pair):
    comp, loaded = pair
    md = comp.modes["stand"]
    model = comp.model(md)
    assert (model.n_bodies, model.n_chords) == (84, 21)
    # 2 × 27 level-1 speeds + 3 chart rates of the ball link; 4 soles × 6 + 6 link rows
    assert (md.level2.w.size, md.level2.rows.size, md.partition.independent.size) == (57, 30, 27)
    # the links and soles close at the reference (the solve's tolerance, 1e-13)
    assert np.abs(residual(model, md.partition.q_ref)).max() <= 1e-12
    assert comp.modes["free"].partition.independent.size == 54  # two free robots: 2 × 27
    for name, m in comp.modes.items():
        l = loaded.modes[name]
        assert np.array_equal(m.partition.independent, l.partition.independent)
        assert np.array_equal(m.level2.rows, l.level2.rows)
        assert np.array_equal(m.partition.q_ref, l.partition.q_ref)
    assert [m.name for m in loaded.members] == ["h1", "h2"]


def test_composer_lift_equals_one_level_lift(pair):
    """E = E₁ G is the one-level lift of the mode model with the same independent set, and
    the nested curvature Ė u (two solves) equals the one-level curvature."""
    md, model, dm, data, st = _setup(pair[1])
    rng = np.random.default_rng(3)
    q = md.partition.q_ref
    L = composer_lift(st, dm, data, q)
    flat = lift(model, md.partition, q)
    # both are solves of the same closure Jacobian: agreement to round-off relative to |E|
    assert np.abs(L.E - flat.E).max() <= 1e-12 * np.abs(flat.E).max()
    assert np.abs(np.linalg.svd(L.geometry.C @ L.E, compute_uv=False)).max() <= 1e-10
    u = rng.uniform(-1, 1, st.n_u)
    v, edu = L.curvature(u)
    v1, edu1 = curvature(model, md.partition, q, u, flat)
    assert np.abs(edu - edu1).max() <= 1e-11 * max(1.0, np.abs(edu1).max())
    # the rate operator at x = u is the curvature
    assert np.abs(L.rate(dm, data, v, u[:, None])[:, 0] - edu).max() <= 1e-11 * np.abs(edu).max()


def test_rate_operator_against_finite_differences(pair):
    """Ė(v) X against Richardson-extrapolated centred differences of E along a closed motion
    (h = 2e-4, 1e-4 s: truncation O(h⁴) ≈ 1e-14, closure noise 1e-13/h ≈ 1e-9 of |Ė|)."""
    md, model, dm, data, st = _setup(pair[1])
    rng = np.random.default_rng(4)
    q = md.partition.q_ref
    u = rng.uniform(-1, 1, st.n_u)
    X = rng.uniform(-1, 1, (st.n_u, 2))

    def E_at(h):
        qq = ClosureState(model, md.partition, q.copy()).step(u, h)
        return composer_lift(st, dm, data, qq).E

    def centred(h):
        return (E_at(h) - E_at(-h)) / (2 * h)

    fd = (4 * centred(1e-4) - centred(2e-4)) / 3
    L = composer_lift(st, dm, data, q)
    R = L.rate(dm, data, L.E @ u, X)
    assert np.abs(fd @ X - R).max() <= 1e-6 * np.abs(R).max()


def test_ring_counts(ring):
    comp, loaded = ring
    md = loaded.modes["stand"]
    model = loaded.model(md)
    assert (model.n_bodies, model.n_chords, md.partition.independent.size) == (210, 55, 60)
    assert np.abs(residual(model, md.partition.q_ref)).max() <= 1e-12


def test_inspect_composed_bundle(members_dir, pair, capsys):
    from rbc.cli.main import main

    assert main(["inspect", str(members_dir / "pair.h5"), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    stand = doc["composition"]["modes"][0]
    assert (stand["bodies"], stand["chords"], stand["speeds"]) == (84, 21, 27)
    assert [m["name"] for m in doc["composition"]["members"]] == ["h1", "h2"]
    assert len(doc["bodies"]) == 84

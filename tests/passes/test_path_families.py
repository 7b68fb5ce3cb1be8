"""Common-endpoint path families (rbc.ir.paths.path_families, issue #23 item 8): chords whose
closure paths end (or start) with the same tree branch are compared with N_p − 1
comparisons and the shared branch composed once; the residual is unchanged."""

from __future__ import annotations

import json

import numpy as np
import pinocchio as pin
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rbc.compiler import compile_record
from rbc.ir import spatial as sp
from rbc.ir.paths import path_families
from rbc.model.kinematics import TransformCache, residual
from tests.conftest import RECORDS


def _model(path, **kw):
    _, report = compile_record(path, **kw)
    return report.stages["rank"].model


def test_stewart_legs_are_one_family(tmp_path, capsys):
    """Six legs from the base to the platform: six paths, five comparisons (one per cut
    spherical joint, not the fifteen pairs), the tree leg U1 · P1 · S1 composed once."""
    from rbc.cli.main import main

    m = _model(RECORDS / "stewart.yaml")
    (f,) = m.families
    assert f.side == "suffix" and f.n_paths == 6 and len(f.chords) == 5
    assert [m.edge_names[k] for k, _ in f.shared] == ["U1", "P1", "S1"]
    assert f.saving == 4 * 3
    out = tmp_path / "s.h5"
    assert main(["compile", str(RECORDS / "stewart.yaml"), "-o", str(out)]) == 0
    capsys.readouterr()
    assert main(["inspect", str(out), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["path_families"] == [{
        "side": "suffix", "endpoint": "platform", "chords": ["S2", "S3", "S4", "S5", "S6"],
        "paths": 6, "comparisons": 5, "all_pairs": 15, "shared": ["U1", "P1", "S1"],
        "saving": 12}]
    total = sum(len(p) for p in m.paths)  # 5 chords × |P| = 5
    assert doc["path_factors"] == {"total": total, "evaluated": total - f.saving} == {
        "total": 25, "evaluated": 13}


def test_records_without_shared_branches_have_no_family():
    """The excavator's four loops close on four different pins: no family."""
    assert _model(RECORDS / "excavator.yaml").families == ()


factor = st.tuples(st.integers(0, 5), st.sampled_from((-1, 1)))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(factor, max_size=5), max_size=8))
def test_families_share_what_they_claim(paths):
    fams = path_families(paths)
    seen: set[int] = set()
    for f in fams:
        assert len(f.chords) >= 2 and not seen & set(f.chords) and len(f.shared) >= 1
        seen |= set(f.chords)
        n = len(f.shared)
        for i in f.chords:
            p = [tuple(x) for x in paths[i]]
            assert tuple(p[len(p) - n:] if f.side == "suffix" else p[:n]) == f.shared
        # maximal: the members do not all share one more factor on that side
        longer = [paths[i][::-1] if f.side == "suffix" else paths[i] for i in f.chords]
        assert any(len(p) <= n for p in longer) or len({tuple(p[n]) for p in longer}) > 1
    # no two chords left out share their last factor (every suffix group was taken)
    free = [tuple(paths[i][-1]) for i in range(len(paths)) if paths[i] and i not in seen]
    assert len(free) == len(set(free))


def _plain_residual(m, q):
    """Every chord's path product composed factor by factor (no sharing): the order of
    evaluation before the families."""
    cache = TransformCache(m, q)
    out = []
    for i in range(m.n_chords):
        W = pin.SE3.Identity()
        for k, s in m.paths[i]:
            W = W * (cache.X(k) if s > 0 else cache.X(k).inverse())
        out.append(sp.log6(W * cache.X(m.chord_edges[i]).inverse()))
    return np.concatenate(out) if out else np.zeros(0)


@pytest.mark.parametrize("name, supports", [
    ("stewart", ()), ("go2", ("FL", "FR", "RL", "RR")), ("excavator_tracked", ()),
    ("hard/stewart66", ()), ("cassie", ("left_sole", "right_sole"))])
def test_residual_equals_the_unshared_product(name, supports):
    """Composing the shared branch once only re-associates SE(3) products: the residual
    equals the factor-by-factor one to a few roundings (1e-14: |ρ| ≲ 1 at these
    off-manifold states and each re-associated product moves it by O(ε) per factor). On
    Go2 and Cassie standing, the support chords share the floating root's branch."""
    from rbc.model.modes import extend_configuration, mode_model, reference_q

    base = _model(RECORDS / f"{name}.yaml")
    m = mode_model(base, supports) if supports else base
    q0 = extend_configuration(base, m, reference_q(base)) if supports else reference_q(base)
    assert not supports or m.families  # the standing robots do have families
    rng = np.random.default_rng(3)
    for _ in range(3):
        q = m.integrate(q0, 0.1 * rng.normal(size=m.nv))
        plain = _plain_residual(m, q)
        assert np.abs(residual(m, q)[:6 * m.n_chords] - plain).max() <= 1e-14
        # a subset of chords (the corrector's per-module residual) splitting a family
        sub = sorted(rng.choice(m.n_chords, size=max(1, m.n_chords // 2), replace=False))
        rows = np.concatenate([np.arange(6 * i, 6 * i + 6) for i in sub])
        got = residual(m, q, chords=sub, couplings=[])
        assert np.abs(got - plain[rows]).max() <= 1e-14

"""Member-wise dynamics of a composed system: the skew identity Γ̇ = C + Cᵀ by finite
differences, the projected-tree terms as a second algorithm, the regressor against
Pinocchio's, ΔM updates against recompiling the edited record, and the Boltzmann–Hamel
terms of a free body."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

from rbc.compose.dynamics import (
    BASIS,
    MemberModel,
    composed_terms,
    pinocchio_regressor_efforts,
    projected_terms,
    regressor,
    spatial_inertia,
)
from rbc.model.closure import ClosureState
from rbc.model.dynamics import DynamicsData


@pytest.fixture(scope="module")
def stand(pair):
    comp = pair[1]
    mm = MemberModel.build(comp, "stand")
    md = comp.modes["stand"]
    rng = np.random.default_rng(11)
    q = ClosureState(mm.kin, md.partition, md.partition.q_ref.copy()).step(
        rng.uniform(-1, 1, 27), 0.01)
    return comp, mm, DynamicsData.of(mm.dm), md, q, rng


def test_spatial_inertia_basis():
    I = pin.Inertia.Random()
    assert np.abs(spatial_inertia(I.toDynamicParameters()) - I.matrix()).max() < 1e-15
    assert np.abs(np.einsum("k,kij->ij", I.toDynamicParameters(), BASIS) - I.matrix()).max() < 1e-14


def test_skew_identity_by_finite_differences(stand):
    """Γ̇ = C + Cᵀ along a closed motion: three-level Richardson extrapolation of centred
    differences of Γ (h = 2e-4, 1e-4, 5e-5 s; truncation O(h⁶), closure noise 1e-13/h)."""
    comp, mm, data, md, q, rng = stand
    u = rng.uniform(-1, 1, 27)
    T = composed_terms(mm, data, q, u)

    def gamma(h):
        qq = ClosureState(mm.kin, md.partition, q.copy()).step(u, h)
        return composed_terms(mm, data, qq, u).Gamma

    c = {h: (gamma(h) - gamma(-h)) / (2 * h) for h in (2e-4, 1e-4, 5e-5)}
    d1, d2 = (4 * c[5e-5] - c[1e-4]) / 3, (4 * c[1e-4] - c[2e-4]) / 3
    fd = (16 * d1 - d2) / 15
    S = T.C + T.C.T
    assert np.abs(fd - S).max() <= 1e-8 * np.abs(S).max()  # issue #19: ≤ 1e-8 relative


SOLO = """\
rbc_composition: 1
name: solo
members:
  - {name: h, bundle: humanoid_v3.h5, placement: {xyz: [0, 0, 0.93]}}
modes:
  - {name: stand, supports: [h.sole_l, h.sole_r]}
"""


def _skew_defect(comp, mode: str, seed: int) -> float:
    """max |FD(Γ̇) − (C + Cᵀ)| / max |C + Cᵀ| along a closed motion of the mode (three-level
    Richardson extrapolation of centred differences, h = 2e-4, 1e-4, 5e-5 s)."""
    mm = MemberModel.build(comp, mode)
    md = comp.modes[mode]
    data = DynamicsData.of(mm.dm)
    rng = np.random.default_rng(seed)
    n = md.partition.independent.size
    q = ClosureState(mm.kin, md.partition, md.partition.q_ref.copy()).step(
        rng.uniform(-1, 1, n), 0.01)
    u = rng.uniform(-1, 1, n)

    def gamma(h):
        qq = ClosureState(mm.kin, md.partition, q.copy()).step(u, h)
        return composed_terms(mm, data, qq, u).Gamma

    c = {h: (gamma(h) - gamma(-h)) / (2 * h) for h in (2e-4, 1e-4, 5e-5)}
    d1, d2 = (4 * c[5e-5] - c[1e-4]) / 3, (4 * c[1e-4] - c[2e-4]) / 3
    T = composed_terms(mm, data, q, u)
    S = T.C + T.C.T
    return float(np.abs((16 * d1 - d2) / 15 - S).max() / np.abs(S).max())


def test_skew_identity_single_humanoid(members_dir):
    """One humanoid standing on both soles (its 8 loops and 2 supports)."""
    from tests.compose.conftest import _composed

    (members_dir / "solo.yaml").write_text(SOLO)
    comp = _composed(str(members_dir), "solo")[1]
    assert _skew_defect(comp, "stand", 5) <= 1e-8  # issue #19: ≤ 1e-8 relative


@pytest.mark.slow
def test_skew_identity_ring(ring):
    """The ring of five (210 bodies, 60 speeds)."""
    assert _skew_defect(ring[1], "stand", 6) <= 1e-8  # issue #19: ≤ 1e-8 relative


def test_member_terms_equal_projected_tree_terms(stand):
    comp, mm, data, md, q, rng = stand
    u = rng.uniform(-1, 1, 27)
    T = composed_terms(mm, data, q, u)
    G, h, g = projected_terms(mm, data, T)
    # two algorithms in double precision: round-off relative to the largest entry
    assert np.abs(T.Gamma - G).max() <= 1e-12 * np.abs(G).max()
    assert np.abs(T.C @ u - h).max() <= 1e-12 * max(1.0, np.abs(h).max())
    assert np.abs(T.g - g).max() <= 1e-12 * np.abs(g).max()
    # C acts on any speed: Γ̇ u_r = (C + Cᵀ) u_r, and C(q, u) u_r is linear in u_r
    ur = rng.uniform(-1, 1, 27)
    assert np.abs(T.C @ (2 * ur) - 2 * (T.C @ ur)).max() <= 1e-12 * np.abs(T.C @ ur).max()


def test_regressor(stand):
    """Y π equals the member-wise terms, and Y projected from
    pinocchio.computeJointTorqueRegressor (plus the rotors' armature) equals Y π."""
    comp, mm, data, md, q, rng = stand
    u, ud, ur = (rng.uniform(-1, 1, 27) for _ in range(3))
    T = composed_terms(mm, data, q, u)
    Y = regressor(mm, T, ud, ur)
    want = T.Gamma @ ud + T.C @ ur + T.g
    assert np.abs(Y @ mm.params.vector - want).max() <= 1e-12 * np.abs(want).max()
    a = T.lift.E @ ud + T.edu
    ref = pinocchio_regressor_efforts(mm, data, T, a)
    mine = regressor(mm, T, ud, u) @ mm.params.vector
    assert np.abs(ref - mine).max() <= 1e-12 * np.abs(mine).max()


def test_inertial_update_equals_recompile(stand, members_dir, tmp_path):
    """ΔM: a new mass, COM and inertia of one body by new parameters, against compiling
    the edited member record and composing again."""
    from rbc.compiler import compile_to_file
    from tests.compose.conftest import HUMANOID, _composed

    comp, mm, data, md, q, rng = stand
    new = dict(mass=6.5, com=[0.01, -0.005, -0.2], inertia=[0.09, 0.085, 0.012, 0.001, 0.0, -0.002])
    text = (HUMANOID / "humanoid_v1.yaml").read_text()
    rec = [ln for ln in text.splitlines()]
    i = rec.index("- name: thigh_l")
    assert rec[i + 1].startswith("  mass:") and rec[i + 3].startswith("  inertia:")
    rec[i + 1] = f"  mass: {new['mass']}"
    rec[i + 2] = f"  com: {new['com']}"
    rec[i + 3] = f"  inertia: {new['inertia']}"
    (tmp_path / "humanoid_v1.yaml").write_text("\n".join(rec) + "\n")
    compile_to_file(tmp_path / "humanoid_v1.yaml", tmp_path / "humanoid_v1.h5")
    compile_to_file(HUMANOID / "humanoid_v2.yaml", tmp_path / "humanoid_v2.h5")
    (tmp_path / "pair.yaml").write_text((members_dir / "pair.yaml").read_text())
    _, edited = _composed(str(tmp_path), "pair")
    mm2 = MemberModel.build(edited, "stand")
    u = rng.uniform(-1, 1, 27)
    params = mm.params.with_body("h1/thigh_l", **new)
    T1 = composed_terms(mm, data, q, u, params=params)
    T2 = composed_terms(mm2, DynamicsData.of(mm2.dm), q, u)
    T0 = composed_terms(mm, data, q, u)
    assert np.abs(T1.Gamma - T0.Gamma).max() > 1e-3  # the edit matters
    for a, b in ((T1.Gamma, T2.Gamma), (T1.C @ u, T2.C @ u), (T1.g, T2.g)):
        assert np.abs(a - b).max() <= 1e-12 * np.abs(b).max()


FREE_BODY = """\
rbc: 1
name: brick
bodies:
  - {name: base, fixed: true}
  - {name: brick, floating: true, mass: 2.0, com: [0.03, -0.02, 0.05],
     inertia: [0.02, 0.05, 0.04, 0.003, -0.002, 0.001]}
joints: []
"""


def test_boltzmann_hamel_terms_of_a_free_body(tmp_path):
    """The floating base's speeds are the body twist V (quasi-velocities): C u must be the
    Boltzmann–Hamel / Euler–Newton term −ad(V)ᵀ I V of the body frame (rbc order)."""
    from rbc.compiler import compile_to_file
    from rbc.compose.bundle import load, write_composed
    from rbc.compose.spec import member_path, parse_composition_text
    from rbc.compose.system import compose
    from rbc.ir import spatial as sp
    from rbc.model.compiled import CompiledModel

    (tmp_path / "brick.yaml").write_text(FREE_BODY.replace("  - {name: base, fixed: true}\n", ""))
    compile_to_file(tmp_path / "brick.yaml", tmp_path / "brick.h5")
    spec = parse_composition_text("rbc_composition: 1\nname: one\nmembers:\n"
                                  "  - {name: b, bundle: brick.h5}\n", str(tmp_path / "c.yaml"))
    files = [member_path(spec, m, tmp_path) for m in spec.members]
    comp = compose(spec, [CompiledModel.from_bundle(f) for f in files])
    write_composed(tmp_path / "one.h5", comp, files)
    comp = load(tmp_path / "one.h5")
    mm = MemberModel.build(comp)
    data = DynamicsData.of(mm.dm)
    rng = np.random.default_rng(2)
    q = mm.kin.integrate(comp.modes["free"].partition.q_ref, rng.uniform(-1, 1, 6))
    V = rng.uniform(-2, 2, 6)  # [ω; v] body frame (the free joint's speeds)
    T = composed_terms(mm, data, q, V)
    b = mm.kin.record.bodies[0]
    I = sp.from_pinocchio_operator(pin.Inertia(b.mass, np.array(b.com), np.array(
        [[0.02, 0.003, -0.002], [0.003, 0.05, 0.001], [-0.002, 0.001, 0.04]])).matrix())
    bh = -sp.ad(V).T @ I @ V
    assert np.abs(T.C @ V - bh).max() <= 1e-13 * np.abs(bh).max()
    assert np.abs(T.Gamma - I).max() <= 1e-15

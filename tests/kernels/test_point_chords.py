"""Point chords (a spherical cut joint laid out as its ball centre's three rows,
:mod:`rbc.kernels.layout`): the same lift, curvature and reduced dynamics as the six-row
chords and the reference path, a residual that is the ball centres' offset, a smaller
``R_p``, and Pinocchio's ``constraintDynamics`` (which uses this very formulation) matched
by ``rbc bench dynamics`` on Stewart."""

from __future__ import annotations

import functools

import numpy as np
import pytest

from rbc.kernels.evaluator import KernelModel, KernelStage
from rbc.kernels.layout import S_RANK, LayoutError, point_chords
from rbc.model.augmented import augmented_geometry
from rbc.model.dynamics import DynamicsData, DynamicsModel, lift_at
from rbc.model.kinematics import body_poses
from rbc.model.partition import lift_from_jacobian
from tests.kernels.conftest import ALL, compiled_model
from tests.kernels.test_reference import RTOL, _close, _states

#: Records whose default partition must give point chords (a silent fall-back to six rows
#: would leave the Stewart target unmeasured): name → number of point chords.
EXPECTED = {"stewart": 5, "hard/rssr": 1, "hard/stewart66": 5, "humanoid/humanoid_v1": 4}
#: Shipped records outside the kernel tests' set (tests/kernels/conftest.py) with spherical
#: cut joints laid out as point chords (the humanoid: four ankle balls beside revolute cuts).
EXTRA = ("hard/rssr", "hard/stewart66", "humanoid/humanoid_v1")


@functools.cache
def _extra_model(name: str):
    from rbc.compiler import compile_record
    from tests.conftest import RECORDS

    parted = compile_record(RECORDS / f"{name}.yaml")[1].stages["rank"]
    return parted.model, parted.partitions[0]


def _model(name: str, record_dir):
    return _extra_model(name) if name in EXTRA else compiled_model(name, record_dir)


@pytest.fixture(params=(*ALL, *EXTRA))
def point_record(request, record_dir):
    return (request.param, *_model(request.param, record_dir))


def _kernels(kin, part):
    try:
        km = KernelModel(kin, part)
    except LayoutError:  # tendon ports: the reference evaluator runs those
        pytest.skip("tendon ports")
    if not km.layout.point:
        pytest.skip("no point chord (tests with none are the six-row kernels)")
    return km, KernelModel(kin, part, km.tree, point=False)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_spherical_cuts_become_point_chords(name, record_dir):
    """Stewart: 5 spherical cuts, R_p 15 × 15 instead of 30 × 30."""
    kin, part = _model(name, record_dir)
    km = KernelModel(kin, part)
    n = EXPECTED[name]
    assert len(km.layout.point) == len(point_chords(kin, part)) == n
    assert km.layout.segment("sizes")[S_RANK] == part.rank - 3 * n
    six = KernelModel(kin, part, km.tree, point=False).layout
    assert six.point == () and six.segment("sizes")[S_RANK] == part.rank
    assert km.layout.lu_size < six.lu_size


@pytest.mark.parametrize("name", ["cassie", "kangaroo"])
def test_a_ball_with_a_free_spin_or_a_redundant_row_keeps_six_rows(name, record_dir):
    """Cassie's achilles rods and the Kangaroo's leg rods have a ball at each end: the rod's
    spin about its axis is free. Cassie's partition makes it an independent cut coordinate
    (connect2, connect4) or drops one redundant row (connect1, connect3: 5 of 6 rows); the
    Kangaroo drops one row of each. A point chord needs its cut coordinates dependent and
    all six rows (its three ball rows then have full rank): those chords keep six rows."""
    kin, part = compiled_model(name, record_dir)
    spherical = [i for i, e in enumerate(kin.chord_edges) if kin.kinds[e].type == "spherical"]
    assert len(spherical) == {"cassie": 4, "kangaroo": 2}[name]
    assert point_chords(kin, part) == () and KernelModel(kin, part).layout.point == ()
    rows = set(part.rows.tolist())
    dep = set(part.dependent.tolist())
    for i in spherical:
        vo = int(kin.v_offset[kin.chord_edges[i]])
        assert not (set(range(6 * i, 6 * i + 6)) <= rows and {vo, vo + 1, vo + 2} <= dep)


def test_point_chords_equal_the_six_row_kernels(point_record):
    """E, v, Ė u, M_r, the right-hand side and u̇ with point chords against the six-row
    kernels, on and off the manifold: the same constraint (rows 0–2 of a point chord are
    the six-row chord's rows solved for the cut coordinates, which appear nowhere else), so
    the difference is rounding in two different solves — bounded by κ(R_p) ε as in
    test_reference (the reference's own κ on the six-row R_p)."""
    name, kin, part = point_record
    km, km6 = _kernels(kin, part)
    dm = DynamicsModel.build(kin)
    dd = DynamicsData.of(dm)
    rng = np.random.default_rng(11)
    for where, q in _states(kin, part, rng):
        geo = augmented_geometry(dm.augmented, dd.augmented_data, q)
        tol = max(RTOL, 4.0 * np.finfo(float).eps * lift_from_jacobian(part, geo.C, geo).cond)
        u = rng.normal(size=km.nu)
        f = 10.0 * rng.normal(size=km.n_act)
        kt, k6 = km.terms(q, u, f), km6.terms(q, u, f)
        for what in ("E", "v", "edu", "M", "rhs"):
            assert _close(getattr(kt, what), getattr(k6, what)) <= tol, (name, where, what)
        back = np.abs(k6.M @ kt.udot - k6.rhs).max() / (
            np.abs(k6.M).max() * np.abs(k6.udot).max() + np.abs(k6.rhs).max())
        assert back <= RTOL, (name, where, "u̇ backward")
        # the timed face (the recursion over nodes where the layout chose it)
        ud = km.forward_dynamics(q, u, f)
        back = np.abs(k6.M @ ud - k6.rhs).max() / (
            np.abs(k6.M).max() * np.abs(ud).max() + np.abs(k6.rhs).max())
        assert back <= RTOL, (name, where, "forward backward")


def test_point_chords_in_the_recursion_over_nodes(point_record):
    """The recursion over nodes (forced) with point chords: a cut coordinate rides in its
    path's node; the curvature by node equals the dense one bit for bit, u̇ solves the
    dense system to RTOL backward error."""
    name, kin, part = point_record
    km, _ = _kernels(kin, part)
    kr = KernelModel(kin, part, km.tree, recursion=True)
    rng = np.random.default_rng(12)
    for where, q in _states(kin, part, rng):
        u = rng.normal(size=km.nu)
        f = 10.0 * rng.normal(size=km.n_act)
        kt = km.terms(q, u, f)
        v, edu = kr.curvature(q, u)
        assert np.array_equal(v, kt.v) and np.array_equal(edu, kt.edu), (name, where)
        ud = kr.forward_dynamics(q, u, f)
        back = np.abs(kt.M @ ud - kt.rhs).max() / (
            np.abs(kt.M).max() * np.abs(ud).max() + np.abs(kt.rhs).max())
        assert back <= RTOL, (name, where)


def test_point_residual_and_rows_against_pinocchio_poses(point_record):
    """ρ of a point chord is ``[0; p_c − p_b]``, the two bodies' ball centres from
    Pinocchio's SE(3) products of the tree poses (independent of the kernels' own
    transform records); its rows 3–5 are that residual's derivative on the manifold
    (central differences, h = 1e-6: truncation ~h² |ρ''| ~ 1e-12 m, rounding ~ε/h ~ 1e-10,
    so 1e-8 of the derivative's size); ``C E = 0`` on every row, on and off the manifold."""
    name, kin, part = point_record
    km, _ = _kernels(kin, part)
    rng = np.random.default_rng(13)
    for where, q in _states(kin, part, rng):
        rho, C, E = km.geometry(q)
        T = [*body_poses(kin, q), None]
        for i in km.layout.point:
            e = kin.chord_edges[i]
            b, c = int(kin.parent[e]), int(kin.child[e])
            pc = (T[c] * kin.B[e]).translation if c < kin.n_bodies else kin.B[e].translation
            pb = (T[b] * kin.A[e]).translation if b < kin.n_bodies else kin.A[e].translation
            assert np.array_equal(rho[6 * i: 6 * i + 3], np.zeros(3)), (name, where)
            # a few roundings of positions of O(1 m)
            assert np.abs(rho[6 * i + 3: 6 * i + 6] - (pc - pb)).max() <= 1e-14, (name, where)
        assert np.abs(C @ E).max() <= 1e-13 * max(1.0, np.abs(C).max() * np.abs(E).max()), \
            (name, where, "C E")
        if where != "on":
            continue
        dv = rng.normal(size=kin.nv)
        h = 1e-6
        rp = km.geometry(kin.integrate(q, h * dv))[0]
        rm = km.geometry(kin.integrate(q, -h * dv))[0]
        rows = np.array([6 * i + 3 + k for i in km.layout.point for k in range(3)])
        fd = (rp[rows] - rm[rows]) / (2 * h)
        assert np.abs(fd - C[rows] @ dv).max() <= 1e-8 * max(1.0, np.abs(fd).max()), name


def test_the_stage_keeps_six_rows(record_dir):
    """The reduced backend's stage closes with the bundle's six rows (its residual and
    compact C are the reference closer's): handed a point-chord model, it lays it out
    again without them."""
    kin, part = compiled_model("stewart", record_dir)
    km = KernelModel(kin, part)
    assert km.layout.point
    q = np.array(part.q_ref)
    dm = DynamicsModel.build(kin)
    ref = lift_at(dm, DynamicsData.of(dm), part, q)
    ks = KernelStage(km, q, ref.E, ref.geometry.rho)
    assert ks.km.layout.point == ()


def test_bench_dynamics_stewart_matches_constraint_dynamics(tmp_path):
    """The point-chord kernel's tree accelerations against Pinocchio's constraintDynamics
    on Stewart (issue #16: δ_a ≤ 1e-13, relative to max(1, |a|∞))."""
    from rbc.bench.dynamics import bench_dynamics
    from rbc.compiler import compile_to_file
    from tests.conftest import RECORDS

    h5 = tmp_path / "stewart.h5"
    compile_to_file(RECORDS / "stewart.yaml", h5)
    r = bench_dynamics(h5, n_states=5, single_repeats=1)
    assert r["delta_a"] <= 1e-13


@pytest.mark.parametrize("name", ["hard/stewart66", "humanoid/humanoid_v1"])
def test_point_chord_records_equal_the_reference_path(name):
    """The point-chord kernels against the NumPy/Pinocchio reference path (test_reference's
    checks: the six-row residual and C, E, v, Ė u, M_r, rhs, u̇) on the shipped records with
    point chords outside the kernel tests' set (Stewart and the RSSR are in it)."""
    from tests.kernels.test_reference import _assert_equal_paths

    _assert_equal_paths(name, *_extra_model(name))

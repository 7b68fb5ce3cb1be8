"""The faster evaluations of the composed terms (issue #20 item 4 speed) equal the direct
formulas they replace: the body Jacobians accumulated down the tree against the masked
world Jacobians of every body, the member sums as single products against the per-body
einsum, and the minimum-norm reactions by LAPACK gelsy against the truncated-SVD
pseudo-inverse — on the pair of humanoids at a moving state and on seeded rank-deficient
matrices."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

from rbc.compose.dynamics import (
    _cross_force,
    _gravity,
    body_kinematics,
    composed_terms,
    member_model,
    spatial_inertia,
)
from rbc.compose.lift import composer_lift
from rbc.compose.wrenches import (
    RANK_RTOL,
    chord_reduced_solve,
    min_norm_solve,
    support_wrench_map,
)
from rbc.model.dynamics import DynamicsData
from rbc.model.reactions import constraint_map

#: Two evaluations of the same sums in another order: round-off of a few hundred terms of
#: size ≤ max|·| (1e-16 each), so 1e-12 relative leaves a wide margin.
SAME = 1e-12


def _rel(a, b) -> float:
    return float(np.abs(a - b).max() / max(1.0, np.abs(b).max()))


@pytest.fixture(scope="module")
def moving(pair):
    comp = pair[1]
    mm = member_model(comp, "stand")
    data = DynamicsData.of(mm.dm)
    part = comp.modes["stand"].partition
    u = np.random.default_rng(11).uniform(-0.5, 0.5, part.independent.size)
    q = part.q_ref
    return mm, data, q, u


def test_body_kinematics_equal_the_masked_jacobians(moving):
    mm, data, q, u = moving
    t, k = mm.dm.tree, mm.kin
    L = composer_lift(mm.structure, mm.dm, data, q)
    v, _ = L.curvature(u)
    bk = body_kinematics(mm, data, L, v)
    pd = data.pin_data  # computeJointJacobians(TimeVariation) ran at (q, v) inside
    nt = k.nv_tree
    ET, EdT = L.E[:nt][t.v_perm], bk.Edot[:nt][t.v_perm]
    Jw = np.asarray(pd.J)[None] * mm.mask[:, None, :]
    dJw = np.asarray(pd.dJ)[None] * mm.mask[:, None, :]
    assert _rel(bk.J, Jw @ ET) <= SAME
    assert _rel(bk.Jdot, dJw @ ET + Jw @ EdT) <= SAME
    assert _rel(bk.V, Jw @ t.v_pin(v[:nt])) <= SAME
    # and each body's Jacobian is Pinocchio's own frame-independent joint Jacobian
    for b in (0, len(mm.joint) // 2, len(mm.joint) - 1):
        Jj = pin.getJointJacobian(t.model, pd, int(mm.joint[b]), pin.ReferenceFrame.WORLD)
        assert _rel(bk.J[b], Jj @ ET) <= SAME


def test_member_sums_equal_the_per_body_einsum(moving):
    mm, data, q, u = moving
    T = composed_terms(mm, data, q, u)
    bk = T.kin
    Iw = bk.Xf @ spatial_inertia(mm.params.pi) @ bk.Xm
    IJ = Iw @ bk.J
    G = np.einsum("bin,bim->nm", bk.J, IJ)
    C = np.einsum("bin,bim->nm", bk.J, Iw @ bk.Jdot + _cross_force(bk.V) @ IJ)
    g = -np.einsum("bin,bi->n", bk.J, Iw @ _gravity(mm))
    E = T.lift.E
    Jr, Jrd = E[mm.rotor_col], bk.Edot[mm.rotor_col]
    G = G + Jr.T @ (mm.params.alpha[:, None] * Jr)
    C = C + Jr.T @ (mm.params.alpha[:, None] * Jrd)
    assert _rel(T.Gamma, 0.5 * (G + G.T)) <= SAME
    assert _rel(T.C, C) <= SAME and _rel(T.g, g) <= SAME


def test_rate_product_equals_the_masked_formula(moving):
    """Ċ(v) Z from each chord's path columns only equals the masked product over all
    columns, ``P₁ (J̇ ∘ (mask_tb − mask_cb)) Z`` (the same non-zero terms: SAME)."""
    from rbc.compose.lift import rate_product

    mm, data, q, u = moving
    L = composer_lift(mm.structure, mm.dm, data, q)
    v, _ = L.curvature(u)
    Z = L.E @ np.random.default_rng(2).standard_normal((u.size, 4))
    got = rate_product(mm.dm, data, L.geometry, v, Z)
    aug, pd = mm.dm.augmented, data.augmented_data  # J̇ at (q, v): rate_product's pass
    n = len(aug.tree_frame)
    diff = np.asarray(pd.dJ) * (aug.mask_tb - aug.mask_cb)
    want = (L.geometry.left @ (diff @ Z[aug.v_perm])).reshape(6 * n, -1)
    assert _rel(got[: 6 * n], want) <= SAME
    assert not np.any(got[6 * n:])


def test_body_transforms_equal_pinocchio(moving):
    """The batched body transforms equal Pinocchio's ``toDualActionMatrix`` and
    ``inverse().toActionMatrix()`` of ``oMi[joint] · placement`` body by body (the same
    products of 3 × 3 blocks: SAME)."""
    mm, data, q, u = moving
    L = composer_lift(mm.structure, mm.dm, data, q)
    v, _ = L.curvature(u)
    bk = body_kinematics(mm, data, L, v)
    pd = data.pin_data
    T = [pd.oMi[int(j)] * P for j, P in zip(mm.joint, mm.placement, strict=True)]
    Xf = [x.toDualActionMatrix() for x in T]
    Xm = [x.inverse().toActionMatrix() for x in T]
    assert _rel(bk.Xf, np.array(Xf)) <= SAME
    assert _rel(bk.Xm, np.array(Xm)) <= SAME


def _svd_pinv(At: np.ndarray) -> np.ndarray:
    U, s, Vt = np.linalg.svd(At, full_matrices=False)
    r = int(np.sum(s > RANK_RTOL * s[0]))
    return (Vt[:r].T / s[:r]) @ U[:, :r].T


@pytest.mark.parametrize("seed", range(4))
def test_min_norm_solve_equals_the_truncated_svd(seed):
    rng = np.random.default_rng(seed)
    m, n, r = 40, 36, 25
    A = rng.normal(size=(m, r)) @ rng.normal(size=(r, n))  # rank 25
    B = A @ rng.normal(size=(n, 3)) + 1e-3 * rng.normal(size=(m, 3))  # not consistent
    assert _rel(min_norm_solve(A, B), _svd_pinv(A) @ B) <= 1e-10  # cond(A) ~ 1e2


def _chord_map(rng, chords: int, deficient: dict[int, int], extra: int, m: int
               ) -> np.ndarray:
    """A sparse closure-like map (m, 6 chords + extra): each chord block touches a random
    quarter of the rows, the ``deficient`` ones of rank 6 − d by construction."""
    cols = []
    for e in range(chords):
        rows = rng.choice(m, size=m // 4, replace=False)
        blk = np.zeros((m, 6))
        d = deficient.get(e, 0)
        blk[rows] = rng.standard_normal((rows.size, 6 - d)) @ np.linalg.qr(
            rng.standard_normal((6, 6)))[0][: 6 - d]
        cols.append(blk)
    cols.append(rng.standard_normal((m, extra)) * (rng.random((m, extra)) < 0.3))
    return np.hstack(cols)


@pytest.mark.parametrize("seed", range(4))
def test_chord_reduced_solve_equals_the_pseudo_inverse(seed):
    """Chord blocks with their own null directions (planted: a planar loop's self-stress)
    and otherwise independent columns: the sparse solve with those directions removed is
    the pseudo-inverse solution, for a consistent and an inconsistent right-hand side
    (cond of the reduced map ~1e2: 1e-10)."""
    rng = np.random.default_rng(seed)
    m, chords = 90, 8
    At = _chord_map(rng, chords, {1: 3, 4: 2, 6: 3}, 4, m)
    rank = At.shape[1] - 8
    assert np.linalg.matrix_rank(At) == rank  # (the planted directions are all of it)
    for B in (At @ rng.standard_normal((At.shape[1], 5)), rng.standard_normal((m, 5))):
        X = chord_reduced_solve(At, B, chords, rank)
        assert X is not None
        assert _rel(X, _svd_pinv(At) @ B) <= 1e-10
        assert _rel(min_norm_solve(At, B, chords, rank), X) == 0.0  # the fast path ran


def test_chord_reduced_solve_declines(seed=3):
    """Where the chords' own null spaces are not the whole null space (two chords sharing a
    column direction), or a block is within the undecided band of a rank change, the fast
    path declines and min_norm_solve takes gelsy."""
    rng = np.random.default_rng(seed)
    m, chords = 60, 6
    At = _chord_map(rng, chords, {2: 3}, 0, m)
    At[:, 6 * 4] = At[:, 6 * 5]  # a dependency across two chords
    rank = int(np.linalg.matrix_rank(At))
    assert chord_reduced_solve(At, At[:, :3], chords, rank) is None
    B = rng.standard_normal((m, 3))
    assert _rel(min_norm_solve(At, B, chords, rank), _svd_pinv(At) @ B) <= 1e-10
    At = _chord_map(rng, chords, {}, 0, m)
    u, s, vt = np.linalg.svd(At[:, :6], full_matrices=False)
    At[:, :6] = (u * np.r_[s[:5], 1e-9 * s[0]]) @ vt  # nearly rank 5
    assert chord_reduced_solve(At, B, chords, 36) is None


def test_support_wrench_map_equals_the_svd_formula(moving):
    mm, data, q, u = moving
    T = composed_terms(mm, data, q, u)
    smap = support_wrench_map(mm, data, T)
    At = constraint_map(mm.dm, data, q)
    X = _svd_pinv(At)
    k = mm.kin
    # the pair's map takes the sparse path (its planar loops' self-stresses are the
    # chords' own null directions)
    assert chord_reduced_solve(At, At[:, :2], k.n_chords, k.nv - T.lift.E.shape[1]) is not None
    rng = np.random.default_rng(5)
    for f in (np.zeros(T.L.shape[0]), rng.uniform(-20, 20, T.L.shape[0])):
        # the map's wrenches against the SVD solve of the same right-hand side (chord_wrenches
        # with the induced accelerations is the documented definition)
        from rbc.compose.dynamics import forward_dynamics
        from rbc.compose.wrenches import _about, _points, _rhs

        ud = forward_dynamics(T, u, f)
        need = _rhs(mm, data, T, ud, f)
        k = mm.kin
        n0 = k.n_chords - len(k.supports)
        W = (X @ need)[6 * n0:].reshape(-1, 6)
        W = _about(W, _points(mm, data, q)[n0:])
        assert _rel(smap(f), W) <= 1e-11
    # the support frames' orientations from the map's frame pass: the support poses
    # through rbc's own tree (one pose product each way: SAME)
    from rbc.model.modes import support_poses

    want = [T.rotation for T in support_poses(mm.kin, q, smap.supports)]
    assert _rel(smap.rotation, np.array(want)) <= SAME


@pytest.fixture(scope="module")
def realistic(pair):
    """The pair's realistic MuJoCo plant moved 30 ms under seeded random efforts (off the
    floor here: it drops, which is a moving state as good as any)."""
    from rbc.compose.plant import ComposedMujoco, Realism

    comp = pair[1]
    md = comp.mode("stand")
    k = comp.model(md)
    plant = ComposedMujoco(k, md.partition, md.partition.q_ref, np.zeros(k.nv), 1e-3,
                           composed=(comp, md), realism=Realism(seed=7))
    lim = np.array([a.effort_limits for a in k.record.actuators], dtype=float)
    f = np.random.default_rng(5).uniform(0.2 * lim[:, 0], 0.2 * lim[:, 1])
    for _ in range(15):
        plant.advance(f, 2)
        plant.measure()
    return plant


def test_closed_form_readback_equals_the_newton_readback(realistic):
    """MuJoCo's qpos/qvel read back joint by joint in closed form (TreeReadback) equal
    Newton on qpos_of and the whole velocity map's sparse solve, from the same last
    readback. Newton stops at a qpos residual of READBACK_TOL = 1e-12 (and converges
    quadratically, so it is usually far closer): 1e-12."""
    inner = realistic.inner
    k = inner.plant
    assert inner.readback.exact
    last = inner._q_last.copy()
    qa, va = inner.tree_state()
    inner._q_last = last
    qb, vb = inner.tree_state_newton()
    tree = np.concatenate([np.arange(k.nq)[k.q_slice(e)] for e in k.tree_edges])
    assert _rel(qa[tree], qb[tree]) <= 1e-12
    assert _rel(va, vb) <= 1e-12
    assert np.array_equal(np.delete(qa, tree), np.delete(qb, tree))  # cuts: the last's


def test_kernel_measurement_equals_the_reference_path(realistic):
    """The measurement through the run-time kernels (pose pass for the charts, the noise's
    integration, the lift) equals the reference path (body_poses, CompiledModel.integrate,
    the SuperLU lift) at the same engine state with the same noise draws: the same algebra
    in another order (the kernels are held to 1e-13 of Pinocchio), so SAME."""
    plant = realistic
    assert plant.kernel is not None
    last, kernel = plant._q.copy(), plant.kernel
    runs = []
    for km in (kernel, None):
        plant._q, plant.kernel = last.copy(), km
        plant.rng = np.random.default_rng(99)
        runs.append(plant.state())
    plant.kernel = kernel
    (qa, va), (qb, vb) = runs
    assert _rel(qa, qb) <= SAME
    assert _rel(va, vb) <= SAME
    k = plant.mode
    np.testing.assert_allclose(kernel.integrate(qb, va), k.integrate(qb, va), rtol=0,
                               atol=1e-14)
    from rbc.model.kinematics import body_poses

    P = kernel.body_poses(qb)
    ref = body_poses(k, qb)
    assert np.array_equal(P[-1], np.eye(3, 4))  # the world last
    np.testing.assert_allclose(P[:-1, :, :3], [T.rotation for T in ref], rtol=0, atol=1e-14)
    np.testing.assert_allclose(P[:-1, :, 3], [T.translation for T in ref], rtol=0, atol=1e-14)

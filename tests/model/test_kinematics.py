"""Closure residuals, the analytic Jacobian, its velocity product, acquisition and the lift,
each checked against finite differences or an identity that does not use the code under test."""

from __future__ import annotations

import numpy as np
import pytest

from rbc.ir import spatial as sp
from rbc.model import kinematics as kin
from rbc.model.closure import CLOSURE_TOL, ClosureState
from rbc.model.partition import curvature, lift
from rbc.model.solve import acquire
from tests.model.conftest import compiled

SEED = 20260927


def fd_jacobian(model, q, h=1e-6):
    """Centered differences of the residual through q ⊕ ±h e_j (step 1e-6: truncation
    O(h²) ≈ 1e-12 and round-off O(ε/h) ≈ 1e-10 balance near there)."""
    C = np.zeros((model.n_rows, model.nv))
    for j in range(model.nv):
        e = np.zeros(model.nv)
        e[j] = h
        C[:, j] = (kin.residual(model, model.integrate(q, e))
                   - kin.residual(model, model.integrate(q, -e))) / (2 * h)
    return C


def off_manifold(model, part, rng, scale=0.1):
    return model.integrate(part.q_ref, scale * rng.normal(size=model.nv))


def test_jacobian_matches_finite_differences_off_the_manifold(shipped):
    name, model, part = shipped
    rng = np.random.default_rng(SEED)
    for _ in range(2):
        q = off_manifold(model, part, rng)
        rho, C, _ = kin.closure_jacobian(model, q)
        Cfd = fd_jacobian(model, q)
        # 1e-7 relative: the FD error bound above (≈1e-10) with three decades of margin
        assert np.abs(C - Cfd).max() <= 1e-7 * max(1.0, np.abs(C).max()), name
        assert np.abs(rho).max() > 1e-4  # really off the manifold, where J_l⁻¹ ≠ I
        # nonzeros only inside the pattern generated from the paths (1e-9: FD noise)
        assert np.abs(Cfd[~kin.sparsity_pattern(model)]).max(initial=0.0) <= 1e-9


def test_left_jacobian_inverse_is_needed_off_the_manifold():
    """Dropping J_l⁻¹ (replacing it by I) is visibly wrong away from closure."""
    model, part = compiled("stewart")
    q = off_manifold(model, part, np.random.default_rng(SEED), scale=0.2)
    _, C, _ = kin.closure_jacobian(model, q)
    Cfd = fd_jacobian(model, q)
    cache = kin.TransformCache(model, q)
    wrong = np.zeros_like(C)
    for i in range(model.n_chords):
        rho, (cols, J), _ = kin.chord_terms(model, i, cache)
        np.add.at(wrong[6 * i: 6 * i + 6], (slice(None), cols),
                  np.linalg.solve(sp.jl_inv(rho), J))
    err_right = np.abs(C - Cfd).max()
    err_wrong = np.abs(wrong - Cfd).max()
    assert err_wrong > 1e3 * err_right


def test_velocity_product_matches_directional_difference(shipped):
    """Ċ v against (C(q ⊕ h v) − C(q ⊕ −h v)) v / 2h on the manifold."""
    name, model, part = shipped
    rng = np.random.default_rng(SEED)
    u = rng.normal(size=part.independent.size)
    v = lift(model, part, part.q_ref).E @ u
    _, _, cv = kin.closure_jacobian(model, part.q_ref, v)
    h = 1e-5  # centered: truncation O(h²|v|³) ≈ 1e-10 relative, round-off ≈ ε/h ≈ 1e-11
    _, Cp, _ = kin.closure_jacobian(model, model.integrate(part.q_ref, h * v))
    _, Cm, _ = kin.closure_jacobian(model, model.integrate(part.q_ref, -h * v))
    fd = (Cp - Cm) @ v / (2 * h)
    assert np.abs(cv - fd).max() <= 1e-7 * max(1.0, np.abs(cv).max()), name


def test_lift_and_curvature_annihilate_the_constraint(shipped):
    """C E = 0 and C (E u̇ + Ė u) + Ċ v = 0: velocity and acceleration closure."""
    name, model, part = shipped
    rng = np.random.default_rng(SEED)
    L = lift(model, part, part.q_ref)
    u, du = rng.normal(size=(2, part.independent.size))
    v, edu = curvature(model, part, part.q_ref, u, L)
    _, _, cv = kin.closure_jacobian(model, part.q_ref, v)
    scale = max(1.0, np.abs(L.C).max() * np.abs(L.E).max())
    # round-off of an LU solve with cond(R_p) ≲ 1e3 on O(1) entries
    assert np.abs(L.C @ L.E).max() <= 1e-12 * scale
    a = L.E @ du + edu
    assert np.abs(L.C @ a + cv).max() <= 1e-11 * scale * max(1.0, np.abs(cv).max())
    assert np.allclose(L.E[part.independent], np.eye(part.independent.size))


@pytest.mark.parametrize("name,speeds", [("fourbar", 1), ("slider_crank", 1), ("fivebar", 2),
                                         ("stewart", 6), ("excavator", 4)])
def test_independent_speeds(name, speeds):
    model, part = compiled(name)
    assert part.independent.size == speeds == model.nv - part.rank
    # the actuated joints are the independent ones on every shipped record
    assert set(part.joints) == model.record.actuated_joints()


def test_stewart_partition():
    model, part = compiled("stewart")
    assert part.rank == 30 and part.joints == tuple(f"P{i}" for i in range(1, 7))


def test_acquisition_from_perturbed_guesses(shipped):
    name, model, part = shipped
    rng = np.random.default_rng(SEED)
    held = model.v_names
    q0 = model.initial_configuration()
    kick = 0.05 * rng.normal(size=model.nv)
    kick[part.independent] = 0.0  # independent coordinates are held by acquisition
    q, stats = acquire(model, model.integrate(q0, kick))
    assert np.abs(kin.residual(model, q)).max() <= CLOSURE_TOL, (name, held)
    assert stats.continuation_steps >= 1


def test_motion_steps_stay_closed_and_skip_untouched_modules():
    model, part = compiled("excavator")
    state = ClosureState(model, part, part.q_ref.copy())
    u = np.zeros(part.independent.size)
    boom = list(part.independent).index(model.v_slice(model.edge("boom_cyl")).start)
    u[boom] = 0.05  # m/s on the boom cylinder only
    before = state.q.copy()
    for _ in range(20):
        state.step(u, 0.01)
    assert np.abs(kin.residual(model, state.q)).max() <= CLOSURE_TOL
    moved = np.abs(model.difference(before, state.q)) > 0
    for name in ("arm_cyl_rod_pin", "bucket_cyl_rod_pin", "link2_bucket_pin", "link1_pin"):
        sl = model.v_slice(model.edge(name))
        assert not moved[sl].any(), f"{name} belongs to a module whose inputs did not move"
    assert moved[model.v_slice(model.edge("boom_foot"))].all()


def test_frame_jacobian_matches_pose_differences():
    model, part = compiled("excavator")
    body = model.record.body_index()["bucket"]
    frame = sp.se3_from_pose(model.record.tasks[0].pose)
    rng = np.random.default_rng(SEED)
    q = part.q_ref
    v = rng.normal(size=model.nv)
    T, J = kin.frame_jacobian(model, q, body, frame)
    h = 1e-6
    Tp = kin.body_poses(model, model.integrate(q, h * v))[body] * frame
    Tm = kin.body_poses(model, model.integrate(q, -h * v))[body] * frame
    dp = (Tp.translation - Tm.translation) / (2 * h)
    dw = sp.log3(Tp.rotation @ Tm.rotation.T) / (2 * h)
    assert np.allclose(J @ v, np.concatenate([dw, dp]), atol=1e-7)  # FD error ~h²
    assert np.allclose(T.homogeneous, (kin.body_poses(model, q)[body] * frame).homogeneous)


def test_nearly_singular_partition_triggers_a_logged_reconfiguration():
    """Above ``singular_cond`` the step re-partitions, re-expresses u, and stays closed."""
    from rbc.model.partition import partition_at

    model, part = compiled("slider_crank")
    slider = partition_at(model, part.q_ref, name="slider", independent_joints=["P"])
    state = ClosureState(model, slider, slider.q_ref.copy(), singular_cond=0.5)
    u = np.array([0.1])  # m/s on the slider
    v_expected = lift(model, slider, slider.q_ref).E @ u
    state.step(u, 1e-3)
    assert state.events and state.events[0].startswith("computational reconfiguration")
    assert state.partition.rank == slider.rank
    # the requested motion is kept: the new u is the old motion's independent speeds
    assert np.allclose(state.u, v_expected[state.partition.independent])
    assert np.abs(kin.residual(model, state.q)).max() <= CLOSURE_TOL


def test_long_motions_do_not_exhaust_a_global_iteration_budget():
    """Newton's cap is per call: a state that has run many steps keeps stepping."""
    model, part = compiled("fourbar")
    state = ClosureState(model, part, part.q_ref.copy())
    u = np.array([0.5])
    for _ in range(400):  # ~2 iterations per step: far past any 300-iteration total
        state.step(u, 1e-3)
    assert state.stats.iterations > 300
    assert np.abs(kin.residual(model, state.q)).max() <= CLOSURE_TOL


def test_pivoted_qr_matches_scipy():
    """Our NumPy pivoted QR gives scipy's column order and |diag R| (rank decisions)."""
    import scipy.linalg as sla

    from rbc.model.partition import pivoted_qr

    rng = np.random.default_rng(SEED)
    for shape in [(6, 4), (4, 9), (30, 36), (12, 12)]:
        A = rng.normal(size=shape) @ np.diag(np.logspace(0, -6, shape[1]))
        _, R, piv_ref = sla.qr(A, mode="economic", pivoting=True)
        piv, diag = pivoted_qr(A)
        assert list(piv[: len(diag)]) == list(piv_ref[: len(diag)])
        # same algorithm, different rounding: agreement to ~1e-12 relative to |R_00|
        assert np.allclose(diag, np.abs(np.diag(R)), rtol=1e-10, atol=1e-12 * diag[0])

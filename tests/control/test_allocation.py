"""The allocation QP (issue #20 item 2) on a humanoid standing on both soles: the DAQP
solution certified by the KKT conditions of its own active set (a dense solve) and matched
by an independent solver (scipy SLSQP), in both phases and with η > 0; the cones satisfied
and binding where they must; the recovered sole wrenches equal to the maximal-coordinate
Newton–Euler reactions at the allocated efforts; the net centre of pressure under the centre
of mass when standing still; the cone rows against their definition in rotated frames; the
unloading ramps."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pinocchio as pin
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import minimize

from rbc.compose.dynamics import MemberModel, composed_terms, forward_dynamics
from rbc.control.allocation import (
    AllocationError,
    AllocationWeights,
    allocate,
    allocation_problem,
)
from rbc.control.cones import ContactLimits, UnloadingRamp, wrench_cone
from rbc.control.tracking import IndependentCoordinates, commanded_force, tracking_state
from rbc.ir import spatial as sp
from rbc.ir.record import Support
from rbc.model.closure import ClosureState
from rbc.model.dynamics import DynamicsData
from rbc.model.modes import support_poses
from rbc.verify.newton_euler import NewtonEuler


@pytest.fixture(scope="module")
def stand(solo):
    mm = MemberModel.build(solo, "stand")
    md = solo.modes["stand"]
    return mm, DynamicsData.of(mm.dm), md, IndependentCoordinates.of(mm.kin, md.partition)


def _problem(stand, amp: float, seed: int, **kw):
    """The QP at a closed state ``amp`` away from the reference (speeds 10 amp), tracking
    the reference configuration at rest."""
    mm, data, md, coords = stand
    part = md.partition
    rng = np.random.default_rng(seed)
    n = coords.n_u
    q = ClosureState(mm.kin, part, part.q_ref.copy()).step(rng.uniform(-1, 1, n), amp)
    u = rng.uniform(-1, 1, n) * 10 * amp
    T = composed_terms(mm, data, q, u)
    ref = composed_terms(mm, data, part.q_ref, np.zeros(n))
    ts = tracking_state(coords, q, T.v, part.q_ref, ref.v, ref.edu)
    return allocation_problem(mm, data, T, commanded_force(T, ts), **kw), T, q


def _kkt_certificate(qp, x, working, tol=1e-9):
    """An optimality certificate of x for the convex QP ``min ½xᵀHx + cᵀx, lo ≤ Ax ≤ up``:
    every row feasible, the working set (rows whose DAQP multiplier is nonzero, plus the
    equalities) held, and multipliers μ found here by least squares on the working rows
    that make the gradient vanish, ``Hx + c + Aᵀμ = 0``, with the right signs (μ ≥ 0 where
    the upper bound is held, μ ≤ 0 where the lower one is). In Jacobi-scaled variables (the
    slack block of H is ρ = 1e6 times the efforts'). Returns the working rows."""
    H, c, A, lo, up, _ = qp
    sc = 1.0 / np.sqrt(np.diag(H))
    H, c, A, x = sc[:, None] * H * sc[None, :], sc * c, A * sc[None, :], x / sc
    y = A @ x
    assert np.all(y <= up + tol) and np.all(y >= lo - tol)
    act = np.flatnonzero((np.asarray(working) != 0) | (lo == up))
    at_up = np.abs(y[act] - up[act]) <= np.abs(y[act] - lo[act])
    Aa = A[act]
    b = np.where(at_up, up[act], lo[act])
    assert np.abs(Aa @ x - b).max() <= tol  # the working rows are held
    grad = H @ x + c
    mu = np.linalg.lstsq(Aa.T, -grad, rcond=None)[0]
    # dual residual: round-off of the gradient's terms (|Hx|, |c|, |Aᵀμ|)
    size = max(1.0, np.abs(H @ x).max(), np.abs(c).max(), np.abs(Aa.T @ mu).max())
    assert np.abs(grad + Aa.T @ mu).max() <= 1e-9 * size
    mscale = max(1.0, np.abs(mu).max())
    eq = lo[act] == up[act]
    assert np.all(mu[at_up & ~eq] >= -1e-9 * mscale)
    assert np.all(mu[~at_up & ~eq] <= 1e-9 * mscale)
    return act


def _independent_objective(qp):
    """The same QP by scipy's trust-constr (an interior-point method: independent of DAQP's
    active sets) in Jacobi-scaled variables; returns the objective and x."""
    from scipy.optimize import LinearConstraint

    H, c, A, lo, up, _ = qp
    sc = 1.0 / np.sqrt(np.diag(H))
    H, c, A = sc[:, None] * H * sc[None, :], sc * c, A * sc[None, :]
    r = minimize(lambda y: 0.5 * y @ H @ y + c @ y, np.zeros(c.size), jac=lambda y: H @ y + c,
                 hess=lambda y: H, constraints=[LinearConstraint(A, lo, up)],
                 method="trust-constr", options={"maxiter": 5000, "gtol": 1e-12,
                                                 "xtol": 1e-14})
    assert r.status in (1, 2), r.message
    x = r.x * sc
    return 0.5 * x @ qp[0] @ x + qp[1] @ x, x


def _objective(qp, x):
    H, c = qp[0], qp[1]
    return 0.5 * x @ H @ x + c @ x


def test_standing_still_net_cop_is_under_the_com(stand):
    """At rest on the reference Q = g: no slack, every cone satisfied, the soles carry the
    weight and their net centre of pressure is the centre of mass's ground projection."""
    mm, data, md, coords = stand
    P, T, q = _problem(stand, 0.0, 0)
    A = allocate(P)
    assert A.phase == "reachable" and A.slack == 0.0
    assert A.cone_violation <= 1e-9
    assert np.abs(P.L.T @ A.f - P.rhs).max() <= 1e-9 * np.abs(P.rhs).max()
    t = mm.dm.tree
    com = pin.centerOfMass(t.model, t.model.createData(), t.q_pin(q[: mm.kin.nq_tree]))
    mass = sum(b.mass for b in mm.kin.record.bodies if b.kind != "fixed")
    poses = support_poses(mm.kin, q, md.supports)
    fz = sum(w[5] for w in A.wrenches)
    assert abs(fz - mass * 9.81) <= 1e-9 * mass * 9.81
    # per sole the CoP in the world, then the force-weighted net CoP
    cop = []
    for w, Ts in zip(A.wrenches, poses, strict=True):
        ws = np.concatenate([Ts.rotation.T @ w[:3], Ts.rotation.T @ w[3:]])
        cop.append(Ts.act(np.array([-ws[1] / ws[5], ws[0] / ws[5], 0.0])))
    net = sum(w[5] * p for w, p in zip(A.wrenches, cop, strict=True)) / fz
    assert np.abs(net[:2] - com[:2]).max() <= 1e-9  # m: statics, round-off


@pytest.mark.parametrize("eta", [0.0, 2e-4])
def test_reachable_phase_is_optimal(stand, eta):
    P, T, q = _problem(stand, 0.001, 1, weights=AllocationWeights(eta=eta))
    A = allocate(P)
    assert A.phase == "reachable" and A.slack == 0.0
    qp = P.dense(slack=False)
    _kkt_certificate(qp, A.x, A.lam)
    J, x = _independent_objective(qp)
    # interior point to gtol 1e-12: objectives to 1e-9 relative, efforts to 1e-5 of bounds
    assert abs(_objective(qp, A.x) - J) <= 1e-9 * max(1.0, abs(J))
    assert np.abs(A.x - x).max() <= 1e-5
    assert A.cone_violation <= 1e-9


@pytest.mark.parametrize("eta", [0.0, 2e-4])
def test_slack_phase_is_optimal_and_the_cones_bind(stand, eta):
    """An unreachable Q (5 mm, 50 mm/s off the reference with Λ = 15, k_s = 45): the ports
    fall short, the slack is reported, the weighted QP's KKT conditions hold and cone rows
    are active."""
    P, T, q = _problem(stand, 0.005, 1, weights=AllocationWeights(eta=eta))
    A = allocate(P)
    assert A.phase == "slack" and A.slack > 1.0
    qp = P.dense(slack=True)
    act = _kkt_certificate(qp, A.x, A.lam)
    n, m = P.L.shape
    assert any(i >= n + m for i in act)  # a cone row is active
    assert any(" cop " in a or " friction " in a or " normal" in a for a in A.active)
    J, x = _independent_objective(qp)
    # interior point to gtol 1e-12 (the objective is dominated by ½ρ‖z‖²): 1e-9 relative;
    # the efforts are fixed only through ½‖f̃‖² against ρ‖z‖² (reduced Hessian condition
    # ≈ ρ‖LᵀD‖² ≈ 1e14): both solvers agree to a few 1e-5 of the bounds, and the slacks
    # (z = Q − τ − Lᵀf) to a few 1e-9 of the largest: the interior point's slack moves
    # by 2e-8 N·m (1.8e-8 → 4.0e-8 from DAQP's) when the wrench maps change by 1e-14
    # relative (gelsy → the chords' sparse solve), DAQP's by 4e-13
    assert abs(_objective(qp, A.x) - J) <= 1e-9 * max(1.0, abs(J))
    assert np.abs(A.z - x[n:]).max() <= 3e-9 * max(1.0, A.slack)
    assert np.abs(A.x[:n] - x[:n]).max() <= 2e-4
    assert A.cone_violation <= 1e-8
    assert np.abs(P.L.T @ A.f + A.z - P.rhs).max() <= 1e-9 * np.abs(P.rhs).max()
    # the same Q without cones needs no slack: it is the cones that bind
    free = replace(P, cones=(), lam0=P.lam0[:0], Lam=P.Lam[:0])
    assert allocate(free).slack == 0.0


def test_rho_trades_slack_as_one_over_rho(stand):
    """At an unreachable Q the weighted slack converges as ρ grows (O(1/ρ))."""
    P, T, q = _problem(stand, 0.005, 1)
    z = {rho: allocate(replace(P, weights=AllocationWeights(rho=rho))).slack
         for rho in (1e2, 1e4, 1e6)}
    assert abs(z[1e4] - z[1e6]) < abs(z[1e2] - z[1e4]) * 0.05


def test_recovered_sole_wrenches_equal_newton_euler(stand):
    """The cone's λ_b(f) at the allocated efforts are the reactions of the motion they
    induce: against the maximal-coordinate Newton–Euler model (which keeps Coulomb
    friction, so the nominal model keeps it too here) at the same state and efforts."""
    mm, data, md, coords = stand
    P, T, q = _problem(stand, 0.001, 2, coulomb=True)
    A = allocate(P)
    ne = NewtonEuler.build(mm.dm).reactions(q, T.v, A.f)
    ref = np.array([ne[s + ".support"] for s in md.supports])
    # Newton–Euler is itself double precision (maximal coordinates): 1e-9 (docs)
    assert np.abs(A.wrenches - ref).max() <= 1e-9 * max(1.0, np.abs(ref).max())
    # and they produce the commanded acceleration: Γ u̇ + C u + g + D u − τ − τ_c = Lᵀ f
    assert A.phase == "reachable"
    u = T.v[md.partition.independent]
    lhs = T.Gamma @ forward_dynamics(T, u, A.f) + T.bias(u)
    assert np.abs(lhs - P.rhs).max() <= 1e-9 * np.abs(P.rhs).max()


def test_unloading_sole(stand):
    """A sole being unloaded (σ = 0.3: normal cap 0.3 of the weight, narrower cones) carries
    no more than its cap; at σ = 0 its wrench vanishes."""
    mm, data, md, coords = stand
    right = md.supports[1]
    mass = sum(b.mass for b in mm.kin.record.bodies if b.kind != "fixed")
    P, T, q = _problem(stand, 0.0, 0, loads={right: 0.3})
    A = allocate(P)
    assert A.cone_violation <= 1e-9
    assert A.wrenches[1][5] <= 0.3 * mass * 9.81 * (1 + 1e-9)
    assert f"{right} normal" in A.active  # the cap binds (the static split is 50/50)
    _kkt_certificate(P.dense(slack=A.phase == "slack"), A.x, A.lam)
    P0, _, _ = _problem(stand, 0.0, 0, loads={right: 0.0})
    A0 = allocate(P0)
    assert np.abs(A0.wrenches[1]).max() <= 1e-8 * mass * 9.81
    assert A0.phase == "slack"  # on one sole with the COM between the feet: unreachable


def test_empty_cones_raise(stand):
    P, T, q = _problem(stand, 0.0, 0, limits=ContactLimits(min_normal=1e7))
    with pytest.raises(AllocationError, match="no efforts within the bounds") as err:
        allocate(P)
    assert err.value.flag == -1


def test_pair_reachable_at_rest(pair):
    """Two humanoids holding hands, four soles: standing still is reachable within the
    cones and the KKT certificate holds."""
    mm = MemberModel.build(pair, "stand")
    md = pair.modes["stand"]
    data = DynamicsData.of(mm.dm)
    n = md.partition.independent.size
    T = composed_terms(mm, data, md.partition.q_ref, np.zeros(n))
    coords = IndependentCoordinates.of(mm.kin, md.partition)
    ts = tracking_state(coords, md.partition.q_ref, T.v, md.partition.q_ref, T.v, T.edu)
    P = allocation_problem(mm, data, T, commanded_force(T, ts))
    A = allocate(P)
    assert A.phase == "reachable" and A.cone_violation <= 1e-9
    assert len(P.cones) == 4
    _kkt_certificate(P.dense(slack=False), A.x, A.lam)


# ------------------------------------------------------------------------ cones and ramps

SOLE = Support("s", "b", half_extents=(0.11, 0.05), kind="surface", friction=0.8)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(-3, 3), min_size=3, max_size=3),
       st.lists(st.floats(-1, 1), min_size=5, max_size=5), st.floats(0.05, 1.0))
def test_cone_rows_match_their_definition_in_any_frame(rot, local, load):
    """The rows on a world wrench, for any frame rotation, against the inequalities written
    directly on the support-frame wrench (CoP = (−n_y, n_x)/f_z, pyramid in 0.75 μ)."""
    R = sp.exp3(np.array(rot))
    fz = 200.0
    px, py = local[0] * 0.15, local[1] * 0.07
    fx, fy = local[2] * 0.6 * fz, local[3] * 0.6 * fz
    nz = local[4] * 10
    ws = np.array([py * fz, -px * fz, nz, fx, fy, fz])  # n = p × f (f_z part), p_z = 0
    w = np.concatenate([R @ ws[:3], R @ ws[3:]])
    cone = wrench_cone(SOLE, R, ContactLimits(), load)
    k = load * 0.75 * 0.8 / np.sqrt(2)
    margins = np.array([load * 0.75 * 0.11 - abs(px), load * 0.75 * 0.05 - abs(py),
                        k - abs(fx) / fz, k - abs(fy) / fz])  # ≥ 0 inside (f_z ≥ 15 N here)
    if np.abs(margins).min() > 1e-9:  # away from the boundary (rotation round-off)
        assert (cone.violation(w) == 0.0) == bool(np.all(margins > 0))
    assert np.abs(cone.local(w) - ws).max() < 1e-12


def test_cone_at_zero_load_is_zero_wrench():
    cone = wrench_cone(SOLE, np.eye(3), load=0.0)
    assert np.all(cone.equality) and cone.violation(np.zeros(6)) == 0.0
    assert cone.violation(np.array([0, 0, 0, 0, 0, 1e-3])) > 0


def test_cone_refuses_bad_supports():
    from rbc.control.cones import ConeError

    with pytest.raises(ConeError, match="normal"):
        wrench_cone(replace(SOLE, normal=(1.0, 0.0, 0.0)), np.eye(3))
    with pytest.raises(ValueError):
        wrench_cone(SOLE, np.eye(3), load=1.5)


def test_unloading_ramp():
    r = UnloadingRamp()
    off, on = 2.0, 2.5
    f = [r.factor(t, [off], [on]) for t in (1.0, 2.0 - 0.35, 2.0 - 0.175, 2.0, 2.52, 2.54,
                                            2.54 + 0.15, 2.84, 3.5)]
    assert np.allclose(f, [1.0, 1.0, 0.5, 0.0, 0.0, 0.0, 0.5, 1.0, 1.0], atol=1e-12)


def test_friction_free_nominal_model_equals_a_record_without_coulomb(solo, control_dir, tmp_path):
    """The default nominal model leaves Coulomb friction out (coulomb=False): its support
    maps and right-hand side at a moving state equal those of the same humanoid compiled
    from a record whose drives have no Coulomb friction."""
    import re

    from rbc.compiler import compile_to_file
    from tests.compose.conftest import HUMANOID, _composed
    from tests.compose.test_dynamics import SOLO

    text = re.sub(r"coulomb: [0-9.eE+-]+", "coulomb: 0.0",
                  (HUMANOID / "humanoid_v3.yaml").read_text())
    (tmp_path / "humanoid_v3.yaml").write_text(text)
    compile_to_file(tmp_path / "humanoid_v3.yaml", tmp_path / "humanoid_v3.h5")
    (tmp_path / "solo.yaml").write_text(SOLO)
    bare = _composed(str(tmp_path), "solo")[1]
    out = []
    for comp in (solo, bare):
        mm = MemberModel.build(comp, "stand")
        md = comp.modes["stand"]
        data = DynamicsData.of(mm.dm)
        rng = np.random.default_rng(8)
        n = md.partition.independent.size
        q = ClosureState(mm.kin, md.partition, md.partition.q_ref.copy()).step(
            rng.uniform(-1, 1, n), 0.001)
        T = composed_terms(mm, data, q, rng.uniform(-0.3, 0.3, n))
        out.append(allocation_problem(mm, data, T, np.zeros(n)))
        if comp is solo:
            assert np.abs(T.tau_coulomb).max() > 1.0  # the friction is there to leave out
    a, b = out
    for x, y in ((a.lam0, b.lam0), (a.Lam, b.Lam), (a.rhs, b.rhs)):
        assert np.abs(x - y).max() <= 1e-12 * max(1.0, np.abs(y).max())

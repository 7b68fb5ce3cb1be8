"""The velocity problem: DAQP against the closed form, the stroke preference, infeasibility and
the declared relaxation, and covariance under a change of partition."""

from __future__ import annotations

import functools

import numpy as np
import pinocchio as pin
import pytest

from rbc.model.closure import ClosureState
from rbc.model.compiled import CompiledModel
from rbc.model.dynamics import DynamicsData, DynamicsModel, reduced_inertia
from rbc.model.interfaces import actuator_map
from rbc.model.kinematics import frame_jacobian
from rbc.model.partition import lift
from rbc.tasks import preference
from rbc.tasks.bounds import kinematic_bounds
from rbc.tasks.charts import Desired, stack
from rbc.tasks.qp import TaskInfeasible, VelocityProblem, closed_form, solve
from tests.tasks.conftest import dynamics, states
from tests.verify.conftest import compile_bundle

#: DAQP vs closed form, relative to max|u| (issue 18 acceptance).
ORACLE_TOL = 1e-12

RECORDS = (("stewart", ["platform"]), ("excavator", ["bucket_tip"]),
           ("fivebar", ["tool:xy"]), ("panda", ["tool"]))


def _problem(name: str, spec: list[str], q, E, rng, bounds=None) -> VelocityProblem:
    dm, _ = dynamics(name)
    ch = stack(dm.kin, spec)
    ts = ch.state(dm.kin, q, E, Desired(ch.value(dm.kin, q), np.zeros(ch.dim)))
    W = reduced_inertia(dm, DynamicsData.of(dm), q, E)
    w = rng.standard_normal(ch.dim) * 0.1
    g = preference.gradient(dm.kin, q, E)
    # k_Φ so that the preference's self-motion is of the size of the task motion: the closed
    # form's round-off floor is ε·‖k W⁻¹∇Φ‖/‖u‖, so a preference 1e6× the task term would
    # test the oracle's cancellation, not the solver (measured: 1e-15 here)
    task = np.linalg.norm(np.linalg.lstsq(ts.J, w, rcond=None)[0])
    pref = np.linalg.norm(np.linalg.solve(W, g)) or 1.0
    k = rng.uniform(0.0, 2.0) * task / pref
    return VelocityProblem(W, ts.J, w, g, k, bounds, row_names=ch.row_names())


@pytest.mark.parametrize(("name", "spec"), RECORDS)
def test_daqp_matches_the_closed_form(name, spec):
    rng = np.random.default_rng(11)
    worst = 0.0
    for q, E in states(name, 8):
        p = _problem(name, spec, q, E, rng)
        u_qp, u_cf = solve(p).u, closed_form(p)
        worst = max(worst, float(np.abs(u_qp - u_cf).max() / np.abs(u_cf).max()))
        # the task rows hold exactly and W u + f ∈ range(Jᵀ)
        assert np.abs(p.J @ u_qp - p.w).max() <= 1e-12 * max(1.0, np.abs(p.w).max())
    assert worst <= ORACLE_TOL, worst


def test_preference_gradient_and_barrier():
    dm, part = dynamics("excavator")
    model = dm.kin
    st = preference.strokes(model)
    assert set(st.names) == {"boom_cyl", "arm_cyl", "bucket_cyl"}
    (q, E), = states("excavator", 1)
    rng = np.random.default_rng(2)
    u = rng.standard_normal(part.independent.size) * 0.05
    h = 1e-4

    def phi(t: float) -> float:
        return preference.phi(model, ClosureState(model, part, q).step(u, t))

    fd = (phi(h) - phi(-h)) / (2 * h)
    assert fd == pytest.approx(preference.gradient(model, q, E) @ u, rel=1e-6)
    # each term: 0 at mid-stroke, symmetric, unbounded at the limits
    x = st.values(model, q)
    mid = (st.lower + st.upper) / 2
    assert preference.phi(model, q) > 0
    qm = q.copy()
    for j, v in zip(st.columns, mid, strict=True):
        qm[model.q_offset[model.v_edge[j]]] = v
    assert preference.phi(model, qm) == pytest.approx(0.0, abs=1e-15)
    qo = q.copy()
    qo[model.q_offset[model.v_edge[st.columns[0]]]] = st.upper[0] + 1e-3
    assert preference.phi(model, qo) == np.inf
    assert np.all((x > st.lower) & (x < st.upper))


def test_infeasible_speed_bounds_are_named_and_relaxed():
    dm, part = dynamics("excavator")
    model = dm.kin
    (q, E), = states("excavator", 1)
    rng = np.random.default_rng(4)
    b = kinematic_bounds(model, q, E, speed_scale=0.01)
    p = _problem("excavator", ["bucket_tip"], q, E, rng, b)
    p = VelocityProblem(p.W, p.J, np.array([0.5, 0.0, 0.3]), p.grad, 0.0, b,
                        row_names=p.row_names)
    with pytest.raises(TaskInfeasible, match=r"bucket_tip\.x.*blocked by speed of") as info:
        solve(p)
    assert info.value.bounds and all(n.startswith("speed of") for n in info.value.bounds)
    sol = solve(p, relax="slack")
    assert sol.relaxed and sol.slack_norm > 0.1
    # the slack is what the bounds took away: J u = w − s, and the bounds hold
    np.testing.assert_allclose(p.J @ sol.u, p.w - sol.slack, atol=1e-12)
    assert b.violation(sol.u).max() <= 1e-9 * 0.3
    # a feasible request is not relaxed
    ok = VelocityProblem(p.W, p.J, 1e-4 * p.w, p.grad, 0.0, b, row_names=p.row_names)
    s2 = solve(ok, relax="slack")
    assert not s2.relaxed and s2.slack_norm == 0.0


def test_rank_deficient_task_is_infeasible_not_softened():
    dm, _ = dynamics("excavator")
    (q, E), = states("excavator", 1)
    ch = stack(dm.kin, ["bucket_tip", "bucket_tip:xz"])  # the xz rows repeat two rows
    ts = ch.state(dm.kin, q, E, Desired(ch.value(dm.kin, q), np.zeros(ch.dim)))
    W = reduced_inertia(dm, DynamicsData.of(dm), q, E)
    p = VelocityProblem(W, ts.J, np.ones(5) * 0.01, np.zeros(4), 0.0, None,
                        row_names=ch.row_names())
    with pytest.raises(TaskInfeasible, match="rank deficient") as info:
        solve(p)
    assert info.value.rank_deficient


@functools.cache
def _two_partitions(tmp):
    path = compile_bundle(tmp, "excavator")
    model = CompiledModel.from_bundle(path)
    return DynamicsModel.build(model), model.partitions["default"], model.partitions["joint_space"]


@pytest.mark.parametrize("bounded", [False, True])
def test_covariance_under_a_change_of_partition(tmp_path_factory, bounded):
    """Posed in two partitions of the excavator, the solutions are the same physical motion:
    all speeds v = E u, the task velocity and the port powers agree to 1e-12."""
    dm, pa, pb = _two_partitions(tmp_path_factory.getbasetemp())
    model = dm.kin
    assert set(pa.joints) != set(pb.joints)
    data = DynamicsData.of(dm)
    ch = stack(model, ["bucket_tip"])
    rng = np.random.default_rng(8)
    body = model.record.body_index()["bucket"]
    frame = pin.SE3(np.eye(3), np.array([1.5, 0.0, 0.0]))
    for q, _ in states("excavator", 4):
        desired = Desired(ch.value(model, q) + rng.normal(size=3) * 0.02, rng.normal(size=3) * 0.05)
        k_phi = rng.uniform(0.0, 5e3)

        def problem(part, scale=None, q=q, desired=desired, k_phi=k_phi):
            E = lift(model, part, q).E
            ts = ch.state(model, q, E, desired)
            b = None if scale is None else kinematic_bounds(model, q, E, speed_scale=scale)
            return E, VelocityProblem(reduced_inertia(dm, data, q, E), ts.J,
                                      ts.command(np.full(3, 2.0)),
                                      preference.gradient(model, q, E), k_phi, b)

        scale = None
        if bounded:  # speed limits at 90 % of the fastest port of the unbounded motion
            E, p = problem(pa)
            limits = np.array([a.speed_limit for a in model.record.actuators])
            scale = 0.9 * np.abs(actuator_map(model, E) @ solve(p).u / limits).max()
        out = []
        for part in (pa, pb):
            E, p = problem(part, scale)
            sol = solve(p)
            assert sol.active.any() == bounded
            u = sol.u
            out.append((E @ u, frame_jacobian(model, q, body, frame)[1] @ (E @ u),
                        actuator_map(model, E) @ u))
        f = rng.uniform(-1e5, 1e5, 4)  # port efforts [N, N·m]
        (va, xa, la), (vb, xb, lb) = out
        assert np.abs(va - vb).max() <= 1e-12 * np.abs(va).max()
        assert np.abs(xa - xb).max() <= 1e-12 * np.abs(xa).max()
        assert np.abs(f * la - f * lb).max() <= 1e-12 * np.abs(f * la).max()

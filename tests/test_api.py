"""The public Python API (rbc.api): every call against something independent — finite
differences on the closure manifold, the other evaluator, the inverse of the forward map,
the reactions' own accelerations — and its errors."""

from __future__ import annotations

import numpy as np
import pytest

import rbc
from rbc.errors import RbcError
from rbc.model.closure import ClosureError
from rbc.model.solve import SolveError
from rbc.tasks.charts import TaskError
from tests.conftest import RECORDS
from tests.verify.conftest import compile_bundle

#: Central differences with step h on smooth closures: truncation O(h²) with h = 1e-6 and
#: round-off O(ε/h) ≈ 1e-10 relative; 1e-7 relative leaves room for curvature of order 10³.
FD_H, FD_TOL = 1e-6, 1e-7


@pytest.fixture(scope="module")
def bundles(tmp_path_factory):
    directory = tmp_path_factory.mktemp("api")
    return lambda name: compile_bundle(directory, name)


@pytest.fixture(scope="module")
def stewart(bundles):
    return rbc.load(bundles("stewart"))


@pytest.fixture(scope="module")
def excavator(bundles):
    return rbc.load(bundles("excavator"))


def _rel(a, b) -> float:
    a, b = np.asarray(a), np.asarray(b)
    return float(np.abs(a - b).max(initial=0.0) / max(1.0, np.abs(b).max(initial=0.0)))


def _x(model, state) -> np.ndarray:
    """Independent values at a state (every shipped partition's are scalar)."""
    from rbc.model.solve import independent_values

    return independent_values(model.compiled, model.compiled.partitions[model.partition],
                              state.q)


def test_names_sizes_and_repr(stewart):
    assert stewart.independent == ("P1", "P2", "P3", "P4", "P5", "P6")
    assert stewart.nu == 6 and len(stewart.actuators) == 6 and stewart.tasks == ("platform",)
    assert stewart.nq == 42 and stewart.nv == 36 and len(stewart.coordinates) == 36
    assert "stewart" in repr(stewart) and stewart.partitions == ("default",)
    assert set(rbc.__all__) >= {"compile", "load", "Model", "State", "Wrench"}


@pytest.mark.parametrize("name", ["stewart", "excavator", "fourbar"])
def test_close_prescribes_and_closes(bundles, name):
    model = rbc.load(bundles(name))
    ref = model.close()
    x0 = _x(model, ref)
    x = x0 + 0.02 * np.cos(np.arange(model.nu))
    s = model.close(x)
    assert s.residual <= 1e-13 and _rel(_x(model, s), x) <= 1e-14
    # the mapping form and a warm start on the same branch give the same configuration
    s2 = model.close(dict(zip(model.independent, x, strict=True)), guess=ref)
    assert _rel(s2.q, s.q) <= 1e-12
    assert not s.q.flags.writeable and s.u.shape == (model.nu,)


@pytest.mark.parametrize("name", ["stewart", "excavator"])
def test_lift_against_finite_differences(bundles, name):
    model = rbc.load(bundles(name))
    x = _x(model, model.close()) + 0.01
    u = 0.3 * np.sin(np.arange(model.nu) + 1.0)
    s = model.close(x, speeds=u)
    L = model.lift(s)
    k = model.compiled
    for i in range(model.nu):  # E's columns: the motion of q when one x moves
        dx = FD_H * np.eye(model.nu)[i]
        qp, qm = model.close(x + dx, guess=s).q, model.close(x - dx, guess=s).q
        assert _rel(k.difference(qm, qp) / (2 * FD_H), L.E[:, i]) <= FD_TOL, i
    # Ė u: the change of E u along the motion x(t) = x + t u
    Ep = model.lift(model.close(x + FD_H * u, guess=s)).E
    Em = model.lift(model.close(x - FD_H * u, guess=s)).E
    assert _rel((Ep - Em) @ u / (2 * FD_H), L.Edu) <= FD_TOL
    assert _rel(L.v, L.E @ u) <= 1e-15


def test_task_jacobian_and_ports_against_finite_differences(excavator):
    s = excavator.close(speeds=np.linspace(0.1, 0.4, excavator.nu))
    x = _x(excavator, s)
    for task in (*excavator.tasks, "bucket_tip:xz", f"joint:{excavator.independent[0]}"):
        tj = excavator.task_jacobian(s, task)
        assert tj.J.shape == (len(tj.rows), excavator.nu)
        for i in range(excavator.nu):
            dx = FD_H * np.eye(excavator.nu)[i]
            vp = excavator.task_jacobian(excavator.close(x + dx, guess=s), task).value
            vm = excavator.task_jacobian(excavator.close(x - dx, guess=s), task).value
            if tj.value.size == 3 or tj.value.size <= 2:  # position-like charts
                assert _rel((vp - vm) / (2 * FD_H), tj.J[:, i]) <= FD_TOL, (task, i)
    p = excavator.port_map(s)
    for i in range(excavator.nu):
        dx = FD_H * np.eye(excavator.nu)[i]
        dl = (excavator.port_map(excavator.close(x + dx, guess=s)).values
              - excavator.port_map(excavator.close(x - dx, guess=s)).values) / (2 * FD_H)
        assert _rel(dl, p.L[:, i]) <= FD_TOL, i
    assert _rel(p.rates, p.L @ s.u) <= 1e-15 and p.units[0] in (("m", "N"), ("rad", "N·m"))


def test_pose_task_rows_are_angular_first(stewart):
    s = stewart.close()
    tj = stewart.task_jacobian(s, "platform")
    assert tj.value.shape == (7,) and tj.J.shape == (6, 6)
    assert tj.rows[:3] == ("platform.rx", "platform.ry", "platform.rz")
    x = _x(stewart, s)
    dx = FD_H * np.eye(6)[0]
    vp = stewart.task_jacobian(stewart.close(x + dx, guess=s), "platform").value
    vm = stewart.task_jacobian(stewart.close(x - dx, guess=s), "platform").value
    assert _rel((vp[:3] - vm[:3]) / (2 * FD_H), tj.J[3:, 0]) <= FD_TOL


@pytest.mark.parametrize("name", ["stewart", "excavator", "fourbar"])
def test_forward_and_inverse_dynamics_are_inverse(bundles, name):
    model = rbc.load(bundles(name))
    rng = np.random.default_rng(20260927)
    s = model.close(speeds=0.2 * rng.normal(size=model.nu))
    f = 10.0 * rng.normal(size=len(model.actuators))
    udot = model.forward_dynamics(s, f)
    # a zero wrench sends the call down the reference path: the two evaluators agree
    # (tests/kernels holds them to 1e-13; u̇ carries κ(M_r) of the backward error)
    body = next(b for b in model.bodies if model.compiled.record.bodies[
        model.compiled.record.body_index()[b]].kind != "fixed")
    zero = rbc.Wrench(body, (0.0, 0.0, 0.0), (0.0,) * 6)
    assert _rel(model.forward_dynamics(s, f, [zero]), udot) <= 1e-11
    if np.linalg.matrix_rank(model.port_map(s).L) == model.nu:  # fully actuated
        assert _rel(model.inverse_dynamics(s, udot), f) <= 1e-9
    sol = model.reactions(s, efforts=f)
    assert sol.mode == "forward" and _rel(sol.udot, udot) <= 1e-11


def test_wrench_is_the_virtual_work_of_its_point(excavator):
    """A force F at the bucket tip is held by port efforts Δf with Lᵀ Δf = −J_xᵀ F (virtual
    work: the ports' power fᵀ L u balances the tip's Fᵀ J_x u for every u)."""
    s = excavator.close()
    tip = excavator.compiled.record.tasks[0]
    F = np.array([10.0, -20.0, 30.0])
    w = rbc.Wrench(tip.body, tip.pose.xyz, (0.0, 0.0, 0.0, *F))
    J = excavator.task_jacobian(s, tip.name).J
    df = excavator.inverse_dynamics(s, wrenches=[w]) - excavator.inverse_dynamics(s)
    L = excavator.port_map(s).L
    assert _rel(L.T @ df, -J.T @ F) <= 1e-10


def test_modes_and_partitions(bundles, tmp_path):
    ex = rbc.load(bundles("excavator"))
    assert set(ex.partitions) == {"default", "joint_space", "stroke"}
    js = ex.with_partition("joint_space")
    assert js.independent == ("slew", "boom_foot", "arm_pin", "bucket_pin")
    s = js.close({"boom_foot": 0.1})
    assert s.partition == "joint_space" and s.residual <= 1e-13
    with pytest.raises(rbc.ApiError, match="another model"):
        ex.forward_dynamics(s)
    with pytest.raises(SolveError, match="unknown partition 'joint'"):
        ex.with_partition("joint")
    with pytest.raises(rbc.ApiError, match="not a compiled support mode"):
        ex.with_mode("stance")


def test_compile_and_state_round_trip(tmp_path):
    b = rbc.compile(RECORDS / "fourbar.yaml", tmp_path / "fb.h5",
                    partitions={"rocker": ("D",)})
    assert b.path.exists() and [n for n, _ in b.timings][-1] == "write"
    m = b.load()
    assert set(m.partitions) == {"default", "rocker"}
    s = m.close({"A": 0.5}, speeds={"A": 2.0})
    again = m.state(np.array(s.q), s.u)
    assert _rel(m.forward_dynamics(again), m.forward_dynamics(s)) <= 1e-15
    assert m.joint_values(s)["A"] == 0.5
    with pytest.raises(RbcError, match="input"):
        rbc.compile(RECORDS / "fourbar.yaml", RECORDS / "fourbar.yaml")


def test_mujoco_plant_starts_at_the_state(stewart):
    s = stewart.close(np.full(6, 0.8), speeds=np.full(6, 0.01))
    plant = stewart.plant(s, "mujoco", dt=1e-3)
    m = plant.measure()
    p = stewart.port_map(s)
    assert _rel(m.ports, p.values) <= 1e-12 and _rel(m.port_rates, p.rates) <= 1e-9


@pytest.mark.parametrize(("call", "message"), [
    (lambda m, s: m.close(np.zeros(5)), r"independent: expected shape \(6,\), got \(5,\)"),
    (lambda m, s: m.close({"P7": 0.8}), "unknown coordinate 'P7'"),
    (lambda m, s: m.close({"P1": 5.0}), "outside the joint limits"),
    (lambda m, s: m.close(speeds={"P9": 1}), "speeds P9: not an independent coordinate"),
    (lambda m, s: m.forward_dynamics(s, {"act_7": 1.0}),
     r"efforts act_7: not an actuator \(did you mean 'act_6'\?\); valid: act_1, act_2"),
    (lambda m, s: m.forward_dynamics(s, np.full(6, np.nan)), "must be finite"),
    (lambda m, s: m.forward_dynamics(s.q), "expected an rbc.State"),
    (lambda m, s: m.forward_dynamics(s, wrenches=[rbc.Wrench("platfrom", (0, 0, 0),
                                                             (0,) * 6)]),
     r"unknown body \(did you mean 'platform'\?\)"),
    (lambda m, s: m.forward_dynamics(s, wrenches=[rbc.Wrench("base", (0, 0, 0), (0,) * 6)]),
     "welded to the world"),
    (lambda m, s: m.forward_dynamics(s, wrenches=[rbc.Wrench("platform", (0, 0), (0,) * 6)]),
     r"point: expected shape \(3,\)"),
    (lambda m, s: m.reactions(s, udot=np.zeros(6), efforts=np.zeros(6)), "exclude each other"),
    (lambda m, s: m.state(m.compiled.initial_configuration() + 0.1), "does not close"),
    (lambda m, s: m.task_jacobian(s, "platfrom"), "no task 'platfrom'"),
    (lambda m, s: m.plant(s, "bullet"), "unknown backend 'bullet'"),
    (lambda m, s: m.plant(s, dt=0.0), "dt"),
])
def test_errors_name_the_argument(stewart, call, message):
    s = stewart.close()
    with pytest.raises(RbcError, match=message):
        call(stewart, s)


def test_unreachable_close_names_the_turning_point(stewart):
    with pytest.raises(ClosureError, match="turning point of the prescribed P1"):
        stewart.close(np.array([0.9, 0.61, 0.9, 0.61, 0.9, 0.61]))
    with pytest.raises(TaskError, match="no coordinate 'nope'"):
        stewart.task_jacobian(stewart.close(), "joint:nope")


def test_support_mode(tmp_path):
    """The Go2 standing on four feet: a mode model whose independent speeds are the base's;
    the twelve motors' minimum-norm efforts for a base acceleration produce it."""
    go2 = rbc.compile(RECORDS / "go2.yaml", tmp_path / "go2.h5",
                      modes={"stance": ("FL", "FR", "RL", "RR")}).load()
    assert go2.modes == ("stance",)
    stand = go2.with_mode("stance")
    assert stand.nu == 6 and stand.independent[0] == "base.root.wx"
    s = stand.close()
    assert s.residual <= 1e-13
    udot = np.array([0.0, 0.0, 0.1, 0.0, 0.0, 0.2])
    f = stand.inverse_dynamics(s, udot)
    assert f.shape == (12,) and _rel(stand.forward_dynamics(s, f), udot) <= 1e-9
    moved = np.array(go2.compiled.modes["stance"].anchors)
    moved[:, 0] += 0.01  # every foot 1 cm forward: the stance closes there too
    assert go2.with_mode("stance", moved).close().residual <= 1e-13
    with pytest.raises(rbc.ApiError, match=r"anchors: expected shape \(4, 7\)"):
        go2.with_mode("stance", moved[:3])
    with pytest.raises(rbc.ApiError, match="already a support mode"):
        stand.with_mode("stance")

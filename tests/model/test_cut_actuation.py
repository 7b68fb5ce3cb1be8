"""Actuated cut joints (issue 23 item 6): a driven joint that is a chord (declared
``cut: required`` here; a loop of only actuated joints forces the same) applies its effort
as the joint's equivalent wrench pair on its two bodies.

Independent checks: the four-bar driven at its crank A with A cut and with A in the tree
(the default cut is C) is one mechanism — same actuator map, reduced inertia, bias and
reduced efforts; ``rbc verify --dynamics`` passes with the Pinocchio reference applying the
effort through its own rate rows (K_eᵀ τ_e from Pinocchio frame Jacobians) and the 50-digit
KKT; the MJCF export drives the cut joint through an auxiliary body (readback passes) and
MuJoCo's acceleration under a motor command agrees with the reduced model's to its soft
constraints' accuracy.
"""

from __future__ import annotations

import functools
import re
from dataclasses import replace

import mujoco
import numpy as np
import pytest

from rbc.backends.mjcf_export import export_mjcf
from rbc.compiler import compile_record
from rbc.model.dynamics import DynamicsData, DynamicsModel, forward_dynamics, reduced_terms
from rbc.model.interfaces import actuator_map
from rbc.model.solve import solve_named
from rbc.sim.backends import BackendError
from rbc.sim.backends.pinocchio import PinocchioBackend
from rbc.verify.dynamics import run_dynamic_checks
from tests.conftest import RECORDS


def _fourbar(tmp, cut_a: bool):
    """records/fourbar.yaml without the rotor inertia (a cut coordinate carries no mass),
    with or without ``cut: required`` on the crank A."""
    text = (RECORDS / "fourbar.yaml").read_text().replace("rotor_inertia: 2.0e-5",
                                                          "rotor_inertia: 0.0")
    if cut_a:
        text, n = re.subn(r"(\n  - name: A\n)", r"\1    cut: required\n", text)
        assert n == 1
    path = tmp / f"fourbar_{'cut' if cut_a else 'tree'}.yaml"
    path.write_text(text)
    return path


@functools.cache
def _compiled(tmp, cut_a: bool):
    _, report = compile_record(_fourbar(tmp, cut_a))
    parted = report.stages["rank"]
    parts = {p.name: p for p in parted.partitions}
    return replace(parted.model, partitions=parts), parts["default"]


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("cut_actuation")
    return _compiled(tmp, True), _compiled(tmp, False)


def test_the_crank_is_a_cut_joint(models):
    (cut, _), (tree, _) = models
    assert [cut.edge_names[k] for k in cut.chord_edges] == ["A"]
    assert [tree.edge_names[k] for k in tree.chord_edges] == ["C"]


@pytest.mark.parametrize("theta", [0.3, 1.4, 2.9, -2.0])
def test_cut_and_tree_crank_have_the_same_reduced_dynamics(models, theta):
    out = []
    for model, part in models:
        assert part.joints == ("A",)
        q = solve_named(model, part.name, {"A": theta}).q
        dm = DynamicsModel.build(model)
        t = reduced_terms(dm, DynamicsData.of(dm), part, q, np.array([2.5]), np.array([1.7]))
        out.append((actuator_map(model, t.lifted.E, q), t.M, t.h, t.tau,
                    forward_dynamics(dm, t)))
    for name, a, b in zip(("L", "M_r", "h_r", "tau_r", "udot"), *out, strict=True):
        # two exact evaluations along different trees (closure to 1e-13): round-off
        assert np.abs(a - b).max() <= 1e-12 * max(1.0, float(np.abs(b).max())), (name, a, b)


def test_verify_dynamics_passes_with_the_crank_cut(models):
    (model, part), _ = models
    checks = {c.name: c for c in run_dynamic_checks(model, part, samples=6)}
    for c in checks.values():
        assert c.passed, f"{c.name} = {c.value:.3g}: {c.detail}"
    assert checks["dynamics.delta_a.pinocchio"].value <= 1e-9  # efforts via K_eᵀ τ_e


def test_mujoco_drives_the_cut_crank(models):
    accel = []
    for model, part in models:
        exp = export_mjcf(model, part)
        m = mujoco.MjModel.from_xml_string(exp.to_string())
        d = mujoco.MjData(m)
        mujoco.mj_resetDataKeyframe(m, d, 0)
        d.ctrl[:] = 1.0
        mujoco.mj_forward(m, d)
        jid = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, exp.joint_name(model.edge("A")))
        dm = DynamicsModel.build(model)
        t = reduced_terms(dm, DynamicsData.of(dm), part, part.q_ref, np.zeros(1),
                          np.array([1.0]))
        accel.append((float(d.qacc[m.jnt_dofadr[jid]]), float(forward_dynamics(dm, t)[0])))
    (mj_cut, ours), (mj_tree, ours_tree) = accel
    assert ours == pytest.approx(ours_tree, rel=1e-12)
    # MuJoCo's soft weld of the auxiliary body (solref 2 ms): measured 4.4e-3 relative with
    # the crank cut, 7.5e-6 with it in the tree
    assert mj_cut == pytest.approx(ours, rel=1e-2)
    assert mj_tree == pytest.approx(ours, rel=1e-4)


def test_pinocchio_backend_refuses_a_driven_cut_joint(models):
    (model, part), _ = models
    with pytest.raises(BackendError, match=r"motor_A \(A\) drive cut joints"):
        PinocchioBackend.check(model, part)

"""Exact MuJoCo equivalents of revolute chains through massless bodies (mjcf_equivalents):
gimbals → ball joints, massless leaf chains closed by a cut → one connect; the velocity map
against MuJoCo's own constraint Jacobian; what is not converted."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest

from rbc.backends.mjcf_export import export_mjcf, write_mjcf
from rbc.compiler import compile_to_file
from rbc.model.compiled import CompiledModel
from rbc.model.partition import lift
from rbc.sim.backends.mujoco import MujocoBackend
from rbc.verify.export_readback import mjcf_readback
from tests.backends.util import dense_efc_jacobian

# An RSSR linkage whose two balls are gimbals of three revolutes through massless bodies:
# at the crank a tree gimbal (g1, g2 merged into the rod → one ball joint), at the rocker a
# massless leaf chain h1, h2 closed by the cut revolute ball_b3 (→ one connect).
RSSR = """rbc: 1
name: rssr_gimbals
gravity: [0, 0, -9.81]
bodies:
  - {name: ground, fixed: true}
  - {name: crank, mass: 0.3, com: [0.05, 0, 0], inertia: [1.0e-5, 3.0e-4, 3.0e-4, 0, 0, 0]}
  - {name: g1, mass: 0}
  - {name: g2, mass: 0}
  - {name: rod, mass: 0.5, com: [0, 0.2, 0], inertia: [7.0e-3, 1.0e-5, 7.0e-3, 0, 0, 0]}
  - {name: rocker, mass: 0.4, com: [0, 0, 0.075], inertia: [8.0e-4, 8.0e-4, 1.0e-5, 0, 0, 0]}
  - {name: h1, mass: 0}
  - {name: h2, mass: 0}
joints:
  - {name: crank_pin, type: revolute, parent: ground, child: crank, axis: [0, 0, 1]}
  - {name: ball_a1, type: revolute, parent: crank, child: g1, axis: [1, 0, 0],
     parent_frame: {xyz: [0.1, 0, 0]}}
  - {name: ball_a2, type: revolute, parent: g1, child: g2, axis: [0, 1, 0]A2}
  - {name: ball_a3, type: revolute, parent: g2, child: rod, axis: [0, 0, 1]}
  - {name: rocker_pin, type: revolute, parent: ground, child: rocker, axis: [0, 1, 0],
     parent_frame: {xyz: [0.1, 0.4, -0.15]}}
  - {name: ball_b1, type: revolute, parent: rocker, child: h1, axis: [1, 0, 0],
     parent_frame: {xyz: [0, 0, 0.15]}}
  - {name: ball_b2, type: revolute, parent: h1, child: h2, axis: [0, 1, 0]}
  - {name: ball_b3, type: revolute, parent: h2, child: rod, axis: [0, 0, 1], cut: prefer,
     child_frame: {xyz: [0, 0.4, 0]}}
actuators:
  - {name: motor, joint: crank_pin, effort_limits: [-5, 5]}
"""


def _model(tmp_path, a2: str = "") -> tuple:
    src = tmp_path / "rssr.yaml"
    src.write_text(RSSR.replace("A2", a2))
    h5 = tmp_path / "rssr.h5"
    compile_to_file(src, h5)
    kin = CompiledModel.from_bundle(h5)
    return kin, kin.partitions["default"]


def test_gimbal_and_cut_chain_become_ball_and_connect(tmp_path):
    kin, part = _model(tmp_path)
    xml = tmp_path / "rssr.xml"
    ex = write_mjcf(kin, part, xml)
    names = {kin.record.bodies[v].name for v in ex.dropped}
    assert ex.balls == ("ball_b3",) and names == {"h1", "h2"}
    assert [(mj.name, mj.type) for mj in ex.order] == [
        ("crank_pin", "hinge"), ("ball_a1.ball", "ball"), ("rocker_pin", "hinge")]
    checks = {c.name.rsplit(".", 1)[1]: c for c in mjcf_readback(kin, xml)}
    assert all(c.passed for c in checks.values()), [c for c in checks.values() if not c.passed]
    # round-off only: the ball reproduces the gimbal's poses and mass matrix exactly
    assert checks["kinematics"].value < 1e-12 and checks["mass_matrix"].value < 1e-12


def test_velocity_map_satisfies_mujocos_constraints(tmp_path):
    """At random closed speeds v = E u, the mapped qvel = P v lies in the null space of
    MuJoCo's own equality Jacobian (efc_J): the ball's angular-velocity map and the
    dropped chain are consistent with the loop MuJoCo enforces."""
    kin, part = _model(tmp_path)
    ex = export_mjcf(kin, part)
    m = mujoco.MjModel.from_xml_string(ex.to_string())
    d = mujoco.MjData(m)
    mujoco.mj_resetDataKeyframe(m, d, 0)
    mujoco.mj_forward(m, d)
    J = dense_efc_jacobian(m, d)
    E = lift(kin, part, part.q_ref).E
    P = ex.velocity_map(kin, part.q_ref)
    rng = np.random.default_rng(3)
    for _ in range(5):
        qvel = P @ (E @ rng.uniform(-1, 1, E.shape[1]))
        # 1e-12: the lift and the map are exact, MuJoCo's Jacobian is float64 round-off
        assert np.abs(J @ qvel).max() <= 1e-12 * max(1.0, np.abs(qvel).max())


def test_gimbal_holds_in_mujoco(tmp_path):
    """1000 passive steps under gravity from the assembled pose with the crank at 1 rad/s:
    the loop gap stays at MuJoCo's constraint round-off."""
    kin, part = _model(tmp_path)
    q0 = np.asarray(part.q_ref, dtype=float)
    v0 = lift(kin, part, q0).E @ np.ones(part.independent.size)
    be = MujocoBackend(kin, part, q0, v0, 1e-3)
    worst = 0.0
    for _ in range(1000):
        be.advance(np.zeros(1), 1)
        worst = max(worst, float(be.measure().loop_gaps.max()))
    assert worst < 1e-6, worst  # m: measured 2e-9; MuJoCo's soft loop at solref (2 dt, 1)


@pytest.mark.parametrize(("a2", "why"), [
    # the same pose at q = 0, but ball_a2's axis passes 0.1 mm beside the other two
    (", parent_frame: {xyz: [0.0001, 0, 0]}, child_frame: {xyz: [0.0001, 0, 0]}",
     "axes 0.1 mm apart do not meet"),
    (", damping: 0.01", "a joint with damping is not plain"),
])
def test_not_a_ball_keeps_the_hinges(tmp_path, a2, why):
    kin, part = _model(tmp_path, a2)
    ex = export_mjcf(kin, part)
    assert not any(mj.group for mj in ex.order), why
    assert {mj.name for mj in ex.order} >= {"ball_a1", "ball_a2", "ball_a3"}
    mujoco.MjModel.from_xml_string(ex.to_string())  # still loads

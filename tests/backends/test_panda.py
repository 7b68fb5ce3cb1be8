"""The Franka Panda from the vendored MuJoCo Menagerie model (issue 18): the fixed tendon that
drives both fingers is an actuator on the joint combination, the joint equality a coupling;
the shipped record is the import plus its overlay; verify passes; the MJCF export holds the
tendon and the coupling; every plant moves the fingers together."""

from __future__ import annotations

import functools

import mujoco
import numpy as np
import pytest

from rbc.backends.mjcf_export import export_mjcf
from rbc.cli.main import main
from rbc.compiler import compile_to_file
from rbc.model.compiled import CompiledModel
from rbc.model.interfaces import port_jacobian, port_values
from rbc.sim.backends import BackendError, backend_class
from tests.conftest import EXTERNAL, RECORDS

PANDA = RECORDS / "panda.yaml"


@functools.cache
def _bundle(tmp):
    out = tmp / "panda_record" / "panda.h5"
    out.parent.mkdir(exist_ok=True)
    if not out.exists():
        compile_to_file(PANDA, out)
    return out


@pytest.fixture
def panda(tmp_path_factory):
    path = _bundle(tmp_path_factory.getbasetemp())
    return path, CompiledModel.from_bundle(path)


def test_record_is_the_import_plus_overlay(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(RECORDS.parent)
    out = tmp_path / "panda.yaml"
    code = main(["import", "mjcf", str((EXTERNAL / "franka_emika_panda/panda.xml")
                                       .relative_to(RECORDS.parent)),
                 "--overlay", "records/overlays/panda.yaml", "-o", str(out)])
    assert code == 0, capsys.readouterr().err
    assert out.read_text() == PANDA.read_text()


def test_tendon_port_and_coupling(panda):
    _, model = panda
    rec = model.record
    grip = rec.actuators[-1]
    assert grip.joint is None and dict(grip.terms) == {"finger_joint1": 0.5,
                                                       "finger_joint2": 0.5}
    assert [a.joint for a in rec.actuators[:7]] == [f"joint{i}" for i in range(1, 8)]
    assert dict(rec.couplings[0].terms) == {"finger_joint1": 1.0, "finger_joint2": -1.0}
    assert rec.tasks[0].name == "tool" and rec.tasks[0].kind == "pose"
    q = model.partitions["default"].q_ref.copy()
    f1, f2 = (model.q_offset[model.edge(n)] for n in ("finger_joint1", "finger_joint2"))
    q[f1], q[f2] = 0.01, 0.03
    assert port_values(model, q)[-1] == pytest.approx(0.02, abs=1e-15)
    J = port_jacobian(model)
    assert J[-1, model.v_offset[model.edge("finger_joint1")]] == 0.5
    # seven arm speeds and one finger speed; the partition keeps the arm independent
    part = model.partitions["default"]
    assert part.independent.size == 8 and part.rank == 1


def test_verify_dynamics_passes(panda, capsys):
    path, _ = panda
    code = main(["verify", str(path), "--samples", "10", "--dynamics", "--dynamics-samples", "4"])
    assert code == 0, capsys.readouterr().out[-3000:]


def test_mjcf_export_has_the_tendon_and_the_coupling(panda):
    _, model = panda
    part = model.partitions["default"]
    xml = export_mjcf(model, part).to_string()
    m = mujoco.MjModel.from_xml_string(xml)
    assert m.ntendon == 1 and m.nu == 8
    assert m.actuator_trntype[7] == mujoco.mjtTrn.mjTRN_TENDON
    joint_eq = [i for i in range(m.neq) if m.eq_type[i] == mujoco.mjtEq.mjEQ_JOINT]
    assert len(joint_eq) == 1
    np.testing.assert_allclose(m.eq_data[joint_eq[0], :5], [0, 1, 0, 0, 0], atol=1e-15)


@pytest.mark.parametrize("backend", ["mujoco", "reduced"])
def test_fingers_move_together_under_the_gripper_effort(panda, backend):
    """Closing effort on the tendon port: both fingers close, and stay equal."""
    _, model = panda
    part = model.partitions["default"]
    cls = backend_class(backend)
    q0 = part.q_ref.copy()
    f1, f2 = (model.q_offset[model.edge(n)] for n in ("finger_joint1", "finger_joint2"))
    q0[f1] = q0[f2] = 0.02
    plant = cls(model, part, q0, np.zeros(model.nv), 1e-3)
    m0 = plant.measure()
    f = np.zeros(8)
    f[-1] = -5.0  # N at the port; gravity on the arm is unopposed but irrelevant in 20 ms
    plant.advance(f, 20)
    m1 = plant.measure()
    assert m1.ports[-1] < m0.ports[-1] - 1e-4  # the port closed
    q = m1.q
    if backend == "mujoco":
        gap = abs(q[7] - q[8])  # MuJoCo qpos: 7 arm joints, then the two fingers
        assert gap <= 1e-4 * abs(m0.ports[-1] - m1.ports[-1]) + 1e-9  # soft equality
    else:
        assert abs(q[f1] - q[f2]) <= 1e-12  # the coupling is exact on the manifold


def test_pinocchio_backend_refuses_couplings(panda):
    _, model = panda
    with pytest.raises(BackendError, match="cannot hold the couplings joint1_2"):
        backend_class("pinocchio").check(model, model.partitions["default"])

"""The reduced backend on the kernel evaluator follows the reference evaluator's closed-loop
run (the same corrector, reduced terms, powers and partition check; the two differ by
round-off that the loop and the step-size controller carry)."""

from __future__ import annotations

import numpy as np
import pytest

from rbc.sim.backends import BackendError
from rbc.sim.run import SimOptions, prepare, simulate
from tests.sim.conftest import REFERENCES


def _run(bundle, reference, evaluator, integrator):
    opts = SimOptions(backend="reduced", controller="pd+ff", duration=0.05, dt=1e-3,
                      reference=reference, evaluator=evaluator, integrator=integrator)
    return simulate(prepare(bundle, opts))


@pytest.mark.parametrize(("name", "integrator"), [("stewart", "dopri5"),
                                                  ("excavator", "dopri5"),
                                                  ("stewart", "rk4")])
def test_kernel_and_reference_evaluators_agree_in_closed_loop(bundles, name, integrator):
    ref = REFERENCES / ("stewart.csv" if name == "stewart" else "excavator.yaml")
    a = _run(bundles[name], ref, "kernel", integrator)
    b = _run(bundles[name], ref, "reference", integrator)
    ia, ib = a.summary["integration"], b.summary["integration"]
    assert ia["evaluator"] == "kernel" and ib["evaluator"] == "reference"
    assert ia["kernel_handbacks"] == 0  # every stage ran on the kernel
    assert ia["accepted_steps"] == ib["accepted_steps"]
    # the same algorithm in two implementations: per-stage agreement ~1e-13, carried by the
    # loop and by the step-size controller (h ∝ err^-1/5, continuous in err); measured
    # ≤ 3e-15 of the states' scale over 0.5 s on all three cases — 1e-12 leaves 300×
    _assert_same_run(a, b, name)
    assert a.summary["max_loop_gap"] <= 1e-12  # closed at every step (tolerance 1e-13)
    # the energy ledger closes on the kernel's powers as on the reference's
    assert abs(a.summary["energy_ledger_relative"]) <= 10 * max(
        abs(b.summary["energy_ledger_relative"]), 1e-11)


def _assert_same_run(a, b, name, tol=1e-12):
    for key in ("q", "v", "work_actuators", "work_passive"):
        scale = max(1.0, np.abs(b.log[key]).max())
        assert np.abs(a.log[key] - b.log[key]).max() <= tol * scale, (name, key)


def test_handed_back_stages_run_on_the_reference_and_reseed_the_kernel(bundles, monkeypatch):
    """Every third stage and projection handed back (as a singular lift or an unconverged
    corrector would be), and every second fused step: the step is redone stage by stage,
    the reference path evaluates the handed-back stages from the kernel's last closed
    configuration, the kernel restarts from its result, and the run is the reference run."""
    from rbc.kernels.evaluator import KernelStage

    calls = {"n": 0, "fused": 0}

    def flaky(real):
        def wrapped(self, *args):
            calls["n"] += 1
            return None if calls["n"] % 3 == 0 else real(self, *args)
        return wrapped

    def flaky_step(real):
        def wrapped(self, *args):
            calls["fused"] += 1
            return (0, None) if calls["fused"] % 2 == 0 else real(self, *args)
        return wrapped

    ref = REFERENCES / "stewart.csv"
    for integrator in ("dopri5", "rk4"):
        calls["n"] = calls["fused"] = 0
        b = _run(bundles["stewart"], ref, "reference", integrator)
        with monkeypatch.context() as m:
            m.setattr(KernelStage, "stage", flaky(KernelStage.stage))
            m.setattr(KernelStage, "project", flaky(KernelStage.project))
            m.setattr(KernelStage, "rk_step", flaky_step(KernelStage.rk_step))
            a = _run(bundles["stewart"], ref, "kernel", integrator)
        assert calls["fused"] >= a.summary["integration"]["accepted_steps"]
        assert a.summary["integration"]["kernel_handbacks"] == calls["n"] // 3 > 0
        _assert_same_run(a, b, "stewart")
        assert a.summary["max_loop_gap"] <= 1e-12


def test_tendon_ports_run_on_the_reference_evaluator(tmp_path_factory):
    """The kernel layout has joint ports only: a tendon port (the Panda's gripper) runs the
    reference evaluator, said in the report."""
    from rbc.model.compiled import CompiledModel
    from rbc.sim.backends.reduced import ReducedBackend
    from tests.backends.test_panda import _bundle

    model = CompiledModel.from_bundle(_bundle(tmp_path_factory.getbasetemp()))
    part = model.partitions["default"]
    plant = ReducedBackend(model, part, part.q_ref, np.zeros(model.nv), 1e-3)
    plant.advance(np.zeros(len(model.record.actuators)), 2)
    rep = plant.report()
    assert rep["evaluator"] == "reference" and "tendon" in rep["evaluator_note"]


def test_unknown_evaluator_is_refused(bundles):
    opts = SimOptions(backend="reduced", controller="pd", duration=0.01,
                      reference=REFERENCES / "stewart.csv", evaluator="fast")
    with pytest.raises(BackendError, match="valid: kernel, reference"):
        simulate(prepare(bundles["stewart"], opts))


def test_evaluator_is_refused_on_other_backends(bundles):
    from rbc.errors import UsageError

    opts = SimOptions(backend="mujoco", controller="pd", duration=0.01,
                      reference=REFERENCES / "stewart.csv", evaluator="reference")
    with pytest.raises(UsageError, match="--evaluator applies to the reduced backend"):
        prepare(bundles["stewart"], opts)

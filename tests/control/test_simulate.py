"""`rbc simulate --controller allocation` on a composed bundle (one humanoid on both soles,
the reduced plant): the run, its log and summary, the plant's recovered sole wrenches equal
to the ones the allocation expected, the error decaying, and the refusals."""

from __future__ import annotations

import json

import h5py
import numpy as np
import pytest

from tests.control.conftest import run


def test_holding_the_stance(solo_bundle, solo, tmp_path, capsys):
    """Started 0.02 rad off at the waist at rest, the error follows the law's closed loop
    (ė = −Λe + s, ṡ = −k_s s, C s aside, from s(0) = Λe₀:
    e = e₀(k_s e^{−Λt} − Λ e^{−k_s t})/(k_s − Λ)) and the plant's recovered sole wrenches
    are the ones the allocation expected (the plant is the nominal model: reduced, Coulomb
    kept)."""
    out_dir = tmp_path / "run"
    code, out, err = run(capsys, "simulate", solo_bundle, "--controller", "allocation",
                         "--duration", "0.04", "--control-dt", "0.002", "--set", "h/waist=0.02",
                         "--out", out_dir, "--json")
    assert code == 0, err
    for png in ("tracking.png", "efforts.png", "loop_gaps.png", "wrenches.png"):
        assert (out_dir / png).stat().st_size > 5000, png  # docs/cli.md: all four
    s = json.loads(out)["allocation"]
    assert s["steps"] == 20 and s["slack_max"] <= 1e-9 and s["min_normal"] >= 15.0 - 1e-9
    with h5py.File(out_dir / "log.h5") as f:
        e = f["allocation/tracking_error"][()]
        t = f["allocation/time"][()]
        expected = f["allocation/wrenches"][()]
        got = np.stack([f[f"supports/{n}/wrench"][()][:-1]
                        for n in solo.modes["stand"].supports], axis=1)
    lam, ks = 15.0, 45.0
    law = 0.02 * (ks * np.exp(-lam * t) - lam * np.exp(-ks * t)) / (ks - lam)
    # efforts held over each 2 ms control step (k_s Δt = 0.09): a few % of e₀
    assert abs(e[0] - 0.02) <= 1e-12 and np.abs(e - law).max() <= 0.05 * 0.02
    # the same model, state and efforts: the recovery's round-off (1e-9 relative)
    assert np.abs(got - expected).max() <= 1e-9 * np.abs(expected).max()


def test_refusals(solo_bundle, control_dir, capsys):
    code, _, err = run(capsys, "simulate", control_dir / "humanoid_v1.h5", "--controller",
                       "allocation", "--duration", "0.01", "--fix-root")
    assert code == 2 and "not a composed bundle" in err
    code, _, err = run(capsys, "simulate", solo_bundle, "--controller", "allocation",
                       "--duration", "0.01", "--bandwidth", "3")
    assert code == 2 and "no PD gains" in err


def test_one_scratch_data(solo_bundle, monkeypatch):
    """A reduced composed run under the allocation controller holds one DynamicsData (the
    controller's, shared by the plant, its tree probe and the wrench log) and gives the
    same log, bit for bit, as a run where each builds its own."""
    from rbc.compose import runlog
    from rbc.model import dynamics
    from rbc.sim import run as simrun
    from rbc.sim.backends import reduced

    opts = simrun.SimOptions(controller="allocation", duration=0.01, control_dt=0.002,
                             initial={"h/waist": 0.02})
    made = []
    real_of = dynamics.DynamicsData.of.__func__
    monkeypatch.setattr(dynamics.DynamicsData, "of",
                        classmethod(lambda cls, dm: made.append(dm) or real_of(cls, dm)))
    shared = simrun.simulate(simrun.prepare(solo_bundle, opts))
    assert len(made) == 1
    init_b, init_w = reduced.ReducedBackend.__init__, runlog.WrenchLog.__init__

    def own_b(self, *a, **kw):
        kw.pop("data", None)
        init_b(self, *a, **kw)

    monkeypatch.setattr(reduced.ReducedBackend, "__init__", own_b)
    monkeypatch.setattr(runlog.WrenchLog, "__init__",
                        lambda self, comp, md, plant, data=None: init_w(self, comp, md, plant))
    made.clear()
    own = simrun.simulate(simrun.prepare(solo_bundle, opts))
    assert len(made) == 3  # controller, plant, wrench log
    keys = [k for k in shared.log if k.endswith("/wrench")]
    assert keys
    for key in ("q", "v", "control/effort", "allocation/slack", *keys):
        assert np.array_equal(shared.log[key], own.log[key]), key


def test_memory_refusal(solo_bundle, tmp_path, capsys, monkeypatch):
    """A run whose Pinocchio scratch would not fit is refused before anything is built:
    exit 2, the estimate and the limit in the message, no output."""
    from rbc.compose.bundle import load
    from rbc.compose.runlog import run_memory

    comp = load(solo_bundle)
    kin = comp.model(comp.modes["stand"])
    need = run_memory(kin, "reduced", "allocation")["total"]
    monkeypatch.setenv("RBC_MEMORY_LIMIT", f"{0.5 * need / 1e9:.6f}")
    out = tmp_path / "run"
    code, _, err = run(capsys, "simulate", solo_bundle, "--controller", "allocation",
                       "--duration", "0.01", "--out", out)
    assert code == 2 and "needs about" in err and "GB are available" in err
    assert "Traceback" not in err and not out.exists()
    monkeypatch.setenv("RBC_MEMORY_LIMIT", "lots")
    code, _, err = run(capsys, "simulate", solo_bundle, "--controller", "allocation",
                       "--duration", "0.01")
    assert code == 2 and "RBC_MEMORY_LIMIT" in err
    # one DynamicsData: the controller's, which the reduced plant shares (the test above)
    tree, dd = run_memory(kin, "pinocchio", "passive")["total"], need
    assert tree < dd and run_memory(kin, "mujoco", "allocation")["total"] == dd
    assert run_memory(kin, "reduced", "passive")["total"] == dd
    assert run_memory(kin, "pinocchio", "allocation")["total"] == pytest.approx(dd + tree)
    assert run_memory(kin, "mujoco", "passive")["total"] == 0.0


def test_data_size_estimate():
    """The estimate of one Pinocchio Data against the memory createData touches on a
    150-joint revolute chain (32·150³ ≈ 108 MB): within 15 % (allocator granularity). Measured
    in a fresh interpreter: inside the whole suite's process other pages move meanwhile (a
    CI run read 162 MB)."""
    import subprocess
    import sys

    from rbc.compose.runlog import pinocchio_data_bytes

    code = (
        "import pinocchio as pin\n"
        "def rss():\n"
        "    with open('/proc/self/statm') as fh:\n"
        "        return int(fh.read().split()[1]) * 4096\n"
        "m = pin.Model()\n"
        "parent = 0\n"
        "for i in range(150):\n"
        "    parent = m.addJoint(parent, pin.JointModelRZ(), pin.SE3.Identity(), f'j{i}')\n"
        "    m.appendBodyToJoint(parent, pin.Inertia.Random(), pin.SE3.Identity())\n"
        "r0 = rss()\n"
        "d = m.createData()\n"
        "print(rss() - r0)\n"
    )
    used = int(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              check=True, timeout=120).stdout)
    assert abs(used - pinocchio_data_bytes(150)) <= 0.15 * pinocchio_data_bytes(150)

"""`rbc simulate --controller allocation` on a composed bundle (one humanoid on both soles,
the reduced plant): the run, its log and summary, the plant's recovered sole wrenches equal
to the ones the allocation expected, the error decaying, and the refusals."""

from __future__ import annotations

import json

import h5py
import numpy as np

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

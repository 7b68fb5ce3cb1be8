"""``rbc plan`` on the excavator's redundant bucket-tip task (issue 18 acceptance): the
self-motion lowers Φ monotonically, a moving target's error decays as e^{−K_x t}, and an
infeasible request exits 2 naming the bound or runs with reported slack under --relax slack."""

from __future__ import annotations

import functools
import json

import h5py
import numpy as np
import pytest

from rbc.cli.main import main
from rbc.model.compiled import CompiledModel
from rbc.model.dynamics import DynamicsModel
from rbc.sim.reference import load_knots, spline_reference
from rbc.tasks.charts import stack
from rbc.tasks.paths import minimum_jerk, waypoint_path
from rbc.tasks.plan import plan
from rbc.tasks.resolve import task_law
from tests.verify.conftest import compile_bundle


@functools.cache
def _excavator(tmp):
    path = compile_bundle(tmp, "excavator")
    model = CompiledModel.from_bundle(path)
    return path, DynamicsModel.build(model), model.partitions["default"]


@pytest.fixture
def excavator(tmp_path_factory):
    return _excavator(tmp_path_factory.getbasetemp())


def test_minimum_jerk_profile():
    assert minimum_jerk(0.0) == (0.0, 0.0) and minimum_jerk(1.0) == (1.0, 0.0)
    s, ds = minimum_jerk(0.5)
    assert s == pytest.approx(0.5) and ds == pytest.approx(1.875)


def test_stationary_task_self_motion_lowers_phi(excavator):
    """10 s at a stationary bucket-tip target: Φ non-increasing, the strokes move away from
    their limits, the tip stays put."""
    _, dm, part = excavator
    model = dm.kin
    ch = stack(model, ["bucket_tip"])
    x0 = ch.value(model, part.q_ref)
    law = task_law(ch, 2.0, k_phi=3000.0)
    res = plan(dm, part, law, waypoint_path(ch, x0, [], 10.0), part.q_ref, dt=0.02)
    assert res.time[-1] == pytest.approx(10.0)
    # non-increasing up to the round-off of Φ once the self-motion has converged (Φ ~ 1 is
    # a sum of three logs evaluated at configurations closed to 1e-13: ~1e-13 noise)
    assert np.max(np.diff(res.phi)) <= 1e-12
    assert res.phi[-1] < res.phi[0] - 0.1  # a visible improvement (measured 0.84 → 0.65)
    dist = np.minimum(res.strokes, 1.0 - res.strokes)  # normalised distance to a limit
    nearest = int(np.argmin(dist[0]))  # the boom cylinder, 19 % of its stroke from the end
    assert dist[-1, nearest] > dist[0, nearest] + 0.1  # measured 0.19 → 0.36
    assert dist[-1].min() > dist[0].min()
    assert np.abs(res.e).max() <= 1e-8  # m: the tip holds (RK4 drift of the redundancy)
    # (a speed bound is active at the start: Φ̇ ≤ 0 holds with bounds too, u = 0 is feasible)
    assert not res.relaxed.any()


def test_moving_target_error_decays_exponentially(excavator):
    """Start 5 cm off a moving target: e_x(t) = e_x(0) e^{−K_x t} per row within 1e-6
    relative while no bound is active."""
    _, dm, part = excavator
    model = dm.kin
    ch = stack(model, ["bucket_tip"])
    x0 = ch.value(model, part.q_ref)
    K = np.array([1.0, 1.5, 2.0])
    law = task_law(ch, K, k_phi=500.0)
    path = waypoint_path(ch, x0 + [0.05, -0.03, 0.04], [x0 + [0.4, 0.3, -0.2]], 3.0)
    res = plan(dm, part, law, path, part.q_ref, dt=0.01)
    assert not res.active.any()
    e0 = res.e[0]
    expected = e0[None, :] * np.exp(-K[None, :] * res.time[:, None])
    rel = np.abs(res.e - expected).max() / np.abs(e0).max()
    assert rel <= 1e-6, rel


def _cli(args, capsys) -> tuple[int, str, str]:
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_plan_writes_a_reference_simulate_accepts(excavator, tmp_path, capsys):
    bundle, dm, part = excavator
    model = dm.kin
    x0 = stack(model, ["bucket_tip"]).value(model, part.q_ref)
    target = ",".join(repr(float(v)) for v in x0 + [0.3, 0.2, 0.1])
    out = tmp_path / "plan"
    code, text, err = _cli(["plan", str(bundle), "--task", "bucket_tip", "--to", target,
                            "--duration", "2", "--stroke-preference", "1000", "--out", str(out),
                            "--json"], capsys)
    assert code == 0, err
    s = json.loads(text)
    assert s["error_max"] < 1e-8 and s["relaxed_steps"] == 0
    for name in ("reference.csv", "log.h5", "summary.json", "plan.png"):
        assert (out / name).is_file()
    knots = load_knots(out / "reference.csv")
    assert knots.time[-1] == pytest.approx(2.0) and set(knots.names) == set(s["independent"])
    spline_reference(model, part, knots)  # names, limits: what rbc simulate checks first
    with h5py.File(out / "log.h5") as h5:
        assert h5["e"].shape == (201, 3) and list(h5.attrs["rows"]) == [
            "bucket_tip.x", "bucket_tip.y", "bucket_tip.z"]
        np.testing.assert_allclose(h5["value"][-1], x0 + [0.3, 0.2, 0.1], atol=1e-8)


def test_cli_infeasible_target_exits_2_naming_the_bound(excavator, tmp_path, capsys):
    bundle, *_ = excavator
    out = tmp_path / "far"
    args = ["plan", str(bundle), "--task", "bucket_tip", "--to", "12,0,1.5", "--duration", "5",
            "--out", str(out)]
    code, _, err = _cli(args, capsys)
    assert code == 2
    assert "cannot be met: blocked by speed of" in err and "--relax slack" in err
    assert not out.exists()  # nothing written
    code, text, err = _cli([*args, "--relax", "slack", "--json"], capsys)
    assert code == 0, err
    s = json.loads(text)
    assert s["relaxed_steps"] > 0 and s["slack_max"] > 0.1 and s["bounds_active"]


def test_cli_tight_speed_bounds_exit_2(excavator, tmp_path, capsys):
    bundle, dm, part = excavator
    x0 = stack(dm.kin, ["bucket_tip"]).value(dm.kin, part.q_ref)
    target = ",".join(f"{v:.4f}" for v in x0 + [0.5, 0.5, 0.4])
    code, _, err = _cli(["plan", str(bundle), "--task", "bucket_tip", "--to", target,
                         "--duration", "2", "--speed-scale", "0.05", "--out",
                         str(tmp_path / "slow")], capsys)
    assert code == 2 and "speed of" in err and "|ℓ̇| ≤" in err


@pytest.mark.parametrize(("args", "message"), [
    (["--task", "bucket_tip", "--to", "1,2"], "takes 3 numbers"),
    (["--task", "bucket", "--to", "1,2,3"], "did you mean 'bucket_tip'"),
    (["--task", "bucket_tip", "--kx", "1,2"], "2 gains for the 3 rows"),
    (["--task", "bucket_tip", "--kx", "-1"], "must be positive"),
    (["--task", "bucket_tip", "--relax", "soft"], "valid: none, slack"),
    (["--task", "bucket_tip", "--to", "a,b,c"], "comma-separated finite numbers"),
])
def test_cli_bad_requests_exit_2(excavator, tmp_path, capsys, args, message):
    bundle, *_ = excavator
    code, _, err = _cli(["plan", str(bundle), *args, "--duration", "1", "--out",
                         str(tmp_path / "x")], capsys)
    assert code == 2 and message in err, err
    assert not (tmp_path / "x").exists()

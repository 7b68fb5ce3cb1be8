"""``rbc bench simulate``: per-backend loop times consistent with the run, peer ratios, JSON,
the table, and exit status 2 (with the valid choices) on a bad request."""

from __future__ import annotations

import json

import pytest

from rbc.bench.simulate import bench_simulate, parse_backends, peer_of
from rbc.cli.main import main
from rbc.compiler import compile_to_file
from rbc.errors import UsageError
from rbc.sim.backends import BackendError
from tests.conftest import RECORDS

FOURBAR_REF = RECORDS.parent / "tests" / "sim" / "fourbar_swing.csv"
STEWART_REF = RECORDS / "references" / "stewart.csv"
ROW_KEYS = {"prepare_s", "wall_s", "outside_loop_s", "kernel_load_s", "duration_s",
            "real_time_factor",
            "physics_steps", "us_per_step", "ratio_to_peer", "tracking_rms", "port_rms",
            "max_loop_gap"}


@pytest.fixture(scope="module")
def bundles(tmp_path_factory):
    out = tmp_path_factory.mktemp("bench_sim")
    paths = {}
    for name in ("fourbar", "stewart"):
        paths[name] = out / f"{name}.h5"
        compile_to_file(RECORDS / f"{name}.yaml", paths[name])
    return paths


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def check_row(row, duration, dt, kernels=False):
    assert set(row) == ROW_KEYS
    # the kernels' first call is timed apart, outside the loop (None: no kernels)
    if kernels:
        assert 0 < row["kernel_load_s"] <= row["outside_loop_s"]
    else:
        assert row["kernel_load_s"] is None
    assert row["duration_s"] == pytest.approx(duration)
    # fixed-step engines take one step per dt; the reduced backend's adaptive default
    # (dopri5) at least one per control period, more where its error control asks
    assert row["physics_steps"] >= round(duration / dt)
    assert row["wall_s"] > 0 and row["prepare_s"] > 0 and row["outside_loop_s"] >= 0
    # the RTF excludes prepare: simulated time over the control loop's wall time only
    assert row["real_time_factor"] == pytest.approx(duration / row["wall_s"], rel=1e-12)
    assert row["us_per_step"] == pytest.approx(1e6 * row["wall_s"] / row["physics_steps"],
                                               rel=1e-12)


def test_all_backends_on_stewart(bundles):
    duration, dt = 0.02, 1e-3
    r = bench_simulate(bundles["stewart"], STEWART_REF, duration=duration, dt=dt)
    assert r["robot"] == "stewart" and r["controller"] == "pd+ff" and r["peer"] == "mujoco"
    assert list(r["backends"]) == ["reduced", "mujoco", "pinocchio"]  # run order kept
    peer_wall = r["backends"]["mujoco"]["wall_s"]
    for name, row in r["backends"].items():
        check_row(row, duration, dt, kernels=name == "reduced")
        assert row["ratio_to_peer"] == pytest.approx(row["wall_s"] / peer_wall, rel=1e-12)
        # every backend tracks the platform (20 ms of a slow reference: well below 1 µm)
        assert set(row["tracking_rms"]) == {"platform"}
        assert 0 <= row["tracking_rms"]["platform"] < 1e-6
        assert set(row["port_rms"]) == {f"act_{i}" for i in range(1, 7)}
        assert row["max_loop_gap"] < 1e-5
    assert r["backends"]["mujoco"]["ratio_to_peer"] == 1.0


def test_json_peer_is_the_first_backend_without_mujoco(bundles, capsys):
    code, out, err = run(capsys, "bench", "simulate", bundles["fourbar"], "--reference",
                         FOURBAR_REF, "--duration", "0.02", "--dt", "0.002", "--backends",
                         "pinocchio,reduced", "--json")
    assert code == 0 and "Traceback" not in err
    r = json.loads(out)
    assert r["peer"] == "pinocchio" and list(r["backends"]) == ["pinocchio", "reduced"]
    assert r["duration"] == 0.02 and r["dt"] == 0.002
    for name, row in r["backends"].items():
        check_row(row, 0.02, 0.002, kernels=name == "reduced")
        assert row["tracking_rms"] == {} and set(row["port_rms"]) == {"motor_A"}
    assert r["backends"]["pinocchio"]["ratio_to_peer"] == 1.0


def test_table(bundles, capsys):
    code, out, _ = run(capsys, "bench", "simulate", bundles["fourbar"], "--reference",
                       FOURBAR_REF, "--duration", "0.01", "--backends", "reduced,mujoco")
    assert code == 0
    for text in ("reduced", "mujoco", "peer: mujoco", "prepare [s] (not in RTF)",
                 "control loop wall [s]", "real-time factor", "physics steps",
                 "µs per physics step", "wall / mujoco", "max port RMS",
                 "kernel load [s] (not in RTF)"):
        assert text in out, text


def test_fix_root_reaches_every_request(bundles, capsys, monkeypatch):
    """--fix-root (an imported Cassie's pelvis welded, docs/simulate.md) goes into every
    backend's request, as `rbc simulate --fix-root`."""
    import rbc.bench.simulate as bench

    seen = []
    real = bench.prepare

    def spy(bundle, opts, progress=None):
        seen.append((opts.backend, opts.fix_root))
        return real(bundle, opts, progress)

    monkeypatch.setattr(bench, "prepare", spy)
    code, _, err = run(capsys, "bench", "simulate", bundles["fourbar"], "--reference",
                       FOURBAR_REF, "--duration", "0.004", "--backends", "reduced,mujoco",
                       "--fix-root", "--json")
    assert code == 0, err
    assert seen == [("reduced", True), ("mujoco", True)]


@pytest.mark.parametrize(("args", "message"), [
    (("--backends", "reduced,bullet"),
     "unknown backend 'bullet'; valid: reduced, mujoco, pinocchio"),
    (("--backends", "mujoc"), "did you mean 'mujoco'"),
    (("--backends", ","), "valid: reduced, mujoco, pinocchio"),
    (("--backends", "mujoco,mujoco"), "mujoco listed more than once"),
    (("--controller", "pid"), "unknown controller 'pid'; valid: pd, pd+ff, passive"),
    (("--duration", "0"), "--duration 0: expected a finite number > 0"),
    (("--dt", "-0.001"), "--dt -0.001: expected a finite number > 0"),
])
def test_bad_requests_exit_2(bundles, capsys, args, message):
    code, out, err = run(capsys, "bench", "simulate", bundles["fourbar"], "--reference",
                         FOURBAR_REF, "--duration", "0.01", *args)
    assert code == 2 and out == ""
    assert message in err and "Traceback" not in err


def test_reference_is_required(bundles, capsys):
    code, out, err = run(capsys, "bench", "simulate", bundles["fourbar"])
    assert code == 2 and out == "" and "--reference" in err


def test_parse_backends_and_peer():
    assert parse_backends(" mujoco , reduced ") == ["mujoco", "reduced"]
    with pytest.raises(BackendError, match="valid: reduced, mujoco, pinocchio"):
        parse_backends("reduced,ode")
    with pytest.raises(UsageError):
        parse_backends("")
    assert peer_of(["reduced", "mujoco"]) == "mujoco"
    assert peer_of(["reduced", "pinocchio"]) == "reduced"

"""The Dask batch helper (``rbc.batch``): order, failures with their inputs, seeds, progress,
scheduler selection, and bit-identical Monte Carlo results on a local cluster and on an
explicitly started ``dask scheduler`` with two ``dask worker`` processes."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import time
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pytest

from rbc import batch
from rbc.batch import (
    SYNCHRONOUS,
    BatchError,
    SchedulerError,
    StderrProgress,
    run_bag,
    scheduler_address,
    task_rng,
)


def _draw(x: tuple[int, int]) -> list[float]:
    """A task: three normal draws of task ``x[1]`` under seed ``x[0]``; index 3 fails."""
    seed, index = x
    if index == 3:
        raise ValueError(f"index {index} is refused")
    return task_rng(seed, index).normal(size=3).tolist()


def test_task_rng_depends_only_on_seed_and_index():
    a = task_rng(5, 7).normal(size=4)
    assert np.array_equal(a, task_rng(5, 7).normal(size=4))
    assert not np.array_equal(a, task_rng(5, 6).normal(size=4))
    assert not np.array_equal(a, task_rng(6, 7).normal(size=4))
    child = np.random.SeedSequence(5).spawn(8)[7]  # child 7 of the seed's sequence
    assert np.array_equal(a, np.random.default_rng(child).normal(size=4))
    task_rng(5, 10**9)  # O(1) in the index


def test_synchronous_bag_keeps_order_and_reports_failures_with_inputs():
    inputs = [(11, i) for i in range(6)]
    res = run_bag(_draw, inputs, label="draws", scheduler=SYNCHRONOUS,
                  progress=lambda *_: None)
    assert [v is None for v in res.values] == [False, False, False, True, False, False]
    assert res.values[0] == task_rng(11, 0).normal(size=3).tolist()
    (fail,) = res.failures
    assert (fail.index, fail.inputs) == (3, (11, 3))
    assert fail.error == "ValueError: index 3 is refused"
    assert "raise ValueError" in fail.traceback
    with pytest.raises(BatchError, match=r"draws: 1 of 6 tasks failed: task 3 \(input \(11, 3\)\)"):
        res.raise_for_failures()
    assert BatchError("x", res.failures, 6).exit_code == 1


def test_scheduler_address_precedence(monkeypatch):
    monkeypatch.delenv(batch.ENV_SCHEDULER, raising=False)
    assert scheduler_address(None) is None
    monkeypatch.setenv(batch.ENV_SCHEDULER, "tcp://10.0.0.1:8786")
    assert scheduler_address(None) == "tcp://10.0.0.1:8786"
    assert scheduler_address(" tcp://h:1 ") == "tcp://h:1"
    monkeypatch.setenv(batch.ENV_SCHEDULER, "  ")
    assert scheduler_address("") is None


def test_unreachable_scheduler_is_a_usage_error(monkeypatch):
    monkeypatch.setattr(batch, "CONNECT_TIMEOUT", 1.0)
    with pytest.raises(SchedulerError, match="cannot reach the Dask scheduler at "
                                             "'tcp://127.0.0.1:9'"):
        run_bag(_draw, [(1, 0)], scheduler="tcp://127.0.0.1:9", progress=lambda *_: None)


def test_progress_lines_in_a_log():
    out = io.StringIO()
    p = StderrProgress("bag", out)
    for done in range(0, 21):
        p(done, 20, 1 if done > 4 else 0)
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("bag: 0/20 tasks")
    assert lines[-1].startswith("bag: 20/20 tasks, 1 failed")
    assert len(lines) == 11  # one per tenth, not one per task


def test_local_cluster_matches_synchronous():
    inputs = [(20260927, i) for i in range(6)]
    local = run_bag(_draw, inputs, workers=2, progress=lambda *_: None)
    sync = run_bag(_draw, inputs, scheduler=SYNCHRONOUS, progress=lambda *_: None)
    assert local.scheduler == "local cluster (2 workers)"
    assert local.values == sync.values
    assert [(f.index, f.inputs, f.error) for f in local.failures] == [
        (3, (20260927, 3), "ValueError: index 3 is refused")]


# --------------------------------------------------- explicitly started scheduler + 2 workers


def _wait_for(path: Path, timeout: float) -> dict:
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if path.exists() and path.stat().st_size:
            try:
                return json.loads(path.read_text())
            except json.JSONDecodeError:
                pass
        time.sleep(0.2)
    raise TimeoutError(f"{path} was not written within {timeout} s")


@pytest.fixture
def dask_cluster(tmp_path):
    """``dask scheduler`` and two ``dask worker`` processes (one single-threaded worker
    each), all started here; yields the scheduler address and stops them afterwards."""
    dask = str(Path(sys.executable).parent / "dask")
    file = tmp_path / "scheduler.json"
    procs = [subprocess.Popen([dask, "scheduler", "--host", "127.0.0.1", "--port", "0",
                               "--no-dashboard", "--scheduler-file", str(file)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    try:
        address = _wait_for(file, 60)["address"]
        for _ in range(2):
            procs.append(subprocess.Popen([dask, "worker", address, "--nworkers", "1",
                                           "--nthreads", "1", "--no-dashboard"],
                                          stdout=subprocess.DEVNULL,
                                          stderr=subprocess.DEVNULL))
        from distributed import Client

        with Client(address, timeout=30) as c:
            c.wait_for_workers(2, timeout=120)
        yield address
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()


@pytest.mark.slow
def test_monte_carlo_identical_on_local_and_external_cluster(dask_cluster, monkeypatch):
    """The walkers' Monte Carlo jobs (seeded plant mismatch, ice, trips; 2 samples × 2
    controllers × 3 strides) give the same rows, bit for bit, on the default local cluster
    and on the external one (selected through ``RBC_DASK_SCHEDULER``)."""
    from rbc.walkers.evaluation.batch import BatchConfig, jobs_of, run_job

    jobs = jobs_of(BatchConfig(samples=2, strides=3, seed=20260927,
                               controllers=("fl", "adaptive")))
    quiet = {"progress": lambda *_: None}
    monkeypatch.delenv(batch.ENV_SCHEDULER, raising=False)
    local = run_bag(run_job, jobs, label="mc", **quiet).raise_for_failures()
    monkeypatch.setenv(batch.ENV_SCHEDULER, dask_cluster)
    external = run_bag(run_job, jobs, label="mc", **quiet).raise_for_failures()
    assert local.scheduler.startswith("local cluster")
    assert external.scheduler == dask_cluster

    def rows(res):  # everything but the wall-clock field
        return [{k: v for k, v in r.items() if k != "wall_time"} for r in res.values]

    assert rows(local) == rows(external)
    assert len(rows(local)) == 4 and all(r["strides_completed"] > 0 for r in rows(local))
    # the config is part of every job input, so a failure would name sample and controller
    assert jobs[0][0] == asdict(BatchConfig(samples=2, strides=3, seed=20260927,
                                            controllers=("fl", "adaptive")))

"""Running reproduction targets: the context a target gets, the outcome it returns, and
the loop behind ``rbc repro`` (docs/repro.md).

A target's ``run(ctx)`` reads ``ctx.quick`` (the small case list of ``make repro-quick``)
and ``ctx.seed``, sends its bags of independent cases through :meth:`Context.bag` (one
Dask cluster is shared by all targets of a run; failed cases are collected, not lost),
writes its plots into ``ctx.out`` and returns an :class:`~rbc.repro.outcome.Outcome`.
:func:`run_targets` times each target, turns its checks and failures into a status, and
has :mod:`rbc.repro.report` write the target's directory (all or nothing, through
:func:`rbc.safeio.atomic_directory`: an interrupted run leaves the previous one in place, and
a directory rbc did not write is never replaced) and the index.

Status: ``pass`` (every check passed, no case failed), ``fail`` (a check failed or cases
failed; the report lists them with their inputs) or ``error`` (the target raised; the
report holds the traceback).
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rbc.batch import Cluster, Progress, StderrProgress, TaskFailure, cluster, run_bag
from rbc.errors import UsageError
from rbc.repro import report
from rbc.repro.outcome import TargetRun, status_of
from rbc.repro.registry import select, target_module
from rbc.safeio import atomic_directory, check_replaceable
from rbc.verify.checks import DEFAULT_SEED


@dataclass
class Context:
    """What a target runs with (module docstring).

    Attributes:
        name: the target; quick: small case list; out: its output directory (write plots
        here); cluster: the open Dask cluster; seed: root seed (default 20260927);
        failures: ``(bag label, TaskFailure)`` of every failed case so far;
        progress: factory of a bag's progress callback from its label.
    """

    name: str
    quick: bool
    out: Path
    cluster: Cluster
    seed: int = DEFAULT_SEED
    failures: list[tuple[str, TaskFailure]] = field(default_factory=list)
    progress: Callable[[str], Progress] = StderrProgress

    def bag(self, fn: Callable[[Any], Any], inputs: Sequence[Any], label: str) -> list[Any]:
        """``fn`` over ``inputs`` on the shared cluster (:func:`rbc.batch.run_bag`): the
        results in input order, None where a case failed (recorded in :attr:`failures`)."""
        full = f"{self.name}: {label}"
        res = run_bag(fn, inputs, label=full, client=self.cluster,
                      progress=self.progress(full))
        self.failures.extend((label, f) for f in res.failures)
        return res.values

    def file(self, name: str) -> Path:
        """A path in the target's output directory."""
        return self.out / name


def run_target(name: str, out_root: Path, cl: Cluster, quick: bool, seed: int,
               progress: Callable[[str], Progress] = StderrProgress) -> TargetRun:
    """Run one target into ``out_root/name`` (replacing the previous run's directory only
    once the new one is complete, :func:`rbc.safeio.atomic_directory`) and return its
    :class:`TargetRun`.

    Raises:
        UsageError: ``out_root/name`` exists and was not written by rbc.
    """
    module = target_module(name)
    report.load_published(name)  # a malformed table fails before anything runs
    with atomic_directory(out_root / name, "--out") as tmp:
        ctx = Context(name, quick, tmp, cl, seed, progress=progress)
        t0 = time.perf_counter()
        outcome, error = None, ""
        try:
            outcome = module.run(ctx)
        except Exception:  # noqa: BLE001 - recorded in the report; the other targets still run
            error = traceback.format_exc()
        run = TargetRun(name, module.TITLE, status_of(outcome, ctx.failures, error),
                        time.perf_counter() - t0, outcome, ctx.failures, error)
        report.write_target(tmp, run, quick=quick, seed=seed, scheduler=cl.description)
    return run


def check_output_root(root: Path, names: Sequence[str]) -> None:
    """Refuse an output root rbc may not write into, before any target runs.

    Raises:
        UsageError: ``root`` exists and is not a directory; a target's directory exists and
            was not written by rbc (:func:`rbc.safeio.check_replaceable`); or ``root`` holds
            an ``index.md`` without rbc's ``index.json`` beside it (someone else's file);
            or ``root`` is a non-empty directory without that ``index.json`` (a folder of
            inputs, such as ``records/``).
    """
    if root.is_symlink() or (root.exists() and not root.is_dir()):
        raise UsageError(f"--out {root}: exists and is not a directory; give a directory path")
    if (root / "index.md").exists() and not (root / "index.json").is_file():
        raise UsageError(f"--out {root}: holds an index.md rbc did not write; give a new "
                         "directory or rbc's earlier repro output")
    for name in names:
        check_replaceable(root / name, "--out")
    if root.is_dir() and not (root / "index.json").is_file() and any(root.iterdir()):
        raise UsageError(f"--out {root}: holds files not written by rbc (no index.json of an "
                         "earlier rbc repro); give a new or empty directory")


def run_targets(names: Sequence[str], out_root: str | Path, *, quick: bool = False,
                seed: int = DEFAULT_SEED, scheduler: str | None = None,
                workers: int | None = None,
                progress: Callable[[str], Progress] = StderrProgress,
                on_done: Callable[[TargetRun], None] | None = None) -> list[TargetRun]:
    """Run the named targets (all for an empty list) on one Dask cluster, write their
    directories and update ``out_root/index.md``.

    Raises:
        UsageError: an unknown target or bad ``workers``. SchedulerError: the scheduler
            does not answer. (Failures inside targets are statuses, not exceptions.)
    """
    chosen = select(list(names))
    root = Path(out_root)
    check_output_root(root, chosen)
    runs = []
    with cluster(scheduler, workers) as cl:  # nothing is created when it cannot connect
        root.mkdir(parents=True, exist_ok=True)
        for name in chosen:
            run = run_target(name, root, cl, quick, seed, progress)
            report.update_index(root, run, quick=quick)
            runs.append(run)
            if on_done is not None:
                on_done(run)
    return runs

"""Bags of independent runs on Dask (DESIGN.md §14): Monte Carlo samples, parameter sweeps,
per-state reference solves, the reproduction targets' case lists.

One function, :func:`run_bag`, maps a module-level function over a list of inputs and
returns the results **in input order**, whatever ran where and when:

* **Where.** ``scheduler=None`` (and no ``RBC_DASK_SCHEDULER`` in the environment) starts a
  ``dask.distributed.LocalCluster`` sized to this machine — one single-threaded worker
  process per usable core (:func:`default_workers`) — and closes it afterwards. An address
  (``tcp://host:8786``, from ``--scheduler ADDRESS`` or ``RBC_DASK_SCHEDULER``) uses an
  existing cluster (``dask-scheduler`` plus ``dask-worker`` processes, which must import
  the same rbc). ``"synchronous"`` runs every task in this process, one after another (for
  debugging and for one-worker runs). :func:`cluster` opens one client for several bags.
* **Same bits either way.** A task's result depends only on its input: every task runs
  with single-threaded BLAS (:func:`rbc.sim.threads.limit_blas_threads`, so no thread count
  changes a summation order) and draws its random numbers from :func:`task_rng`, child
  ``index`` of ``SeedSequence(seed)`` — independent of the number of tasks and of the
  process that runs it.
* **Nothing is lost.** An exception inside a task does not stop the bag: it becomes a
  :class:`TaskFailure` holding the task's index, its input, the exception and its
  traceback; the other tasks still run. A worker that dies is reported the same way.
  :meth:`BagResult.raise_for_failures` turns failures into a :class:`BatchError` that lists
  them with their inputs.
* **Progress.** ``progress(done, total, failed)`` is called as tasks finish; the default
  (:class:`StderrProgress`) writes a status line to stderr — redrawn in place on a
  terminal, every tenth of the bag in a log.

Dask documentation: https://distributed.dask.org/ (``Client.map``, ``as_completed``,
``LocalCluster``).
"""

from __future__ import annotations

import os
import sys
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TextIO

import numpy as np

from rbc.errors import RbcError

#: Environment variable naming the scheduler address (``--scheduler`` takes precedence).
ENV_SCHEDULER = "RBC_DASK_SCHEDULER"
#: Scheduler value that runs every task in the calling process, in input order.
SYNCHRONOUS = "synchronous"
#: Seconds to wait for an existing scheduler to answer before giving up.
CONNECT_TIMEOUT = 10.0

Progress = Callable[[int, int, int], None]


class SchedulerError(RbcError):
    """The Dask scheduler named by ``--scheduler``/``RBC_DASK_SCHEDULER`` cannot be reached
    (exit status 2: a bad address is a usage error)."""


class BatchError(RbcError):
    """Tasks of a bag failed; the message lists them with their inputs (exit status 1)."""

    exit_code = 1

    def __init__(self, label: str, failures: Sequence[TaskFailure], total: int) -> None:
        self.failures = tuple(failures)
        shown = "; ".join(f.describe() for f in self.failures[:5])
        more = f"; … and {len(self.failures) - 5} more" if len(self.failures) > 5 else ""
        super().__init__(f"{label}: {len(self.failures)} of {total} tasks failed: "
                         f"{shown}{more}")


@dataclass(frozen=True)
class TaskFailure:
    """One task that raised (or whose worker died).

    Attributes:
        index: position of the task's input in the bag; inputs: that input;
        error: ``"ExceptionType: message"``; traceback: the formatted traceback (from the
        worker), or "" when the worker itself was lost.
    """

    index: int
    inputs: Any
    error: str
    traceback: str = ""

    def describe(self) -> str:
        """One line: the task, its input (shortened) and the error."""
        text = repr(self.inputs)
        text = text if len(text) <= 200 else text[:197] + "..."
        return f"task {self.index} (input {text}): {self.error}"


@dataclass(frozen=True)
class BagResult:
    """The outcome of a bag, in input order.

    Attributes:
        values: one entry per input: the task's return value, or None where it failed.
        failures: the failed tasks (see :class:`TaskFailure`), by index.
        wall_time: seconds from the first submission to the last result.
        scheduler: where it ran (``"local cluster (2 workers)"``, an address, or
        ``"synchronous"``).
    """

    label: str
    values: list[Any]
    failures: tuple[TaskFailure, ...]
    wall_time: float
    scheduler: str

    @property
    def ok(self) -> bool:
        """True when no task failed."""
        return not self.failures

    def raise_for_failures(self) -> BagResult:
        """Return self, or raise :class:`BatchError` listing the failed tasks."""
        if self.failures:
            raise BatchError(self.label, self.failures, len(self.values))
        return self


def task_rng(seed: int, index: int) -> np.random.Generator:
    """Generator of task ``index``: child ``index`` of ``numpy.random.SeedSequence(seed)``.

    The draws depend only on ``(seed, index)``: not on how many tasks the bag has, nor on
    the process or machine that runs the task.
    """
    # the child's spawn key directly: equal to SeedSequence(seed).spawn(index + 1)[index],
    # without creating the index earlier children
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(index,)))


def default_workers() -> int:
    """Worker processes of the default local cluster: the cores this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def scheduler_address(option: str | None = None) -> str | None:
    """The scheduler to use: ``option`` (``--scheduler``), else ``$RBC_DASK_SCHEDULER``,
    else None (a local cluster). Empty strings count as not given."""
    for value in (option, os.environ.get(ENV_SCHEDULER)):
        if value is not None and value.strip():
            return value.strip()
    return None


#: Most worker processes of a local cluster (a mistyped ``--workers 1000000`` would
#: otherwise fork until the machine stops).
MAX_LOCAL_WORKERS = 256


@dataclass
class Cluster:
    """An open Dask client (or none, for synchronous runs) and what it is."""

    client: Any
    description: str
    _owned: list = field(default_factory=list, repr=False)


@contextmanager
def cluster(scheduler: str | None = None, workers: int | None = None) -> Iterator[Cluster]:
    """Open the cluster :func:`run_bag` would use, for several bags in a row.

    Args:
        scheduler: an address, ``"synchronous"``, or None (see :func:`scheduler_address`).
        workers: worker processes of a local cluster (default :func:`default_workers`);
            ignored for an existing cluster.

    Raises:
        SchedulerError: the address does not answer within :data:`CONNECT_TIMEOUT` s.
        UsageError: ``workers`` outside 1..:data:`MAX_LOCAL_WORKERS`.
    """
    from rbc.errors import UsageError

    if workers is not None and not 1 <= workers <= MAX_LOCAL_WORKERS:
        raise UsageError(f"--workers {workers}: expected 1 to {MAX_LOCAL_WORKERS} worker "
                         "processes")
    address = scheduler_address(scheduler)
    if address == SYNCHRONOUS:
        yield Cluster(None, SYNCHRONOUS)
        return
    import logging

    from distributed import Client, LocalCluster

    if address is None:
        n = workers or default_workers()
        # no dashboard; the scheduler's HTTP endpoints (health, metrics) on a free port, so
        # that several clusters on one machine do not fight over the default 8787
        local = LocalCluster(n_workers=n, threads_per_worker=1, processes=True,
                             dashboard_address=None, silence_logs=logging.ERROR,
                             scheduler_kwargs={"dashboard_address": "127.0.0.1:0"})
        try:
            with Client(local) as client:
                yield Cluster(client, f"local cluster ({n} worker{'s' * (n != 1)})")
        finally:
            local.close()
        return
    try:
        client = Client(address, timeout=CONNECT_TIMEOUT)
    except (OSError, TimeoutError, ValueError) as err:
        raise SchedulerError(f"cannot reach the Dask scheduler at '{address}' (from "
                             f"--scheduler or ${ENV_SCHEDULER}): {err}") from err
    with client:
        yield Cluster(client, address)


def _call(fn: Callable[[Any], Any], index: int, x: Any) -> tuple[str, Any, str]:
    """Run one task: ``("ok", value, "")`` or ``("error", "Type: message", traceback)``."""
    from rbc.sim.threads import limit_blas_threads

    limit_blas_threads(1)
    try:
        return "ok", fn(x), ""
    except Exception as err:  # noqa: BLE001 - every failure is reported with its input
        return "error", f"{type(err).__name__}: {err}", traceback.format_exc()


class StderrProgress:
    """``label: done/total tasks (failed), elapsed`` on a stream (default stderr).

    On a terminal the line is redrawn in place; otherwise one line is written per tenth of
    the bag (and at the end), so a log stays short.
    """

    def __init__(self, label: str, stream: TextIO | None = None) -> None:
        self.label = label
        self.stream = stream if stream is not None else sys.stderr
        self.t0 = time.perf_counter()
        self.last_decile = -1

    def __call__(self, done: int, total: int, failed: int) -> None:
        tty = getattr(self.stream, "isatty", lambda: False)()
        decile = (10 * done) // max(total, 1)
        if not tty and decile == self.last_decile and done < total:
            return
        self.last_decile = decile
        bad = f", {failed} failed" if failed else ""
        line = (f"{self.label}: {done}/{total} tasks{bad}, "
                f"{time.perf_counter() - self.t0:.0f} s")
        end = "\n" if (done >= total or not tty) else ""
        self.stream.write(("\r" + line + "\x1b[K" if tty else line) + end)
        self.stream.flush()


def run_bag(fn: Callable[[Any], Any], inputs: Sequence[Any], *, label: str = "batch",
            scheduler: str | None = None, workers: int | None = None,
            client: Cluster | None = None, progress: Progress | None = None) -> BagResult:
    """Run ``fn(x)`` for every x of ``inputs`` (module docstring) and collect the results.

    Args:
        fn: a module-level function (it is pickled by reference to the workers) whose
            result depends only on its argument (seeds inside the input: :func:`task_rng`).
        inputs: picklable task inputs.
        label: name of the bag in progress lines and error messages.
        scheduler, workers: as :func:`cluster` (ignored when ``client`` is given).
        client: an open :func:`cluster` to run on.
        progress: ``progress(done, total, failed)``; default :class:`StderrProgress`.

    Returns:
        :class:`BagResult` (``values`` in input order; failed tasks are None there and are
        listed in ``failures``).

    Raises:
        SchedulerError, UsageError: as :func:`cluster`. Task errors are *not* raised
        (call :meth:`BagResult.raise_for_failures`).
    """
    items = list(inputs)
    if client is None:
        with cluster(scheduler, workers) as opened:
            return run_bag(fn, items, label=label, client=opened, progress=progress)
    report = progress if progress is not None else StderrProgress(label)
    n = len(items)
    values: list[Any] = [None] * n
    failures: list[TaskFailure] = []
    t0 = time.perf_counter()

    def collect(i: int, outcome: tuple[str, Any, str]) -> None:
        status, value, tb = outcome
        if status == "ok":
            values[i] = value
        else:
            failures.append(TaskFailure(i, items[i], value, tb))
        report(i_done[0], n, len(failures))

    i_done = [0]
    report(0, n, 0)
    if client.client is None:  # synchronous
        for i, x in enumerate(items):
            i_done[0] += 1
            collect(i, _call(fn, i, x))
    elif n:
        from distributed import as_completed

        futures = client.client.map(_call, [fn] * n, range(n), items, pure=False)
        where = {f.key: i for i, f in enumerate(futures)}
        try:
            for fut in as_completed(futures):
                i = where[fut.key]
                i_done[0] += 1
                try:
                    outcome = fut.result()
                except Exception as err:  # noqa: BLE001 - a lost worker, an unpicklable value
                    outcome = ("error", f"{type(err).__name__}: {err}", "")
                collect(i, outcome)
        finally:
            client.client.cancel(futures)
    return BagResult(label, values, tuple(sorted(failures, key=lambda f: f.index)),
                     time.perf_counter() - t0, client.description)

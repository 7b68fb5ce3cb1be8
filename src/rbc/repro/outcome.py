"""What a reproduction target returns (:class:`Outcome`) and how a run of it ended
(:class:`TargetRun`, :func:`status_of`); shared by :mod:`.harness` and :mod:`.report`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from rbc.batch import TaskFailure
from rbc.verify.checks import Check


@dataclass(frozen=True)
class Table:
    """An extra table of a report: a title, column names, rows of formatted cells, a note."""

    title: str
    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    note: str = ""


@dataclass
class Outcome:
    """What a target computed.

    Attributes:
        figures: ours, keyed as in ``published/<target>.yaml`` (None: not computed).
        key_figures: one line for the index (``"rbc max δ_a 1.6e-14; MuJoCo 4.1e-3"``).
        setup: one paragraph on what differs from the paper's setup.
        tables: further tables of the report.
        checks: acceptance checks (:class:`rbc.verify.checks.Check`); one failing makes the
            status ``fail``.
        plots: PNG file names written into the target directory.
        data: machine-readable results (``results.json`` → ``data``).
        seeds: the seeds used, by what they seed.
    """

    figures: dict[str, float | None]
    key_figures: str
    setup: str
    tables: list[Table] = field(default_factory=list)
    checks: list[Check] = field(default_factory=list)
    plots: list[str] = field(default_factory=list)
    data: dict[str, Any] = field(default_factory=dict)
    seeds: dict[str, int] = field(default_factory=dict)


@dataclass
class TargetRun:
    """One target's run: status, wall time [s], outcome (None on error), traceback."""

    name: str
    title: str
    status: str
    wall_time: float
    outcome: Outcome | None
    failures: list[tuple[str, TaskFailure]]
    error: str = ""


def status_of(outcome: Outcome | None, failures: Sequence, error: str) -> str:
    """``error`` if the target raised, ``fail`` if a check or a case failed, else ``pass``."""
    if error or outcome is None:
        return "error"
    if failures or not all(c.passed for c in outcome.checks):
        return "fail"
    return "pass"



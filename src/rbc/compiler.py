"""The compilation pipeline as one readable function of named stages (DESIGN.md §1).

    robot.yaml ─parse─▶ Record ─graph─▶ Multigraph ─forest─▶ Forest ─paths─▶ ClosurePaths
        ─modules─▶ Modules ─rank─▶ Partitioned ─codegen─▶ BundleData ─(write)─▶ bundle.h5

Each pass's output is verified before the next runs unless ``verify=False``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from rbc.errors import UsageError
from rbc.ir.bundle import BundleData, write_bundle
from rbc.ir.record import Record
from rbc.passes import PASS_NAMES
from rbc.passes.codegen import Codegen, normalized_record
from rbc.passes.forest import BuildForest
from rbc.passes.graph import BuildGraph
from rbc.passes.modules import BuildModules
from rbc.passes.parse import Parse
from rbc.passes.paths import BuildPaths
from rbc.passes.rank import RankAnalysis
from rbc.safeio import gc_paused


def pipeline(
    partitions: tuple[tuple[str, tuple[str, ...]], ...] = (),
    length_scale: float | None = None,
    modes: tuple[tuple[str, tuple[str, ...]], ...] = (),
    all_modes: bool = False,
) -> tuple:
    """The passes in order, with their options; their names are the command-line names."""
    return (Parse(), BuildGraph(), BuildForest(), BuildPaths(), BuildModules(),
            RankAnalysis(partitions, length_scale, modes, all_modes), Codegen())


assert PASS_NAMES == tuple(p.name for p in pipeline()), "rbc.passes.PASS_NAMES is stale"


@dataclass
class CompileReport:
    """What a compilation produced besides the bundle: per-pass wall times and IR dumps."""

    timings: list[tuple[str, float]] = field(default_factory=list)
    dumps: list[tuple[str, str]] = field(default_factory=list)
    stages: dict[str, object] = field(default_factory=dict)


def dump_ir(ir: object) -> str:
    """Text form of any stage's output (for ``--dump-after``)."""
    if isinstance(ir, Record):
        return json.dumps(json.loads(normalized_record(ir)), indent=2)
    if isinstance(ir, BundleData):
        return "\n".join(f"{k}: {getattr(v, 'shape', type(v).__name__)}"
                         for k, v in sorted(ir.datasets.items()))
    return ir.dump()  # type: ignore[attr-defined]


def compile_record(
    source: str | Path,
    *,
    verify: bool = True,
    dump_after: tuple[str, ...] = (),
    on_pass: Callable[[str], None] | None = None,
    partitions: tuple[tuple[str, tuple[str, ...]], ...] = (),
    length_scale: float | None = None,
    modes: tuple[tuple[str, tuple[str, ...]], ...] = (),
    all_modes: bool = False,
) -> tuple[BundleData, CompileReport]:
    """Run the pipeline on a record file.

    Args:
        source: path of the record (YAML).
        verify: check each pass's post-conditions (default on).
        dump_after: pass names whose output is dumped into the report.
        on_pass: called with each pass name before it runs (progress hook).
        partitions: extra named partitions ``((name, (joint, …)), …)``.
        length_scale: length [m] scaling the rank analysis (None: from the record).
        modes: named support modes ``((name, (support, …)), …)`` (``--mode``).
        all_modes: also ``free`` and every support set with a valid partition
            (``--modes all``; :mod:`rbc.model.modes`).

    Returns:
        ``(bundle data, report)``; ``report.stages`` holds every intermediate IR by pass name.

    Raises:
        RecordError: the record is malformed or physically inconsistent.
        CompileError: the record is valid but cannot be compiled.
        ClosureError: the loops cannot be closed from the record's initial guesses.
        UsageError: ``dump_after`` names an unknown pass, a partition an unknown joint, or a
            mode an unknown support.
    """
    unknown = [n for n in dump_after if n not in PASS_NAMES]
    if unknown:
        raise UsageError(f"--dump-after: unknown pass '{unknown[0]}'; valid choices: "
                         + ", ".join(PASS_NAMES))
    report = CompileReport()
    ir: object = Path(source)
    # the passes build millions of acyclic objects on a large record (nodes, frozen IR,
    # per-chord arrays): the cyclic collector's repeated full passes over the growing heap
    # cost ~20 % of a 2000-loop compile and grow faster than the record
    with gc_paused():
        for p in pipeline(partitions, length_scale, modes, all_modes):
            if on_pass:
                on_pass(p.name)
            t0 = time.perf_counter()
            ir = p.run(ir)
            if verify:
                p.verify(ir)
            report.timings.append((p.name, time.perf_counter() - t0))
            report.stages[p.name] = ir
            if p.name in dump_after:
                report.dumps.append((p.name, dump_ir(ir)))
    assert isinstance(ir, BundleData)
    return ir, report


def compile_to_file(source: str | Path, output: str | Path, **options) -> CompileReport:
    """Compile ``source`` and write the bundle atomically to ``output``; returns the report."""
    data, report = compile_record(source, **options)
    t0 = time.perf_counter()
    write_bundle(output, data)
    report.timings.append(("write", time.perf_counter() - t0))
    return report

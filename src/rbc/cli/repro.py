"""``rbc repro [NAME …]``: the reproduction targets (docs/repro.md); exit 1 unless every
target run passes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from rbc.cli.app import app


@app.command("repro")
def repro_command(
    names: Annotated[list[str] | None, typer.Argument(
        help="Targets to run (default: all; `--list` shows them).")] = None,
    quick: Annotated[bool, typer.Option(
        "--quick", help="Every target on its small case list (what CI runs).")] = False,
    out: Annotated[Path | None, typer.Option(
        "--out", help="Output root (default artifacts/repro, or artifacts/repro-quick with "
        "--quick).")] = None,
    scheduler: Annotated[str | None, typer.Option(
        "--scheduler", help="Address of an existing Dask scheduler (default: "
        "$RBC_DASK_SCHEDULER, else a local cluster; `synchronous`: in this process).")] = None,
    workers: Annotated[int | None, typer.Option(
        "--workers", min=1, help="Worker processes of the local cluster (default: the "
        "usable cores).")] = None,
    seed: Annotated[int, typer.Option(min=0, max=2**63 - 1, help="Root seed of every sampled "
        "case (0 … 2⁶³−1).")] = 20260927,
    list_only: Annotated[bool, typer.Option("--list", help="List the targets and exit.")]
        = False,
    as_json: Annotated[bool, typer.Option(
        "--json", help="Print one JSON line per target run (name, status, wall time, key "
        "figures, report path).")] = False,
) -> None:
    """Recompute the source papers' tables and figures beside the published numbers."""
    from rbc.repro.harness import run_targets
    from rbc.repro.registry import TARGETS, select, target_module

    if list_only:
        for name in select(names or []):
            typer.echo(f"{name:16s} {target_module(name).TITLE}")
        return
    root = out or Path("artifacts") / ("repro-quick" if quick else "repro")

    def done(run) -> None:
        line = {"target": run.name, "status": run.status, "wall_time": run.wall_time,
                "key_figures": run.outcome.key_figures if run.outcome else "",
                "report": str(root / run.name / "report.md")}
        if as_json:
            typer.echo(json.dumps(line))
        else:
            typer.echo(f"{run.name}: {run.status} in {run.wall_time:.0f} s — "
                       f"{line['key_figures'] or run.error.strip().splitlines()[-1]}")

    runs = run_targets(names or [], root, quick=quick, seed=seed, scheduler=scheduler,
                       workers=workers, on_done=done)
    if not as_json:
        typer.echo(f"index: {root / 'index.md'} ({len(runs)} of {len(TARGETS)} targets run)")
    if any(r.status != "pass" for r in runs):
        raise typer.Exit(1)

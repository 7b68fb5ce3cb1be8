"""``rbc import mjcf|urdf``: turn MuJoCo and URDF models into physical records (YAML).

No numerics here: the importers live in :mod:`rbc.backends.mjcf_import` and
:mod:`rbc.backends.urdf` (imported inside the commands so ``rbc compile`` starts fast).
Warnings (dropped geometry, repaired inertias) go to stderr; the record is written
atomically, so a failed import leaves no output file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

import_app = typer.Typer(help="Import MJCF or URDF (+ loops sidecar) models as physical records.",
                         no_args_is_help=True)

_REPAIR_HELP = ("Repair physically invalid inertias (point masses, non-positive-definite "
                "tensors) by the documented rule instead of failing (see docs/import.md).")


_OVERLAY_HELP = ("YAML overlay of physical facts the model lacks (supports, tasks, actuators, …; "
                 "docs/import.md), merged into the imported record.")


def _guard(output: Path, **inputs: Path | None) -> None:
    from rbc.safeio import check_outputs

    check_outputs(inputs, {"-o": output})


def _finish(result, output: Path, model: Path, overlay: Path | None = None) -> None:
    from rbc.backends.record_writer import apply_overlay, write_record

    if overlay is not None:
        result = apply_overlay(result, overlay)
    write_record(result, output, model)  # (an error comes alone, before any warning)
    for w in result.warnings:
        typer.echo(f"warning: {w}", err=True)
    rec = result.record
    typer.echo(f"imported {rec['name']}: {len(rec['bodies'])} bodies, {len(rec['joints'])} "
               f"joints, {len(rec.get('actuators', []))} actuators, "
               f"{len(rec.get('couplings', []))} couplings -> {output}")


@import_app.command("mjcf")
def import_mjcf_command(
    model: Annotated[Path, typer.Argument(help="MuJoCo XML model (MJCF).")],
    output: Annotated[Path, typer.Option("-o", "--output", help="Record to write (YAML).")],
    repair_inertia: Annotated[bool, typer.Option("--repair-inertia", help=_REPAIR_HELP)] = False,
    overlay: Annotated[Path | None, typer.Option("--overlay", help=_OVERLAY_HELP)] = None,
) -> None:
    """Import an MJCF model: bodies, joints, connect/weld loops, joint couplings, motors."""
    from rbc.backends.mjcf_import import import_mjcf

    _guard(output, MODEL=model, **{"--overlay": overlay})
    _finish(import_mjcf(model, repair_inertia=repair_inertia), output, model, overlay)


@import_app.command("urdf")
def import_urdf_command(
    model: Annotated[Path, typer.Argument(help="URDF file.")],
    output: Annotated[Path, typer.Option("-o", "--output", help="Record to write (YAML).")],
    loops: Annotated[Path | None, typer.Option(
        "--loops", help="Loop-closure sidecar (closed_loop, type 3d|6d, name_mot).")] = None,
    floating: Annotated[bool, typer.Option(
        "--floating", help="Make the root link floating (default: fixed).")] = False,
    repair_inertia: Annotated[bool, typer.Option("--repair-inertia", help=_REPAIR_HELP)] = False,
    overlay: Annotated[Path | None, typer.Option("--overlay", help=_OVERLAY_HELP)] = None,
) -> None:
    """Import a URDF tree, optionally closed by a loops sidecar."""
    from rbc.backends.urdf import import_urdf

    _guard(output, MODEL=model, **{"--loops": loops, "--overlay": overlay})
    _finish(import_urdf(model, loops, floating=floating, repair_inertia=repair_inertia), output,
            model, overlay)

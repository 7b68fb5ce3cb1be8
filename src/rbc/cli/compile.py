"""``rbc compile RECORD -o BUNDLE``: run the compiler pipeline and write the bundle."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from rbc.cli.app import app, number
from rbc.passes import PASS_NAMES


@app.command("compile")
def compile_command(
    record: Annotated[Path, typer.Argument(help="Physical record (YAML, schema v1).")],
    output: Annotated[Path | None, typer.Option("-o", "--output",
                      help="Bundle to write (default: <record stem>.h5 here).")] = None,
    dump_after: Annotated[list[str] | None, typer.Option(
        "--dump-after", help=f"Print the IR after a pass ({', '.join(PASS_NAMES)}); repeatable.")
    ] = None,
    time_passes: Annotated[bool, typer.Option("--time-passes",
                           help="Print wall time per pass.")] = False,
    no_verify: Annotated[bool, typer.Option("--no-verify",
                         help="Skip the post-condition checks between passes.")] = False,
    partition: Annotated[list[str] | None, typer.Option(
        "--partition", help="Extra named partition NAME=joint1,joint2,… (its joints "
        "independent); repeatable. The `default` partition is always computed.")] = None,
    modes: Annotated[str | None, typer.Option(
        "--modes", help="`all`: also compile the support modes — `free` and every non-empty "
        "set of the record's supports with a valid partition (docs/supports.md).")] = None,
    mode: Annotated[list[str] | None, typer.Option(
        "--mode", help="A named support mode NAME=support1,support2,… (kept even when "
        "under-actuated); repeatable.")] = None,
    length_scale: Annotated[float | None, typer.Option(
        "--length-scale", callback=number(ge=1e-9), help="Length [m] scaling the rank "
        "analysis, ≥ 1e-9 (default: median attachment offset of the record).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
    mjcf: Annotated[Path | None, typer.Option(
        "--mjcf", help="Also write a MuJoCo MJCF file (docs/export.md).")] = None,
    pinocchio: Annotated[Path | None, typer.Option(
        "--pinocchio", help="Also write a URDF + constraints.yaml into this directory.")] = None,
) -> None:
    """Compile a physical record into a bundle (tree, cut joints, paths, modules, partitions)."""
    from rbc.api import compile as compile_record
    from rbc.errors import UsageError
    from rbc.ir.summary import summarize
    from rbc.model.modes import parse_mode_request
    from rbc.passes.rank import parse_partition_request
    from rbc.safeio import check_outputs, staged_outputs, staged_path

    out = output or Path(record.stem + ".h5")
    check_outputs({"RECORD": record}, {"-o": out, "--mjcf": mjcf, "--pinocchio": pinocchio},
                  directories=["--pinocchio"])  # also checks that --pinocchio is replaceable
    requests = tuple(parse_partition_request(p) for p in partition or ())
    if modes not in (None, "all"):
        raise UsageError(f"--modes {modes}: valid choices: all (name single modes with --mode)")
    mode_requests = tuple(parse_mode_request(m) for m in mode or ())
    err = Console(stderr=True, highlight=False, soft_wrap=True)
    with staged_outputs():  # the bundle and its exports appear together or not at all
        bundle = compile_record(record, out, verify=not no_verify,
                                dump_after=dump_after or (), partitions=requests,
                                length_scale=length_scale, modes=mode_requests,
                                all_modes=modes == "all")
        if mjcf is not None:
            from rbc.backends.mjcf_export import write_mjcf_from_bundle

            for note in write_mjcf_from_bundle(staged_path(out), mjcf).notes():
                err.print(f"note: {mjcf}: {note}", markup=False)
        if pinocchio is not None:
            from rbc.backends.pinocchio import write_pinocchio_from_bundle

            write_pinocchio_from_bundle(staged_path(out), pinocchio)
    for note in bundle.notes:
        err.print(f"note: {note}", highlight=False, markup=False)
    for name, text in bundle.dumps:
        typer.echo(f"// ----- IR after {name} -----\n{text}")
    if time_passes:
        for name, seconds in bundle.timings:
            err.print(f"  {name:<8s} {1e3 * seconds:9.3f} ms")
    s = summarize(out)
    if as_json:
        typer.echo(json.dumps({"bundle": str(out), **s}, indent=2))
        return
    typer.echo(
        f"compiled {s['name']}: {len(s['bodies'])} bodies, {len(s['joints'])} joints, "
        f"components={s['components']}, cycle rank {s['cycle_rank']}, "
        f"{len(s['cut_joints'])} cut joints, {len(s['modules'])} modules; "
        f"nq={s['nq']} nv={s['nv']} (tree {s['nq_tree']}/{s['nv_tree']}); "
        + "; ".join(f"partition {p['name']}: rank {p['rank']}, {p['speeds']} independent "
                    f"speeds ({', '.join(p['independent'])})" for p in s["partitions"])
        + (f"; {len(s['modes'])} support modes" if s["modes"] else "")
        + f" -> {out}"
    )

"""``rbc solve BUNDLE --set NAME=VALUE …``: close the mechanism at prescribed coordinates."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from rbc.cli.app import app


@app.command("solve")
def solve_command(
    bundle: Annotated[Path, typer.Argument(help="Bundle written by `rbc compile`.")],
    assignments: Annotated[list[str] | None, typer.Option(
        "--set", help="Independent coordinate NAME=VALUE [rad or m]; repeatable. NAME is a "
        "joint name, or JOINT.suffix for multi-coordinate joints.")] = None,
    partition: Annotated[str | None, typer.Option(
        "--partition", help="Stored partition whose independent coordinates are prescribed "
        "(default: `default`).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Close the loops with the named independent coordinates prescribed (others keep q_ref)."""
    from rbc.model.compiled import CompiledModel
    from rbc.model.solve import configuration_by_joint, parse_assignment, solve_named

    pairs = dict(parse_assignment(a) for a in assignments or ())
    model = CompiledModel.from_bundle(bundle)
    result = solve_named(model, partition, pairs)
    config = configuration_by_joint(model, result.q)
    if as_json:
        typer.echo(json.dumps({"partition": result.partition, "configuration": config,
                               "residual": result.residual, "iterations": result.iterations},
                              indent=2))
        return
    t = Table(title=f"{model.record.name}: closed configuration (partition "
              f"{result.partition})", title_justify="left")
    t.add_column("joint")
    t.add_column("value [rad or m]", justify="right")
    for name, value in config.items():
        shown = ", ".join(f"{x:.12g}" for x in value) if isinstance(value, list) else \
            f"{value:.12g}"
        t.add_row(name, shown)
    con = Console(highlight=False)
    con.print(t)
    con.print(f"residual ‖ρ‖∞ = {result.residual:.3e}   iterations = {result.iterations}")

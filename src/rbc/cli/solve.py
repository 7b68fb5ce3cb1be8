"""``rbc solve BUNDLE --set NAME=VALUE …``: close the mechanism at prescribed coordinates."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from rbc.cli.app import app
from rbc.cli.target import naming, open_model


@app.command("solve")
def solve_command(
    bundle: Annotated[Path, typer.Argument(help="Bundle written by `rbc compile`.")],
    assignments: Annotated[list[str] | None, typer.Option(
        "--set", help="Independent coordinate NAME=VALUE [rad or m]; repeatable. NAME is a "
        "joint name, or JOINT.suffix for multi-coordinate joints.")] = None,
    guess: Annotated[list[str] | None, typer.Option(
        "--guess", help="Start from a guess instead of the stored reference configuration: "
        "NAME=VALUE for any coordinate [rad or m], or JOINT=v1,v2,… in the joint's `initial` "
        "layout (a spherical joint's quaternion w,x,y,z); repeatable. The guess is projected "
        "onto the closure manifold (the nearest assembly), then the independent coordinates "
        "are continued to the --set values and the others to their guessed values.")] = None,
    partition: Annotated[str | None, typer.Option(
        "--partition", help="Stored partition whose independent coordinates are prescribed "
        "(default: `default`).")] = None,
    mode: Annotated[str | None, typer.Option(
        "--mode", help="Composed bundles: the composed mode whose links and supports are "
        "closed (default: the first).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Close the loops with the named independent coordinates prescribed (others keep q_ref,
    or their --guess values)."""
    from rbc.errors import UsageError
    from rbc.model.solve import parse_assignment, parse_guess
    from rbc.safeio import named_values

    pairs = named_values(assignments, "--set", parse_assignment)
    guesses: dict = {}
    for text in guess or ():
        name, value = parse_guess(text)
        if name in guesses:
            raise UsageError(f"--guess {name}: given twice; give each name once")
        guesses[name] = value
    _, model = open_model(bundle, partition, mode)
    with naming(bundle, "--set" if not guesses else "--set/--guess"):
        state = model.close(pairs, guess=guesses or None)
    result = state.solve
    err = Console(stderr=True, highlight=False)
    for note in result.notes:
        err.print(f"note: {note}", markup=False)
    config = model.joint_values(state)
    if as_json:
        typer.echo(json.dumps({"partition": result.partition, "configuration": config,
                               "residual": result.residual, "iterations": result.iterations,
                               "start": "guess" if guesses else "q_ref",
                               "notes": list(result.notes), "events": list(result.events)},
                              indent=2))
        return
    t = Table(title=f"{model.name}: closed configuration (partition "
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
    for e in result.events:
        con.print(f"re-partitioned {100 * e['fraction']:.3g}% of the way (a coordinate "
                  f"singularity of the held set): independent {', '.join(e['old'])} → "
                  f"{', '.join(e['new'])} (cond R_p {e['cond_before']:.3g} → "
                  f"{e['cond_after']:.3g}); no longer held: {', '.join(e['released'])}")

"""``rbc compose FILE -o BUNDLE``: compose compiled robots into one system (docs/composition.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from rbc.cli.app import app


@app.command("compose")
def compose_command(
    composition: Annotated[Path, typer.Argument(help="Composition file (YAML, "
                                                "rbc_composition: 1).")],
    output: Annotated[Path, typer.Option("-o", "--output", help="Composed bundle to write.")],
    bundles: Annotated[Path | None, typer.Option(
        "--bundles", help="Directory holding the member bundles the file names (default: the "
        "composition file's directory).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
) -> None:
    """Place member bundles in one world, close the links, and compute the composer lift per
    mode (no member is recompiled); writes a bundle that embeds the members."""
    from rbc.compose.bundle import write_composed
    from rbc.compose.spec import member_path, parse_composition
    from rbc.compose.system import compose
    from rbc.errors import UsageError
    from rbc.ir.summary import summarize
    from rbc.model.compiled import CompiledModel
    from rbc.safeio import check_outputs

    spec = parse_composition(composition)
    directory = bundles if bundles is not None else composition.parent
    if not directory.is_dir():
        raise UsageError(f"--bundles {directory}: not a directory")
    files = [member_path(spec, m, directory) for m in spec.members]
    check_outputs({"COMPOSITION": composition,
                   **{f"members[{i}].bundle": f for i, f in enumerate(files)}},
                  {"-o": output})
    models = [CompiledModel.from_bundle(f) for f in files]
    err = Console(stderr=True)
    comp = compose(spec, models, (lambda s: err.print(f"  {s}")) if err.is_terminal else None)
    write_composed(output, comp, files)
    s = summarize(output)["composition"]
    if as_json:
        typer.echo(json.dumps({"bundle": str(output), **s}, indent=2))
        return
    typer.echo(f"composed {s['name']}: {len(s['members'])} members, {len(s['links'])} links; "
               + "; ".join(f"mode {m['name']}: {m['bodies']} bodies, {m['chords']} chords, "
                           f"{m['speeds']} independent speeds" for m in s["modes"])
               + f" -> {output}")

"""``rbc view BUNDLE [--log RUN] [--save FILE.html]``: a 3D view in a web browser."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from rbc.cli.app import app


@app.command("view")
def view_command(
    bundle: Annotated[Path, typer.Argument(help="Bundle written by `rbc compile`.")],
    log: Annotated[Path | None, typer.Option(
        "--log", help="Play a `rbc simulate --out DIR` run (DIR or DIR/log.h5).")] = None,
    save: Annotated[Path | None, typer.Option(
        "--save", help="Write a self-contained HTML file (opens offline) and exit.")] = None,
    port: Annotated[int, typer.Option(
        help="Port of the local server on 127.0.0.1 (0: any free port).", min=0,
        max=65535)] = 0,
    open_browser: Annotated[bool, typer.Option(
        "--open/--no-open", help="Open the page in the default browser.")] = True,
) -> None:
    """Draw the mechanism (bodies, tree joints in blue, cut joints in orange, supports and
    tasks as frames) at its reference configuration, or play a simulation log."""
    from rbc.errors import UsageError
    from rbc.ir.atomic import atomic_write_text
    from rbc.model.compiled import CompiledModel
    from rbc.safeio import check_outputs
    from rbc.view.motion import log_motion, reference_motion
    from rbc.view.page import render_page
    from rbc.view.scene import build_scene
    from rbc.view.serve import make_server, serve_forever

    check_outputs({"BUNDLE": bundle, "--log": log}, {"--save": save})
    model = CompiledModel.from_bundle(bundle)
    motion = log_motion(model, log) if log is not None else reference_motion(model)
    title = f"{model.record.name} — {log}" if log is not None else model.record.name
    page = render_page(build_scene(model, motion.qs, motion.times, motion.poses, title))
    if save is not None:
        if save.suffix.lower() not in (".html", ".htm"):
            raise UsageError(f"--save {save}: the file name must end in .html")
        atomic_write_text(save, page)
        typer.echo(f"wrote {save} ({len(page) / 1e6:.1f} MB); open it in a browser")
        return
    try:
        server = make_server(page, port)
    except OSError as exc:
        raise UsageError(f"--port {port}: cannot listen on 127.0.0.1 ({exc.strerror})") from None

    def ready(url: str) -> None:
        typer.echo(f"rbc view: {url}  (Ctrl-C to stop)")
        if open_browser:
            import webbrowser

            webbrowser.open(url)

    serve_forever(server, ready)

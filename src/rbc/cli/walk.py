"""``rbc walk``: simulate planar bipeds (DESIGN.md §9).

Parses options, calls :mod:`rbc.walkers`, prints. No numerics here. Registered by
``rbc.cli.main`` as ``app.add_typer(walk.app, name="walk")``.
"""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

app = typer.Typer(help="Simulate planar bipeds: passive and feedback-controlled walking.",
                  no_args_is_help=True)

_err = Console(stderr=True)


def _slope(model: str, slope: float | None) -> float:
    from rbc.walkers.api import default_slope

    return default_slope(model) if slope is None else slope


@app.command()
def run(
    model: str = typer.Option("compass", "--model", help="walker model name"),
    controller: str = typer.Option("passive", "--controller", help="passive or fl"),
    slope: float | None = typer.Option(None, "--slope", help="slope [rad] (default: model's)"),
    strides: int = typer.Option(10, "--strides", help="number of strides"),
    out: Path | None = typer.Option(None, "--out", help="directory for log, PNG and GIF"),
    dt: float | None = typer.Option(None, "--dt", help="RK4 step [s]"),
    json_out: bool = typer.Option(False, "--json", help="machine-readable output"),
) -> None:
    """Simulate STRIDES strides and print stride metrics."""
    from rich.progress import Progress

    from rbc.walkers.api import run_walk
    from rbc.walkers.metrics import summary, write_log

    alpha = _slope(model, slope)
    with Progress(console=_err, transient=True, disable=json_out) as prog:
        task = prog.add_task(f"walking {model}", total=strides)
        res = run_walk(model, controller, alpha, strides, dt=dt,
                       progress=lambda i: prog.update(task, completed=i + 1))
    summ = summary(res)
    files = []
    if out is not None:
        from rbc.walkers.plots import animation, phase_portrait

        out.mkdir(parents=True, exist_ok=True)
        files.append(write_log(res, out / f"{model}_log"))
        files.append(phase_portrait(res, out / f"{model}_phase.png"))
        try:
            files.append(animation(res, out / f"{model}.gif"))
        except ImportError:
            _err.print("pillow not installed: no GIF (pip install pillow)")
    if json_out:
        typer.echo(json.dumps(summ))
        return
    table = Table(title=f"{model} / {controller} / slope {alpha:.4f} rad")
    for col in ("stride", "length [m]", "duration [s]", "speed [m/s]", "F_N [N s]",
                "cone use", "checks"):
        table.add_column(col, justify="right")
    for s in summ["strides"]:
        table.add_row(str(s["index"]), f"{s['length']:.4f}", f"{s['duration']:.4f}",
                      f"{s['speed']:.4f}", f"{s['impulse_normal']:.3f}",
                      f"{s['cone_utilization']:.3f}", "ok" if s["checks_ok"] else "FAIL")
    Console().print(table)
    status = f"fell: {summ['fall_reason']}" if summ["fell"] else "no fall"
    typer.echo(f"{summ['strides_completed']} strides completed, {status}")
    for f in files:
        typer.echo(f"wrote {f}")


@app.command()
def fixedpoint(
    model: str = typer.Option("compass", "--model", help="walker model name"),
    controller: str = typer.Option("passive", "--controller", help="passive or fl"),
    slope: float | None = typer.Option(None, "--slope", help="slope [rad] (default: model's)"),
    dt: float | None = typer.Option(None, "--dt", help="RK4 step [s]"),
    json_out: bool = typer.Option(False, "--json", help="machine-readable output"),
) -> None:
    """Find the period-one gait (Newton on the Poincaré map) and its eigenvalues."""
    from rbc.walkers.api import find_gait

    alpha = _slope(model, slope)
    with _err.status("Newton on the Poincaré map"):
        fp = find_gait(model, controller, alpha, dt=dt)
    data = {
        "fixed_point": [float(v) for v in fp.x],
        "eigenvalues": [[float(e.real), float(e.imag)] for e in fp.eigenvalues],
        "spectral_radius": fp.spectral_radius,
        "step_period": fp.step_period,
    }
    if json_out:
        typer.echo(json.dumps(data))
        return
    table = Table(title=f"{model} / {controller}: fixed point (post-impact state)")
    table.add_column("entry", justify="right")
    table.add_column("value", justify="right")
    for i, v in enumerate(data["fixed_point"]):
        table.add_row(str(i), f"{v:.10f}")
    Console().print(table)
    eig = ", ".join(f"{re:.4f}{im:+.4f}j" for re, im in data["eigenvalues"])
    typer.echo(f"eigenvalues: {eig}")
    typer.echo(f"spectral radius: {data['spectral_radius']:.6f}  "
               f"({'stable' if data['spectral_radius'] < 1 else 'unstable'})")
    typer.echo(f"step period: {data['step_period']:.6f} s")

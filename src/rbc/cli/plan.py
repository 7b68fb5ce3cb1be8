"""``rbc plan BUNDLE --task NAME --to X,Y,Z[,RX,RY,RZ] --duration T --out DIR``: resolve a
task motion on the closure manifold and write a reference ``rbc simulate`` tracks."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from rbc.cli.app import app, number, progress_bar
from rbc.cli.target import naming


def task_request(task: list[str], to: list[str] | None, duration: float, kx: str,
                 stroke_preference: float, relax: str, speed_scale: float):
    """The :class:`rbc.tasks.request.TaskRequest` of the task options (plan, simulate).

    Raises:
        UsageError: a value out of range (each option named).
    """
    from rbc.safeio import check_number
    from rbc.tasks.request import TaskRequest, parse_numbers

    check_number("--stroke-preference", stroke_preference, ge=0)
    check_number("--speed-scale", speed_scale, gt=0)
    return TaskRequest(tuple(task), tuple(parse_numbers(t, "--to") for t in to or ()),
                       duration, parse_numbers(kx, "--kx"), stroke_preference, relax,
                       speed_scale)


@app.command("plan")
def plan_command(
    bundle: Annotated[Path, typer.Argument(help="Bundle written by `rbc compile`.")],
    task: Annotated[list[str], typer.Option(
        "--task", help="Task: a record task NAME, NAME:position, NAME:xy|xz|yz, or "
        "joint:COORDINATE; repeat to stack tasks.")],
    duration: Annotated[float, typer.Option(callback=number(gt=0),
                                            help="Duration of the motion \\[s].")],
    out: Annotated[Path, typer.Option(
        "--out", help="Directory for reference.csv, log.h5, summary.json, plan.png.")],
    to: Annotated[list[str] | None, typer.Option(
        "--to", help="Waypoint of the (stacked) task: x,y,z [m] for a position, "
        "x,y,z,rx,ry,rz (rotation vector [rad], world axes) for a pose; repeat for a path "
        "of equal segments. None: hold the task (self-motion only).")] = None,
    kx: Annotated[str, typer.Option(
        "--kx", help="Task gain K_x \\[1/s]: one value or one per task row.")] = "2",
    stroke_preference: Annotated[float, typer.Option(
        "--stroke-preference",
        help="Weight k_Φ \\[J·s] of the stroke-limit preference (0: off).")] = 0.0,
    relax: Annotated[str, typer.Option(
        help="Infeasible task: none (exit 2 naming the bounds) or slack (follow the closest "
        "feasible motion, slack reported).")] = "none",
    speed_scale: Annotated[float, typer.Option(
        help="Factor on the actuators' speed limits.")] = 1.0,
    dt: Annotated[float, typer.Option(callback=number(gt=0),
                                      help="Integration step \\[s] (RK4).")] = 0.01,
    sample_dt: Annotated[float, typer.Option(
        callback=number(gt=0),
        help="Spacing \\[s] of the reference knots, a multiple of --dt.")] = 0.02,
    partition: Annotated[str | None, typer.Option(help="Stored partition name.")] = None,
    assignments: Annotated[list[str] | None, typer.Option(
        "--set", help="Initial independent coordinate NAME=VALUE [rad or m]; repeatable.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")
                       ] = False,
) -> None:
    """Resolve a task motion with the weighted velocity problem and write it as a reference."""
    from rich.console import Console
    from rich.progress import BarColumn, TextColumn, TimeRemainingColumn

    from rbc.model.compiled import CompiledModel
    from rbc.model.dynamics import DynamicsModel
    from rbc.model.solve import get_partition, parse_assignment, solve_named
    from rbc.safeio import check_outputs
    from rbc.tasks.plan import plan, summary, write_plan
    from rbc.tasks.request import build

    # before the work, not after it: also checks that --out is replaceable
    check_outputs({"BUNDLE": bundle}, {"--out": out}, directories=["--out"])
    req = task_request(task, to, duration, kx, stroke_preference, relax, speed_scale)
    model = CompiledModel.from_bundle(bundle)
    part = get_partition(model, partition)
    with naming(bundle, "--set"):
        q0 = solve_named(model, part.name,
                         dict(parse_assignment(a) for a in assignments or ())).q
    chart, law, path = build(model, q0, req)
    dm = DynamicsModel.build(model)
    with progress_bar(TextColumn("{task.description}"), BarColumn(), TextColumn(
            "{task.percentage:>5.1f}%"), TimeRemainingColumn()) as bar:
        tid = bar.add_task(f"planning {chart.label}", total=1.0)
        res = plan(dm, part, law, path, q0, dt=dt,
                   progress=lambda x: bar.update(tid, completed=x))
    write_plan(res, out, sample_dt=sample_dt, bundle=str(bundle))
    s = summary(res)
    if as_json:
        typer.echo(json.dumps({"bundle": str(bundle), **s,
                               "reference": str(out / "reference.csv")}, indent=2))
        return
    con = Console(highlight=False, soft_wrap=True)
    con.print(f"{Path(bundle).name}: planned {chart.label} over {s['duration']:g} s "
              f"({s['steps']} RK4 steps, partition {s['partition']})")
    con.print(f"  task error ‖e_x‖: initial {s['error_initial']:.3g}, final "
              f"{s['error_final']:.3g}, max {s['error_max']:.3g} (m, rad)")
    phi = [f"{x:.4g}" if x is not None else "∞ (a coordinate at its limit)"
           for x in (s["phi_initial"], s["phi_final"])]
    con.print(f"  stroke preference Φ: {phi[0]} → {phi[1]}")
    if s["bounds_active"]:
        con.print("  bounds active: " + ", ".join(f"{n} ({c} steps)"
                                                  for n, c in s["bounds_active"].items()))
    if s["relaxed_steps"]:
        con.print(f"  relaxed (slack) steps {s['relaxed_steps']}, max ‖slack‖ "
                  f"{s['slack_max']:.3g} (m/s, rad/s)")
    hint = "" if part.name == "default" else f" --partition {part.name}"
    con.print(f"  outputs in {out}; track with: rbc simulate {bundle} --reference "
              f"{out / 'reference.csv'}{hint}")

"""``rbc walk``: simulate planar bipeds (DESIGN.md §9).

Parses options, calls :mod:`rbc.walkers`, prints. No numerics here. Registered by
``rbc.cli.main`` as ``app.add_typer(walk.app, name="walk")``.
"""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from rbc.cli.app import number, progress_bar


def _output_dir(out: Path) -> None:
    """Refuse an ``--out`` rbc may not replace (a file, or a non-empty directory it did not
    write), before anything runs; the directory itself is written at the end, whole
    (:func:`rbc.safeio.atomic_directory`)."""
    from rbc.safeio import check_replaceable

    check_replaceable(out, "--out")


#: RK4 step bounds [s, or the model's time unit]: a stride lasts seconds, so 1e-6 is
#: millions of steps per stride (a smaller step would run for hours); 0.1 is coarser than
#: any model file's. The stride time limit is at most an hour of simulated time.
MIN_DT, MAX_DT = 1e-6, 0.1
MAX_STRIDE_TIME = 3600.0

app = typer.Typer(help="Simulate planar bipeds: passive and feedback-controlled walking.",
                  no_args_is_help=True)

_err = Console(stderr=True)

_MODEL_HELP = ("registered model name (compass, threelink, rabbit, humanoid, garcia, rimless) "
               "or a model file FILE.yaml (docs/walkers.md §8)")
_LIMIT_HELP = ("stride time limit \\[s]: a swing longer than this stops the run with 'no "
               "touchdown' (default: the model's stride_time_limit, else four pendulum "
               "periods of the leg, 8π√(leg/g))")


def _slope(model: str, slope: float | None) -> float:
    from rbc.walkers.api import default_slope

    return default_slope(model) if slope is None else slope


def _true_plant_requested(controller: str, safety: str, words: dict) -> bool:
    """Whether ``run`` needs the true-plant simulator (a learning controller, a filter,
    any mismatch or environment option)."""
    defaults = {"payload": 0.0, "mass_scale": 1.0, "effectiveness": "1", "bias": "0",
                "friction": 0.0, "stick_slip": False, "ice": (), "trip": (), "push": ()}
    return (controller not in ("passive", "fl") or safety != "none"
            or any(words[k] != v for k, v in defaults.items()))


@app.command()
def run(
    model: str = typer.Option("compass", "--model", help=_MODEL_HELP),
    controller: str = typer.Option(
        "passive", "--controller",
        help="passive, fl, adaptive, rise, composite or lbdnn (lbdnn: footed humanoid)"),
    slope: float | None = typer.Option(None, "--slope", callback=number(gt=-1.5, lt=1.5),
                                        help="slope [rad] (default: model's)"),
    strides: int = typer.Option(10, "--strides", min=1, max=100_000, help="number of strides"),
    out: Path | None = typer.Option(None, "--out", help="directory for log, PNG and GIF"),
    dt: float | None = typer.Option(None, "--dt", callback=number(ge=MIN_DT, le=MAX_DT),
                                    help="RK4 step \\[s] (1e-6 to 0.1)"),
    stride_time_limit: float | None = typer.Option(
        None, "--stride-time-limit", callback=number(gt=0, le=MAX_STRIDE_TIME),
        help=_LIMIT_HELP),
    json_out: bool = typer.Option(False, "--json", help="machine-readable output"),
    payload: float = typer.Option(0.0, "--payload", callback=number(ge=0),
                                  help="true plant: payload at the heaviest link [kg]"),
    mass_scale: float = typer.Option(1.0, "--mass-scale", callback=number(gt=0),
                                     help="true plant: mass and inertia factor"),
    effectiveness: str = typer.Option(
        "1", "--effectiveness", help="actuator effectiveness eta: one value, or one per "
        "actuator joined by ':' (e.g. 1:0.9:1:0.9)"),
    bias: str = typer.Option(
        "0", "--bias", help="actuator bias b [N m]: one value, or one per actuator joined by "
        "':' (e.g. 5:-5:5:-5)"),
    friction: float = typer.Option(0.0, "--friction", callback=number(ge=0),
                                   help="joint Coulomb friction [N m] (Stribeck knee, viscous "
                                   "drag)"),
    stick_slip: bool = typer.Option(False, "--stick-slip", help="stance foot may slip"),
    ice: list[str] = typer.Option([], "--ice", help="ice patch X0:X1:MU (repeatable)"),
    trip: list[str] = typer.Option([], "--trip", help="swing-foot impulse "
                                   "STRIDE:TIME:FX:FY [-, s, N s] (repeatable)"),
    push: list[str] = typer.Option([], "--push", help="head impulse STRIDE:TIME:FX:FY"),
    safety_filter: str = typer.Option("none", "--safety-filter",
                                      help="none, projection or qp (ECBF filter)"),
    torso_bounds: str | None = typer.Option(
        None, "--torso-bounds", help="LO:HI torso-angle barrier of the safety filter [rad] "
        "(default 0:0.25)"),
) -> None:
    """Simulate STRIDES strides and print stride metrics."""
    if out is not None:
        _output_dir(out)

    from rbc.walkers.api import (
        RUN_CONTROLLERS,
        make_scenario,
        parse_bounds,
        run_plant,
        run_walk,
    )
    from rbc.walkers.errors import WalkerError
    from rbc.walkers.evaluation.metrics import summary, write_log

    if controller not in RUN_CONTROLLERS:
        raise WalkerError(f"unknown controller '{controller}'", choices=RUN_CONTROLLERS,
                          got=controller)
    words = {"payload": payload, "mass_scale": mass_scale, "effectiveness": effectiveness,
             "bias": bias, "friction": friction, "stick_slip": stick_slip,
             "ice": tuple(ice), "trip": tuple(trip), "push": tuple(push)}
    alpha = _slope(model, slope)
    with progress_bar(hidden=json_out) as prog:
        task = prog.add_task(f"walking {model}", total=strides)

        def tick(i: int) -> None:
            prog.update(task, completed=i + 1)

        if _true_plant_requested(controller, safety_filter, words):
            res = run_plant(model, controller, alpha, strides, make_scenario(**words),
                            safety=safety_filter, dt=dt, progress=tick,
                            torso_bounds=parse_bounds(torso_bounds), t_max=stride_time_limit)
        else:
            res = run_walk(model, controller, alpha, strides, dt=dt, progress=tick,
                           t_max=stride_time_limit)
    summ = summary(res)
    files = []
    if out is not None:
        from rbc.safeio import atomic_directory
        from rbc.walkers.evaluation.plots import animation, phase_portrait
        from rbc.walkers.hybrid.registry import model_label

        stem = model_label(model)  # from the argument, never from the file's contents
        with atomic_directory(out, "--out") as tmp:
            files.append(write_log(res, tmp / f"{stem}_log"))
            files.append(phase_portrait(res, tmp / f"{stem}_phase.png", controller=controller))
            try:
                files.append(animation(res, tmp / f"{stem}.gif", controller=controller))
            except ImportError:
                _err.print("pillow not installed: no GIF (pip install pillow)")
        files = [str(out / Path(f).name) for f in files]
    if json_out:
        typer.echo(json.dumps(summ))
        return
    table = Table(title=escape(f"{res.model.name} / {controller} / slope {alpha:.4f} rad"))
    for col in ("stride", "length [m]", "duration [s]", "speed [m/s]", "F_N [N s]",
                "cone use", "checks"):
        table.add_column(escape(col), justify="right")  # "[s]" is not rich markup
    for s in summ["strides"]:
        table.add_row(str(s["index"]), f"{s['length']:.4f}", f"{s['duration']:.4f}",
                      f"{s['speed']:.4f}", f"{s['impulse_normal']:.3f}",
                      f"{s['cone_utilization']:.3f}", "ok" if s["checks_ok"] else "FAIL")
    Console().print(table)
    status = f"fell: {summ['fall_reason']}" if summ["fell"] else "no fall"
    typer.echo(f"{summ['strides_completed']} strides completed, {status}")
    if "tracking_ema" in summ:
        typer.echo(f"tracking EMA |y|^2: {summ['tracking_ema']:.3e} rad^2")
    for f in files:
        typer.echo(f"wrote {f}")


@app.command()
def batch(
    model: str = typer.Option("rabbit", "--model", help=_MODEL_HELP),
    samples: int = typer.Option(100, "--samples", min=1, max=1_000_000,
                                help="Monte Carlo samples"),
    strides: int = typer.Option(20, "--strides", min=1, max=100_000, help="strides per walk"),
    seed: int = typer.Option(0, "--seed", min=0, max=2**63 - 1,
                             help="root seed (sample i: SeedSequence child i)"),
    workers: int = typer.Option(2, "--workers", min=1,
                                help="worker processes of the local Dask cluster (≥ 1; 1: "
                                "run in this process)"),
    controllers: str = typer.Option("fl,adaptive,rise,composite", "--controllers",
                                    help="comma-separated controller names"),
    scheduler: str | None = typer.Option(None, "--scheduler", "--dask-scheduler",
                                         help="address of an existing Dask scheduler "
                                         "(default: $RBC_DASK_SCHEDULER, else a local "
                                         "cluster)"),
    out: Path | None = typer.Option(None, "--out", help="directory for summary.json and "
                                    "batch.png"),
    stride_time_limit: float | None = typer.Option(
        None, "--stride-time-limit", callback=number(gt=0, le=MAX_STRIDE_TIME),
        help=_LIMIT_HELP),
    json_out: bool = typer.Option(False, "--json", help="machine-readable output"),
) -> None:
    """Monte Carlo batch: fall rate, tracking EMA and contraction per controller."""
    if out is not None:
        _output_dir(out)

    from rbc.walkers.evaluation.batch import BatchConfig, run_batch

    cfg = BatchConfig(model=model, controllers=tuple(c for c in controllers.split(",") if c),
                      samples=samples, strides=strides, seed=seed,
                      stride_time_limit=stride_time_limit)
    with progress_bar() as prog:
        task = prog.add_task("batch", total=samples * len(cfg.controllers))
        summ = run_batch(cfg, workers=workers, scheduler=scheduler,
                         progress=lambda done, total: prog.update(task, completed=done))
    files = []
    if out is not None:
        from rbc.safeio import atomic_directory
        from rbc.walkers.evaluation.plots import batch_plot

        with atomic_directory(out, "--out") as tmp:
            (tmp / "summary.json").write_text(json.dumps(summ, indent=1))
            batch_plot(summ, tmp / "batch.png")
        files = [str(out / "summary.json"), str(out / "batch.png")]
    for f in summ["failures"]:
        typer.echo(f"error: sample {f['sample']}, controller {f['controller']}: "
                   f"{f['error']}", err=True)
    if json_out:
        typer.echo(json.dumps(summ))
        if summ["failures"]:
            raise typer.Exit(1)
        return
    table = Table(title=escape(f"{model}: {samples} samples x {strides} strides, seed {seed}"))
    for col in ("controller", "fall rate", "EMA mean [rad^2]", "EMA median", "rho"):
        table.add_column(col, justify="right")

    def fmt(v, spec):
        return "-" if v is None else format(v, spec)

    for c, d in summ["controllers"].items():
        table.add_row(c, f"{d['fall_rate']:.2f}", fmt(d["ema_mean"], ".3e"),
                      fmt(d["ema_median"], ".3e"), fmt(d["contraction"], ".3f"))
    Console().print(table)
    typer.echo(f"wall time {summ['wall_time']:.1f} s")
    for f in files:
        typer.echo(f"wrote {f}")
    if summ["failures"]:
        raise typer.Exit(1)


@app.command()
def fixedpoint(
    model: str = typer.Option("compass", "--model", help=_MODEL_HELP),
    controller: str = typer.Option("passive", "--controller", help="passive or fl"),
    slope: float | None = typer.Option(None, "--slope", callback=number(gt=-1.5, lt=1.5),
                                        help="slope [rad] (default: model's)"),
    dt: float | None = typer.Option(None, "--dt", callback=number(ge=MIN_DT, le=MAX_DT),
                                    help="RK4 step \\[s] (1e-6 to 0.1)"),
    stride_time_limit: float | None = typer.Option(
        None, "--stride-time-limit", callback=number(gt=0, le=MAX_STRIDE_TIME),
        help=_LIMIT_HELP),
    json_out: bool = typer.Option(False, "--json", help="machine-readable output"),
) -> None:
    """Find the period-one gait (Newton on the Poincaré map) and its eigenvalues."""
    from rbc.walkers.api import find_gait

    alpha = _slope(model, slope)
    with _err.status("Newton on the Poincaré map"):
        fp = find_gait(model, controller, alpha, dt=dt, t_max=stride_time_limit)
    data = {
        "fixed_point": [float(v) for v in fp.x],
        "eigenvalues": [[float(e.real), float(e.imag)] for e in fp.eigenvalues],
        "spectral_radius": fp.spectral_radius,
        "step_period": fp.step_period,
        "jacobian": fp.jacobian.tolist(),
        "jacobian_method": fp.jacobian_method,
        "fd_difference": fp.fd_difference,
    }
    if json_out:
        typer.echo(json.dumps(data))
        return
    table = Table(title=escape(f"{model} / {controller}: fixed point (post-impact state)"))
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
    typer.echo(f"Jacobian: {fp.jacobian_method}; max |DP - DP_fd| = {fp.fd_difference:.1e} "
               "(central differences, step 1e-6)")

"""``rbc bench …``: benchmarks, reported as ratios against a peer run in the same process."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from rbc.cli.app import number, progress_bar

#: Largest chain of `bench compile` (its record is ~100 MB of YAML; 10 000 is the benchmark).
MAX_BENCH_LOOPS = 100_000

bench_app = typer.Typer(help="Benchmarks (ratios against a peer in the same process).",
                        no_args_is_help=True)


@bench_app.command("compile")
def bench_compile_command(
    loops: Annotated[str, typer.Option(help="Comma-separated loop counts N.")] =
        "10,100,1000",
    repeats: Annotated[int, typer.Option(min=1, max=1000,
                                         help="Best of this many runs per N.")] = 3,
    record: Annotated[Path | None, typer.Option(
        help="Also time `rbc compile RECORD` in a fresh interpreter (wall, start included).")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Compile time against loop count on generated chains of four-bar loops."""
    from rbc.bench.compile import bench_compile, cli_wall_time

    sizes = _loop_counts(loops, MAX_BENCH_LOOPS)
    with progress_bar() as bar:
        task = bar.add_task("compiling chains", total=len(sizes))
        rows = bench_compile(sizes, repeats, progress=lambda n: bar.advance(task))
    wall = cli_wall_time(record) if record else None
    if as_json:
        typer.echo(json.dumps({"chains": rows, "record": str(record) if record else None,
                               "record_wall_seconds": wall}, indent=2))
        return
    t = Table(title="compile time per loop (peer: smallest N)", title_justify="left")
    for col in ("loops N", "total [s]", "per loop [µs]", "ratio to peer", "slowest pass"):
        t.add_column(escape(col), justify="right")  # "[s]" is not rich markup
    for r in rows:
        slow = max(r["passes"].items(), key=lambda kv: kv[1])
        t.add_row(str(r["loops"]), f"{r['seconds']:.4f}", f"{r['per_loop_us']:.1f}",
                  f"{r['ratio']:.2f}", f"{slow[0]} {slow[1]:.4f} s")
    Console().print(t)
    if wall is not None:
        Console().print(f"rbc compile {record}: {wall:.3f} s wall (interpreter start included)")


#: Largest chain of `bench scaling` (the kernel's E and M_T are dense: ~0.5 GB at 3000).
MAX_SCALING_LOOPS = 3000


@bench_app.command("scaling")
def bench_scaling_command(
    loops: Annotated[str, typer.Option(help="Comma-separated loop counts N.")] =
        "10,100,1000",
    states: Annotated[int, typer.Option(min=1, max=1000, help="States per chain.")] = 5,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Kernel forward-dynamics time per loop on generated chains of four-bar loops."""
    from rbc.bench.scaling import bench_scaling

    sizes = _loop_counts(loops, MAX_SCALING_LOOPS)
    with progress_bar() as bar:
        task = bar.add_task("evaluating chains", total=len(sizes))
        rows = bench_scaling(sizes, states, progress=lambda n: bar.advance(task))
    if as_json:
        typer.echo(json.dumps({"chains": rows}, indent=2))
        return
    t = Table(title="kernel evaluation per loop (peer: smallest N)", title_justify="left")
    for col in ("loops N", "nv", "independent", "forward by", "geometry + lift [µs]",
                "curvature [µs]", "forward dynamics [µs]", "per loop [µs]", "ratio to peer"):
        t.add_column(escape(col), justify="right")
    for r in rows:
        t.add_row(str(r["loops"]), str(r["nv"]), str(r["independent"]),
                  "nodes" if r["recursion"] else "M_r",
                  f"{r['geometry_us']:.1f}", f"{r['curvature_us']:.1f}",
                  f"{r['forward_us']:.1f}", f"{r['per_loop_us']:.2f}", f"{r['ratio']:.2f}")
    Console().print(t)


#: Largest chain of `bench export` (each N is compiled first; 500 is the issue's case).
MAX_EXPORT_LOOPS = 10_000


@bench_app.command("export")
def bench_export_command(
    loops: Annotated[str, typer.Option(help="Comma-separated loop counts N.")] =
        "50,100,200,500",
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """MJCF export time and peak memory against loop count (chains of four-bar loops, each
    exported in a fresh interpreter); says whether MuJoCo loads each file."""
    from rbc.bench.export import bench_export

    sizes = _loop_counts(loops, MAX_EXPORT_LOOPS)
    with progress_bar() as bar:
        task = bar.add_task("exporting chains", total=len(sizes))
        rows = bench_export(sizes, progress=lambda n: bar.advance(task))
    if as_json:
        typer.echo(json.dumps({"chains": rows}, indent=2))
        return
    t = Table(title="MJCF export per loop (peer: smallest N); peak RSS of a fresh process",
              title_justify="left")
    for col in ("loops N", "export [s]", "per loop [ms]", "ratio to peer",
                "peak after export [MB]", "MuJoCo load [s]", "peak after load [MB]",
                "MuJoCo loads"):
        t.add_column(escape(col), justify="right")
    for r in rows:
        t.add_row(str(r["loops"]), f"{r['export_seconds']:.3f}", f"{r['per_loop_ms']:.2f}",
                  f"{r['ratio']:.2f}", f"{r['peak_mb_export']:.0f}",
                  f"{r['load_seconds']:.2f}", f"{r['peak_mb_load']:.0f}",
                  "yes" if r["loads"] else "no")
    con = Console()
    con.print(t)
    for r in rows:
        if not r["loads"]:
            con.print(f"N = {r['loops']}: {escape(r['message'])}")


def _loop_counts(text: str, largest: int) -> list[int]:
    """``--loops`` as sorted positive integers up to ``largest`` (UsageError otherwise)."""
    from rbc.errors import UsageError

    try:
        sizes = [int(x) for x in text.split(",") if x.strip()]
    except ValueError as err:
        raise UsageError(f"--loops: expected comma-separated integers, got '{text}'") from err
    if not sizes or min(sizes) < 1 or max(sizes) > largest:
        raise UsageError(f"--loops: expected integers from 1 to {largest}, got '{text}'")
    return sizes


@bench_app.command("corrector")
def bench_corrector_command(
    bundle: Annotated[Path, typer.Argument(help="Bundle written by `rbc compile`.")],
    steps: Annotated[int, typer.Option(min=1, max=10_000_000,
                                       help="Motion steps (h = 1 ms).")] = 200,
    partition: Annotated[str | None, typer.Option(help="Stored partition.")] = None,
    mode: Annotated[str | None, typer.Option(
        "--mode", help="A stored support mode instead of a partition (its model: the "
        "supports as closures to the world; docs/supports.md).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Fresh residual/Jacobian evaluations per motion step: analytic vs FD correctors."""
    from rbc.bench.corrector import bench_corrector
    from rbc.model.compiled import CompiledModel
    from rbc.model.solve import get_partition

    model = CompiledModel.from_bundle(bundle)
    if mode is not None:
        model, part = _mode_model(model, mode, partition)
    else:
        part = get_partition(model, partition)
    with progress_bar() as bar:
        task = bar.add_task("motion steps", total=steps)
        res = bench_corrector(model, part, steps, progress=lambda n: bar.advance(task, n))
    if as_json:
        typer.echo(json.dumps({"bundle": str(bundle), "partition": part.name, **res}, indent=2))
        return
    t = Table(title=f"corrector per motion step ({steps} steps, h = {res['h']} s; peer: "
              "analytic)", title_justify="left")
    for col in ("method", "median evals", "max evals", "total [s]", "time ratio"):
        t.add_column(escape(col), justify="right")  # "[s]" is not rich markup
    for name, r in res["methods"].items():
        t.add_row(name, f"{r['evals_median']:g}", str(r["evals_max"]), f"{r['seconds']:.3f}",
                  f"{r['ratio']:.2f}")
    Console().print(t)
    u = res["update"]
    Console().print(f"update: per module {u['module']:.3f} s, one global Newton "
                    f"{u['global']:.3f} s (ratio {u['ratio']:.2f})")


def _mode_model(model, mode: str, partition: str | None):
    """The model and partition of a stored support mode (``--mode``)."""
    from rbc.errors import UsageError
    from rbc.model.modes import model_for
    from rbc.verify.modes import select_modes

    if partition is not None:
        raise UsageError("--mode and --partition exclude each other (a mode has its own "
                         "partition)")
    if mode == "all":
        raise UsageError("--mode: name one stored mode")
    info = model.modes[select_modes(model, mode)[0]]
    return model_for(model, info), info.partition


@bench_app.command("local-edit")
def bench_local_edit_command(
    bundle: Annotated[Path, typer.Argument(help="Bundle with support modes.")],
    mode: Annotated[str, typer.Option("--mode", help="A stored support mode with two or more "
                                      "supports in separate modules.")],
    repeats: Annotated[int, typer.Option(min=1, help="Edits per case.")] = 50,
    seed: Annotated[int, typer.Option(help="Seed of the edits.")] = 20260927,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Move one or two support targets: module-local against global update time."""
    from rbc.bench.local_edit import bench_local_edits
    from rbc.errors import UsageError
    from rbc.model.compiled import CompiledModel
    from rbc.verify.modes import select_modes

    model = CompiledModel.from_bundle(bundle)
    info = model.modes[select_modes(model, mode)[0]]
    try:
        r = bench_local_edits(model, info, repeats, seed)
    except ValueError as err:
        raise UsageError(str(err)) from err
    if as_json:
        typer.echo(json.dumps({"bundle": str(bundle), **r}, indent=2))
        return
    t = Table(title=f"{r['mode']}: support targets moved by {1e3 * r['edit']:g} mm, base held "
              f"({r['repeats']} edits per case; peer: one global Newton)", title_justify="left")
    for col in ("edit", "modules solved", "local median [ms]", "global median [ms]",
                "local below global", "max |q_local − q_global|", "other coordinates moved"):
        t.add_column(escape(col), justify="right")
    for case, c in r["cases"].items():
        t.add_row(f"{case} support{'s' if case == 'two' else ''}",
                  f"{c['modules_solved']} of {c['modules']}", f"{1e3 * c['local_median']:.3f}",
                  f"{1e3 * c['global_median']:.3f}", f"{100 * c['reduction']:.1f} %",
                  f"{c['max_difference']:.1e}", str(c["untouched_changed"]))
    Console().print(t)


@bench_app.command("dynamics")
def bench_dynamics_command(
    bundle: Annotated[Path, typer.Argument(help="Compiled bundle (.h5).")],
    states: Annotated[int, typer.Option("--states", min=1, max=10_000_000,
                      help="Distinct states of the batched run.")] = 1000,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Reduced forward dynamics vs Pinocchio constraintDynamics, time per state."""
    from rbc.bench.dynamics import bench_dynamics

    r = bench_dynamics(bundle, states)
    if as_json:
        typer.echo(json.dumps(r, indent=2))
        return
    t = Table(title=f"{r['robot']}: forward dynamics per state (peer: Pinocchio "
              "constraintDynamics)", title_justify="left")
    for col in ("run", "evaluator", "rbc [µs]", "Pinocchio [µs]", "ratio"):
        t.add_column(escape(col), justify="right")  # "[s]" is not rich markup
    for k in ("single", "batched"):
        label = "single state" if k == "single" else f"batched ({r['states']} states)"
        for ev, key, ratio in (("kernel", "ours", "ratio"),
                               ("reference", "reference", "ratio_reference")):
            t.add_row(label, ev, f"{r[key][f'{k}_us']:.1f}",
                      f"{r['pinocchio'][f'{k}_us']:.1f}", f"{r[ratio][k]:.2f}")
    Console().print(t)
    kr = r["kernel"]
    Console().print(
        f"max δ_a vs Pinocchio over the states: kernel {r['delta_a']:.2e}, reference "
        f"{r['delta_a_reference']:.2e}\n"
        f"kernel first call in this process (JIT compile or cache load): "
        f"{kr['first_call_s']:.3f} s\n"
        f"kernel batch of {r['states']} states (prange): {kr['batch_1_thread_us']:.1f} µs/state "
        f"on 1 thread, {kr['batch_parallel_us']:.1f} µs/state on {kr['threads']} "
        f"(speed-up {kr['parallel_speedup']:.2f}); CPU {kr['batch_1_thread_cpu_us']:.1f} / "
        f"{kr['batch_parallel_cpu_us']:.1f} µs/state (efficiency "
        f"{kr['parallel_efficiency']:.2f})")


@bench_app.command("api")
def bench_api_command(
    bundle: Annotated[Path, typer.Argument(help="Compiled bundle (.h5).")],
    states: Annotated[int, typer.Option("--states", min=1, max=100_000,
                      help="Distinct states.")] = 100,
    rounds: Annotated[int, typer.Option("--rounds", min=1, max=1000,
                      help="Timed samples per state and side (the fastest counts).")] = 15,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """The Python API's cost over the internal calls it wraps (ratio ≤ 1.1). Exit 1 if a
    ratio exceeds it."""
    from rbc.bench.api import bench_api

    r = bench_api(bundle, states, rounds)
    if as_json:
        typer.echo(json.dumps(r, indent=2))
    else:
        t = Table(title=f"{r['robot']}: API call vs internal call, µs per call (fastest of "
                  f"{r['rounds']} samples per state, mean over {r['states']} states)",
                  title_justify="left")
        for col in ("call", "evaluator", "API [µs]", "internal [µs]", "ratio",
                    "max |difference|"):
            t.add_column(escape(col), justify="right", no_wrap=True)  # "[µs]": not markup
        for name, c in r["calls"].items():
            t.add_row(name, c["evaluator"], f"{c['api_us']:.1f}", f"{c['internal_us']:.1f}",
                      f"{c['ratio']:.3f}", f"{c['max_difference']:.1e}")
        con = Console(highlight=False)
        con.print(t)
        con.print(f"limit {r['limit']:g}: " + ("pass" if r["passed"] else "FAIL"))
    if not r["passed"]:
        raise typer.Exit(1)


@bench_app.command("simulate")
def bench_simulate_command(
    bundle: Annotated[Path, typer.Argument(help="Bundle written by `rbc compile`.")],
    reference: Annotated[Path, typer.Option(
        help="Reference knots (CSV or YAML) of independent coordinates.")],
    duration: Annotated[float, typer.Option(callback=number(gt=0),
                                            help="Simulated time \\[s].")] = 2.0,
    dt: Annotated[float, typer.Option(callback=number(gt=0),
                                      help="Physics step and control period \\[s].")] = 1e-3,
    backends: Annotated[str, typer.Option(
        help="Comma-separated backends, run in this order.")] = "reduced,mujoco,pinocchio",
    controller: Annotated[str, typer.Option(help="pd, pd+ff or passive.")] = "pd+ff",
    evaluator: Annotated[str, typer.Option(
        help="Reduced backend evaluator: kernel or reference.")] = "kernel",
    integrator: Annotated[str, typer.Option(
        help="Reduced backend integrator: dopri5, rk4, RK45 or DOP853.")] = "dopri5",
    fix_root: Annotated[bool, typer.Option(
        "--fix-root", help="Weld floating roots to the world (rbc simulate --fix-root).")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """The same closed-loop simulation on each backend: loop wall time, real-time factor."""
    from rich.progress import BarColumn, TextColumn, TimeRemainingColumn

    from rbc.bench.simulate import bench_simulate, parse_backends

    names = parse_backends(backends)
    labels = {"lift": "lifting the reference", "ff": "feedforward table",
              "simulate": "simulating"}
    with progress_bar(TextColumn("{task.description}"), BarColumn(), TextColumn(
            "{task.percentage:>5.1f}%"), TimeRemainingColumn()) as bar:
        tasks: dict[tuple[str, str], int] = {}

        def progress(backend: str, stage: str, fraction: float) -> None:
            if (backend, stage) not in tasks:
                tasks[backend, stage] = bar.add_task(f"{backend}: {labels[stage]}", total=1.0)
            bar.update(tasks[backend, stage], completed=fraction)

        r = bench_simulate(bundle, reference, names, duration, dt, controller, progress,
                           evaluator, integrator, fix_root)
    if as_json:
        typer.echo(json.dumps(r, indent=2))
        return
    rows = r["backends"]
    task_names = sorted({n for row in rows.values() for n in row["tracking_rms"]})
    con = Console(highlight=False)
    con.print(f"{r['robot']}: {r['controller']}, {r['duration']:g} s simulated, dt "
              f"{r['dt']:g} s (peer: {r['peer']}; reduced: {r['integrator']}, "
              f"{r['evaluator']} evaluator)")
    t = Table()
    t.add_column("")
    for name in rows:
        t.add_column(name, justify="right")
    lines = [
        ("prepare [s] (not in RTF)", lambda w: f"{w['prepare_s']:.3f}"),
        ("control loop wall [s]", lambda w: f"{w['wall_s']:.3f}"),
        ("kernel load [s] (not in RTF)", lambda w: "-" if w["kernel_load_s"] is None
         else f"{w['kernel_load_s']:.3f}"),
        ("simulated [s]", lambda w: f"{w['duration_s']:g}"),
        ("real-time factor", lambda w: f"{w['real_time_factor']:.3g}"),
        ("physics steps", lambda w: str(w["physics_steps"])),
        ("µs per physics step", lambda w: f"{w['us_per_step']:.1f}"),
        (f"wall / {r['peer']}", lambda w: f"{w['ratio_to_peer']:.2f}"),
        *((f"{n} tracking RMS [mm]", lambda w, n=n: f"{1e3 * w['tracking_rms'][n]:.3g}"
           if n in w["tracking_rms"] else "-") for n in task_names),
        ("max port RMS [m or rad]",
         lambda w: f"{max(w['port_rms'].values(), default=float('nan')):.3g}"),
        ("max loop gap [m]", lambda w: f"{w['max_loop_gap']:.2g}"),
    ]
    for label, cell in lines:  # escape: "[s]" would be read as rich markup
        t.add_row(escape(label), *(cell(w) for w in rows.values()))
    con.print(t)


@bench_app.command("hostile")
def bench_hostile_command(
    cases: Annotated[list[str] | None, typer.Argument(
        help="Case names (default: all; --list shows them).")] = None,
    list_cases: Annotated[bool, typer.Option("--list", help="List the cases and exit.")
                          ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """The hostile inputs of issue #14, each run by rbc in a fresh interpreter: exit status,
    message, wall time and peak memory against a valid run (exit 1 if a case misbehaves)."""
    from rich.progress import BarColumn, TextColumn

    from rbc.bench.hostile import CASES, run_cases
    from rbc.errors import UsageError

    if list_cases:
        for c in CASES:
            typer.echo(f"{c.name:24s} class {c.group}  {c.what}")
        return
    with progress_bar(TextColumn("{task.description}"), BarColumn()) as bar:
        task = bar.add_task("hostile cases", total=len(cases or CASES))
        try:
            outcomes = run_cases(cases, progress=lambda c: (bar.update(
                task, description=c.name), bar.advance(task)))
        except ValueError as err:
            raise UsageError(f"unknown case(s) {err}; valid choices: "
                             + ", ".join(c.name for c in CASES)) from None
    if as_json:
        typer.echo(json.dumps([{"case": o.case.name, "class": o.case.group,
                                "what": o.case.what, "exit": o.code,
                                "expected_exit": o.case.code, "peak_mib": o.peak_mib,
                                "seconds": o.seconds, "message": o.message, "ok": o.ok}
                               for o in outcomes], indent=2))
    else:
        t = Table(title="hostile inputs (peer: a valid `rbc inspect`)", title_justify="left")
        for col in ("case", "class", "exit", "peak [MiB]", "wall [s]", "message"):
            t.add_column(escape(col), justify="right" if col in ("exit", "peak [MiB]",
                                                                 "wall [s]") else "left")
        for o in outcomes:
            flag = "" if o.ok else " (UNEXPECTED)"
            t.add_row(o.case.name, str(o.case.group), f"{o.code}{flag}", f"{o.peak_mib:.0f}",
                      f"{o.seconds:.1f}", escape(o.message[:90]))
        Console().print(t)
    if not all(o.ok for o in outcomes):
        raise typer.Exit(1)

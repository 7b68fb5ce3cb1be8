"""``rbc simulate BUNDLE --backend … --reference FILE --controller …``: run and summarise."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from rbc.cli.app import app, given_options, number, progress_bar


def _pairs(values: list[str] | None, option: str, **bounds: float) -> dict[str, float]:
    """``NAME=VALUE`` options as a dict: each name once, values finite (and in ``bounds``)."""
    from rbc.errors import UsageError
    from rbc.model.solve import parse_assignment
    from rbc.safeio import check_number, named_values

    def parse(text: str) -> tuple[str, float]:
        try:
            name, value = parse_assignment(text)
        except UsageError as err:
            raise UsageError(str(err).replace("--set", option)) from None
        check_number(f"{option} {name}", value, **bounds)
        return name, value

    return named_values(values, option, parse)


@app.command("simulate")
def simulate_command(
    ctx: typer.Context,
    bundle: Annotated[Path, typer.Argument(help="Bundle written by `rbc compile`.")],
    backend: Annotated[str, typer.Option(help="Plant: reduced, mujoco or pinocchio.")
                       ] = "reduced",
    reference: Annotated[Path | None, typer.Option(
        help="Reference knots (CSV or YAML) of independent coordinates.")] = None,
    controller: Annotated[str, typer.Option(
        help="pd, pd+ff, passive, task (the rbc plan law online; needs --task), or "
        "allocation (composed bundles: tracking law + effort allocation in the sole "
        "contact-wrench cones, docs/allocation.md).")] = "pd+ff",
    duration: Annotated[float | None, typer.Option(
        callback=number(gt=0), help="Simulated time \\[s] (default: the reference's length)."
    )] = None,
    dt: Annotated[float, typer.Option(callback=number(gt=0), help="Physics step \\[s].")
                  ] = 1e-3,
    control_dt: Annotated[float | None, typer.Option(
        callback=number(gt=0), help="Control period \\[s], a multiple of --dt (default --dt)."
    )] = None,
    assignments: Annotated[list[str] | None, typer.Option(
        "--set", help="Initial independent coordinate NAME=VALUE [rad or m] (no reference); "
        "repeatable.")] = None,
    velocity: Annotated[list[str] | None, typer.Option(
        "--velocity", help="Initial independent speed NAME=VALUE (no reference); "
        "repeatable.")] = None,
    payload: Annotated[list[str] | None, typer.Option(
        "--payload", help="Plant only: point mass BODY=KG at the body's COM; repeatable.")
    ] = None,
    push: Annotated[list[str] | None, typer.Option(
        "--push", help="Plant only: force BODY=FX,FY,FZ@START+DURATION \\[N, s] (world axes, at "
        "the body's centre of mass; mujoco and pinocchio); repeatable.")] = None,
    friction: Annotated[float | None, typer.Option(
        "--friction", help="Plant only: friction coefficient μ of every support.")] = None,
    inertia_scale: Annotated[float, typer.Option(
        callback=number(gt=0), help="Plant only: factor on every body's mass and inertia.")
    ] = 1.0,
    bandwidth: Annotated[float, typer.Option(callback=number(gt=0),
                                             help="PD natural frequency [Hz].")] = 5.0,
    zeta: Annotated[float, typer.Option(callback=number(ge=0), help="PD damping ratio.")
                    ] = 1.0,
    kp: Annotated[list[str] | None, typer.Option(
        "--kp", help="Override a port's stiffness ACTUATOR=VALUE; repeatable.")] = None,
    kd: Annotated[list[str] | None, typer.Option(
        "--kd", help="Override a port's damping ACTUATOR=VALUE; repeatable.")] = None,
    integrator: Annotated[str, typer.Option(
        help="Reduced backend: dopri5 (adaptive Dormand–Prince 5(4) with error control and "
        "run-time re-partitioning), rk4 (fixed step --dt; warns when its estimated error "
        "exceeds the tolerance) or RK45/DOP853 (scipy, fixed partition, validation).")
    ] = "dopri5",
    rtol: Annotated[float, typer.Option(
        callback=number(gt=0, lt=1),
        help="Reduced backend: relative local error tolerance per step.")] = 1e-9,
    atol: Annotated[float, typer.Option(
        callback=number(gt=0),
        help="Reduced backend: absolute local error tolerance per step "
        "\\[rad, m, rad/s, m/s, J].")] = 1e-12,
    evaluator: Annotated[str, typer.Option(
        help="Reduced backend: kernel (compiled numba kernels, default) or reference "
        "(the NumPy/Pinocchio path, for checking).")] = "kernel",
    reference_dt: Annotated[float, typer.Option(
        callback=number(gt=0),
        help="Grid spacing \\[s] of the reference lift and feedforward table.")] = 0.01,
    partition: Annotated[str | None, typer.Option(help="Stored partition name.")] = None,
    mode: Annotated[str | None, typer.Option(
        "--mode", help="Composed bundles: the composed mode (default: the first).")] = None,
    plant: Annotated[str | None, typer.Option(
        "--plant", help="Composed bundles on --backend mujoco: ideal (default) or realistic "
        "(drive and bearing friction, 2 ms effort lag, torque-speed limit, sensor noise; "
        "docs/composition.md).")] = None,
    seed: Annotated[int | None, typer.Option(
        "--seed", help="--plant realistic: seed of the measurement noise (default 0).")
    ] = None,
    fix_root: Annotated[bool, typer.Option(
        "--fix-root", help="Weld floating roots to the world (fixed-base experiments).")
    ] = False,
    task: Annotated[list[str] | None, typer.Option(
        "--task", help="--controller task: a task SPEC as in rbc plan; repeat to stack.")
    ] = None,
    to: Annotated[list[str] | None, typer.Option(
        "--to", help="--controller task: a waypoint, as in rbc plan; repeatable.")] = None,
    kx: Annotated[str, typer.Option("--kx", help="--controller task: K_x \\[1/s].")] = "2",
    stroke_preference: Annotated[float, typer.Option(
        "--stroke-preference", help="--controller task: k_Φ \\[J·s].")] = 0.0,
    relax: Annotated[str, typer.Option(help="--controller task: none or slack.")] = "none",
    speed_scale: Annotated[float, typer.Option(
        help="--controller task: factor on the speed limits.")] = 1.0,
    out: Annotated[Path | None, typer.Option(
        "--out", help="Directory for log.h5, summary.json and plots.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")
                       ] = False,
) -> None:
    """Run a controller on a plant (reduced model, MuJoCo or Pinocchio) and summarise."""
    from rich.console import Console
    from rich.progress import BarColumn, TextColumn, TimeRemainingColumn

    from rbc.cli.plan import task_request
    from rbc.compose.bundle import has_composition
    from rbc.errors import UsageError
    from rbc.kernels import cache_is_cold
    from rbc.safeio import check_outputs
    from rbc.sim.outputs import write_outputs
    from rbc.sim.run import SimOptions, prepare, simulate

    check_outputs({"BUNDLE": bundle, "--reference": reference}, {"--out": out},
                  directories=["--out"])  # also checks that --out is replaceable
    req = None
    ignored = given_options(ctx, ("to", "kx", "stroke_preference", "relax", "speed_scale"))
    if ignored and not task:  # (they would be silently ignored)
        raise UsageError(f"{', '.join(ignored)}: task options; give --controller task with "
                         "--task NAME, or drop them")
    if task:
        if duration is None:
            raise UsageError("--task needs --duration (the duration of the task's path) [s]")
        req = task_request(task, to, duration, kx, stroke_preference, relax, speed_scale)
    opts = SimOptions(task=req,
        backend=backend, controller=controller, duration=duration, dt=dt,
        control_dt=control_dt, reference=reference, reference_dt=reference_dt,
        initial=_pairs(assignments, "--set"), velocity=_pairs(velocity, "--velocity"),
        payload=tuple(_pairs(payload, "--payload", ge=0).items()),
        inertia_scale=inertia_scale, push=tuple(push or ()), friction=friction,
        bandwidth=bandwidth, zeta=zeta,
        kp=_pairs(kp, "--kp", ge=0), kd=_pairs(kd, "--kd", ge=0),
        integrator=integrator, rtol=rtol, atol=atol, evaluator=evaluator, partition=partition,
        fix_root=fix_root, mode=mode, plant=plant, seed=seed)
    # the reduced plant steps on the kernels; a composed bundle's engine plants measure
    # with them (the poses and the lift of the measured speeds)
    if cache_is_cold() and ((backend == "reduced" and evaluator == "kernel")
                            or (backend != "reduced" and has_composition(bundle))):
        Console(stderr=True, highlight=False).print(
            "note: first use of rbc's compiled kernels on this installation: numba compiles "
            "them now (1–4 min of CPU, before the control loop starts); cached afterwards",
            markup=False)
    labels = {"lift": "lifting the reference", "ff": "feedforward table",
              "simulate": f"simulating ({backend})"}
    with progress_bar(TextColumn("{task.description}"), BarColumn(), TextColumn(
            "{task.percentage:>5.1f}%"), TimeRemainingColumn()) as bar:
        tasks: dict[str, int] = {}

        def progress(stage: str, fraction: float) -> None:
            if stage not in tasks:
                tasks[stage] = bar.add_task(labels[stage], total=1.0)
            bar.update(tasks[stage], completed=fraction)

        result = simulate(prepare(bundle, opts, progress), progress)
    s = result.summary
    err = Console(stderr=True, highlight=False)
    for line in s.get("warnings", []):
        err.print(f"warning: {line}", markup=False)
    if out is not None:
        write_outputs(result, out)
    if as_json:
        typer.echo(json.dumps(s, indent=2))
        return
    con = Console(highlight=False, soft_wrap=True)  # no wrapping at 80 columns when piped
    con.print(f"{Path(bundle).name}: {backend}, {controller}, {s['duration']:g} s "
              f"(dt {dt:g} s, control {s['control_dt']:g} s); real-time factor "
              f"{s['real_time_factor']:.3g}")
    for name, rms in s["tracking_rms"].items():
        con.print(f"  tracking RMS {name}: {1e3 * rms:.4g} mm")
    if "task" in s:
        ts = s["task"]
        con.print(f"  task {'+'.join(task or ())}: ‖e_x‖ initial {ts['error_initial']:.3g}, "
                  f"final {ts['error_final']:.3g}, max {ts['error_max']:.3g} (m, rad); "
                  f"max slack {ts['slack_max']:.3g}")
    if "allocation" in s:
        al = s["allocation"]
        con.print(f"  allocation: {al['steps']} steps, max slack {al['slack_max']:.3g} "
                  f"({al['slack_steps']} steps above 1e-9), tracking ‖e‖∞ max "
                  f"{al['tracking_error_max']:.3g}, final {al['tracking_error_final']:.3g} "
                  f"(rad, m); min sole normal force {al['min_normal']:.4g} N")
    for name, peak in s["peak_effort"].items():
        lo, hi = s["effort_limits"][name]
        du, fu = s["port_units"][name]
        rms = f"port RMS {s['port_rms'][name]:.3g} {du}, " if name in s["port_rms"] else ""
        con.print(f"  {name}: {rms}peak effort {peak:.4g} {fu} (limits {lo:g}..{hi:g} {fu})")
    con.print(f"  clipped steps {s['clipped_steps']}, max loop gap {s['max_loop_gap']:.3g} m, "
              f"energy ledger residual {s['energy_ledger_residual']:.3g} J "
              f"({s['energy_ledger_relative']:.3g} of the largest energy term)")
    if "drives" in s:
        d = s["drives"]
        peaks = ", ".join(f"{n} {p:.4g}" for n, p in d["peak_actual_effort"].items())
        con.print(f"  drives: work drawn {d['work_drawn']:.4g} J, losses {d['work_losses']:.4g} J"
                  f" (separate from the ledger); peak actual effort {peaks}")
    if "integration" in s:
        i = s["integration"]
        con.print(f"  {i['integrator']} (rtol {i['rtol']:g}, atol {i['atol']:g}): "
                  f"{i['accepted_steps']} steps, {i['rejected_steps']} rejected, "
                  f"{i['evaluations']} evaluations, largest error estimate "
                  f"{i['max_error_estimate']:.3g} of the tolerance; {i['evaluator']} evaluator")
        if i["evaluator_note"]:
            con.print(f"  {i['evaluator_note']}")
    for e in s["events"]:
        what = ("re-partitioned" if e["kind"] == "reconfiguration"
                else f"mechanism event (rank {e['rank_before']} → {e['rank_after']})")
        con.print(f"  t = {e['time']:.6g} s: {what}: independent {', '.join(e['old'])} → "
                  f"{', '.join(e['new'])} (cond R_p {e['cond_before']:.3g} → "
                  f"{e['cond_after']:.3g})")
    sm = s.get("support_modes")
    if sm:
        con.print(f"  base position RMS {1e3 * sm['base_position_rms']:.4g} mm (max "
                  f"{1e3 * sm['base_position_max_error']:.4g} mm); {len(sm['switches'])} mode "
                  "switches" + (f", impact losses {sm['impact_losses']:.3g} J"
                                if sm["impact_losses"] is not None else ""))
        for name, x in sm["supports"].items():
            fn = x["min_normal_force"]
            con.print(f"  support {name}: active {100 * x['active_fraction']:.0f} %, max slip "
                      f"{1e3 * x['max_slip']:.3g} mm, min normal force "
                      + (f"{fn:.3g} N" if fn is not None else "-")
                      + (f", max |f_t|/f_n {x['max_friction_ratio']:.3g} (μ {x['friction']:g})"
                         if x["max_friction_ratio"] is not None else ""))
    comp = s.get("composition")
    if comp:
        con.print(f"  composed mode {comp['mode']} (world axes; palm a on palm b, the ground on "
                  "the sole):")
        for name, x in comp["links"].items():
            con.print(f"  link {name}: max force {x['max_force']:.4g} N, max moment "
                      f"{x['max_moment']:.4g} N·m")
        for name, x in comp["supports"].items():
            ratio = x["max_friction_ratio"]
            free, touching = x["contactless_samples"], x["min_contact_normal_force"]
            con.print(f"  support {name}: min normal force {x['min_normal_force']:.4g} N"
                      + (f" ({free} samples without contact; {touching:.4g} N over the "
                         "others)" if free and touching is not None else "")
                      + (f" ({x['tensile_samples']} samples pulling)" if x["tensile_samples"]
                         else "")
                      + (f", max |f_t|/f_n {ratio:.3g} (μ {x['friction']:g})"
                         if ratio is not None else ""))
    if out is not None:
        con.print(f"  outputs in {out}")

"""``rbc verify BUNDLE``: run the check catalogue; exit 1 when a check fails."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from rbc.cli.app import app, progress_bar
from rbc.cli.output import report_console


@app.command("verify")
def verify_command(
    bundle: Annotated[Path, typer.Argument(help="Bundle written by `rbc compile`.")],
    json_file: Annotated[Path | None, typer.Option(
        "--json", help="Also write the results as JSON to this file.")] = None,
    samples: Annotated[int, typer.Option(min=1, max=1_000_000,
                                         help="Sampled configurations.")] = 100,
    seed: Annotated[int, typer.Option(min=0, max=2**63 - 1,
                                      help="Sampling seed (≥ 0).")] = 20260927,
    partition: Annotated[str | None, typer.Option(
        "--partition", help="Stored partition to check (default: `default`).")] = None,
    mode: Annotated[str | None, typer.Option(
        "--mode", help="Check a stored support mode instead (NAME, or `all`: every stored "
        "mode; the sample counts are then totals spread over the modes).")] = None,
    dynamics: Annotated[bool, typer.Option(
        "--dynamics", help="Also check the reduced dynamics against the 50-digit KKT, "
        "Pinocchio and Newton–Euler references (docs/dynamics.md).")] = False,
    dynamics_samples: Annotated[int, typer.Option(
        min=1, max=100_000, help="States per dynamics set (sets A and B).")] = 48,
    mjcf: Annotated[Path | None, typer.Option(
        "--mjcf", help="Also read back this MJCF export (export.mjcf.readback).")] = None,
    pinocchio: Annotated[Path | None, typer.Option(
        "--pinocchio", help="Also read back this Pinocchio export directory "
        "(export.pinocchio.readback).")] = None,
) -> None:
    """Check closure, closure Jacobian, lift, curvature and rank against FD references."""
    from rbc.model.compiled import CompiledModel
    from rbc.model.solve import get_partition
    from rbc.safeio import check_outputs
    from rbc.verify.kinematics import run_kinematic_checks, work_units

    check_outputs({"BUNDLE": bundle, "--mjcf": mjcf, "--pinocchio": pinocchio},
                  {"--json": json_file})
    from rbc.compose.bundle import is_composed
    from rbc.ir.bundle import read_bundle

    data = read_bundle(bundle)
    if is_composed(data):
        _verify_composed(bundle, data, mode, samples, seed,
                         dynamics_samples if dynamics else None, json_file,
                         partition is not None or mjcf is not None or pinocchio is not None)
        return
    model = CompiledModel.from_data(data)
    if mjcf is not None or pinocchio is not None:
        from rbc.verify.export_readback import check_inputs

        check_inputs(model, mjcf, pinocchio)  # exit 2 before any check runs
    if mode is not None:
        _verify_modes(bundle, model, mode, samples, seed, dynamics_samples if dynamics else None,
                      json_file, partition, mjcf, pinocchio)
        return
    part = get_partition(model, partition)
    with progress_bar() as bar:
        task = bar.add_task(f"verifying {model.record.name} ({part.name})",
                            total=work_units(samples))
        checks = run_kinematic_checks(model, part, samples=samples, seed=seed,
                                      progress=lambda n: bar.advance(task, n))
        if dynamics:
            from rbc.verify import dynamics as dyn

            dtask = bar.add_task("dynamics", total=dyn.work_units(dynamics_samples))
            checks += dyn.run_dynamic_checks(model, part, samples=dynamics_samples, seed=seed,
                                             progress=lambda n: bar.advance(dtask, n))
        if model.record.rolling:
            from rbc.verify.rolling import run_rolling_checks

            checks += run_rolling_checks(model, part, dynamics=dynamics, seed=seed)
        if mjcf is not None or pinocchio is not None:
            from rbc.verify.export_readback import readback_checks

            checks += readback_checks(bundle, mjcf, pinocchio)
    _finish(bundle, checks, json_file, f"partition {part.name}, {samples} samples, seed {seed}")


def _verify_modes(bundle: Path, model, mode: str, samples: int, seed: int,
                  dynamics_samples: int | None, json_file: Path | None,
                  partition: str | None, mjcf: Path | None, pinocchio: Path | None) -> None:
    from rbc.errors import UsageError
    from rbc.verify.modes import run_mode_checks, select_modes, work_units

    if partition is not None or mjcf is not None or pinocchio is not None:
        raise UsageError("--mode checks the stored support modes; it cannot be combined with "
                         "--partition, --mjcf or --pinocchio")
    names = select_modes(model, mode)
    with progress_bar() as bar:
        task = bar.add_task(f"verifying {model.record.name} ({len(names)} modes)",
                            total=work_units(model, names, samples, dynamics_samples))
        checks = run_mode_checks(model, names, samples=samples,
                                 dynamics_samples=dynamics_samples, seed=seed,
                                 progress=lambda n: bar.advance(task, n))
    _finish(bundle, checks, json_file,
            f"{len(names)} modes, {samples} samples in all, seed {seed}")


def _verify_composed(bundle: Path, data, mode: str | None, samples: int, seed: int,
                     dynamics_samples: int | None, json_file: Path | None,
                     single_robot_options: bool) -> None:
    """A composed bundle (docs/composition.md, "Verification"): its composed modes."""
    from rbc.compose.bundle import from_data
    from rbc.errors import UsageError
    from rbc.verify.composition import run_composed_checks, work_units

    if single_robot_options:
        raise UsageError(f"{bundle} is a composed bundle: it is checked per composed mode "
                         "(--mode NAME or all); --partition, --mjcf and --pinocchio do not "
                         "apply")
    comp = from_data(data)
    names = list(comp.modes) if mode in (None, "all") else [comp.mode(mode).name]
    n = samples if dynamics_samples is None else dynamics_samples
    with progress_bar() as bar:
        task = bar.add_task(f"verifying composition {comp.name} ({len(names)} modes)",
                            total=len(names) * work_units(n))
        checks = []
        for name in names:
            checks += run_composed_checks(comp, name, samples=n, seed=seed,
                                          dynamics=dynamics_samples is not None,
                                          progress=lambda k: bar.advance(task, k))
    _finish(bundle, checks, json_file, f"composition {comp.name}, {len(names)} modes, "
            f"{n} states per set, seed {seed}")


def _finish(bundle: Path, checks: list, json_file: Path | None, what: str) -> None:
    """Write the JSON report, print the table and exit 1 when a check failed."""
    from rbc.safeio import atomic_write_text
    from rbc.verify.checks import report

    doc = report(str(bundle), checks)
    if json_file is not None:
        atomic_write_text(json_file, json.dumps(doc, indent=2) + "\n")
    t = Table(title=f"rbc verify {bundle} ({what})", title_justify="left")
    modes = any(c.mode is not None for c in checks)
    cols = ((("mode", "left"),) if modes else ()) + (
        ("check", "left"), ("value", "right"), ("limit", "right"), ("unit", "left"),
        ("", "left"), ("detail", "left"))
    for col, just in cols:
        t.add_column(col, justify=just)  # type: ignore[arg-type]
    for c in checks:
        row = (f"{c.value:.3g}", ("≥ " if c.lower_bound else "≤ ") + f"{c.limit:g}", c.unit,
               "[green]pass[/green]" if c.passed else "[red]FAIL[/red]", c.detail)
        t.add_row(*(((c.mode,) if modes else ()) + (c.name,) + row))
    report_console().print(t)
    if not doc["passed"]:
        raise typer.Exit(1)

"""``rbc forces BUNDLE``: one state in, actuator efforts (or accelerations) and every joint's
reaction out (docs/cli.md; the method is in docs/dynamics.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from rbc.cli.app import app
from rbc.cli.output import report_console
from rbc.cli.target import naming, open_model
from rbc.safeio import MAX_OPTION_MAGNITUDE, finite_option

WRENCH_FORM = "BODY@x,y,z=nx,ny,nz,fx,fy,fz"


def _pairs(values: list[str] | None, option: str) -> dict[str, float]:
    from rbc.errors import UsageError
    from rbc.model.solve import parse_assignment

    out: dict[str, float] = {}
    for text in values or ():
        try:
            name, value = parse_assignment(text)
        except UsageError as err:
            raise UsageError(str(err).replace("--set", option).replace(
                "e.g. --set A=0.5", f"e.g. {option} A=0.5")) from None
        if name in out:
            raise UsageError(f"{option} {name} is given twice")
        out[name] = value
    return out


def parse_wrench(text: str):
    """``BODY@x,y,z=nx,ny,nz,fx,fy,fz`` → :class:`rbc.model.dynamics.Wrench` (point in body
    coordinates [m]; moment [N·m] and force [N] in world axes).

    Raises:
        UsageError: not of that form, or a number that is not finite.
    """
    from rbc.errors import UsageError
    from rbc.model.dynamics import Wrench

    body, at, rest = text.partition("@")
    point, eq, load = rest.partition("=")
    bad = UsageError(f"--wrench '{text}': expected {WRENCH_FORM} (point in body "
                     "coordinates [m], moment [N·m] and force [N] in world axes; finite, "
                     f"magnitude ≤ {MAX_OPTION_MAGNITUDE:g}), e.g. "
                     "--wrench coupler@0.1,0,0=0,0,0,0,-5,0")
    if not (at and eq and body.strip()):
        raise bad
    try:
        xyz = [float(x) for x in point.split(",")]
        w = [float(x) for x in load.split(",")]
    except ValueError:
        raise bad from None
    if len(xyz) != 3 or len(w) != 6 or not all(finite_option(x) for x in (*xyz, *w)):
        raise bad
    return Wrench(body.strip(), tuple(xyz), tuple(w))


@app.command("forces")
def forces_command(
    bundle: Annotated[Path, typer.Argument(help="Bundle written by `rbc compile`.")],
    assignments: Annotated[list[str] | None, typer.Option(
        "--set", help="Independent coordinate NAME=VALUE \\[rad or m]; repeatable (the rest "
        "is closed on the manifold; unset ones keep q_ref).")] = None,
    velocity: Annotated[list[str] | None, typer.Option(
        "--velocity", help="Independent speed NAME=VALUE \\[rad/s or m/s]; repeatable "
        "(default 0).")] = None,
    acceleration: Annotated[list[str] | None, typer.Option(
        "--acceleration", help="Independent acceleration NAME=VALUE \\[rad/s² or m/s²] for "
        "inverse dynamics; repeatable (default 0: statics or steady motion).")] = None,
    effort: Annotated[list[str] | None, typer.Option(
        "--effort", help="Port effort ACTUATOR=VALUE \\[N·m or N]: forward dynamics (the "
        "accelerations are computed; unnamed actuators 0); repeatable.")] = None,
    wrench: Annotated[list[str] | None, typer.Option(
        "--wrench", help=f"External wrench {WRENCH_FORM}: point in body coordinates \\[m], "
        "moment \\[N·m] and force \\[N] in world axes; repeatable.")] = None,
    partition: Annotated[str | None, typer.Option(
        "--partition", help="Stored partition (default: `default`).")] = None,
    mode: Annotated[str | None, typer.Option(
        "--mode", help="Composed bundles: the composed mode (default: the first).")] = None,
    allocate: Annotated[bool, typer.Option(
        "--allocate", help="Composed bundles: the efforts from the allocation QP with the "
        "sole contact-wrench cones (docs/allocation.md) instead of minimum-norm; exit 1 "
        "if the accelerations cannot be reached inside the cones (slack > 1e-9).")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Actuator efforts (inverse dynamics) or accelerations (forward), and the reaction
    wrench of every joint, tree and cut, at one state. Exit 1 if the along-free-direction
    check fails."""
    sets = _pairs(assignments, "--set")
    speeds = _pairs(velocity, "--velocity")
    accels = _pairs(acceleration, "--acceleration")
    efforts = _pairs(effort, "--effort") if effort else None
    wrenches = tuple(parse_wrench(w) for w in wrench or ())
    comp, model = open_model(bundle, partition, mode)
    _check_allocate(allocate, comp, bundle, efforts, wrenches)
    u = model.vector(speeds, "independent", "--velocity")
    udot = model.vector(accels, "independent", "--acceleration") if accels else None
    f = model.vector(efforts, "actuators", "--effort") if efforts else None
    with naming(bundle, "--set"):
        state = model.close(sets, speeds=u)
    alloc = None
    if allocate:
        from rbc.control.inverse import allocation_report

        alloc = allocation_report(comp, model.partition, state.q, state.u, udot)
        if alloc["error"] is None:  # forward dynamics with the allocated efforts
            f, udot = model.vector(alloc["efforts"], "actuators", "--allocate"), None
        else:  # what the report's efforts then are (JSON readers see it too)
            alloc["shown"] = "minimum-norm inverse dynamics without bounds and cones"
    sol = model.reactions(state, udot=udot, efforts=f, wrenches=wrenches)
    doc = {"bundle": str(bundle), **model.forces_report(sol)}
    if alloc is not None:
        doc["allocation"] = alloc
    if comp is not None:
        from rbc.compose.wrenches import link_and_support_report

        doc["composed_mode"] = model.partition
        doc.update(link_and_support_report(comp, model.partition, sol.q, sol.v, sol.udot,
                                           sol.efforts, wrenches))
    if as_json:
        typer.echo(json.dumps(doc, indent=2))
    else:
        _print(model.name, doc)
    if not doc["checks"]["passed"] or (alloc is not None and not alloc["reached"]):
        raise typer.Exit(1)


def _check_allocate(allocate: bool, comp, bundle: Path, efforts, wrenches) -> None:
    """--allocate needs a composed bundle and computes the efforts itself.

    Raises:
        UsageError: a plain bundle, --effort or --wrench with --allocate.
    """
    from rbc.errors import UsageError

    if not allocate:
        return
    if comp is None:
        raise UsageError(f"--allocate allocates efforts on a composed mode's supports; {bundle} "
                         "is not a composed bundle (rbc compose)")
    if efforts:
        raise UsageError("--allocate computes the efforts: drop --effort")
    if wrenches:
        raise UsageError("--allocate does not take --wrench (the support-wrench maps of the "
                         "allocation have no external wrenches)")


def _vec(x: list[float], floor: float) -> str:
    """Components as text, round-off (|x| < floor) shown as 0."""
    return " ".join(f"{(v if abs(v) >= floor else 0.0):9.4g}" for v in x)


def _print(name: str, doc: dict) -> None:
    from rich.table import Table

    con = report_console()
    mode = doc["mode"]
    failed = doc.get("allocation", {}).get("error")
    if failed:  # say it before the tables: they are not an allocation
        con.print(f"[red]{failed}[/red]\n"
                  "the efforts and wrenches below are the minimum-norm inverse dynamics "
                  "WITHOUT the bounds and cones (what the motion needs, not what the "
                  "supports can give)")
    if mode == "inverse":
        con.print(f"{name}: actuator efforts (inverse dynamics, partition "
                  f"{doc['partition']})")
        t = Table()
        t.add_column("actuator")
        t.add_column("effort \\[N·m or N]", justify="right")
        for a, x in doc["efforts"].items():
            t.add_row(a, f"{x:.6g}")
        if doc["efforts"]:
            con.print(t)
        if doc["effort_null_space"]:
            con.print(f"over-actuated: minimum-norm efforts; {doc['effort_null_space']} "
                      "effort direction(s) produce no motion")
    else:
        con.print(f"{name}: accelerations (forward dynamics, partition {doc['partition']})")
        t = Table()
        t.add_column("independent coordinate")
        t.add_column("acceleration \\[rad/s² or m/s²]", justify="right")
        for c, x in doc["accelerations"].items():
            t.add_row(c, f"{x:.6g}")
        con.print(t)
    con.print("joint reactions: parent on child, world axes, about the joint origin (Jc)")
    t = Table()
    for col, just in (("joint", "left"), ("", "left"), ("force \\[N]", "right"),
                      ("moment \\[N·m]", "right"), ("along free", "right"),
                      ("|free residual|", "right")):
        t.add_column(col, justify=just, no_wrap=True)  # type: ignore[arg-type]
    floor = 1e-12 * doc["checks"]["scale"]  # round-off below this shows as 0
    for j, r in doc["reactions"].items():
        tag = ("cut" if r["cut"] else "tree") + (" *" if r["indeterminate"] else "")
        t.add_row(j, tag, _vec(r["force"], floor), _vec(r["moment"], floor),
                  _vec(r["along"], floor),
                  f"{max((abs(v) for v in r['free_residual']), default=0.0):.1e}")
    con.print(t)
    if doc["indeterminate"]:
        con.print(f"* not unique ({doc['reaction_null_space']} self-stress direction(s)): "
                  "the minimum-norm reactions are shown")
    if "links" in doc:
        con.print(f"composed mode {doc['composed_mode']}: link (palm a on palm b) and support "
                  "(ground on sole) wrenches, world axes, about the second frame")
        t = Table()
        for col, just in (("chord", "left"), ("", "left"), ("force \\[N]", "right"),
                          ("moment \\[N·m]", "right")):
            t.add_column(col, justify=just, no_wrap=True)  # type: ignore[arg-type]
        for kind in ("links", "supports"):
            for n, r in doc[kind].items():
                t.add_row(n, kind[:-1], _vec(r["force"], floor), _vec(r["moment"], floor))
        con.print(t)
    if "allocation" in doc:
        _print_allocation(con, doc["allocation"])
    c = doc["checks"]
    con.print(f"check: max |free residual| = {c['free_residual']:.3e} (limit "
              f"{c['free_residual_limit']:.1e} relative, scale {c['scale']:.4g}) "
              + ("[green]pass[/green]" if c["passed"] else "[red]FAIL[/red]"))


def _print_allocation(con, a: dict) -> None:
    from rich.table import Table

    if a["error"] is not None:
        con.print("[red]allocation failed[/red] (above): the requested accelerations are not "
                  "reachable inside the effort bounds and support cones; try smaller ones")
        return
    con.print(f"allocation ({a['phase']}): slack ‖z‖∞ = {a['slack']:.3g}, cone violation "
              f"{a['cone_violation']:.1e}; active: {', '.join(a['active']) or 'none'}")
    t = Table()
    for col in ("support", "normal \\[N]", "CoP \\[m]", "CoP / half-extent",
                "friction ratio"):
        t.add_column(col, justify="left" if col == "support" else "right")
    for n, r in a["supports"].items():
        cop = r.get("cop")
        frac = r.get("cop_fraction")
        fr = r.get("friction_ratio")
        t.add_row(n, f"{r['normal']:.4g}", "" if cop is None else _vec(cop, 1e-12),
                  "" if frac is None else _vec(frac, 1e-12), "" if fr is None else f"{fr:.3g}")
    con.print(t)

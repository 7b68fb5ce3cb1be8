"""``rbc inspect BUNDLE [--json]``: print what a bundle holds."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from rbc.cli.app import app
from rbc.cli.output import report_console


@app.command("inspect")
def inspect_command(
    bundle: Annotated[Path, typer.Argument(help="Bundle written by `rbc compile`.")],
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Print bodies, joints, κ, cycle rank, tree and cut joints, paths, modules, coordinates."""
    from rbc.errors import BundleError
    from rbc.ir.summary import summarize
    from rbc.model.compiled import CompiledModel
    from rbc.model.dynamics import low_inertia_report
    from rbc.model.rolling import rolling_report

    s = summarize(bundle)
    kin = CompiledModel.from_bundle(bundle)
    try:
        s["low_inertia"] = low_inertia_report(kin)
    except BundleError as err:  # the partition check knows only the model: name the file
        raise BundleError(f"{bundle}: {err}") from None
    s["rolling"] = rolling_report(kin)
    if as_json:
        typer.echo(json.dumps(s, indent=2))
        return
    con = report_console()
    con.print(f"[bold]{s['name']}[/bold]  ({bundle})")
    con.print(f"  bodies ({len(s['bodies'])}): {', '.join(s['bodies'])}")
    con.print(f"  joints ({len(s['joints'])}): {', '.join(s['joints'])}")
    con.print(f"  components κ = {s['components']}, cycle rank = {s['cycle_rank']}")
    con.print(f"  tree joints ({len(s['tree_joints'])}): {', '.join(s['tree_joints'])}")
    con.print(f"  cut joints ({len(s['cut_joints'])}): {', '.join(s['cut_joints']) or '-'}")
    if s["declared_cuts"]:
        con.print(f"    declared by the record (cut: required): {', '.join(s['declared_cuts'])}; "
                  "the others chosen by the compiler")
    forced = [n for n in s["forced_cuts"] if n not in s["declared_cuts"]]
    if forced:
        con.print(f"    forced (a loop of actuated or independent joints only): "
                  f"{', '.join(forced)}")
    con.print(f"  coordinates: nq = {s['nq']}, nv = {s['nv']} "
              f"(tree nq = {s['nq_tree']}, nv = {s['nv_tree']})")
    for p in s["partitions"]:
        con.print(f"  partition {p['name']}: rank {p['rank']}, {p['speeds']} independent speeds "
                  f"({', '.join(p['independent'])}), largest correction block "
                  f"{p['largest_block']}")
    if s["rolling"]["wheels"]:
        r = s["rolling"]
        con.print(f"  rolling ({len(r['wheels'])} wheels: {', '.join(r['wheels'])}): "
                  f"{r['rows']} velocity rows")
        for p in r["partitions"]:
            con.print(f"    on partition {p['name']}: rank {p['rank']}, {p['n_independent']} "
                      f"rolling-independent speeds ({', '.join(p['independent_speeds']) or '-'})")
    if s["supports"]:
        con.print("  supports: " + ", ".join(f"{x['name']} ({x['kind']} on {x['body']}, "
                                             f"μ {x['friction']:g})" for x in s["supports"]))
    if s["modes"]:
        t = Table(title="support modes", title_justify="left")
        for col in ("mode", "closure rank", "independent speeds", "actuated", "modules",
                    "largest block"):
            t.add_column(col, overflow="fold")  # a name is never cut
        for m in s["modes"]:
            t.add_row(m["name"], str(m["closure_rank"]), str(m["speeds"]),
                      f"{m['actuation_rank']}/{m['speeds']}", str(m["modules"]),
                      str(m["largest_block"]))
        con.print(t)
        for note in s["mode_notes"]:
            con.print(f"  [dim]note: {note}[/dim]")
    low = s["low_inertia"]
    if low["evaluated"] and low["directions"]:
        con.print(f"  [yellow]almost no inertia[/yellow] (partition {low['partition']}, at q_ref, "
                  f"λ/λ_max < {low['limit']:g}): " + "; ".join(
                      f"{', '.join(d['speeds'])} ({d['ratio']:.2g})" for d in low["directions"]))
    elif not low["evaluated"]:
        con.print(f"  [dim]note: inertia of the independent speeds not evaluated: "
                  f"{low['why']}[/dim]")
    if s["composition"]:
        _composition(con, s["composition"])
    if s["actuators"]:
        con.print("  actuators: " + ", ".join(f"{a['name']}→{_port(a)}" for a in s["actuators"]))
    if s["chords"]:
        t = Table(title="closure paths", title_justify="left")
        for col in ("chord", "|P|", "lowest common ancestor"):
            t.add_column(col, overflow="fold")  # a name is never cut
        for c in s["chords"]:
            t.add_row(c["joint"], str(c["path_length"]), c["lca"])
        con.print(t)
    if s["path_families"]:
        t = Table(title=f"common-endpoint path families (factor products per residual: "
                        f"{s['path_factors']['total']} → {s['path_factors']['evaluated']})",
                  title_justify="left")
        for col in ("endpoint", "chords", "paths", "comparisons (all pairs)", "shared tree branch",
                    "saved"):
            t.add_column(col, overflow="fold")  # a name is never cut
        for f in s["path_families"]:
            t.add_row(f["endpoint"], ", ".join(f["chords"]), str(f["paths"]),
                      f"{f['comparisons']} ({f['all_pairs']})", " · ".join(f["shared"]),
                      str(f["saving"]))
        con.print(t)
    if s["modules"]:
        t = Table(title="dependency modules", title_justify="left")
        for col in ("#", "chords", "couplings", "rows", "variables"):
            t.add_column(col, overflow="fold")  # a name is never cut
        for i, m in enumerate(s["modules"]):
            t.add_row(str(i), ", ".join(m["chords"]), ", ".join(m["couplings"]) or "-",
                      str(m["size"]), str(m["variables"]))
        con.print(t)


def _port(a: dict) -> str:
    """A joint port's joint, a tendon port as ``0.5·j1 + 0.5·j2``, or the description of a
    distance, profile or velocity port (``Actuator.describe``)."""
    return a["port"]


def _composition(con: Console, c: dict) -> None:
    con.print(f"  composition {c['name']}: members "
              + ", ".join(f"{m['name']} ({m['record']}, {m['bundle']}, partition "
                          f"{m['partition']})" for m in c["members"]))
    for x in c["links"]:
        con.print(f"  link {x['name']} ({x['type']}): {x['a']} — {x['b']}")
    t = Table(title="composed modes", title_justify="left")
    for col in ("mode", "bodies", "chords", "= loops+links+supports", "level-1 speeds",
                "level-2 rank", "speeds"):
        t.add_column(col, overflow="fold")  # a name is never cut
    for m in c["modes"]:
        t.add_row(m["name"], str(m["bodies"]), str(m["chords"]),
                  f"{m['member_chords']}+{len(m['links'])}+{len(m['supports'])}",
                  str(m["level1_speeds"]), str(m["level2_rank"]), str(m["speeds"]))
    con.print(t)

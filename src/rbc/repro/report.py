"""The shared writer of the reproduction targets: ``report.md``, ``results.json`` and the
index ``index.md`` / ``index.json`` (docs/repro.md).

``report.md``: title, status and provenance line; **comparison** — one row per published
figure of ``published/<target>.yaml``: the figure, the robots (paper / ours), the paper's
value or "not published", ours, and ``ours / paper`` (``compare: ratio``) or
``ours − paper`` (``compare: difference``), and the source of the number; **setup** — the
target's paragraph on what differs; then the checks, the target's own tables, the plots,
and any failed cases with their inputs (or the traceback of a target that raised).

``results.json``: ``{"target", "title", "status", "quick", "wall_time", "provenance":
{"rbc_version", "git": {"commit", "dirty"}, "packages": {name: version}, "python",
"machine", "scheduler"}, "seeds", "comparison": [...], "checks": [...], "failures": [...],
"data": {...}, "error"}``.

``index.md``: one line per target — status, key figures, wall time — kept across runs of
single targets through ``index.json``.
"""

from __future__ import annotations

import json
import math
import os
import platform
import subprocess
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

from rbc.ir.atomic import atomic_write_text
from rbc.repro.models import REPO
from rbc.repro.outcome import Table, TargetRun
from rbc.repro.published import Published, load_published

#: Distributions whose versions go into every results.json.
PACKAGES = ("rbc", "numpy", "scipy", "pin", "mujoco", "mpmath", "matplotlib", "h5py",
            "dask", "distributed", "daqp", "numba")


def fmt(x: float | None, digits: int = 4) -> str:
    """A number for a table: ``—`` for None/NaN, scientific outside [1e-3, 1e5)."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "—"
    if x == 0:
        return "0"
    if isinstance(x, int) and not isinstance(x, bool):
        return str(x)
    a = abs(x)
    if a < 1e-3 or a >= 1e5:
        return f"{x:.{digits - 1}e}"
    return f"{x:.{digits}g}"


def git_state() -> dict[str, Any]:
    """``{"commit": sha | None, "dirty": bool | None}`` of the source checkout (None
    outside a git work tree)."""
    def git(*args: str) -> str | None:
        try:
            out = subprocess.run(["git", "-C", str(REPO), *args], capture_output=True,
                                 text=True, timeout=20, check=True)
        except (OSError, subprocess.SubprocessError):
            return None
        return out.stdout.strip()

    commit = git("rev-parse", "HEAD")
    status = git("status", "--porcelain", "--untracked-files=no")
    return {"commit": commit, "dirty": None if status is None else bool(status)}


def provenance(scheduler: str) -> dict[str, Any]:
    """Versions, source commit and machine of a run (module docstring)."""
    packages = {}
    for name in PACKAGES:
        try:
            packages[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            packages[name] = None
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        cpus = os.cpu_count()
    return {"rbc_version": packages["rbc"], "git": git_state(), "packages": packages,
            "python": platform.python_version(),
            "machine": {"platform": platform.platform(), "cpus": cpus},
            "scheduler": scheduler,
            "date": datetime.now(UTC).isoformat(timespec="seconds")}


def comparison(pub: tuple[Published, ...], figures: dict[str, float | None]
               ) -> list[dict[str, Any]]:
    """One record per published figure: paper, ours and ``ratio`` or ``difference``."""
    out = []
    for p in pub:
        ours = figures.get(p.key)
        ours = None if ours is None or not math.isfinite(ours) else float(ours)
        rel = None
        if p.paper is not None and ours is not None:
            if p.compare == "difference":
                rel = ours - p.paper
            elif p.paper != 0:
                rel = ours / p.paper
        out.append({"key": p.key, "figure": p.figure, "unit": p.unit, "paper": p.paper,
                    "ours": ours, "compare": p.compare, p.compare: rel,
                    "paper_robot": p.paper_robot, "ours_robot": p.ours_robot,
                    "source": p.source})
    return out


def _md_table(header: tuple[str, ...] | list[str], rows) -> list[str]:
    def cell(x: object) -> str:
        return str(x).replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(cell(h) for h in header) + " |",
             "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(c) for c in r) + " |" for r in rows]
    return lines


def _comparison_lines(rows: list[dict[str, Any]]) -> list[str]:
    body = []
    for r in rows:
        paper = "not published" if r["paper"] is None else fmt(r["paper"])
        if r["compare"] == "difference":
            rel = "—" if r["difference"] is None else f"{fmt(r['difference'])} {r['unit']}"
        else:
            rel = "—" if r["ratio"] is None else f"{fmt(r['ratio'], 3)}×"
        body.append((r["figure"], f"{r['paper_robot']} / {r['ours_robot']}",
                     paper, fmt(r["ours"]), r["unit"], rel, r["source"]))
    heads = {r["compare"] for r in rows}
    head = "ours / paper" if heads == {"ratio"} else (
        "ours − paper" if heads == {"difference"} else "ratio or difference")
    return _md_table(("figure", "robot (paper / ours)", "paper", "ours", "unit", head,
                      "source of the paper's figure"), body)


def _table_lines(t: Table) -> list[str]:
    lines = [f"### {t.title}", ""] + _md_table(t.header, t.rows)
    if t.note:
        lines += ["", t.note]
    return lines + [""]


def write_target(directory: Path, run: TargetRun, *, quick: bool, seed: int,
                 scheduler: str) -> None:
    """``report.md`` and ``results.json`` of one target into ``directory``."""
    prov = provenance(scheduler)
    pub = load_published(run.name)
    out = run.outcome
    comp = comparison(pub, out.figures if out else {})
    checks = [c.to_json() for c in out.checks] if out else []
    failures = [{"bag": label, "index": f.index, "input": repr(f.inputs), "error": f.error,
                 "traceback": f.traceback} for label, f in run.failures]
    results = {"target": run.name, "title": run.title, "status": run.status, "quick": quick,
               "wall_time": run.wall_time, "provenance": prov,
               "seeds": {"root": seed, **(out.seeds if out else {})},
               "key_figures": out.key_figures if out else "", "comparison": comp,
               "checks": checks, "failures": failures, "data": out.data if out else {},
               "plots": out.plots if out else [], "error": run.error}
    atomic_write_text(directory / "results.json", json.dumps(results, indent=1,
                                                             default=_json_default) + "\n")
    git = prov["git"]
    commit = (git["commit"] or "unknown")[:12] + (" (uncommitted changes)" if git["dirty"]
                                                  else "")
    lines = [f"# {run.name}: {run.title}", "",
             f"**Status: {run.status}** — {'quick case list' if quick else 'full case list'}"
             f", {run.wall_time:.0f} s wall; rbc {prov['rbc_version']} at {commit}; "
             f"{scheduler}; {prov['date']}.", ""]
    if out is not None:
        lines += [out.key_figures, "", "## Paper and ours", ""]
        lines += _comparison_lines(comp) if comp else ["(no published figures listed)"]
        lines += ["", "## What differs in the setup", "", out.setup, ""]
        if out.checks:
            lines += ["## Checks", ""]
            lines += _md_table(("check", "value", "limit", "unit", "passed", "detail"),
                               [(c.name, fmt(c.value), ("≥ " if c.lower_bound else "≤ ")
                                 + fmt(c.limit), c.unit, "yes" if c.passed else "**no**",
                                 c.detail) for c in out.checks])
            lines.append("")
        if out.tables:
            lines += ["## Results", ""]
            for t in out.tables:
                lines += _table_lines(t)
        if out.plots:
            lines += ["## Plots", ""] + [f"![{p}]({p})" for p in out.plots] + [""]
    if failures:
        lines += ["## Failed cases", ""]
        lines += _md_table(("bag", "case", "input", "error"),
                           [(f["bag"], f["index"], f["input"][:300], f["error"])
                            for f in failures])
        lines.append("")
    if run.error:
        lines += ["## Error", "", "The target raised:", "", "```", run.error.rstrip(), "```",
                  ""]
    atomic_write_text(directory / "report.md", "\n".join(lines))


def _json_default(x: Any) -> Any:
    """numpy scalars and arrays in results.json; non-finite floats as null."""
    import numpy as np

    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, np.generic):
        return x.item()
    raise TypeError(f"not JSON serialisable: {type(x).__name__}")


def update_index(root: Path, run: TargetRun, *, quick: bool) -> None:
    """Record ``run`` in ``root/index.json`` and rewrite ``root/index.md`` (every target
    of the registry, in order; those not run yet are listed as such)."""
    from rbc.repro.registry import TARGETS

    path = root / "index.json"
    try:
        index = json.loads(path.read_text()) if path.exists() else {}
    except (OSError, json.JSONDecodeError):
        index = {}
    entries = index.get("targets", {})
    entries[run.name] = {"title": run.title, "status": run.status,
                         "key_figures": run.outcome.key_figures if run.outcome else
                         (run.error.strip().splitlines() or ["error"])[-1],
                         "wall_time": run.wall_time, "quick": quick,
                         "date": datetime.now(UTC).isoformat(timespec="seconds")}
    index = {"targets": entries}
    atomic_write_text(path, json.dumps(index, indent=1) + "\n")
    rows = []
    for name in [*TARGETS, *sorted(set(entries) - set(TARGETS))]:
        e = entries.get(name)
        if e is None:
            rows.append((f"[{name}]({name}/report.md)", "not run", "—", "—", "—"))
            continue
        rows.append((f"[{name}]({name}/report.md)", e["status"], e["key_figures"],
                     f"{e['wall_time']:.0f} s", e["date"] + (" (quick)" if e["quick"] else "")))
    total = sum(e["wall_time"] for e in entries.values())
    lines = ["# Reproduction targets", "",
             "`make repro` runs them all, `make repro-NAME` one, `make repro-quick` every target "
             "on a small case list (docs/repro.md). Each line links to the target's report.",
             ""] + _md_table(("target", "status", "key figures", "wall time", "run at"), rows)
    lines += ["", f"Wall time of the listed runs: {total:.0f} s.", ""]
    atomic_write_text(root / "index.md", "\n".join(lines))

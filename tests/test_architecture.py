"""The layering of docs/architecture.md, checked on the source: no import cycles between
modules, and the run time (``model``) never reaches up into the compiler passes."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"


def _imports() -> dict[str, set[str]]:
    """Module → the rbc modules it imports (module-level and function-level imports)."""
    mods: dict[str, set[str]] = {}
    for f in SRC.rglob("*.py"):
        name = ".".join(f.relative_to(SRC).with_suffix("").parts).removesuffix(".__init__")
        deps: set[str] = set()
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("rbc"):
                deps.add(node.module)
                deps.update(f"{node.module}.{a.name}" for a in node.names)
            elif isinstance(node, ast.Import):
                deps.update(a.name for a in node.names if a.name.startswith("rbc"))
        mods[name] = deps
    return {m: {d for d in ds if d in mods and d != m and not m.startswith(d + ".")}
            for m, ds in mods.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def test_no_import_cycles():
    assert _cycles(_imports()) == []


def test_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_run_time_does_not_import_the_passes():
    packages: dict[str, set[str]] = defaultdict(set)
    for m, ds in _imports().items():
        packages[m.split(".")[1] if "." in m else m].update(d.split(".")[1] for d in ds)
    assert "passes" not in packages["model"]
    assert packages["ir"] <= {"errors", "safeio", "ir"}


def test_safeio_is_a_leaf():
    """rbc.safeio (the shared untrusted-input and output mechanisms) sits beside rbc.errors
    at the bottom: everything may use it, it uses nothing of rbc but the errors."""
    assert _imports()["rbc.safeio"] <= {"rbc.errors"}


def test_walker_sub_packages_are_layered():
    """docs/walkers.md: each walker sub-package imports only those listed above it."""
    order = ["hybrid", "control", "environment", "evaluation"]
    for m, ds in _imports().items():
        parts = m.split(".")
        if parts[:2] != ["rbc", "walkers"] or len(parts) < 4 or parts[2] not in order:
            continue
        below = set(order[order.index(parts[2]) + 1:])
        up = {d for d in ds if d.startswith("rbc.walkers.") and d.split(".")[2] in below}
        assert not up, f"{m} imports {sorted(up)} (a sub-package listed below it)"
        assert not {d for d in ds if d.startswith("rbc.policy")}, m

"""``rbc bench compile``: compile cost against the number of loops (should be linear).

The generated mechanism is a serial chain of N planar four-bar loops: loop i is mounted on
the rocker of loop i−1 (loop 1 on the fixed ground), its crank actuated. At zero joint angles
every loop is an a×b rectangle, so the records are assembled (usable by later kinematic
benchmarks). Each loop adds 3 bodies and 4 joints, so the cycle rank is N.

The peer is the same pipeline on the smallest N in the same process: the reported ratio is
(time per loop at N) / (time per loop at the smallest N); linear cost keeps it near 1.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from rbc.compiler import compile_record

_ROD = "mass: 1.0, com: [{cx}, {cy}, 0], inertia: [{ixx}, {iyy}, {izz}, 0, 0, 0]"


def _rod(length: float, along_x: bool) -> str:
    i = length**2 / 12.0  # slender rod of 1 kg about its centre
    small = 1e-4  # thin but finite so the tensor is positive definite
    if along_x:
        return _ROD.format(cx=length / 2, cy=0, ixx=small, iyy=i, izz=i + small)
    return _ROD.format(cx=0, cy=length / 2, ixx=i, iyy=small, izz=i + small)


def chain_record(n_loops: int, a: float = 1.0, b: float = 0.5) -> str:
    """YAML text of a serial chain of ``n_loops`` four-bars (see module docstring)."""
    lines = [f"rbc: 1\nname: chain{n_loops}\ngravity: [0, -9.81, 0]\nbodies:",
             "  - {name: g0, fixed: true}"]
    for i in range(1, n_loops + 1):
        lines += [f"  - {{name: p{i}, {_rod(b, False)}}}",
                  f"  - {{name: c{i}, {_rod(a, True)}}}",
                  f"  - {{name: g{i}, {_rod(b, False)}}}"]
    lines.append("joints:")
    rev = "  - {{name: {n}, type: revolute, parent: {p}, child: {c}, axis: [0, 0, 1], " \
          "parent_frame: {{xyz: [{px}, {py}, 0]}}, child_frame: {{xyz: [{cx}, {cy}, 0]}}}}"
    for i in range(1, n_loops + 1):
        g, p, c, r = f"g{i - 1}", f"p{i}", f"c{i}", f"g{i}"
        lines += [rev.format(n=f"A{i}", p=g, c=p, px=0, py=0, cx=0, cy=0),
                  rev.format(n=f"B{i}", p=p, c=c, px=0, py=b, cx=0, cy=0),
                  rev.format(n=f"D{i}", p=g, c=r, px=a, py=0, cx=0, cy=0),
                  rev.format(n=f"C{i}", p=c, c=r, px=a, py=0, cx=0, cy=b)]
    lines.append("actuators:")
    lines += [f"  - {{name: m{i}, joint: A{i}}}" for i in range(1, n_loops + 1)]
    return "\n".join(lines) + "\n"


def bench_compile(
    loops: Sequence[int],
    repeats: int = 3,
    progress: Callable[[int], None] | None = None,
) -> list[dict]:
    """Compile chain records of each size; best of ``repeats`` wall times per pass.

    Returns one row per N: ``{"loops", "seconds", "per_loop_us", "ratio", "passes": {name:
    seconds}}`` where ``ratio`` is per-loop time relative to the smallest N. Record generation
    is not timed; parsing is (it is a pass).
    """
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in sorted(loops):
            path = Path(tmp) / f"chain{n}.yaml"
            path.write_text(chain_record(n))
            best: dict[str, float] | None = None
            for _ in range(repeats):
                _, report = compile_record(path)
                times = dict(report.timings)
                if best is None or sum(times.values()) < sum(best.values()):
                    best = times
            assert best is not None
            total = sum(best.values())
            rows.append({"loops": n, "seconds": total, "per_loop_us": 1e6 * total / n,
                         "passes": best})
            if progress:
                progress(n)
    return with_ratios(rows, "per_loop_us")


def with_ratios(rows: list[dict], key: str) -> list[dict]:
    """``row["ratio"] = row[key] / rows[0][key]`` for every row (the peer: the first row, the
    smallest N); returns rows."""
    base = rows[0][key]
    for row in rows:
        row["ratio"] = row[key] / base
    return rows


def cli_wall_time(record: Path, repeats: int = 3) -> float:
    """Best wall time [s] of ``rbc compile RECORD`` in a fresh interpreter (start included).

    Raises:
        UsageError: the record does not compile (with the child's message, which names
            the file and field).
    """
    from rbc.errors import UsageError

    best = float("inf")
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(repeats):
            t0 = time.perf_counter()
            done = subprocess.run([sys.executable, "-m", "rbc.cli.main", "compile",
                                   str(record), "-o", str(Path(tmp) / "out.h5")],
                                  capture_output=True, text=True)
            if done.returncode != 0:
                message = done.stderr.strip().splitlines() or [f"status {done.returncode}"]
                raise UsageError(f"--record {record}: does not compile: "
                                 + message[0].removeprefix("error: "))
            best = min(best, time.perf_counter() - t0)
    return best

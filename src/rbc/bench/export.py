"""``rbc bench export``: MJCF export time and peak memory against the number of loops
(issue 13: linear in model size, a 500-loop chain under 2 GB).

The mechanism is :func:`rbc.bench.compile.chain_record`'s serial chain of N four-bar loops,
compiled (not timed). Each N is then exported in a **fresh interpreter** so its peak resident
memory is the export's alone: the child loads the bundle, builds the document
(:func:`rbc.backends.mjcf_export.export_mjcf` and its text: timed) and asks MuJoCo to load it
(:func:`~rbc.backends.mjcf_export.check_loads`, what ``rbc compile --mjcf`` does before it
writes: timed separately). Peak memory is the child's resident high-water mark (Linux
``VmHWM``; the interpreter and the libraries included, so an upper bound on the export's own
share), read after the export and again after the load.

The peer is the smallest N in the same run: ``ratio`` is (export time per loop at N) / (that
at the smallest N); linear cost keeps it near 1.

MuJoCo's XML parser refuses bodies nested deeper than 496 (MuJoCo 4.0) and body i of the
chain's spanning tree is ≈ i deep: the export re-roots such subtrees on the world
(:mod:`rbc.backends.mjcf_export`, "Deep trees"), so every N loads; a row whose file MuJoCo
refuses says so (``loads: false`` with MuJoCo's message), as ``rbc compile --mjcf`` exits 2.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from rbc.bench.compile import chain_record, with_ratios
from rbc.bench.memory import peak_resident_mib


def export_once(bundle: str | Path) -> dict:
    """Export a bundle's default partition to MJCF text and load it in MuJoCo (this process).

    Returns:
        ``{"joints", "export_seconds", "load_seconds", "peak_mb_before", "peak_mb_export",
        "peak_mb_load", "xml_mb", "loads", "message"}`` (memory in MB of peak RSS; joints:
        the bundle's record joints).
    """
    from rbc.backends.mjcf_export import check_loads, export_mjcf
    from rbc.errors import CompileError
    from rbc.model.compiled import CompiledModel

    model = CompiledModel.from_bundle(bundle)
    part = model.partitions.get("default") or next(iter(model.partitions.values()))
    before = peak_resident_mib()
    t0 = time.perf_counter()
    text = export_mjcf(model, part).to_string()
    t1 = time.perf_counter()
    after_export = peak_resident_mib()
    loads, message = True, ""
    try:
        check_loads(text, str(bundle))
    except CompileError as err:
        loads, message = False, str(err)
    t2 = time.perf_counter()
    return {"joints": len(model.record.joints), "export_seconds": t1 - t0,
            "load_seconds": t2 - t1, "peak_mb_before": before,
            "peak_mb_export": after_export, "peak_mb_load": peak_resident_mib(),
            "xml_mb": len(text.encode()) / 1e6, "loads": loads, "message": message}


def bench_export(loops: Sequence[int], progress: Callable[[int], None] | None = None
                 ) -> list[dict]:
    """Compile chains of each size, export each in a fresh interpreter (module docstring).

    Returns one row per N: ``{"loops", "joints", **export_once(...), "per_loop_ms",
    "ratio"}``.

    Raises:
        subprocess.CalledProcessError: the child failed (its stderr is attached).
    """
    from rbc.compiler import compile_to_file

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in sorted(loops):
            src, h5 = Path(tmp) / f"chain{n}.yaml", Path(tmp) / f"chain{n}.h5"
            src.write_text(chain_record(n))
            compile_to_file(src, h5)
            out = subprocess.run([sys.executable, "-m", "rbc.bench.export", str(h5)],
                                 check=True, capture_output=True, text=True)
            row = {"loops": n, **json.loads(out.stdout)}
            row["per_loop_ms"] = 1e3 * row["export_seconds"] / n
            rows.append(row)
            h5.unlink()
            if progress:
                progress(n)
    return with_ratios(rows, "per_loop_ms")


if __name__ == "__main__":  # the child of bench_export: one bundle, JSON on stdout
    print(json.dumps(export_once(sys.argv[1])))

"""Single-threaded BLAS for simulation.

The run-time matrices are small (at most a few dozen rows); a multi-threaded OpenBLAS spends
far longer synchronising its threads than computing, and on a loaded machine a 30 × 30 LU
solve was measured at 9 ms instead of 20 µs (docs/simulate.md). :func:`limit_blas_threads`
sets every OpenBLAS loaded in the process (numpy's and scipy's bundled copies) to one
thread through its C entry point; it is a no-op where none is found.
"""

from __future__ import annotations

import ctypes
from pathlib import Path

#: Entry points of the OpenBLAS builds numpy/scipy wheels ship (64-bit-integer suffixed
#: symbols first) and of a system OpenBLAS.
_SETTERS = ("scipy_openblas_set_num_threads64_", "scipy_openblas_set_num_threads",
            "openblas_set_num_threads64_", "openblas_set_num_threads")


def limit_blas_threads(n: int = 1) -> int:
    """Set the thread count of every loaded OpenBLAS to n; returns how many were set."""
    import numpy  # noqa: F401  (loads numpy's OpenBLAS)
    import scipy.linalg  # noqa: F401  (loads scipy's OpenBLAS)

    maps = Path("/proc/self/maps")
    if not maps.exists():
        return 0
    libs = {line.split()[-1] for line in maps.read_text().splitlines()
            if "openblas" in line.lower() and line.rstrip().endswith(".so")
            or "openblas" in line.lower() and ".so." in line}
    done = 0
    for path in sorted(libs):
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for sym in _SETTERS:
            fn = getattr(lib, sym, None)
            if fn is not None:
                fn(ctypes.c_int(n))
                done += 1
                break
    return done

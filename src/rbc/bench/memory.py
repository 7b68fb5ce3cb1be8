"""Peak resident memory of this process, for the benchmarks that report memory."""

from __future__ import annotations

import resource
from pathlib import Path


def peak_resident_mib() -> float:
    """Peak resident memory of this process image [MiB]: Linux's ``VmHWM`` — what the process
    really touched, the interpreter and its imports included. (``ru_maxrss`` keeps the
    high-water mark from before ``exec``, i.e. of the parent at fork, so in a child it would
    report the parent's peak; it is the fallback where /proc is not available.)"""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return float(line.split()[1]) / 1024.0  # kB
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0

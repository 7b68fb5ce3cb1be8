"""Command-line layer: one module per subcommand, no numerics here.

rbc's matrices are small (tens of rows): a multi-threaded BLAS spends far longer
synchronising than computing (a 30 × 30 solve measured at 9 ms instead of 20 µs on a loaded
2-core machine, docs/simulate.md). The command line therefore defaults to one BLAS thread,
set here before anything imports numpy; a user's own setting of these variables wins.
"""

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

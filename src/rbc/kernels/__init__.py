"""Compiled run-time kernels (numba) over the bundle's flat arrays (DESIGN.md §13).

The model is data (:mod:`.layout`: four flat arrays laid out once from a compiled model and
a partition, as MuJoCo's ``mjModel``); generic ``@njit(cache=True)`` kernels walk it — no
per-robot code generation. Modules: :mod:`.se3` (SE(3) exp/log, ``J_l⁻¹`` with series),
:mod:`.joints` (joint maps), :mod:`.kinematics` (poses, world columns, closure geometry,
velocity product), :mod:`.lift` (module-blocked ``R_p`` factors, E, solves),
:mod:`.dynamics` (RNEA, CRBA, loads, reduced terms, Cholesky), :mod:`.step` (one call for
forward dynamics, the corrector, an RK stage, a batch of states) and :mod:`.evaluator`
(the Python face). Every kernel is tested against the NumPy/Pinocchio reference path of
:mod:`rbc.model` (``tests/kernels``).
"""

import hashlib
from pathlib import Path


def _purge_stale_cache() -> None:
    """Drop numba's cached kernels when any kernel source changed since they were cached.

    numba keys a cached function on its own file's time stamp only, but a compiled caller
    embeds its callees' code (and ``inline="always"`` helpers): after an edit of
    ``se3.py`` the cached ``step.stage`` would still run the old ``se3`` code. The digest
    of all kernel sources, stamped beside the cache, catches that. (A cache outside the
    package, ``NUMBA_CACHE_DIR``, is not checked.)
    """
    here = Path(__file__).parent
    digest = hashlib.sha256(b"".join(p.read_bytes() for p in sorted(here.glob("*.py"))))
    cache = here / "__pycache__"
    stamp = cache / "kernels.sources.sha256"
    try:
        if stamp.read_text() == digest.hexdigest():
            return
    except OSError:
        pass
    try:
        cache.mkdir(exist_ok=True)
        for f in (*cache.glob("*.nbi"), *cache.glob("*.nbc")):
            f.unlink(missing_ok=True)
        stamp.write_text(digest.hexdigest())
    except OSError:  # a read-only install: numba falls back to its user cache directory
        pass


_purge_stale_cache()


def cache_is_cold() -> bool:
    """True when the run-time kernels are not in numba's cache yet (a fresh install, or
    after an edit of a kernel source): the first run then compiles them — about a minute
    of CPU on an idle machine — which a command should say before it looks hung. Reads
    the package's cache directory only (``NUMBA_CACHE_DIR`` elsewhere is not looked at)."""
    cache = Path(__file__).parent / "__pycache__"
    return not any(cache.glob("step.stage-*.nbi"))

"""rbc — a compiler toolchain for robots with closed kinematic chains.

The Python API is ``rbc.compile``, ``rbc.load`` and the :class:`rbc.Model` they give
(docs/python.md). See ``docs/architecture.md`` for the pipeline and ``docs/records.md``
for the record schema.
"""

import os as _os

__version__ = "0.1.0"

# The parallel kernel batch (rbc.kernels.step.evaluate_batch) runs on numba's OpenMP layer,
# whose GNU runtime spins at the end of a parallel region by default: on a machine with more
# runnable processes than cores the spinning threads take the time slices the working ones
# need (measured: 64–70 ms of CPU per 1000 Stewart states instead of 21 ms, 100-state
# batches at load 11 on 2 cores; passive: 22 ms). The runtime reads the policy once, when
# it is loaded — by Pinocchio's import, before any kernel — so it is set here, at rbc's
# import; a user's setting wins. Passive waiting costs one wake-up per parallel region.
_os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

#: The public Python API (docs/python.md), imported on first use so that ``import rbc``
#: (and every command-line start) stays cheap.
_API = ("ApiError", "Bundle", "Lift", "Model", "Ports", "State", "TaskJacobian", "Wrench",
        "compile", "load")
__all__ = ["__version__", *_API]


def __getattr__(name: str):
    if name in _API:
        from rbc import api

        return getattr(api, name)
    raise AttributeError(f"module 'rbc' has no attribute '{name}'")


def __dir__() -> list[str]:
    return sorted(__all__)

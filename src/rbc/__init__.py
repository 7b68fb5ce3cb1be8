"""rbc — a compiler toolchain for robots with closed kinematic chains.

The Python API is ``rbc.compile``, ``rbc.load`` and the :class:`rbc.Model` they give
(docs/python.md). See ``docs/architecture.md`` for the pipeline and ``docs/records.md``
for the record schema.
"""

__version__ = "0.1.0"

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

"""rbc — a compiler toolchain for robots with closed kinematic chains.

See ``docs/architecture.md`` for the pipeline and ``docs/records.md`` for the record schema.
"""

__version__ = "0.1.0"

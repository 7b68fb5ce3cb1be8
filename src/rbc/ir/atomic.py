"""Atomic output files (kept for existing imports): the implementation is in
:mod:`rbc.safeio` with the other shared input/output mechanisms."""

from rbc.safeio import atomic_write, atomic_write_text, default_mode

__all__ = ["atomic_write", "atomic_write_text", "default_mode"]

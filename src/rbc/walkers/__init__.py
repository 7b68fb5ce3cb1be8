"""Planar biped walkers: lumped-mass trees from one matrix ``A``, rigid impacts, virtual
constraints, Poincaré analysis. See ``docs/walkers.md`` (DESIGN.md §9)."""

from rbc.walkers.errors import WalkerError
from rbc.walkers.hybrid.registry import load_model, model_names

__all__ = ["WalkerError", "load_model", "model_names"]

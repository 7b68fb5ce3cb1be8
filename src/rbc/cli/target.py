"""The model a command works on: a plain bundle with one of its stored partitions, or a
composed bundle with one of its composed modes (its links and supports closed; docs/
composition.md). One rule for every command that takes ``--partition`` and ``--mode``."""

from __future__ import annotations

from pathlib import Path


def open_model(bundle: Path, partition: str | None, mode: str | None):
    """``(composition or None, rbc.api.Model)`` for ``bundle``.

    Raises:
        UsageError: ``--mode`` on a plain bundle, ``--partition`` on a composed one, an
            unknown mode (:func:`rbc.compose.bundle.open_mode`);
        BundleError, SolveError: as :func:`rbc.api.load`.
    """
    from rbc.api import Model, load
    from rbc.compose.bundle import open_mode

    opened = open_mode(bundle, mode, partition)
    if opened is None:
        return None, load(bundle, partition)
    comp, md = opened
    return comp, Model(comp.model(md), md.partition, source=Path(bundle))

"""The model a command works on: a plain bundle with one of its stored partitions, or a
composed bundle with one of its composed modes (its links and supports closed; docs/
composition.md). One rule for every command that takes ``--partition`` and ``--mode``."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
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


@contextmanager
def naming(bundle: Path, option: str) -> Iterator[None]:
    """Errors raised while the model works on a command-line option's values name the
    bundle and the option: ``<bundle>: --set: unknown coordinate 'x' …`` (the model layer
    knows neither).

    Raises:
        RbcError: the error raised inside, its message prefixed, its exit status kept.
    """
    from rbc.errors import RbcError

    try:
        yield
    except RbcError as err:
        text = str(err)
        if text.startswith(f"{bundle}:"):
            raise
        named = RbcError(f"{bundle}: {option}: {text}")
        named.exit_code = err.exit_code
        raise named from None

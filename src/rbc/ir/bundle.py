"""The HDF5 bundle: in-memory form, atomic writer, schema-checked reader (DESIGN.md §7).

The layout is a public contract documented in ``docs/bundle.md``. A :class:`BundleData` is a
flat mapping ``"/group/dataset" -> array or str`` plus attributes per group; the codegen
pass builds it, :func:`write_bundle` writes it atomically (temporary file in the target
directory, then ``os.replace``), :func:`open_bundle` opens a file for reading after checking
its schema version.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import h5py
import numpy as np

from rbc.errors import BundleError
from rbc.ir.atomic import atomic_write

BUNDLE_SCHEMA = 1


@dataclass
class BundleData:
    """Datasets and attributes of a bundle before it is written.

    Attributes:
        datasets: ``"/group/name" -> numpy array | str | list[str]``.
        attrs: ``"/group" -> {attribute: value}`` (``"/"`` for the file root).
    """

    datasets: dict[str, object] = field(default_factory=dict)
    attrs: dict[str, dict[str, object]] = field(default_factory=dict)

    def put(self, path: str, value: object) -> None:
        """Add dataset ``path`` (strings and string lists become UTF-8 string datasets)."""
        self.datasets[path] = value

    def attr(self, group: str, **values: object) -> None:
        """Set attributes on ``group``."""
        self.attrs.setdefault(group, {}).update(values)


def _dataset_value(value: object) -> object:
    if isinstance(value, str):
        return value
    if isinstance(value, (list, tuple)) and (not value or isinstance(value[0], str)):
        return np.array(value, dtype=h5py.string_dtype())
    return np.asarray(value)


def write_bundle(path: str | Path, data: BundleData) -> Path:
    """Write ``data`` to ``path`` atomically; returns the path.

    The file is first written to a temporary file in the same directory and renamed over the
    target only when complete, so a failure never leaves a partial bundle behind.

    Raises:
        BundleError: the target directory does not exist or is not writable.
    """
    target = Path(path)
    directory = target.parent if str(target.parent) else Path(".")
    if not directory.is_dir():
        raise BundleError(f"{target}: output directory {directory} does not exist")

    def fill(tmp: Path) -> None:
        with h5py.File(tmp, "w") as h5:
            for name, value in data.datasets.items():
                h5.create_dataset(name, data=_dataset_value(value))
            for group, values in data.attrs.items():
                obj = h5.require_group(group) if group != "/" else h5
                for key, value in values.items():
                    obj.attrs[key] = value

    try:
        atomic_write(target, fill)
    except PermissionError as err:
        raise BundleError(f"{target}: cannot write in {directory}: {err.strerror}") from err
    return target


@contextmanager
def open_bundle(path: str | Path) -> Iterator[h5py.File]:
    """Open a bundle read-only after checking that it is an rbc bundle of this schema.

    Raises:
        BundleError: missing file, not HDF5, not an rbc bundle, or another schema version.
    """
    p = Path(path)
    if not p.is_file():
        raise BundleError(f"{p}: no such bundle file")
    try:
        h5 = h5py.File(p, "r")
    except OSError as err:
        raise BundleError(f"{p}: not an HDF5 file ({err})") from err
    with h5:
        if "meta" not in h5 or "bundle_schema" not in h5["meta"].attrs:
            raise BundleError(f"{p}: not an rbc bundle (no /meta bundle_schema attribute)")
        version = int(h5["meta"].attrs["bundle_schema"])
        if version != BUNDLE_SCHEMA:
            raise BundleError(
                f"{p}: bundle schema {version} is not supported; this rbc reads schema "
                f"{BUNDLE_SCHEMA} — recompile the record with this version of rbc"
            )
        yield h5


def strings(ds: h5py.Dataset) -> list[str]:
    """Decode a string dataset to a list of Python strings."""
    return [s.decode() if isinstance(s, bytes) else str(s) for s in ds[()]]

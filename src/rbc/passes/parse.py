"""Pass ``parse``: a YAML physical record (schema v1) → :class:`rbc.ir.record.Record`.

The reading and validation live in :mod:`rbc.ir.schema` (bundles and importers read
records too); this module is the pass object the pipeline runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from rbc.ir.record import Record
from rbc.ir.schema import check_record, check_unit_norms, parse_record

__all__ = ["Parse"]


@dataclass(frozen=True)
class Parse:
    """Pass ``parse``: record file → :class:`Record`.

    Pre-condition: ``path`` names a YAML file. Post-condition (checked by :meth:`verify`):
    the record passes :func:`check_record`, every quaternion is unit and every axis is a
    unit vector.
    """

    name: ClassVar[str] = "parse"

    def run(self, path: str | Path) -> Record:
        """Parse the record at ``path`` (raises :class:`RecordError`)."""
        return parse_record(path)

    def verify(self, record: Record) -> None:
        """Re-run the semantic checks and the unit-norm invariants of ``record``.

        Raises:
            RecordError: on the first violated post-condition.
        """
        check_record(record)
        check_unit_norms(record)

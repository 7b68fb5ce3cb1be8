"""The one error hierarchy of rbc.

Every user mistake raises a subclass of :class:`RbcError`; the command line turns it into a
message on stderr and exit status 2 (:attr:`RbcError.exit_code`), never a traceback.
Programming errors (bugs) are left as ordinary Python exceptions.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence
from pathlib import Path


class RbcError(Exception):
    """Base class of every error rbc reports to a user (exit status 2)."""

    exit_code: int = 2


def did_you_mean(word: str, choices: Iterable[str]) -> str | None:
    """Closest spelling of ``word`` among ``choices`` (difflib ratio ≥ 0.6), or None."""
    matches = difflib.get_close_matches(str(word), [str(c) for c in choices], n=1, cutoff=0.6)
    return matches[0] if matches else None


class InputError(RbcError):
    """An input file is unusable: unreadable, too large, not a regular file, or malformed.

    The message names the file and, where there is one, the field inside it.

    Attributes:
        file: the input file (or ``"<string>"``).
        path: path of the offending field inside the file, e.g. ``joints[3].axis`` or
            ``/partitions/default/rows`` ("" for the whole file).
        problem: what is wrong, one sentence.
        expected: what a valid value looks like (optional).
        choices: the valid choices, listed in the message (optional).
        suggestion: a "did you mean" spelling (optional; derived from ``choices`` when the
            offending word is given as ``got``).
    """

    def __init__(
        self,
        file: str | Path,
        path: str,
        problem: str,
        *,
        expected: str | None = None,
        choices: Sequence[str] | None = None,
        got: str | None = None,
    ) -> None:
        self.file = str(file)
        self.path = path
        self.problem = problem
        self.expected = expected
        self.choices = tuple(choices) if choices is not None else None
        self.suggestion = did_you_mean(got, self.choices) if (got and self.choices) else None
        super().__init__(self._format())

    def _format(self) -> str:
        where = f"{self.file}: {self.path}" if self.path else self.file
        parts = [f"{where}: {self.problem}"]
        if self.expected:
            parts.append(f"expected {self.expected}")
        if self.choices:
            parts.append("valid choices: " + ", ".join(self.choices))
        msg = "; ".join(parts)
        if self.suggestion:
            msg += f" (did you mean '{self.suggestion}'?)"
        return msg


class RecordError(InputError):
    """A physical record (YAML) is malformed or physically inconsistent (``path`` is the
    YAML path of the offending field)."""


class BundleError(RbcError):
    """A bundle file cannot be read: missing, not HDF5, or of another schema version."""


class CompileError(RbcError):
    """A record is well formed but cannot be compiled (e.g. an unrootable body)."""


class UsageError(RbcError):
    """A command-line argument is invalid (unknown pass name, bad option value)."""

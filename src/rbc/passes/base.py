"""The pass protocol (DESIGN.md §1).

A pass is a frozen dataclass with a class-level ``name`` (its command-line name), typed
options as fields, ``run(input) -> output`` and ``verify(output)`` that raises
:class:`PassVerificationError` when a post-condition does not hold. Passes never reach back
into earlier stages: each output IR keeps a reference to its input IR when later stages
need it.
"""

from __future__ import annotations

from typing import Any, ClassVar, Protocol


class PassVerificationError(AssertionError):
    """A pass produced output that breaks its post-conditions (a bug in rbc, not the record)."""


class Pass(Protocol):
    """Structural type of every pass."""

    name: ClassVar[str]

    def run(self, ir: Any) -> Any:
        """Transform the input IR into the output IR."""
        ...

    def verify(self, ir: Any) -> None:
        """Check the output IR's post-conditions; raise :class:`PassVerificationError`."""
        ...


def check(condition: bool, pass_name: str, message: str) -> None:
    """Raise :class:`PassVerificationError` naming the pass unless ``condition``."""
    if not condition:
        raise PassVerificationError(f"pass '{pass_name}' post-condition failed: {message}")

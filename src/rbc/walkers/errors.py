"""Errors of the walker simulator (subclasses of :class:`rbc.errors.RbcError`)."""

from __future__ import annotations

from collections.abc import Sequence

from rbc.errors import RbcError, did_you_mean


class WalkerError(RbcError):
    """A walker model, controller, slope or initial state cannot be used.

    Attributes:
        problem: what is wrong, one sentence.
        choices: the valid choices, listed in the message (optional).
        got: the offending word (used for a "did you mean" hint).
    """

    def __init__(
        self, problem: str, *, choices: Sequence[str] | None = None, got: str | None = None
    ) -> None:
        self.problem = problem
        self.choices = tuple(choices) if choices is not None else None
        msg = problem
        if self.choices:
            msg += "; valid choices: " + ", ".join(self.choices)
            hint = did_you_mean(got, self.choices) if got else None
            if hint:
                msg += f" (did you mean '{hint}'?)"
        super().__init__(msg)

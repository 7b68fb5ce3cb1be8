"""Check records and the catalogue behind ``rbc verify`` (DESIGN.md §8).

A check compares one computed quantity with an independent reference and states the limit
it must respect. The suites that produce checks (:mod:`rbc.verify.kinematics`,
:mod:`rbc.verify.dynamics`, :mod:`rbc.verify.export_readback`) build on this module; the
list of every check name is :mod:`rbc.verify.catalogue`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

#: The project-wide default seed (DESIGN.md §2).
DEFAULT_SEED = 20260927


@dataclass(frozen=True)
class Check:
    """The outcome of one check.

    Attributes:
        name: dotted name (``closure.residual``, ``jacobian.fd``, …).
        value: the measured number (NaN when it could not be measured).
        limit: the bound the value must respect.
        unit: unit of value and limit (SI; ``"1"`` for relative errors).
        passed: whether the value respects the limit.
        detail: one line on what was compared and where the worst case was.
        lower_bound: the limit is a lower bound (value ≥ limit) instead of an upper bound.
        mode: the support mode it was measured in (``rbc verify --mode``), or None.
    """

    name: str
    value: float
    limit: float
    unit: str
    passed: bool
    detail: str = ""
    lower_bound: bool = False
    mode: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The DESIGN.md §8 record ``{name, value, limit, unit, passed, detail}`` (plus
        ``mode`` for a check of a support mode)."""
        value = self.value if math.isfinite(self.value) else None
        out = {"name": self.name, "value": value, "limit": self.limit, "unit": self.unit,
               "passed": self.passed, "detail": self.detail}
        if self.mode is not None:
            out["mode"] = self.mode
        return out


def make_check(name: str, value: float, limit: float, unit: str, detail: str = "", *,
               lower_bound: bool = False) -> Check:
    """A :class:`Check` with ``passed`` decided from value and limit (NaN fails)."""
    value = float(value)
    ok = math.isfinite(value) and (value >= limit if lower_bound else value <= limit)
    return Check(name, value, float(limit), unit, bool(ok), detail, lower_bound)


def report(bundle: str, checks: Sequence[Check]) -> dict[str, Any]:
    """The ``rbc verify --json`` document ``{bundle, passed, checks}``."""
    return {"bundle": bundle, "passed": all(c.passed for c in checks),
            "checks": [c.to_json() for c in checks]}

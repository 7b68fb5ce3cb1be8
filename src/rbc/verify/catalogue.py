"""Every check name behind ``rbc verify``, suite by suite (the catalogue of docs/cli.md)."""

from __future__ import annotations

from rbc.verify import dynamics, kinematics

#: Suite name → the names of the checks it produces, in report order.
SUITES: dict[str, tuple[str, ...]] = {
    "kinematics": tuple(kinematics.CHECK_NAMES),
    "dynamics": tuple(dynamics.CHECK_NAMES),
}


def catalogue() -> tuple[str, ...]:
    """Every check name of the built-in suites, suite by suite."""
    return tuple(n for names in SUITES.values() for n in names)

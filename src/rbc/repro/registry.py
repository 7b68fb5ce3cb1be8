"""The reproduction targets by name: ``make repro-NAME`` / ``rbc repro NAME``.

A target is a module with ``TITLE`` (one line) and ``run(ctx: Context) -> Outcome``
(:mod:`rbc.repro.outcome`). Modules are imported on use.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from types import ModuleType

from rbc.errors import UsageError, did_you_mean

#: name → module, in the order ``make repro`` runs them.
TARGETS: dict[str, str] = {
    "table5-solvers": "rbc.repro.table5_solvers",
    "table6-compute": "rbc.repro.table6_compute",
    "fig6-curvature": "rbc.repro.fig6_curvature",
    "ff-ablation": "rbc.repro.ff_ablation",
    "walkers": "rbc.repro.walkers",
    "panda": "rbc.repro.panda",
    "fig11-reconstruction": "rbc.repro.fig11_reconstruction",
    "refinement": "rbc.repro.refinement",
    "table3-variants": "rbc.repro.table3_variants",
    "free-flight-probes": "rbc.repro.free_flight_probes",
    "kangaroo-ablation": "rbc.repro.kangaroo_ablation",
    "dances": "rbc.repro.dances",
    "go2-course": "rbc.repro.go2_course",
    "kangaroo-landing": "rbc.repro.kangaroo_landing",
    "excavation": "rbc.repro.excavation",
}


def target_module(name: str) -> ModuleType:
    """The module of target ``name``.

    Raises:
        UsageError: an unknown name (with a did-you-mean and the valid names).
    """
    if name not in TARGETS:
        close = did_you_mean(name, TARGETS)
        hint = f" (did you mean '{close}'?)" if close else ""
        raise UsageError(f"unknown reproduction target '{name}'{hint}; valid: "
                         f"{', '.join(TARGETS)}")
    return importlib.import_module(TARGETS[name])


def select(names: Sequence[str]) -> list[str]:
    """The targets to run: all of them for an empty list, else the given ones (checked,
    duplicates dropped) in registry order.

    Raises:
        UsageError: an unknown name.
    """
    for n in names:
        target_module(n)
    return [n for n in TARGETS if not names or n in names]

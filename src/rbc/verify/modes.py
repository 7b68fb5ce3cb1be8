"""``rbc verify --mode NAME|all``: every kinematic and dynamics check per support mode.

Each mode's model is the base model plus one closure to the world per active support
(:func:`rbc.model.modes.model_for`, anchored at the stored reference anchors), so the
catalogue of :mod:`rbc.verify.kinematics` and :mod:`rbc.verify.dynamics` applies unchanged:
the 50-digit KKT builds the supports' rows like any cut joint's, Pinocchio's
``constraintDynamics`` gets one ``RigidConstraintModel`` per active support (``CONTACT_3D``
for a point, ``CONTACT_6D`` for a surface), and the maximal-coordinate Newton–Euler model
adds each support's rows between the resting world and the foot, whose multipliers are the
support reactions. The samplers move the floating base too (tangent draws,
:mod:`rbc.verify.kinematics`), so the states span each mode's manifold.

**Sample counts.** With several modes the requested counts are totals, spread evenly over
the modes (the first ``total mod n`` modes get one more; at least one each), so
``--mode all --dynamics-samples 48`` draws 48 configurations (sets A and B of each) over all
stored modes. Every check is tagged with its mode (``Check.mode``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from rbc.errors import UsageError, did_you_mean
from rbc.model.compiled import CompiledModel
from rbc.model.modes import model_for
from rbc.verify.checks import DEFAULT_SEED, Check


def select_modes(model: CompiledModel, name: str) -> list[str]:
    """``all`` → every stored mode (fewest supports first), else ``[name]``.

    Raises:
        UsageError: the bundle stores no modes, or no mode of that name (lists them).
    """
    names = sorted(model.modes, key=lambda n: (len(model.modes[n].supports), n))
    if not names:
        raise UsageError("--mode: the bundle stores no support modes; compile it with "
                         "`rbc compile … --modes all` or `--mode NAME=s1,s2,…`")
    if name == "all":
        return names
    if name not in model.modes:
        hint = did_you_mean(name, names)
        raise UsageError(f"--mode {name}: no such mode" + (f" (did you mean '{hint}'?)" if hint
                                                          else "")
                         + "; stored modes: " + ", ".join(names) + " (or `all`)")
    return [name]


def split(total: int, n: int) -> list[int]:
    """``total`` spread over n modes (the first ``total mod n`` get one more; ≥ 1 each)."""
    base, extra = divmod(max(total, n), n)
    return [base + (i < extra) for i in range(n)]


def run_mode_checks(model: CompiledModel, names: Sequence[str], *, samples: int,
                    dynamics_samples: int | None = None, seed: int = DEFAULT_SEED,
                    progress: Callable[[int], None] | None = None) -> list[Check]:
    """The kinematic (and, with ``dynamics_samples``, dynamics) checks of each named mode.

    Args:
        model: the base model (from a bundle with stored modes).
        names: stored mode names (:func:`select_modes`).
        samples, dynamics_samples: totals over the modes (module docstring).
        progress: called with finished work units (:func:`work_units`).

    Raises:
        ClosureError: a mode's sampler gave up.
    """
    from rbc.verify import dynamics as dyn
    from rbc.verify.kinematics import run_kinematic_checks

    out: list[Check] = []
    kin_n = split(samples, len(names))
    dyn_n = split(dynamics_samples, len(names)) if dynamics_samples else [0] * len(names)
    for name, nk, nd in zip(names, kin_n, dyn_n, strict=True):
        info = model.modes[name]
        mm = model_for(model, info)
        checks = run_kinematic_checks(mm, info.partition, samples=nk, seed=seed,
                                      progress=progress)
        if nd:
            checks += dyn.run_dynamic_checks(mm, info.partition, samples=nd, seed=seed,
                                             progress=progress)
        out += [replace(c, mode=name) for c in checks]
    return out


def work_units(model: CompiledModel, names: Sequence[str], samples: int,
               dynamics_samples: int | None) -> int:
    """Progress total of :func:`run_mode_checks`."""
    from rbc.verify import dynamics as dyn
    from rbc.verify.kinematics import work_units as kin_units

    total = sum(kin_units(n) for n in split(samples, len(names)))
    if dynamics_samples:
        total += sum(dyn.work_units(n) for n in split(dynamics_samples, len(names)))
    return total

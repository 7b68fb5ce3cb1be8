"""Model mismatch in the plant only (the controller keeps the nominal model).

* ``payload BODY=KG``: a point mass at the body's centre of mass — the body's mass grows by
  KG, its COM and rotational inertia about the COM are unchanged.
* ``inertia_scale S``: every body's mass and inertia tensor are multiplied by S (a uniform
  density error; actuator rotor inertia is not scaled).
* ``friction MU``: every support's friction coefficient becomes MU (the ground the plant
  stands on; MuJoCo's contacts use it, the rigid plants report friction ratios against it).

Only the record's inertial and contact data change, so the kinematics (and the compiled
structure) are those of the nominal model: the plant is the nominal :class:`CompiledModel`
with a new record.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from rbc.errors import RbcError, did_you_mean
from rbc.model.compiled import CompiledModel


class MismatchError(RbcError):
    """A payload on an unknown body, a negative payload, a non-positive inertia scale, or a
    friction coefficient that is not positive (or a record without supports)."""


def plant_model(kin: CompiledModel, payload: Sequence[tuple[str, float]] = (),
                inertia_scale: float = 1.0, friction: float | None = None) -> CompiledModel:
    """The plant: ``kin`` with payloads added, inertias scaled and the supports' friction
    replaced (module docstring).

    Raises:
        MismatchError: see the class.
    """
    if not inertia_scale > 0:
        raise MismatchError(f"--inertia-scale {inertia_scale:g}: must be positive")
    names = [b.name for b in kin.record.bodies]
    extra: dict[str, float] = {}
    for body, kg in payload:
        if body not in names:
            close = did_you_mean(body, names)
            hint = f" (did you mean '{close}'?)" if close else ""
            raise MismatchError(f"--payload {body}={kg:g}: no body '{body}'{hint}; bodies: "
                                f"{', '.join(names)}")
        if kg < 0:
            raise MismatchError(f"--payload {body}={kg:g}: a payload mass must be ≥ 0 kg")
        extra[body] = extra.get(body, 0.0) + kg
    if friction is not None:
        if not kin.record.supports:
            raise MismatchError(f"--friction {friction:g}: {kin.record.name} has no supports")
        if not (friction > 0 and np.isfinite(friction)):
            raise MismatchError(f"--friction {friction:g}: a friction coefficient must be "
                                "positive and finite")
    if not extra and inertia_scale == 1.0 and friction is None:
        return kin
    bodies = tuple(replace(b, mass=inertia_scale * b.mass + extra.get(b.name, 0.0),
                           inertia=tuple(inertia_scale * x for x in b.inertia))
                   for b in kin.record.bodies)
    supports = kin.record.supports if friction is None else tuple(
        replace(s, friction=float(friction)) for s in kin.record.supports)
    return replace(kin, record=replace(kin.record, bodies=bodies, supports=supports))

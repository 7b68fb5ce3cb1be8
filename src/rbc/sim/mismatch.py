"""Model mismatch in the plant only (the controller keeps the nominal model).

* ``payload BODY=KG``: a point mass at the body's centre of mass — the body's mass grows by
  KG, its COM and rotational inertia about the COM are unchanged.
* ``inertia_scale S``: every body's mass and inertia tensor are multiplied by S (a uniform
  density error; actuator rotor inertia is not scaled).

Only the record's inertial data change, so the kinematics (and the compiled structure) are
those of the nominal model: the plant is the nominal :class:`CompiledModel` with a new record.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from rbc.errors import RbcError, did_you_mean
from rbc.model.compiled import CompiledModel


class MismatchError(RbcError):
    """A payload on an unknown body, a negative payload, or a non-positive inertia scale."""


def plant_model(kin: CompiledModel, payload: Sequence[tuple[str, float]] = (),
                inertia_scale: float = 1.0) -> CompiledModel:
    """The plant: ``kin`` with payloads added and inertias scaled (module docstring).

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
    if not extra and inertia_scale == 1.0:
        return kin
    bodies = tuple(replace(b, mass=inertia_scale * b.mass + extra.get(b.name, 0.0),
                           inertia=tuple(inertia_scale * x for x in b.inertia))
                   for b in kin.record.bodies)
    return replace(kin, record=replace(kin.record, bodies=bodies))

"""Pushes: external forces on a plant's body over a time window (``rbc simulate --push``).

A push ``BODY=FX,FY,FZ@START+DURATION`` applies the constant force ``(FX, FY, FZ)`` [N]
(world axes) at the body's centre of mass from START for DURATION seconds [s]. It acts on
the plant only — the controller neither knows nor compensates it (an unmodelled
disturbance, like ``--payload``). The control loop hands the force acting at each control
step to the plant (:meth:`rbc.sim.backends.Backend.apply_force`), held over the step, so a
push starts and ends on the control grid.

Plants: MuJoCo (``xfrc_applied`` of the body: force at the centre of mass, no torque) and
Pinocchio (the generalized force ``J_cᵀ f`` of the centre-of-mass point Jacobian, world
axes, added to the joint efforts). The energy ledger does not count a push's work, so the
residual of a pushed run contains it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rbc.errors import RbcError, did_you_mean


class PushError(RbcError):
    """A malformed ``--push`` or one on an unknown body."""


@dataclass(frozen=True)
class Push:
    """A force ``force`` (3,) [N] (world axes) at body ``body``'s centre of mass during
    ``[start, start + duration)`` [s]."""

    body: str
    force: tuple[float, float, float]
    start: float
    duration: float

    def active(self, t: float) -> bool:
        """Whether the push acts during the control step starting at time t [s] (a 1e-9 s
        slack absorbs the round-off of control times)."""
        return self.start - 1e-9 <= t < self.start + self.duration - 1e-9

    def scaled(self, factor: float) -> Push:
        """The same push with its force multiplied by ``factor``."""
        return Push(self.body, tuple(factor * f for f in self.force), self.start,
                    self.duration)

    def text(self) -> str:
        """The ``--push`` text of this push (:func:`parse_push` reads it back)."""
        f = self.force
        return f"{self.body}={f[0]:g},{f[1]:g},{f[2]:g}@{self.start:g}+{self.duration:g}"

    def to_json(self) -> dict:
        return {"body": self.body, "force": list(self.force), "start": self.start,
                "duration": self.duration}


def parse_push(text: str, bodies) -> Push:
    """``BODY=FX,FY,FZ@START+DURATION`` → :class:`Push` (module docstring).

    Raises:
        PushError: malformed text, a non-finite number, a negative start or a non-positive
            duration, or an unknown body (the bodies are listed).
    """
    form = "expected BODY=FX,FY,FZ@START+DURATION (newtons, seconds), e.g. base=0,40,0@3+0.1"
    body, sep, rest = str(text).partition("=")
    force, at, window = rest.partition("@")
    start, plus, duration = window.partition("+")
    if not (sep and at and plus and body):
        raise PushError(f"--push {text}: {form}")
    try:
        f = tuple(float(x) for x in force.split(","))
        t0, dt = float(start), float(duration)
    except ValueError:
        raise PushError(f"--push {text}: {form}") from None
    if len(f) != 3 or not all(np.isfinite([*f, t0, dt])):
        raise PushError(f"--push {text}: {form}")
    if t0 < 0 or dt <= 0:
        raise PushError(f"--push {text}: the start must be ≥ 0 s and the duration > 0 s")
    names = list(bodies)
    if body not in names:
        close = did_you_mean(body, names)
        hint = f" (did you mean '{close}'?)" if close else ""
        raise PushError(f"--push {text}: no body '{body}'{hint}; bodies: {', '.join(names)}")
    return Push(body, f, t0, dt)


def forces_at(pushes, t: float) -> dict[str, np.ndarray]:
    """``{body: (3,) total force [N]}`` of the pushes acting during the step at time t (every
    pushed body appears, with zeros when no push acts, so a plant releases it)."""
    out = {p.body: np.zeros(3) for p in pushes}
    for p in pushes:
        if p.active(t):
            out[p.body] += np.asarray(p.force, dtype=float)
    return out

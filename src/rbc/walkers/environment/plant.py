"""Design model versus true plant: the reality gap the controllers cannot see.

The simulator keeps two models of the same walker (DESIGN.md §9, docs/walkers.md §12):

* the **design model** — the model file as shipped — is all a controller ever sees: built-in
  and user controllers receive it through one
  :class:`rbc.walkers.control.context.ControlContext`;
* the **true plant** — what the integrator runs — is the design model with its lumped masses
  and link inertias scaled, a payload added at the heaviest link, and the actuator torques
  mapped through an effectiveness and a bias, ``u_true = eta * u + b`` (elementwise), plus the
  environment (:mod:`rbc.walkers.environment.effects`) acting on the true plant only.

A payload of mass ``m_p`` at the heaviest link is an extra lumped mass on that link's centre
of mass: one more row of ``A`` equal to the heaviest mass's row (no rotational inertia of its
own: a point load).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rbc.walkers.errors import WalkerError
from rbc.walkers.hybrid.model import WalkerModel


@dataclass(frozen=True)
class Mismatch:
    """Parametric model mismatch of the true plant.

    Attributes:
        mass_scale: factor on every lumped mass [-].
        inertia_scale: factor on every link inertia [-] (None: ``mass_scale``).
        payload: extra point mass at the heaviest lumped mass [kg] (>= 0).
        effectiveness: actuator effectiveness ``eta`` [-], scalar or (nu,), in (0, 2].
        bias: actuator bias ``b`` [N m], scalar or (nu,).
    """

    mass_scale: float = 1.0
    inertia_scale: float | None = None
    payload: float = 0.0
    effectiveness: float | tuple[float, ...] = 1.0
    bias: float | tuple[float, ...] = 0.0

    def __post_init__(self) -> None:
        if not self.mass_scale > 0 or (self.inertia_scale is not None
                                       and not self.inertia_scale > 0):
            raise WalkerError(f"mass and inertia scales must be > 0, got {self.mass_scale}, "
                              f"{self.inertia_scale}")
        if self.payload < 0:
            raise WalkerError(f"payload must be >= 0 kg, got {self.payload}")
        eta = np.atleast_1d(np.asarray(self.effectiveness, dtype=float))
        if np.any(eta <= 0) or np.any(eta > 2):
            raise WalkerError(f"actuator effectiveness must lie in (0, 2], got {eta}")

    @property
    def nominal(self) -> bool:
        """True when the true plant equals the design model (no mismatch)."""
        return (self.mass_scale == 1.0 and self.inertia_scale in (None, 1.0)
                and self.payload == 0.0 and np.all(np.asarray(self.effectiveness) == 1.0)
                and np.all(np.asarray(self.bias) == 0.0))


def true_model(design: WalkerModel, mm: Mismatch) -> WalkerModel:
    """The true plant's rigid-body model: scaled masses/inertias plus the payload row.

    Args:
        design: the design model. mm: the mismatch.

    Returns:
        A new :class:`WalkerModel` (K or K+1 lumped masses, same coordinates and points).
    """
    s_i = mm.mass_scale if mm.inertia_scale is None else mm.inertia_scale
    A, m = np.array(design.A), design.m * mm.mass_scale
    if mm.payload > 0:
        k = int(np.argmax(design.m))  # heaviest lumped mass (RABBIT: the torso)
        A = np.vstack([A, A[k]])
        m = np.append(m, mm.payload)
    return WalkerModel(name=design.name, coords=design.coords, A=A, m=m, I=design.I * s_i,
                       B=design.B, points=dict(design.points), relabel=design.relabel,
                       actuators=design.actuators, mu=design.mu, limits=design.limits,
                       params=design.params, g=design.g)


@dataclass(frozen=True)
class Actuation:
    """Actuator map of the true plant: ``u_true = eta * u + b`` [N m], (nu,) each."""

    eta: np.ndarray
    bias: np.ndarray

    @classmethod
    def from_mismatch(cls, mm: Mismatch, nu: int) -> Actuation:
        """Broadcast the mismatch's effectiveness and bias to ``nu`` actuators.

        Raises:
            WalkerError: a vector of the wrong length.
        """
        out = []
        for name, v in (("effectiveness", mm.effectiveness), ("bias", mm.bias)):
            a = np.atleast_1d(np.asarray(v, dtype=float))
            if a.size == 1:
                a = np.full(nu, float(a[0]))
            if a.shape != (nu,):
                raise WalkerError(f"{name} needs 1 or {nu} values, got {a.size}")
            a.setflags(write=False)
            out.append(a)
        return cls(*out)

    def __call__(self, u: np.ndarray) -> np.ndarray:
        """True actuator torques (nu,) [N m] for commanded ``u`` (nu,)."""
        return self.eta * u + self.bias

"""Controller registry: built-in controllers are evaluated at every RK4 stage.

``passive`` applies zero torque; ``fl`` is the virtual-constraint feedback linearization of
:mod:`rbc.walkers.control.vc` configured from the model file's ``controller`` section.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.linalg.lapack import dgesv as _gesv

from rbc.walkers.errors import WalkerError
from rbc.walkers.hybrid.model import FusedTerms, WalkerModel

CONTROLLERS = ("passive", "fl")


@dataclass(frozen=True)
class Passive:
    """Zero actuator torque: ``D qdd + H + G = 0`` (Goswami et al. 1998)."""

    model: WalkerModel
    alpha: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "_terms", FusedTerms(self.model, self.alpha))
        object.__setattr__(self, "_u", np.zeros(self.model.B.shape[1]))

    def accel(self, q: np.ndarray, qd: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(qdd (n,), u (nu,) = 0)``: :func:`rbc.walkers.hybrid.swing.forward_dynamics` with the
        fused terms of :class:`rbc.walkers.hybrid.model.FusedTerms` (same equations)."""
        D, mhg = self._terms(q, qd)
        return _gesv(D, mhg)[2], self._u


def make_controller(name: str, model: WalkerModel, alpha: float):
    """Build controller ``name`` for ``model`` on slope ``alpha`` [rad].

    Raises:
        WalkerError: unknown controller, or ``fl`` for a model without a ``controller``
            section.
    """
    if name == "passive":
        return Passive(model, alpha)
    if name == "fl":
        if "controller" not in model.params:
            raise WalkerError(
                f"model '{model.name}' has no virtual constraints; controller 'fl' needs a "
                "'controller' section in the model file",
                choices=["passive"],
            )
        from rbc.walkers.control.vc import FeedbackLinearization

        return FeedbackLinearization.from_model(model, alpha)
    raise WalkerError(f"unknown controller '{name}'", choices=CONTROLLERS, got=name)

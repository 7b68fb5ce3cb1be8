"""Controller registry: built-in controllers are evaluated at every RK4 stage.

``passive`` applies zero torque; ``fl`` is the virtual-constraint feedback linearization of
:mod:`rbc.walkers.vc` configured from the model file's ``controller`` section.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.linalg.lapack import dgesv as _gesv

from rbc.walkers.errors import WalkerError
from rbc.walkers.model import WalkerModel

CONTROLLERS = ("passive", "fl")


@dataclass(frozen=True)
class Passive:
    """Zero actuator torque: ``D qdd + H + G = 0`` (Goswami et al. 1998)."""

    model: WalkerModel
    alpha: float

    def __post_init__(self) -> None:
        m = self.model
        pre = {"M": np.array(m.M), "diagI": np.diag(m.I), "gw": m.g * m.w,
               "off2": np.array([np.pi / 2, 0.0])[:, None, None], "u": np.zeros(m.B.shape[1])}
        object.__setattr__(self, "_pre", pre)

    def accel(self, q: np.ndarray, qd: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(qdd (n,), u (nu,) = 0)``: the fused form of
        :func:`rbc.walkers.swing.forward_dynamics` (same equations, fewer array calls)."""
        P = self._pre
        MT = P["M"] * np.sin((q[:, None] - q) + P["off2"])  # M cos(qi-qj), M sin(qi-qj)
        rhs = MT[1] @ (-(qd * qd)) + P["gw"] * np.sin(q + self.alpha)
        return _gesv(MT[0] + P["diagI"], rhs)[2], P["u"]


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
        from rbc.walkers.vc import FeedbackLinearization

        return FeedbackLinearization.from_model(model, alpha)
    raise WalkerError(f"unknown controller '{name}'", choices=CONTROLLERS, got=name)

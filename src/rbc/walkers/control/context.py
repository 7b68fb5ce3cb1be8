"""What a controller may know: the design model, never the true plant.

Built-in and user controllers receive one :class:`ControlContext` (docs/walkers.md §12); the
true plant they run on (:mod:`rbc.walkers.environment.plant`) stays hidden from them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rbc.walkers.control.vc import FeedbackLinearization
from rbc.walkers.errors import WalkerError
from rbc.walkers.hybrid.model import WalkerModel


@dataclass(frozen=True)
class ControlContext:
    """Everything a controller may know: the design model, never the true plant.

    Attributes:
        model: the design :class:`WalkerModel`. alpha: slope [rad]. dt: control period
            (= the simulation step; controllers are sampled once per step and held) [s].
        vc: the design virtual constraints (:class:`rbc.walkers.control.vc.VirtualConstraints`)
            or None. kp, kd: the nominal output gains of the model file [1/s^2, 1/s].
        u_max: torque box [N m] (model file ``controller.u_max``, default 150).
    """

    model: WalkerModel
    alpha: float
    dt: float
    vc: object | None = None
    kp: float = 0.0
    kd: float = 0.0
    u_max: float = 150.0
    extra: dict = field(default_factory=dict)

    @classmethod
    def from_model(cls, model: WalkerModel, alpha: float, dt: float) -> ControlContext:
        """Context of a model file with a ``controller`` section (virtual constraints).

        Raises:
            WalkerError: no ``controller`` section.
        """
        if "controller" not in model.params:
            raise WalkerError(f"model '{model.name}' has no virtual constraints "
                              "('controller' section)")
        fl = FeedbackLinearization.from_model(model, alpha)
        cfg = model.params["controller"]
        return cls(model, alpha, dt, fl.vc, fl.kp, fl.kd, float(cfg.get("u_max", 150.0)),
                   extra={"fl": fl})

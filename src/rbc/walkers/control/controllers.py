"""Controller registry: built-in controllers are evaluated at every RK4 stage.

``passive`` applies zero torque; ``fl`` is the virtual-constraint feedback linearization of
:mod:`rbc.walkers.control.vc` configured from the model file's ``controller`` section.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rbc.walkers.errors import WalkerError
from rbc.walkers.hybrid.model import (
    FusedTerms,
    WalkerModel,
    dD_times,
    force_jacobian,
    limit_solve,
    solve_mass_matrix,
)

CONTROLLERS = ("passive", "fl")
RUN_CONTROLLERS = ("passive", "fl", "adaptive", "rise", "composite", "lbdnn")
FOOTED_PLANT_CONTROLLERS = ("fl", "lbdnn", "composite")
PLANT_ONLY = ("adaptive", "rise", "composite")


def is_footed(model) -> bool:
    """Whether ``model`` is the footed walker (a ``gait`` section)."""
    return "gait" in model.params


def controllers_for(model) -> tuple[str, ...]:
    """Controllers of ``rbc walk run`` that can walk ``model``: ``passive`` needs an
    ``initial_state``; ``fl`` a ``controller`` section (virtual constraints) and finite
    masses; the true-plant controllers also no angle offsets; a footed model takes ``fl``,
    ``lbdnn`` and ``composite``."""
    if is_footed(model):
        return FOOTED_PLANT_CONTROLLERS
    out = []
    if "initial_state" in model.params:
        out.append("passive")
    if "controller" in model.params and not model.is_limit:
        out.append("fl")
        if not model.has_offsets:
            out += list(PLANT_ONLY)
    return tuple(out)


@dataclass(frozen=True)
class Passive:
    """Zero actuator torque: ``D qdd + H + G = 0`` (Goswami et al. 1998)."""

    model: WalkerModel
    alpha: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "_terms", FusedTerms(self.model, self.alpha))
        object.__setattr__(self, "_u", np.zeros(self.model.B.shape[1]))
        lim = self.model.infinitesimal
        object.__setattr__(self, "_terms1", None if lim is None else FusedTerms(lim, self.alpha))

    def accel(self, q: np.ndarray, qd: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(qdd (n,), u (nu,) = 0)``: :func:`rbc.walkers.hybrid.swing.forward_dynamics` with
        the fused terms of :class:`rbc.walkers.hybrid.model.FusedTerms` (same equations); a
        limit model solves the limit equations (:func:`rbc.walkers.hybrid.model.limit_solve`).

        Raises:
            WalkerError: the mass matrix is singular at ``q`` (LAPACK's failure flag).
        """
        D, mhg = self._terms(q, qd)
        if self._terms1 is not None:
            D1, mhg1 = self._terms1(q, qd)
            return limit_solve(D, D1, mhg, mhg1, what="limit mass matrix"), self._u
        return solve_mass_matrix(self.model, D, mhg, q), self._u

    def accel_jacobian(self, q: np.ndarray, qd: np.ndarray
                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(qdd, ∂qdd/∂q, ∂qdd/∂qd)`` ((n,), (n, n), (n, n)), analytic.

        ``D qdd = r`` differentiated: ``D ∂qdd/∂q_k = ∂r/∂q_k - ∂D/∂q_k qdd``
        (:func:`rbc.walkers.hybrid.model.dD_times`, :func:`force_jacobian`). A limit model
        differentiates both orders of the pencil and takes the limit again: with ``z1`` any
        solution of ``D0 z1 = r1 - D1 qdd``, the ``eps`` order of the derivative is
        ``∂r1/∂q - ∂D1/∂q qdd - ∂D0/∂q z1``.

        Raises:
            WalkerError: singular mass matrix.
        """
        m, a = self.model, self.alpha
        qdd = self.accel(q, qd)[0]
        D, _ = self._terms(q, qd)
        rq, rqd = force_jacobian(m, q, qd, a)
        rq = rq - dD_times(m, q, qdd)
        if self._terms1 is None:
            X = solve_mass_matrix(m, D, np.column_stack([rq, rqd]), q)
            return qdd, X[:, :m.n], X[:, m.n:]
        lim = m.infinitesimal
        D1, r1 = self._terms1(q, qd)
        z1 = np.linalg.lstsq(D, r1 - D1 @ qdd, rcond=None)[0]
        rq1, rqd1 = force_jacobian(lim, q, qd, a)
        rq1 = rq1 - dD_times(lim, q, qdd) - dD_times(m, q, z1)
        X = limit_solve(D, D1, np.column_stack([rq, rqd]), np.column_stack([rq1, rqd1]),
                        what="limit mass matrix")
        return qdd, X[:, :m.n], X[:, m.n:]


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
                choices=[c for c in controllers_for(model) if c in CONTROLLERS] or None,
            )
        if model.is_limit:
            raise WalkerError(f"model '{model.name}' has infinitesimal masses; controller "
                              "'fl' needs finite masses", choices=["passive"])
        from rbc.walkers.control.vc import FeedbackLinearization

        return FeedbackLinearization.from_model(model, alpha)
    raise WalkerError(f"unknown controller '{name}'", choices=CONTROLLERS, got=name)


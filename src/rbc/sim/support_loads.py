"""Support loads of a support reference on the rigid model under its own feedforward
(docs/supports.md, "The Go2 course").

At every grid sample of a lifted support reference (:mod:`rbc.sim.schedule`) in the mode
active there, the mode's forward dynamics at the reference state with the ``pd+ff``
feedforward efforts (the PD term is zero on the reference) gives the accelerations the rigid
plant would have, and the support rows' multipliers the ground's reactions on the stance
feet (:func:`rbc.model.reactions.support_reactions`). A reference that unilateral,
friction-limited contacts can carry keeps every stance foot's normal force positive and its
friction ratio ``|f_t| / f_n`` below μ. Where a mode leaves a direction undriven (two point
feet: the roll about the line through them) the feedforward is a least-squares solution and
the forward dynamics departs from the reference's accelerations: the **acceleration
residual** ``‖u̇_fd − u̇_ref‖`` measures how much the reference asks along that direction.

Joint and drive Coulomb friction is left out on both sides (the feedforward does not
compensate it; the plants' PD does): the loads are those of the reference motion itself.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from rbc.ir import spatial as sp
from rbc.model.dynamics import DynamicsData, DynamicsModel, forward_dynamics, reduced_terms
from rbc.model.reactions import support_reactions
from rbc.sim.schedule import SupportReference, mode_state, segment_models


@dataclass(frozen=True, eq=False)
class SupportLoads:
    """Per grid sample (K,) and support: normal force [N] and friction ratio (NaN while the
    support is inactive), and the acceleration residual (K,) [rad/s², m/s²].

    Attributes:
        time: (K,) [s]; names: the supports; normal, ratio: (K, n_supports);
        residual: (K,); friction: (n_supports,) μ of each support.
    """

    time: np.ndarray
    names: tuple[str, ...]
    normal: np.ndarray
    ratio: np.ndarray
    residual: np.ndarray
    friction: np.ndarray

    def summary(self) -> dict:
        """Smallest normal force and largest friction ratio per support, the largest ratio
        over μ and the largest acceleration residual."""
        per = {}
        for i, n in enumerate(self.names):
            on = ~np.isnan(self.normal[:, i])
            per[n] = {"min_normal_force": float(self.normal[on, i].min()) if on.any() else None,
                      "max_friction_ratio": float(self.ratio[on, i].max()) if on.any()
                      else None, "friction": float(self.friction[i])}
        with np.errstate(invalid="ignore"):
            margin = np.nanmax(self.ratio / self.friction)
        return {"supports": per,
                "min_normal_force": float(np.nanmin(self.normal)),
                "max_friction_ratio": float(np.nanmax(self.ratio)),
                "max_friction_over_mu": float(margin),
                "max_acceleration_residual": float(self.residual.max(initial=0.0))}


def support_loads(sref: SupportReference, ff: np.ndarray) -> SupportLoads:
    """The loads of a lifted support reference under its feedforward table ``ff`` (K, n_act)
    (:func:`rbc.sim.schedule.modal_feedforward`; module docstring)."""
    model = sref.model
    by = {s.name: s for s in model.record.supports}
    names = tuple(n for n in by if any(n in model.modes[m].supports
                                       for m in sref.schedule.modes))
    up = sp.up_direction(model.record.gravity)
    K = sref.ref.time.size
    normal, ratio = np.full((K, len(names)), np.nan), np.full((K, len(names)), np.nan)
    residual = np.zeros(K)
    for i, (mm, _) in enumerate(segment_models(model, sref)):
        dm = DynamicsModel.build(mm)
        data = DynamicsData.of(dm)
        part = next(iter(mm.partitions.values()))
        for k in np.flatnonzero(sref.mode == i):
            q, u, ud = mode_state(mm, sref.ref.q[k], sref.ref.v[k], sref.ref.a[k])
            terms = reduced_terms(dm, data, part, q, u, ff[k])
            terms = replace(terms, coulomb=np.zeros(mm.nv),
                            tau_coulomb=np.zeros_like(terms.tau_coulomb))
            a = forward_dynamics(dm, terms)
            residual[k] = float(np.linalg.norm(a - ud))
            for n, w in support_reactions(dm, data, q, terms, a).items():
                j = names.index(n)
                fn = float(w[3:] @ up)
                normal[k, j] = fn
                ratio[k, j] = float(np.linalg.norm(w[3:] - fn * up)) / max(fn, 1e-12)
    return SupportLoads(sref.ref.time.copy(), names, normal, ratio, residual,
                        np.array([by[n].friction for n in names]))

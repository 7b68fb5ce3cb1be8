"""Inverse-dynamics allocation at one state of a composed mode: the efforts that produce
prescribed independent accelerations with every support wrench inside its cone, and the
cones' margins (``rbc forces --allocate``, docs/allocation.md "From the command line").

At (q, u) with accelerations u̇ the tracking law on the state itself (e = 0, s = 0) gives
``Q = Γ u̇ + C u + g + D u``; the allocation QP (:mod:`rbc.control.allocation`) finds f,
with the model's own loads — Coulomb friction included, as ``rbc forces`` evaluates them —
so that the forward dynamics with f give back u̇ and the reactions λ_b(f).
Per support the report gives the normal force, the centre of pressure in the support frame
and as a fraction of each half-extent, and the friction ratio ``|f_t| / (μ f_z)``
(``|f_t| = max(|f_x|, |f_y|)·√2``: the pyramid's measure, 1 at its edge for μ' = μ).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from rbc.control.allocation import AllocationError, allocate, allocation_problem
from rbc.control.tracking import IndependentCoordinates, commanded_force, tracking_state

#: Allocation slack ‖z‖∞ [N or N·m] up to which the accelerations count as reached (the
#: acceptance figure of issue #20; a reachable Q gives exactly 0, docs/allocation.md).
SLACK_LIMIT = 1e-9


def allocation_report(comp, mode: str, q: np.ndarray, u: np.ndarray,
                      udot: np.ndarray | None = None) -> dict:
    """The ``allocation`` key of ``rbc forces --allocate --json`` (docs/cli.md).

    Args:
        comp: the composition; mode: its mode; q: (nq,) closed configuration of the mode
        model; u, udot: (n_u,) independent speeds and accelerations (default 0).

    Returns:
        ``{"phase", "slack", "reached", "cone_violation", "active", "efforts", "supports",
        "error"}`` (``error`` and ``phase = "infeasible"`` when no efforts keep the
        wrenches in their cones; efforts and supports then empty; ``reached``: slack ≤
        :data:`SLACK_LIMIT`).
    """
    from rbc.compose.dynamics import composed_terms, member_model
    from rbc.model.dynamics import DynamicsData

    mm = member_model(comp, mode)
    md = comp.modes[mode]
    data = DynamicsData.of(mm.dm)
    terms = composed_terms(mm, data, q, np.asarray(u, dtype=float))
    udot = np.zeros(terms.lift.E.shape[1]) if udot is None else np.asarray(udot, dtype=float)
    a = terms.lift.E @ udot + terms.edu
    ts = tracking_state(IndependentCoordinates.of(mm.kin, md.partition), q, terms.v, q,
                        terms.v, a)
    prob = allocation_problem(mm, data, terms, commanded_force(terms, ts), coulomb=True)
    try:
        alloc = allocate(prob)
    except AllocationError as err:
        return {"phase": "infeasible", "slack": None, "reached": False,
                "cone_violation": None, "active": [], "efforts": {}, "supports": {},
                "error": str(err)}
    by_name = {s.name: s for s in mm.kin.record.supports}
    sups = {}
    for cone, w in zip(prob.cones, alloc.wrenches, strict=True):
        s = by_name[cone.support]
        n, f = cone.local(w)[:3], cone.local(w)[3:]
        entry = {"normal": float(f[2]), "force": w[3:].tolist(), "moment": w[:3].tolist()}
        if f[2] > 0:
            cop = [float(-n[1] / f[2]), float(n[0] / f[2])]
            entry["cop"] = cop
            if len(s.half_extents) == 2:
                entry["cop_fraction"] = [abs(c) / h for c, h in zip(cop, s.half_extents,
                                                                     strict=True)]
            entry["friction_ratio"] = (float(np.sqrt(2.0) * max(abs(f[0]), abs(f[1]))
                                             / (s.friction * f[2])) if s.friction else None)
        sups[cone.support] = entry
    return {"phase": alloc.phase, "slack": alloc.slack,
            "reached": alloc.slack <= SLACK_LIMIT, "cone_violation": alloc.cone_violation,
            "active": list(alloc.active), "efforts": dict(zip(prob.ports, alloc.f.tolist(),
                                                              strict=True)),
            "supports": sups, "error": None}




def sample_allocation(mm, data, coords: IndependentCoordinates, q: np.ndarray,
                      v: np.ndarray, a: np.ndarray, *, coulomb: bool = False,
                      loads: dict[str, float] | None = None, weights=None):
    """Inverse-dynamics allocation at a reference state of a mode: the tracking law on the
    state itself (e = 0, s = 0: ``Q = Γ u̇ + C u + g + D u`` with ``u̇ = a[independent]``)
    and the allocation QP with the dances' nominal model (no Coulomb friction by default;
    issue #20 acceptance, docs/allocation.md "Allocation at sampled reference states").

    Args:
        mm, data: the mode's member model and scratch data; coords: its independent
            coordinates; q (nq,), v (nv,), a (nv,): a closed configuration, its speeds and
            accelerations (a reference sample); coulomb: keep the model's Coulomb friction;
            loads: σ per support (the stepping ramps; default 1); weights: the QP's
            :class:`~rbc.control.allocation.AllocationWeights` (default η = 0, the dances';
            stepping uses η = 2e-4).

    Returns:
        The :class:`~rbc.control.allocation.Allocation`.

    Raises:
        AllocationError: no efforts keep the support wrenches in their cones.
    """
    from rbc.compose.dynamics import composed_terms

    u = np.asarray(v, dtype=float)[coords.partition.independent]
    terms = composed_terms(mm, data, q, u)
    ts = tracking_state(coords, q, terms.v, q, v, a)
    from rbc.control.allocation import AllocationWeights

    return allocate(allocation_problem(mm, data, terms, commanded_force(terms, ts),
                                       coulomb=coulomb, loads=loads,
                                       weights=weights or AllocationWeights()))


__all__: Sequence[str] = ("SLACK_LIMIT", "allocation_report", "sample_allocation")

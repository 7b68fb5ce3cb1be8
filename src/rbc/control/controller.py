"""The whole-body controller of a composed mode: at each control instant the tracking law's
generalised force Q from the measured state and the reference, then the efforts from the
allocation QP (docs/allocation.md "Controller").

    measured (q, v) ─▶ member-wise terms at (q, u) ─▶ tracking state (e, ė, u_r, u̇_r, s)
        ─▶ Q = Γ u̇_r + C u_r + g + D u − k_s Γ s ─▶ allocation (f, z, λ_b(f)) ─▶ f

The plant loop, logging and measurement belong to :mod:`rbc.sim`; this module only maps a
measured state to port efforts (Model/Data split: the controller holds the mode's model and
one scratch :class:`~rbc.model.dynamics.DynamicsData`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from rbc.compose.dynamics import MemberModel, composed_terms
from rbc.control.allocation import (
    Allocation,
    AllocationWeights,
    allocate,
    allocation_problem,
)
from rbc.control.cones import ContactLimits
from rbc.control.reference import ReferenceSample
from rbc.control.tracking import (
    IndependentCoordinates,
    TrackingGains,
    TrackingState,
    commanded_force,
    tracking_state,
)
from rbc.model.dynamics import DynamicsData


@dataclass(frozen=True, eq=False)
class ControlStep:
    """One control instant.

    Attributes:
        t: time [s]; f: (n_act,) port efforts [N or N·m]; Q: (n_u,) commanded generalised
        force; tracking: the tracking state; allocation: the QP's solution (slack, support
        wrenches, active rows); reference: the reference sample used.
    """

    t: float
    f: np.ndarray
    Q: np.ndarray
    tracking: TrackingState
    allocation: Allocation
    reference: ReferenceSample


@dataclass(eq=False)
class AllocationController:
    """Tracking law + allocation QP on one composed mode (module docstring).

    Attributes:
        mm: the mode's member model; part: its partition (u = v[part.independent]);
        reference: t ↦ :class:`~rbc.control.reference.ReferenceSample` on the mode's
        manifold; gains, weights, limits: Λ and k_s, ρ and η, the cone margins;
        loads: optional t ↦ {support: σ} (unloading ramps); coulomb: keep the model's
        Coulomb friction in the nominal model.
    """

    mm: MemberModel
    part: object
    reference: Callable[[float], ReferenceSample]
    gains: TrackingGains = TrackingGains()
    weights: AllocationWeights = AllocationWeights()
    limits: ContactLimits = ContactLimits()
    loads: Callable[[float], Mapping[str, float]] | None = None
    coulomb: bool = False
    coords: IndependentCoordinates = field(init=False)
    data: DynamicsData = field(init=False)

    def __post_init__(self) -> None:
        self.coords = IndependentCoordinates.of(self.mm.kin, self.part)
        self.data = DynamicsData.of(self.mm.dm)

    def step(self, t: float, q: np.ndarray, v: np.ndarray) -> ControlStep:
        """Efforts at time t [s] from the measured closed configuration q (nq,) and speeds
        v (nv,) of the mode model.

        Raises:
            AllocationError: no efforts keep the support wrenches in their cones.
        """
        ref = self.reference(t)
        u = np.asarray(v, dtype=float)[self.part.independent]
        terms = composed_terms(self.mm, self.data, q, u)
        ts = tracking_state(self.coords, q, terms.v, ref.q, ref.v, ref.a, self.gains)
        Q = commanded_force(terms, ts, self.gains)
        loads = None if self.loads is None else dict(self.loads(t))
        prob = allocation_problem(self.mm, self.data, terms, Q, limits=self.limits,
                                  weights=self.weights, loads=loads, coulomb=self.coulomb)
        alloc = allocate(prob)
        return ControlStep(float(t), alloc.f, Q, ts, alloc, ref)


__all__: Sequence[str] = ("AllocationController", "ControlStep")

"""The eight control policies of issue #20 item 4 as small pure functions sharing the
references, the gains and the allocation (docs/allocation.md "Policies").

Each policy maps ``(ctx, ref, q, v)`` — the shared :class:`PolicyContext`, a reference
sample (:class:`rbc.control.reference.ReferenceSample` of the mode model) and the measured
closed configuration and speeds of the mode model — to a :class:`PolicyStep` (port efforts
within the effort bounds, and the allocation's slack where there is one):

* ``proposed`` — the composed model of the full mode: member-wise Γ, C, g, D at the
  measured state, ``Q = Γ u̇_r + C u_r + g + D u − k_s Γ s`` (:mod:`rbc.control.tracking`),
  allocated in the cones (:mod:`rbc.control.allocation`).
* ``projected_tree`` — the same law with the projected tree terms: Pinocchio's CRBA M_T
  (reflected rotor inertia as armature), Coriolis matrix C_T and gravity g_T projected
  through the same lift, ``Γ = E_Tᵀ M_T E_T``, ``C = E_Tᵀ (C_T E_T + M_T Ė_T)`` (the
  analytic rate Ė(v) of the composer lift), ``g = E_Tᵀ g_T``. On the reference
  (s = 0, u_r = u) its Q equals the proposed one (test); off it the two Coriolis
  factorisations act differently on u_r.
* ``per_robot`` — each robot's own model on its own soles (:mod:`rbc.control.per_robot`;
  the hand links not modelled): the law and the allocation per robot, efforts stacked.
* ``no_curvature`` — the proposed law with the lift's rate Ė left out of C
  (:func:`rbc.compose.dynamics.member_sums` with ``curvature=False``).
* ``no_actuator_inertia`` — the actuator members (screw barrels and rods, the ankle struts'
  universal-joint crosses) and the screws' reflected rotor inertia removed from Γ and C,
  their weight kept in g.
* ``massless_actuators`` — the same members removed from g too.
* ``gravity_pd`` — ``Q = g − Γ̄ (k_s Λ e + (k_s I + Λ)(u − u_d))`` with Γ̄ the diagonal of Γ at
  the initial reference (:attr:`PolicyContext.gamma_bar`), allocated with quasi-static
  wrench maps (the maps of the measured configuration at rest).
* ``actuator_pd`` — no model: ``f = K_p (ℓ_d − ℓ) + K_d (ℓ̇_d − ℓ̇)`` at the ports with the
  5 Hz critically damped gains of :func:`rbc.sim.controllers.default_gains`' rule (the
  nominal port inertia at the initial reference, :func:`port_gains`), clipped to the
  effort bounds.

The allocation's support-wrench maps are the nominal composed model's in every
model-based policy (the shared allocation); only Q differs between them.

**Friction compensation** (the realistic plant, issue #20 item 3): every policy's efforts
plus ``0.85 F_c tanh(ℓ̇_d / ε)`` per port — F_c the drive's Coulomb friction (the record's
``coulomb``, which the realistic plant applies), ℓ̇_d the reference's port rate, ε 0.05 rad/s
at rotary and 0.005 m/s at linear (screw) ports — clipped to the effort bounds
(:class:`FrictionCompensation`, :func:`compensated`; :attr:`PolicyContext.friction`, None
on the other plants).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from rbc.compose.dynamics import InertialParameters, MemberModel, composed_terms, member_sums
from rbc.control.allocation import Allocation, AllocationWeights, allocate, allocation_problem
from rbc.control.cones import ContactLimits
from rbc.control.tracking import (
    IndependentCoordinates,
    TrackingGains,
    TrackingState,
    commanded_force,
    tracking_state,
)
from rbc.model.dynamics import DynamicsData


@dataclass(frozen=True, eq=False)
class PolicyStep:
    """One evaluation of a policy.

    Attributes:
        f: (n_act,) port efforts [N or N·m] within the bounds; Q: (n_u,) the commanded
        generalised force (None for actuator PD); slack: the allocation's ‖z‖∞ (0 without an
        allocation; the largest over the robots for per-robot); allocation: the QP's
        solution (None for actuator PD and per-robot); tracking: the tracking state;
        robots: per-robot, each robot's own allocation (its supports' λ_b(f); () otherwise).
    """

    f: np.ndarray
    Q: np.ndarray | None
    slack: float
    allocation: Allocation | None
    tracking: TrackingState | None
    robots: tuple[Allocation, ...] = ()


@dataclass(frozen=True, eq=False)
class FrictionCompensation:
    """``0.85 F_c tanh(ℓ̇_d / ε)`` per port (module docstring).

    Attributes:
        coulomb: (n_act,) F_c [N or N·m]; epsilon: (n_act,) ε [m/s or rad/s];
        fraction: the compensated fraction (0.85).
    """

    coulomb: np.ndarray
    epsilon: np.ndarray
    fraction: float = 0.85

    #: ε at rotary and linear ports (issue #20) [rad/s, m/s]
    ROTARY, LINEAR = 0.05, 0.005

    @classmethod
    def of(cls, kin, fraction: float = 0.85) -> FrictionCompensation:
        """From the record of ``kin``: every actuator's ``coulomb``, ε by its port's unit
        (:func:`rbc.model.interfaces.port_unit`)."""
        from rbc.model.interfaces import port_unit

        acts = kin.record.actuators
        eps = np.array([cls.LINEAR if port_unit(kin, i)[0] == "m" else cls.ROTARY
                        for i in range(len(acts))])
        return cls(np.array([a.coulomb for a in acts], dtype=float), eps, float(fraction))

    def efforts(self, ell_dot: np.ndarray) -> np.ndarray:
        """(n_act,) the compensation at the desired port rates ℓ̇_d (n_act,)."""
        return self.fraction * self.coulomb * np.tanh(np.asarray(ell_dot) / self.epsilon)


@dataclass(frozen=True, eq=False)
class PolicyContext:
    """What the policies share (immutable; the DynamicsData are scratch).

    Attributes:
        mm, data, part, coords: the mode's member model, its scratch data, partition and
            independent coordinates.
        gains, weights, limits: Λ and k_s; ρ and η; the cone margins.
        lower, upper: (n_act,) effort bounds.
        no_inertia, massless: the inertial parameters without the actuator members
            (:func:`actuator_parameters`).
        gamma_bar: (n_u,) diag Γ at the initial reference (gravity + PD).
        kp, kd: (n_act,) port PD gains (actuator PD).
        robots: the per-robot models (:func:`rbc.control.per_robot.robot_models`) and their
            independent coordinates, or () when not built.
        friction: the realistic plant's friction compensation, or None (the other
            plants; :func:`compensated`).
    """

    mm: MemberModel
    data: DynamicsData
    part: object
    coords: IndependentCoordinates
    lower: np.ndarray
    upper: np.ndarray
    no_inertia: InertialParameters
    massless: InertialParameters
    gamma_bar: np.ndarray
    kp: np.ndarray
    kd: np.ndarray
    robots: tuple = ()
    gains: TrackingGains = TrackingGains()
    weights: AllocationWeights = AllocationWeights()
    limits: ContactLimits = ContactLimits()
    friction: FrictionCompensation | None = None

    @classmethod
    def build(cls, comp, mode: str, q0: np.ndarray | None = None, *, per_robot: bool = True,
              gains: TrackingGains = TrackingGains(), compensate: bool = False
              ) -> PolicyContext:
        """The context of a composed mode, its Γ̄ and port gains at q0 (default: the mode's
        reference stance) at rest; ``compensate``: with the friction compensation of the
        realistic plant (:class:`FrictionCompensation` of the mode model's record)."""
        from rbc.compose.dynamics import member_model
        from rbc.control.per_robot import robot_models

        md = comp.modes[mode]
        mm = member_model(comp, mode)
        data = DynamicsData.of(mm.dm)
        part = md.partition
        q0 = np.array(part.q_ref if q0 is None else q0, dtype=float)
        acts = mm.kin.record.actuators
        lim = np.array([a.effort_limits for a in acts], dtype=float).reshape(-1, 2)
        T = composed_terms(mm, data, q0, np.zeros(part.independent.size))
        kp, kd = port_gains(T)
        robots = ()
        if per_robot:
            robots = tuple((r, IndependentCoordinates.of(r.mm.kin, r.part))
                           for r in robot_models(comp, mode))
        no_inertia, massless = actuator_parameters(mm)
        return cls(mm, data, part, IndependentCoordinates.of(mm.kin, part), lim[:, 0],
                   lim[:, 1], no_inertia, massless, np.diag(T.Gamma).copy(), kp, kd,
                   robots, gains,
                   friction=FrictionCompensation.of(mm.kin) if compensate else None)


def compensated(ctx: PolicyContext, step: PolicyStep, ref) -> PolicyStep:
    """``step`` with the context's friction compensation added at the reference's port
    rates ``ℓ̇_d = J_ℓ(q_d) v_d`` and clipped to the effort bounds (module docstring);
    ``step`` itself when the context has none."""
    if ctx.friction is None:
        return step
    from rbc.model.interfaces import port_state

    _, J = port_state(ctx.mm.kin, ref.q)
    f = np.clip(step.f + ctx.friction.efforts(J @ np.asarray(ref.v, dtype=float)),
                ctx.lower, ctx.upper)
    return replace(step, f=f)


def port_gains(terms) -> tuple[np.ndarray, np.ndarray]:
    """``(K_p, K_d)`` (n_act,) of the port PD: the gain rule of
    :func:`rbc.sim.controllers.default_gains` — the port's reflected inertia
    ``m = diag((L Γ⁻¹ Lᵀ)⁺)`` of the nominal model at the state of ``terms`` (at rest),
    ``K_p = m ω²``, ``K_d = 2 ζ m ω``, ω = 2π·5 Hz, ζ = 1 — from the composed terms already
    evaluated (a second Pinocchio data of the ring's mode model costs 1.5 GB)."""
    from rbc.sim.controllers import DEFAULT_BANDWIDTH, DEFAULT_ZETA

    L = terms.L
    m = np.diag(np.linalg.pinv(L @ np.linalg.solve(terms.Gamma, L.T)))
    w = 2.0 * np.pi * DEFAULT_BANDWIDTH
    return m * w * w, 2.0 * DEFAULT_ZETA * m * w


def actuator_bodies(kin) -> tuple[str, ...]:
    """The actuator members of a record: per screw actuator its joint's two bodies (barrel
    and rod) and the barrel's parent when that body carries nothing else (a universal
    joint's cross)."""
    rec = kin.record
    joints = {j.name: j for j in rec.joints}
    children: dict[str, list[str]] = {}
    for j in rec.joints:
        children.setdefault(j.parent, []).append(j.child)
    parent_of = {j.child: j.parent for j in rec.joints}
    out: dict[str, None] = {}
    for a in rec.actuators:
        if a.transmission.type != "screw" or a.joint is None:
            continue
        j = joints[a.joint]
        out.update(dict.fromkeys((j.parent, j.child)))
        cross = parent_of.get(j.parent)
        if cross is not None and children.get(cross) == [j.parent]:
            out[cross] = None
    return tuple(out)


def actuator_parameters(mm: MemberModel) -> tuple[InertialParameters, InertialParameters]:
    """``(no inertia, massless)`` parameters: the actuator members' 10 parameters zero and
    the screws' rotor inertia zero. Both are the same vectors; the policies differ in where
    they use them (Γ and C only, or g too)."""
    p = mm.params
    names = set(actuator_bodies(mm.kin))
    pi = p.pi.copy()
    for i, b in enumerate(p.bodies):
        if b in names:
            pi[i] = 0.0
    screws = {a.name for a in mm.kin.record.actuators if a.transmission.type == "screw"}
    alpha = np.array([0.0 if r in screws else x for r, x in zip(p.rotors, p.alpha,
                                                                 strict=True)])
    out = replace(p, pi=pi, alpha=alpha)
    return out, out


# ------------------------------------------------------------------------------ helpers

def _law(ctx: PolicyContext, terms, ref, q: np.ndarray, Gamma: np.ndarray, C: np.ndarray,
         g: np.ndarray) -> PolicyStep:
    """The tracking law with (Γ, C, g) and the shared allocation on ``terms``' maps."""
    ts = tracking_state(ctx.coords, q, terms.v, ref.q, ref.v, ref.a, ctx.gains)
    model = replace(terms, Gamma=0.5 * (Gamma + Gamma.T), C=C, g=g)
    Q = commanded_force(model, ts, ctx.gains)
    return _allocated(ctx, terms, Q, ts)


def _allocated(ctx: PolicyContext, terms, Q: np.ndarray, ts) -> PolicyStep:
    al = allocate(allocation_problem(ctx.mm, ctx.data, terms, Q, limits=ctx.limits,
                                     weights=ctx.weights))
    return PolicyStep(al.f, Q, al.slack, al, ts)


def _terms(ctx: PolicyContext, q: np.ndarray, v: np.ndarray, params=None):
    return composed_terms(ctx.mm, ctx.data, q, np.asarray(v, dtype=float)[ctx.part.independent],
                          params=params)


# ----------------------------------------------------------------------------- policies

def proposed(ctx: PolicyContext, ref, q: np.ndarray, v: np.ndarray) -> PolicyStep:
    """The composed model of the full mode (module docstring)."""
    T = _terms(ctx, q, v)
    return _law(ctx, T, ref, q, T.Gamma, T.C, T.g)


def projected_tree(ctx: PolicyContext, ref, q: np.ndarray, v: np.ndarray) -> PolicyStep:
    """Pinocchio's tree terms projected through the lift (module docstring)."""
    import pinocchio as pin

    from rbc.model.dynamics import tree_terms

    T = _terms(ctx, q, v)
    t, k = ctx.mm.dm.tree, ctx.mm.kin
    nt = k.nv_tree
    tt = tree_terms(ctx.mm.dm, ctx.data, q, T.v)
    CT = t.matrix_rbc(pin.computeCoriolisMatrix(t.model, ctx.data.pin_data,
                                                t.q_pin(q[: k.nq_tree]), t.v_pin(T.v[:nt])))
    ET, EdT = T.lift.E[:nt], T.kin.Edot[:nt]
    return _law(ctx, T, ref, q, ET.T @ tt.M @ ET, ET.T @ (CT @ ET + tt.M @ EdT), ET.T @ tt.g)


def no_curvature(ctx: PolicyContext, ref, q: np.ndarray, v: np.ndarray) -> PolicyStep:
    """Ė omitted from C (module docstring)."""
    T = _terms(ctx, q, v)
    _, C, _ = member_sums(ctx.mm, T.kin, T.lift.E, ctx.mm.params, curvature=False)
    return _law(ctx, T, ref, q, T.Gamma, C, T.g)


def no_actuator_inertia(ctx: PolicyContext, ref, q: np.ndarray, v: np.ndarray) -> PolicyStep:
    """The actuator members out of Γ and C, their weight kept (module docstring)."""
    T = _terms(ctx, q, v)
    G, C, _ = member_sums(ctx.mm, T.kin, T.lift.E, ctx.no_inertia)
    return _law(ctx, T, ref, q, G, C, T.g)


def massless_actuators(ctx: PolicyContext, ref, q: np.ndarray, v: np.ndarray) -> PolicyStep:
    """The actuator members out of Γ, C and g (module docstring)."""
    T = _terms(ctx, q, v)
    G, C, g = member_sums(ctx.mm, T.kin, T.lift.E, ctx.massless)
    return _law(ctx, T, ref, q, G, C, g)


def gravity_pd(ctx: PolicyContext, ref, q: np.ndarray, v: np.ndarray) -> PolicyStep:
    """``Q = g − Γ̄(k_s Λ e + (k_s I + Λ)(u − u_d))``, quasi-static maps (module docstring)."""
    u = np.asarray(v, dtype=float)[ctx.part.independent]
    T0 = composed_terms(ctx.mm, ctx.data, q, np.zeros_like(u))  # the maps at rest
    ts = tracking_state(ctx.coords, q, np.asarray(v, dtype=float), ref.q, ref.v, ref.a,
                        ctx.gains)
    lam, ks = ctx.gains.Lambda, ctx.gains.k_s
    Q = T0.g - ctx.gamma_bar * (ks * lam * ts.e + (ks + lam) * (u - ts.u_d))
    return _allocated(ctx, T0, Q, ts)


def actuator_pd(ctx: PolicyContext, ref, q: np.ndarray, v: np.ndarray) -> PolicyStep:
    """Port PD without a model (module docstring)."""
    from rbc.model.interfaces import port_state

    k = ctx.mm.kin
    ell, J = port_state(k, q)
    ell_d, J_d = port_state(k, ref.q)
    f = ctx.kp * (ell_d - ell) + ctx.kd * (J_d @ ref.v - J @ np.asarray(v, dtype=float))
    return PolicyStep(np.clip(f, ctx.lower, ctx.upper), None, 0.0, None, None)


def per_robot(ctx: PolicyContext, ref, q: np.ndarray, v: np.ndarray) -> PolicyStep:
    """Each robot's own model on its own soles, the links not modelled (module
    docstring); efforts in the mode's actuator order."""
    if not ctx.robots:
        raise ValueError("the per-robot policy needs the robots' models "
                         "(PolicyContext.build(..., per_robot=True))")
    f = np.zeros(ctx.lower.size)
    slack = 0.0
    own = []
    for rb, coords in ctx.robots:
        qk, vk = rb.state(q, v)
        qd, vd = rb.state(ref.q, ref.v)
        ad = np.asarray(ref.a, dtype=float)[rb.v_index]
        T = composed_terms(rb.mm, rb.data, qk, vk[rb.part.independent])
        ts = tracking_state(coords, qk, T.v, qd, vd, ad, ctx.gains)
        al = allocate(allocation_problem(rb.mm, rb.data, T, commanded_force(T, ts, ctx.gains),
                                         limits=ctx.limits, weights=ctx.weights))
        f[rb.ports] = al.f
        slack = max(slack, al.slack)
        own.append(al)
    return PolicyStep(f, None, slack, None, None, tuple(own))


#: The policies by name, in the order of issue #20.
POLICIES: dict[str, Callable[..., PolicyStep]] = {
    "proposed": proposed, "projected_tree": projected_tree, "per_robot": per_robot,
    "no_curvature": no_curvature, "no_actuator_inertia": no_actuator_inertia,
    "massless_actuators": massless_actuators, "gravity_pd": gravity_pd,
    "actuator_pd": actuator_pd}


@dataclass(eq=False)
class PolicyController:
    """A policy on a reference as the controller of ``rbc simulate``'s loop
    (:class:`rbc.sim.allocation_control.AllocationTracking` drives it): ``step(t, q, v)``
    gives a :class:`~rbc.control.controller.ControlStep`-like record.

    Attributes:
        ctx: the shared context; policy: one of :data:`POLICIES`; reference: t ↦ sample.
    """

    ctx: PolicyContext
    policy: Callable[..., PolicyStep]
    reference: Callable
    last: PolicyStep | None = field(default=None, repr=False)

    @property
    def mm(self) -> MemberModel:
        return self.ctx.mm

    def step(self, t: float, q: np.ndarray, v: np.ndarray) -> PolicyStep:
        """The policy's step at time t [s] from the measured (q, v), with the context's
        friction compensation (:func:`compensated`)."""
        ref = self.reference(t)
        self.last = compensated(self.ctx, self.policy(self.ctx, ref, q, v), ref)
        return self.last


__all__: Sequence[str] = ("POLICIES", "FrictionCompensation", "PolicyContext",
                          "PolicyController", "PolicyStep", "actuator_bodies",
                          "actuator_parameters", "actuator_pd", "compensated", "port_gains",
                          "gravity_pd", "massless_actuators", "no_actuator_inertia",
                          "no_curvature", "per_robot", "projected_tree", "proposed")

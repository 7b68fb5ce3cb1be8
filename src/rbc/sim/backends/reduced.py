"""The reduced backend: our model, ``M_r u̇ + h_r = τ_r`` on the closure manifold.

**State and projection.** The integrated state is ``y = (x, u, z, W_act, W_passive[,
W_loss])``: the independent coordinates' values x (n_u,), their speeds u (n_u,), the drive
states z (n_z,: the actuators whose ``drive`` has a lag, :mod:`rbc.sim.drives`), and the
work done so far by the actuators, by the passive elements and (with drive data) lost in
the drives [J]. Every evaluation closes the mechanism at
x (:class:`rbc.sim.manifold.LiftedCloser`: lift predictor and Newton from the previous
configuration on the augmented tree's closure geometry — the closure projection), so the
dependent coordinates are a function of x and the loops stay closed to the solve tolerance
(1e-13) at every stage and step. The lift at the closed configuration is the one the
dynamics use. The right-hand side is

    ẋ = u (the value rates of v = E u),   u̇ = M_r⁻¹ (τ_r − h_r),   ż = (c − z)/T,
    Ẇ_act = fᵀ ℓ̇,   Ẇ_passive = τ_pᵀ v,   Ẇ_loss = (m − f)ᵀ ℓ̇

with the plant's reduced terms (:func:`rbc.model.dynamics.reduced_terms`, curvature ``Ė u``
and Coulomb friction included), the commands held over the control period, the actual port
efforts f and motor efforts m of the drives (:meth:`rbc.sim.drives.Drives.efforts`; without
drive data f = m = the command), ℓ̇ = J_ℓ v and τ_p the passive efforts (damping, springs,
drive drag, spring-dampers, Coulomb). The
works are integrated by the same integrator as the motion, so the energy ledger
``(T + V) − (T₀ + V₀) − W_act − W_passive`` measures the integration error itself.

**Evaluation.** :meth:`ReducedBackend.rhs` — closure, reduced terms, forward dynamics and the
two powers — is the one per-stage call; the steppers (:mod:`rbc.sim.integrators`) see only
``rhs(y)``. Two evaluators (``--evaluator``):

* ``kernel`` (default): each stage and each projection is one call of the numba kernels
  (:class:`rbc.kernels.evaluator.KernelStage`: the same corrector, reduced terms and powers,
  held equal to the reference to 1e-13 by ``tests/kernels``); the partition check reads the
  scaled cond(R_p) from the kernel's closure Jacobian. A case the kernel hands back (a
  singular lift, a corrector that does not converge, ``M_r`` not positive definite) runs on
  the reference path from the kernel's last closed configuration — which raises the usual
  errors or runs the full continuation — and the kernel restarts from its result (counted
  in the summary's ``kernel_handbacks``). A model the kernel layout cannot represent
  (tendon ports; an independent planar angle) runs on the reference evaluator throughout
  (the summary's ``evaluator`` says which ran, ``evaluator_note`` why).
* ``reference``: :class:`~rbc.sim.manifold.LiftedCloser` and
  :func:`rbc.model.dynamics.reduced_terms` (NumPy/Pinocchio), kept for checking.

**Integrators** (``--integrator``; ``--rtol``/``--atol``, defaults 1e-9 / 1e-12):

* ``dopri5`` (default): Dormand–Prince 5(4) with error control; sub-steps adapt inside each
  control period (the step is kept from one period to the next), a step whose estimated
  local error exceeds the tolerance is rejected and retried shorter, and one whose stage
  cannot be closed (a stage beyond a turning point) is retried at a quarter of its length;
* ``rk4``: classical Runge–Kutta at the fixed step ``--dt`` with an error estimate (the
  embedded third-order difference, :data:`rbc.sim.integrators.RK4`); when it exceeds the
  tolerance a warning names the time and the coordinate (once per run, counted in the
  summary);
* ``RK45`` / ``DOP853``: ``scipy.integrate.solve_ivp`` over each control interval with the
  same tolerances (a fixed partition: for validation runs).

**Coulomb friction** (joint ``friction``, actuator ``coulomb``) is set-valued at zero speed;
its ``−μ sign(v)`` makes the right-hand side discontinuous, which defeats error control
(the estimate of a step across a sign change is O(h): on the Go2 standing still dopri5
shrank its step to 3e-11 s). Its direction is taken at each step's start and **held over
the step** (as the port efforts are over the control period; over each control interval
for ``RK45``/``DOP853``): the right-hand side is smooth within a step, the ledger counts the
held effort's exact work, and a coordinate at rest (sign 0) feels no friction during that
step (sticking is not modelled).

**Run-time re-partitioning** (dopri5 and rk4). After every accepted step the scaled
condition number of the current R_p is checked; once it has doubled since the partition was
adopted (and exceeds :data:`rbc.model.partition.REPARTITION_MIN`: an independent coordinate
nearing a turning point) the alternatives are examined at the current configuration
(:func:`rbc.model.partition.reselect`: the rank pass's preferences, or the best-conditioned
split) and one :data:`~rbc.model.partition.REPARTITION_GAIN` times better conditioned is
adopted: the state is transferred (``x′`` the new independent values, ``u′ = (E u)`` at the new
independent indices; the works carry over) and the event is logged (time, old and new sets,
condition numbers). A rank change is logged as a mechanism event and the run continues with
the partition of the new rank. On the kernel evaluator the check first evaluates an upper
bound of the condition number from the last configuration it was computed at
(:func:`rbc.kernels.lift.scaled_cond_bound`, Weyl's inequality on the change of R_p): when
the bound is within the limit so is the number, and the decision is the one the full
evaluation would make at a tenth of its cost.

**Independent coordinates.** Scalar ones (revolute, prismatic, helical, universal,
cylindrical, planar) are integrated by their values as above. Where a speed is not the rate
of its value — a planar joint's body-frame speeds — ẋ is the value rate of ``v = E u``
(:meth:`rbc.ir.joints.JointKind.value_rates`: ``(ẋ, ẏ) = R(θ)(v_x, v_y)``), so ``q̇ = N(q) v``
holds for every joint (it did not before: a passive planar loop lost 0.14 J in 0.2 s).

A partition with a **free base or spherical** independent joints (a floating base standing
on its supports) has no scalar values for them; then every step integrates in the
**chart** of the independent coordinates at the step's start q₀: the first n_u components
of y are a displacement ξ standing for the configuration whose independent joints are
``q₀ ⊕ ξ`` (scalar coordinates ``x₀ + ξ``, a free base ``T₀·exp6(ξ)``), closed by
:meth:`rbc.sim.manifold.LiftedCloser.chart` (predictor ``q₀ ⊕ E₀ ξ``, Newton on the
dependents), with ``ξ̇ = J(ξ)⁻¹ u`` and ``J(ξ) = ∂(q₀ ⊕ ξ)/∂ξ`` (``pinocchio.dIntegrate``:
the identity for scalar coordinates, the right Jacobian of SE(3) for a free base, whose
speeds are body-frame twists — Munthe-Kaas, "High order Runge–Kutta methods on manifolds",
1999). After every accepted step the chart moves to the new configuration (ξ = 0; the next
first stage is the last one with ``ξ̇ = u``, exact since J(0) = I). In the error norm a
chart component is scaled by its coordinate's value at the chart origin (a free base's or
spherical joint's components by 1 m or 1 rad), so the tolerances mean the same in both
representations.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pinocchio as pin
from scipy.integrate import solve_ivp

from rbc.kernels.evaluator import FusedStep, KernelModel, KernelStage
from rbc.kernels.layout import LayoutError
from rbc.model.closure import ClosureError
from rbc.model.dynamics import (
    DynamicsData,
    DynamicsModel,
    coulomb_direction,
    forward_dynamics,
    load_coefficients,
    reduced_terms,
)
from rbc.model.interfaces import port_jacobian, port_state
from rbc.model.modes import base_sizes
from rbc.model.partition import REPARTITION_MIN, reselect, scaled_cond
from rbc.model.reactions import support_reactions
from rbc.model.solve import independent_values, prescribable, rate_is_speed, value_rates
from rbc.sim.backends import Backend, BackendError, Measurement
from rbc.sim.backends.tree_probe import TreeProbe, record_tasks
from rbc.sim.drives import Drives
from rbc.sim.integrators import (
    DOPRI5,
    GROW,
    RK4,
    SAFETY,
    SHRINK,
    StepFailure,
    StepStats,
    error_norm,
    fused_weights,
    rk_step,
)
from rbc.sim.manifold import LiftedCloser

INTEGRATORS = ("dopri5", "rk4", "RK45", "DOP853")
DEFAULT_INTEGRATOR = "dopri5"
EVALUATORS = ("kernel", "reference")
DEFAULT_EVALUATOR = "kernel"
#: Default tolerances: relative 1e-9 keeps the local error of each step nine digits below
#: the state (the energy ledger of a 10 s passive four-bar then drifts by ≲ 1e-10 of its
#: energy); absolute 1e-12 [rad, m, rad/s, m/s, J] is the floor for components through zero.
RTOL, ATOL = 1e-9, 1e-12
#: A stage that cannot be closed retries the step at this fraction of its length.
FAILED_STAGE_SHRINK = 0.25
#: Joint types whose independent coordinates are integrated in a chart (no scalar values).
GROUP_JOINTS = ("free", "spherical")
#: Smallest adaptive step, as a fraction of the control period, before the run is given up
#: (2⁻⁴⁰: far below any physical time scale of a control loop).
MIN_STEP_FRACTION = 2.0**-40


#: The fused step's weights per tableau (:func:`rbc.sim.integrators.fused_weights`).
FUSED = {t.name: fused_weights(t) for t in (DOPRI5, RK4)}


class ReducedBackend(Backend):
    """Reduced-model plant (module docstring).

    Options:
        integrator: ``dopri5`` | ``rk4`` | ``RK45`` | ``DOP853``; rtol, atol: tolerances;
        evaluator: ``kernel`` | ``reference`` (module docstring); data: a
        :class:`~rbc.model.dynamics.DynamicsData` of a model of the same structure to
        share as scratch (a composed run's controller's: every evaluation recomputes what
        it reads; the ring's costs 1.6 GB), by default its own (shared with its probe).
    """

    name = "reduced"

    def __init__(self, plant, part, q0, v0, dt, integrator: str = DEFAULT_INTEGRATOR,
                 rtol: float = RTOL, atol: float = ATOL, evaluator: str = DEFAULT_EVALUATOR,
                 **options) -> None:
        super().__init__(plant, part, q0, v0, dt)
        if integrator not in INTEGRATORS:
            raise BackendError(f"unknown integrator '{integrator}'; valid: "
                               f"{', '.join(INTEGRATORS)}")
        if evaluator not in EVALUATORS:
            raise BackendError(f"unknown evaluator '{evaluator}'; valid: "
                               f"{', '.join(EVALUATORS)}")
        self.evaluator = evaluator
        self.evaluator_note: str | None = None
        self.handbacks = 0
        for name, value in (("--rtol", rtol), ("--atol", atol)):
            if not 0 < value < 1:
                raise BackendError(f"{name} {value:g}: must be in (0, 1)")
        self.integrator, self.rtol, self.atol = integrator, float(rtol), float(atol)
        self.dm = DynamicsModel.build(plant)
        shared = options.get("data")  # scratch of a model of the same structure
        self.data = DynamicsData.of(self.dm) if shared is None else shared
        self.check(plant, part)
        self.probe = TreeProbe(self.dm.tree, record_tasks(plant), self.data.pin_data)
        self.gap_names = tuple(plant.edge_names[k] for k in plant.chord_edges)
        self.time = 0.0
        self.stats = StepStats()
        self.events: list[dict] = []
        self.warnings: list[str] = []
        self.h = float(dt)
        self.drives = Drives.of(plant.record)
        self.n_z = 0 if self.drives is None else self.drives.n_states
        self._works = 2 if self.drives is None else 3  # W_act, W_passive[, W_loss]
        self._c = np.zeros(len(plant.record.actuators))  # the held drive commands
        self._settled = False  # drive states start settled at the first command
        self._delivering: np.ndarray | None = None  # the drives' power quadrant (held)
        self._f = np.zeros(len(plant.record.actuators))
        mu = load_coefficients(plant).friction
        self._mu = mu if np.any(mu) else None  # Coulomb coefficients (nv,), held per step
        self._sign = np.zeros(plant.nv)
        self._adopt(part, np.asarray(q0, dtype=float), np.asarray(v0, dtype=float))

    @classmethod
    def check(cls, plant, part) -> None:
        """No rolling wheels (the plant integrates u without the rolling layer). Spherical
        and free independent coordinates are integrated in their chart (module docstring)."""
        from rbc.model.rolling import refuse_rolling

        refuse_rolling(plant, "the reduced backend", BackendError)

    # ----------------------------------------------------------------- state
    @property
    def x(self) -> np.ndarray:
        return self.y[: self.n]

    @property
    def u(self) -> np.ndarray:
        return self.y[self.n: 2 * self.n]

    @property
    def fallbacks(self) -> int:
        """Full continuations the closure projection needed, over every partition used."""
        return self._fallbacks + self.close.fallbacks

    _fallbacks = 0

    def _adopt(self, part, q: np.ndarray, v: np.ndarray) -> None:
        """Make ``part`` the current partition at the closed (q, v) (state transfer)."""
        if hasattr(self, "close"):
            self._fallbacks += self.close.fallbacks
        self.part = part
        self.close = LiftedCloser(self.dm, self.data, part, q)
        self.q = self.close.q
        self._cond_ref = scaled_cond(self.plant, part, self.close.lifted)
        # drive states and works carry over a re-partition
        tail = (self.y[2 * self.n:] if hasattr(self, "y")
                else np.zeros(self.n_z + self._works))
        self.n = part.independent.size
        k = self.plant
        self.chart = any(k.kinds[int(k.v_edge[j])].type in GROUP_JOINTS
                         for j in part.independent)
        self.kernel = self._kernel_stage(part)
        if self.chart:  # module docstring, "Independent coordinates"
            self._v_pin = self.dm.augmented.v_perm
            self._recentre()
            x = np.zeros(self.n)
        else:
            x = independent_values(k, part, self.q)
        self.y = np.concatenate([x, np.asarray(v, dtype=float)[part.independent], tail])
        # values whose rate is their speed (ẋ = u) and the others (a planar joint's x, y:
        # body-frame speeds rotated into the plane, JointKind.value_rates); in a chart the
        # rates are J(ξ)⁻¹ u for every coordinate
        self._rated = np.array([not self.chart and not rate_is_speed(k, int(j))
                                for j in part.independent], dtype=bool)
        self._names = ([self.plant.v_names[int(j)] for j in part.independent]
                       + [f"{self.plant.v_names[int(j)]} (speed)" for j in part.independent]
                       + [f"{self.plant.record.actuators[int(i)].name} (drive state)"
                          for i in (() if self.drives is None else self.drives.lagged)]
                       + ["W_act", "W_passive", "W_loss"][: self._works])
        self._any_rated = bool(self._rated.any())
        self._k1 = None

    def _kernel_stage(self, part) -> KernelStage | None:
        """The kernel evaluator at the current closed configuration, or None (reference
        evaluator requested, or a model the layout cannot represent: noted)."""
        if self.evaluator != "kernel":
            return None
        if self.drives is not None:  # the kernel stage has no drive states z
            self.evaluator_note = ("drive states (actuator 'drive' data): the reference "
                                   "evaluator ran")
            return None
        if self.chart or self._mu is not None:  # the kernel integrates values, sign(v)
            self.evaluator_note = ("a chart-integrated free base or spherical joint"
                                   if self.chart else "Coulomb friction held per step"
                                   ) + ": the reference evaluator ran"
            return None
        try:
            km = KernelModel(self.plant, part, self.dm.tree)
            L = self.close.lifted
            stage = KernelStage(km, self.close.q, L.E, L.geometry.rho)
        except LayoutError as err:
            self.evaluator_note = f"kernel layout: {err}; the reference evaluator ran"
            return None
        self.kernel_load_time = (self.kernel_load_time or 0.0) + stage.warm()
        return stage

    #: Wall time spent loading (or compiling) the kernels before the first step [s]; None
    #: when no stage ran on them.
    kernel_load_time: float | None = None

    @property
    def _closed(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(q, E, ρ) at the last closed configuration, from whichever evaluator closed it."""
        if self.kernel is not None:
            return self.kernel.q, self.kernel.E, self.kernel.rho
        L = self.close.lifted
        return self.close.q, L.E, L.geometry.rho

    # ----------------------------------------------------------------- dynamics
    def rhs(self, y: np.ndarray, f: np.ndarray) -> np.ndarray:
        """ẏ (2 n_u + n_z + 2 [+ 1 with drives],) at state y with the port effort commands f
        held — the one per-stage evaluation (on the kernel, or the reference path when it
        hands the case back).

        Raises:
            StepFailure: the mechanism cannot be closed at the stage's x.
        """
        kernel = self.kernel
        if kernel is not None:
            ydot = kernel.stage(y, f)
            if ydot is not None:
                self.stats.evaluations += 1
                if self._any_rated:
                    r = self._rated
                    ydot[: self.n][r] = value_rates(self.plant, kernel.q, kernel.v,
                                                    self.part.independent[r])
                return ydot
            self._hand_back()
        ydot = self._reference_rhs(y, f)
        if kernel is not None:
            L = self.close.lifted
            kernel.reseed(self.close.q, L.E, L.geometry.rho)
        return ydot

    def _hand_back(self) -> None:
        """The reference closer restarts at the kernel's last closed configuration."""
        self.handbacks += 1
        self._fallbacks += self.close.fallbacks
        self.close = LiftedCloser(self.dm, self.data, self.part, self.kernel.q)

    def _reference_rhs(self, y: np.ndarray, f: np.ndarray) -> np.ndarray:
        n = self.n
        try:
            q = self._close(y[:n])
        except (ClosureError, np.linalg.LinAlgError) as err:  # a stage too far to close
            raise StepFailure(str(err)) from err
        J = port_jacobian(self.plant, q) if f.size else np.zeros((0, self.plant.nv))
        z = y[2 * n: 2 * n + self.n_z]
        if self.drives is None:
            fa, zdot, p_loss = f, z, []
        else:
            c = self.drives.command(f)
            rate = J @ (self.close.lifted.E @ y[n: 2 * n])
            fa, m = self.drives.efforts(z, c, rate, self._delivering)
            zdot, p_loss = self.drives.rates(z, c), [float((m - fa) @ rate)]
        t = self._terms(q, y[n: 2 * n], fa)
        self.stats.evaluations += 1
        p_act = float(fa @ (J @ t.v)) if f.size else 0.0
        xdot = y[n: 2 * n]
        if self.chart:
            xdot = self._chart_rate(y[:n], xdot)
        elif self._rated.any():
            xdot = xdot.copy()
            xdot[self._rated] = value_rates(self.plant, q, t.v,
                                            self.part.independent[self._rated])
        out = np.concatenate([xdot, forward_dynamics(self.dm, t), zdot,
                              [p_act, float(t.passive @ t.v), *p_loss]])
        if not np.all(np.isfinite(out)):
            bad = self._names[int(np.flatnonzero(~np.isfinite(out))[0])]
            raise StepFailure(f"the right-hand side is not finite ({bad})")
        return out

    def _terms(self, q: np.ndarray, u: np.ndarray, f: np.ndarray, fresh: bool = False):
        """The reduced terms at the closer's last configuration q (``fresh``: the lift
        evaluated at q, when the kernel closed it) with the step's held Coulomb direction
        (module docstring)."""
        t = reduced_terms(self.dm, self.data, self.part, q, u, f,
                          lifted=None if fresh else self.close.lifted)
        if self._mu is None:
            return t
        held = -self._mu * self._sign
        return replace(t, tau_coulomb=t.lifted.E.T @ held, coulomb=held,
                       passive=t.passive - t.coulomb + held)

    def _hold_coulomb(self) -> None:
        """Take Coulomb friction's direction at the current state for the next step."""
        if self._mu is None:
            return
        self._close(self.x)
        sign = coulomb_direction(self.close.lifted.E @ self.u)
        if not np.array_equal(sign, self._sign):
            self._sign, self._k1 = sign, None  # a cached first stage used the old one

    def _close(self, x: np.ndarray) -> np.ndarray:
        """Closed q (nq,) at the state's first block: values, or a chart displacement."""
        if self.chart:
            return self.close.chart(self._q0, self._E0, x)
        return self.close(x)

    def _recentre(self) -> None:
        """Move the chart to the current closed configuration (ξ = 0 there)."""
        self._q0, self._E0 = self.close.q.copy(), self.close.lifted.E.copy()
        self._mag0 = np.abs(independent_values(self.plant, self.part, self._q0))
        self._mag0[np.isnan(self._mag0)] = 1.0  # a Lie-group coordinate: 1 m or 1 rad

    def _chart_rate(self, xi: np.ndarray, u: np.ndarray) -> np.ndarray:
        """``ξ̇ = J(ξ)⁻¹ u`` (n_u,): the chart rate of independent speeds u at ξ."""
        if not np.any(xi):
            return u
        ind, aug = self.part.independent, self.dm.augmented
        dv = np.zeros(self.plant.nv)
        dv[ind] = xi
        Jp = pin.dIntegrate(aug.model, self._q0[aug.q_perm], dv[self._v_pin],
                            pin.ArgumentPosition.ARG1)
        J = np.empty_like(Jp)
        J[np.ix_(self._v_pin, self._v_pin)] = Jp  # rbc velocity order
        return np.linalg.solve(J[np.ix_(ind, ind)], u)

    def _scale(self, y: np.ndarray) -> np.ndarray:
        """y with chart displacements replaced by their coordinates' magnitudes (the error
        norm's scale; module docstring)."""
        if not self.chart:
            return y
        out = y.copy()
        out[: self.n] = self._mag0 + np.abs(y[: self.n])
        return out

    def _error(self, e: np.ndarray, y: np.ndarray, y1: np.ndarray,
               within: int | None = None) -> tuple[float, int]:
        return error_norm(e, self._scale(y), self._scale(y1), self.rtol, self.atol, within)

    @property
    def evaluations(self) -> int:
        return self.stats.evaluations

    def drive_state(self):
        """The drive states z (n_z,) once settled (carried through a mode switch)."""
        if self.drives is None or not self._settled:
            return None
        return self.y[2 * self.n: 2 * self.n + self.n_z].copy()

    def set_drive_state(self, state) -> None:
        """Continue from another segment's :meth:`drive_state` (same record, same drives)."""
        if self.drives is not None and state is not None:
            self.y[2 * self.n: 2 * self.n + self.n_z] = state
            self._settled = True

    def advance(self, f: np.ndarray, steps: int) -> None:
        f = np.asarray(f, dtype=float)
        if self.drives is not None and not self._settled:
            self.y[2 * self.n: 2 * self.n + self.n_z] = self.drives.initial(
                self.drives.command(f))
            self._settled = True
        if self.drives is not None:  # the power quadrant, held over the control period
            v = self.close.lifted.E @ self.u
            z = self.y[2 * self.n: 2 * self.n + self.n_z]
            quadrant = self.drives.quadrant(z, self.drives.command(f),
                                            port_jacobian(self.plant, self.q) @ v)
            if self._delivering is None or not np.array_equal(quadrant, self._delivering):
                self._delivering, self._k1 = quadrant, None
        self._c = f
        t_end = self.time + steps * self.dt
        if self.integrator == "rk4":
            for _ in range(steps):
                self._rk4_step(f)
        elif self.integrator == "dopri5":
            self._adaptive(f, t_end)
        else:
            self._solve_ivp(f, steps * self.dt)
        self._f = f
        self.time = t_end
        self.steps = self.stats.accepted
        self.q = self._project(self.y)
        w = self.y[len(self.y) - self._works:]
        self.work_actuators, self.work_passive = float(w[0]), float(w[1])
        self.work_drive_losses = float(w[2]) if self._works == 3 else 0.0

    def _project(self, y: np.ndarray) -> np.ndarray:
        """The closed configuration (nq,) at the state's values (a copy)."""
        if self.kernel is not None:
            q = self.kernel.project(y)
            if q is not None:
                return q.copy()
            self._hand_back()
        q = self._close(y[: self.n])
        if self.kernel is not None:
            L = self.close.lifted
            self.kernel.reseed(self.close.q, L.E, L.geometry.rho)
        return q.copy()

    def _first_stage(self, f: np.ndarray) -> np.ndarray:
        """ẏ at the current state with efforts f: the last step's end stage when its efforts
        were f; with other efforts, on the kernel, that stage moved by its effort gain (u̇
        and P_act are affine in the port efforts: ``u̇ += G Δf``, ``P_act = f · ℓ̇_ports``;
        the passive power does not depend on them) — no evaluation; else one."""
        k = self._k1
        if k is not None and np.array_equal(k[1], f):
            return k[0]
        if k is not None and k[2] is not None:
            n = self.n
            k1 = k[0].copy()
            k1[n: 2 * n] += k[2] @ (f - k[1])
            k1[2 * n] = f @ k[3]
            self._k1 = (k1, f.copy(), k[2], k[3])
        else:
            self._k1 = (self.rhs(self.y, f), f.copy(), None, None)
        return self._k1[0]

    def _step(self, tab, y: np.ndarray, h: float, f: np.ndarray
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray, FusedStep | None]:
        """``(y1, error vector, ẏ at y1, the fused step or None)``: one step of tableau tab
        from y — in one kernel call (:meth:`rbc.kernels.evaluator.KernelStage.rk_step`)
        when the kernel evaluates every stage, else stage by stage through :meth:`rhs`
        (also after a stage the kernel handed back: the step is redone from y, the
        reference path taking that stage).

        Raises:
            StepFailure: a stage could not be evaluated.
        """
        k1 = self._first_stage(f)
        if self.kernel is not None and not self._any_rated:
            done, out = self.kernel.rk_step(FUSED[tab.name], y, k1, f, h)
            self.stats.evaluations += done
            if out is not None:
                return out.y1, out.err, out.k_end, out
        y1, e, k_end = rk_step(lambda z: self.rhs(z, f), tab, y, h, k1)
        if not tab.fsal:  # RK4: ẏ at y1 for the embedded estimate (module docstring)
            k4, k_end = k_end, self.rhs(y1, f)
            e = h / 6.0 * (k4 - k_end)
        return y1, e, k_end, None

    def _accept(self, y1: np.ndarray, k_next: np.ndarray | None, f: np.ndarray,
                h: float, fused: FusedStep | None = None) -> None:
        self.y, self.time = y1, self.time + h
        if self.chart and k_next is not None:  # the chart moves to y1 (module docstring)
            self._close(y1[: self.n])
            self._recentre()
            self.y = y1.copy()
            self.y[: self.n] = 0.0
            k_next = k_next.copy()
            k_next[: self.n] = self.u  # ξ̇ = J(0)⁻¹ u = u
        self._k1 = None if k_next is None else (
            k_next, f.copy(), *((None, None) if fused is None
                                else (fused.gain, fused.port_speeds)))
        self.stats.accepted += 1
        self._check_partition()

    def _rk4_step(self, f: np.ndarray) -> None:
        h = self.dt
        self._hold_coulomb()
        y = self.y
        try:
            y1, e, k5, fused = self._step(RK4, y, h, f)
        except StepFailure as err:
            raise BackendError(f"reduced backend (rk4) at t = {self.time:.6g} s: {err}; "
                               "a smaller --dt or the adaptive default (--integrator dopri5) "
                               "may pass") from None
        # the index names a coordinate, not a work term
        err, i = self._error(e, y, y1, within=2 * self.n)
        self._track(err, i)
        if err > 1.0:
            self.stats.exceeded += 1
            if self.stats.exceeded == 1:
                self.warnings.append(
                    f"rk4: the estimated local error exceeds the tolerance (rtol {self.rtol:g},"
                    f" atol {self.atol:g}) by {err:.3g}× at t = {self.time + h:.6g} s, worst in "
                    f"{self._names[i]}; use a smaller --dt or --integrator dopri5")
        self._accept(y1, k5, f, h, fused)

    def _adaptive(self, f: np.ndarray, t_end: float) -> None:
        """Dormand–Prince steps from self.time to t_end with error control."""
        h_min = MIN_STEP_FRACTION * self.dt
        while t_end - self.time > 1e-12 * self.dt:
            h = min(self.h, t_end - self.time)
            if t_end - self.time - h < 1e-3 * h:
                h = t_end - self.time  # do not leave a sliver for the next step
            if h < h_min:
                raise BackendError(f"reduced backend: the adaptive step fell below "
                                   f"{h_min:.3g} s at t = {self.time:.6g} s ({self._why})")
            self._hold_coulomb()
            y = self.y
            try:
                y1, e, k7, fused = self._step(DOPRI5, y, h, f)
            except StepFailure as err:
                self._why = str(err)
                self.stats.rejected += 1
                self.h = FAILED_STAGE_SHRINK * h
                continue
            err, i = self._error(e, y, y1)
            if err <= 1.0:
                self._track(err, i)
                grow = GROW if err == 0 else min(GROW, max(SHRINK, SAFETY * err**-0.2))
                self._accept(y1, k7, f, h, fused)
                self.h = max(self.h, h * grow) if h < self.h else h * grow
            else:
                self._why = f"error estimate {err:.3g} in {self._names[i]}"
                self.stats.rejected += 1
                self.h = h * max(SHRINK, SAFETY * err**-0.2)

    _why = ""

    def _track(self, err: float, i: int) -> None:
        if err > self.stats.worst:
            self.stats.worst, self.stats.worst_time = err, self.time
            self.stats.worst_component = i
            self._worst_name = self._names[i]

    def _solve_ivp(self, f: np.ndarray, span: float) -> None:
        self._hold_coulomb()

        def fun(_t, y):
            return self.rhs(y, f)

        try:
            sol = solve_ivp(fun, (0.0, span), self.y, method=self.integrator,
                            rtol=self.rtol, atol=self.atol)
        except StepFailure as err:
            raise BackendError(f"reduced backend ({self.integrator}) at t ≈ {self.time:.6g} "
                               f"s: {err}") from None
        if not sol.success:
            raise BackendError(f"reduced backend: {self.integrator} failed: {sol.message}")
        self.y = sol.y[:, -1].copy()
        self.stats.accepted += int(sol.t.size - 1)
        self._k1 = None
        if self.chart:
            self._close(self.x)
            self._recentre()
            self.y[: self.n] = 0.0

    def _check_partition(self) -> None:
        """Re-select the independent set when the current R_p degrades (module docstring,
        "Run-time re-partitioning")."""
        k = self.plant
        limit = max(REPARTITION_MIN, 2.0 * self._cond_ref)
        if self.kernel is not None:  # an upper bound at or below the limit decides alone
            bound = self.kernel.scaled_cond_bound()
            if bound is not None and bound <= limit:
                return
        cond = None if self.kernel is None else self.kernel.scaled_cond()
        if cond is None:  # the reference closed here
            cond = scaled_cond(k, self.part, self.close.lifted)
        if cond <= limit:
            return
        q, E, _ = self._closed
        found = reselect(k, self.part, q, cond,
                         allowed=lambda p: all(prescribable(k, int(j))
                                               or k.kinds[int(k.v_edge[j])].type in GROUP_JOINTS
                                               for j in p.independent))
        if found is None:
            self._cond_ref = cond  # no better chart here: look again when it doubles
            return
        old = self.part
        q, v = q.copy(), E @ self.u
        self.events.append({
            "time": self.time, "kind": found.kind, "old": list(old.joints),
            "new": list(found.partition.joints), "cond_before": found.cond_before,
            "cond_after": found.cond_after, "rank_before": old.rank,
            "rank_after": found.partition.rank})
        self._adopt(found.partition, q, v)

    def report(self) -> dict:
        """Integration figures for the summary (docs/simulate.md)."""
        st = self.stats
        return {"integrator": self.integrator, "rtol": self.rtol, "atol": self.atol,
                "evaluator": "reference" if self.kernel is None else "kernel",
                "evaluator_note": self.evaluator_note, "kernel_handbacks": self.handbacks,
                "kernel_load_s": self.kernel_load_time,
                "accepted_steps": st.accepted, "rejected_steps": st.rejected,
                "evaluations": st.evaluations, "max_error_estimate": st.worst,
                "max_error_time": st.worst_time,
                "max_error_component": getattr(self, "_worst_name", None),
                "steps_over_tolerance": st.exceeded}

    # ----------------------------------------------------------------- support modes
    def base_state(self) -> tuple[np.ndarray, np.ndarray]:
        """The base model's (q, v) (nq_base,), (nv_base,): the mode's support cuts dropped."""
        nq, nv = base_sizes(self.plant)
        return self.q[:nq].copy(), (self._closed[1] @ self.u)[:nv]

    def support_wrenches(self, names: tuple[str, ...]) -> dict[str, np.ndarray]:
        """The support rows' multipliers of the mode's dependent equations at the current
        state with the last efforts and Coulomb direction, as integrated
        (:func:`rbc.model.reactions.support_reactions`)."""
        t = self._terms(self.q, self.u, self._f, fresh=self.kernel is not None)
        out = support_reactions(self.dm, self.data, self.q, t, forward_dynamics(self.dm, t))
        return {n: out[n] for n in names}

    # ----------------------------------------------------------------- measurement
    def measure(self) -> Measurement:
        k, t = self.plant, self.dm.tree
        _, E, rho = self._closed
        v = E @ self.u
        qp, vp = t.q_pin(self.q[: k.nq_tree]), t.v_pin(v[: k.nv_tree])
        kin, pot, tasks = self.probe.measure(qp, vp)
        rho = rho[: 6 * k.n_chords].reshape(-1, 6)
        gaps = np.linalg.norm(rho[:, 3:], axis=1)  # linear part of each chord's residual
        ell, J = port_state(k, self.q)
        efforts = None
        if self.drives is not None:  # the actual efforts of the drives at this state
            efforts = self.drives.efforts(self.y[2 * self.n: 2 * self.n + self.n_z],
                                          self.drives.command(self._c), J @ v,
                                          self._delivering)[0]
        return Measurement(ell, J @ v,
                           tasks, gaps, kin, pot, self.q.copy(), v,
                           efforts)

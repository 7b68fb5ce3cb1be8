"""The reduced backend: our model, ``M_r u̇ + h_r = τ_r`` on the closure manifold.

**State and projection.** The state is the independent coordinates' values x (n_u,) and
speeds u (n_u,). Every evaluation closes the mechanism at x
(:class:`rbc.sim.manifold.LiftedCloser`: lift predictor and Newton from the previous
configuration on the augmented tree's closure geometry — the corrector), so the dependent
coordinates are a function of x and the loops stay closed to the solve tolerance (1e-13)
at every stage and step. The lift computed at the closed configuration is the one the
dynamics use (one geometry evaluation serves both). The right-hand side is
``(ẋ, u̇) = (u, M_r⁻¹ (τ_r − h_r))`` with the plant's reduced terms
(:func:`rbc.model.dynamics.reduced_terms`, curvature ``Ė u`` included, Coulomb friction
included) and the port efforts held.

**Integrators.** ``rk4`` (default): classical fixed-step Runge–Kutta 4 with step ``dt``;
after the step q is closed at the new x (the projection). ``RK45`` / ``DOP853`` (accuracy
mode for validation): ``scipy.integrate.solve_ivp`` over each control interval with
``rtol = 1e-10``, ``atol = 1e-12``.

This needs scalar independent coordinates (revolute, prismatic, …; not spherical/free).
"""

from __future__ import annotations

import numpy as np
from scipy.integrate import solve_ivp

from rbc.model.dynamics import (
    DynamicsData,
    DynamicsModel,
    forward_dynamics,
    passive_efforts,
    reduced_terms,
)
from rbc.model.interfaces import ports
from rbc.model.solve import independent_values, rate_is_speed
from rbc.sim.backends import Backend, BackendError, Measurement
from rbc.sim.backends.tree_probe import TreeProbe, record_tasks
from rbc.sim.manifold import LiftedCloser

INTEGRATORS = ("rk4", "RK45", "DOP853")
#: Tolerances of the accuracy mode: relative 1e-10 keeps the integration error four decades
#: below the 1e-6 agreement the validation compares at; absolute 1e-12 [m, rad, m/s, rad/s]
#: is the floor for coordinates passing through zero.
RTOL, ATOL = 1e-10, 1e-12


class ReducedBackend(Backend):
    """Reduced-model plant (module docstring).

    Options:
        integrator: ``rk4`` | ``RK45`` | ``DOP853``.
    """

    name = "reduced"

    def __init__(self, plant, part, q0, v0, dt, integrator: str = "rk4", **options) -> None:
        super().__init__(plant, part, q0, v0, dt)
        if integrator not in INTEGRATORS:
            raise BackendError(f"unknown integrator '{integrator}'; valid: "
                               f"{', '.join(INTEGRATORS)}")
        self.integrator = integrator
        self.dm = DynamicsModel.build(plant)
        self.data = DynamicsData.of(self.dm)
        self.check(plant, part)
        self.close = LiftedCloser(self.dm, self.data, part, q0)
        self.x = independent_values(plant, part, q0)
        self.u = np.asarray(v0, dtype=float)[part.independent]
        self.q = self.close.q
        self.pm = ports(plant)
        self.probe = TreeProbe(self.dm.tree, record_tasks(plant))
        self.gap_names = tuple(plant.edge_names[k] for k in plant.chord_edges)
        self.passive = bool(any(j.damping or j.friction or j.spring.stiffness
                                for j in plant.record.joints) or plant.record.forces
                            or any(a.viscous or a.coulomb for a in plant.record.actuators))
        self.evaluations = 0

    @classmethod
    def check(cls, plant, part) -> None:
        """Independent coordinates whose speeds are the rates of their values (the state is
        the values, integrated with ẋ = u)."""
        if np.any(np.isnan(independent_values(plant, part, part.q_ref))):
            raise BackendError("the reduced backend integrates the independent coordinates' "
                               "values; this partition has spherical/free independent "
                               f"coordinates ({', '.join(part.joints)}); for a floating "
                               "base use --fix-root or another backend")
        bad = sorted({plant.edge_names[int(plant.v_edge[j])] for j in part.independent
                      if not rate_is_speed(plant, int(j))})
        if bad:
            raise BackendError(f"the reduced backend integrates the independent coordinates' "
                               f"values with ẋ = u, but the speeds of {', '.join(bad)} are "
                               "body-frame rates (planar joint); choose other independent "
                               "joints (`independent:` in the record, or --partition)")

    # ----------------------------------------------------------------- dynamics
    def _rhs(self, x: np.ndarray, u: np.ndarray, f: np.ndarray) -> np.ndarray:
        q = self.close(x)
        t = reduced_terms(self.dm, self.data, self.part, q, u, f, lifted=self.close.lifted)
        self.evaluations += 1
        return forward_dynamics(self.dm, t)

    def _passive_power(self) -> float:
        if not self.passive:
            return 0.0
        v = self.close.lifted.E @ self.u
        tau, coul = passive_efforts(self.dm, self.q, v)
        return float((tau + coul) @ v)

    def advance(self, f: np.ndarray, steps: int) -> None:
        p0 = self._passive_power()
        ell0 = self.pm.q_matrix @ self.q
        if self.integrator == "rk4":
            h = self.dt
            for _ in range(steps):
                x, u = self.x, self.u
                a1 = self._rhs(x, u, f)
                u2 = u + 0.5 * h * a1
                a2 = self._rhs(x + 0.5 * h * u, u2, f)
                u3 = u + 0.5 * h * a2
                a3 = self._rhs(x + 0.5 * h * u2, u3, f)
                u4 = u + h * a3
                a4 = self._rhs(x + h * u3, u4, f)
                self.x = x + h / 6.0 * (u + 2 * u2 + 2 * u3 + u4)
                self.u = u + h / 6.0 * (a1 + 2 * a2 + 2 * a3 + a4)
                self.q = self.close(self.x)  # the projection onto the manifold
        else:
            n = self.x.size

            def fun(_t, y):
                return np.concatenate([y[n:], self._rhs(y[:n], y[n:], f)])

            sol = solve_ivp(fun, (0.0, steps * self.dt), np.concatenate([self.x, self.u]),
                            method=self.integrator, rtol=RTOL, atol=ATOL)
            if not sol.success:
                raise BackendError(f"reduced backend: {self.integrator} failed: {sol.message}")
            self.x, self.u = sol.y[:n, -1].copy(), sol.y[n:, -1].copy()
            self.q = self.close(self.x)
        self.steps += steps
        self.work_actuators += float(f @ (self.pm.q_matrix @ self.q - ell0))
        self.work_passive += 0.5 * (p0 + self._passive_power()) * steps * self.dt

    # ----------------------------------------------------------------- measurement
    def measure(self) -> Measurement:
        k, t = self.plant, self.dm.tree
        v = self.close.lifted.E @ self.u
        qp, vp = t.q_pin(self.q[: k.nq_tree]), t.v_pin(v[: k.nv_tree])
        kin, pot = self.probe.energy(qp, vp)
        rho = self.close.lifted.geometry.rho[: 6 * k.n_chords].reshape(-1, 6)
        gaps = np.linalg.norm(rho[:, 3:], axis=1)  # linear part of each chord's residual
        return Measurement(self.pm.q_matrix @ self.q, self.pm.jacobian @ v,
                           self.probe.task_positions(qp), gaps, kin, pot, self.q.copy(), v)

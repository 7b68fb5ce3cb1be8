"""The Pinocchio backend: ``pin.constraintDynamics`` on the exported tree and constraints.

The plant is :func:`rbc.backends.pinocchio.pinocchio_model` (the tree of
:func:`rbc.model.tree.build_tree`, rotor inertia as armature, one ``RigidConstraintModel``
per cut joint — two for a revolute cut). Constraint drift is stabilised by Baumgarte
correction with ``K_p = 400 s⁻²`` and ``K_d = 40 s⁻¹`` (critically damped, 20 rad/s: a
gap decays in ≈ 0.2 s without stiffening the 1 ms step; set through each model's
``m_baumgarte_parameters``, Pinocchio 4.1's name for the ``corrector``), and the state is
advanced by semi-implicit Euler: ``v ← v + h a``, ``q ← q ⊕ h v`` (``pin.integrate``).

Efforts: the port efforts on their tree coordinates, minus joint damping and actuator
viscous drag on tree coordinates (springs, Coulomb friction and point-to-point elements are
not applied by this backend; the shipped records have none). Measured: ports from q, v;
task positions, loop gaps (world distance between each constraint's two anchors) and
energies from the tree (:class:`~rbc.sim.backends.tree_probe.TreeProbe`). Records with
couplings are refused (no coupling constraint in ``constraintDynamics``).
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin

from rbc.backends.pinocchio import PROXIMAL, pinocchio_model
from rbc.model.interfaces import ports
from rbc.sim.backends import Backend, BackendError, Measurement
from rbc.sim.backends.tree_probe import TreeProbe, record_tasks

#: Baumgarte gains of the constraint corrector [s⁻², s⁻¹] (module docstring).
BAUMGARTE_KP, BAUMGARTE_KD = 400.0, 40.0


class PinocchioBackend(Backend):
    """Pinocchio plant (module docstring)."""

    name = "pinocchio"

    @classmethod
    def check(cls, plant, part) -> None:
        """The cut joints must have Pinocchio constraint models (spherical, fixed, revolute),
        and there must be no coupling: ``constraintDynamics`` has no joint-coupling
        constraint, and a plant without it would move the coupled joints apart."""
        pinocchio_model(plant, part)
        if plant.record.couplings:
            raise BackendError(
                f"the pinocchio backend cannot hold the couplings "
                f"{', '.join(c.name for c in plant.record.couplings)} (constraintDynamics has "
                "no joint-coupling constraint); use the reduced or mujoco backend")

    def __init__(self, plant, part, q0, v0, dt, **options) -> None:
        super().__init__(plant, part, q0, v0, dt)
        self.pmod = pinocchio_model(plant, part)
        for c in self.pmod.constraints:
            p = c.m_baumgarte_parameters
            p.Kp, p.Kd = BAUMGARTE_KP, BAUMGARTE_KD
            c.m_baumgarte_parameters = p
        t = self.tree = self.pmod.tree
        self.model = t.model
        self.data = self.model.createData()
        self.cdatas = self.pmod.constraint_datas()
        pin.initConstraintDynamics(self.model, self.data, self.pmod.constraints, self.cdatas)
        self.prox = pin.ProximalSettings(*PROXIMAL)
        self.q = t.q_pin(np.asarray(q0, float)[: plant.nq_tree])
        self.v = t.v_pin(np.asarray(v0, float)[: plant.nv_tree])
        pm = ports(plant)
        # the port maps in Pinocchio's coordinates (ports are on tree joints)
        self.Pq = pm.q_matrix[:, : plant.nq_tree][:, t.q_perm]
        self.Pv = pm.jacobian[:, : plant.nv_tree][:, t.v_perm]
        damping = np.zeros(plant.nv)
        for j in plant.record.joints:
            damping[plant.v_slice(plant.edge(j.name))] += j.damping
        for a in plant.record.actuators:  # drive friction: joint ports only (schema)
            if a.joint is not None:
                damping[plant.v_slice(plant.edge(a.joint))] += a.viscous
        self.damping = t.v_pin(damping[: plant.nv_tree])
        self.probe = TreeProbe(t, record_tasks(plant))
        self.gap_names = tuple(s.name for s in self.pmod.specs)

    def advance(self, f: np.ndarray, steps: int) -> None:
        h = self.dt
        for _ in range(steps):
            tau = -self.damping * self.v
            tau += self.Pv.T @ f
            a = pin.constraintDynamics(self.model, self.data, self.q, self.v, tau,
                                       self.pmod.constraints, self.cdatas, self.prox)
            ell0 = self.Pq @ self.q
            self.work_passive -= float(self.damping @ (self.v * self.v)) * h
            self.v = self.v + h * a
            self.q = pin.integrate(self.model, self.q, h * self.v)
            self.work_actuators += float(f @ (self.Pq @ self.q - ell0))
        self.steps += steps

    def measure(self) -> Measurement:
        kin, pot = self.probe.energy(self.q, self.v)
        tasks = self.probe.task_positions(self.q)
        gaps = self.probe.anchor_gaps(self.pmod.specs)
        return Measurement(self.Pq @ self.q, self.Pv @ self.v, tasks, gaps,
                           kin, pot, self.q.copy(), self.v.copy())

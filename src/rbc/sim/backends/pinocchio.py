"""The Pinocchio backend: ``pin.constraintDynamics`` on the exported tree and constraints.

The plant is :func:`rbc.backends.pinocchio.pinocchio_model` (the tree of
:func:`rbc.model.tree.build_tree`, rotor inertia as armature, one ``RigidConstraintModel``
per cut joint — two for a revolute cut). Constraint drift is stabilised by Baumgarte
correction with ``K_p = 400 s⁻²`` and ``K_d = 40 s⁻¹`` (critically damped, 20 rad/s: a
gap decays in ≈ 0.2 s without stiffening the 1 ms step; set through each model's
``m_baumgarte_parameters``, Pinocchio 4.1's name for the ``corrector``), and the state is
advanced by semi-implicit Euler: ``v ← v + h a``, ``q ← q ⊕ h v`` (``pin.integrate``).

Efforts: the port efforts on their tree coordinates — with record ``drive`` data the
drives' actual efforts, advanced per physics step (:class:`rbc.sim.drives.SteppedDrives`,
as on MuJoCo; no effort clamp: the rbc controller clips commands to the limits) — minus
joint damping and actuator viscous drag on tree coordinates (springs, Coulomb friction and
point-to-point elements are not applied by this backend; the shipped records have none).
Measured: ports from q, v; task positions, loop gaps (world distance between each
constraint's two anchors) and energies from the tree
(:class:`~rbc.sim.backends.tree_probe.TreeProbe`). Records with couplings are refused (no
coupling constraint in ``constraintDynamics``).
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin

from rbc.backends.pinocchio import PROXIMAL, pinocchio_model
from rbc.model.interfaces import port_state, ports
from rbc.model.modes import SUPPORT_EDGE, base_sizes, cut_coordinates
from rbc.model.partition import lift
from rbc.model.rolling import refuse_rolling
from rbc.sim.backends import Backend, BackendError, Measurement, port_work
from rbc.sim.backends.tree_probe import TreeProbe, record_tasks
from rbc.sim.drives import Drives, SteppedDrives

#: Baumgarte gains of the constraint corrector [s⁻², s⁻¹] (module docstring).
BAUMGARTE_KP, BAUMGARTE_KD = 400.0, 40.0


class PinocchioBackend(Backend):
    """Pinocchio plant (module docstring)."""

    name = "pinocchio"
    floor_anchors = True  # the Baumgarte corrector closes a touchdown's gap to the floor

    @classmethod
    def check(cls, plant, part) -> None:
        """The cut joints must have Pinocchio constraint models (spherical, fixed, revolute),
        and there must be no coupling: ``constraintDynamics`` has no joint-coupling
        constraint, and a plant without it would move the coupled joints apart; nor rolling
        constraints (holonomic constraint models only)."""
        refuse_rolling(plant, "the pinocchio backend", BackendError)
        pinocchio_model(plant, part)
        cut = {plant.edge_names[k] for k in plant.chord_edges}
        driven = [f"{a.name} ({n})" for a in plant.record.actuators for n in a.port_joints
                  if n in cut]
        if driven:
            raise BackendError(
                f"the pinocchio backend applies port efforts on tree joints only; "
                f"{', '.join(driven)} drive cut joints; use the reduced or mujoco backend")
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
        self.set_state(q0, v0)
        pm = ports(plant)
        # the constant port maps in Pinocchio's coordinates (ports read tree joints); the
        # ports that depend on q (distance, profile) are evaluated on the rbc model
        self.Pq = pm.linear_q[:, : plant.nq_tree][:, t.q_perm]
        self.Pv = pm.linear_jacobian[:, : plant.nv_tree][:, t.v_perm]
        self.varying = bool(pm.varying) or not np.all(pm.holonomic)
        damping = np.zeros(plant.nv)
        for j in plant.record.joints:
            damping[plant.v_slice(plant.edge(j.name))] += j.damping
        for a in plant.record.actuators:  # drive friction: joint ports only (schema)
            if a.joint is not None:
                damping[plant.v_slice(plant.edge(a.joint))] += a.viscous
        self.damping = t.v_pin(damping[: plant.nv_tree])
        self.probe = TreeProbe(t, record_tasks(plant), self.data)
        self.gap_names = tuple(s.name for s in self.pmod.specs)
        self.pushes: dict[int, np.ndarray] = {}
        drives = Drives.of(plant.record)
        self.drive = None if drives is None else SteppedDrives(drives, dt)

    pushable = True

    def apply_force(self, body: int, force: np.ndarray) -> None:
        """The force at the body's centre of mass, applied as ``J_cᵀ f`` in each step."""
        self.pushes[int(body)] = np.asarray(force, dtype=float).copy()

    def _push_efforts(self) -> np.ndarray:
        """Generalized force (nv_pin,) of the held pushes at the current q: ``J_cᵀ f`` with
        ``J_c = J_v − [R c]ₓ J_ω`` the world-aligned Jacobian of the centre-of-mass point c
        (body frame) from the body frame's."""
        m, d, t = self.model, self.data, self.tree
        tau = np.zeros(m.nv)
        for b, f in self.pushes.items():
            if not np.any(f):
                continue
            frame = int(t.body_frame[b])
            J = pin.computeFrameJacobian(m, d, self.q, frame, pin.LOCAL_WORLD_ALIGNED)
            r = d.oMf[frame].rotation @ np.asarray(self.plant.record.bodies[b].com, float)
            Jc = J[:3] - pin.skew(r) @ J[3:]
            tau += Jc.T @ f
        return tau

    def set_state(self, q: np.ndarray, v: np.ndarray) -> None:
        """Set the tree state from rbc ``(q (nq,), v (nv,))`` (their tree parts)."""
        k, t = self.plant, self.tree
        self.q = t.q_pin(np.asarray(q, float)[: k.nq_tree])
        self.v = t.v_pin(np.asarray(v, float)[: k.nv_tree])
        self._base = None  # base_state's cache (it keys on the step count)

    def evaluate(self, f: np.ndarray) -> np.ndarray:
        """Tree accelerations (nv_pin,) at the current state with port efforts f (n_act,),
        Pinocchio's order; the constraint forces are left in the constraint datas
        (:meth:`cut_wrenches`)."""
        _, P = self._ports()
        tau = P.T @ f - self.damping * self.v
        if self.pushes:
            tau += self._push_efforts()
        return pin.constraintDynamics(self.model, self.data, self.q, self.v, tau,
                                      self.pmod.constraints, self.cdatas, self.prox)

    def advance(self, f: np.ndarray, steps: int) -> None:
        """``steps`` physics steps with the port effort commands f (n_act,) held; with drive
        data each step applies the drives' actual efforts at its start and advances their
        states by the exact response to the held command (:class:`~rbc.sim.drives.
        SteppedDrives`, as the MuJoCo backend)."""
        h, drive = self.dt, self.drive
        if drive is not None:
            drive.hold(f)
        for _ in range(steps):
            ell0, P = self._ports()
            rate0 = P @ self.v
            fa, mm = (f, None) if drive is None else drive.efforts(rate0)
            a = self.evaluate(fa)
            self.work_passive -= float(self.damping @ (self.v * self.v)) * h
            self.v = self.v + h * a
            self.q = pin.integrate(self.model, self.q, h * self.v)
            ell1, P1 = self._ports()
            self.work_actuators += port_work(fa, ell0, ell1, rate0, P1 @ self.v, h)
            if drive is not None:
                drive.step(mm, fa, ell1 - ell0)
        if drive is not None:
            self.work_drive_losses = drive.work_losses
        self.steps += steps

    def drive_state(self):
        """The drives' held commands and states (or None): carried into the plant of the
        next mode segment (:meth:`set_drive_state`)."""
        d = self.drive
        return None if d is None or d.z is None else (d.c.copy(), d.z.copy())

    def set_drive_state(self, state) -> None:
        """Continue the drives from :meth:`drive_state` of the previous segment's plant."""
        if self.drive is not None and state is not None:
            self.drive.c, self.drive.z = state[0].copy(), state[1].copy()

    def _ports(self) -> tuple[np.ndarray, np.ndarray]:
        """``(ℓ (n_act,), J_ℓ (n_act, nv_pin))`` at the current q, Pinocchio v order."""
        if not self.varying:
            return self.Pq @ self.q, self.Pv
        k, t = self.plant, self.tree
        q = np.zeros(k.nq)  # tree coordinates suffice: every port reads the tree
        q[t.q_perm] = self.q
        ell, J = port_state(k, q)
        return ell, J[:, : k.nv_tree][:, t.v_perm]
    def tree_state(self) -> tuple[np.ndarray, np.ndarray]:
        """rbc ``(q (nq,), v (nv,))``: the tree state in rbc order; cut coordinates at the
        identity and their speeds zero (not Pinocchio's state; :meth:`base_state` solves
        the record's)."""
        k, t = self.plant, self.tree
        q = np.zeros(k.nq)
        q[: k.nq_tree] = _inverse_perm(self.q, t.q_perm)
        q = _support_identity(k, q)
        v = np.zeros(k.nv)
        v[: k.nv_tree] = t.v_rbc(self.v)
        return q, v

    def base_state(self) -> tuple[np.ndarray, np.ndarray]:
        """The tree state in rbc order; the record's cut coordinates solved from it (from
        their last solution: consecutive states are close). Cached until the next step:
        the control loop asks for it twice per control step (measurement, supports)."""
        cached = getattr(self, "_base", None)
        if cached is not None and cached[0] == self.steps:
            return cached[1].copy(), cached[2].copy()
        k = self.plant
        nq, nv = base_sizes(k)
        q, v = self.tree_state()
        if cached is not None:  # warm start of the record's cut coordinates
            q[k.nq_tree: nq] = cached[1][k.nq_tree: nq]
        q = cut_coordinates(k, q)
        v = v[:nv]
        if nv > k.nv_tree:  # the record's cut coordinates: from the closure rows
            E = lift(k, self.part, q).E
            u = np.linalg.lstsq(E[: k.nv_tree], v[: k.nv_tree], rcond=None)[0]
            v[k.nv_tree:] = E[k.nv_tree: nv] @ u
        self._base = (self.steps, q[:nq].copy(), v.copy())
        return q[:nq], v

    def support_wrenches(self, names: tuple[str, ...]) -> dict[str, np.ndarray]:
        """The contact forces of the last ``constraintDynamics`` call, per support weld:
        the ground's wrench on the robot, world axes, about the support point
        (:meth:`cut_wrenches` of the support chords)."""
        w = self.cut_wrenches(tuple(n + SUPPORT_EDGE for n in names))
        return {n: w[n + SUPPORT_EDGE] for n in names if n + SUPPORT_EDGE in w}

    def cut_wrenches(self, cuts: tuple[str, ...]) -> dict[str, np.ndarray]:
        """``{cut: (6,) [n; f]}``: the wrench the cut joint's first body (the world, for a
        support) exerts on its second in the last ``constraintDynamics`` call, world axes,
        about the first constraint's frame origin on the first body [N·m; N]. Pinocchio's
        ``contact_force`` is expressed in that frame (LOCAL) and acts on the first side, so
        the wrench on the second body is its negative; the two constraints of a revolute
        cut are summed about the first one's point."""
        out: dict[str, np.ndarray] = {}
        origin: dict[str, np.ndarray] = {}
        for spec, cd in zip(self.pmod.specs, self.cdatas, strict=True):
            if spec.cut not in cuts:
                continue
            R, p = cd.oMc1.rotation, np.array(cd.oMc1.translation)
            f = cd.contact_force
            n, force = -R @ np.array(f.angular), -R @ np.array(f.linear)
            if spec.cut in out:
                n = n + np.cross(p - origin[spec.cut], force)
                out[spec.cut] += np.concatenate([n, force])
            else:
                origin[spec.cut] = p
                out[spec.cut] = np.concatenate([n, force])
        return out

    def measure(self) -> Measurement:
        kin, pot, tasks = self.probe.measure(self.q, self.v)
        gaps = self.probe.anchor_gaps(self.pmod.specs)
        ell, P = self._ports()
        rate = P @ self.v
        efforts = None if self.drive is None else self.drive.efforts(rate)[0]
        return Measurement(ell, rate, tasks, gaps,
                           kin, pot, self.q.copy(), self.v.copy(), efforts)


def _inverse_perm(x_pin: np.ndarray, perm: np.ndarray) -> np.ndarray:
    """rbc-ordered vector from a Pinocchio-ordered one (``x_pin = x[perm]``)."""
    out = np.empty_like(np.asarray(x_pin, dtype=float))
    out[perm] = x_pin
    return out


def _support_identity(k, q: np.ndarray) -> np.ndarray:
    """Start values (the identity) of every cut joint's coordinates before they are solved."""
    for e in k.chord_edges:
        if k.kinds[e].nq:
            q[k.q_slice(e)] = k.kinds[e].neutral()
    return q

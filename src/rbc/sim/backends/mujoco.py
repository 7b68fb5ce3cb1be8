"""The MuJoCo backend: the exported MJCF (:mod:`rbc.backends.mjcf_export`) stepped by MuJoCo.

The plant's model is exported in memory with ``timestep = dt`` (default 1 kHz; the export
sets the loop equalities' ``solref = (2·dt, 1)``) and its keyframe at the closed initial
configuration; initial speeds are mapped joint by joint
(:func:`rbc.backends.mjcf_export.velocity_block`). Actuators are the exported motors
(``gear = 1``): ``ctrl`` is the port effort. MuJoCo's default integrator (semi-implicit
Euler) and constraint solver are used as exported.

**Measured** (after ``mj_forward`` at each control step): ports from ``qpos``/``qvel`` of the
port joints (MuJoCo's actuator lengths and velocities when a distance port is a spatial
tendon); task positions from the body poses (``xpos + xmat·p``; exported bodies keep
the record's body frames); loop gaps as the world distance between the two sites of every
equality constraint (``site_xpos``), named by the equality; kinetic energy ``½ q̇ᵀ M q̇``
(``mj_mulM``, armature included) and gravitational potential ``−Σ m_b g·x_com,b``.
Passive work integrates ``qfrc_passive · q̇`` per step.

**Drives** (record ``drive`` data, :class:`rbc.sim.drives.SteppedDrives`): each physics
step applies the actual efforts from the drive states and port rates at its start (clamped
to the motors' ctrlrange, as MuJoCo would), books ``f·Δℓ`` and the loss ``(m − f)·Δℓ``, and
advances the drive states by the exact response to the held command.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from rbc.backends.mjcf_export import CONTACT_CONDIM, check_loads, export_mjcf
from rbc.backends.mjcf_state import TreeReadback
from rbc.backends.mujoco_log import mujoco
from rbc.errors import CompileError
from rbc.ir import spatial as sp
from rbc.model.modes import base_sizes, cut_coordinates
from rbc.model.partition import lift
from rbc.sim.backends import Backend, BackendError, Measurement
from rbc.sim.drives import Drives, SteppedDrives

#: Readback (``base_state``): Newton iterations and the qpos residual [rad, m] at which it
#: stops (round-off of the quaternion maps is ~1e-15; from the last readback one iteration
#: usually suffices).
READBACK_ITERATIONS, READBACK_TOL = 20, 1e-12


class MujocoBackend(Backend):
    """MuJoCo plant (module docstring)."""

    name = "mujoco"

    @classmethod
    def check(cls, plant, part) -> None:
        """The model must export (no helical joints, ports on tree joints, …) and MuJoCo must
        load the export (e.g. MuJoCo's XML parser limits how deep bodies may nest)."""
        try:
            check_loads(export_mjcf(plant, part).to_string(), str(plant.record.source))
        except CompileError as err:
            raise BackendError(str(err)) from None

    #: the exported model has a floor and native unilateral contact (docs/supports.md)
    native_contact = True

    def __init__(self, plant, part, q0, v0, dt, floor: float | str | None = "auto",
                 contact_condim: int = CONTACT_CONDIM, **options) -> None:
        super().__init__(plant, part, q0, v0, dt)
        exp = export_mjcf(plant, replace(part, q_ref=np.asarray(q0, dtype=float)), timestep=dt,
                          floor=floor, contact_condim=contact_condim)
        self.exp = exp
        self.xml = self.scene_xml(exp)
        m = self.m = mujoco.MjModel.from_xml_string(self.xml)
        d = self.d = mujoco.MjData(m)
        mujoco.mj_resetDataKeyframe(m, d, mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_KEY,
                                                             "assembled"))
        d.qvel[:] = _qvel(plant, exp, m, np.asarray(q0, float), np.asarray(v0, float))
        # ports ℓ = Σ c_k q_k (one term for a joint port) over MuJoCo's qpos and qvel
        acts = plant.record.actuators
        self.Pq, self.Pv = np.zeros((len(acts), m.nq)), np.zeros((len(acts), m.nv))
        for i, a in enumerate(acts):
            for name, coef in a.port_terms:
                jid = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT,
                                        exp.joint_name(plant.edge(name)))
                self.Pq[i, m.jnt_qposadr[jid]] += coef
                self.Pv[i, m.jnt_dofadr[jid]] += coef
        # distance ports are spatial tendons: their lengths are MuJoCo's actuator lengths
        self.spatial = any(a.kind == "distance" for a in acts)
        bodies = plant.record.body_index()
        self.tasks = [(t.name, mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY,
                                                 exp.body_names[bodies[t.body]]),
                       sp.se3_from_pose(t.pose).translation) for t in plant.record.tasks]
        loops = [i for i in range(m.neq) if m.eq_objtype[i] == mujoco.mjtObj.mjOBJ_SITE]
        self.eq_sites = np.array([(m.eq_obj1id[i], m.eq_obj2id[i]) for i in loops],
                                 dtype=np.int64).reshape(-1, 2)
        self.gap_names = tuple(mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_EQUALITY, i)
                               for i in loops)
        self.gravity = np.array(m.opt.gravity)
        drives = Drives.of(plant.record)
        self.drive = None if drives is None else SteppedDrives(drives, dt)
        # MuJoCo clamps ctrl to ctrlrange: the drives' actual efforts are clamped alike
        self.ctrl_lo = np.where(m.actuator_ctrllimited, m.actuator_ctrlrange[:, 0], -np.inf)
        self.ctrl_hi = np.where(m.actuator_ctrllimited, m.actuator_ctrlrange[:, 1], np.inf)
        self._q_last = np.asarray(q0, dtype=float).copy()  # start of the next readback
        self.readback = TreeReadback.of(plant, exp)
        mujoco.mj_forward(m, d)

    def scene_xml(self, exp) -> str:
        """The MJCF text the plant loads: the export's. A subclass adds a scene around the
        robot (:mod:`rbc.sim.material.plant`), keeping the robot's bodies and joints and
        their qpos/qvel addresses."""
        return exp.to_string()

    pushable = True

    def apply_force(self, body: int, force: np.ndarray) -> None:
        """``xfrc_applied`` of the body's MuJoCo body: the force at its centre of mass."""
        b = mujoco.mj_name2id(self.m, mujoco.mjtObj.mjOBJ_BODY, self.exp.body_names[body])
        self.d.xfrc_applied[b, :3] = force
        self.d.xfrc_applied[b, 3:] = 0.0

    def advance(self, f: np.ndarray, steps: int) -> None:
        if self.drive is not None:
            self._advance_driven(f, steps)
            return
        m, d = self.m, self.d
        d.ctrl[:] = f
        ell0 = self._lengths()
        for _ in range(steps):
            mujoco.mj_step(m, d)
            ell1 = self._lengths()
            self.work_actuators += float(f @ (ell1 - ell0))
            self.work_passive += float(d.qfrc_passive @ d.qvel) * self.dt
            ell0 = ell1
        self.steps += steps

    def _advance_driven(self, f: np.ndarray, steps: int) -> None:
        """Steps with drive dynamics (:class:`rbc.sim.drives.SteppedDrives`): each step's
        actual efforts from the drive states and port rates at its start."""
        m, d, drive = self.m, self.d, self.drive
        drive.hold(f)
        ell0 = self._lengths()
        for _ in range(steps):
            fa, mm = drive.efforts(self._rates())
            fa = np.clip(fa, self.ctrl_lo, self.ctrl_hi)
            d.ctrl[:] = fa
            mujoco.mj_step(m, d)
            ell1 = self._lengths()
            self.work_actuators += float(fa @ (ell1 - ell0))
            self.work_passive += float(d.qfrc_passive @ d.qvel) * self.dt
            drive.step(mm, fa, ell1 - ell0)
            ell0 = ell1
        self.work_drive_losses = drive.work_losses
        self.steps += steps

    def _rates(self) -> np.ndarray:
        """Port rates ℓ̇ (n_act,) at the current state."""
        if not self.spatial:
            return self.Pv @ self.d.qvel
        mujoco.mj_fwdPosition(self.m, self.d)
        mujoco.mj_fwdVelocity(self.m, self.d)
        return self.d.actuator_velocity.copy()

    def _lengths(self) -> np.ndarray:
        """Port displacements ℓ (n_act,) at the current qpos (a spatial tendon's length
        needs MuJoCo's position stage: ``mj_fwdPosition``)."""
        if not self.spatial:
            return self.Pq @ self.d.qpos
        mujoco.mj_fwdPosition(self.m, self.d)
        return self.d.actuator_length.copy()

    def set_state(self, q: np.ndarray, v: np.ndarray) -> None:
        """Set qpos/qvel from rbc ``(q (nq,), v (nv,))`` (the export's maps) and run
        ``mj_forward``."""
        k, m, d = self.plant, self.m, self.d
        q = np.asarray(q, dtype=float)
        d.qpos[:] = self.exp.qpos_of(k, q)
        d.qvel[:] = self.exp.velocity_map(k, q) @ np.asarray(v, dtype=float)
        self._q_last = q.copy()
        mujoco.mj_forward(m, d)

    def tree_state(self) -> tuple[np.ndarray, np.ndarray]:
        """rbc ``(q (nq,), v (nv,))`` of the current qpos/qvel with the tree part exact: the
        export's maps inverted. Where no body was re-rooted, joint by joint in closed form
        (:class:`rbc.backends.mjcf_state.TreeReadback`: coordinates copied or read from
        MuJoCo's quaternions, each quaternion on the last readback's side; speeds block by
        block). Otherwise Newton on ``qpos_of(q) = qpos`` (MuJoCo's ``mj_differentiatePos``
        as the residual, the velocity map P as its Jacobian, from the last readback; merged
        chains, gimbal balls and split-body cuts included) and ``v = P⁺ qvel`` (the tree
        speeds). The cut coordinates that qpos does not determine are left at the last
        readback's values (:meth:`base_state` solves them)."""
        d, rb = self.d, self.readback
        if rb.exact:
            q = self._q_last = rb.configuration(d.qpos[: rb.nq], self._q_last)
            return q, rb.speeds(q, d.qvel[: rb.nv])
        return self.tree_state_newton()

    def tree_state_newton(self) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`tree_state` by Newton on ``qpos_of`` (its docstring; the path of exports
        with re-rooted bodies, and the reference the closed form is tested against)."""
        k, m, d, exp = self.plant, self.m, self.d, self.exp
        q, dq = self._q_last.copy(), np.zeros(m.nv)
        for _ in range(READBACK_ITERATIONS):
            mujoco.mj_differentiatePos(m, dq, 1.0, exp.qpos_of(k, q), d.qpos)
            if np.abs(dq).max(initial=0.0) <= READBACK_TOL:
                break
            P = exp.velocity_map(k, q)
            q = k.integrate(q, map_solve(P, dq))
        self._q_last = q
        return q, map_solve(exp.velocity_map(k, q), d.qvel)

    def base_state(self) -> tuple[np.ndarray, np.ndarray]:
        """rbc (q, v) of the current qpos/qvel (:meth:`tree_state`), the record's cut
        coordinates' speeds from the lift."""
        k = self.plant
        q, v = self.tree_state()
        q = self._q_last = cut_coordinates(k, q)
        v = map_solve(self.exp.velocity_map(k, q), self.d.qvel)
        nq, nv = base_sizes(k)
        if nv > k.nv_tree:
            L = lift(k, self.part, q)
            v[k.nv_tree: nv] = L.E[k.nv_tree: nv] @ np.linalg.lstsq(
                L.E[: k.nv_tree], v[: k.nv_tree], rcond=None)[0]
        return q[:nq], v[:nv]

    def support_wrenches(self, names: tuple[str, ...]) -> dict[str, np.ndarray]:
        """Sum over the contacts of each support's geom (``mj_contactForce``: normal and
        friction forces in the contact frame, on geom1 by geom2) of the ground's wrench on
        the robot, world axes, about the support point (the geom's frame origin)."""
        m, d = self.m, self.d
        geoms = {mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_GEOM, self.exp.support_geoms[n]): n
                 for n in names}
        out = {n: np.zeros(6) for n in names}
        f6 = np.zeros(6)
        for i in range(d.ncon):
            c = d.contact[i]
            for g, sign in ((c.geom1, 1.0), (c.geom2, -1.0)):
                if g in geoms:
                    mujoco.mj_contactForce(m, d, i, f6)
                    # the contact force acts on geom2 by geom1 along the frame (normal first)
                    f = -sign * (c.frame.reshape(3, 3).T @ f6[:3])
                    name = geoms[g]
                    p = d.geom_xpos[g]
                    out[name] += np.concatenate([np.cross(c.pos - p, f), f])
        return out

    def cut_wrenches(self, cuts: tuple[str, ...]) -> dict[str, np.ndarray]:
        """``{cut: (6,) [n; f]}``: the force of each ``connect`` equality of a spherical cut
        (named after the cut) at the current state (``mj_forward``'s ``efc_force``), as
        the wrench the cut's first body exerts on its second, world axes, about the
        constraint point. A connect's rows are the world-frame residual ``p₁ − p₂`` of its
        two sites, so ``efc_force`` f acts as +f on the first site and −f on the second;
        its moment is zero. Cuts without a connect equality (welds) are left out."""
        m, d = self.m, self.d
        out = {}
        for c in cuts:
            i = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_EQUALITY, c)
            if i < 0 or m.eq_type[i] != mujoco.mjtEq.mjEQ_CONNECT:
                continue
            rows = np.flatnonzero((d.efc_type == mujoco.mjtConstraint.mjCNSTR_EQUALITY)
                                  & (d.efc_id == i))
            out[c] = np.concatenate([np.zeros(3), -d.efc_force[rows]])
        return out

    def measure(self) -> Measurement:
        m, d = self.m, self.d
        mujoco.mj_forward(m, d)
        Mv = np.zeros(m.nv)
        mujoco.mj_mulM(m, d, Mv, d.qvel)
        kin = 0.5 * float(d.qvel @ Mv)
        pot = -float(m.body_mass @ (d.xipos @ self.gravity))
        tasks = {n: d.xpos[b] + d.xmat[b].reshape(3, 3) @ p for n, b, p in self.tasks}
        gaps = np.linalg.norm(d.site_xpos[self.eq_sites[:, 0]]
                              - d.site_xpos[self.eq_sites[:, 1]], axis=1)
        ell, rate = ((d.actuator_length.copy(), d.actuator_velocity.copy()) if self.spatial
                     else (self.Pq @ d.qpos, self.Pv @ d.qvel))
        efforts = None
        if self.drive is not None:
            efforts = np.clip(self.drive.efforts(rate)[0], self.ctrl_lo, self.ctrl_hi)
        return Measurement(ell, rate, tasks, gaps,
                           kin, pot, d.qpos.copy(), d.qvel.copy(), efforts)


def map_solve(P: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The least-squares x (n,) of ``P x = b`` for the export's velocity map P (m, n): only
    P's non-zero columns enter (the cut coordinates that MuJoCo's speeds do not hold are
    zero columns; x is 0 there). P is block-sparse (each MuJoCo joint's speeds depend on
    its own chain's), so when those columns make it square, one sparse LU (SuperLU) solves
    it exactly; otherwise a column-pivoted QR (LAPACK gelsy) gives the least-squares
    solution. Both are the ``numpy.linalg.lstsq`` solution for P of full column rank on
    those columns, and far cheaper on the 200-body composed models."""
    from scipy.linalg import lstsq
    from scipy.sparse import csc_matrix
    from scipy.sparse.linalg import splu

    cols = np.flatnonzero(np.any(P != 0.0, axis=0))
    x = np.zeros(P.shape[1])
    if cols.size == P.shape[0]:
        try:
            x[cols] = splu(csc_matrix(P[:, cols])).solve(np.asarray(b, dtype=float))
            return x
        except RuntimeError:  # exactly singular: the least-squares path
            pass
    if cols.size:
        x[cols] = lstsq(P[:, cols], b, lapack_driver="gelsy", check_finite=False)[0]
    return x


def _qvel(plant, exp, m, q0: np.ndarray, v0: np.ndarray) -> np.ndarray:
    """MuJoCo qvel (m.nv,) of rbc speeds v0 at q0 (the export's velocity map); dofs past the
    export's (a scene's free bodies, :meth:`MujocoBackend.scene_xml`) start at rest."""
    out = np.zeros(m.nv)
    if np.any(v0):
        P = exp.velocity_map(plant, q0)
        out[: P.shape[0]] = P @ v0
    return out

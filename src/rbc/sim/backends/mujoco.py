"""The MuJoCo backend: the exported MJCF (:mod:`rbc.backends.mjcf_export`) stepped by MuJoCo.

The plant's model is exported in memory with ``timestep = dt`` (default 1 kHz; the export
sets the loop equalities' ``solref = (2·dt, 1)``) and its keyframe at the closed initial
configuration; initial speeds are mapped joint by joint
(:func:`rbc.backends.mjcf_export.velocity_block`). Actuators are the exported motors
(``gear = 1``): ``ctrl`` is the port effort. MuJoCo's default integrator (semi-implicit
Euler) and constraint solver are used as exported.

**Measured** (after ``mj_forward`` at each control step): ports from ``qpos``/``qvel`` of the
port joints; task positions from the body poses (``xpos + xmat·p``; exported bodies keep
the record's body frames); loop gaps as the world distance between the two sites of every
equality constraint (``site_xpos``), named by the equality; kinetic energy ``½ q̇ᵀ M q̇``
(``mj_mulM``, armature included) and gravitational potential ``−Σ m_b g·x_com,b``.
Passive work integrates ``qfrc_passive · q̇`` per step.
"""

from __future__ import annotations

from dataclasses import replace

import mujoco
import numpy as np
import pinocchio as pin

from rbc.backends.mjcf_export import DIRECT_CUT_TYPES, export_mjcf, mjcf_body, velocity_block
from rbc.ir import spatial as sp
from rbc.model.compiled import root_joint
from rbc.model.tree import tree_joint
from rbc.sim.backends import Backend, BackendError, Measurement


class MujocoBackend(Backend):
    """MuJoCo plant (module docstring)."""

    name = "mujoco"

    @classmethod
    def check(cls, plant, part) -> None:
        """The model must export (no helical joints, ports on tree joints, …), and without
        split-body cuts: MuJoCo scales a constraint's regularization with the inverse
        weight of the bodies it touches, and the split body's near-zero mass makes its
        weld so soft that the loop drifts apart (0.24 m in 0.5 s on a slider-crank cut at
        its prismatic joint)."""
        split = sorted({plant.edge_names[k] for k in plant.chord_edges
                        if plant.edge_types[k] not in DIRECT_CUT_TYPES})
        export_mjcf(plant, part)
        if split:
            raise BackendError(
                f"the mujoco backend cannot hold the loops closed at {', '.join(split)} "
                f"({', '.join(sorted({plant.edge_types[plant.edge(n)] for n in split}))} cut "
                "joints are exported as a near-massless split body whose weld MuJoCo "
                "barely enforces); cut the loop at a revolute or spherical joint "
                "(`cut: prefer` in the record) or use the reduced backend")

    def __init__(self, plant, part, q0, v0, dt, **options) -> None:
        super().__init__(plant, part, q0, v0, dt)
        exp = export_mjcf(plant, replace(part, q_ref=np.asarray(q0, dtype=float)), timestep=dt)
        self.xml = exp.to_string()
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
                jid = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, name)
                self.Pq[i, m.jnt_qposadr[jid]] += coef
                self.Pv[i, m.jnt_dofadr[jid]] += coef
        self.tasks = [(t.name, mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, mjcf_body(t.body)),
                       sp.se3_from_pose(t.pose).translation) for t in plant.record.tasks]
        loops = [i for i in range(m.neq) if m.eq_objtype[i] == mujoco.mjtObj.mjOBJ_SITE]
        self.eq_sites = np.array([(m.eq_obj1id[i], m.eq_obj2id[i]) for i in loops],
                                 dtype=np.int64).reshape(-1, 2)
        self.gap_names = tuple(mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_EQUALITY, i)
                               for i in loops)
        self.gravity = np.array(m.opt.gravity)
        mujoco.mj_forward(m, d)

    def advance(self, f: np.ndarray, steps: int) -> None:
        m, d = self.m, self.d
        d.ctrl[:] = f
        for _ in range(steps):
            ell0 = self.Pq @ d.qpos
            mujoco.mj_step(m, d)
            self.work_actuators += float(f @ (self.Pq @ d.qpos - ell0))
            self.work_passive += float(d.qfrc_passive @ d.qvel) * self.dt
        self.steps += steps

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
        return Measurement(self.Pq @ d.qpos, self.Pv @ d.qvel, tasks, gaps,
                           kin, pot, d.qpos.copy(), d.qvel.copy())


def _qvel(plant, exp, m, q0: np.ndarray, v0: np.ndarray) -> np.ndarray:
    """MuJoCo qvel (m.nv,) of rbc speeds v0 at q0 (tree and auxiliary cut joints)."""
    out = np.zeros(m.nv)
    if not np.any(v0):
        return out
    record = {j.name: j for j in plant.record.joints}
    aux = {mj.name for mj in exp.aux_joints}
    for mj in (*exp.tree_joints, *exp.aux_joints):
        k = mj.edge
        name = plant.edge_names[k]
        if mj.name in aux:  # auxiliary cut body: the record joint with A = B = I placement
            jt, B = record.get(name) or root_joint(name, plant.edge_types[k]), pin.SE3.Identity()
        else:
            jt = tree_joint(plant, k)
            B = sp.se3_from_pose(jt.child_frame)
        vs = v0[plant.v_slice(k)]
        adr = m.jnt_dofadr[mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, mj.name)]
        if mj.type in ("hinge", "slide"):  # a reversed tree joint keeps its coordinate
            out[adr] = vs[mj.coord]
        else:
            P = velocity_block(jt, q0[plant.q_slice(k)], B)
            out[adr: adr + P.shape[0]] = P @ vs
    return out

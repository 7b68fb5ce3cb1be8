"""MuJoCo state → rbc configuration: the inverse of :meth:`MjcfExport.qpos_of` on the tree.

A MuJoCo model exported by :func:`rbc.backends.mjcf_export.export_mjcf` holds the spanning
tree's joints only; the cut joints are equality constraints. :func:`tree_configuration`
reads a measured ``qpos`` back into rbc coordinates joint by joint (hinge and slide
coordinates are rbc's; a ball's quaternion is the body-frame rotation ``R = R_B Q R_Bᵀ``, so
``Q = R_Bᵀ R R_B``; a free root is rbc's layout; planar ``[x, y, θ]`` back through the
joint's alignment; a gimbal ball that replaced three revolutes through massless bodies is
split into its three angles by Gauss–Newton from the fallback's angles). Cut-joint
coordinates, and those of tree joints the export re-rooted ("Deep trees" in
:mod:`rbc.backends.mjcf_export`), are not in ``qpos``: they keep the fallback's values, so
the result is a *seed* for :func:`rbc.model.closure.project`, not a closed configuration
(MuJoCo's loops are soft and its tree coordinates are off the manifold by its constraint
violation).

:class:`TreeReadback` is the same inverse laid out once per export: the coordinates that
MuJoCo holds as rbc's (hinge, slide, universal, cylindrical) as one gather, the others (ball,
free, planar, gimbal) joint by joint, a quaternion on the side of the fallback's (q and −q
are one rotation; the side keeps a configuration continuous from one readback to the next);
and the speeds ``v = P⁻¹ qvel`` block by block (each MuJoCo joint's speeds depend on its own
edge's — :func:`~rbc.backends.mjcf_export.velocity_block` — or a gimbal's three), exact
where no body was re-rooted (``exact``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rbc.backends.mjcf_export import (
    MjcfExport,
    edge_joint,
    gimbal_angles,
    gimbal_map,
    velocity_block,
)
from rbc.ir import spatial as sp
from rbc.ir.joints import joint_kind
from rbc.model.compiled import CompiledModel

#: Gauss–Newton iterations and tolerance [rad] of the gimbal split (three angles: converges
#: quadratically from any start within the gimbal's non-singular region).
GIMBAL_ITERATIONS, GIMBAL_TOL = 50, 1e-13


def tree_configuration(model: CompiledModel, exp: MjcfExport, qpos: np.ndarray,
                       fallback: np.ndarray) -> np.ndarray:
    """rbc configuration (nq,) of a MuJoCo ``qpos`` (m.nq,) of the export ``exp``.

    Args:
        model: the compiled model that was exported.
        exp: its export (:func:`~rbc.backends.mjcf_export.export_mjcf`).
        qpos: (m.nq,) MuJoCo positions in the export's joint order [rad, m, quaternion wxyz].
        fallback: (nq,) rbc configuration supplying what qpos lacks (cut joints, dropped
            leaf chains), the start of a gimbal split and the side of every quaternion.

    Returns:
        (nq,) q: tree coordinates from qpos, the rest from ``fallback``.

    Raises:
        ValueError: ``qpos`` does not have the export's length, or a gimbal split does not
            converge.
    """
    return TreeReadback.of(model, exp).configuration(qpos, fallback)


@dataclass(frozen=True, eq=False)
class TreeReadback:
    """The export's tree maps inverted joint by joint (module docstring), laid out once.

    Attributes:
        model, exp: the compiled model and its export.
        q_dst, q_src: rbc q indices and qpos addresses of the coordinates MuJoCo holds as
            rbc's (hinge, slide, universal, cylindrical).
        v_dst, v_src: the same for their speeds (v indices, dof addresses).
        joints: the other MuJoCo joints: ``(mj, qpos address, dof address)``.
        nq, nv: the export's qpos and dof counts.
        exact: no body was re-rooted (every tree coordinate is in qpos, every tree speed in
            qvel block by block: :meth:`speeds` applies).
    """

    model: CompiledModel
    exp: MjcfExport
    q_dst: np.ndarray
    q_src: np.ndarray
    v_dst: np.ndarray
    v_src: np.ndarray
    joints: tuple
    nq: int
    nv: int
    exact: bool

    @classmethod
    def of(cls, model: CompiledModel, exp: MjcfExport) -> TreeReadback:
        qd, qs, vd, vs, joints = [], [], [], [], []
        r = c = 0
        done = set()
        for mj in exp.order:
            if mj.root:
                joints.append((mj, r, c))
                r, c = r + 7, c + 6
                continue
            if mj.group:
                joints.append((mj, r, c))
                r, c = r + 4, c + 3
                continue
            if mj.edge in done:
                continue
            done.add(mj.edge)
            j, _ = edge_joint(model, mj.edge)
            sq, sv = model.q_slice(mj.edge), model.v_slice(mj.edge)
            n, m = {"spherical": (4, 3), "free": (7, 6), "planar": (3, 3)}.get(
                j.type, (sq.stop - sq.start, sv.stop - sv.start))
            if j.type in ("spherical", "free", "planar"):
                joints.append((mj, r, c))
            else:  # the coordinates and speeds are rbc's (velocity_block is the identity)
                qd += range(sq.start, sq.stop)
                qs += range(r, r + n)
                vd += range(sv.start, sv.stop)
                vs += range(c, c + m)
            r, c = r + n, c + m
        qd, qs, vd, vs = (np.array(x, dtype=np.int64) for x in (qd, qs, vd, vs))
        return cls(model, exp, qd, qs, vd, vs, tuple(joints), r, c, not exp.roots)

    def configuration(self, qpos: np.ndarray, fallback: np.ndarray) -> np.ndarray:
        """rbc q (nq,) of ``qpos`` (the export's length), the rest from ``fallback``
        (:func:`tree_configuration`).

        Raises:
            ValueError: a wrong qpos length, or a gimbal split does not converge.
        """
        model = self.model
        q = np.array(fallback, dtype=float)
        qpos = np.asarray(qpos, dtype=float)
        if qpos.shape != self.exp.qpos.shape:
            raise ValueError(f"qpos has {qpos.size} entries; the export of "
                             f"{model.record.name} has {self.exp.qpos.size}")
        q[self.q_dst] = qpos[self.q_src]
        for mj, r, _ in self.joints:
            if mj.root:  # its tree joint's coordinate is not in qpos: the fallback's
                continue
            if mj.group:
                _split_gimbal(model, mj, qpos[r: r + 4], q)
                continue
            j, B = edge_joint(model, mj.edge)
            sl = model.q_slice(mj.edge)
            n = {"spherical": 4, "free": 7}.get(j.type, 3)
            x = _joint_q(j, qpos[r: r + n], B)
            quat = {"spherical": slice(0, 4), "free": slice(3, 7)}.get(j.type)
            if quat is not None and x[quat] @ q[sl][quat] < 0.0:
                x[quat] = -x[quat]
            q[sl] = x
        return q

    def speeds(self, q: np.ndarray, qvel: np.ndarray) -> np.ndarray:
        """rbc speeds v (nv,) of MuJoCo's ``qvel`` at the configuration q (nq,): ``P v =
        qvel`` solved block by block (zero on the coordinates MuJoCo does not hold; the
        :func:`rbc.sim.backends.mujoco.map_solve` solution of the whole map).

        Raises:
            ValueError: the export re-rooted bodies (``exact`` False: a root's speeds
                depend on its whole chain).
        """
        if not self.exact:
            raise ValueError(f"{self.model.record.name}: the MuJoCo export re-rooted bodies; "
                             "their speeds do not invert joint by joint")
        model = self.model
        qvel = np.asarray(qvel, dtype=float)
        v = np.zeros(model.nv)
        v[self.v_dst] = qvel[self.v_src]
        for mj, _, c in self.joints:
            if mj.group:
                cols = gimbal_map(mj, gimbal_angles(model, mj, q))[1]
                x = np.linalg.solve(cols, qvel[c: c + 3])
                for n, e in enumerate(mj.group):
                    v[model.v_slice(e).start] = x[n]
                continue
            j, B = edge_joint(model, mj.edge)
            P = velocity_block(j, np.asarray(q)[model.q_slice(mj.edge)], B)
            sv = model.v_slice(mj.edge)
            v[sv] = np.linalg.solve(P, qvel[c: c + P.shape[0]])
        return v


def _joint_q(j, x: np.ndarray, B) -> np.ndarray:
    """Inverse of :func:`rbc.backends.mjcf_export.mj_qpos` for one joint."""
    if j.type == "spherical":
        R = B.rotation.T @ sp.rotation_from_quat(x) @ B.rotation
        return sp.quat_from_rotation(R)
    if j.type == "planar":
        return joint_kind(j).compose(np.asarray(x, dtype=float))
    return np.array(x, dtype=float)


def _split_gimbal(model: CompiledModel, mj, quat: np.ndarray, q: np.ndarray) -> None:
    """Angles θ of ``R = exp(u₁θ₁) exp(u₂θ₂) exp(u₃θ₃)`` into q (in place): Gauss–Newton on
    ``log(R(θ)ᵀ R)`` with the body-frame columns of :func:`~rbc.backends.mjcf_export.
    gimbal_map`, from q's angles; each angle is then taken within π of its start (the
    same rotation, the turn nearest the fallback).

    Raises:
        ValueError: no convergence in :data:`GIMBAL_ITERATIONS` (a gimbal lock on the way).
    """
    target = sp.rotation_from_quat(quat)
    th0 = gimbal_angles(model, mj, q)
    th = th0.copy()
    for _ in range(GIMBAL_ITERATIONS):
        R, J = gimbal_map(mj, th)
        err = sp.log3(R.T @ target)
        if np.abs(err).max() < GIMBAL_TOL:
            break
        th += np.linalg.lstsq(J, err, rcond=None)[0]
    else:
        raise ValueError(f"{model.record.name}: the gimbal of {mj.name} does not split into "
                         f"its three angles from {th0.tolist()} (residual "
                         f"{np.abs(err).max():.3g} rad)")
    th = th0 + np.angle(np.exp(1j * (th - th0)))
    for e, t in zip(mj.group, th, strict=True):
        q[model.q_slice(e)] = t


__all__ = ["TreeReadback", "tree_configuration"]

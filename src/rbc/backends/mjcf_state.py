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
"""

from __future__ import annotations

import numpy as np

from rbc.backends.mjcf_export import MjcfExport, edge_joint, gimbal_angles, gimbal_map
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
            leaf chains) and the start of a gimbal split.

    Returns:
        (nq,) q: tree coordinates from qpos, the rest from ``fallback``.

    Raises:
        ValueError: ``qpos`` does not have the export's length, or a gimbal split does not
            converge.
    """
    q = np.array(fallback, dtype=float)
    qpos = np.asarray(qpos, dtype=float)
    if qpos.shape != exp.qpos.shape:
        raise ValueError(f"qpos has {qpos.size} entries; the export of {model.record.name} "
                         f"has {exp.qpos.size}")
    r, done = 0, set()
    for mj in exp.order:
        if mj.root:  # a re-rooted body's free joint: its tree joint's coordinate is not in
            r += 7  # qpos (an equality, like a cut joint): it keeps the fallback's value
            continue
        if mj.group:
            _split_gimbal(model, mj, qpos[r: r + 4], q)
            r += 4
            continue
        if mj.edge in done:
            continue
        done.add(mj.edge)
        j, B = edge_joint(model, mj.edge)
        sl = model.q_slice(mj.edge)
        n = {"spherical": 4, "free": 7, "planar": 3}.get(j.type, sl.stop - sl.start)
        q[sl] = _joint_q(j, qpos[r: r + n], B)
        r += n
    return q


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


__all__ = ["tree_configuration"]

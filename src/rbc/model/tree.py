"""The tree-only ``pinocchio.Model`` of a compiled mechanism (DESIGN.md §6).

Tree edges are added in the forest's depth-first order, so each subtree is contiguous (a
breadth-first order makes ``crba`` return a wrong M). Fixed tree edges add no joint: the
child body is merged into its parent's joint with the fixed placement. Cut-joint
coordinates carry no mass and are not in this model.

A tree edge traversed tip to root (forest sign −1) is added as the reversed joint: for
revolute, prismatic, helical and cylindrical joints ``X⁻¹ = B·Q_{−a}(q)·A⁻¹`` with the same
coordinate, so it is the same joint type with the axis negated and the two attachment frames
swapped. Reversed universal, spherical, planar and free joints in the tree are not supported
(the record can swap that joint's parent and child).

Reflected rotor inertia ``α = I_m·N²`` and joint armature go to ``model.armature`` (which
Pinocchio's ``crba`` adds to the diagonal of M; checked in the tests).

Coordinate maps: the tree part of rbc's q (``q[:nq_tree]``) maps to Pinocchio's q joint by
joint (quaternions xyzw, free-joint velocities linear-first); :class:`TreeModel` holds the
index maps.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace

import numpy as np
import pinocchio as pin

from rbc.errors import CompileError
from rbc.ir import spatial as sp
from rbc.ir.joints import joint_kind, pinocchio_placements
from rbc.ir.record import Joint
from rbc.model.compiled import CompiledModel, root_joint

REVERSIBLE = ("revolute", "prismatic", "helical", "cylindrical")


@dataclass(frozen=True, eq=False)
class TreeModel:
    """A Pinocchio tree model plus the maps between rbc and Pinocchio coordinates.

    Attributes:
        model: the ``pinocchio.Model`` (gravity set from the record).
        body_frame: (B,) Pinocchio frame id of each record body (BODY frames).
        q_perm: (nq_tree,) ``q_pin = q_tree[q_perm]``.
        v_perm: (nv_tree,) ``v_pin = v_tree[v_perm]``.
        edge_joint: (E,) Pinocchio joint id of each tree edge with coordinates (−1 else).
    """

    model: pin.Model
    body_frame: np.ndarray
    q_perm: np.ndarray
    v_perm: np.ndarray
    edge_joint: np.ndarray

    def q_pin(self, q: np.ndarray) -> np.ndarray:
        """rbc q (nq,) (or its tree part) → Pinocchio q (model.nq,)."""
        return np.asarray(q)[self.q_perm]

    @functools.cached_property
    def v_identity(self) -> bool:
        """True when rbc and Pinocchio order the tree velocities alike (no re-ordering)."""
        return bool(np.array_equal(self.v_perm, np.arange(self.v_perm.size)))

    def v_pin(self, v: np.ndarray) -> np.ndarray:
        """rbc v (nv,) (or its tree part) → Pinocchio v (model.nv,)."""
        return np.asarray(v)[self.v_perm]

    def v_rbc(self, x: np.ndarray) -> np.ndarray:
        """Pinocchio-ordered velocity-space vector (nv_pin,) → rbc tree order (nv_tree,)."""
        if self.v_identity:
            return np.array(x, dtype=float)
        out = np.empty_like(np.asarray(x, dtype=float))
        out[self.v_perm] = x
        return out

    def matrix_rbc(self, M: np.ndarray) -> np.ndarray:
        """Pinocchio-ordered (nv_pin, nv_pin) matrix → rbc tree order."""
        if self.v_identity:
            return M
        out = np.empty_like(M)
        out[np.ix_(self.v_perm, self.v_perm)] = M
        return out


def joint_space_inertia(model: pin.Model, data: pin.Data, q: np.ndarray) -> np.ndarray:
    """The symmetric joint-space inertia M(q) (model.nv, model.nv) [kg·m², kg] in
    Pinocchio order, armature included: ``crba`` fills the upper triangle, mirrored here."""
    M = np.array(pin.crba(model, data, q))
    lower = _strict_lower(M.shape[0])
    M[lower] = M.T[lower]
    return M


@functools.cache
def _strict_lower(n: int) -> tuple[np.ndarray, np.ndarray]:
    return np.tril_indices(n, -1)


def tree_joint(model: CompiledModel, k: int) -> Joint:
    """The record joint of tree edge k as Pinocchio should add it (reversed if sign −1)."""
    if k >= len(model.record.joints):  # root edges follow the record joints
        return root_joint(model.edge_names[k], model.edge_types[k])
    joint = model.record.joints[k]
    if model.sign[k] > 0:
        return joint
    if joint.type not in REVERSIBLE and joint.type != "fixed":
        raise CompileError(
            f"{model.record.source}: joint '{joint.name}' ({joint.type}) is traversed from "
            f"child to parent by the spanning tree; reversed {joint.type} joints are not "
            "supported in the tree model — swap its parent and child in the record")
    axis = tuple(-a for a in joint.axis) if joint.axis is not None else None
    return replace(joint, parent=joint.child, child=joint.parent, axis=axis,
                   parent_frame=joint.child_frame, child_frame=joint.parent_frame)


def build_tree(model: CompiledModel, rotor: bool = True) -> TreeModel:
    """Build the tree-only Pinocchio model.

    Args:
        model: compiled model.
        rotor: add reflected rotor inertia α = I_m N² of actuators to the armature.

    Raises:
        CompileError: a reversed multi-axis joint in the tree (see module docstring).
    """
    rec = model.record
    pm = pin.Model()
    pm.gravity = pin.Motion(np.array(rec.gravity, dtype=float), np.zeros(3))
    B = model.n_bodies
    # per vertex: (pinocchio joint id, T_joint_body placement of the body frame)
    host: dict[int, tuple[int, pin.SE3]] = {B: (0, pin.SE3.Identity())}
    edge_joint = np.full(len(model.kinds), -1, dtype=np.int64)
    q_perm: list[int] = []
    v_perm: list[int] = []
    body_frame = np.full(B, -1, dtype=np.int64)
    for k in model.tree_edges:
        j = tree_joint(model, k)
        up, down = (int(model.parent[k]), int(model.child[k])) if model.sign[k] > 0 else (
            int(model.child[k]), int(model.parent[k]))
        parent_joint, T_j_up = host[up]
        kind = joint_kind(j)
        if kind.nv == 0:
            X = sp.se3_from_pose(j.parent_frame) * sp.se3_from_pose(j.child_frame).inverse()
            host[down] = (parent_joint, T_j_up * X)
        else:
            placement, frame_in_child = pinocchio_placements(j)
            jid = pm.addJoint(parent_joint, kind.pinocchio_model(), T_j_up * placement,
                              model.edge_names[k])
            host[down] = (jid, frame_in_child.inverse())
            edge_joint[k] = jid
            qs, vs = model.q_slice(k), model.v_slice(k)
            q_perm += [qs.start + i for i in (kind._q_pin or range(kind.nq))]
            v_perm += [vs.start + i for i in (kind._v_pin or range(kind.nv))]
        body = rec.bodies[down]
        jid, T = host[down]
        inertia = pin.Inertia(body.mass, np.array(body.com), inertia_tensor(body.inertia))
        pm.appendBodyToJoint(jid, T.act(inertia), pin.SE3.Identity())
        body_frame[down] = pm.addFrame(pin.Frame(body.name, jid, T, pin.FrameType.BODY))
    pm.armature = np.zeros(pm.nv)
    armature = _armature(model, rotor)
    for k, a in armature.items():
        idx = pm.joints[int(edge_joint[k])].idx_v
        pm.armature[idx] += a
    return TreeModel(pm, body_frame, np.array(q_perm, dtype=np.int64),
                     np.array(v_perm, dtype=np.int64), edge_joint)


def inertia_tensor(i6: tuple[float, ...]) -> np.ndarray:
    """``[ixx iyy izz ixy ixz iyz]`` → symmetric (3, 3) inertia tensor."""
    ixx, iyy, izz, ixy, ixz, iyz = i6
    return np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]], dtype=float)


def _armature(model: CompiledModel, rotor: bool) -> dict[int, float]:
    """Armature per 1-coordinate tree edge: joint armature plus reflected rotor inertia."""
    out: dict[int, float] = {}
    for j in model.record.joints:
        if j.armature:
            out[model.edge(j.name)] = out.get(model.edge(j.name), 0.0) + j.armature
    if rotor:
        for a in model.record.actuators:
            if a.joint is None:  # a tendon port carries no rotor inertia (schema)
                continue
            k = model.edge(a.joint)
            out[k] = out.get(k, 0.0) + a.rotor_inertia * a.transmission.reduction ** 2
    chords = set(model.chord_edges)
    bad = [model.edge_names[k] for k in out if k in chords and out[k]]
    if bad:
        raise CompileError(f"{model.record.source}: armature or rotor inertia on cut joint(s) "
                           f"{', '.join(bad)}: cut coordinates carry no mass")
    return out

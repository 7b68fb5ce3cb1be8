"""Exact MuJoCo equivalents of joint chains through massless bodies (for the MJCF export).

CAD exports and URDF loaders model spherical and universal joints as chains of revolute
joints through massless links. MuJoCo refuses moving bodies without inertia, and a chain of
three revolutes is singular where two of its axes align (gimbal lock), where a stepped
simulation spins it fast. Three exact rewrites, decided here and applied by
:mod:`rbc.backends.mjcf_export`:

* **Merge** (:func:`merged_bodies`): a massless intermediate body (mass and inertia zero, one
  tree child, hinge/slide-type joints on both sides, nothing attached) is dropped and its
  child's MuJoCo body carries the chain's joints — same coordinates, same mass matrix.
* **Ball** (:func:`gimbal_axes`): when the joints a body carries after merging are exactly
  three plain revolutes (no armature, damping, friction, spring, limits, actuator,
  coupling or constant effort) whose axes meet in one point and span R³, they are one
  MuJoCo ``ball`` joint about that point: the product of rotations about concurrent axes is
  a rotation about their common point, ``R = Rot(u₁, θ₁)·Rot(u₂, θ₂)·Rot(u₃, θ₃)``.
* **Connect** (:func:`cut_balls`): a cut joint at the end of a massless *leaf* chain (each
  body massless with only the next one as tree child, nothing else attached, plain revolute
  tree joints) whose joints together (revolute axes, or a spherical cut's centre) meet in one
  point and span all rotations is a ball between the chain's base body and the cut joint's
  other body: one ``connect`` at that point, the massless chain and its joints dropped (they
  carry no inertia, so the kinetic energy and the reduced dynamics are unchanged).

Concurrency is decided at the partition's reference configuration (for a chain it holds at
every configuration: each pair of successive axes meets in the body they share); the
tolerance is :data:`CONCURRENCY_RTOL` of the length scale.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from rbc.ir.joints import joint_kind
from rbc.ir.record import JointEffort, SpringForce
from rbc.model.compiled import CompiledModel
from rbc.model.tree import tree_joint

#: Axes meet when every axis line passes within this fraction of the length scale of their
#: least-squares common point: CAD exports write the joint origins to ~1e-16 m, an
#: intentional offset (a Cardan cross with offset pins) is ≥ 1e-4 of the link length.
CONCURRENCY_RTOL = 1e-9
#: Three axes span R³ when the smallest singular value of [u₁ u₂ u₃] exceeds this (a
#: gimbal at its reference pose is far from lock; exactly parallel axes give 0).
SPAN_TOL = 1e-6
#: Joint types whose MuJoCo joints are hinges and slides only (they can share a body).
HINGE_SLIDE = ("revolute", "prismatic", "universal", "cylindrical", "planar")


def _up_down(model: CompiledModel, k: int) -> tuple[int, int]:
    return ((int(model.parent[k]), int(model.child[k])) if model.sign[k] > 0
            else (int(model.child[k]), int(model.parent[k])))


def _massless(model: CompiledModel, v: int) -> bool:
    b = model.record.bodies[v] if v < model.n_bodies else None
    return (b is not None and b.kind == "ordinary" and b.mass == 0.0 and not any(b.inertia)
            and not b.geometry)


def loaded(model: CompiledModel) -> set[int]:
    """Bodies that carry a point of the record: tasks, supports, spring-damper and
    distance-port attachment points (these bodies must keep their own MuJoCo body)."""
    idx = model.record.body_index()
    out = {idx[t.body] for t in (*model.record.tasks, *model.record.supports)}
    for f in model.record.forces:
        if isinstance(f, SpringForce):
            out |= {idx[f.a.body], idx[f.b.body]}
    for a in model.record.actuators:
        if a.distance is not None:
            out |= {idx[e.body] for e in a.distance}
    return out


def driven(model: CompiledModel, k: int) -> bool:
    """An actuator's port reads edge k (a joint, tendon or profile port on its joint)."""
    name = model.edge_names[k]
    return any(name in a.port_joints for a in model.record.actuators)


def attached(model: CompiledModel) -> set[int]:
    """Bodies something is attached to: cut joints and the :func:`loaded` bodies."""
    out = {int(model.parent[k]) for k in model.chord_edges}
    out |= {int(model.child[k]) for k in model.chord_edges}
    return out | loaded(model)


def tree_children(model: CompiledModel) -> dict[int, list[int]]:
    """Per vertex its child tree edges."""
    out: dict[int, list[int]] = {}
    for k in model.tree_edges:
        out.setdefault(_up_down(model, k)[0], []).append(k)
    return out


def plain_revolute(model: CompiledModel, k: int) -> bool:
    """A revolute edge with no joint data (armature, damping, friction, spring, finite
    limits), no actuator, coupling or constant effort: only its geometry matters."""
    if k >= len(model.record.joints):
        return False
    j = model.record.joints[k]
    rec = model.record
    return (j.type == "revolute" and not (j.armature or j.damping or j.friction
                                          or j.spring.stiffness)
            and not any(np.isfinite(x) for x in (*j.lower, *j.upper))
            and not any(j.name in a.port_joints for a in rec.actuators)
            and not any(j.name in c.joints for c in rec.couplings)
            and not any(isinstance(f, JointEffort) and f.joint == j.name for f in rec.forces))


def merged_bodies(model: CompiledModel, dropped: frozenset[int] = frozenset()
                  ) -> frozenset[int]:
    """Massless intermediate bodies merged into their tree child (module docstring)."""
    children = tree_children(model)
    busy = attached(model) | set(dropped)
    out = set()
    for v in range(model.n_bodies):
        kids = children.get(v, [])
        if not _massless(model, v) or v in busy or len(kids) != 1:
            continue
        up_edge = int(model.parent_edge[v])
        if up_edge >= 0 and all(tree_joint(model, e).type in HINGE_SLIDE
                                for e in (up_edge, kids[0])):
            out.add(v)
    return frozenset(out)


def concurrent_point(points: np.ndarray, axes: np.ndarray, scale: float
                     ) -> np.ndarray | None:
    """The common point of lines ``points[i] + s·axes[i]`` (unit axes, (n, 3)) when they meet
    within ``CONCURRENCY_RTOL·scale`` and their axes span R³; else None."""
    if len(axes) < 3 or np.linalg.svd(axes.T, compute_uv=False)[-1] < SPAN_TOL:
        return None
    P = [np.eye(3) - np.outer(a, a) for a in axes]
    p = np.linalg.solve(sum(P), sum(Pi @ c for Pi, c in zip(P, points, strict=True)))
    dist = max(float(np.linalg.norm(Pi @ (p - c))) for Pi, c in zip(P, points, strict=True))
    return p if dist <= CONCURRENCY_RTOL * max(scale, 1e-300) else None


def gimbal_axes(model: CompiledModel, chain: list[int], joints: list, frames: list[pin.SE3],
                scale: float) -> tuple[np.ndarray, np.ndarray] | None:
    """``(centre (3,), axes (3, 3) as rows)`` in the carrying body's frame at q = 0 when a
    body's chain of joints (as the tree traverses them, with their frames C) is a gimbal of
    three plain concurrent revolutes, else None (module docstring)."""
    if len(chain) != 3 or not all(plain_revolute(model, e) for e in chain):
        return None
    axes = np.array([C.rotation @ np.asarray(joint_kind(j).axis)
                     for j, C in zip(joints, frames, strict=True)])
    p = concurrent_point(np.array([C.translation for C in frames]), axes, scale)
    return None if p is None else (p, axes)


@dataclass(frozen=True, eq=False)
class CutBall:
    """A cut joint exported as one ``connect`` (module docstring).

    Attributes:
        chord: the cut edge; base: the chain's base vertex (not dropped); other: the cut
        joint's other body; at_base, at_other: the ball centre in each body's frame (site
        poses); bodies: the dropped massless bodies; edges: their dropped tree edges.
    """

    chord: int
    base: int
    other: int
    at_base: pin.SE3
    at_other: pin.SE3
    bodies: frozenset[int]
    edges: tuple[int, ...]


def cut_balls(model: CompiledModel, q: np.ndarray, scale: float) -> dict[int, CutBall]:
    """Cut joints at the end of massless leaf chains that are exact balls (module docstring),
    by chord edge; decided at configuration q."""
    from rbc.model.kinematics import frame_jacobian

    children = tree_children(model)
    ends: dict[int, int] = {}
    for k in model.chord_edges:
        for v in (int(model.parent[k]), int(model.child[k])):
            ends[v] = ends.get(v, 0) + 1
    busy = loaded(model)
    out: dict[int, CutBall] = {}
    used: set[int] = set()

    def world(v: int) -> pin.SE3:
        if v >= model.n_bodies:
            return pin.SE3.Identity()
        return frame_jacobian(model, q, v, pin.SE3.Identity())[0]

    for k in model.chord_edges:
        if model.edge_types[k] not in ("revolute", "spherical") or driven(model, k):
            continue
        for leaf, other in ((int(model.parent[k]), int(model.child[k])),
                            (int(model.child[k]), int(model.parent[k]))):
            chain, v = [], leaf
            while (v < model.n_bodies and _massless(model, v) and v not in used
                   and len(children.get(v, [])) == (0 if v == leaf else 1)
                   and v not in busy and ends.get(v, 0) == (1 if v == leaf else 0)):
                e = int(model.parent_edge[v])
                if e < 0 or model.sign[e] < 0 or not plain_revolute(model, e):
                    break
                chain.append(e)
                v = _up_down(model, e)[0]
            if not chain:
                continue
            base = v
            lines = [(world(int(model.parent[e])) * model.A[e], model.kinds[e].axis)
                     for e in chain]
            T_cut = world(int(model.parent[k])) * model.A[k]
            if model.edge_types[k] == "revolute":
                lines.append((T_cut, model.kinds[k].axis))
                p = concurrent_point(np.array([T.translation for T, _ in lines]),
                                     np.array([T.rotation @ np.asarray(a) for T, a in lines]),
                                     scale)
            else:  # a spherical cut: the revolute axes must pass through its centre
                pts = np.array([T.translation for T, _ in lines] + [T_cut.translation])
                axes = np.array([T.rotation @ np.asarray(a) for T, a in lines] + [
                    np.eye(3)[i] for i in range(3)])
                p = concurrent_point(pts, axes, scale)
                p = p if p is not None and np.linalg.norm(p - T_cut.translation) <= \
                    CONCURRENCY_RTOL * max(scale, 1e-300) else None
            if p is None:
                continue
            site = pin.SE3(np.eye(3), p)
            bodies = frozenset(_up_down(model, e)[1] for e in chain)
            out[k] = CutBall(k, base, other, world(base).inverse() * site,
                             world(other).inverse() * site, bodies, tuple(reversed(chain)))
            used |= bodies
            break
    return out


__all__ = ["CONCURRENCY_RTOL", "CutBall", "HINGE_SLIDE", "SPAN_TOL", "attached", "driven", "loaded",
           "concurrent_point", "cut_balls", "gimbal_axes", "merged_bodies", "plain_revolute",
           "tree_children"]

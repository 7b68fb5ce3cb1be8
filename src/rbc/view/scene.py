"""The scene of ``rbc view``: a compiled mechanism as plain data a browser can draw.

:func:`build_scene` turns a :class:`~rbc.model.compiled.CompiledModel` and a sequence of
configurations into a JSON-ready dict (SI units, world frame, z up):

- ``bodies``: per record body its shapes in body coordinates — the record's geometry
  (box, sphere, capsule, cylinder; meshes are never opened) or, where a body has none, a
  stick figure: a rod from the centre of mass to each joint attachment point on the body;
- ``joints``: per record joint the body it is drawn on (its parent; ``-1`` the world), the
  joint origin and axis in that body's frame, and whether the spanning tree cut it;
- ``chords``: per cut joint the names of the tree joints of its closure path (the ordered
  factors of docs/kinematics.md), for highlighting;
- ``supports`` and ``tasks``: frames on bodies (position + quaternion ``(w, x, y, z)``),
  with a support's ``half_extents``;
- ``frames``: ``time`` (F,) [s] and ``pose`` (F, B, 7): the world pose of every body at
  every frame as ``[x, y, z, w, qx, qy, qz]`` (positions [m], unit quaternions).

World poses come from Pinocchio's forward kinematics of the tree model
(:func:`rbc.model.tree.build_tree`), so what is drawn is what the compiled model computes.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pinocchio as pin

from rbc.ir import spatial as sp
from rbc.ir.record import Geometry, Pose
from rbc.model.compiled import CompiledModel
from rbc.model.tree import TreeModel, build_tree

#: Largest number of frames a scene carries; longer motions are sampled evenly.
MAX_FRAMES = 600


def _pose_json(pose: Pose) -> dict[str, list[float]]:
    return {"pos": [float(x) for x in pose.xyz], "quat": [float(x) for x in pose.quat]}


def _shape(g: Geometry) -> dict | None:
    """One record geometry as a drawable shape (None for meshes, which are never read)."""
    p = dict(g.params)
    if g.type == "mesh":
        return None
    T = sp.se3_from_pose(g.pose)
    if g.type in ("capsule", "cylinder") and "fromto" in p:
        ft = np.asarray(p["fromto"], dtype=float)
        return {"type": g.type, "radius": float(p["radius"]),
                "from": T.act(ft[:3]).tolist(), "to": T.act(ft[3:]).tolist()}
    if g.type in ("capsule", "cylinder"):  # a length along the geometry's z axis
        half = 0.5 * float(p["length"])
        return {"type": g.type, "radius": float(p["radius"]),
                "from": T.act(np.array([0.0, 0.0, -half])).tolist(),
                "to": T.act(np.array([0.0, 0.0, half])).tolist()}
    shape = {"type": g.type, **_pose_json(g.pose)}
    if g.type == "box":
        shape["half_extents"] = [float(x) for x in p["half_extents"]]
    else:
        shape["radius"] = float(p["radius"])
    return shape


def model_scale(model: CompiledModel) -> float:
    """A characteristic body size [m]: the median over bodies of the largest extent of
    their joint attachment points and centre of mass (1 m when no body has two points).
    Marker and rod sizes of the drawing are fractions of it."""
    pts = _attachments(model)
    ext = [float(np.ptp(np.asarray(v), axis=0).max()) for v in pts.values() if len(v) > 1]
    ext = [e for e in ext if e > 0]
    return float(np.median(ext)) if ext else 1.0


def _attachments(model: CompiledModel) -> dict[int, list[list[float]]]:
    """Per body index: its centre of mass and every joint attachment point on it."""
    rec = model.record
    index = {b.name: i for i, b in enumerate(rec.bodies)}
    pts: dict[int, list[list[float]]] = {i: [list(b.com)] for i, b in enumerate(rec.bodies)}
    for j in rec.joints:
        pts[index[j.parent]].append(list(j.parent_frame.xyz))
        pts[index[j.child]].append(list(j.child_frame.xyz))
    for s in (*rec.supports, *rec.tasks):
        pts[index[s.body]].append(list(s.pose.xyz))
    return pts


def _bodies(model: CompiledModel) -> list[dict]:
    pts = _attachments(model)
    out = []
    for i, b in enumerate(model.record.bodies):
        shapes = [s for s in (_shape(g) for g in b.geometry) if s is not None]
        com = [float(x) for x in b.com]
        sticks = [] if shapes else [[com, [float(x) for x in p]] for p in pts[i][1:]
                                    if np.linalg.norm(np.subtract(p, com)) > 0]
        out.append({"name": b.name, "kind": b.kind, "mass": float(b.mass), "com": com,
                    "shapes": shapes, "sticks": sticks})
    return out


def _joints(model: CompiledModel) -> list[dict]:
    rec = model.record
    index = {b.name: i for i, b in enumerate(rec.bodies)}
    cut = {model.edge_names[k] for k in model.chord_edges}
    out = []
    for j in rec.joints:
        A = sp.se3_from_pose(j.parent_frame)
        axes = [j.axis] if j.axis is not None else list(j.axes or ())
        out.append({"name": j.name, "type": j.type, "cut": j.name in cut,
                    "body": index[j.parent], "child": index[j.child],
                    "pos": A.translation.tolist(),
                    "axes": [(A.rotation @ np.asarray(a, dtype=float)).tolist() for a in axes]})
    return out


def _chords(model: CompiledModel) -> list[dict]:
    n_joints = len(model.record.joints)
    return [{"joint": model.edge_names[k],
             "path": [model.edge_names[e] for e, _ in path if e < n_joints]}
            for k, path in zip(model.chord_edges, model.paths, strict=True)]


def _frames_on_bodies(model: CompiledModel, items: Sequence) -> list[dict]:
    index = {b.name: i for i, b in enumerate(model.record.bodies)}
    out = []
    for s in items:
        entry = {"name": s.name, "body": index[s.body], **_pose_json(s.pose)}
        if getattr(s, "half_extents", None):
            entry["half_extents"] = [float(x) for x in s.half_extents]
        if getattr(s, "kind", None):
            entry["kind"] = s.kind
        out.append(entry)
    return out


def body_poses(tree: TreeModel, q: np.ndarray) -> np.ndarray:
    """World poses (B, 7) ``[x, y, z, w, qx, qy, qz]`` of every record body at rbc q (nq,)."""
    data = tree.model.createData()
    pin.framesForwardKinematics(tree.model, data, tree.q_pin(q))
    out = np.empty((tree.body_frame.size, 7))
    for b, fid in enumerate(tree.body_frame):
        M = data.oMf[int(fid)]
        out[b, :3] = M.translation
        out[b, 3:] = sp.quat_from_rotation(M.rotation)
    return out


def sample_frames(times: np.ndarray, limit: int = MAX_FRAMES) -> np.ndarray:
    """Indices of at most ``limit`` samples spread evenly over ``times`` (first and last
    always included)."""
    n = len(times)
    if n <= limit:
        return np.arange(n)
    return np.unique(np.round(np.linspace(0, n - 1, limit)).astype(np.int64))


def build_scene(model: CompiledModel, qs: np.ndarray, times: np.ndarray | None = None,
                poses: np.ndarray | None = None, title: str = "") -> dict:
    """The scene dict (module docstring) of ``model`` moving through configurations.

    Args:
        model: the compiled mechanism.
        qs: (F, nq) rbc configurations, one per frame (F ≥ 1); ignored where ``poses``
            is given.
        times: (F,) frame times [s] (default: 0, 1, …).
        poses: (F, B, 7) world body poses to draw instead of computing them from ``qs``
            (a simulation log's ``bodies/pose``).
        title: shown in the page header (default: the record's name).

    Raises:
        ValueError: ``qs``/``poses`` and ``times`` disagree in length, or a pose array has
            the wrong shape.
    """
    B = len(model.record.bodies)
    if poses is None:
        qs = np.atleast_2d(np.asarray(qs, dtype=float))
        tree = build_tree(model)
        poses = np.stack([body_poses(tree, q) for q in qs])
    poses = np.asarray(poses, dtype=float)
    if poses.ndim != 3 or poses.shape[1:] != (B, 7):
        raise ValueError(f"body poses must have shape (F, {B}, 7), not {poses.shape}")
    times = np.arange(len(poses), dtype=float) if times is None else np.asarray(times, float)
    if times.shape != (len(poses),):
        raise ValueError(f"{len(times)} times for {len(poses)} frames")
    keep = sample_frames(times)
    return {
        "title": title or model.record.name,
        "scale": model_scale(model),
        "bodies": _bodies(model),
        "joints": _joints(model),
        "chords": _chords(model),
        "supports": _frames_on_bodies(model, model.record.supports),
        "tasks": _frames_on_bodies(model, model.record.tasks),
        "frames": {"time": times[keep].tolist(), "pose": np.round(poses[keep], 9).tolist()},
    }

"""Edits of a record document (the parsed YAML mapping) that keep it a valid record: the
variants of the representation-invariance sweeps (``table3-variants``: Stewart, excavator,
Go2). Each returns a new document; the input is not changed."""

from __future__ import annotations

import copy

import numpy as np

from rbc.model.tree import inertia_tensor


def frame_pose(entry: dict | None):
    """``pin.SE3`` of a record frame ``{xyz, rpy | quat}``."""
    import pinocchio as pin

    from rbc.ir import spatial as sp

    entry = entry or {}
    R = np.eye(3)
    if "quat" in entry:
        R = sp.rotation_from_quat(np.asarray(entry["quat"], dtype=float))
    elif "rpy" in entry:
        R = sp.rotation_from_rpy(np.asarray(entry["rpy"], dtype=float))
    return pin.SE3(R, np.asarray(entry.get("xyz", [0, 0, 0]), dtype=float))


def frame_entry(T) -> dict:
    """The record frame document ``{xyz, quat}`` of a ``pin.SE3`` (identity parts omitted)."""
    from rbc.ir import spatial as sp
    from rbc.ir.render import pose_document

    return pose_document(sp.pose_from_se3(T))


def _i6(J: np.ndarray) -> list[float]:
    """The record's ``[ixx iyy izz ixy ixz iyz]`` of a (3, 3) tensor (inverse of
    :func:`rbc.model.tree.inertia_tensor`)."""
    return [float(J[0, 0]), float(J[1, 1]), float(J[2, 2]), float(J[0, 1]), float(J[0, 2]),
            float(J[1, 2])]


def reexpress(doc: dict, body: str, xyz, rpy) -> dict:
    """The same physics with ``body``'s frame moved by ``T = (rpy, xyz)`` (new frame = old ·
    T): its COM, inertia, the joint frames attached to it, its tasks, supports, geometry and
    named frames are rewritten in the new frame; joint ``initial`` values are unchanged
    (X = A Q B⁻¹ keeps Q). A floating body's free-root pose refers to the new frame.
    """
    import pinocchio as pin

    from rbc.ir import spatial as sp

    T = pin.SE3(sp.rotation_from_rpy(np.asarray(rpy, dtype=float)),
                np.asarray(xyz, dtype=float))
    Ti = T.inverse()
    out = copy.deepcopy(doc)
    for b in out["bodies"]:
        if b["name"] != body:
            continue
        R = T.rotation
        b["com"] = [float(x) for x in Ti.act(np.asarray(b.get("com", [0, 0, 0]), float))]
        b["inertia"] = _i6(R.T @ inertia_tensor(b["inertia"]) @ R)
    for j in out["joints"]:
        for side, key in (("parent", "parent_frame"), ("child", "child_frame")):
            if j[side] == body:
                j[key] = frame_entry(Ti * frame_pose(j.get(key)))
    for key in ("tasks", "supports"):
        for t in out.get(key, []):
            if t["body"] == body:
                _move(t, Ti)
    for b in out["bodies"]:
        if b["name"] == body:
            for g in b.get("geometry", []):
                _move(g, Ti)
            for frame in b.get("frames", {}).values():
                _move(frame, Ti)
    return out


def _move(entry: dict, Ti) -> None:
    """Rewrite ``entry``'s pose keys (xyz, rpy | quat) as ``Ti · pose`` in place."""
    pose = frame_pose({k: entry.pop(k) for k in ("xyz", "rpy", "quat") if k in entry})
    entry.update(frame_entry(Ti * pose))


def edit_bodies(doc: dict, fn) -> dict:
    out = copy.deepcopy(doc)
    for b in out["bodies"]:
        fn(b)
    return out



def turned_inertia(b: dict, prefix: str, factor: float, rpy) -> None:
    """Bodies named ``prefix…``: inertia ``factor · R I Rᵀ`` (principal axes turned by
    ``rpy``, products appear; a uniform scale and a rotation keep the triangle inequality)."""
    from rbc.ir import spatial as sp

    if b["name"].startswith(prefix):
        R = sp.rotation_from_rpy(np.asarray(rpy, dtype=float))
        b["inertia"] = _i6(factor * R @ inertia_tensor(b["inertia"]) @ R.T)


def added_mass(name: str, mass: float = 0.0, com=None) -> callable:
    """An edit adding ``mass`` [kg] to body ``name`` (its COM moved to ``com`` when given)."""
    def edit(b: dict) -> None:
        if b["name"] == name:
            b["inertia"] = [float(x) * (b["mass"] + mass) / b["mass"] for x in b["inertia"]]
            b["mass"] = float(b["mass"]) + mass
            if com is not None:
                b["com"] = com
    return edit


def shift_joint_frames(doc: dict, names, seed: int, amplitude: float) -> dict:
    """Parent frames of the joints ``names`` moved by seeded offsets within ±amplitude [m]
    in the joint plane (x, z: the excavator's front joints turn about y)."""
    rng = np.random.default_rng(seed)
    out = copy.deepcopy(doc)
    for j in out["joints"]:
        if j["name"] in names:
            frame = j.setdefault("parent_frame", {"xyz": [0, 0, 0]})
            xyz = np.asarray(frame.get("xyz", [0, 0, 0]), dtype=float)
            xyz[[0, 2]] += rng.uniform(-amplitude, amplitude, 2)
            frame["xyz"] = [float(x) for x in xyz]
    return out


def shuffled(doc: dict, seed: int | None) -> dict:
    """Bodies and joints reversed (seed None) or shuffled by a seeded permutation."""
    out = copy.deepcopy(doc)
    for key in ("bodies", "joints"):
        items = out[key]
        order = (list(range(len(items)))[::-1] if seed is None
                 else np.random.default_rng(seed).permutation(len(items)).tolist())
        out[key] = [items[i] for i in order]
    return out


def actuators_reversed(doc: dict) -> dict:
    out = copy.deepcopy(doc)
    out["actuators"] = out["actuators"][::-1]
    return out



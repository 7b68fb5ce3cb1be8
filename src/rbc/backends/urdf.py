"""URDF (+ loop-closure sidecar) → physical record (``rbc import urdf``).

Source: the URDF specification (wiki.ros.org/urdf/XML: ``link``, ``joint``, ``inertial``,
``mimic``, ``transmission``) and, for loops, the sidecar format of the Gepetto
closed-loop examples (``robot.yaml``: ``closed_loop`` pairs of frame names, ``type`` per
pair ``3d``/``6d``, ``name_mot`` the actuated joints, and ``joint_name``/``joint_type``,
the joint conversions of the Gepetto loader ``completeRobotLoader``). The mapping
(docs/import.md):

* **Links** → bodies. ``<inertial>``: ``com = origin.xyz`` and the inertia
  ``R(rpy) · I · R(rpy)ᵀ`` in link axes. A link without ``<inertial>`` is massless.
* **Joints** → record joints with ``parent_frame = origin`` (``T_parent_joint``) and
  ``child_frame`` identity (URDF puts the child link frame at the joint frame);
  ``revolute``/``continuous`` → revolute (continuous: no limits), ``prismatic``,
  ``fixed``, ``planar`` (normal +z only), ``floating`` → the child becomes a
  ``floating: true`` body when the parent is a massless root link (which is then dropped),
  else a ``free`` joint. ``dynamics damping/friction`` are kept; ``mimic`` → a linear
  coupling ``child − multiplier·parent − offset = 0``.
* **Root**: the link that is no joint's child; ``fixed: true``, or ``floating: true`` with
  ``floating=True`` (the ``--floating`` option).
* **Loops**: each sidecar pair ``[A, B]`` names two frames (a link, or a joint whose frame
  is its child link's frame); ``6d`` → a ``fixed`` joint A → B, ``3d`` → a ``spherical``
  joint, both with identity attachment frames (the frames coincide when the loop is
  closed, as in Pinocchio's rigid constraints). ``name_mot`` joints get direct-drive
  actuators with effort and speed limits from their ``<limit>``.
* **Joint conversions** (``joint_name[i]`` gets ``joint_type[i]``): the named URDF joint is
  replaced, at its own origin and with its parent and child, by ``SPHERICAL`` → a spherical
  joint; ``FIXED`` → a fixed joint at the URDF zero; ``UJOINT_AB`` (A ≠ B ∈ {X, Y, Z}) →
  a universal joint ``Q = Rot(e_A, θ1)·Rot(e_B, θ2)`` in the joint frame (the loader's two
  revolute joints ``name_A`` then ``name_B`` through an identity placement). The URDF
  axis and limits of a converted joint are not used.
* **Actuators without a sidecar**: ``<transmission>`` elements (joint + optional
  ``mechanicalReduction``).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pinocchio as pin

from rbc.backends.record_writer import (
    ImportResult,
    ModelImportError,
    floats,
    guess_inside_limits,
    mass_entry,
    numbers,
    pose_dict,
    read_xml,
    rotate_inertia,
    se3,
    tensor_from_six,
)
from rbc.errors import InputError
from rbc.ir import spatial
from rbc.safeio import load_yaml, read_text

_JOINT_TYPES = ("revolute", "continuous", "prismatic", "fixed", "floating", "planar")
_LOOP_TYPES = {"6d": "fixed", "3d": "spherical"}
_SIDECAR_KEYS = ("closed_loop", "type", "name_mot", "joint_name", "joint_type")
_AXES = {"X": (1.0, 0.0, 0.0), "Y": (0.0, 1.0, 0.0), "Z": (0.0, 0.0, 1.0)}
#: The sidecar's joint conversions (Gepetto ``completeRobotLoader``): every ``UJOINT_AB``
#: with two different axes, ``SPHERICAL`` and ``FIXED``.
JOINT_CONVERSIONS = ("SPHERICAL", "FIXED", *(f"UJOINT_{a}{b}" for a in "XYZ" for b in "XYZ"
                                             if a != b))
#: URDF joint types a sidecar conversion may replace (joints with one coordinate).
_CONVERTIBLE = ("revolute", "continuous", "prismatic")


def _where(el) -> str:
    return f"line {el.sourceline} ({el.getroottree().getpath(el)})"


def _origin(file: Path, el):
    """``T_parent_child`` of an ``<origin xyz rpy>`` child of ``el`` (identity if absent)."""
    o = el.find("origin")
    if o is None:
        return se3()
    xyz = numbers(file, o, "xyz", 3, [0.0, 0.0, 0.0])
    rpy = numbers(file, o, "rpy", 3, [0.0, 0.0, 0.0])
    return se3(spatial.rotation_from_rpy(np.array(rpy)), xyz)


def _scalar(file: Path, el, attr: str, default: float | None = None) -> float | None:
    v = numbers(file, el, attr, 1)
    return default if v is None else v[0]


def _required(file: Path, parent, tag: str):
    el = parent.find(tag)
    if el is None:
        raise ModelImportError(file, _where(parent), f"<{parent.tag} name='{parent.get('name')}'>"
                               f" has no <{tag}>")
    return el


def _link_entry(file: Path, link, repair: bool, warnings: list[str]) -> dict:
    entry: dict = {"name": link.get("name")}
    inertial = link.find("inertial")
    if inertial is None:
        return entry
    mass = _scalar(file, _required(file, inertial, "mass"), "value")
    if mass is None:
        raise ModelImportError(file, _where(inertial), "<mass> has no 'value'")
    ie = _required(file, inertial, "inertia")
    six = [_scalar(file, ie, k, 0.0) for k in ("ixx", "iyy", "izz", "ixy", "ixz", "iyz")]
    T = _origin(file, inertial)
    tensor = rotate_inertia(T.rotation, tensor_from_six(six))
    entry.update(mass_entry(file, _where(inertial), link.get("name"), mass, T.translation,
                            tensor, repair, warnings))
    return entry


def read_sidecar(path: str | Path) -> dict:
    """Read and check a loops sidecar (Gepetto ``robot.yaml`` format).

    Returns:
        ``{"closed_loop": [[A, B], …], "type": ["6d"|"3d", …], "name_mot": [joint, …],
        "convert": {joint: conversion}}`` (``convert`` from ``joint_name``/``joint_type``).

    Raises:
        ModelImportError: missing file, YAML error, unknown keys, wrong shapes, an unknown
            loop type or joint conversion, ``type`` and ``closed_loop`` (or ``joint_name``
            and ``joint_type``) of different lengths, a joint converted twice.
    """
    p = Path(path)
    try:
        data = load_yaml(read_text(p, "sidecar"), p, error=ModelImportError) or {}
    except InputError as err:
        raise ModelImportError(p, "", err.problem, expected=err.expected) from None
    if not isinstance(data, dict):
        raise ModelImportError(p, "", "expected a mapping with keys " + ", ".join(_SIDECAR_KEYS))
    for key in data:
        if key not in _SIDECAR_KEYS:
            raise ModelImportError(p, str(key), f"unknown key '{key}'", choices=_SIDECAR_KEYS,
                                   got=str(key))
    loops = data.get("closed_loop") or []
    types = data.get("type") or []
    mots = data.get("name_mot") or []
    for key, value in (("closed_loop", loops), ("type", types), ("name_mot", mots)):
        if not isinstance(value, list):
            raise ModelImportError(p, key, f"expected a list, got {type(value).__name__}")
    if not all(isinstance(x, list) and len(x) == 2 and all(isinstance(n, str) for n in x)
               for x in loops):
        raise ModelImportError(p, "closed_loop", "expected a list of [frame, frame] pairs")
    if len(types) != len(loops):
        raise ModelImportError(p, "type", f"{len(types)} types for {len(loops)} closed loops")
    for i, t in enumerate(types):
        if not isinstance(t, str) or t not in _LOOP_TYPES:
            raise ModelImportError(p, f"type[{i}]", f"unknown loop type '{t}'",
                                   choices=tuple(_LOOP_TYPES), got=str(t))
    if not all(isinstance(m, str) for m in mots):
        raise ModelImportError(p, "name_mot", "expected a list of joint names")
    return {"closed_loop": loops, "type": types, "name_mot": mots,
            "convert": _conversions(p, data.get("joint_name") or [],
                                    data.get("joint_type") or [])}


def _conversions(p: Path, names, kinds) -> dict[str, str]:
    """``{joint: conversion}`` from the sidecar's ``joint_name``/``joint_type`` lists."""
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise ModelImportError(p, "joint_name", "expected a list of joint names")
    if not isinstance(kinds, list) or len(kinds) != len(names):
        raise ModelImportError(p, "joint_type", f"expected one joint type per joint_name "
                               f"entry ({len(names)})")
    out: dict[str, str] = {}
    for i, (n, k) in enumerate(zip(names, kinds, strict=True)):
        if k not in JOINT_CONVERSIONS:
            raise ModelImportError(p, f"joint_type[{i}]", f"unknown joint type '{k}'",
                                   choices=JOINT_CONVERSIONS, got=str(k))
        if n in out:
            raise ModelImportError(p, f"joint_name[{i}]", f"joint '{n}' is converted twice")
        out[n] = k
    return out


def import_urdf(path: str | Path, loops: str | Path | None = None, *, floating: bool = False,
                repair_inertia: bool = False) -> ImportResult:
    """Read a URDF (and optionally a loops sidecar) and build the physical record.

    Args:
        path: the URDF file.
        loops: optional sidecar (``closed_loop``, ``type``, ``name_mot``).
        floating: make the root link ``floating: true`` (default ``fixed: true``).
        repair_inertia: apply the documented inertia repair instead of failing.

    Returns:
        The record dict (SI, rad, wxyz), header lines and warnings.

    Raises:
        ModelImportError: malformed XML (with line), unknown joint types, references to
            missing links or joints, several roots or a cycle in the URDF tree, an invalid
            sidecar, an invalid inertia without ``repair_inertia``.
    """
    file = Path(path)
    root = read_xml(file, "robot")
    warnings: list[str] = []
    links = root.findall("link")
    link_names = [lk.get("name") for lk in links]
    if not links:
        raise ModelImportError(file, _where(root), "the robot has no <link>")
    if len(set(link_names)) != len(link_names) or None in link_names:
        raise ModelImportError(file, _where(root), "link names must be present and unique")
    joints = root.findall("joint")
    jnames = [j.get("name") for j in joints]
    if len(set(jnames)) != len(jnames) or None in jnames:
        raise ModelImportError(file, _where(root), "joint names must be present and unique")
    by_joint = {j.get("name"): j for j in joints}
    child_of: dict[str, str] = {}
    for j in joints:
        kind = j.get("type")
        if kind not in _JOINT_TYPES:
            raise ModelImportError(file, _where(j), f"unsupported joint type '{kind}'",
                                   choices=_JOINT_TYPES, got=str(kind))
        for end in ("parent", "child"):
            el = _required(file, j, end)
            if el.get("link") not in link_names:
                raise ModelImportError(file, _where(el), f"unknown link '{el.get('link')}'",
                                       choices=link_names, got=str(el.get("link")))
        c = j.find("child").get("link")
        if c in child_of:
            raise ModelImportError(file, _where(j), f"link '{c}' is the child of two joints")
        child_of[c] = j.get("name")
    roots = [n for n in link_names if n not in child_of]
    if len(roots) != 1:
        raise ModelImportError(file, _where(root), f"expected one root link, found {roots}"
                               if roots else "the joints form a cycle (no root link)")
    entries = {lk.get("name"): _link_entry(file, lk, repair_inertia, warnings) for lk in links}
    entries[roots[0]]["floating" if floating else "fixed"] = True

    record_joints: list[dict] = []
    couplings: list[dict] = []
    dropped_links: set[str] = set()
    for j in joints:
        entry = _joint_entry(file, j, by_joint, entries, roots[0], couplings, dropped_links)
        if entry is not None:
            record_joints.append(entry)
    shapes = sum(1 for lk in links for _ in (*lk.findall("visual"), *lk.findall("collision")))
    if shapes:
        warnings.append(f"{shapes} visual/collision elements (meshes, package:// URIs) are "
                        "not imported (dropped)")

    actuators: list[dict] = []
    header_loops = "none"
    if loops is not None:
        side = read_sidecar(loops)
        _convert_joints(Path(loops), side, record_joints, by_joint)
        loop_joints = _loop_joints(Path(loops), side, link_names, by_joint)
        if loop_joints:
            _closed_initials(root, file, side, record_joints, warnings)
        record_joints += loop_joints
        actuators = [_actuator(Path(loops), m, by_joint, file) for m in side["name_mot"]]
        header_loops = f"{len(side['closed_loop'])} from {loops}"
    else:
        actuators = _transmissions(file, root, by_joint)
    record: dict = {"rbc": 1, "name": root.get("name", file.stem),
                    "bodies": [e for n, e in entries.items() if n not in dropped_links],
                    "joints": record_joints}
    if actuators:
        record["actuators"] = actuators
    if couplings:
        record["couplings"] = couplings
    header = [f"Imported by `rbc import urdf` from {file}",
              f"URDF robot '{root.get('name')}'; root link '{roots[0]}' "
              f"{'floating' if floating else 'fixed'}; loop closures: {header_loops}.",
              "Dropped: visual/collision geometry (meshes), materials, gazebo tags, "
              "safety controllers, calibration."]
    return ImportResult(record, header, warnings)


def _joint_entry(file: Path, j, by_joint, entries: dict, root: str, couplings: list[dict],
                 dropped: set[str]) -> dict | None:
    name, kind = j.get("name"), j.get("type")
    parent, child = j.find("parent").get("link"), j.find("child").get("link")
    A = _origin(file, j)
    if kind == "floating":
        p = entries[parent]
        if parent == root and "mass" not in p and sum(
                1 for o in by_joint.values() if o.find("parent").get("link") == parent) == 1:
            dropped.add(parent)
            entries[child]["floating"] = True
            return None
        return {"name": name, "type": "free", "parent": parent, "child": child,
                **({"parent_frame": pose_dict(A)} if pose_dict(A) else {})}
    entry: dict = {"name": name, "type": "revolute" if kind == "continuous" else kind,
                   "parent": parent, "child": child}
    if pose_dict(A):
        entry["parent_frame"] = pose_dict(A)
    if kind == "fixed":
        return entry
    ax_el = j.find("axis")
    axis = np.array(numbers(file, ax_el, "xyz", 3) if ax_el is not None else [1.0, 0.0, 0.0])
    if np.linalg.norm(axis) < 1e-12:  # no direction: the URDF is invalid
        raise ModelImportError(file, _where(j), f"joint '{name}' has a zero axis")
    axis = axis / np.linalg.norm(axis)
    if kind == "planar":
        if np.linalg.norm(axis - [0.0, 0.0, 1.0]) > 1e-12:  # the record accepts only +z
            raise ModelImportError(file, _where(j), f"planar joint '{name}': only the normal "
                                   "axis 0 0 1 is supported")
    else:
        entry["axis"] = floats(axis)
    lim = j.find("limit")
    if kind in ("revolute", "prismatic") and lim is not None:
        lo, hi = _scalar(file, lim, "lower", 0.0), _scalar(file, lim, "upper", 0.0)
        if lo > hi:
            raise ModelImportError(file, _where(lim), f"joint '{name}': limit lower {lo!r} is "
                                   f"above upper {hi!r}")
        if lo < hi:
            entry["limits"] = {"lower": lo, "upper": hi}
            guess_inside_limits(entry)
    dyn = j.find("dynamics")
    if dyn is not None:
        for key in ("damping", "friction"):
            v = _scalar(file, dyn, key, 0.0)
            if v:
                entry[key] = v
    mimic = j.find("mimic")
    if mimic is not None:
        other = mimic.get("joint")
        if other not in by_joint or other == name:
            raise ModelImportError(file, _where(mimic), f"mimic joint '{other}' is not another "
                                   "joint", choices=sorted(by_joint), got=str(other))
        mult = _scalar(file, mimic, "multiplier", 1.0)
        off = _scalar(file, mimic, "offset", 0.0)
        terms = {name: 1.0}
        if mult:
            terms[other] = -mult
        couplings.append({"name": f"{name}_mimic", "type": "linear", "terms": terms,
                          "offset": 0.0 - off})
    return entry


def _convert_joints(file: Path, side: dict, joints: list[dict], by_joint: dict) -> None:
    """Apply the sidecar's joint conversions to the record joints (in place; module
    docstring). The joint keeps its name, parent, child, ``parent_frame`` and dynamics.

    Raises:
        ModelImportError: an unknown joint (choices listed), a joint that is not
            revolute/continuous/prismatic, or a converted joint that is actuated.
    """
    entries = {e["name"]: e for e in joints}
    for i, (name, kind) in enumerate(side["convert"].items()):
        if name not in by_joint:
            raise ModelImportError(file, f"joint_name[{i}]", f"unknown joint '{name}'",
                                   choices=sorted(by_joint), got=name)
        urdf_type = by_joint[name].get("type")
        if urdf_type not in _CONVERTIBLE:
            raise ModelImportError(file, f"joint_name[{i}]", f"joint '{name}' is a "
                                   f"{urdf_type} joint; only {', '.join(_CONVERTIBLE)} "
                                   "joints can be converted")
        if name in side["name_mot"]:
            raise ModelImportError(file, f"joint_name[{i}]", f"joint '{name}' is actuated "
                                   f"(name_mot) and cannot become {kind}: an actuator drives "
                                   "the one coordinate of its joint")
        e = entries[name]
        for key in ("axis", "limits", "initial"):
            e.pop(key, None)
        if kind == "SPHERICAL":
            e["type"] = "spherical"
        elif kind == "FIXED":
            e["type"] = "fixed"
            for key in ("damping", "friction"):
                e.pop(key, None)
        else:
            e["type"] = "universal"
            e["axes"] = [list(_AXES[kind[-2]]), list(_AXES[kind[-1]])]


def _frame_link(file: Path, name: str, links: list[str], by_joint: dict, where: str) -> str:
    """The link whose frame a sidecar frame name denotes (a link, else a joint's child)."""
    if name in links:
        return name
    if name in by_joint:
        return by_joint[name].find("child").get("link")
    raise ModelImportError(file, where, f"unknown frame '{name}' (neither a link nor a joint)",
                           choices=sorted([*links, *by_joint]), got=name)


def _loop_joints(file: Path, side: dict, links: list[str], by_joint: dict) -> list[dict]:
    out = []
    used = set(by_joint)
    for i, ((a, b), t) in enumerate(zip(side["closed_loop"], side["type"], strict=True)):
        la = _frame_link(file, a, links, by_joint, f"closed_loop[{i}][0]")
        lb = _frame_link(file, b, links, by_joint, f"closed_loop[{i}][1]")
        if la == lb:
            raise ModelImportError(file, f"closed_loop[{i}]", f"frames '{a}' and '{b}' are on "
                                   f"the same link '{la}': no loop to close")
        name = f"loop_{a}_{b}"
        while name in used:
            name += "_"
        used.add(name)
        out.append({"name": name, "type": _LOOP_TYPES[t], "parent": la, "child": lb})
    return out


def _actuator(file: Path, joint: str, by_joint: dict, urdf: Path) -> dict:
    if joint not in by_joint:
        raise ModelImportError(file, "name_mot", f"unknown joint '{joint}'",
                               choices=sorted(by_joint), got=joint)
    return {"name": f"{joint}_motor", "joint": joint, "transmission": {"type": "direct"},
            **_limits_of(urdf, by_joint[joint])}


def _limits_of(file: Path, j) -> dict:
    """Effort limits ``[−effort, effort]`` and speed limit ``velocity`` of a ``<limit>``."""
    lim = j.find("limit")
    out: dict = {}
    if lim is None:
        return out
    effort = _scalar(file, lim, "effort", 0.0)
    velocity = _scalar(file, lim, "velocity", 0.0)
    if effort > 0.0:
        out["effort_limits"] = [-effort, effort]
    if velocity > 0.0:
        out["speed_limit"] = velocity
    return out


def _transmissions(file: Path, root, by_joint: dict) -> list[dict]:
    out = []
    for tr in root.findall("transmission"):
        jel = tr.find("joint")
        if jel is None:
            continue
        joint = jel.get("name")
        if joint not in by_joint:
            raise ModelImportError(file, _where(jel), f"transmission joint '{joint}' is not a "
                                   "joint", choices=sorted(by_joint), got=str(joint))
        red_el = tr.find(".//mechanicalReduction")
        ratio = float(red_el.text) if red_el is not None and red_el.text else 1.0
        trans = {"type": "direct"} if ratio == 1.0 else {"type": "gear", "ratio": abs(ratio)}
        out.append({"name": tr.get("name", f"{joint}_motor"), "joint": joint,
                    "transmission": trans, **_limits_of(file, by_joint[joint])})
    return out


#: A loop counts as closed when every residual component (log6 of the frame gap, rad and
#: m) is below this: far below any modelling tolerance, above the solver's round-off.
LOOP_CLOSURE_TOL = 1e-9


class _Captured:
    def __init__(self) -> None:
        self.data = b""

    def text(self) -> str:
        return self.data.decode("utf-8", "replace")


@contextmanager
def _captured_stderr() -> Iterator[_Captured]:
    """Capture what C/C++ libraries write to file descriptor 2 (urdfdom logs parse errors
    there) instead of letting it reach the terminal."""
    import os
    import tempfile

    out = _Captured()
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as f:
        os.dup2(f.fileno(), 2)
        try:
            yield out
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            f.seek(0)
            out.data = f.read(1 << 16)


def _closed_initials(root, file: Path, side: dict, joints: list[dict],
                     warnings: list[str]) -> None:
    """Joint ``initial`` values at which the sidecar's loops close, when one is found.

    The URDF's zero configuration leaves such loops open (the Gepetto examples are exported
    from CAD with the loops cut). Starting from Pinocchio's neutral configuration, a
    least-squares solve (scipy ``least_squares``, trust-region) drives the frame gaps
    ``log6(T_w_A⁻¹ T_w_B)`` (6d) or their translations (3d) to zero over the tree's joint
    velocities (``q = integrate(q0, v)``). On success every moving joint gets the solved
    value as its ``initial`` (an acquisition guess, not a constraint); otherwise a warning
    reports the remaining gap and no initial values are written.
    """
    from scipy.optimize import least_squares

    model = _pinocchio_model(root, file, side["convert"])
    data = model.createData()
    pairs = [(model.getFrameId(a), model.getFrameId(b), t)
             for (a, b), t in zip(side["closed_loop"], side["type"], strict=True)]
    q0 = pin.neutral(model)

    def residual(v: np.ndarray) -> np.ndarray:
        pin.framesForwardKinematics(model, data, pin.integrate(model, q0, v))
        out = []
        for a, b, t in pairs:
            gap = data.oMf[a].actInv(data.oMf[b])
            out.append(pin.log6(gap).vector if t == "6d" else gap.translation)
        return np.concatenate(out)

    sol = least_squares(residual, np.zeros(model.nv), method="trf", xtol=1e-15, ftol=1e-15,
                        gtol=1e-15, max_nfev=300)
    gap = float(np.abs(sol.fun).max())
    if gap > LOOP_CLOSURE_TOL:
        warnings.append(f"the loops could not be closed from the neutral configuration "
                        f"(largest residual {gap:.3g}); no initial values written")
        return
    q = pin.integrate(model, q0, sol.x)
    values: dict[str, float | list[float]] = {}
    for jid in range(1, model.njoints):
        idx, nq = model.joints[jid].idx_q, model.joints[jid].nq
        if nq == 4:  # spherical: Pinocchio (x, y, z, w) → record (w, x, y, z)
            values[model.names[jid]] = floats(spatial.quat_xyzw_to_wxyz(q[idx: idx + 4]))
        else:
            values[model.names[jid]] = (float(np.arctan2(q[idx + 1], q[idx])) if nq == 2
                                        else float(q[idx]))
    for entry in joints:
        name = entry["name"]
        if name in values and entry["type"] in ("revolute", "prismatic", "spherical"):
            entry["initial"] = values[name]
        elif entry["type"] == "universal" and f"{name}_1" in values:
            entry["initial"] = [values[f"{name}_1"], values[f"{name}_2"]]


def _pinocchio_model(root, file: Path, convert: dict[str, str]) -> pin.Model:
    """The URDF's Pinocchio model with the sidecar's joint conversions applied (as the
    Gepetto loader builds it): a spherical joint model in place of a ``SPHERICAL`` joint,
    two revolute joints ``name_1`` (about e_A) and ``name_2`` (about e_B, identity placement)
    for ``UJOINT_AB``, and ``FIXED`` joints frozen at zero (``buildReducedModel``). Bodies and
    frames follow their joint; names of unconverted joints and all frames are kept."""
    from lxml import etree

    # from the tree already read (the file is not opened a second time); urdfdom's console
    # messages are captured so that they never precede ours
    try:
        with _captured_stderr() as said:
            model = pin.buildModelFromXML(etree.tostring(root, encoding="unicode"))
    except (ValueError, RuntimeError) as err:  # urdfdom is stricter than the URDF spec
        lines = [x.strip() for x in said.text().splitlines() if x.strip().startswith("Error")]
        detail = lines[0].removeprefix("Error:").strip() if lines else str(err)
        raise ModelImportError(file, "", f"Pinocchio's URDF parser (urdfdom), which closes "
                               f"the loops, refuses the file: {detail} (a <limit> without "
                               "'effort' and 'velocity' is a common cause)") from None
    if not convert:
        return model
    revolute = {"X": pin.JointModelRX, "Y": pin.JointModelRY, "Z": pin.JointModelRZ}
    new = pin.Model()
    new.gravity = model.gravity
    new_id = {0: 0}
    frozen = []
    for jid in range(1, model.njoints):
        name, kind = model.names[jid], convert.get(model.names[jid])
        parent, place = new_id[int(model.parents[jid])], model.jointPlacements[jid]
        joint = model.joints[jid]
        if kind == "SPHERICAL":
            joint = pin.JointModelSpherical()
        elif kind is not None and kind.startswith("UJOINT_"):
            parent = new.addJoint(parent, revolute[kind[-2]](), place, f"{name}_1")
            joint, place, name = revolute[kind[-1]](), pin.SE3.Identity(), f"{name}_2"
        new_id[jid] = new.addJoint(parent, joint, place, name)
        new.appendBodyToJoint(new_id[jid], model.inertias[jid], pin.SE3.Identity())
        if kind == "FIXED":
            frozen.append(new_id[jid])
    for f in list(model.frames)[1:]:  # frame 0 is the universe, already in the new model
        new.addFrame(pin.Frame(f.name, new_id[int(f.parentJoint)], f.placement, f.type),
                     False)
    if frozen:
        new = pin.buildReducedModel(new, frozen, pin.neutral(new))
    return new

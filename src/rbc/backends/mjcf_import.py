"""MJCF (MuJoCo XML) → physical record (``rbc import mjcf``).

Source: the MuJoCo XML reference (mujoco.readthedocs.io, "XML Reference") for every
attribute, default and unit used here. The mapping is documented in docs/import.md; the
essentials:

* **Bodies.** Each ``<body>`` is a record body with the same name. ``<inertial>`` gives
  ``com = pos`` and the inertia ``R · diag(diaginertia) · Rᵀ`` (or ``fullinertia``) in body
  axes, ``R`` being the inertial frame's orientation in the body. A body without
  ``<inertial>`` takes its mass properties from MuJoCo's own compiled model (MuJoCo infers
  them from the geoms, ``inertiafromgeom="auto"``).
* **Joints.** MuJoCo places a body at ``T_parent_body`` (pos + orientation) and then applies
  its joints in order, each about its own ``pos``/``axis`` in the body frame, by ``q − ref``.
  A record joint ``X = A · Q(q) · B⁻¹`` reproduces this with ``A = T_parent_body ·
  Trans(pos) · Rot(axis, −ref)`` (slide: ``Trans(pos − axis·ref)``) and ``B = Trans(pos)``,
  so record coordinates equal MuJoCo's ``qpos``. Several joints in one body are chained
  through massless intermediate bodies named ``BODY__JOINT``. A body without joints is
  welded (a ``fixed`` joint ``BODY_fixed``); a top-level body with a free joint becomes a
  ``floating: true`` body.
* **Loops.** ``equality connect`` → a spherical joint; its second anchor is the world
  position of ``anchor`` (body1 frame) at ``qpos0`` expressed in body2's frame — exactly
  what MuJoCo computes. ``weld`` → a fixed joint (relative pose at ``qpos0`` unless
  ``relpose`` is given). ``equality joint`` → a linear coupling, or, when ``polycoef`` has
  quadratic to quartic terms, a polynomial coupling ``q1 = h(q2)`` with
  ``h = q1₀ + Σ cₖ (q2 − q2₀)ᵏ`` (center q2₀).
* **Tendons.** A ``<fixed>`` tendon is the linear combination ``ℓ = Σ coef·qpos`` of hinge and
  slide joints; an actuator on it becomes an actuator whose port is that combination
  (``terms``) — with a joint equality tying the joints (Menagerie's Panda fingers) it is the
  physical gripper: one motor, two coupled fingers. A fixed tendon's passive properties
  (stiffness, damping, friction, limits) are not imported (a warning lists them).
  ``<spatial>`` tendons (routed through sites and wrapping geoms: a configuration-dependent
  path) are refused.
* **Angles.** ``compiler angle`` (default **degree**) converts ``euler``, ``axisangle`` and
  hinge ``range``/``ref``/``springref``; quaternions are never converted.

Errors raise :class:`~rbc.backends.record_writer.ModelImportError` naming the element, its
line and its XML path.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
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
from rbc.ir import spatial

#: Top-level MJCF sections that carry nothing the record needs (dropped, listed in the header).
_IGNORED_SECTIONS = ("option", "size", "visual", "statistic", "asset", "contact", "sensor",
                     "custom", "extension")
_SUPPORTED_SECTIONS = ("compiler", "default", "worldbody", "equality", "actuator", "keyframe",
                       "tendon", *_IGNORED_SECTIONS)
#: Passive properties of a fixed tendon the record cannot hold (dropped with a warning).
_TENDON_PASSIVE = ("stiffness", "damping", "frictionloss", "limited", "range", "springlength")
_BODY_CHILDREN = ("inertial", "joint", "freejoint", "geom", "site", "camera", "light", "body")
_JOINT_TYPES = {"hinge": "revolute", "slide": "prismatic", "ball": "spherical", "free": "free"}
_NQ = {"hinge": 1, "slide": 1, "ball": 4, "free": 7}
_ACTUATORS = ("motor", "position", "velocity", "general")
_ORIENTATIONS = ("quat", "axisangle", "euler", "xyaxes", "zaxis")
_GEOM_TYPES = ("plane", "hfield", "sphere", "capsule", "ellipsoid", "cylinder", "box", "mesh",
               "sdf")
#: compiler attributes that change mass properties in ways this importer does not reproduce.
_UNSUPPORTED_COMPILER = ("settotalmass", "balanceinertia", "boundmass", "boundinertia")


# ------------------------------------------------------------------------------ context


@dataclass
class _Ctx:
    """Parsing state: the file, compiler settings, defaults and the messages so far."""

    file: Path
    degree: bool = True
    eulerseq: str = "xyz"
    autolimits: bool = True
    inertiafromgeom: str = "auto"
    repair: bool = False
    meshdir: Path | None = None
    defaults: dict[str, dict[str, dict[str, str]]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    dropped: dict[str, int] = field(default_factory=dict)

    def where(self, el) -> str:
        return f"line {el.sourceline} ({el.getroottree().getpath(el)})"

    def error(self, el, problem: str, **kw) -> ModelImportError:
        return ModelImportError(self.file, self.where(el), problem, **kw)

    def drop(self, what: str, n: int = 1) -> None:
        self.dropped[what] = self.dropped.get(what, 0) + n

    def angle(self, value: float) -> float:
        """A compiler-unit angle → rad."""
        return math.radians(value) if self.degree else value


def _bool(ctx: _Ctx, el, attrs: dict[str, str], key: str, default: bool | None) -> bool | None:
    """MJCF boolean or ``auto`` (→ None)."""
    v = attrs.get(key)
    if v is None:
        return default
    if v in ("true", "false"):
        return v == "true"
    if v == "auto":
        return None
    raise ctx.error(el, f"{key}='{v}' is not a boolean", choices=("true", "false", "auto"))


def _nums(ctx: _Ctx, el, attrs: dict[str, str], key: str, n: int | None = None,
          default: list[float] | None = None) -> list[float] | None:
    """Numbers of a resolved attribute (element or default class)."""
    if key not in attrs:
        return None if default is None else list(default)
    probe = _Attr(el, attrs)
    return numbers(ctx.file, probe, key, n)


class _Attr:
    """Adapter giving :func:`numbers` the resolved attributes with the element's line."""

    def __init__(self, el, attrs: dict[str, str]) -> None:
        self.tag, self.sourceline, self._a = el.tag, el.sourceline, attrs

    def get(self, key: str, default=None):
        return self._a.get(key, default)


# ------------------------------------------------------------------------------ defaults


def _actuator_key(tag: str) -> str:
    return "actuator" if tag in (*_ACTUATORS, "intvelocity", "damper", "cylinder", "muscle",
                                 "adhesion") else tag


def _collect_defaults(ctx: _Ctx, el, parent: dict[str, dict[str, str]], top: bool) -> None:
    """Fill ``ctx.defaults[class]`` with each element type's inherited default attributes."""
    name = el.get("class", "main" if top else None)
    if name is None:
        raise ctx.error(el, "a nested <default> needs a 'class' attribute")
    if name in ctx.defaults:
        raise ctx.error(el, f"default class '{name}' is defined twice")
    mine = {tag: dict(a) for tag, a in parent.items()}
    for child in el:
        if child.tag == "default":
            continue
        key = _actuator_key(child.tag)
        mine.setdefault(key, {}).update(child.attrib)
    ctx.defaults[name] = mine
    for child in el:
        if child.tag == "default":
            _collect_defaults(ctx, child, mine, top=False)


def _resolve(ctx: _Ctx, el, cls: str, key: str | None = None) -> dict[str, str]:
    """The element's attributes over its class defaults (MJCF inheritance); ``key`` is the
    default element type (default: the element's tag; ``equality`` for equalities)."""
    name = el.get("class", cls)
    if name not in ctx.defaults:
        raise ctx.error(el, f"unknown default class '{name}'", choices=sorted(ctx.defaults),
                        got=name)
    out = dict(ctx.defaults[name].get(key or _actuator_key(el.tag), {}))
    out.update(el.attrib)
    return out


# ------------------------------------------------------------------------------ geometry


def _rotation(ctx: _Ctx, el, attrs: dict[str, str]) -> np.ndarray:
    """(3, 3) orientation from whichever of quat/axisangle/euler/xyaxes/zaxis is given.

    Source: MuJoCo XML reference, "Frame orientations".
    """
    given = [k for k in _ORIENTATIONS if k in el.attrib] or [k for k in _ORIENTATIONS
                                                             if k in attrs]
    if len(given) > 1:
        raise ctx.error(el, f"several orientations given ({', '.join(given)}); use one")
    if not given:
        return np.eye(3)
    kind = given[0]
    if kind == "quat":
        q = _nums(ctx, el, attrs, "quat", 4)
        if np.linalg.norm(q) < 1e-12:  # MuJoCo rejects a zero quaternion too
            raise ctx.error(el, "quat has zero norm")
        return spatial.rotation_from_quat(np.array(q))
    if kind == "axisangle":
        v = _nums(ctx, el, attrs, "axisangle", 4)
        axis = np.array(v[:3])
        n = np.linalg.norm(axis)
        if n < 1e-12:  # no direction to rotate about
            raise ctx.error(el, "axisangle has a zero axis")
        return spatial.exp3(axis / n * ctx.angle(v[3]))
    if kind == "euler":
        v = _nums(ctx, el, attrs, "euler", 3)
        rot = np.eye(3)
        for letter, ang in zip(ctx.eulerseq, v, strict=True):
            step = spatial.exp3(np.eye(3)["xyz".index(letter.lower())] * ctx.angle(ang))
            # lower case: axes move with the frame (post-multiply); upper case: fixed axes
            rot = rot @ step if letter.islower() else step @ rot
        return rot
    if kind == "xyaxes":
        v = _nums(ctx, el, attrs, "xyaxes", 6)
        x = np.array(v[:3])
        y = np.array(v[3:])
        if np.linalg.norm(x) < 1e-12:  # degenerate frame
            raise ctx.error(el, "xyaxes has a zero x axis")
        x = x / np.linalg.norm(x)
        y = y - x * (x @ y)
        if np.linalg.norm(y) < 1e-12:  # y parallel to x: degenerate frame
            raise ctx.error(el, "xyaxes has parallel axes")
        y = y / np.linalg.norm(y)
        return np.column_stack([x, y, np.cross(x, y)])
    z = np.array(_nums(ctx, el, attrs, "zaxis", 3))
    if np.linalg.norm(z) < 1e-12:  # no direction
        raise ctx.error(el, "zaxis is zero")
    z = z / np.linalg.norm(z)
    axis = np.cross([0.0, 0.0, 1.0], z)
    s = np.linalg.norm(axis)
    if s < 1e-14:  # parallel to +z or −z (MuJoCo mju_quatZ2Vec: half turn about x for −z)
        return np.eye(3) if z[2] > 0 else spatial.exp3(np.array([math.pi, 0.0, 0.0]))
    return spatial.exp3(axis / s * math.atan2(s, z[2]))


def _frame(ctx: _Ctx, el, attrs: dict[str, str]) -> pin.SE3:
    """``T_host_el`` from ``pos`` and the orientation attributes."""
    return se3(_rotation(ctx, el, attrs), _nums(ctx, el, attrs, "pos", 3, [0.0, 0.0, 0.0]))


# ------------------------------------------------------------------------------ model walk


@dataclass
class _Joint:
    name: str
    kind: str  # hinge, slide, ball, free
    el: object
    attrs: dict[str, str]
    nq: int


@dataclass
class _Body:
    name: str
    el: object
    parent: str | None  # None: the world
    local: pin.SE3  # T_parent_body
    world: pin.SE3  # T_world_body at qpos0
    cls: str  # class applying to the body's children
    joints: list[_Joint] = field(default_factory=list)


def _walk(ctx: _Ctx, el, parent: str | None, T_w_parent: pin.SE3, cls: str,
          out: list[_Body], names: set[str]) -> None:
    for child in el:
        if child.tag != "body":
            continue
        name = child.get("name") or f"body{len(out) + 1}"
        if name in names or name == "world":
            raise ctx.error(child, f"body name '{name}' is used twice (or is 'world')")
        names.add(name)
        if child.get("mocap") == "true":
            raise ctx.error(child, "mocap bodies are not supported")
        for sub in child:
            if sub.tag not in _BODY_CHILDREN:
                raise ctx.error(sub, f"unsupported element <{sub.tag}> in a body",
                                choices=_BODY_CHILDREN, got=sub.tag)
        local = _frame(ctx, child, dict(child.attrib))
        body = _Body(name, child, parent, local, T_w_parent * local,
                     child.get("childclass", cls))
        for sub in child:
            if sub.tag in ("joint", "freejoint"):
                attrs = _resolve(ctx, sub, body.cls)
                kind = "free" if sub.tag == "freejoint" else attrs.get("type", "hinge")
                if kind not in _JOINT_TYPES:
                    raise ctx.error(sub, f"unsupported joint type '{kind}'",
                                    choices=tuple(_JOINT_TYPES), got=kind)
                jname = sub.get("name") or f"{name}_joint{len(body.joints) + 1}"
                body.joints.append(_Joint(jname, kind, sub, attrs, _NQ[kind]))
        if any(j.kind == "free" for j in body.joints):
            if parent is not None or len(body.joints) > 1:
                raise ctx.error(child, "a free joint must be the only joint of a top-level body")
        out.append(body)
        _walk(ctx, child, name, body.world, body.cls, out, names)


# ------------------------------------------------------------------------------ pieces


def _inertia_entry(ctx: _Ctx, body: _Body, entry: dict, mj) -> None:
    """Add mass, com, inertia of one body to its record entry (in place)."""
    inertial = body.el.find("inertial")
    if inertial is not None and ctx.inertiafromgeom != "true":
        attrs = dict(inertial.attrib)
        mass = _nums(ctx, inertial, attrs, "mass", 1)
        if mass is None:
            raise ctx.error(inertial, "<inertial> needs a 'mass'")
        full = _nums(ctx, inertial, attrs, "fullinertia", 6)
        diag = _nums(ctx, inertial, attrs, "diaginertia", 3)
        if (full is None) == (diag is None):
            raise ctx.error(inertial, "<inertial> needs exactly one of diaginertia, fullinertia")
        if full is not None:
            if any(k in attrs for k in _ORIENTATIONS):
                raise ctx.error(inertial, "fullinertia cannot be combined with an orientation")
            tensor = tensor_from_six(full)
        else:
            tensor = rotate_inertia(_rotation(ctx, inertial, attrs), np.diag(diag))
        com = _nums(ctx, inertial, attrs, "pos", 3)
        if com is None:
            raise ctx.error(inertial, "<inertial> needs a 'pos'")
        entry.update(mass_entry(ctx.file, ctx.where(inertial), body.name, mass[0], com, tensor,
                                ctx.repair, ctx.warnings))
        return
    if mj is None:
        if body.el.find("geom") is not None:
            ctx.warnings.append(f"body '{body.name}': no <inertial> and MuJoCo could not load "
                                "the model to infer it from the geoms; imported massless")
        return
    from rbc.backends.mujoco_log import mujoco

    bid = mujoco.mj_name2id(mj, mujoco.mjtObj.mjOBJ_BODY, body.name)
    R = spatial.rotation_from_quat(mj.body_iquat[bid])
    entry.update(mass_entry(ctx.file, ctx.where(body.el), body.name, float(mj.body_mass[bid]),
                            mj.body_ipos[bid], rotate_inertia(R, np.diag(mj.body_inertia[bid])),
                            ctx.repair, ctx.warnings))


def _geometry(ctx: _Ctx, body: _Body, meshes: dict[str, tuple[str, list[float] | None]],
              owner) -> list[dict]:
    """Collision geoms (contype or conaffinity nonzero) of one body as record geometry."""
    out: list[dict] = []
    for g in owner.findall("geom"):
        a = _resolve(ctx, g, body.cls)
        kind = a.get("type", "mesh" if "mesh" in a else "sphere")
        if kind not in _GEOM_TYPES:
            raise ctx.error(g, f"unknown geom type '{kind}'", choices=_GEOM_TYPES, got=kind)
        contype, conaffinity = (_nums(ctx, g, a, k, 1, [1.0])[0] for k in ("contype",
                                                                            "conaffinity"))
        if contype == 0 and conaffinity == 0:
            ctx.drop("visual-only geoms")
            continue
        size = _nums(ctx, g, a, "size", None, [])
        fromto = _nums(ctx, g, a, "fromto", 6)
        need = {"capsule": 2, "cylinder": 2, "sphere": 1, "box": 3}.get(kind, 0)
        if kind in ("capsule", "cylinder") and fromto is not None:
            need = 1  # the length comes from fromto
        if len(size) < need:
            raise ctx.error(g, f"{kind} geom needs {need} size values, got {len(size)}")
        entry: dict = {"type": kind}
        if kind in ("capsule", "cylinder"):
            entry["radius"] = size[0]
            if fromto is not None:
                entry["fromto"] = floats(fromto)
            else:
                entry["length"] = 2.0 * size[1]
        elif kind == "sphere":
            entry["radius"] = size[0]
        elif kind == "box":
            entry["half_extents"] = floats(size[:3])
        elif kind == "mesh":
            mname = a.get("mesh")
            if mname not in meshes:
                raise ctx.error(g, f"unknown mesh '{mname}'", choices=sorted(meshes), got=mname)
            file, scale = meshes[mname]
            if not Path(file).is_file():
                ctx.warnings.append(f"mesh file '{file}' not found: geometry of body "
                                    f"'{body.name}' dropped")
                ctx.drop("geoms with missing mesh files")
                continue
            if scale is not None and min(scale) <= 0.0:
                ctx.warnings.append(f"mesh '{mname}' has a mirroring scale {scale}: dropped")
                ctx.drop("mirrored meshes")
                continue
            entry["file"] = file
            if scale is not None:
                entry["scale"] = floats(scale)
        else:
            ctx.warnings.append(f"geom type '{kind}' of body '{body.name}' (line {g.sourceline}) "
                                "has no record equivalent: dropped")
            ctx.drop(f"{kind} geoms")
            continue
        if fromto is None or kind not in ("capsule", "cylinder"):
            entry.update(pose_dict(_frame(ctx, g, a)))
        out.append(entry)
    return out


def _sites(ctx: _Ctx, owner, cls: str) -> dict[str, dict]:
    frames: dict[str, dict] = {}
    for s in owner.findall("site"):
        if s.get("name") is None:
            ctx.drop("unnamed sites")
            continue
        frames[s.get("name")] = pose_dict(_frame(ctx, s, _resolve(ctx, s, cls)))
    return frames


def _limits(ctx: _Ctx, j: _Joint) -> dict | None:
    rng = _nums(ctx, j.el, j.attrs, "range", 2)
    limited = _bool(ctx, j.el, j.attrs, "limited", None)
    if limited is None:
        limited = rng is not None and ctx.autolimits
    if not limited or rng is None:
        return None
    lo, hi = (ctx.angle(v) for v in rng) if j.kind == "hinge" else rng
    if not lo < hi:
        raise ctx.error(j.el, f"range {rng} is not increasing")
    return {"lower": float(lo), "upper": float(hi)}


def _ref(ctx: _Ctx, j: _Joint, key: str) -> float:
    v = _nums(ctx, j.el, j.attrs, key, 1, [0.0])[0]
    return ctx.angle(v) if j.kind == "hinge" else v


def _joint_entries(ctx: _Ctx, body: _Body, used: set[str]) -> tuple[list[dict], list[dict]]:
    """Record joints (and massless intermediate bodies) placing ``body`` in its parent."""
    parent = body.parent or "world"
    if not body.joints:
        name = _unique(f"{body.name}_fixed", used)
        return [], [{"name": name, "type": "fixed", "parent": parent, "child": body.name,
                     **_frames(body.local, se3())}]
    joints: list[dict] = []
    extra: list[dict] = []
    prev, T_prev = parent, body.local
    for k, j in enumerate(body.joints):
        last = k == len(body.joints) - 1
        child = body.name if last else _unique(f"{body.name}__{j.name}", used)
        if not last:
            extra.append({"name": child})
        pos = np.array(_nums(ctx, j.el, j.attrs, "pos", 3, [0.0, 0.0, 0.0]))
        entry: dict = {"name": j.name, "type": _JOINT_TYPES[j.kind], "parent": prev,
                       "child": child}
        if j.kind in ("hinge", "slide"):
            axis = np.array(_nums(ctx, j.el, j.attrs, "axis", 3, [0.0, 0.0, 1.0]))
            if np.linalg.norm(axis) < 1e-12:  # MuJoCo rejects a zero axis too
                raise ctx.error(j.el, "joint axis is zero")
            axis = axis / np.linalg.norm(axis)
            ref = _ref(ctx, j, "ref")
            if j.kind == "hinge":
                A = T_prev * se3(spatial.exp3(-ref * axis), pos)
            else:
                A = T_prev * se3(None, pos - ref * axis)
            entry.update(_frames(A, se3(None, pos)))
            entry["axis"] = floats(axis)
            lim = _limits(ctx, j)
            if lim:
                entry["limits"] = lim
            stiff = _nums(ctx, j.el, j.attrs, "stiffness", 1, [0.0])[0]
            if stiff:
                entry["spring"] = {"stiffness": stiff, "rest": _ref(ctx, j, "springref")}
        else:
            entry.update(_frames(T_prev * se3(None, pos), se3(None, pos)))
            for key in ("range", "stiffness"):
                if float((_nums(ctx, j.el, j.attrs, key) or [0.0])[0]):
                    ctx.warnings.append(f"ball joint '{j.name}': {key} has no record "
                                        "equivalent (dropped)")
        for key, rkey in (("damping", "damping"), ("frictionloss", "friction"),
                          ("armature", "armature")):
            v = _nums(ctx, j.el, j.attrs, key, 1, [0.0])[0]
            if v:
                entry[rkey] = v
        joints.append(entry)
        prev, T_prev = child, se3()
    return extra, joints


def _frames(A: pin.SE3, B: pin.SE3) -> dict:
    out = {}
    a, b = pose_dict(A), pose_dict(B)
    if a:
        out["parent_frame"] = a
    if b:
        out["child_frame"] = b
    return out


def _unique(name: str, used: set[str]) -> str:
    out, k = name, 1
    while out in used:
        k += 1
        out = f"{name}_{k}"
    used.add(out)
    return out


# ------------------------------------------------------------------------------ MuJoCo


def file_free_copy(root):
    """A copy of an MJCF tree that names no file, for MuJoCo to compile from a string.

    rbc never lets MuJoCo open a path written in an input file (a mesh named /dev/zero, an
    ``<include>`` of a private file): every element with a file attribute (``file``,
    ``fileright``… of meshes, textures, height fields, skins, models) and every
    ``<include>`` is removed, with the geoms that use a removed mesh or height field and
    the material textures; mesh geoms in defaults become spheres. Mass properties of bodies
    with ``<inertial>`` are unaffected; bodies inferring their mass from mesh geoms lose
    that contribution (the importer warns).
    """
    from lxml import etree

    copy = etree.fromstring(etree.tostring(root))
    for el in list(copy.iter()):
        if not isinstance(el.tag, str):
            continue
        if el.tag == "include" or any(k.startswith("file") for k in el.attrib):
            if el.getparent() is not None:
                el.getparent().remove(el)
    for el in copy.iter("material"):
        el.attrib.pop("texture", None)
    mesh_classes = {d.get("class") for d in copy.iter("default")
                    if any(g.get("type") == "mesh" or g.get("mesh") for g in d.findall("geom"))}
    for g in list(copy.iter("geom")):
        if g.get("mesh") or g.get("hfield") or g.get("type") in ("mesh", "hfield") or (
                g.get("class") in mesh_classes and g.get("type") in (None, "mesh")):
            g.getparent().remove(g)
    for d in copy.iter("default"):
        for g in d.findall("geom"):
            g.attrib.pop("mesh", None)
            g.attrib.pop("hfield", None)
            if g.get("type") in ("mesh", "hfield"):
                g.set("type", "sphere")
    for sk in list(copy.iter("skin")):
        sk.getparent().remove(sk)
    return copy


def load_mujoco(path: str | Path, root=None):
    """Compile the model with MuJoCo from its :func:`file_free_copy` (no file is opened).

    Returns:
        ``(model, stripped)``: the ``mujoco.MjModel`` (or None if MuJoCo refuses the copy)
        and whether file-backed elements had to be removed.
    """
    from lxml import etree

    from rbc.backends.mujoco_log import mujoco

    root = read_xml(path, "mujoco") if root is None else root
    copy = file_free_copy(root)
    stripped = sum(1 for _ in root.iter()) != sum(1 for _ in copy.iter()) or any(
        "texture" in m.attrib for m in root.iter("material"))
    try:
        return mujoco.MjModel.from_xml_string(etree.tostring(copy).decode()), stripped
    except Exception:  # noqa: BLE001 - MuJoCo raises ValueError for any load problem
        return None, stripped


# ------------------------------------------------------------------------------ main entry


def import_mjcf(path: str | Path, *, repair_inertia: bool = False) -> ImportResult:
    """Read an MJCF file and build the physical record.

    Args:
        path: the MuJoCo XML model.
        repair_inertia: apply the documented inertia repair
            (:func:`~rbc.backends.record_writer.repair_inertia`) instead of failing on a
            physically invalid inertia.

    Returns:
        The record dict (schema v1, SI, rad, wxyz), header lines and warnings.

    Raises:
        ModelImportError: malformed XML (with line), unsupported elements or attribute values
            (named, with line and XML path), references to missing bodies, joints, classes or
            meshes, nonlinear joint equalities, a keyframe of the wrong size, or an invalid
            inertia without ``repair_inertia``.
    """
    path = Path(path)
    ctx, root, bodies = _parse_tree(path, repair_inertia)
    gravity = None
    for opt in root.findall("option"):
        gravity = _nums(ctx, opt, dict(opt.attrib), "gravity", 3) or gravity

    worlds = root.findall("worldbody")
    if not bodies:
        raise ModelImportError(path, "mujoco/worldbody", "the model has no bodies")
    by_name = {b.name: b for b in bodies}
    needs_mj = ctx.inertiafromgeom == "true" or any(
        b.el.find("inertial") is None and b.el.find("geom") is not None for b in bodies)
    mj, stripped = load_mujoco(path, root) if needs_mj else (None, False)
    if stripped:
        ctx.warnings.append("mass properties of bodies without <inertial> are inferred by "
                            "MuJoCo from a copy without file-backed assets (rbc never opens "
                            "mesh, texture or include files): mesh geoms do not contribute")

    meshes = _meshes(ctx, root)
    used_joint_names = {j.name for b in bodies for j in b.joints}
    used_body_names = set(by_name) | {"world"}
    record_bodies: list[dict] = []
    joints: list[dict] = []
    world_entry: dict = {"name": "world", "fixed": True}
    world_needed = False
    for b in bodies:
        entry: dict = {"name": b.name}
        if b.joints and b.joints[0].kind == "free":
            entry["floating"] = True
        elif b.parent is None:
            world_needed = True
        _inertia_entry(ctx, b, entry, mj)
        frames = _sites(ctx, b.el, b.cls)
        if frames:
            entry["frames"] = frames
        geoms = _geometry(ctx, b, meshes, b.el)
        if geoms:
            entry["geometry"] = geoms
        record_bodies.append(entry)
        if entry.get("floating"):
            continue
        extra, js = _joint_entries(ctx, b, used_joint_names | used_body_names)
        used_joint_names |= {j["name"] for j in js}
        record_bodies.extend(extra)
        joints.extend(js)
    world_frames: dict[str, dict] = {}
    world_geoms: list[dict] = []
    for wb in worlds:
        world_frames.update(_sites(ctx, wb, "main"))
        world_geoms += _geometry(ctx, _Body("world", wb, None, se3(), se3(), "main"), meshes, wb)
    if world_frames:
        world_entry["frames"] = world_frames
    if world_geoms:
        world_entry["geometry"] = world_geoms

    qpos0, key_name, key_names = _keyframe(ctx, root, bodies)
    loop_joints, couplings = _equalities(ctx, root, by_name, used_joint_names)
    world_needed = world_needed or world_frames or world_geoms or any(
        "world" in (j["parent"], j["child"]) for j in loop_joints)
    if world_needed:
        record_bodies.insert(0, world_entry)
    joints += loop_joints
    _initials(ctx, bodies, joints, qpos0, key_name, by_name, mj if mj is not None else None,
              path, root)
    actuators = _actuators(ctx, root, bodies, joints, _tendons(ctx, root, bodies))

    record: dict = {"rbc": 1, "name": root.get("model", path.stem)}
    if gravity is not None:
        record["gravity"] = floats(gravity)
    record["bodies"] = record_bodies
    record["joints"] = joints
    if actuators:
        record["actuators"] = actuators
    if couplings:
        record["couplings"] = couplings
    header = _header(ctx, path, root, key_name, key_names)
    return ImportResult(record, header, ctx.warnings)


def _read_compiler(ctx: _Ctx, root) -> None:
    for sub in root:
        if not isinstance(sub.tag, str):
            continue
        if sub.tag not in _SUPPORTED_SECTIONS:
            raise ctx.error(sub, f"unsupported element <{sub.tag}>",
                            choices=_SUPPORTED_SECTIONS, got=sub.tag)
    for c in root.findall("compiler"):
        a = dict(c.attrib)
        if "angle" in a:
            if a["angle"] not in ("degree", "radian"):
                raise ctx.error(c, f"angle='{a['angle']}'", choices=("degree", "radian"))
            ctx.degree = a["angle"] == "degree"
        if "eulerseq" in a:
            seq = a["eulerseq"]
            if len(seq) != 3 or any(ch not in "xyzXYZ" for ch in seq):
                raise ctx.error(c, f"eulerseq='{seq}' is not three letters of xyzXYZ")
            ctx.eulerseq = seq
        ctx.autolimits = _bool(ctx, c, a, "autolimits", ctx.autolimits) is not False
        ctx.inertiafromgeom = a.get("inertiafromgeom", ctx.inertiafromgeom)
        if "meshdir" in a:
            ctx.meshdir = Path(a["meshdir"])
        for key in _UNSUPPORTED_COMPILER:
            # boundmass/boundinertia = 0 and balanceinertia = false are MuJoCo's defaults
            if key in a and a[key].strip().lower() not in ("0", "0.0", "false"):
                raise ctx.error(c, f"compiler attribute '{key}' changes mass properties and "
                                "is not supported; apply it to the model first")


def _meshes(ctx: _Ctx, root) -> dict[str, tuple[str, list[float] | None]]:
    base = ctx.file.parent / (ctx.meshdir or Path("."))
    out = {}
    for asset in root.findall("asset"):
        for m in asset.findall("mesh"):
            file = m.get("file")
            name = m.get("name") or (Path(file).stem if file else None)
            if name is None or file is None:
                continue
            out[name] = (str(base / file), _nums(ctx, m, dict(m.attrib), "scale", 3))
    home = Path(os.path.abspath(ctx.file.parent))
    outside = sorted({f for f, _ in out.values()
                      if not Path(os.path.abspath(f)).is_relative_to(home)})
    if outside:
        ctx.warnings.append(f"{len(outside)} mesh paths point outside the model's folder (e.g. "
                            f"{outside[0]}); kept as data in the record, never opened by rbc")
    missing = sorted({f for f, _ in out.values() if not Path(f).is_file()})
    if missing:
        ctx.warnings.append(f"{len(missing)} mesh files not found (e.g. {missing[0]}): "
                            "geoms using them are dropped")
    return out


def _keyframe(ctx: _Ctx, root, bodies: list[_Body]) -> tuple[dict[str, np.ndarray] | None,
                                                            str | None, list[str]]:
    """Per-joint qpos of the ``home`` (else first) keyframe, its name, and all key names."""
    keys = [k for kf in root.findall("keyframe") for k in kf.findall("key")]
    names = [k.get("name") or f"key{i}" for i, k in enumerate(keys)]
    if not keys:
        return None, None, []
    idx = names.index("home") if "home" in names else 0
    key = keys[idx]
    qpos = _nums(ctx, key, dict(key.attrib), "qpos")
    if qpos is None:
        return None, None, names
    nq = sum(j.nq for b in bodies for j in b.joints)
    if len(qpos) != nq:
        raise ctx.error(key, f"keyframe qpos has {len(qpos)} values; the model has nq={nq}")
    out, k = {}, 0
    for b in bodies:
        for j in b.joints:
            out[j.name] = np.array(qpos[k:k + j.nq])
            k += j.nq
    return out, names[idx], names


def _initials(ctx: _Ctx, bodies, joints, qpos, key_name, by_name, mj, path, root) -> None:
    """Joint ``initial`` values: the keyframe's qpos, else qpos0 where it is not zero."""
    kinds = {j.name: j for b in bodies for j in b.joints}
    for entry in joints:
        j = kinds.get(entry["name"])
        if j is None or j.kind == "free":
            continue
        if qpos is not None:
            v = qpos[j.name]
            entry["initial"] = float(v[0]) if j.nq == 1 else floats(v)
        else:
            if j.kind in ("hinge", "slide") and _ref(ctx, j, "ref") != 0.0:
                entry["initial"] = _ref(ctx, j, "ref")
            guess_inside_limits(entry)
    if qpos is None or not any(e.get("_connect") for e in joints):
        for e in joints:
            e.pop("_connect", None)
        return
    # spherical loop joints: the relative orientation of their frames at the keyframe
    from rbc.backends.mujoco_log import mujoco

    model = mj if mj is not None else load_mujoco(path, root)[0]
    if model is None:
        ctx.warnings.append("MuJoCo could not load the model: loop joints get no initial")
        for e in joints:
            e.pop("_connect", None)
        return
    data = mujoco.MjData(model)
    for b in bodies:
        for j in b.joints:
            jid = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, j.name)
            if jid >= 0:
                adr = model.jnt_qposadr[jid]
                data.qpos[adr:adr + j.nq] = qpos[j.name]
    mujoco.mj_kinematics(model, data)
    for e in joints:
        rel = e.pop("_connect", None)
        if rel is None:
            continue
        b1, b2 = e["parent"], e["child"]
        R1 = _xmat(model, data, b1)
        R2 = _xmat(model, data, b2)
        Rc = spatial.rotation_from_quat(np.array(rel))
        e["initial"] = floats(spatial.quat_from_rotation(R1.T @ R2 @ Rc))


def _xmat(model, data, name: str) -> np.ndarray:
    from rbc.backends.mujoco_log import mujoco

    bid = 0 if name == "world" else mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, name)
    return np.asarray(data.xmat[bid]).reshape(3, 3)


def _equalities(ctx: _Ctx, root, by_name: dict[str, _Body], used: set[str]
                ) -> tuple[list[dict], list[dict]]:
    """Loop joints from connect/weld and couplings from joint equalities."""
    joints: list[dict] = []
    couplings: list[dict] = []
    jointmap = {j.name: j for b in by_name.values() for j in b.joints}
    for eq in root.findall("equality"):
        for k, el in enumerate(eq):
            if not isinstance(el.tag, str):
                continue
            if el.tag not in ("connect", "weld", "joint"):
                raise ctx.error(el, f"unsupported equality <{el.tag}>",
                                choices=("connect", "weld", "joint"), got=el.tag)
            a = _resolve(ctx, el, "main", key="equality")
            if a.get("active", "true") == "false":
                ctx.warnings.append(f"inactive equality at line {el.sourceline} dropped")
                ctx.drop("inactive equalities")
                continue
            name = _unique(a.get("name") or f"{el.tag}{k + 1}", used)
            if el.tag == "joint":
                couplings.append(_joint_equality(ctx, el, a, name, jointmap))
                continue
            by_site = "site1" in a or "site2" in a
            if by_site:  # MuJoCo: the two sites coincide (connect) or are welded (weld)
                sites = _site_frames(ctx, root, by_name)
                (b1, S1), (b2, S2) = (_site_ref(ctx, el, a.get(k), sites, k)
                                      for k in ("site1", "site2"))
            else:
                b1 = _body_ref(ctx, el, a.get("body1"), by_name, "body1")
                b2 = _body_ref(ctx, el, a.get("body2", "world"), by_name, "body2")
            T1 = by_name[b1].world if b1 != "world" else se3()
            T2 = by_name[b2].world if b2 != "world" else se3()
            T21 = T2.actInv(T1)  # T_b2_b1 at qpos0
            if el.tag == "connect":
                anchor = (S1.translation if by_site
                          else np.array(_nums(ctx, el, a, "anchor", 3, [0.0, 0.0, 0.0])))
                A = se3(None, anchor)
                # the second anchor: site2 itself, or anchor at qpos0 in body2; aligned
                B = se3(T21.rotation, S2.translation if by_site else T21.act(anchor))
                joints.append({"name": name, "type": "spherical", "parent": b1, "child": b2,
                               **_frames(A, B), "_connect": floats(
                                   spatial.quat_from_rotation(T21.rotation))})
            elif by_site:
                joints.append({"name": name, "type": "fixed", "parent": b1, "child": b2,
                               **_frames(S1, S2)})
            else:
                rel = _nums(ctx, el, a, "relpose", 7, [0, 1, 0, 0, 0, 0, 0])
                if any(rel[3:]):
                    anchor = np.array(_nums(ctx, el, a, "anchor", 3, [0.0, 0.0, 0.0]))
                    R = spatial.rotation_from_quat(np.array(rel[3:]))
                    X = se3(R, np.array(rel[:3]) - R @ anchor)  # T_b1_b2
                else:
                    X = T21.inverse()
                joints.append({"name": name, "type": "fixed", "parent": b1, "child": b2,
                               **_frames(X, se3())})
    return joints, couplings


def _site_frames(ctx: _Ctx, root, by_name: dict[str, _Body]) -> dict[str, tuple[str, pin.SE3]]:
    """Every named site: ``{name: (body, T_body_site)}`` (world sites on body ``world``)."""
    out: dict[str, tuple[str, pin.SE3]] = {}
    owners = [(b.name, b.el, b.cls) for b in by_name.values()]
    owners += [("world", wb, "main") for wb in root.findall("worldbody")]
    for body, el, cls in owners:
        for s in el.findall("site"):
            if s.get("name") is not None:
                out[s.get("name")] = (body, _frame(ctx, s, _resolve(ctx, s, cls)))
    return out


def _site_ref(ctx: _Ctx, el, name: str | None, sites: dict, attr: str) -> tuple[str, pin.SE3]:
    if name is None:
        raise ctx.error(el, f"missing '{attr}' (site-based equalities name both sites)")
    if name not in sites:
        raise ctx.error(el, f"{attr}='{name}' is not a site", choices=sorted(sites), got=name)
    return sites[name]


def _body_ref(ctx: _Ctx, el, name: str | None, by_name, attr: str) -> str:
    if name is None:
        raise ctx.error(el, f"missing '{attr}'")
    if name != "world" and name not in by_name:
        raise ctx.error(el, f"{attr}='{name}' is not a body", choices=sorted(by_name), got=name)
    return name


def _joint_equality(ctx: _Ctx, el, a: dict, name: str, jointmap: dict[str, _Joint]) -> dict:
    """``q1 − q1₀ = Σ cₖ (q2 − q2₀)ᵏ`` → a linear coupling (only c0, c1, or no joint2) or a
    polynomial coupling ``q1 = h(q2)``, ``h = q1₀ + c0 + Σ_{k≥1} cₖ (q2 − q2₀)ᵏ`` (SI; MuJoCo's
    coefficients act on qpos in radians and metres, so they are not converted)."""
    coef = _nums(ctx, el, a, "polycoef", 5, [0.0, 1.0, 0.0, 0.0, 0.0])
    names = [a.get("joint1"), a.get("joint2")]
    if names[0] is None:
        raise ctx.error(el, "missing 'joint1'")
    ends = []
    for n in names:
        if n is None:
            ends.append(None)
            continue
        if n not in jointmap:
            raise ctx.error(el, f"'{n}' is not a joint", choices=sorted(jointmap), got=n)
        if jointmap[n].kind not in ("hinge", "slide"):
            raise ctx.error(el, f"joint '{n}' is not a hinge or slide")
        ends.append(jointmap[n])
    y, x = ends
    y0 = _ref(ctx, y, "ref")
    if x is not None and any(coef[2:]):
        while coef and coef[-1] == 0.0:
            coef = coef[:-1]
        return {"name": name, "type": "polynomial", "joint": y.name, "input": x.name,
                "coefficients": [float(y0 + coef[0]), *map(float, coef[1:])],
                "center": float(_ref(ctx, x, "ref"))}
    terms = {y.name: 1.0}
    offset = -y0 - coef[0]
    if x is not None:
        x0 = _ref(ctx, x, "ref")
        terms[x.name] = terms.get(x.name, 0.0) - coef[1]
        offset += coef[1] * x0
    return {"name": name, "type": "linear", "terms": terms, "offset": float(offset)}


def _tendons(ctx: _Ctx, root, bodies: list[_Body]) -> dict[str, dict[str, float]]:
    """Fixed tendons ``{name: {joint: coef}}`` (coefficients of the same joint summed).

    Raises:
        ModelImportError: a spatial tendon, an unnamed or repeated tendon, a joint that is
            not a hinge or slide, or an unsupported element.
    """
    kinds = {j.name: j.kind for b in bodies for j in b.joints}
    out: dict[str, dict[str, float]] = {}
    for sec in root.findall("tendon"):
        for el in sec:
            if not isinstance(el.tag, str):
                continue
            if el.tag == "spatial":
                raise ctx.error(el, f"spatial tendon '{el.get('name', '')}': its length follows "
                                "a path through sites and wrapping geoms (configuration "
                                "dependent); only fixed tendons (linear combinations of joint "
                                "coordinates) can be imported")
            if el.tag != "fixed":
                raise ctx.error(el, f"unsupported tendon <{el.tag}>", choices=("fixed",),
                                got=el.tag)
            a = _resolve(ctx, el, "main")
            name = a.get("name")
            if not name:
                raise ctx.error(el, "a fixed tendon needs a 'name' (actuators refer to it)")
            if name in out:
                raise ctx.error(el, f"tendon '{name}' is defined twice")
            terms: dict[str, float] = {}
            for j in el:
                if not isinstance(j.tag, str):
                    continue
                if j.tag != "joint":
                    raise ctx.error(j, f"unsupported element <{j.tag}> in a fixed tendon",
                                    choices=("joint",), got=j.tag)
                jn = j.get("joint")
                if jn not in kinds:
                    raise ctx.error(j, f"tendon joint '{jn}' is not a joint",
                                    choices=sorted(kinds), got=jn)
                if kinds[jn] not in ("hinge", "slide"):
                    raise ctx.error(j, f"tendon joint '{jn}' is a {kinds[jn]} joint; fixed "
                                    "tendons combine hinge and slide joints")
                coef = _nums(ctx, j, dict(j.attrib), "coef", 1)
                if coef is None:
                    raise ctx.error(j, "missing 'coef'")
                terms[jn] = terms.get(jn, 0.0) + coef[0]
            if not any(terms.values()):
                raise ctx.error(el, f"fixed tendon '{name}' has no joint with a nonzero coef")
            passive = [k for k in _TENDON_PASSIVE if k in a]
            if passive:
                ctx.warnings.append(f"tendon '{name}' (line {el.sourceline}): "
                                    f"{', '.join(passive)} not imported (a record port has no "
                                    "tendon spring, damping, friction or limits)")
                ctx.drop("tendon passive properties")
            out[name] = terms
    return out


def _actuators(ctx: _Ctx, root, bodies: list[_Body], joints: list[dict],
               tendons: dict[str, dict[str, float]]) -> list[dict]:
    """Actuators with gear transmissions and effort limits at the port: a joint, or a fixed
    tendon (the port ``ℓ = Σ coef·q``, written as ``terms``)."""
    kinds = {j.name: j.kind for b in bodies for j in b.joints}
    out: list[dict] = []
    taken: set[str] = set()
    names: set[str] = set()
    for sec in root.findall("actuator"):
        for el in sec:
            if not isinstance(el.tag, str):
                continue
            if el.tag not in _ACTUATORS:
                raise ctx.error(el, f"unsupported actuator <{el.tag}>", choices=_ACTUATORS,
                                got=el.tag)
            a = _resolve(ctx, el, "main")
            for t in ("site", "body", "cranksite", "slidersite"):
                if t in a:
                    raise ctx.error(el, f"actuator transmission '{t}' is not supported "
                                    "(only joint and fixed-tendon transmissions)")
            if "tendon" in a:
                tn = a["tendon"]
                if tn not in tendons:
                    raise ctx.error(el, f"actuator tendon '{tn}' is not a fixed tendon",
                                    choices=sorted(tendons), got=tn)
                port: dict = {"terms": dict(tendons[tn])}
                joint_names, label = list(tendons[tn]), f"tendon '{tn}'"
            else:
                jn = a.get("joint", a.get("jointinparent"))
                if jn not in kinds:
                    raise ctx.error(el, f"actuator joint '{jn}' is not a joint",
                                    choices=sorted(kinds), got=jn)
                if kinds[jn] not in ("hinge", "slide"):
                    raise ctx.error(el, f"actuator on the {kinds[jn]} joint '{jn}': only hinge "
                                    "and slide joints can be actuated in a record")
                port, joint_names, label = {"joint": jn}, [jn], f"joint '{jn}'"
            name = _unique(a.get("name") or f"{joint_names[0]}_actuator", names)
            if taken & set(joint_names):
                ctx.warnings.append(f"actuator '{name}': {label} is already driven by an "
                                    "actuator (dropped)")
                ctx.drop("second actuators on a joint")
                continue
            taken.update(joint_names)
            gear = _nums(ctx, el, a, "gear", None, [1.0])[0]
            if gear <= 0.0:
                raise ctx.error(el, f"gear {gear} ≤ 0 cannot be written as a transmission ratio")
            entry: dict = {"name": name, **port,
                           "transmission": {"type": "direct"} if gear == 1.0 else
                           {"type": "gear", "ratio": gear}}
            limits = _effort_limits(ctx, el, a, gear)
            if limits is not None:
                entry["effort_limits"] = limits
            out.append(entry)
    return out


def _effort_limits(ctx: _Ctx, el, a: dict, gear: float) -> list[float] | None:
    """Joint-side effort limits: ``gear · forcerange``; else, for a motor (force = ctrl) or a
    general actuator with fixed gain and no bias, ``gear · gain · ctrlrange``."""
    def limited(key: str) -> list[float] | None:
        rng = _nums(ctx, el, a, f"{key}range", 2)
        flag = _bool(ctx, el, a, f"{key}limited", None)
        on = (rng is not None and ctx.autolimits) if flag is None else flag
        return rng if on and rng is not None else None

    for key in ("force", "ctrl"):
        rng = limited(key)
        if rng is not None and rng[0] > rng[1]:
            raise ctx.error(el, f"{key}range {rng} is not increasing")
    force = limited("force")
    if force is not None:
        lo, hi = force
    else:
        ctrl = limited("ctrl")
        if ctrl is None:
            return None
        if el.tag == "motor":
            gain = 1.0
        elif el.tag == "general" and a.get("gaintype", "fixed") == "fixed" and a.get(
                "biastype", "none") == "none" and a.get("dyntype", "none") == "none":
            gain = _nums(ctx, el, a, "gainprm", None, [1.0])[0]
        else:
            return None
        lo, hi = sorted((gain * ctrl[0], gain * ctrl[1]))
    lo, hi = sorted((gear * lo, gear * hi))  # a negative gear flips the range
    return [float(lo), float(hi)] if lo < hi else None


def _header(ctx: _Ctx, path: Path, root, key_name: str | None, key_names: list[str]) -> list[str]:
    dropped = [s for s in _IGNORED_SECTIONS if root.find(s) is not None]
    lines = [f"Imported by `rbc import mjcf` from {path}",
             f"MuJoCo model '{root.get('model', path.stem)}'; angles converted to rad, "
             "quaternions (w, x, y, z).",
             "connect equalities -> spherical joints (second anchor from qpos0), weld -> fixed, "
             "joint equality -> linear coupling."]
    if root.find("tendon") is not None:
        lines.append("Fixed tendons: an actuator on a tendon drives the port Σ coef·q of its "
                     "joints (`terms`).")
    if dropped:
        lines.append("Dropped sections: " + ", ".join(dropped) + ".")
    if ctx.dropped:
        lines.append("Dropped: " + ", ".join(f"{n} {w}" for w, n in sorted(ctx.dropped.items()))
                     + ".")
    lines.append("Dropped: contact/solver parameters, servo gains, sensors, cameras, lights.")
    if key_names:
        lines.append("Keyframes: " + ", ".join(key_names) + f"; joint initial values from "
                     f"'{key_name}' (a floating root's pose is not kept).")
    else:
        lines.append("Keyframes: none; joint initial values are qpos0 (omitted where 0), or the "
                     "middle of the range where qpos0 lies outside it.")
    return lines


def _parse_tree(path: Path, repair: bool = False) -> tuple[_Ctx, object, list[_Body]]:
    """Read the file, compiler settings and defaults, and walk the body tree."""
    root = read_xml(path, "mujoco")
    ctx = _Ctx(path, repair=repair)
    _read_compiler(ctx, root)
    for d in root.findall("default"):
        _collect_defaults(ctx, d, {}, top=True)
    ctx.defaults.setdefault("main", {})
    bodies: list[_Body] = []
    for wb in root.findall("worldbody"):
        for sub in wb:
            if sub.tag not in ("body", "geom", "site", "camera", "light"):
                raise ctx.error(sub, f"unsupported element <{sub.tag}> in the worldbody")
        _walk(ctx, wb, None, se3(), "main", bodies, set())
    return ctx, root, bodies


def iter_bodies_qpos0(path: str | Path) -> Iterator[tuple[str, pin.SE3]]:
    """World pose ``T_world_body`` of every MJCF body at ``qpos0`` (document order).

    Raises:
        ModelImportError: as :func:`import_mjcf` for the body tree.
    """
    _, _, bodies = _parse_tree(Path(path))
    for b in bodies:
        yield b.name, b.world

"""A parsed :class:`~rbc.ir.record.Record` written back as a schema-v1 document (the
parser's inverse).

:func:`record_document` gives the plain ``dict`` in the layout of docs/records.md — SI units,
angles in rad, poses as ``{xyz, quat}`` with quaternions ``(w, x, y, z)``, every value the
record holds (defaults included only where they differ from the schema's) — and
:func:`record_yaml` its YAML text, floats in ``repr`` precision. Parsing the text gives the
same record (up to the parser's renormalisation of unit quaternions, ≤ 1 ulp); a test holds
that for every shipped record.

Used where rbc writes a record it assembled itself, e.g. the flat record of a composition
(:mod:`rbc.compose.flat`).
"""

from __future__ import annotations

import math

import yaml

from rbc.ir.record import (
    DEFAULT_FRICTION,
    SCHEMA_VERSION,
    Actuator,
    Attachment,
    Body,
    Coupling,
    Geometry,
    Joint,
    JointEffort,
    Pose,
    Profile,
    Record,
    SpringForce,
    Support,
    coordinate_names,
)


def _f(x: float) -> float:
    return float(x) + 0.0  # no -0.0 in the text


def _floats(xs) -> list[float]:
    return [_f(x) for x in xs]


def pose_document(pose: Pose) -> dict:
    """``{xyz, quat}`` of a pose (identity parts omitted)."""
    out: dict = {}
    if any(v != 0.0 for v in pose.xyz):
        out["xyz"] = _floats(pose.xyz)
    if tuple(pose.quat) != (1.0, 0.0, 0.0, 0.0):
        out["quat"] = _floats(pose.quat)
    return out


def _geometry(g: Geometry) -> dict:
    out: dict = {"type": g.type}
    for k, v in g.params:
        out[k] = v if isinstance(v, str) else (_floats(v) if isinstance(v, tuple) else _f(v))
    out.update(pose_document(g.pose))
    return out


def _body(b: Body) -> dict:
    out: dict = {"name": b.name}
    if b.kind == "fixed":
        out["fixed"] = True
    elif b.kind == "floating":
        out["floating"] = True
    if b.mass or b.kind != "fixed":
        out["mass"] = _f(b.mass)
        out["com"] = _floats(b.com)
        out["inertia"] = _floats(b.inertia)
    if b.frames:
        out["frames"] = {n: pose_document(p) for n, p in b.frames}
    if b.geometry:
        out["geometry"] = [_geometry(g) for g in b.geometry]
    return out


def _coords(values: tuple[float, ...]) -> float | list[float]:
    return _f(values[0]) if len(values) == 1 else _floats(values)


def _joint(j: Joint) -> dict:
    out: dict = {"name": j.name, "type": j.type, "parent": j.parent, "child": j.child}
    for key, pose in (("parent_frame", j.parent_frame), ("child_frame", j.child_frame)):
        doc = pose_document(pose)
        if doc:
            out[key] = doc
    if j.type == "planar":
        out["normal"] = _floats(j.axis or (0.0, 0.0, 1.0))
    elif j.axis is not None:
        out["axis"] = _floats(j.axis)
    if j.axes is not None:
        out["axes"] = [_floats(a) for a in j.axes]
    if j.lead is not None:
        out["lead"] = _f(j.lead)
    if j.lower:
        out["limits"] = {"lower": _coords(j.lower), "upper": _coords(j.upper)}
    for key in ("damping", "friction", "armature"):
        if getattr(j, key):
            out[key] = _f(getattr(j, key))
    if j.spring.stiffness or j.spring.rest:
        out["spring"] = {"stiffness": _f(j.spring.stiffness), "rest": _f(j.spring.rest)}
    if j.initial is not None:
        out["initial"] = _coords(j.initial)
    if j.cut_prefer:
        out["cut"] = "prefer"
    if j.cut_required:
        out["cut"] = "required"
    return out


def _attachment(a: Attachment) -> dict:
    return {"body": a.body, "xyz": _floats(a.xyz)}


def _profile(p: Profile) -> dict:
    """A profile's keys (schema ``PROFILE_KEYS``) with its ``type``."""
    if p.type == "polynomial":
        return {"type": p.type, "coefficients": _floats(p.coefficients), "center": _f(p.center)}
    out = {"type": p.type, "x": _floats(p.x), "y": _floats(p.y), "slope": _floats(p.slope)}
    if p.periodic:
        out["periodic"] = True
    return out


def _port(a: Actuator, joints: dict[str, Joint]) -> dict:
    """The one port key of an actuator (schema ``PORT_KEYS``)."""
    if a.joint is not None:
        return {"joint": a.joint}
    if a.terms:
        return {"terms": {n: _f(c) for n, c in a.terms}}
    if a.distance is not None:
        return {"distance": {"a": _attachment(a.distance[0]), "b": _attachment(a.distance[1])}}
    if a.profile is not None:
        return {"profile": {"joint": a.profile[0], **_profile(a.profile[1])}}
    names = {j: coordinate_names(joints[j].type, j)[1] for j, _, _ in a.velocity}
    return {"velocity": {names[j][k]: _f(c) for j, k, c in a.velocity}}


def _coupling(c: Coupling) -> dict:
    if c.profile is None:
        return {"name": c.name, "type": c.type, "terms": {n: _f(x) for n, x in c.terms},
                "offset": _f(c.offset)}
    return {"name": c.name, **_profile(c.profile), "joint": c.joint, "input": c.input}


def _actuator(a: Actuator, joints: dict[str, Joint]) -> dict:
    out: dict = {"name": a.name, **_port(a, joints)}
    if a.unit:
        out["unit"] = a.unit
    t = a.transmission
    out["transmission"] = ({"type": "gear", "ratio": _f(t.ratio)} if t.type == "gear" else
                           {"type": "screw", "lead": _f(t.lead)} if t.type == "screw" else
                           {"type": "direct"})
    for key in ("rotor_inertia", "viscous", "coulomb"):
        if getattr(a, key):
            out[key] = _f(getattr(a, key))
    if a.effort_limits is not None:
        out["effort_limits"] = _floats(a.effort_limits)
    if a.speed_limit is not None:
        out["speed_limit"] = _f(a.speed_limit)
    return out


def _force(f: SpringForce | JointEffort) -> dict:
    if isinstance(f, JointEffort):
        return {"name": f.name, "type": "joint_effort", "joint": f.joint, "value": _f(f.value)}
    return {"name": f.name, "type": "spring",
            "a": {"body": f.a.body, "xyz": _floats(f.a.xyz)},
            "b": {"body": f.b.body, "xyz": _floats(f.b.xyz)},
            "stiffness": _f(f.stiffness), "rest_length": _f(f.rest_length),
            "damping": _f(f.damping)}


def _support(s: Support) -> dict:
    out: dict = {"name": s.name, "body": s.body, **pose_document(s.pose), "kind": s.kind}
    if s.kind == "surface":
        out["half_extents"] = _floats(s.half_extents)
    if s.friction != DEFAULT_FRICTION:
        out["friction"] = _f(s.friction)
    if tuple(s.normal) != (0.0, 0.0, 1.0):
        out["normal"] = _floats(s.normal)
    if s.radius:
        out["radius"] = _f(s.radius)
    if s.solref:
        out["solref"] = _floats(s.solref)
    return out


def record_document(record: Record) -> dict:
    """The record as a schema-v1 mapping (module docstring)."""
    out: dict = {"rbc": SCHEMA_VERSION, "name": record.name,
                 "gravity": _floats(record.gravity),
                 "bodies": [_body(b) for b in record.bodies],
                 "joints": [_joint(j) for j in record.joints]}
    if record.actuators:
        joints = {j.name: j for j in record.joints}
        out["actuators"] = [_actuator(a, joints) for a in record.actuators]
    if record.couplings:
        out["couplings"] = [_coupling(c) for c in record.couplings]
    if record.forces:
        out["forces"] = [_force(f) for f in record.forces]
    if record.supports:
        out["supports"] = [_support(s) for s in record.supports]
    if record.tasks:
        out["tasks"] = [{"name": t.name, "body": t.body, **pose_document(t.pose),
                         "kind": t.kind} for t in record.tasks]
    if record.independent:
        out["independent"] = list(record.independent)
    if record.rolling:
        out["rolling"] = [{"name": w.name, "wheel": w.wheel, "radius": _f(w.radius),
                           "axis": _floats(w.axis), "center": _floats(w.center),
                           "normal": _floats(w.normal), "height": _f(w.height)}
                          for w in record.rolling]
    return out


class _Dumper(yaml.SafeDumper):
    """Safe dumper that keeps key order and never emits aliases."""

    def ignore_aliases(self, data: object) -> bool:  # noqa: D102
        return True


def _represent_float(dumper: yaml.SafeDumper, x: float) -> yaml.Node:
    if not math.isfinite(x):
        return dumper.represent_scalar("tag:yaml.org,2002:float",
                                       ".nan" if x != x else (".inf" if x > 0 else "-.inf"))
    return dumper.represent_scalar("tag:yaml.org,2002:float", repr(x))


_Dumper.add_representer(float, _represent_float)


def record_yaml(record: Record, header: str = "") -> str:
    """YAML text of :func:`record_document` (``header`` lines become ``#`` comments)."""
    head = "".join(f"# {line}\n" for line in header.splitlines())
    return head + yaml.dump(record_document(record), Dumper=_Dumper, sort_keys=False,
                            default_flow_style=None, width=10_000, allow_unicode=True)

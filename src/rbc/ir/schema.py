"""Record schema v1: the YAML text of a physical record → :class:`rbc.ir.record.Record`.

The reader behind the ``parse`` pass (``rbc.passes.parse``) and behind every loader of a
stored record (bundles keep the normalised record text). Input: a path to a YAML file (or,
for :func:`parse_record_text`, its text). Output: a frozen :class:`Record` in SI units
(angles in rad) whose every reference resolves, whose names are unique per section, whose
bodies are physically valid (mass ≥ 0, inertia positive semi-definite and satisfying
the triangle inequality) and whose every connected group of bodies contains a root (a ``fixed``
or ``floating`` body).

The schema is DESIGN.md §3; the field-by-field reference, coordinate layouts and examples
are in ``docs/records.md``. Every problem raises :class:`rbc.errors.RecordError` naming the
file, the YAML path (``joints[3].axis``), what was expected and the valid choices. The
parser never silently fixes a physically wrong record: the only normalisations are of
directions (axes) and of quaternions whose norm is already within 1e-6 of 1 — except the
quaternions of `initial` guesses, normalised within 1e-3 of unit norm with a note
(:attr:`Record.notes`): a guess is not a physical fact.

YAML is read by :func:`rbc.safeio.load_yaml` (``yaml.safe_load`` semantics, LibYAML-
accelerated): the document is composed once, its node graph is checked for duplicate mapping
keys (which ``safe_load`` would silently overwrite), merge keys hiding a field, alias bombs
and deep nesting, then constructed as plain data. The file itself is read by
:func:`rbc.safeio.read_text` (a regular file within the ``record`` size limit).
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from rbc.errors import InputError, RecordError
from rbc.ir.record import (
    COUPLING_TYPES,
    DEFAULT_FRICTION,
    FORCE_TYPES,
    JOINT_COORDINATES,
    JOINT_TYPES,
    PROFILE_TYPES,
    SCHEMA_VERSION,
    SUPPORT_KINDS,
    TASK_KINDS,
    TRANSMISSION_TYPES,
    Actuator,
    Attachment,
    Body,
    Coupling,
    Drive,
    Geometry,
    Joint,
    JointEffort,
    Pose,
    Profile,
    Record,
    Rolling,
    Spring,
    SpringForce,
    Support,
    Task,
    Transmission,
    coordinate_names,
    is_linear_speed,
)
from rbc.safeio import MAX_MAGNITUDE, gc_paused, load_yaml, read_text

__all__ = ["check_record", "check_unit_norms", "guess_quaternion", "parse_record",
           "parse_record_text", "rpy_to_quat"]

T = TypeVar("T")

ANGLE_UNITS: dict[str, float] = {"rad": 1.0, "deg": math.pi / 180.0}

# A quaternion is accepted (and renormalised) only if its norm is this close to 1: enough
# for values printed with ~7 significant digits, far below any real authoring mistake.
QUAT_NORM_TOL = 1e-6
# An `initial` quaternion is a guess (acquisition projects the whole guess onto the closure
# manifold): one whose norm is within this of 1 (e.g. typed with three decimals) is
# normalised with a note instead of refused. Frames and other physical data keep
# QUAT_NORM_TOL.
GUESS_QUAT_NORM_TOL = 1e-3
# Relative slack of the inertia checks (semi-definiteness and the triangle inequality):
# float64 round-off of principal moments computed by an eigen-decomposition (a few ulps of
# the trace), so a slender rod's zero axial moment computed as −1e-20 is still zero.
INERTIA_TRIANGLE_RTOL = 1e-12
# Two universal-joint axes are parallel when |a1 × a2| (unit axes) is below this: a
# sine of 1e-9 rad is far below any intended design angle.
PARALLEL_TOL = 1e-9
# A planar normal must equal [0, 0, 1] to round-off after normalisation.
PLANAR_NORMAL_TOL = 1e-12

GENERATED_HINT = (
    "a record holds only physical facts; rbc generates the spanning tree, cut joints, "
    "closure paths, modules, partitions and coordinate order"
)

# Top-level keys that would pre-author what the compiler generates → what they pre-author.
FORBIDDEN_TOP: dict[str, str] = {
    "tree": "the spanning tree",
    "spanning_tree": "the spanning tree",
    "forest": "the spanning tree",
    "cut_joints": "the cut joints",
    "cuts": "the cut joints",
    "chords": "the cut joints",
    "paths": "the closure paths",
    "modules": "the dependency modules",
    "partition": "the coordinate partition",
    "partitions": "the coordinate partition",
    "dependent": "the coordinate partition",
    "coordinates": "the coordinate order",
    "coordinate_order": "the coordinate order",
}
# Joint-level keys with the same meaning (``cut`` is handled apart: ``cut: prefer`` is a hint).
FORBIDDEN_JOINT: dict[str, str] = {
    "tree": "the spanning tree",
    "in_tree": "the spanning tree",
    "chord": "the cut joints",
    "path": "the closure paths",
    "module": "the dependency modules",
    "dependent": "the coordinate partition",
    "coordinate_index": "the coordinate order",
}


# --------------------------------------------------------------------------- reading helpers


@dataclass(frozen=True)
class _Ctx:
    """What every reader needs: the file name (for messages) and the angle scale, and where
    notes on accepted-but-adjusted guesses are collected (:attr:`Record.notes`)."""

    file: str
    angle: float = 1.0  # rad per record angle unit
    notes: list[str] = field(default_factory=list, compare=False)
    # body name -> (body, {frame name: pose}): built once per body, so that resolving the
    # frames of many joints on one body stays linear (not one dict per joint end)
    frame_maps: dict[str, tuple[Body, dict[str, Pose]]] = field(
        default_factory=dict, compare=False, repr=False)

    def error(self, path: str, problem: str, **kw: Any) -> RecordError:
        return RecordError(self.file, path, problem, **kw)

    def frames_of(self, body: Body) -> dict[str, Pose]:
        """The named frames of ``body`` as a dict (cached)."""
        cached = self.frame_maps.get(body.name)
        if cached is None or cached[0] is not body:
            cached = self.frame_maps[body.name] = (body, dict(body.frames))
        return cached[1]


def _join(path: str, key: object) -> str:
    return f"{path}.{key}" if path else str(key)


def _describe(value: object) -> str:
    """A short description of a YAML value for messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"boolean {str(value).lower()}"
    if isinstance(value, str):
        return f"string '{value}'"
    if isinstance(value, (int, float)):
        return f"number {value!r}"
    if isinstance(value, list):
        return f"a list of {len(value)}"
    if isinstance(value, dict):
        return "a mapping"
    return type(value).__name__


Conv = Callable[[_Ctx, str, Any], T]
_MISSING = object()


class _Reader:
    """A YAML mapping at a YAML path whose keys are checked against an allowed set.

    ``get(key, conv)`` converts a field with ``conv(ctx, path, value)`` so every error
    carries the field's path; missing required fields and unknown keys are reported here.
    """

    def __init__(
        self,
        ctx: _Ctx,
        path: str,
        value: Any,
        allowed: Sequence[str] | None,
        forbidden: Mapping[str, str] | None = None,
    ) -> None:
        if not isinstance(value, dict):
            raise ctx.error(path, f"wrong type: got {_describe(value)}", expected="a mapping")
        self.ctx, self.path, self.data = ctx, path, value
        for key in value:
            if not isinstance(key, str):
                raise ctx.error(path, f"key {key!r} is not a string", choices=allowed)
            if forbidden and key in forbidden:
                raise ctx.error(
                    _join(path, key),
                    f"'{key}' pre-authors {forbidden[key]}, which the compiler generates",
                    expected=GENERATED_HINT,
                )
        if allowed is not None:  # None: the caller calls only() once `type` is known
            self.only(allowed)

    def only(self, allowed: Sequence[str], context: str = "") -> None:
        """Raise on the first key not in ``allowed`` (with a did-you-mean)."""
        for key in self.data:
            if key not in allowed:
                where = f" for {context}" if context else ""
                raise self.ctx.error(
                    _join(self.path, key), f"unknown key '{key}'{where}", choices=allowed, got=key
                )

    def has(self, key: str) -> bool:
        return key in self.data

    def at(self, key: str) -> str:
        return _join(self.path, key)

    def get(self, key: str, conv: Conv[T], default: Any = _MISSING) -> T:
        if key not in self.data:
            if default is _MISSING:
                raise self.ctx.error(self.at(key), f"missing required field '{key}'")
            return default
        return conv(self.ctx, self.at(key), self.data[key])

    def sub(self, key: str, allowed: Sequence[str]) -> _Reader:
        return _Reader(self.ctx, self.at(key), self.data[key], allowed)


# PyYAML implements YAML 1.1, which reads exponent forms without a dot (``3.3e-4``, ``1e5``)
# as strings; YAML 1.2 (and every other reader) takes them as floats, so we do too.
_EXPONENT_FLOAT = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)[eE][-+]?[0-9]+")


def _number(ctx: _Ctx, path: str, value: Any) -> float:
    if isinstance(value, str) and _EXPONENT_FLOAT.fullmatch(value):
        value = float(value)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ctx.error(path, f"wrong type: got {_describe(value)}", expected="a number")
    x = float(value)
    if not math.isfinite(x):
        raise ctx.error(path, f"non-finite number {x!r}", expected="a finite number")
    if abs(x) > MAX_MAGNITUDE:
        raise ctx.error(path, f"magnitude {x:g} is beyond {MAX_MAGNITUDE:g}",
                        expected=f"a value within ±{MAX_MAGNITUDE:g} in SI units (larger ones "
                        "overflow or lose all precision in the dynamics)")
    return x


def _checked(pred: Callable[[float], bool], text: str) -> Conv[float]:
    """A number converter that also requires ``pred`` (``text`` says what is expected)."""

    def conv(ctx: _Ctx, path: str, value: Any) -> float:
        x = _number(ctx, path, value)
        if not pred(x):
            raise ctx.error(path, f"invalid value {x!r}", expected=text)
        return x

    return conv


_nonneg = _checked(lambda x: x >= 0.0, "a number ≥ 0")
_positive = _checked(lambda x: x > 0.0, "a number > 0")
_nonzero = _checked(lambda x: x != 0.0, "a nonzero number")


def _angle(ctx: _Ctx, path: str, value: Any) -> float:
    return _number(ctx, path, value) * ctx.angle


def _list(ctx: _Ctx, path: str, value: Any, n: int | None = None, what: str = "") -> list:
    if not isinstance(value, list) or (n is not None and len(value) != n):
        size = f"{n} " if n is not None else ""
        raise ctx.error(
            path, f"wrong shape: got {_describe(value)}", expected=f"a list of {size}{what}".strip()
        )
    return value


def _vector(n: int, item: Conv[float] = _number) -> Conv[tuple[float, ...]]:
    """Converter for a list of exactly ``n`` numbers (each checked by ``item``)."""

    def conv(ctx: _Ctx, path: str, value: Any) -> tuple[float, ...]:
        items = _list(ctx, path, value, n, "numbers")
        return tuple(item(ctx, f"{path}[{i}]", v) for i, v in enumerate(items))

    return conv


_vec3 = _vector(3)


def _unit(ctx: _Ctx, path: str, value: Any) -> tuple[float, float, float]:
    """A direction: 3 finite numbers, nonzero, returned normalised."""
    v = np.array(_vec3(ctx, path, value))
    norm = float(np.linalg.norm(v))
    if norm == 0.0:
        raise ctx.error(path, "zero axis", expected="a nonzero direction [x, y, z]")
    return tuple(float(c) for c in v / norm)  # type: ignore[return-value]


_CONTROL = re.compile(r"[\x00-\x1f\x7f\ud800-\udfff]")


def _string(ctx: _Ctx, path: str, value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise ctx.error(path, f"wrong type: got {_describe(value)}", expected="a non-empty string")
    bad = _CONTROL.search(value)
    if bad:
        raise ctx.error(path, f"control character {bad.group()!r} in {value!r}",
                        expected="printable text (names end up in XML exports and messages)")
    return value


def _flag(ctx: _Ctx, path: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise ctx.error(path, f"wrong type: got {_describe(value)}", expected="true or false")
    return value


def _choice(choices: Sequence[str]) -> Conv[str]:
    def conv(ctx: _Ctx, path: str, value: Any) -> str:
        if value not in choices:
            got = value if isinstance(value, str) else None
            raise ctx.error(path, f"invalid value {_describe(value)}", choices=choices, got=got)
        return value

    return conv


def _items(r: _Reader, key: str) -> list[tuple[str, Any]]:
    """The ``(path, item)`` pairs of an optional list field (``[]`` if absent or null)."""
    if not r.has(key) or r.data[key] is None:
        return []
    items = _list(r.ctx, r.at(key), r.data[key], what="mappings")
    return [(f"{r.at(key)}[{i}]", v) for i, v in enumerate(items)]


# --------------------------------------------------------------------------- poses


def rpy_to_quat(roll: float, pitch: float, yaw: float) -> tuple[float, float, float, float]:
    """Quaternion ``(w, x, y, z)`` of URDF roll-pitch-yaw [rad].

    ``R = Rz(yaw)·Ry(pitch)·Rx(roll)`` (fixed-axis x, then y, then z), i.e. the product
    ``q = q_z(yaw) ⊗ q_y(pitch) ⊗ q_x(roll)`` written out. Kept here rather than composed
    from ``spatial.rotation_from_rpy`` so that parsing does not import Pinocchio; the tests
    check it against scipy and against ``spatial``.
    """
    cr, sr = math.cos(roll / 2), math.sin(roll / 2)
    cp, sp = math.cos(pitch / 2), math.sin(pitch / 2)
    cy, sy = math.cos(yaw / 2), math.sin(yaw / 2)
    return (
        cr * cp * cy + sr * sp * sy,
        sr * cp * cy - cr * sp * sy,
        cr * sp * cy + sr * cp * sy,
        cr * cp * sy - sr * sp * cy,
    )


def _quat(ctx: _Ctx, path: str, value: Any) -> tuple[float, float, float, float]:
    """A unit quaternion ``[w, x, y, z]``; renormalised only if already within 1e-6 of 1."""
    q = np.array(_vector(4)(ctx, path, value))
    norm = float(np.linalg.norm(q))
    if abs(norm - 1.0) > QUAT_NORM_TOL:
        raise ctx.error(
            path,
            f"quaternion norm {norm!r} is not 1 (rbc never renormalises silently)",
            expected=f"a unit quaternion [w, x, y, z] (norm within {QUAT_NORM_TOL:g} of 1)",
        )
    return tuple(float(c) for c in q / norm)  # type: ignore[return-value]


POSE_KEYS: tuple[str, ...] = ("xyz", "rpy", "quat")
FRAME_REF_KEYS: tuple[str, ...] = (*POSE_KEYS, "frame")


def _pose(r: _Reader, frames: Mapping[str, Pose] | None = None, host: str = "") -> Pose:
    """The pose held in ``r``'s keys ``xyz`` + (``rpy`` | ``quat``), or ``frame: NAME``.

    ``frames`` are the named frames of the host body ``host`` (None: references not allowed).
    """
    if r.has("frame"):
        if frames is None:
            raise r.ctx.error(r.at("frame"), "a frame reference is not allowed here")
        for key in POSE_KEYS:
            if r.has(key):
                raise r.ctx.error(
                    r.at(key),
                    f"'{key}' cannot be combined with 'frame'",
                    expected="either {frame: NAME} or {xyz, rpy|quat}",
                )
        name = r.get("frame", _string)
        if name not in frames:
            raise r.ctx.error(
                r.at("frame"),
                f"body '{host}' has no frame '{name}'",
                choices=sorted(frames),
                got=name,
            )
        return frames[name]
    if r.has("rpy") and r.has("quat"):
        raise r.ctx.error(r.at("quat"), "both 'rpy' and 'quat' given", expected="one of them")
    xyz = r.get("xyz", _vec3, (0.0, 0.0, 0.0))
    if r.has("quat"):
        return Pose(xyz, r.get("quat", _quat))
    rpy = r.get("rpy", _vector(3, _angle), (0.0, 0.0, 0.0))
    return Pose(xyz, rpy_to_quat(*rpy))  # type: ignore[arg-type]


def _pose_field(r: _Reader, key: str, frames: Mapping[str, Pose] | None, host: str) -> Pose:
    """An optional nested pose field (``parent_frame: {...}``), identity if absent."""
    if not r.has(key):
        return Pose()
    return _pose(r.sub(key, FRAME_REF_KEYS if frames is not None else POSE_KEYS), frames, host)


def _ref(ctx: _Ctx, path: str, name: str, known: Collection[str], what: str) -> str:
    """Check that ``name`` is one of ``known`` (the names of a record section).

    ``known`` should be a dict or set (O(1) membership); the list of choices is built only
    for the error message.
    """
    if name not in known:
        raise ctx.error(path, f"unknown {what} '{name}'", choices=list(known), got=name)
    return name


# --------------------------------------------------------------------------- bodies

GEOMETRY_PARAMS: dict[str, dict[str, Conv[Any]]] = {
    "box": {"half_extents": _vector(3, _positive)},
    "sphere": {"radius": _positive},
    "capsule": {"radius": _positive, "fromto": _vector(6), "length": _positive},
    "cylinder": {"radius": _positive, "fromto": _vector(6), "length": _positive},
    "mesh": {"file": _string, "scale": _vector(3, _positive)},
}
GEOMETRY_REQUIRED: dict[str, tuple[str, ...]] = {
    "box": ("half_extents",),
    "sphere": ("radius",),
    "capsule": ("radius",),
    "cylinder": ("radius",),
    "mesh": ("file",),
}


def _geometry(ctx: _Ctx, path: str, value: Any) -> Geometry:
    r = _Reader(ctx, path, value, None)
    kind = r.get("type", _choice(tuple(GEOMETRY_PARAMS)))
    spec = GEOMETRY_PARAMS[kind]
    r.only(("type", *POSE_KEYS, *spec), f"a {kind} geometry")
    params = {
        k: r.get(k, conv) for k, conv in spec.items() if r.has(k) or k in GEOMETRY_REQUIRED[kind]
    }
    if kind in ("capsule", "cylinder") and ("fromto" in params) == ("length" in params):
        raise ctx.error(path, f"a {kind} needs exactly one of 'fromto' and 'length'")
    return Geometry(kind, tuple(sorted(params.items())), _pose(r))


BODY_KEYS = ("name", "fixed", "floating", "mass", "com", "inertia", "frames", "geometry")


def _body(ctx: _Ctx, path: str, value: Any) -> Body:
    r = _Reader(ctx, path, value, BODY_KEYS)
    name = r.get("name", _string)
    fixed, floating = r.get("fixed", _flag, False), r.get("floating", _flag, False)
    if fixed and floating:
        raise ctx.error(
            r.at("floating"),
            "a body cannot be both fixed and floating",
            expected="at most one of 'fixed: true' and 'floating: true'",
        )
    frames: dict[str, Pose] = {}
    if r.has("frames"):
        # any string key names a frame (non-string keys are refused by the reader)
        fr = _Reader(ctx, r.at("frames"), r.data["frames"], None)
        for key in fr.data:
            frames[key] = _pose(fr.sub(key, POSE_KEYS))
    return Body(
        name=name,
        kind="fixed" if fixed else "floating" if floating else "ordinary",
        mass=r.get("mass", _number, 0.0),
        com=r.get("com", _vec3, (0.0, 0.0, 0.0)),
        inertia=r.get("inertia", _vector(6), (0.0,) * 6),
        frames=tuple(frames.items()),
        geometry=tuple(_geometry(ctx, p, v) for p, v in _items(r, "geometry")),
    )


# --------------------------------------------------------------------------- joints


@dataclass(frozen=True)
class _JointSpec:
    """Per-type layout of a joint's record fields.

    ``angular`` flags each scalar coordinate of the limits/initial layout (converted by
    ``angle_unit`` when True); empty means the type takes no limits. ``n_initial`` is the
    length of ``initial`` (0: not allowed, 1: a scalar); ``quat_at`` is where a unit
    quaternion starts inside ``initial``.
    """

    angular: tuple[bool, ...]
    n_initial: int
    keys: tuple[str, ...] = ()
    quat_at: int | None = None


_MOVING = ("damping", "friction", "armature", "initial")
_ONE = (*_MOVING, "axis", "limits", "spring")
JOINT_SPECS: dict[str, _JointSpec] = {
    "fixed": _JointSpec((), 0),
    "revolute": _JointSpec((True,), 1, _ONE),
    "prismatic": _JointSpec((False,), 1, _ONE),
    "helical": _JointSpec((True,), 1, (*_ONE, "lead")),
    "universal": _JointSpec((True, True), 2, (*_MOVING, "axes", "limits")),
    "cylindrical": _JointSpec((False, True), 2, (*_MOVING, "axis", "limits")),
    "planar": _JointSpec((False, False, True), 3, (*_MOVING, "normal", "limits")),
    "spherical": _JointSpec((), 4, _MOVING, quat_at=0),
    "free": _JointSpec((), 7, _MOVING, quat_at=3),
}
assert set(JOINT_SPECS) == set(JOINT_TYPES)
ONE_COORDINATE: tuple[str, ...] = ("revolute", "prismatic", "helical")
JOINT_COMMON = ("name", "type", "parent", "child", "parent_frame", "child_frame", "cut")


def _coords(ctx: _Ctx, path: str, value: Any, spec: _JointSpec) -> tuple[float, ...]:
    """A per-coordinate value in the joint's layout (scalar for 1-coordinate joints)."""
    n = len(spec.angular)
    if n == 1:
        values = (_number(ctx, path, value),)
    else:
        values = _vector(n)(ctx, path, value)
    return tuple(
        v * (ctx.angle if ang else 1.0) for v, ang in zip(values, spec.angular, strict=True)
    )


def _initial(ctx: _Ctx, path: str, value: Any, spec: _JointSpec) -> tuple[float, ...]:
    if spec.quat_at is None:
        return _coords(ctx, path, value, spec)
    values = _vector(spec.n_initial)(ctx, path, value)
    q = _guess_quat(ctx, path, list(values[spec.quat_at : spec.quat_at + 4]))
    return values[: spec.quat_at] + q


def _guess_quat(ctx: _Ctx, path: str, value: list[float]) -> tuple[float, float, float, float]:
    """The quaternion of an `initial` guess (:func:`guess_quaternion`), its note collected
    in ``ctx.notes``."""
    try:
        q, note = guess_quaternion(value)
    except ValueError as exc:
        raise ctx.error(path, str(exc),
                        expected=f"a unit quaternion [w, x, y, z] (an `initial` guess within "
                        f"{GUESS_QUAT_NORM_TOL:g} of unit norm is normalised)") from None
    if note:
        ctx.notes.append(f"{ctx.file}: {path}: {note}")
    return q


def guess_quaternion(value: Sequence[float]) -> tuple[tuple[float, float, float, float],
                                                      str | None]:
    """A guessed quaternion ``[w, x, y, z]`` normalised: ``(unit quaternion, note)``; the note
    (None when the norm was within QUAT_NORM_TOL of 1) says it was normalised.

    Raises:
        ValueError: the norm is further than GUESS_QUAT_NORM_TOL from 1.
    """
    q = np.array(value, dtype=float)
    norm = float(np.linalg.norm(q))
    if not abs(norm - 1.0) <= GUESS_QUAT_NORM_TOL:
        raise ValueError(f"quaternion norm {norm!r} is not 1")
    note = None
    if abs(norm - 1.0) > QUAT_NORM_TOL:
        note = (f"the guessed quaternion has norm {norm:.6g}; normalised (an `initial` value "
                "is a guess, not a constraint)")
    return tuple(float(c) for c in q / norm), note  # type: ignore[return-value]


def _limits(r: _Reader, spec: _JointSpec) -> tuple[tuple[float, ...], tuple[float, ...]]:
    lr = r.sub("limits", ("lower", "upper"))
    lower, upper = (lr.get(k, lambda c, p, v: _coords(c, p, v, spec)) for k in ("lower", "upper"))
    for i, (lo, hi) in enumerate(zip(lower, upper, strict=True)):
        if not lo < hi:
            where = f" (coordinate {i})" if len(lower) > 1 else ""
            raise r.ctx.error(
                lr.path,
                f"lower {lo!r} is not below upper {hi!r}{where}",
                expected="lower < upper (in rad or m)",
            )
    return lower, upper


def _universal_axes(ctx: _Ctx, path: str, value: Any) -> tuple[tuple[float, ...], ...]:
    items = _list(ctx, path, value, 2, "axes [[x, y, z], [x, y, z]]")
    a1, a2 = (_unit(ctx, f"{path}[{i}]", v) for i, v in enumerate(items))
    if np.linalg.norm(np.cross(a1, a2)) < PARALLEL_TOL:
        raise ctx.error(path, "the two axes are parallel", expected="two non-parallel axes")
    return a1, a2


def _planar_normal(ctx: _Ctx, path: str, value: Any) -> tuple[float, ...]:
    n = _unit(ctx, path, value)
    if np.linalg.norm(np.subtract(n, (0.0, 0.0, 1.0))) > PLANAR_NORMAL_TOL:
        raise ctx.error(
            path,
            f"unsupported planar normal {list(n)}",
            expected="[0, 0, 1] (the only supported planar normal)",
        )
    return n


#: ``cut`` values: ``prefer`` (a hint) and ``required`` (a cut the user declares).
CUT_VALUES = ("prefer", "required")


def _cut(ctx: _Ctx, path: str, value: Any) -> str:
    if value not in CUT_VALUES:
        raise ctx.error(
            path,
            f"'cut' = {_describe(value)} would pre-author the cut joints, "
            "which the compiler generates",
            expected="'cut: prefer' (a hint) or 'cut: required' (a declared cut); the "
            "spanning tree is still the compiler's",
        )
    return value


def _joint(ctx: _Ctx, path: str, value: Any, bodies: Mapping[str, Body]) -> Joint:
    r = _Reader(ctx, path, value, None, FORBIDDEN_JOINT)
    name = r.get("name", _string)
    kind = r.get("type", _choice(JOINT_TYPES))
    spec = JOINT_SPECS[kind]
    r.only((*JOINT_COMMON, *spec.keys), f"a {kind} joint")
    ends = {}
    for end in ("parent", "child"):
        host = _ref(ctx, r.at(end), r.get(end, _string), bodies, "body")
        frames = ctx.frames_of(bodies[host])
        ends[end] = host, _pose_field(r, f"{end}_frame", frames, host)
    parent, child = ends["parent"][0], ends["child"][0]
    if kind != "fixed" and bodies[parent].kind == bodies[child].kind == "fixed":
        ctx.notes.append(f"{ctx.file}: {path}: the {kind} joint '{name}' connects two fixed "
                         f"bodies ('{parent}', '{child}'), both welded to the world: it cannot "
                         "move (its coordinates are held by the closure)")
    needs_axis = "axis" in spec.keys
    axis = r.get("axis", _unit) if needs_axis else None
    if kind == "planar":
        axis = r.get("normal", _planar_normal, (0.0, 0.0, 1.0))
    lower, upper = _limits(r, spec) if r.has("limits") else ((), ())
    initial = r.get("initial", lambda c, p, v: _initial(c, p, v, spec), None)
    if initial is not None and lower:  # the layouts match where a type takes limits
        for k, (x, lo, hi) in enumerate(zip(initial, lower, upper, strict=True)):
            if not lo <= x <= hi:
                at = r.at("initial") + (f"[{k}]" if len(initial) > 1 else "")
                raise ctx.error(at, f"initial value {x:g} is outside the joint's limits "
                                    f"[{lo:g}, {hi:g}] (SI units: rad or m)",
                                expected="an initial guess inside limits.lower .. "
                                         "limits.upper (or widen the limits)")
    spring = Spring()
    if r.has("spring"):
        sr = r.sub("spring", ("stiffness", "rest"))
        rest = sr.get("rest", _angle if spec.angular[0] else _number, 0.0)
        spring = Spring(sr.get("stiffness", _nonneg), rest)
    return Joint(
        name=name,
        type=kind,
        parent=ends["parent"][0],
        child=ends["child"][0],
        parent_frame=ends["parent"][1],
        child_frame=ends["child"][1],
        axis=axis,  # type: ignore[arg-type]
        axes=r.get("axes", _universal_axes) if kind == "universal" else None,  # type: ignore[arg-type]
        lead=r.get("lead", _nonzero) if kind == "helical" else None,
        lower=lower,
        upper=upper,
        damping=r.get("damping", _nonneg, 0.0),
        friction=r.get("friction", _nonneg, 0.0),
        spring=spring,
        armature=r.get("armature", _nonneg, 0.0),
        initial=initial,
        cut_prefer=r.get("cut", _cut, None) == "prefer",
        cut_required=r.get("cut", _cut, None) == "required",
    )


# --------------------------------------------------------------------------- interfaces


TRANSMISSION_PARAMS: dict[str, tuple[str, ...]] = {
    "direct": (),
    "gear": ("ratio",),
    "screw": ("lead",),
}


def _transmission(ctx: _Ctx, path: str, value: Any) -> Transmission:
    r = _Reader(ctx, path, value, None)
    kind = r.get("type", _choice(TRANSMISSION_TYPES))
    r.only(("type", *TRANSMISSION_PARAMS[kind]), f"a {kind} transmission")
    if kind == "gear":
        return Transmission(kind, ratio=r.get("ratio", _positive))
    if kind == "screw":
        return Transmission(kind, lead=r.get("lead", _positive))
    return Transmission(kind)


def _effort_limits(ctx: _Ctx, path: str, value: Any) -> tuple[float, float]:
    lo, hi = _vector(2)(ctx, path, value)
    if not lo < hi:
        raise ctx.error(
            path,
            f"lower {lo!r} is not below upper {hi!r}",
            expected="[lower, upper] with lower < upper",
        )
    return lo, hi


ACTUATOR_KEYS = (
    "name",
    "joint",
    "transmission",
    "rotor_inertia",
    "effort_limits",
    "speed_limit",
    "viscous",
    "coulomb",
    "terms",
    "distance",
    "profile",
    "velocity",
    "effort",
    "unit",
    "drive",
)
#: Keys of an actuator's ``drive`` (all optional; docs/records.md "Drives").
DRIVE_KEYS = ("lag", "torque_constant", "stall", "no_load_speed", "efficiency")
#: The keys that define an actuator's port (exactly one is given).
PORT_KEYS = ("joint", "terms", "distance", "profile", "velocity")
PORT_UNITS = ("m", "rad")


def _actuator(ctx: _Ctx, path: str, value: Any, joints: Sequence[Joint] = ()) -> Actuator:
    """One actuator; ``joints`` (the record's) resolve a velocity port's coordinate names."""
    r = _Reader(ctx, path, value, ACTUATOR_KEYS)
    given = [k for k in PORT_KEYS if r.has(k)]
    if len(given) != 1:
        raise ctx.error(r.at(given[1]) if len(given) > 1 else path,
                        "an actuator has exactly one port definition: 'joint' (a joint port), "
                        "'terms' (a fixed tendon ℓ = Σ c·q), 'distance' (between two "
                        "attachment points), 'profile' (ℓ = h(q) of one joint) or "
                        "'velocity' (a velocity-level transmission ℓ̇ = Σ c·v)",
                        expected="one of " + ", ".join(PORT_KEYS),
                        got=", ".join(given) or None)
    kind = given[0]
    if r.has("effort") and kind != "velocity":
        raise ctx.error(r.at("effort"), "'effort' (the effort dual of a velocity map) is for "
                        "velocity ports", expected="velocity: {...} with it, or no 'effort'")
    if r.has("unit") and kind not in ("profile", "velocity"):
        raise ctx.error(r.at("unit"), f"a {kind} port's unit follows from its geometry",
                        expected="'unit' only on profile and velocity ports")
    velocity = r.get("velocity", _velocity_terms, ())
    if r.has("effort"):
        _check_effort_dual(ctx, r.at("effort"), velocity, _velocity_terms(ctx, r.at("effort"),
                                                                          r.data["effort"]))
    coords = velocity_coordinates(joints) if velocity else {}
    for name, _ in velocity:
        _ref(ctx, f"{r.at('velocity')}.{name}", name, coords, "velocity coordinate")
    return Actuator(
        terms=_terms(ctx, r) if kind == "terms" else (),
        name=r.get("name", _string),
        joint=r.get("joint", _string, None),
        transmission=r.get("transmission", _transmission, Transmission()),
        rotor_inertia=r.get("rotor_inertia", _nonneg, 0.0),
        effort_limits=r.get("effort_limits", _effort_limits, None),
        speed_limit=r.get("speed_limit", _positive, None),
        viscous=r.get("viscous", _nonneg, 0.0),
        coulomb=r.get("coulomb", _nonneg, 0.0),
        distance=r.get("distance", _distance, None),
        profile=r.get("profile", _profile_port, None),
        velocity=tuple((*coords[n], c) for n, c in velocity),
        unit=r.get("unit", _choice(PORT_UNITS), ""),
        drive=r.get("drive", _drive, None),
    )


_efficiency = _checked(lambda x: 0.0 < x <= 1.0, "a number in (0, 1]")


def _drive(ctx: _Ctx, path: str, value: Any) -> Drive:
    """An actuator's drive dynamics and losses (:class:`Drive`)."""
    r = _Reader(ctx, path, value, DRIVE_KEYS)
    if r.has("stall") != r.has("no_load_speed"):
        raise ctx.error(path, "a torque–speed limit needs both 'stall' and 'no_load_speed'",
                        expected="both keys, or neither")
    return Drive(lag=r.get("lag", _nonneg, 0.0),
                 torque_constant=r.get("torque_constant", _positive, 1.0),
                 stall=r.get("stall", _positive, math.inf),
                 no_load_speed=r.get("no_load_speed", _positive, math.inf),
                 efficiency=r.get("efficiency", _efficiency, 1.0))


def _distance(ctx: _Ctx, path: str, value: Any) -> tuple[Attachment, Attachment]:
    r = _Reader(ctx, path, value, ("a", "b"))
    return r.get("a", _attachment), r.get("b", _attachment)


def _velocity_terms(ctx: _Ctx, path: str, value: Any) -> tuple[tuple[str, float], ...]:
    """``{coordinate: coefficient}`` of a velocity map (names resolved by check_record)."""
    r = _Reader(ctx, path, value, None)  # free keys: coordinate names
    if not r.data:
        raise ctx.error(path, "empty velocity map", expected="{coordinate: coefficient, ...}")
    return tuple((k, r.get(k, _number)) for k in r.data)


#: Relative tolerance of the effort-dual check of a velocity map: both are read from
#: decimal text, so a dual written with the same digits agrees exactly; 1e-12 admits
#: round-off of a coefficient computed by the author (0.1 + 0.2 vs 0.3).
DUAL_RTOL = 1e-12


def _check_effort_dual(ctx: _Ctx, path: str, velocity: Sequence[tuple[str, float]],
                       effort: Sequence[tuple[str, float]]) -> None:
    """Virtual power ``f ℓ̇ = τᵀ v`` for every v holds iff the effort map is the transpose
    of the velocity map: the same coordinates with the same coefficients."""
    vel, eff = dict(velocity), dict(effort)
    for name in sorted(set(vel) | set(eff)):
        c, d = vel.get(name, 0.0), eff.get(name, 0.0)
        if abs(c - d) > DUAL_RTOL * max(abs(c), abs(d)):
            raise ctx.error(f"{path}.{name}", f"effort coefficient {d!r} on '{name}' is not the "
                            f"velocity coefficient {c!r}: the effort map of a transmission is "
                            "the transpose of its velocity map (virtual power f·ℓ̇ = τᵀ·v)",
                            expected=f"{c!r} (or leave out 'effort': it is implied)")


def _floats(ctx: _Ctx, path: str, value: Any) -> tuple[float, ...]:
    items = _list(ctx, path, value, what="numbers")
    return tuple(_number(ctx, f"{path}[{i}]", v) for i, v in enumerate(items))


PROFILE_KEYS: dict[str, tuple[str, ...]] = {
    "polynomial": ("coefficients", "center"),
    "table": ("x", "y", "slope", "periodic"),
}
#: Relative agreement of a periodic table's end values and slopes (decimal round-off).
PERIODIC_RTOL = 1e-12


def _profile(r: _Reader, kind: str, extra: tuple[str, ...]) -> Profile:
    """A :class:`Profile` from ``r`` (whose other allowed keys are ``extra``)."""
    ctx = r.ctx
    r.only((*extra, *PROFILE_KEYS[kind]), f"a {kind} profile")
    if kind == "polynomial":
        coef = r.get("coefficients", _floats)
        if not coef:
            raise ctx.error(r.at("coefficients"), "no coefficients",
                            expected="[c0, c1, …]: h(x) = Σ c_i (x − center)^i")
        return Profile(kind, coefficients=coef, center=r.get("center", _number, 0.0))
    x, y, slope = (r.get(k, _floats) for k in ("x", "y", "slope"))
    if len(x) < 2 or len(y) != len(x) or len(slope) != len(x):
        raise ctx.error(r.path, f"a table needs at least 2 knots and equal lengths (x {len(x)}, "
                        f"y {len(y)}, slope {len(slope)})",
                        expected="x, y, slope: lists of the same length ≥ 2")
    for i in range(1, len(x)):
        if not x[i] > x[i - 1]:
            raise ctx.error(f"{r.at('x')}[{i}]", f"x is not strictly increasing ({x[i - 1]!r} "
                            f"then {x[i]!r})", expected="strictly increasing knots")
    periodic = r.get("periodic", _flag, False)
    if periodic:
        for key, vals in (("y", y), ("slope", slope)):
            a, b = vals[0], vals[-1]
            if abs(a - b) > PERIODIC_RTOL * max(abs(a), abs(b), 1.0):
                raise ctx.error(r.at(key), f"a periodic table ends where it starts, but {key} "
                                f"goes from {a!r} to {b!r}", expected=f"{key}[-1] = {key}[0]")
    return Profile(kind, x=x, y=y, slope=slope, periodic=periodic)


def _profile_port(ctx: _Ctx, path: str, value: Any) -> tuple[str, Profile]:
    r = _Reader(ctx, path, value, None)
    kind = r.get("type", _choice(PROFILE_TYPES))
    return r.get("joint", _string), _profile(r, kind, ("joint", "type"))


def _terms(ctx: _Ctx, r: _Reader) -> tuple[tuple[str, float], ...]:
    """The ``terms: {joint: coefficient, ...}`` mapping of a coupling or a tendon port."""
    # any string key names a joint (non-string keys are refused by the reader)
    terms = _Reader(ctx, r.at("terms"), r.data["terms"], None) if r.has("terms") else None
    if terms is None or not terms.data:
        raise ctx.error(
            r.at("terms"), "missing or empty 'terms'", expected="{joint: coefficient, ...}"
        )
    return tuple((k, terms.get(k, _number)) for k in terms.data)


COUPLING_COMMON = ("name", "type")


def _coupling(ctx: _Ctx, path: str, value: Any) -> Coupling:
    r = _Reader(ctx, path, value, None)
    name = r.get("name", _string)
    kind = r.get("type", _choice(COUPLING_TYPES))
    if kind == "linear":
        r.only((*COUPLING_COMMON, "terms", "offset"), "a linear coupling")
        return Coupling(name=name, type=kind, terms=_terms(ctx, r),
                        offset=r.get("offset", _number, 0.0))
    profile = _profile(r, kind, (*COUPLING_COMMON, "joint", "input"))
    joint, inp = r.get("joint", _string), r.get("input", _string)
    if joint == inp:
        raise ctx.error(r.at("input"), f"the coupling relates joint '{joint}' to itself",
                        expected="an input joint other than 'joint'")
    return Coupling(name=name, type=kind, joint=joint, input=inp, profile=profile)


def _attachment(ctx: _Ctx, path: str, value: Any) -> Attachment:
    r = _Reader(ctx, path, value, ("body", "xyz"))
    return Attachment(r.get("body", _string), r.get("xyz", _vec3, (0.0, 0.0, 0.0)))


FORCE_KEYS: dict[str, tuple[str, ...]] = {
    "spring": ("a", "b", "stiffness", "rest_length", "damping"),
    "joint_effort": ("joint", "value"),
}


def _force(ctx: _Ctx, path: str, value: Any) -> SpringForce | JointEffort:
    r = _Reader(ctx, path, value, None)
    name = r.get("name", _string)
    kind = r.get("type", _choice(FORCE_TYPES))
    r.only(("name", "type", *FORCE_KEYS[kind]), f"a {kind} force")
    if kind == "joint_effort":
        return JointEffort(name, r.get("joint", _string), r.get("value", _number))
    return SpringForce(
        name=name,
        a=r.get("a", _attachment),
        b=r.get("b", _attachment),
        stiffness=r.get("stiffness", _nonneg),
        rest_length=r.get("rest_length", _nonneg),
        damping=r.get("damping", _nonneg, 0.0),
    )


def _placed(
    ctx: _Ctx, path: str, value: Any, bodies: Mapping[str, Body], extra: tuple[str, ...]
) -> tuple[_Reader, str, str, Pose]:
    """Shared part of supports and tasks: ``name``, ``body`` and an inline pose or frame."""
    r = _Reader(ctx, path, value, ("name", "body", *FRAME_REF_KEYS, *extra))
    name = r.get("name", _string)
    body = _ref(ctx, r.at("body"), r.get("body", _string), bodies, "body")
    return r, name, body, _pose(r, ctx.frames_of(bodies[body]), body)


SUPPORT_KEYS = ("kind", "half_extents", "friction", "normal", "radius", "solref")


def _support(ctx: _Ctx, path: str, value: Any, bodies: Mapping[str, Body]) -> Support:
    """A support: ``kind`` defaults to ``surface`` when ``half_extents`` is given, else
    ``point``; a surface needs positive ``half_extents``, a point takes ``radius`` instead."""
    r, name, body, pose = _placed(ctx, path, value, bodies, SUPPORT_KEYS)
    # support names make mode names ("FL+FR"), and those name bundle groups; a '/' is a
    # composed record's member prefix ("h1/sole_l"), refused where it would make a mode name
    # (rbc.model.modes)
    problem = "contains '+'" if "+" in name else (
        f"is '{name}'" if name in (".", "..") else None)
    if problem:
        raise ctx.error(r.at("name"), f"support name {name!r} {problem}",
                        expected="a plain name: no '+', not '.' or '..' (support names are "
                                 "joined with '+' into mode names)")
    kind = r.get("kind", _choice(SUPPORT_KINDS), "surface" if r.has("half_extents") else "point")
    if kind == "surface":
        if not r.has("half_extents"):
            raise ctx.error(r.at("half_extents"), "a surface support needs 'half_extents'",
                            expected="[x, y] half sizes of the contact rectangle [m], each > 0")
        if r.has("radius"):
            raise ctx.error(r.at("radius"), "'radius' is for point supports",
                            expected="half_extents for a surface, radius for a point")
        half = r.get("half_extents", _vector(2, _positive))
    else:
        if r.has("half_extents"):
            raise ctx.error(r.at("half_extents"), "a point support has no contact rectangle",
                            expected="kind: surface with half_extents, or a point without them")
        half = ()
    solref = r.get("solref", _vector(2, _positive), ())
    return Support(name, body, pose, half, kind, r.get("friction", _nonneg, DEFAULT_FRICTION),
                   r.get("normal", _unit, (0.0, 0.0, 1.0)), r.get("radius", _nonneg, 0.0),
                   solref)


def _task(ctx: _Ctx, path: str, value: Any, bodies: Mapping[str, Body]) -> Task:
    r, name, body, pose = _placed(ctx, path, value, bodies, ("kind",))
    return Task(name, body, pose, r.get("kind", _choice(TASK_KINDS), "position"))


ROLLING_KEYS = ("name", "wheel", "radius", "axis", "center", "normal", "height")


def _rolling(ctx: _Ctx, path: str, value: Any, bodies: Mapping[str, Body]) -> Rolling:
    """A rolling wheel: the body, the disk (radius, axis, center) and the ground plane."""
    r = _Reader(ctx, path, value, ROLLING_KEYS)
    name = r.get("name", _string)
    wheel = _ref(ctx, r.at("wheel"), r.get("wheel", _string), bodies, "body")
    if bodies[wheel].kind == "fixed":
        raise ctx.error(r.at("wheel"), f"body '{wheel}' is fixed to the world and cannot roll",
                        expected="a moving body (the wheel)")
    return Rolling(name, wheel, r.get("radius", _positive), r.get("axis", _unit),
                   r.get("center", _vec3, (0.0, 0.0, 0.0)),
                   r.get("normal", _unit, (0.0, 0.0, 1.0)), r.get("height", _number, 0.0))


def _independent(ctx: _Ctx, path: str, value: Any) -> tuple[str, ...]:
    items = _list(ctx, path, value, what="joint names")
    return tuple(_string(ctx, f"{path}[{i}]", v) for i, v in enumerate(items))


# --------------------------------------------------------------------------- semantic checks


def _check_unique(ctx: _Ctx, section: str, names: Sequence[str]) -> None:
    seen: dict[str, int] = {}
    for i, name in enumerate(names):
        if name in seen:
            raise ctx.error(
                f"{section}[{i}].name",
                f"duplicate name '{name}' (already used by {section}[{seen[name]}])",
                expected=f"unique names among {section}",
            )
        seen[name] = i


def inertia_problem(mass: float, tensor: np.ndarray) -> str | None:
    """Why mass properties are not those of a physical rigid body, or None if they are.

    Mass ≥ 0; the (3, 3) inertia about the COM positive semi-definite with principal
    moments obeying the triangle inequality (both with the relative slack
    :data:`INERTIA_TRIANGLE_RTOL` of the trace): a slender rod's zero axial moment and a
    point mass's zero tensor are valid. Whether the *mechanism* has enough inertia is decided
    later, on the reduced inertia (``dynamics.mass_pd``). The one definition behind the
    parser and the importers (:mod:`rbc.backends.record_writer`).
    """
    if mass < 0.0:
        return f"negative mass {mass!r}"
    t = np.asarray(tensor, dtype=float)
    if not t.any():
        return None
    if not np.isfinite(t).all():
        return "inertia is not finite"
    # the checks are scale-free: eigenvalues of the tensor over its largest entry (an entry
    # near 1e308 overflowed LAPACK: 'Eigenvalues did not converge', found by the import fuzz)
    peak = float(np.abs(t).max())
    unit = t / peak
    m = np.linalg.eigvalsh(0.5 * (unit + unit.T))  # principal moments over peak
    slack = INERTIA_TRIANGLE_RTOL * float(np.abs(m).sum())
    if m[0] < -slack:
        return f"inertia is not positive semi-definite (principal moments {(m * peak).tolist()})"
    if m[2] > m[0] + m[1] + slack:
        return f"principal moments {(m * peak).tolist()} break the triangle inequality"
    return None


def _check_inertia(ctx: _Ctx, path: str, body: Body) -> None:
    """The body's mass properties are physical (:func:`inertia_problem`)."""
    if body.mass < 0.0:
        raise ctx.error(f"{path}.mass", f"negative mass {body.mass!r}", expected="a mass ≥ 0 [kg]")
    ixx, iyy, izz, ixy, ixz, iyz = body.inertia
    problem = inertia_problem(body.mass, np.array([[ixx, ixy, ixz], [ixy, iyy, iyz],
                                                   [ixz, iyz, izz]]))
    if problem is None:
        return
    if "triangle" in problem:
        expected = "each principal moment ≤ the sum of the other two"
    else:
        expected = ("a positive semi-definite tensor [ixx, iyy, izz, ixy, ixz, iyz] about "
                    "the COM [kg·m²]")
    raise ctx.error(f"{path}.inertia", problem, expected=expected)


def _check_roots(ctx: _Ctx, record: Record) -> None:
    """Every connected group of bodies (union–find over joints) must contain a root."""
    up = {b.name: b.name for b in record.bodies}

    def find(x: str) -> str:
        while up[x] != x:
            up[x] = up[up[x]]
            x = up[x]
        return x

    for j in record.joints:
        up[find(j.parent)] = find(j.child)
    groups: dict[str, list[int]] = {}
    for i, b in enumerate(record.bodies):
        groups.setdefault(find(b.name), []).append(i)
    for members in groups.values():
        if all(record.bodies[i].kind == "ordinary" for i in members):
            names = ", ".join(record.bodies[i].name for i in members)
            who = f"bodies {names} have" if len(members) > 1 else f"body {names} has"
            raise ctx.error(
                f"bodies[{members[0]}]",
                f"{who} no path to any root (no fixed or floating body among them)",
                expected="one of them marked `fixed: true` or `floating: true`, or a joint to a "
                "rooted body",
            )


def _check_one_coordinate(
    ctx: _Ctx, path: str, name: str, joints: Mapping[str, Joint], what: str
) -> Joint:
    joint = joints[_ref(ctx, path, name, joints, "joint")]
    if joint.type not in ONE_COORDINATE:
        raise ctx.error(
            path,
            f"{what} joint '{name}' is {joint.type}",
            expected="a 1-coordinate joint",
            choices=ONE_COORDINATE,
        )
    return joint


def _check_actuator(ctx: _Ctx, i: int, a: Actuator, joints: Mapping[str, Joint],
                    bodies: Collection[str], driven: dict[str, int]) -> None:
    """The port of actuator i (:attr:`Actuator.kind`) refers to what exists and has one unit.

    Joint, tendon and profile ports read 1-coordinate joints, each driven by at most one
    such port; a tendon's coefficients are nonzero and its joints of one kind (its
    displacement has one unit). A distance port joins points on two different bodies.
    Velocity ports name velocity coordinates (a differential's two motors share joints, so
    they are not counted as driving them). Ports other than a joint port carry no drive
    data: rotor inertia or drive friction at a port that is not one tree coordinate would
    couple the inertia or friction of several coordinates (not supported).
    """
    kind = a.kind
    where = {"joint": f"actuators[{i}].joint", "tendon": f"actuators[{i}].terms",
             "distance": f"actuators[{i}].distance", "profile": f"actuators[{i}].profile",
             "velocity": f"actuators[{i}].velocity"}[kind]
    kinds = set()
    reads = a.port_terms or (((a.profile[0], 1.0),) if a.profile else ())
    for name, coef in reads:
        at = f"{where}.{name}" if kind == "tendon" else (
            f"{where}.joint" if kind == "profile" else where)
        joint = _check_one_coordinate(ctx, at, name, joints, "actuated")
        kinds.add("prismatic" if joint.type == "prismatic" else "angular")
        if name in driven:
            raise ctx.error(at, f"joint '{name}' already driven by actuators[{driven[name]}]",
                            expected="at most one actuator per joint")
        driven[name] = i
        if coef == 0.0:
            raise ctx.error(at, f"coefficient of '{name}' is zero",
                            expected="a nonzero coefficient")
    if kind == "tendon" and len(kinds) > 1:
        raise ctx.error(where, "a tendon port mixes prismatic and angular joints (its "
                        "displacement would have no single unit)",
                        expected="terms over prismatic joints only, or angular only")
    if kind == "distance":
        ends = a.distance
        assert ends is not None
        for end, att in zip("ab", ends, strict=True):
            _ref(ctx, f"{where}.{end}.body", att.body, bodies, "body")
        if ends[0].body == ends[1].body:
            raise ctx.error(f"{where}.b.body", f"both ends are on body '{ends[0].body}' (their "
                            "distance is constant)", expected="points on two different bodies")
        kinds = {"prismatic"}
    if kind == "velocity":
        kinds = _check_velocity_port(ctx, where, a, joints)
    if kind in ("profile", "velocity") and a.unit:
        kinds = {"prismatic" if a.unit == "m" else "angular"}
    if kind != "joint":
        for key in ("rotor_inertia", "viscous", "coulomb"):
            if getattr(a, key):
                raise ctx.error(f"actuators[{i}].{key}", f"{key} on a {kind} port is not "
                                "supported (it would couple the inertia or friction of several "
                                "coordinates)", expected="0, or a joint port")
    if a.transmission.type == "screw" and kinds != {"prismatic"}:
        what = (f"joint '{a.joint}' is {joints[a.joint].type}" if a.joint is not None
                else f"the {kind} port is angular")
        raise ctx.error(
            f"actuators[{i}].transmission",
            f"a screw transmission drives a linear port but {what}",
            expected="a prismatic joint or a linear port, or a direct/gear transmission",
        )


def velocity_coordinates(joints: Sequence[Joint]) -> dict[str, tuple[str, int]]:
    """Velocity coordinate name → ``(joint, index in the joint's v)`` (docs/conventions.md:
    ``name`` for a 1-coordinate joint, ``name.wx`` etc. otherwise)."""
    return {n: (j.name, k) for j in joints for k, n in enumerate(coordinate_names(j.type,
                                                                               j.name)[1])}


def _check_velocity_port(ctx: _Ctx, where: str, a: Actuator, joints: Mapping[str, Joint]
                         ) -> set[str]:
    """A velocity port's coordinates exist, coefficients are nonzero, and its unit is known
    (all linear or all angular speeds, or an explicit ``unit``). Returns its kind set."""
    kinds = set()
    for name, k, coef in a.velocity:
        joint = joints[_ref(ctx, where, name, joints, "joint")]
        if not 0 <= k < JOINT_COORDINATES[joint.type][1]:
            raise ctx.error(where, f"joint '{name}' has no velocity coordinate {k}",
                            expected=f"0 … {JOINT_COORDINATES[joint.type][1] - 1}")
        linear = is_linear_speed(joint.type, k)
        kinds.add("prismatic" if linear else "angular")
        if coef == 0.0:
            coord = name_of_velocity(joint, k)
            raise ctx.error(f"{where}.{coord}", f"coefficient of '{coord}' is zero",
                            expected="a nonzero coefficient")
    if len(kinds) > 1 and not a.unit:
        raise ctx.error(where, "the velocity map mixes linear and angular speeds, so the port "
                        "speed has no unit of its own", expected="unit: m or unit: rad")
    return kinds


def name_of_velocity(joint: Joint, k: int) -> str:
    """The name of the k-th velocity coordinate of ``joint``."""
    return coordinate_names(joint.type, joint.name)[1][k]


def check_record(record: Record, file: str | Path | None = None) -> None:
    """Semantic checks of a parsed record (references, uniqueness, physics, roots).

    Args:
        record: the record to check.
        file: the name used in messages (default ``record.source``).

    Raises:
        RecordError: on the first violation, with the YAML path in record order.
    """
    ctx = _Ctx(str(file if file is not None else record.source))
    for section in ("bodies", "joints", "actuators", "couplings", "forces", "supports", "tasks",
                    "rolling"):
        _check_unique(ctx, section, [x.name for x in getattr(record, section)])
    for i, body in enumerate(record.bodies):
        _check_inertia(ctx, f"bodies[{i}]", body)
    bodies = dict.fromkeys(b.name for b in record.bodies)
    for i, j in enumerate(record.joints):
        _ref(ctx, f"joints[{i}].parent", j.parent, bodies, "body")
        _ref(ctx, f"joints[{i}].child", j.child, bodies, "body")
        if j.parent == j.child:
            raise ctx.error(
                f"joints[{i}].child",
                f"joint '{j.name}' connects body '{j.child}' to itself",
                expected="a child body different from the parent",
            )
    joints = {j.name: j for j in record.joints}
    driven: dict[str, int] = {}
    for i, a in enumerate(record.actuators):
        _check_actuator(ctx, i, a, joints, bodies, driven)
    for i, c in enumerate(record.couplings):
        if c.profile is not None:
            for key in ("joint", "input"):
                _check_one_coordinate(ctx, f"couplings[{i}].{key}", getattr(c, key), joints,
                                      "coupled")
            continue
        for name, _ in c.terms:
            _check_one_coordinate(ctx, f"couplings[{i}].terms.{name}", name, joints, "coupled")
        if not any(coeff != 0.0 for _, coeff in c.terms):
            raise ctx.error(
                f"couplings[{i}].terms",
                "all coefficients are zero",
                expected="at least one nonzero coefficient",
            )
    for i, f in enumerate(record.forces):
        if isinstance(f, JointEffort):
            _check_one_coordinate(ctx, f"forces[{i}].joint", f.joint, joints, "loaded")
        else:
            for end in ("a", "b"):
                _ref(ctx, f"forces[{i}].{end}.body", getattr(f, end).body, bodies, "body")
    for section in ("supports", "tasks"):
        for i, x in enumerate(getattr(record, section)):
            _ref(ctx, f"{section}[{i}].body", x.body, bodies, "body")
    for i, w in enumerate(record.rolling):
        _ref(ctx, f"rolling[{i}].wheel", w.wheel, bodies, "body")
    seen: set[str] = set()
    for i, name in enumerate(record.independent):
        _ref(ctx, f"independent[{i}]", name, joints, "joint")
        if name in seen:
            raise ctx.error(
                f"independent[{i}]", f"joint '{name}' listed twice", expected="unique joint names"
            )
        seen.add(name)
    _check_roots(ctx, record)


# --------------------------------------------------------------------------- top level

TOP_KEYS = (
    "rbc",
    "name",
    "gravity",
    "angle_unit",
    "bodies",
    "joints",
    "actuators",
    "couplings",
    "forces",
    "supports",
    "tasks",
    "independent",
    "rolling",
)


def _schema_version(ctx: _Ctx, path: str, value: Any) -> int:
    if value != SCHEMA_VERSION or isinstance(value, bool):
        raise ctx.error(
            path,
            f"unsupported schema version {value}; this rbc reads schema {SCHEMA_VERSION}",
            expected=f"rbc: {SCHEMA_VERSION}",
        )
    return SCHEMA_VERSION


def _load(ctx: _Ctx, text: str, *, kind: str = "record", header: str = "rbc: 1") -> dict:
    """The YAML document as plain data (:func:`rbc.safeio.load_yaml`: duplicate keys,
    merges hiding a field, alias bombs and deep nesting refused before construction).

    ``kind`` and ``header`` name the document in the errors for an empty or non-mapping
    file (a record: ``rbc: 1``; a composition: ``rbc_composition: 1``)."""
    data = load_yaml(text, ctx.file, error=RecordError)
    expected = f"a YAML mapping starting with '{header}'"
    if data is None:
        raise ctx.error("", f"empty {kind}", expected=expected)
    if not isinstance(data, dict):
        raise ctx.error("", f"the {kind} is {_describe(data)}, not a mapping", expected=expected)
    return data


def parse_record_text(text: str, source: str = "<string>") -> Record:
    """Parse the text of a schema-v1 record (pure: text → Record).

    Args:
        text: YAML text (read with ``yaml.safe_load``).
        source: the file name used in messages and stored in ``Record.source``.

    Returns:
        A checked :class:`Record` in SI units (angles in rad, quaternions ``(w, x, y, z)``).

    Raises:
        RecordError: malformed YAML, unknown keys, wrong types or shapes, non-finite numbers,
            unknown references, duplicate names, physically invalid values, unrooted bodies,
            or pre-authored compiler output (see docs/records.md).
    """
    with gc_paused():  # millions of acyclic objects: the collector's passes cost, never free
        return _parse(text, source)


def _parse(text: str, source: str) -> Record:
    ctx = _Ctx(source)
    top = _Reader(ctx, "", _load(ctx, text), TOP_KEYS, FORBIDDEN_TOP)
    top.get("rbc", _schema_version)
    ctx = _Ctx(source, ANGLE_UNITS[top.get("angle_unit", _choice(tuple(ANGLE_UNITS)), "rad")],
               ctx.notes)
    top.ctx = ctx  # keys are checked; from here on angles convert with the record's unit
    bodies = [_body(ctx, p, v) for p, v in _items(top, "bodies")]
    if not bodies:
        raise ctx.error("bodies", "missing or empty 'bodies'", expected="a list of bodies")
    _check_unique(ctx, "bodies", [b.name for b in bodies])
    by_name = {b.name: b for b in bodies}
    record = Record(
        name=top.get("name", _string),
        gravity=top.get("gravity", _vec3, (0.0, 0.0, -9.81)),  # type: ignore[arg-type]
        bodies=tuple(bodies),
        joints=(joints := tuple(_joint(ctx, p, v, by_name) for p, v in _items(top, "joints"))),
        actuators=tuple(_actuator(ctx, p, v, joints) for p, v in _items(top, "actuators")),
        couplings=tuple(_coupling(ctx, p, v) for p, v in _items(top, "couplings")),
        forces=tuple(_force(ctx, p, v) for p, v in _items(top, "forces")),
        supports=tuple(_support(ctx, p, v, by_name) for p, v in _items(top, "supports")),
        tasks=tuple(_task(ctx, p, v, by_name) for p, v in _items(top, "tasks")),
        independent=top.get("independent", _independent, ()),
        rolling=tuple(_rolling(ctx, p, v, by_name) for p, v in _items(top, "rolling")),
        source=source,
        sha256=hashlib.sha256(text.encode("utf-8")).hexdigest(),
        text=text,
        notes=tuple(ctx.notes),
    )
    check_record(record, source)
    return record


def parse_record(path: str | Path) -> Record:
    """Read and parse a schema-v1 record file.

    Args:
        path: the YAML file.

    Returns:
        The checked :class:`Record` (``source`` = ``str(path)``).

    Raises:
        RecordError: the file cannot be read (not found, not UTF-8) or is invalid
            (see :func:`parse_record_text`).
    """
    p = Path(path)
    try:
        text = read_text(p, "record")
    except InputError as err:
        raise RecordError(p, "", err.problem, expected=err.expected or "a path to a YAML "
                          "record") from None
    return parse_record_text(text, str(p))


def _unit_vectors(record: Record) -> list[tuple[str, Sequence[float]]]:
    """Every quaternion and axis of ``record`` with its YAML path."""
    out: list[tuple[str, Sequence[float]]] = []
    for i, b in enumerate(record.bodies):
        out += [(f"bodies[{i}].frames.{n}.quat", p.quat) for n, p in b.frames]
        out += [(f"bodies[{i}].geometry[{k}].quat", g.pose.quat) for k, g in enumerate(b.geometry)]
    for i, j in enumerate(record.joints):
        out += [
            (f"joints[{i}].parent_frame.quat", j.parent_frame.quat),
            (f"joints[{i}].child_frame.quat", j.child_frame.quat),
        ]
        out += [(f"joints[{i}].axis", j.axis)] if j.axis is not None else []
        out += [(f"joints[{i}].axes[{k}]", a) for k, a in enumerate(j.axes or ())]
        q_at = JOINT_SPECS[j.type].quat_at
        if j.initial is not None and q_at is not None:
            out.append((f"joints[{i}].initial", j.initial[q_at : q_at + 4]))
    for section in ("supports", "tasks"):
        out += [
            (f"{section}[{i}].quat", x.pose.quat) for i, x in enumerate(getattr(record, section))
        ]
    out += [(f"supports[{i}].normal", s.normal) for i, s in enumerate(record.supports)]
    for i, w in enumerate(record.rolling):
        out += [(f"rolling[{i}].axis", w.axis), (f"rolling[{i}].normal", w.normal)]
    return out


def check_unit_norms(record: Record) -> None:
    """Raise :class:`RecordError` at the first quaternion or axis of ``record`` whose norm
    differs from 1 by more than ``QUAT_NORM_TOL`` (the parser's post-condition)."""
    ctx = _Ctx(record.source)
    for path, vec in _unit_vectors(record):
        if abs(float(np.linalg.norm(vec)) - 1.0) > QUAT_NORM_TOL:
            raise ctx.error(path, f"not a unit vector: {list(vec)}", expected="unit norm")

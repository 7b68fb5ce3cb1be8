"""The composition file (YAML, ``rbc_composition: 1``): what ``rbc compose`` reads.

A composition names its member robots (compiled bundles, each placed in the composed
world), the links between them and the modes (docs/composition.md, "The composition
file")::

    rbc_composition: 1
    name: ring
    members:
      - {name: h1, bundle: humanoid_v1.h5, placement: {xyz: [0.9, 0, 0.93], rpy: [0, 0, 3.14]}}
      - {name: h2, bundle: humanoid_v2.h5, partition: default}
    links:                  # ball: the two frames' origins coincide; weld: the frames coincide
      - {name: hands, type: ball, a: {member: h1, body: forearm_r, frame: palm},
         b: {member: h2, body: forearm_l, xyz: [0, 0, -0.26]}}
    modes:                  # supports as MEMBER.SUPPORT; links: all (default), none or names
      - {name: stand, supports: [h1.sole_l, h1.sole_r, h2.sole_l, h2.sole_r], links: all}

The file is read with the record reader's rules (safe YAML, duplicate keys refused, every
field type-checked; errors name the file and the YAML path and exit with status 2). A
member's ``bundle`` is a plain file name, looked up in one directory the user chooses (the
composition file's directory unless ``rbc compose --bundles DIR``): no paths are built from
the file's contents beyond that name, and a name with a directory part, ``..``, or one
that resolves to a symbolic link is refused (:func:`member_path`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rbc.errors import InputError, RecordError
from rbc.ir.record import Pose

# the record reader's helpers: one set of YAML and field rules for records and compositions
from rbc.ir.schema import (  # noqa: PLC2701
    FRAME_REF_KEYS,
    _check_unique,
    _choice,
    _Ctx,
    _items,
    _load,
    _pose,
    _Reader,
    _ref,
    _string,
)
from rbc.safeio import read_text

#: Version of the composition file layout.
COMPOSITION_SCHEMA = 1
#: Link types: a ball joint between the frames' origins (3 position rows, the relative
#: rotation free: three massless chart coordinates) or a weld (6 rows).
LINK_TYPES = {"ball": "spherical", "weld": "fixed"}
#: Member names become name prefixes (``h1/knee_l``): letters, digits, ``_`` and ``-``.
_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_-]*")


@dataclass(frozen=True)
class FrameRef:
    """A frame on a member's body: ``member``, ``body`` and the pose ``T_body_frame``
    (a named body frame or an inline ``xyz`` + ``rpy``/``quat``; resolved against the member's
    record when the composition is built, :mod:`rbc.compose.flat`)."""

    member: str
    body: str
    frame: str | None
    pose: Pose


@dataclass(frozen=True)
class MemberSpec:
    """A member robot: its bundle file name, placement ``T_world_memberworld`` and the
    stored partition that is its level-1 reduction."""

    name: str
    bundle: str
    placement: Pose
    partition: str


@dataclass(frozen=True)
class LinkSpec:
    """A link between two members' body frames (``type`` in :data:`LINK_TYPES`)."""

    name: str
    type: str
    a: FrameRef
    b: FrameRef


@dataclass(frozen=True)
class ModeSpec:
    """A mode: active supports (``member.support``) and active links (names)."""

    name: str
    supports: tuple[str, ...]
    links: tuple[str, ...]


@dataclass(frozen=True)
class CompositionSpec:
    """A parsed composition file."""

    name: str
    members: tuple[MemberSpec, ...]
    links: tuple[LinkSpec, ...]
    modes: tuple[ModeSpec, ...]
    source: str
    text: str


def _name(ctx: _Ctx, path: str, value: Any) -> str:
    s = _string(ctx, path, value)
    if not _NAME.fullmatch(s):
        raise ctx.error(path, f"name '{s}' is not allowed",
                        expected="letters, digits, '_' or '-', starting with a letter")
    return s


def _names(ctx: _Ctx, path: str, value: Any) -> tuple[str, ...]:
    if not isinstance(value, list):
        raise ctx.error(path, "wrong type", expected="a list of names")
    return tuple(_string(ctx, f"{path}[{i}]", v) for i, v in enumerate(value))


def _frame_ref(ctx: _Ctx, path: str, value: Any, members: dict[str, int]) -> FrameRef:
    r = _Reader(ctx, path, value, ("member", "body", *FRAME_REF_KEYS))
    member = _ref(ctx, r.at("member"), r.get("member", _string), members, "member")
    frame = r.get("frame", _string, None)
    pose = Pose() if frame is not None else _pose(r)
    return FrameRef(member, r.get("body", _string), frame, pose)


def parse_composition_text(text: str, source: str = "<string>") -> CompositionSpec:
    """Parse the text of a composition file (module docstring).

    Raises:
        RecordError: malformed YAML, unknown keys, wrong types, duplicate or bad names,
            unknown members or links, a link between a member and itself at one frame.
    """
    ctx = _Ctx(source)
    data = _load(ctx, text, kind="composition", header="rbc_composition: 1")
    top = _Reader(ctx, "", data, ("rbc_composition", "name", "members", "links", "modes"))
    version = top.get("rbc_composition", lambda c, p, v: v)
    if version != COMPOSITION_SCHEMA or isinstance(version, bool):
        raise ctx.error("rbc_composition", f"unsupported composition version {version!r}",
                        expected=f"rbc_composition: {COMPOSITION_SCHEMA}")
    members = []
    for path, value in _items(top, "members"):
        r = _Reader(ctx, path, value, ("name", "bundle", "placement", "partition"))
        placement = (_pose(r.sub("placement", ("xyz", "rpy", "quat")))
                     if r.has("placement") else Pose())
        members.append(MemberSpec(r.get("name", _name), r.get("bundle", _string), placement,
                                  r.get("partition", _string, "default")))
    if not members:
        raise ctx.error("members", "missing or empty 'members'",
                        expected="a list of member robots")
    _check_unique(ctx, "members", [m.name for m in members])
    index = {m.name: i for i, m in enumerate(members)}
    links = []
    for path, value in _items(top, "links"):
        r = _Reader(ctx, path, value, ("name", "type", "a", "b"))
        kind = r.get("type", _choice(tuple(LINK_TYPES)))
        a = r.get("a", lambda c, p, v: _frame_ref(c, p, v, index))
        b = r.get("b", lambda c, p, v: _frame_ref(c, p, v, index))
        links.append(LinkSpec(r.get("name", _name), kind, a, b))
    _check_unique(ctx, "links", [x.name for x in links])
    link_names = [x.name for x in links]
    modes = []
    for path, value in _items(top, "modes"):
        r = _Reader(ctx, path, value, ("name", "supports", "links"))
        name = r.get("name", _name)
        sup = r.get("supports", _names, ())
        for i, s in enumerate(sup):
            member, dot, rest = s.partition(".")
            if not dot or member not in index or not rest:
                raise ctx.error(f"{r.at('supports')}[{i}]", f"'{s}' does not name a member's "
                                "support", expected="MEMBER.SUPPORT, e.g. h1.sole_l",
                                choices=list(index))
        raw = r.data.get("links", "all")
        if raw == "all":
            active = tuple(link_names)
        elif raw == "none":
            active = ()
        else:
            active = _names(ctx, r.at("links"), raw)
            for i, n in enumerate(active):
                if n not in link_names:
                    raise ctx.error(f"{r.at('links')}[{i}]", f"unknown link '{n}'",
                                    choices=["all", "none", *link_names], got=n)
        for what, items in (("supports", sup), ("links", active)):
            twice = sorted({x for x in items if items.count(x) > 1})
            if twice:
                raise ctx.error(r.at(what), f"listed twice: {', '.join(twice)}")
        modes.append(ModeSpec(name, sup, active))
    if not modes:
        modes.append(ModeSpec("free", (), tuple(link_names)))
    _check_unique(ctx, "modes", [m.name for m in modes])
    return CompositionSpec(top.get("name", _name), tuple(members), tuple(links), tuple(modes),
                           source, text)


def parse_composition(path: str | Path) -> CompositionSpec:
    """Read and parse a composition file.

    Raises:
        RecordError: unreadable, not a regular file, larger than the ``composition`` size
            limit (:func:`rbc.safeio.read_text`), or invalid (:func:`parse_composition_text`).
    """
    p = Path(path)
    try:
        text = read_text(p, "composition")
    except InputError as err:
        raise RecordError(p, "", err.problem, expected=err.expected or "a composition file "
                          "(YAML, rbc_composition: 1)") from None
    return parse_composition_text(text, str(p))


def member_path(spec: CompositionSpec, member: MemberSpec, directory: Path) -> Path:
    """The bundle file of a member: ``directory / member.bundle``.

    Raises:
        RecordError: the name has a directory part or ``..``, is absolute, is a symbolic
            link, or no such regular file exists in ``directory``.
    """
    where = f"members[{[m.name for m in spec.members].index(member.name)}].bundle"
    name = member.bundle
    if not name or Path(name).name != name or name in (".", "..") or "\\" in name:
        raise RecordError(spec.source, where, f"'{name}' is not a plain file name",
                          expected="the bundle's file name only (it is looked up in the "
                          "composition file's directory or in --bundles DIR)")
    p = directory / name
    if p.is_symlink():
        raise RecordError(spec.source, where, f"{p} is a symbolic link (not followed)")
    if not p.is_file():
        raise RecordError(spec.source, where, f"no bundle {name} in {directory}",
                          expected="a bundle written by `rbc compile` (see --bundles)")
    return p

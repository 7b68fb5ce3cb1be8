"""A composed system (Model side of the Model/Data split): the flat model, the member maps,
the links and the analysed modes (docs/composition.md).

:func:`compose` builds it from a parsed composition file and the member models (what
``rbc compose`` does before writing the bundle); :func:`load` reads it back from a composed
bundle (:mod:`rbc.compose.bundle`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from rbc.compose.analysis import Level2, analyse, close_reference
from rbc.compose.flat import (
    MemberMap,
    check_placement,
    extend,
    flat_model,
    flat_record,
    link_joint,
    member_map,
    mode_model,
    place_configuration,
    prefixed,
)
from rbc.compose.spec import LINK_TYPES, CompositionSpec, FrameRef
from rbc.errors import RecordError, UsageError, did_you_mean
from rbc.ir import spatial as sp
from rbc.ir.record import Joint, Pose
from rbc.model.compiled import CompiledModel, Partition
from rbc.model.modes import anchors_array, anchors_se3, support_poses


@dataclass(frozen=True, eq=False)
class ComposedMode:
    """One analysed mode of a composition.

    Attributes:
        name: mode name; supports: active supports (flat names); links: active link names.
        anchors: (k, 7) reference anchors of the supports ``[x y z qw qx qy qz]``.
        level2: the composer's structure (:class:`~rbc.compose.analysis.Level2`).
        partition: the equivalent one-level partition of the mode model (its ``q_ref`` is
            the mode's closed reference configuration).
    """

    name: str
    supports: tuple[str, ...]
    links: tuple[str, ...]
    anchors: np.ndarray
    level2: Level2
    partition: Partition


@dataclass(frozen=True, eq=False)
class Composition:
    """A composed system.

    Attributes:
        name: composition name; source: the composition file it was built from.
        flat: the flat model (members side by side, no links or supports active).
        members: per member its index maps, own model and level-1 partition.
        links: the link cut joints (flat body names), by name; link_types: ball | weld.
        modes: the analysed modes, by name (file order).
        base: the flat model's partition (every member's own, side by side; placed q_ref).
        ir: the flat model's modules IR (at compose time, for writing the bundle).
        text: the composition file's text.
    """

    name: str
    source: str
    flat: CompiledModel
    members: tuple[MemberMap, ...]
    links: dict[str, Joint]
    link_types: dict[str, str]
    modes: dict[str, ComposedMode] = field(default_factory=dict)
    base: Partition | None = None
    ir: object = None  # the flat model's modules IR (compile time only, for the bundle)
    text: str = ""     # the composition file's text

    def mode(self, name: str | None) -> ComposedMode:
        """A mode by name (None: the first).

        Raises:
            UsageError: unknown mode (lists the composition's modes).
        """
        if name is None:
            return next(iter(self.modes.values()))
        if name not in self.modes:
            hint = did_you_mean(name, self.modes)
            raise UsageError(f"--mode {name}: not a mode of composition {self.name}"
                             + (f" (did you mean '{hint}'?)" if hint else "")
                             + "; modes: " + ", ".join(self.modes))
        return self.modes[name]

    def model(self, mode: ComposedMode | str, anchors: np.ndarray | None = None
              ) -> CompiledModel:
        """The mode model (flat model plus the mode's link and support chords) with the
        mode's partition stored under its name; ``anchors`` (k, 7): run-time support
        anchors (default: the reference anchors)."""
        m = self.modes[mode] if isinstance(mode, str) else mode
        if anchors is None:
            return self._reference_model(m.name)
        return self._build_model(m, anchors)

    @functools.lru_cache(maxsize=16)  # noqa: B019 (the composition is immutable)
    def _reference_model(self, name: str) -> CompiledModel:
        m = self.modes[name]
        return self._build_model(m, m.anchors)

    def _build_model(self, m: ComposedMode, anchors: np.ndarray) -> CompiledModel:
        from dataclasses import replace

        model = mode_model(self.flat, [self.links[n] for n in m.links], m.supports,
                           anchors_se3(anchors))
        return replace(model, partitions={m.name: m.partition})


def _frame_pose(spec: CompositionSpec, where: str, ref: FrameRef, model: CompiledModel) -> Pose:
    bodies = model.record.body_index()
    if ref.body not in bodies:
        raise RecordError(spec.source, f"{where}.body", f"member {ref.member} has no body "
                          f"'{ref.body}'", choices=list(bodies), got=ref.body)
    if ref.frame is None:
        return ref.pose
    frames = dict(model.record.bodies[bodies[ref.body]].frames)
    if ref.frame not in frames:
        raise RecordError(spec.source, f"{where}.frame", f"body '{ref.body}' of member "
                          f"{ref.member} has no frame '{ref.frame}'", choices=list(frames),
                          got=ref.frame)
    return frames[ref.frame]


def compose(spec: CompositionSpec, models: Sequence[CompiledModel],
            progress: Callable[[str], None] | None = None) -> Composition:
    """Build and analyse a composition (module docstring).

    Args:
        spec: the parsed composition file; models: the member models in member order.

    Raises:
        RecordError: references to unknown partitions, bodies, frames or supports (naming
            the composition file and field); CompileError: placements that move fixed
            bodies or tilt gravity, or a mode without a valid split; ClosureError: links
            that cannot be closed from the placed members.
    """
    say = progress or (lambda _: None)
    members_in = []
    for i, (ms, model) in enumerate(zip(spec.members, models, strict=True)):
        if ms.partition not in model.partitions:
            raise RecordError(spec.source, f"members[{i}].partition", f"bundle {ms.bundle} has "
                              f"no partition '{ms.partition}'", choices=list(model.partitions),
                              got=ms.partition)
        T = sp.se3_from_pose(ms.placement)
        check_placement(f"{spec.source}: members[{i}].placement", ms.name, model, T)
        members_in.append((ms, model, T))
    say("flat model")
    record = flat_record(spec.name, [(ms.name, model.record) for ms, model, _ in members_in],
                         source=f"{spec.source} (flat)")
    flat, mods = flat_model(record, [(ms.name, model) for ms, model, _ in members_in])
    members = tuple(member_map(flat, ms.name, model, model.partitions[ms.partition], T)
                    for ms, model, T in members_in)
    q0 = np.empty(flat.nq)
    for m in members:
        q0[m.q_index] = place_configuration(m.model, m.partition.q_ref, m.placement)
    base = _base_partition(flat, members, q0)
    links: dict[str, Joint] = {}
    types: dict[str, str] = {}
    by_member = {ms.name: model for ms, model, _ in members_in}
    for i, ls in enumerate(spec.links):
        pa = _frame_pose(spec, f"links[{i}].a", ls.a, by_member[ls.a.member])
        pb = _frame_pose(spec, f"links[{i}].b", ls.b, by_member[ls.b.member])
        if ls.a.member == ls.b.member and ls.a.body == ls.b.body:
            raise RecordError(spec.source, f"links[{i}].b", "a link joins two different bodies")
        links[ls.name] = link_joint(ls.name, LINK_TYPES[ls.type],
                                    prefixed(ls.a.member, ls.a.body), pa,
                                    prefixed(ls.b.member, ls.b.body), pb)
        types[ls.name] = ls.type
    names = {s.name for s in flat.record.supports}
    held = np.array([j for k, (n, t) in enumerate(zip(flat.edge_names, flat.edge_types,
                                                      strict=True))
                     if n.endswith(".root") and t == "free"
                     for j in range(flat.v_slice(k).start, flat.v_slice(k).stop)], np.int64)
    comp = Composition(spec.name, spec.source, flat, members, links, types, {}, base, mods,
                       spec.text)
    for i, md in enumerate(spec.modes):
        sup = tuple(s.replace(".", "/", 1) for s in md.supports)
        for n, s in enumerate(sup):
            if s not in names:
                raise RecordError(spec.source, f"modes[{i}].supports[{n}]", f"no support "
                                  f"'{md.supports[n]}'", choices=sorted(
                                      x.replace("/", ".", 1) for x in names),
                                  got=md.supports[n])
        say(f"mode {md.name}: closing the links")
        anchors = support_poses(flat, q0, sup)
        mm = mode_model(flat, [links[n] for n in md.links], sup, anchors)
        q = close_reference(mm, extend(flat, mm, q0), held)
        say(f"mode {md.name}: rank analysis")
        level2, part = analyse(members, flat, mm, q, md.name, base.length_scale)
        comp.modes[md.name] = ComposedMode(md.name, sup, md.links, anchors_array(anchors),
                                           level2, part)
    return comp


def _base_partition(flat: CompiledModel, members: Sequence[MemberMap], q: np.ndarray
                    ) -> Partition:
    """The members' own partitions side by side (the flat model's ``default``)."""
    from rbc.model.partition import characteristic_length

    ind = np.sort(np.concatenate([m.independent for m in members]))
    rows = np.sort(np.concatenate([m.rows(flat) for m in members]))
    dep = np.array(sorted(set(range(flat.nv)) - set(ind.tolist())), dtype=np.int64)
    joints = tuple(dict.fromkeys(flat.edge_names[int(flat.v_edge[j])] for j in ind))
    return Partition("default", ind, dep, rows.astype(np.int64), int(dep.size),
                     characteristic_length(flat), q, joints)


__all__ = ["Composition", "ComposedMode", "compose"]

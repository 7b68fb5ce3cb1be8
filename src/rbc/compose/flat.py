"""The flat view of a composition: the member records side by side as one record, and the
models of its modes (docs/composition.md, "Layout").

**Flat record.** Every name of member k (bodies, joints, actuators, couplings, forces,
supports, tasks) gets the prefix ``k/`` (``h1/knee_l``); the records are concatenated in
member order. A member's floating bases keep their free root; the placement
``T_world_memberworld`` only moves the root poses of its configurations
(:func:`place_configuration`), so nothing in the record changes. The flat record is what
the compiler's structural passes (graph → forest → paths → modules) read: since every
member is its own connected component rooted at the world, the spanning forest they choose
is the union of the members' own forests (checked, :func:`flat_model`) — the members'
compiled reductions are kept, not redone.

**Links and supports are closures of the same kind** (DESIGN.md §10, §12): a cut joint
appended to the flat model per active link (a ``spherical`` joint between the two palm
frames for a ball link, ``fixed`` for a weld) and per active support (the support's closure
to a world anchor, :func:`rbc.model.modes.support_joint`). A link's closure path runs from
its first body up through the lowest common ancestor (the world, for two robots) down to
the second; a mode's model is the flat model with those chords (:func:`mode_model`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
import pinocchio as pin

from rbc.errors import CompileError
from rbc.ir import spatial as sp
from rbc.ir.modules import Modules
from rbc.ir.record import Actuator, Attachment, Joint, JointEffort, Pose, Record, SpringForce
from rbc.ir.render import record_yaml
from rbc.ir.schema import parse_record_text
from rbc.model.compiled import CompiledModel, Partition
from rbc.model.kinematics import tree_path
from rbc.model.modes import mode_modules, support_joint, support_poses

SEP = "/"


def prefixed(member: str, name: str) -> str:
    """The flat name of a member's ``name``: ``member/name``."""
    return f"{member}{SEP}{name}"


def _member_actuator(a: Actuator, p) -> Actuator:
    """An actuator with the joint and body names of every port kind prefixed by ``p``."""
    return replace(
        a, name=p(a.name), joint=p(a.joint) if a.joint else None,
        terms=tuple((p(n), c) for n, c in a.terms),
        distance=(None if a.distance is None else
                  tuple(Attachment(p(e.body), e.xyz) for e in a.distance)),
        profile=None if a.profile is None else (p(a.profile[0]), a.profile[1]),
        velocity=tuple((p(n), k, c) for n, k, c in a.velocity))


def member_record(record: Record, member: str) -> Record:
    """A member's record with every name prefixed (module docstring)."""
    p = lambda n: prefixed(member, n)  # noqa: E731
    forces = tuple(
        replace(f, name=p(f.name), joint=p(f.joint)) if isinstance(f, JointEffort) else
        replace(f, name=p(f.name), a=Attachment(p(f.a.body), f.a.xyz),
                b=Attachment(p(f.b.body), f.b.xyz))
        for f in record.forces)
    assert all(isinstance(f, (JointEffort, SpringForce)) for f in forces)
    return replace(
        record,
        name=p(record.name),
        bodies=tuple(replace(b, name=p(b.name)) for b in record.bodies),
        joints=tuple(replace(j, name=p(j.name), parent=p(j.parent), child=p(j.child))
                     for j in record.joints),
        actuators=tuple(_member_actuator(a, p) for a in record.actuators),
        couplings=tuple(replace(c, name=p(c.name), terms=tuple((p(n), x) for n, x in c.terms),
                                joint=p(c.joint) if c.joint else None,
                                input=p(c.input) if c.input else None)
                        for c in record.couplings),
        forces=forces,
        supports=tuple(replace(s, name=p(s.name), body=p(s.body)) for s in record.supports),
        tasks=tuple(replace(t, name=p(t.name), body=p(t.body)) for t in record.tasks),
        independent=tuple(p(n) for n in record.independent),
    )


def flat_record(name: str, members: Sequence[tuple[str, Record]],
                extra_joints: Sequence[Joint] = (), source: str | None = None) -> Record:
    """The flat record of the members (module docstring), parsed back from its text.

    Args:
        name: the composition's name; members: ``(member name, record)`` in order;
        extra_joints: joints appended after the members' (e.g. the links, for a flat record
            written to compile directly); source: the record's source name.

    Raises:
        CompileError: the members' gravity vectors differ.
    """
    g = {tuple(r.gravity) for _, r in members}
    if len(g) > 1:
        raise CompileError(f"composition {name}: the members' gravity vectors differ "
                           f"({', '.join(f'{m}: {list(r.gravity)}' for m, r in members)})")
    rolling = [m for m, r in members if r.rolling]
    if rolling:  # the composed layers (lift, dynamics, plants) have no rolling layer
        raise CompileError(f"composition {name}: member(s) {', '.join(rolling)} have rolling "
                           "wheels, which compositions do not carry; compose members "
                           "without 'rolling'")
    parts = [member_record(r, m) for m, r in members]
    rec = Record(name=name, gravity=members[0][1].gravity,
                 bodies=tuple(b for r in parts for b in r.bodies),
                 joints=(*(j for r in parts for j in r.joints), *extra_joints),
                 actuators=tuple(a for r in parts for a in r.actuators),
                 couplings=tuple(c for r in parts for c in r.couplings),
                 forces=tuple(f for r in parts for f in r.forces),
                 supports=tuple(s for r in parts for s in r.supports),
                 tasks=tuple(t for r in parts for t in r.tasks),
                 independent=tuple(n for r in parts for n in r.independent))
    header = (f"Flat record of the composition {name}: members "
              f"{', '.join(m for m, _ in members)} (names prefixed MEMBER/).")
    text = record_yaml(rec, header)
    return parse_record_text(text, source or f"<composition {name}>")


def flat_model(record: Record, members: Sequence[tuple[str, CompiledModel]]
               ) -> tuple[CompiledModel, Modules]:
    """``(model, modules IR)``: the compiled structure of the flat record (the graph,
    forest, paths and modules passes; no rank analysis), checked to keep every member's own
    spanning tree and cut joints.

    Raises:
        CompileError: the forest differs from the members' (cannot happen for members
            compiled by this rbc; reported rather than silently re-reduced).
    """
    from rbc.passes.forest import BuildForest
    from rbc.passes.graph import BuildGraph
    from rbc.passes.modules import BuildModules
    from rbc.passes.paths import BuildPaths

    mods = BuildModules().run(BuildPaths().run(BuildForest().run(BuildGraph().run(record))))
    model = CompiledModel.from_ir(mods)
    want = [prefixed(m, k.edge_names[e]) for m, k in members for e in k.chord_edges]
    got = [model.edge_names[e] for e in model.chord_edges]
    if want != got:
        raise CompileError(f"composition {record.name}: the flat spanning forest cuts "
                           f"{', '.join(sorted(set(got) ^ set(want)))} differently from the "
                           "members' bundles (recompile the members with this rbc)")
    return model, mods


@dataclass(frozen=True, eq=False)
class MemberMap:
    """Where a member's indices go in the flat model.

    Attributes:
        name: member name; model: its own compiled model; partition: its level-1 partition.
        placement: ``T_world_memberworld``.
        edges: (E_k,) flat edge of each member edge; chords: (n_c,k) flat chord position of
            each member chord; couplings: (n_cp,k) flat coupling index of each coupling.
        q_index: (nq_k,), v_index: (nv_k,) flat coordinate of each member coordinate.
    """

    name: str
    model: CompiledModel
    partition: Partition
    placement: pin.SE3
    edges: np.ndarray
    chords: np.ndarray
    couplings: np.ndarray
    q_index: np.ndarray
    v_index: np.ndarray

    @property
    def independent(self) -> np.ndarray:
        """(n_w,k) flat v-indices of the member's independent speeds (its level-1 speeds)."""
        return self.v_index[self.partition.independent]

    @property
    def dependent(self) -> np.ndarray:
        """(r_k,) flat v-indices of the member's dependent speeds."""
        return self.v_index[self.partition.dependent]

    def rows(self, model: CompiledModel) -> np.ndarray:
        """(r_k,) the member partition's selected rows as rows of ``model`` (the flat model
        or one of its mode models: chords 6 rows each, then the couplings)."""
        n_c = self.model.n_chords
        out = []
        for r in self.partition.rows:
            r = int(r)
            if r < 6 * n_c:
                out.append(6 * int(self.chords[r // 6]) + r % 6)
            else:
                out.append(6 * model.n_chords + int(self.couplings[r - 6 * n_c]))
        return np.array(out, dtype=np.int64)


def member_map(flat: CompiledModel, name: str, model: CompiledModel, part: Partition,
               placement: pin.SE3) -> MemberMap:
    """The index maps of one member (by the prefixed names)."""
    edges = np.array([flat.edge(prefixed(name, n)) for n in model.edge_names], dtype=np.int64)
    chord_pos = {e: i for i, e in enumerate(flat.chord_edges)}
    chords = np.array([chord_pos[int(edges[e])] for e in model.chord_edges], dtype=np.int64)
    cp = {c.name: i for i, c in enumerate(flat.record.couplings)}
    couplings = np.array([cp[prefixed(name, c.name)] for c in model.record.couplings],
                         dtype=np.int64)
    qi, vi = np.empty(model.nq, np.int64), np.empty(model.nv, np.int64)
    for e in range(len(model.kinds)):
        qs, vs = model.q_slice(e), model.v_slice(e)
        fq, fv = flat.q_slice(int(edges[e])), flat.v_slice(int(edges[e]))
        qi[qs] = np.arange(fq.start, fq.stop)
        vi[vs] = np.arange(fv.start, fv.stop)
    return MemberMap(name, model, part, placement, edges, chords, couplings, qi, vi)


def place_configuration(model: CompiledModel, q: np.ndarray, placement: pin.SE3
                        ) -> np.ndarray:
    """A member configuration (nq_k,) with its floating roots moved by ``placement``."""
    out = np.array(q, dtype=float)
    for k, (n, t) in enumerate(zip(model.edge_names, model.edge_types, strict=True)):
        if n.endswith(".root") and t == "free":
            qs = model.q_slice(k)
            x = q[qs]
            T = placement * pin.SE3(sp.rotation_from_quat(x[3:]), np.array(x[:3]))
            out[qs] = [*T.translation, *sp.quat_from_rotation(T.rotation)]
    return out


def check_placement(where: str, name: str, model: CompiledModel, placement: pin.SE3) -> None:
    """A placement must keep gravity and can move only floating bases; ``where`` names the
    file and field in the error (``ring.yaml: members[0].placement``).

    Raises:
        CompileError: a fixed body with a non-identity placement, or a rotation that tilts
            the member's gravity.
    """
    ident = np.allclose(placement.homogeneous, np.eye(4), atol=0.0)
    if not ident and any(b.kind == "fixed" for b in model.record.bodies):
        raise CompileError(f"{where}: member {name}: '{model.record.name}' has a fixed body "
                           "(its frame is the world frame); place it in its record, or leave "
                           "its placement out")
    g = np.array(model.record.gravity, dtype=float)
    if np.abs(placement.rotation @ g - g).max() > 1e-12 * max(1.0, np.linalg.norm(g)):
        shown = ", ".join(f"{x:g}" for x in g)
        raise CompileError(f"{where}: member {name}: the rotation tilts the member's gravity "
                           f"[{shown}] m/s²; rotate about the gravity axis only (rpy [0, 0, "
                           "yaw] for gravity along −z)")


def link_joint(name: str, type_: str, a_body: str, a_pose: Pose, b_body: str, b_pose: Pose
               ) -> Joint:
    """The cut joint of a link: ``spherical`` (ball) or ``fixed`` (weld) between two body
    frames (flat body names)."""
    return Joint(name=name, type=type_, parent=a_body, child=b_body, parent_frame=a_pose,
                 child_frame=b_pose)


def link_path(model: CompiledModel, a: int, b: int) -> tuple[tuple[int, int], ...]:
    """Factors ``(edge, sign)`` from body a up through the lowest common ancestor down to
    body b (vertex indices; the world for two robots)."""
    pa, pb = tree_path(model, a), tree_path(model, b)
    n = 0
    while n < min(len(pa), len(pb)) and pa[n] == pb[n]:
        n += 1
    return (*((k, -s) for k, s in reversed(pa[n:])), *pb[n:])


def mode_model(flat: CompiledModel, links: Sequence[Joint], supports: Sequence[str],
               anchors: Sequence[pin.SE3] | None = None, q: np.ndarray | None = None
               ) -> CompiledModel:
    """The flat model plus one chord per active link, then per active support (anchored at
    ``anchors``, default: the support poses at ``q``, a flat configuration)."""
    bodies = flat.record.body_index()
    by_name = {s.name: s for s in flat.record.supports}
    if anchors is None:
        anchors = support_poses(flat, q, supports)
    sup = [support_joint(by_name[n], T) for n, T in zip(supports, anchors, strict=True)]
    paths = [link_path(flat, bodies[j.parent], bodies[j.child]) for j in links]
    paths += [tuple(tree_path(flat, bodies[by_name[n].body])) for n in supports]
    E = len(flat.kinds)
    edges = tuple(range(E, E + len(links) + len(sup)))
    mods = mode_modules(flat, paths, edges, root_inputs=True)
    return flat.with_chords((*links, *sup), tuple(paths), mods, tuple(supports))


def extend(flat: CompiledModel, mode: CompiledModel, q: np.ndarray) -> np.ndarray:
    """A flat configuration (nq,) in the mode model's layout: each link's chart at the
    relative pose of its frames (the relative rotation; exact for a closed link), each
    support's coordinates at the identity."""
    from rbc.model.kinematics import body_poses

    out = np.empty(mode.nq)
    out[: flat.nq] = q
    T = body_poses(flat, q)
    bodies = flat.record.body_index()
    for k in range(len(flat.kinds), len(mode.kinds)):
        kind, j = mode.kinds[k], mode.edge_joints[k]
        qs = mode.q_slice(k)
        if kind.type == "spherical" and j.parent != "world":
            Ta = T[bodies[j.parent]] * sp.se3_from_pose(j.parent_frame)
            Tb = T[bodies[j.child]] * sp.se3_from_pose(j.child_frame)
            out[qs] = sp.quat_from_rotation(Ta.rotation.T @ Tb.rotation)
        else:
            out[qs] = kind.neutral()
    return out

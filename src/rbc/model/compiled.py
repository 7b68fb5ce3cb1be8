"""The run-time model: an immutable :class:`CompiledModel` (the Model of the Model/Data split).

A compiled model holds the kinematic structure of a mechanism — joint kinds and attachment
frames per edge, the spanning tree, the closure paths, the modules, the coordinate layout,
the couplings and the stored partitions — as frozen arrays and tuples. It is built either
from the compiler's IR (:meth:`CompiledModel.from_ir`, used by the ``rank`` pass at compile
time) or from a bundle file (:meth:`CompiledModel.from_bundle`); both read the same fields.
Per-state scratch lives elsewhere (:class:`rbc.model.closure.ClosureState`).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import pinocchio as pin

from rbc.errors import BundleError
from rbc.ir import spatial as sp
from rbc.ir.bundle import BundleData, check_poses, groups_under, read_bundle
from rbc.ir.derived import record_datasets
from rbc.ir.graph import frozen_array
from rbc.ir.joints import JointKind, joint_kind
from rbc.ir.modules import Modules
from rbc.ir.paths import PathFamily, path_families
from rbc.ir.record import Joint, Pose, Record
from rbc.model.couplings import CouplingForm, coupling_form


@dataclass(frozen=True)
class ModuleInfo:
    """A dependency module at run time.

    Attributes:
        chords: chord positions (indices into :attr:`CompiledModel.chord_edges`).
        couplings: coupling indices.
        edges: candidate dependent edges; inputs: kept edges feeding the module.
    """

    chords: tuple[int, ...]
    couplings: tuple[int, ...]
    edges: tuple[int, ...]
    inputs: tuple[int, ...]


@dataclass(frozen=True, eq=False)
class ModuleBlock:
    """A module's rows and columns in the global closure Jacobian.

    Attributes:
        chords, couplings: its residual blocks; rows: (m_b,) global row indices (chords
            first); cols: (n_b,) sorted global v-indices of its candidate and input edges.
    """

    chords: tuple[int, ...]
    couplings: tuple[int, ...]
    rows: np.ndarray
    cols: np.ndarray


@dataclass(frozen=True, eq=False)
class Partition:
    """An independent/dependent split of the velocity coordinates (DESIGN.md §5).

    Attributes:
        name: partition name (``default`` or a ``--partition NAME=…`` request).
        independent: (n_u,) v-indices of the independent speeds u.
        dependent: (r,) v-indices of the dependent speeds.
        rows: (r,) the row selector S: rows of C spanning its row space.
        rank: r.
        length_scale: the length [m] used to scale C for the rank decisions.
        q_ref: (nq,) the assembled reference configuration.
        joints: names of the joints whose coordinates are independent.
    """

    name: str
    independent: np.ndarray
    dependent: np.ndarray
    rows: np.ndarray
    rank: int
    length_scale: float
    q_ref: np.ndarray
    joints: tuple[str, ...]

    def __post_init__(self) -> None:
        for name in ("independent", "dependent", "rows", "q_ref"):
            object.__setattr__(self, name, frozen_array(getattr(self, name)))


@dataclass(frozen=True, eq=False)
class ModeInfo:
    """A compiled support mode as stored in the bundle (``/modes/<name>``; DESIGN.md §10).

    The mode's model is the base model plus one chord to the world per active support
    (:func:`rbc.model.modes.mode_model`); the partition's indices refer to that model's
    coordinates.

    Attributes:
        name: mode name (``free`` or the ``+``-joined support names, or a requested name).
        supports: names of the active supports, in record order.
        partition: the mode's partition at its reference configuration.
        anchors: (k, 7) the reference anchors ``[x y z qw qx qy qz]``: world poses of the
            support frames at the reference configuration.
        tree_rank: closure rank on the tree speeds, ``nv_tree − n_u``.
        actuation_rank: rank of the actuator map ``L = J_ℓ E`` at the reference
            configuration (n_u when every independent speed is driven).
        root_inputs: whether the mode's modules keep floating roots as inputs (local
            modules, one per leg); False when a root had to be dependent (one module).
    """

    name: str
    supports: tuple[str, ...]
    partition: Partition
    anchors: np.ndarray
    tree_rank: int
    actuation_rank: int
    root_inputs: bool

    def __post_init__(self) -> None:
        object.__setattr__(self, "anchors", frozen_array(np.asarray(self.anchors,
                                                                    dtype=float).reshape(-1, 7)))


@dataclass(frozen=True, eq=False)
class CompiledModel:
    """Immutable kinematic model of a compiled mechanism.

    Attributes:
        record: the physical record.
        edge_names, edge_types: (E,) per edge (record joints, then root edges).
        kinds: (E,) :class:`~rbc.ir.joints.JointKind` per edge.
        A, B: (E,) attachment frames ``A_j = T_parent_Jb`` and ``B_j = T_child_Jc`` (pin.SE3).
        AdB: (E, 6, 6) ``Ad(B_j)``, angular-first (maps Jc twists to the child body frame).
        parent, child: (E,) record parent/child vertex (world = n_bodies).
        tree_edges: tree edges in depth-first order; chord_edges: cut joints in order.
        sign: (E,) tree traversal sign (+1 / −1; 0 for chords).
        paths: per chord, the ordered factors ``((edge, sign), …)`` from b to c.
        modules: the dependency modules.
        q_offset, v_offset: (E,) coordinate offsets; nq, nv, nq_tree, nv_tree: sizes.
        coupling_rows: per coupling ``((v_index, q_index, coefficient), …)`` — the
            coefficient is NaN where the coupling is nonlinear (its row depends on q: use
            :attr:`coupling_forms` and :func:`rbc.model.couplings.coupling_terms`);
            coupling_offset: (n_couplings,).
        coupling_forms: per coupling its :class:`~rbc.model.couplings.CouplingForm`.
        lower, upper: (nv,) limits of each velocity coordinate's configuration counterpart
            where one exists (1-to-1 coordinates of limited joints), ±inf elsewhere.
        partitions: stored partitions by name.
        edge_joints: (E,) the joint of each edge (record joints; synthetic root joints; for
            a mode model, the support joints of :mod:`rbc.model.modes`).
        supports: for a mode model, the active supports, whose chords are the last
            ``len(supports)`` chords in this order; () otherwise.
        modes: the support modes stored in the bundle, by name (base model only).
    """

    record: Record
    edge_names: tuple[str, ...]
    edge_types: tuple[str, ...]
    kinds: tuple[JointKind, ...]
    A: tuple[pin.SE3, ...]
    B: tuple[pin.SE3, ...]
    AdB: np.ndarray
    parent: np.ndarray
    child: np.ndarray
    n_bodies: int
    tree_edges: tuple[int, ...]
    chord_edges: tuple[int, ...]
    sign: np.ndarray
    parent_edge: np.ndarray
    paths: tuple[tuple[tuple[int, int], ...], ...]
    modules: tuple[ModuleInfo, ...]
    q_offset: np.ndarray
    v_offset: np.ndarray
    nq: int
    nv: int
    nq_tree: int
    nv_tree: int
    coupling_rows: tuple[tuple[tuple[int, int, float], ...], ...]
    coupling_offset: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    partitions: dict[str, Partition] = field(default_factory=dict)
    edge_joints: tuple[Joint, ...] = ()
    supports: tuple[str, ...] = ()
    modes: dict[str, ModeInfo] = field(default_factory=dict)
    coupling_forms: tuple[CouplingForm, ...] = ()

    # ------------------------------------------------------------------ sizes and slices
    @property
    def n_chords(self) -> int:
        """Number of cut joints."""
        return len(self.chord_edges)

    @property
    def curvature_free(self) -> bool:
        """True when the curvature term vanishes identically (``Ė u ≡ 0``): no cut joints
        and only linear couplings (constant closure rows)."""
        return self.n_chords == 0 and all(f.linear for f in self.coupling_forms)

    @property
    def n_rows(self) -> int:
        """Rows of the closure residual: 6 per chord plus one per coupling."""
        return 6 * self.n_chords + len(self.coupling_rows)

    def q_slice(self, k: int) -> slice:
        """Slice of edge ``k``'s coordinates in q."""
        o = int(self.q_offset[k])
        return slice(o, o + self.kinds[k].nq)

    def v_slice(self, k: int) -> slice:
        """Slice of edge ``k``'s coordinates in v."""
        o = int(self.v_offset[k])
        return slice(o, o + self.kinds[k].nv)

    def edge(self, name: str) -> int:
        """Edge index of a joint name.

        Raises:
            KeyError: no such joint.
        """
        return self._edge_index[name]

    @functools.cached_property
    def _edge_index(self) -> dict[str, int]:
        return {n: k for k, n in enumerate(self.edge_names)}

    @functools.cached_property
    def families(self) -> tuple[PathFamily, ...]:
        """Common-endpoint path families of the chords (:func:`rbc.ir.paths.path_families`)."""
        return path_families(self.paths)

    @functools.cached_property
    def family_of(self) -> dict[int, int]:
        """Chord position → index of its path family in :attr:`families` (chords in none
        are absent)."""
        return {i: n for n, f in enumerate(self.families) for i in f.chords}

    @functools.cached_property
    def v_edge(self) -> np.ndarray:
        """(nv,) the edge owning each velocity coordinate."""
        out = np.empty(self.nv, dtype=np.int64)
        for k in range(len(self.kinds)):
            out[self.v_slice(k)] = k
        return out

    @functools.cached_property
    def blocks(self) -> tuple[ModuleBlock, ...]:
        """Per module: its residual rows and the v-columns it touches (candidates, inputs)."""
        out = []
        for mod in self.modules:
            rows = [6 * i + r for i in mod.chords for r in range(6)]
            rows += [6 * self.n_chords + c for c in mod.couplings]
            cols = sorted({j for k in (*mod.edges, *mod.inputs)
                           for j in range(self.v_slice(k).start, self.v_slice(k).stop)})
            out.append(ModuleBlock(mod.chords, mod.couplings, frozen_array(np.array(rows, int)),
                                   frozen_array(np.array(cols, dtype=np.int64))))
        return tuple(out)

    @functools.cached_property
    def v_names(self) -> tuple[str, ...]:
        """(nv,) names of the velocity coordinates (``docs/conventions.md``)."""
        from rbc.ir.record import coordinate_names

        names = [""] * self.nv
        for k, (t, n) in enumerate(zip(self.edge_types, self.edge_names, strict=True)):
            names[self.v_slice(k)] = coordinate_names(t, n)[1]
        return tuple(names)

    # ------------------------------------------------------------------ configurations
    #: Joint types whose ``q ⊕ v`` is ``q + v`` (one coordinate, Pinocchio's integrate is
    #: the sum): :meth:`integrate` adds them as one vector operation.
    ADDITIVE = ("revolute", "prismatic")

    @functools.cached_property
    def _integration_layout(self) -> tuple[np.ndarray, np.ndarray, tuple[int, ...]]:
        """``(q indices, v indices, other edges)``: the :data:`ADDITIVE` edges' coordinates
        and the edges with speeds integrated joint by joint."""
        qa, va, other = [], [], []
        for k, kind in enumerate(self.kinds):
            if not kind.nv:
                continue
            if kind.type in self.ADDITIVE and kind.nq == kind.nv == 1:
                qa.append(self.q_slice(k).start)
                va.append(self.v_slice(k).start)
            else:
                other.append(k)
        return np.array(qa, dtype=np.int64), np.array(va, dtype=np.int64), tuple(other)

    def integrate(self, q: np.ndarray, v: np.ndarray) -> np.ndarray:
        """``q ⊕ v`` edge by edge: (nq,), (nv,) → (nq,) (revolute and prismatic
        coordinates summed at once; the same floating-point sum as their kinds')."""
        out = np.array(q, dtype=float)
        v = np.asarray(v, dtype=float)
        qa, va, other = self._integration_layout
        out[qa] += v[va]
        for k in other:
            qs, vs = self.q_slice(k), self.v_slice(k)
            if np.any(v[vs]):
                out[qs] = self.kinds[k].integrate(out[qs], v[vs])
        return out

    def difference(self, q0: np.ndarray, q1: np.ndarray) -> np.ndarray:
        """``q1 ⊖ q0`` (nv,) edge by edge."""
        out = np.zeros(self.nv)
        for k, kind in enumerate(self.kinds):
            if kind.nv:
                out[self.v_slice(k)] = kind.difference(q0[self.q_slice(k)], q1[self.q_slice(k)])
        return out

    def initial_configuration(self) -> np.ndarray:
        """(nq,) the record's ``initial`` guesses (neutral where none is given)."""
        q = np.zeros(self.nq)
        joints = self.record.joint_index()
        for k, kind in enumerate(self.kinds):
            if kind.nq:
                j = joints.get(self.edge_names[k])
                init = self.record.joints[j].initial if j is not None else None
                q[self.q_slice(k)] = kind.from_record_initial(init)
        return q

    def limited_values(self, q: np.ndarray) -> np.ndarray:
        """(nv,) the value of each limited coordinate (NaN where the coordinate has none)."""
        out = np.full(self.nv, np.nan)
        for k, kind in enumerate(self.kinds):
            if kind.limited and len(kind.limited) == kind.nv:
                out[self.v_slice(k)] = kind.limited_coordinates(q[self.q_slice(k)])
        return out

    def edge_transform(self, k: int, q: np.ndarray) -> pin.SE3:
        """``X_k = A_k·Q_k(q_k)·B_k⁻¹ = T_parent_child`` of edge k."""
        return self.A[k] * self.kinds[k].motion(q[self.q_slice(k)]) * self.B[k].inverse()

    def with_chords(self, joints: tuple[Joint, ...],
                    paths: tuple[tuple[tuple[int, int], ...], ...],
                    modules: tuple[ModuleInfo, ...], supports: tuple[str, ...] = ()
                    ) -> CompiledModel:
        """This model with extra cut joints appended after its chords (their coordinates
        after all others), e.g. the support closures of a mode (:mod:`rbc.model.modes`).

        Args:
            joints: the new cut joints (parent/child: body names or ``"world"``).
            paths: per new chord its factors ``((edge, sign), …)`` from parent to child.
            modules: the modules of the result (all chords, old and new).
            supports: the supports the new chords close (see :attr:`supports`).

        Returns:
            A new model without stored partitions or modes.
        """
        from rbc.ir.record import JOINT_COORDINATES

        bodies = self.record.body_index()
        names = {j.name for j in self.record.joints}
        kept = tuple(j for j in self.edge_joints if j.name not in names
                     and not j.name.endswith(".root"))
        E = len(self.kinds)
        q_off, v_off = list(self.q_offset), list(self.v_offset)
        nq, nv = self.nq, self.nv
        for j in joints:
            q_off.append(nq)
            v_off.append(nv)
            nq += JOINT_COORDINATES[j.type][0]
            nv += JOINT_COORDINATES[j.type][1]
        vertex = [self.n_bodies if n == "world" else bodies[n] for j in joints
                  for n in (j.parent, j.child)]
        return _build(
            record=self.record,
            edge_names=(*self.edge_names, *(j.name for j in joints)),
            edge_types=(*self.edge_types, *(j.type for j in joints)),
            parent=np.concatenate([self.parent, np.array(vertex[0::2], dtype=np.int64)]),
            child=np.concatenate([self.child, np.array(vertex[1::2], dtype=np.int64)]),
            tree_edges=self.tree_edges,
            chord_edges=(*self.chord_edges, *range(E, E + len(joints))),
            sign=np.concatenate([self.sign, np.zeros(len(joints), dtype=np.int64)]),
            parent_edge=self.parent_edge,
            paths=(*self.paths, *paths),
            modules=modules,
            q_offset=np.array(q_off, dtype=np.int64),
            v_offset=np.array(v_off, dtype=np.int64),
            sizes=(nq, nv, self.nq_tree, self.nv_tree),
            extra_joints=(*kept, *joints),
            supports=(*self.supports, *supports),
        )

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_ir(cls, mods: Modules) -> CompiledModel:
        """Build from the compiler IR (after the ``modules`` pass)."""
        cp = mods.paths
        f = cp.forest
        g = f.graph
        return _build(
            record=g.record,
            edge_names=g.edge_names,
            edge_types=g.edge_types,
            parent=g.parent,
            child=g.child,
            tree_edges=f.tree_edges,
            chord_edges=f.chords,
            sign=f.sign,
            parent_edge=f.parent_edge,
            paths=tuple(tuple((fa.edge, fa.sign) for fa in p.factors) for p in cp.paths),
            modules=tuple(ModuleInfo(m.chords, m.couplings, m.edges, m.inputs)
                          for m in mods.modules),
            q_offset=f.q_offset,
            v_offset=f.v_offset,
            sizes=(f.nq, f.nv, f.nq_tree, f.nv_tree),
        )

    @classmethod
    def from_bundle(cls, path: str | Path) -> CompiledModel:
        """Load a bundle written by ``rbc compile``, trusting nothing in it.

        :func:`rbc.ir.bundle.read_bundle` checks the file's structure, integrity and value
        ranges; then the stored structure is checked against the re-parsed record
        (:func:`check_against_record`) before any of it reaches the numerics.

        Raises:
            BundleError: missing file, not a bundle, other schema version, a corrupted or
                tampered bundle, or a record that no longer parses.
        """
        return cls.from_data(read_bundle(path))

    @classmethod
    def from_data(cls, data: BundleData) -> CompiledModel:
        """Load from bundle contents already read and checked by
        :func:`rbc.ir.bundle.read_bundle` or :func:`rbc.ir.bundle.read_embedded_bundle` (a
        member bundle inside a composed bundle); the record checks of :meth:`from_bundle`.

        Raises:
            BundleError: as :meth:`from_bundle` (the message names ``data.file``).
        """
        from rbc.errors import RecordError
        from rbc.ir.schema import parse_record_text

        path = data.file
        source = str(data.attrs.get("/meta", {}).get("record_source", path))
        try:
            record = parse_record_text(data.text("/record/text"), source)
        except RecordError as err:
            raise BundleError(f"{path}: the stored record does not parse: {err}") from err
        check_against_record(data, record)
        ptr = data.array("/chords/path_ptr")
        pe, ps = data.array("/chords/path_edge"), data.array("/chords/path_sign")

        def groups(name: str) -> list[tuple[int, ...]]:
            p, flat = data.array(f"/modules/{name}_ptr"), data.array(f"/modules/{name}")
            return [tuple(int(x) for x in flat[p[i]: p[i + 1]]) for i in range(len(p) - 1)]

        mods = tuple(ModuleInfo(*t) for t in zip(groups("chords"), groups("couplings"),
                                                 groups("edges"), groups("inputs"),
                                                 strict=True))
        model = _build(
            record=record,
            edge_names=tuple(data.strings("/graph/edge_name")),
            edge_types=tuple(data.strings("/graph/edge_type")),
            parent=data.array("/graph/parent"),
            child=data.array("/graph/child"),
            tree_edges=tuple(int(k) for k in data.array("/forest/tree_edges")),
            chord_edges=tuple(int(k) for k in data.array("/chords/edge")),
            sign=data.array("/forest/sign"),
            parent_edge=data.array("/forest/parent_edge"),
            paths=tuple(tuple((int(pe[i]), int(ps[i])) for i in range(ptr[n], ptr[n + 1]))
                        for n in range(len(ptr) - 1)),
            modules=mods,
            q_offset=data.array("/coordinates/q_offset"),
            v_offset=data.array("/coordinates/v_offset"),
            sizes=tuple(int(data.number("/coordinates", k)) for k in
                        ("nq", "nv", "nq_tree", "nv_tree")),
        )
        parts = {}
        for name in groups_under(data, "/partitions"):
            parts[name] = read_partition(data, f"/partitions/{name}", name)
            check_partition(data, model, parts[name])
        modes = {}
        for name in groups_under(data, "/modes"):
            g = f"/modes/{name}"
            supports = tuple(data.strings(f"{g}/supports"))
            part = read_partition(data, g, name)
            check_partition(data, model, part, nv=int(data.number(g, "nv")),
                            n_rows=model.n_rows + 6 * len(supports))
            check_poses(data, f"{g}/anchors", data.array(f"{g}/anchors"))
            modes[name] = ModeInfo(name, supports, part, data.array(f"{g}/anchors"),
                                   int(data.number(g, "tree_rank")),
                                   int(data.number(g, "actuation_rank")),
                                   bool(data.attrs[g]["root_inputs"]))
        return replace(model, partitions=parts, modes=modes)


def read_partition(data: BundleData, group: str, name: str) -> Partition:
    """A :class:`Partition` from its group of a read bundle (``/partitions/<name>`` or
    ``/modes/<name>``; docs/bundle.md)."""
    return Partition(
        name=name,
        independent=data.array(f"{group}/independent"),
        dependent=data.array(f"{group}/dependent"),
        rows=data.array(f"{group}/rows"),
        rank=int(data.number(group, "rank")),
        length_scale=float(data.number(group, "length_scale", float)),
        q_ref=data.array(f"{group}/q_ref"),
        joints=tuple(data.strings(f"{group}/joints")),
    )


def check_against_record(data: BundleData, record: Record) -> None:
    """The stored structure of a bundle is a valid compilation of its record.

    Checked (each failure names the dataset): the datasets that are functions of the record
    alone (bodies' mass, COM and inertia, edge frames and axes, interfaces:
    :func:`rbc.ir.derived.record_datasets`) equal their values from the record; the edges
    are the record's joints then its root edges, with their types, ends and coordinate
    counts; the tree edges and the cut joints split the edges, the tree is a spanning tree
    in depth-first order (every body has one parent edge, reached after its parent's) with
    signs matching its direction;
    each closure path is a simple chain of tree edges from the cut joint's parent to its
    child; each module lists its rows and variables truthfully and every cut joint and
    coupling is in exactly one module; the coordinate offsets tile q and v in tree order,
    then the cut joints.

    Raises:
        BundleError: the first inconsistency.
    """
    from rbc.ir.graph import root_edges
    from rbc.ir.record import JOINT_COORDINATES

    B, J = len(record.bodies), len(record.joints)
    bodies = record.body_index()
    roots = root_edges(record)
    names = [j.name for j in record.joints] + [r[0] for r in roots]
    types = [j.type for j in record.joints] + [r[1] for r in roots]
    parent = [bodies[j.parent] for j in record.joints] + [B] * len(roots)
    child = [bodies[j.child] for j in record.joints] + [r[2] for r in roots]
    E = len(names)
    if data.strings("/bodies/name") != [b.name for b in record.bodies]:
        raise data.error("/bodies/name", "differs from the record's bodies")
    if int(data.number("/graph", "n_joints")) != J:
        raise data.error("/graph@n_joints", f"differs from the record's {J} joints")
    for path, want in (("/graph/edge_name", names), ("/graph/edge_type", types)):
        if data.strings(path) != want:
            raise data.error(path, "differs from the record's joints and root edges")
    for path, want in (("/graph/parent", parent), ("/graph/child", child),
                       ("/graph/nq", [JOINT_COORDINATES[t][0] for t in types]),
                       ("/graph/nv", [JOINT_COORDINATES[t][1] for t in types])):
        if data.array(path).tolist() != want:
            raise data.error(path, "differs from the record's joints and root edges")
    nq_e = np.array([JOINT_COORDINATES[t][0] for t in types], dtype=np.int64)
    nv_e = np.array([JOINT_COORDINATES[t][1] for t in types], dtype=np.int64)
    for path, want in record_datasets(record, E).items():
        got = data.strings(path) if isinstance(want, list) else data.array(path)
        if isinstance(want, list):
            same = got == want
        else:
            same = got.shape == want.shape and np.array_equal(got, want, equal_nan=True)
        if not same:
            raise data.error(path, "differs from the value the stored record gives")

    tree = data.array("/forest/tree_edges").tolist()
    chords = data.array("/chords/edge").tolist()
    if data.array("/forest/chords").tolist() != sorted(chords) or sorted(tree + chords) != \
            list(range(E)):
        raise data.error("/forest/tree_edges", "the tree edges and cut joints do not split "
                         "the edges")
    if len(tree) != B:
        raise data.error("/forest/tree_edges", f"{len(tree)} tree edges for {B} bodies")
    sign = data.array("/forest/sign")
    pedge = data.array("/forest/parent_edge")
    if sign[chords].any() or not np.all(np.abs(sign[tree]) == 1) or pedge[B] != -1:
        raise data.error("/forest/sign", "signs do not mark the tree edges")
    position = {k: i for i, k in enumerate(tree)}
    for v in range(B):
        k = int(pedge[v])
        if k not in position:
            raise data.error("/forest/parent_edge", f"body {v} has no tree edge as parent")
        up, down = (parent[k], child[k]) if sign[k] > 0 else (child[k], parent[k])
        if down != v:
            raise data.error("/forest/parent_edge", f"edge {k} does not end at body {v}")
        if up != B and position[int(pedge[up])] >= position[k]:
            raise data.error("/forest/tree_edges", "not in depth-first order (a parent edge "
                             "after its child)")

    ptr = data.array("/chords/path_ptr")
    pe, ps = data.array("/chords/path_edge"), data.array("/chords/path_sign")
    for i, e in enumerate(chords):
        x, visited = parent[e], {parent[e]}
        for f in range(int(ptr[i]), int(ptr[i + 1])):
            k, sg = int(pe[f]), int(ps[f])
            if k not in position or sg not in (-1, 1):
                raise data.error("/chords/path_edge", f"path {i}: factor {k} is not a tree edge")
            a, b = (parent[k], child[k]) if sg > 0 else (child[k], parent[k])
            if a != x or b in visited:
                raise data.error("/chords/path_edge", f"path {i}: factor {k} does not continue "
                                 "a simple chain")
            x = b
            visited.add(b)
        if x != child[e]:
            raise data.error("/chords/path_edge", f"path {i} does not end at the cut joint's "
                             "child")

    def csr(name: str) -> list[list[int]]:
        p, flat = data.array(f"/modules/{name}_ptr"), data.array(f"/modules/{name}")
        return [flat[p[m]: p[m + 1]].tolist() for m in range(len(p) - 1)]

    m_chords, m_couplings, m_edges = csr("chords"), csr("couplings"), csr("edges")
    if sorted(c for m in m_chords for c in m) != list(range(len(chords))) or sorted(
            c for m in m_couplings for c in m) != list(range(len(record.couplings))):
        raise data.error("/modules/chords", "every cut joint and coupling must be in exactly "
                         "one module")
    rows = data.array("/modules/rows").tolist()
    variables = data.array("/modules/variables").tolist()
    for m in range(len(m_chords)):
        if rows[m] != 6 * len(m_chords[m]) + len(m_couplings[m]) or variables[m] != int(
                nv_e[m_edges[m]].sum()):
            raise data.error("/modules/rows", f"module {m} misstates its rows or variables")

    q_off, v_off = np.zeros(E, dtype=np.int64), np.zeros(E, dtype=np.int64)
    nq = nv = 0
    for k in tree + chords:
        q_off[k], v_off[k] = nq, nv
        nq, nv = nq + nq_e[k], nv + nv_e[k]
    sizes = {"nq": nq, "nv": nv, "nq_tree": int(nq_e[tree].sum()),
             "nv_tree": int(nv_e[tree].sum())}
    for key, want in sizes.items():
        if int(data.number("/coordinates", key)) != want:
            raise data.error(f"/coordinates@{key}", f"differs from the edges' coordinates "
                             f"({want})")
    for path, want in (("/coordinates/q_offset", q_off), ("/coordinates/v_offset", v_off)):
        if not np.array_equal(data.array(path), want):
            raise data.error(path, "the offsets do not tile the coordinates in tree order")


def check_partition(data: BundleData, model: CompiledModel, part: Partition,
                    nv: int | None = None, n_rows: int | None = None,
                    group: str | None = None) -> None:
    """A stored partition is an independent/dependent split of v with a row selector of
    the closure Jacobian's rows, of consistent rank, naming its independent joints.

    Args:
        nv, n_rows: the sizes of the partition's model when it is not ``model`` (a support
            mode's model appends one 6-row cut joint per support; its joints are then not
            checked by name).
        group: the partition's group in the bundle (default ``/partitions/NAME``, or
            ``/modes/NAME`` with ``nv``).

    Raises:
        BundleError: naming the partition's dataset.
    """
    mode = nv is not None
    g = group or f"/{'modes' if mode else 'partitions'}/{part.name}"
    nv = model.nv if nv is None else nv
    n_rows = model.n_rows if n_rows is None else n_rows
    both = np.concatenate([part.independent, part.dependent])
    if np.unique(both).size != both.size or both.size != nv:
        raise data.error(f"{g}/independent", "independent and dependent speeds must split "
                         f"the {nv} speeds")
    if part.rank != part.dependent.size or part.rows.size != part.rank or np.unique(
            part.rows).size != part.rows.size or (part.rows.size and (
            part.rows.min() < 0 or part.rows.max() >= n_rows)):
        raise data.error(f"{g}/rows", f"{part.rows.size} distinct rows in 0..{n_rows - 1} and "
                         f"@rank {part.rank} must equal the {part.dependent.size} dependent "
                         "speeds")
    owners = {model.edge_names[int(model.v_edge[i])] for i in part.independent} if not mode \
        else set(part.joints)
    if set(part.joints) != owners:
        raise data.error(f"{g}/joints", "does not name the joints of the independent speeds")


def root_joint(name: str, etype: str) -> Joint:
    """A synthetic record joint for a root edge (weld or free joint to the world)."""
    return Joint(name=name, type=etype, parent="world", child=name.removesuffix(".root"))


def _build(*, record: Record, edge_names, edge_types, parent, child, tree_edges, chord_edges,
           sign, parent_edge, paths, modules, q_offset, v_offset, sizes,
           extra_joints: tuple[Joint, ...] = (), supports: tuple[str, ...] = ()
           ) -> CompiledModel:
    joints = {j.name: j for j in (*record.joints, *extra_joints)}
    rec_joints = [joints.get(n) or root_joint(n, t)
                  for n, t in zip(edge_names, edge_types, strict=True)]
    kinds = tuple(joint_kind(j) for j in rec_joints)
    A = tuple(sp.se3_from_pose(j.parent_frame) for j in rec_joints)
    B = tuple(sp.se3_from_pose(j.child_frame if j.child_frame else Pose())
              for j in rec_joints)
    nq, nv, nq_tree, nv_tree = sizes
    lower, upper = np.full(nv, -np.inf), np.full(nv, np.inf)
    for k, (j, kind) in enumerate(zip(rec_joints, kinds, strict=True)):
        if j.lower and len(kind.limited) == kind.nv:
            o = int(v_offset[k])
            lower[o: o + kind.nv] = j.lower
            upper[o: o + kind.nv] = j.upper
    index = {n: k for k, n in enumerate(edge_names)}
    v_of = {n: int(v_offset[k]) for n, k in index.items()}
    q_of = {n: int(q_offset[k]) for n, k in index.items()}
    forms = tuple(coupling_form(cp, v_of, q_of) for cp in record.couplings)
    coupling_rows = tuple(
        tuple(zip(f.v_index, f.q_index, f.coef if f.linear else (np.nan,) * len(f.v_index),
                  strict=True))
        for f in forms
    )
    return CompiledModel(
        record=record,
        edge_names=tuple(edge_names),
        edge_types=tuple(edge_types),
        kinds=kinds,
        A=A,
        B=B,
        AdB=frozen_array(np.array([sp.adjoint(b) for b in B]).reshape(-1, 6, 6)),
        parent=frozen_array(parent),
        child=frozen_array(child),
        n_bodies=len(record.bodies),
        tree_edges=tuple(tree_edges),
        chord_edges=tuple(chord_edges),
        sign=frozen_array(sign),
        parent_edge=frozen_array(parent_edge),
        paths=paths,
        modules=modules,
        q_offset=frozen_array(q_offset),
        v_offset=frozen_array(v_offset),
        nq=nq,
        nv=nv,
        nq_tree=nq_tree,
        nv_tree=nv_tree,
        coupling_rows=coupling_rows,
        coupling_forms=forms,
        coupling_offset=frozen_array(np.array([c.offset for c in record.couplings], dtype=float)),
        lower=frozen_array(lower),
        upper=frozen_array(upper),
        edge_joints=tuple(rec_joints),
        supports=tuple(supports),
    )

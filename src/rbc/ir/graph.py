"""Multigraph IR: bodies (plus the world) as vertices, joints (plus root edges) as edges.

Vertex ``i < n_bodies`` is record body ``i``; vertex ``WORLD = n_bodies`` is the world.
Edge ``k < n_joints`` is record joint ``k``; after them comes one **root edge** per fixed
body (a weld to the world, no coordinates) and per floating body (a free joint to the world,
the free-root pose). Repeated parts stay separate instances.

Counts (DESIGN.md §4): ``components`` κ is the number of connected components of the body
graph (record joints only); ``cycle_rank = |E| − |V| + 1`` on the graph with the world vertex
and the root edges, which equals ``|J| − |B| + κ`` when every component has exactly one root.
Root edges through the world close loops too (two fixed bodies in one component, or two
floating robots holding hands); the general formula counts them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rbc.ir.record import Record


def root_edges(record: Record) -> list[tuple[str, str, int]]:
    """``(name, type, child body)`` of each root edge, in body order: ``"<body>.root"``, a
    ``fixed`` weld for a fixed body, a ``free`` joint for a floating one."""
    return [(f"{b.name}.root", "fixed" if b.kind == "fixed" else "free", i)
            for i, b in enumerate(record.bodies) if b.kind != "ordinary"]


def frozen_array(a: np.ndarray) -> np.ndarray:
    """A read-only contiguous copy-or-view of ``a`` (IR arrays are immutable)."""
    a = np.array(a)
    a.setflags(write=False)
    return a


@dataclass(frozen=True, eq=False)
class Multigraph:
    """The record's joint multigraph.

    Attributes:
        record: the source record.
        body_names: (B,) vertex names; the world is vertex ``B`` (:attr:`world`).
        edge_names: (E,) record joint names, then ``"<body>.root"`` for each root edge.
        edge_types: (E,) joint type names (root edges: ``fixed`` or ``free``).
        parent, child: (E,) int vertex indices (record parent and child; root edges have
            the world as parent).
        nq, nv: (E,) int coordinate counts per edge.
        keep: (E,) bool — edge must stay in the spanning tree (actuated, carries drive
            data, listed in ``independent``, or a root edge).
        prefer_cut: (E,) bool — the record's ``cut: prefer`` hint.
        require_cut: (E,) bool — the record's ``cut: required`` (a declared cut).
        n_joints: number of record joints J (edges ``0..J-1``).
        component: (B,) int component id of each body in the body graph.
        components: κ.
        cycle_rank: number of independent loops.
    """

    record: Record
    body_names: tuple[str, ...]
    edge_names: tuple[str, ...]
    edge_types: tuple[str, ...]
    parent: np.ndarray
    child: np.ndarray
    nq: np.ndarray
    nv: np.ndarray
    keep: np.ndarray
    prefer_cut: np.ndarray
    n_joints: int
    component: np.ndarray
    components: int
    cycle_rank: int
    require_cut: np.ndarray | None = None

    def __post_init__(self) -> None:
        if self.require_cut is None:
            object.__setattr__(self, "require_cut", np.zeros(len(self.edge_names), bool))
        for name in ("parent", "child", "nq", "nv", "keep", "prefer_cut", "require_cut",
                     "component"):
            object.__setattr__(self, name, frozen_array(getattr(self, name)))

    @property
    def n_bodies(self) -> int:
        """Number of record bodies B."""
        return len(self.body_names)

    @property
    def world(self) -> int:
        """Vertex index of the world (= B)."""
        return len(self.body_names)

    @property
    def n_edges(self) -> int:
        """Number of edges E = J + number of root edges."""
        return len(self.edge_names)

    def is_root_edge(self, k: int) -> bool:
        """True for the synthesized weld/free edge of a fixed/floating body."""
        return k >= self.n_joints

    def vertex_name(self, v: int) -> str:
        """Body name of vertex ``v``, or ``"world"``."""
        return "world" if v == self.world else self.body_names[v]

    def dump(self) -> str:
        """Human-readable listing (``--dump-after graph``)."""
        lines = [
            f"multigraph {self.record.name}: {self.n_bodies} bodies, {self.n_joints} joints, "
            f"{self.n_edges - self.n_joints} root edges, components={self.components}, "
            f"cycle_rank={self.cycle_rank}"
        ]
        for k in range(self.n_edges):
            flags = (("keep " if self.keep[k] else "") + ("prefer-cut " if self.prefer_cut[k]
                                                          else "")
                     + ("required-cut" if self.require_cut[k] else ""))
            lines.append(
                f"  e{k:<4d} {self.edge_names[k]:<24s} {self.edge_types[k]:<11s} "
                f"{self.vertex_name(int(self.parent[k]))} -> {self.vertex_name(int(self.child[k]))}"
                f"  nv={int(self.nv[k])} {flags}".rstrip()
            )
        return "\n".join(lines)

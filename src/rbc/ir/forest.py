"""Spanning forest IR: tree edges, chords (cut joints), and the coordinate layout.

The forest is one spanning tree per connected component, all hanging from the world through
the root edges; together they form a single tree over the vertices ``0..B`` (world = B).

Coordinate layout (the public order of q and v, DESIGN.md §7): the tree edges in depth-first
order (each subtree contiguous — what ``pinocchio.Model`` needs for a correct ``crba``), then
the chords in record order. A chord keeps its own joint coordinates q_e.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rbc.ir.graph import Multigraph, frozen_array


@dataclass(frozen=True, eq=False)
class Forest:
    """Spanning forest with cut joints.

    Attributes:
        graph: the multigraph it spans.
        tree_edges: edge indices of the tree in depth-first order (root edges included).
        chords: edge indices of the cut joints, in record order.
        parent_edge: (V,) tree edge joining vertex v to its tree parent (−1 for the world).
        parent_vertex: (V,) tree parent of v (−1 for the world).
        depth: (V,) tree depth (world 0, root bodies 1).
        sign: (E,) +1 if the edge's record parent is its tree parent, −1 if the tree
            traverses it tip to root, 0 for chords. ``T_treeparent_v = X_j^{sign}``.
        q_offset, v_offset: (E,) start of each edge's slice in q and v.
        nq, nv: total coordinate counts; ``nq_tree``, ``nv_tree`` of the tree edges alone.
        forced_cuts: record joints that should have stayed in the tree (actuated or
            independent) but close a loop made only of such joints, so one had to be cut
            (or were declared ``cut: required``).
        declared_cuts: record joints the record declares ``cut: required`` (user decisions;
            the other chords are the compiler's choice).
    """

    graph: Multigraph
    tree_edges: tuple[int, ...]
    chords: tuple[int, ...]
    parent_edge: np.ndarray
    parent_vertex: np.ndarray
    depth: np.ndarray
    sign: np.ndarray
    q_offset: np.ndarray
    v_offset: np.ndarray
    nq: int
    nv: int
    nq_tree: int
    nv_tree: int
    forced_cuts: tuple[int, ...] = ()
    declared_cuts: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        for name in ("parent_edge", "parent_vertex", "depth", "sign", "q_offset", "v_offset"):
            object.__setattr__(self, name, frozen_array(getattr(self, name)))

    def q_slice(self, k: int) -> slice:
        """Slice of edge ``k``'s coordinates in q."""
        return slice(int(self.q_offset[k]), int(self.q_offset[k] + self.graph.nq[k]))

    def v_slice(self, k: int) -> slice:
        """Slice of edge ``k``'s coordinates in v."""
        return slice(int(self.v_offset[k]), int(self.v_offset[k] + self.graph.nv[k]))

    def dump(self) -> str:
        """Human-readable listing (``--dump-after forest``)."""
        g = self.graph
        lines = [f"forest: {len(self.tree_edges)} tree edges, {len(self.chords)} chords, "
                 f"nq={self.nq} nv={self.nv} nq_tree={self.nq_tree} nv_tree={self.nv_tree}"]
        for k in self.tree_edges:
            v = int(g.child[k]) if self.sign[k] > 0 else int(g.parent[k])
            lines.append(f"  {'  ' * (int(self.depth[v]) - 1)}{g.edge_names[k]} "
                         f"[{g.edge_types[k]}{'' if self.sign[k] > 0 else ', reversed'}] "
                         f"-> {g.vertex_name(v)}  q{self.q_slice(k).start}:{self.q_slice(k).stop}")
        for k in self.chords:
            lines.append(f"  chord {g.edge_names[k]} [{g.edge_types[k]}] "
                         f"{g.vertex_name(int(g.parent[k]))} -> {g.vertex_name(int(g.child[k]))}"
                         + ("  (declared: cut: required)" if k in self.declared_cuts else ""))
        for k in self.forced_cuts:
            why = ("is declared 'cut: required'" if k in self.declared_cuts
                   else "closes a loop of kept joints")
            lines.append(f"  note: {g.edge_names[k]} should stay in the tree but {why}; it "
                         "was cut")
        return "\n".join(lines)

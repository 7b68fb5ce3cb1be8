"""Pass ``forest``: multigraph → spanning forest and cut joints (DESIGN.md §4).

Joints declared ``cut: required`` are chords before anything else (a user decision, e.g.
the cuts a robot's documentation prescribes); the tree is chosen among the other edges. If
those do not span every body, the record is refused naming the bodies the declared cuts
disconnect. The rest follows the rules, in priority order (Kruskal's algorithm over edges
sorted by this key):

1. Root edges, then joints that are actuated, carry drive data or are listed in
   ``independent`` stay in the tree.
2. Joints with the ``cut: prefer`` hint are cut before others.
3. Joints with more freedom are cut first (free > spherical = planar > universal =
   cylindrical > revolute = prismatic = helical > fixed), i.e. edges are kept in order of
   increasing nv.
4. Loop paths are balanced: edges nearer the world (hop distance of the farther endpoint,
   then of the nearer one, by breadth-first search over the whole graph) are kept first, so
   each loop is split on the side away from its root and its two half-paths have nearly
   equal length.
5. Among equal candidates the joint written last in the record is cut (users tend to write
   the closing joint last), so output is deterministic.

The tree is then laid out depth first from the world, children in edge order, giving the
coordinate order. Cost O(E log E) for the sort, O(V + E) otherwise.

Reference: Kruskal, "On the shortest spanning subtree of a graph", Proc. AMS 7(1), 1956.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from rbc.errors import CompileError
from rbc.ir.forest import Forest
from rbc.ir.graph import Multigraph
from rbc.ir.unionfind import UnionFind
from rbc.passes.base import check


def hop_distance(g: Multigraph) -> np.ndarray:
    """Breadth-first hop distance of every vertex from the world over all edges; (V,) int."""
    V = g.n_bodies + 1
    adjacency: list[list[int]] = [[] for _ in range(V)]
    for p, c in zip(g.parent.tolist(), g.child.tolist(), strict=True):
        adjacency[p].append(c)
        adjacency[c].append(p)
    dist = np.full(V, -1, dtype=np.int64)
    dist[g.world] = 0
    queue = deque([g.world])
    while queue:
        v = queue.popleft()
        for w in adjacency[v]:
            if dist[w] < 0:
                dist[w] = dist[v] + 1
                queue.append(w)
    return dist


def keep_order(g: Multigraph) -> list[int]:
    """Edge indices sorted by the forest rules (first = most wanted in the tree)."""
    dist = hop_distance(g)
    far = np.maximum(dist[g.parent], dist[g.child])
    near = np.minimum(dist[g.parent], dist[g.child])

    def key(k: int) -> tuple[int, ...]:
        tier = 0 if g.is_root_edge(k) else (1 if g.keep[k] else 2)
        return (tier, int(g.prefer_cut[k]), int(g.nv[k]), int(far[k]), int(near[k]), k)

    return sorted(range(g.n_edges), key=key)


def depth_first_layout(g: Multigraph, tree: list[int]) -> tuple[list[int], np.ndarray, ...]:
    """Lay the tree out depth first from the world.

    Returns ``(order, parent_edge, parent_vertex, depth, sign)``: tree edges in preorder
    (children visited in edge-index order) and per-vertex/per-edge arrays as in
    :class:`~rbc.ir.forest.Forest`.
    """
    V = g.n_bodies + 1
    adjacency: list[list[int]] = [[] for _ in range(V)]
    for k in sorted(tree):
        adjacency[int(g.parent[k])].append(k)
        adjacency[int(g.child[k])].append(k)
    parent_edge = np.full(V, -1, dtype=np.int64)
    parent_vertex = np.full(V, -1, dtype=np.int64)
    depth = np.zeros(V, dtype=np.int64)
    sign = np.zeros(g.n_edges, dtype=np.int64)
    order: list[int] = []
    stack = [(g.world, -1)]
    while stack:
        v, via = stack.pop()
        if via >= 0:
            order.append(via)
        # push in reverse so that children are visited in edge order
        for k in reversed(adjacency[v]):
            if k == via:
                continue
            w = int(g.child[k]) if int(g.parent[k]) == v else int(g.parent[k])
            parent_edge[w] = k
            parent_vertex[w] = v
            depth[w] = depth[v] + 1
            sign[k] = 1 if int(g.parent[k]) == v else -1
            stack.append((w, k))
    return order, parent_edge, parent_vertex, depth, sign


def _no_spanning_tree(g: Multigraph, sets: UnionFind, declared: list[int]) -> CompileError:
    """The error for declared cuts that disconnect bodies from every root."""
    lost = [g.body_names[v] for v in range(g.n_bodies) if sets.find(v) != sets.find(g.world)]
    names = ", ".join(g.edge_names[k] for k in declared)
    return CompileError(
        f"{g.record.source}: the joints declared 'cut: required' ({names}) leave no spanning "
        f"tree: bodies {', '.join(lost)} would have no path to a root through the remaining "
        "joints; declare fewer cuts (at most one per loop, cycle rank "
        f"{g.cycle_rank}), or use 'cut: prefer' to let the compiler choose")


@dataclass(frozen=True)
class BuildForest:
    """Choose the spanning forest and the cut joints (chords); lay out coordinates."""

    name: ClassVar[str] = "forest"

    def run(self, g: Multigraph) -> Forest:
        sets = UnionFind(g.n_bodies + 1)
        declared = [k for k in range(g.n_edges) if g.require_cut[k]]
        tree, chords, forced = [], list(declared), [k for k in declared if g.keep[k]]
        for k in keep_order(g):
            if g.require_cut[k]:
                continue
            if sets.union(int(g.parent[k]), int(g.child[k])):
                tree.append(k)
            else:
                chords.append(k)
                if g.keep[k]:
                    forced.append(k)
        if len(tree) < g.n_bodies:
            raise _no_spanning_tree(g, sets, declared)
        order, parent_edge, parent_vertex, depth, sign = depth_first_layout(g, tree)
        chords.sort()
        q_offset = np.zeros(g.n_edges, dtype=np.int64)
        v_offset = np.zeros(g.n_edges, dtype=np.int64)
        nq = nv = 0
        nq_tree = nv_tree = 0
        for n, k in enumerate(order + chords):
            if n == len(order):
                nq_tree, nv_tree = nq, nv
            q_offset[k], v_offset[k] = nq, nv
            nq += int(g.nq[k])
            nv += int(g.nv[k])
        if not chords:
            nq_tree, nv_tree = nq, nv
        return Forest(
            graph=g,
            tree_edges=tuple(order),
            chords=tuple(chords),
            parent_edge=parent_edge,
            parent_vertex=parent_vertex,
            depth=depth,
            sign=sign,
            q_offset=q_offset,
            v_offset=v_offset,
            nq=nq,
            nv=nv,
            nq_tree=nq_tree,
            nv_tree=nv_tree,
            forced_cuts=tuple(sorted(forced)),
            declared_cuts=tuple(declared),
        )

    def verify(self, f: Forest) -> None:
        g = f.graph
        n = self.name
        check(len(f.tree_edges) == g.n_bodies, n, "a spanning tree over B+1 vertices has B edges")
        check(len(f.chords) == g.cycle_rank, n, "one chord per independent loop")
        check(set(f.declared_cuts) <= set(f.chords), n, "declared cuts are chords")
        check(set(f.tree_edges).isdisjoint(f.chords), n, "tree edges and chords are disjoint")
        check(bool(np.all(f.parent_edge[: g.n_bodies] >= 0)), n, "every body is spanned")
        check(f.nv_tree == int(sum(g.nv[k] for k in f.tree_edges)), n, "nv_tree counts tree edges")
        for k in f.tree_edges:
            child = int(g.child[k]) if f.sign[k] > 0 else int(g.parent[k])
            check(int(f.parent_edge[child]) == k, n, f"edge {g.edge_names[k]} hangs its child")

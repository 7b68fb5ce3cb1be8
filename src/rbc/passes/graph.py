"""Pass ``graph``: physical record → joint multigraph with κ and cycle rank (DESIGN.md §4).

Pre-condition: a parsed, validated :class:`~rbc.ir.record.Record`.
Post-conditions: one vertex per body plus the world; one edge per joint plus one root edge
per fixed/floating body; every body reaches a root; ``cycle_rank = |E| − |V| + 1`` ≥ 0.
Cost O(|B| + |J|).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from rbc.errors import CompileError
from rbc.ir.graph import Multigraph, root_edges
from rbc.ir.record import JOINT_COORDINATES, Record
from rbc.ir.unionfind import UnionFind
from rbc.passes.base import check


@dataclass(frozen=True)
class BuildGraph:
    """Build the multigraph; mark edges that must stay in the tree.

    An edge must stay in the spanning tree (``keep``) when its joint is actuated (an actuator
    and its drive data), carries armature (reflected inertia belongs to a tree coordinate:
    cut coordinates carry no mass), is listed in ``independent``, or is a root edge.
    Raises :class:`~rbc.errors.CompileError` if some body has no path to a root.
    """

    name: ClassVar[str] = "graph"

    def run(self, record: Record) -> Multigraph:
        bodies = record.body_index()
        B, J = len(record.bodies), len(record.joints)
        kept = (record.actuated_joints() | set(record.independent)
                | {j.name for j in record.joints if j.armature})
        names = [j.name for j in record.joints]
        types = [j.type for j in record.joints]
        parent = [bodies[j.parent] for j in record.joints]
        child = [bodies[j.child] for j in record.joints]
        keep = [j.name in kept for j in record.joints]
        prefer = [j.cut_prefer for j in record.joints]
        required = [j.cut_required for j in record.joints]
        for name, kind, i in root_edges(record):
            names.append(name)
            types.append(kind)
            parent.append(B)
            child.append(i)
            keep.append(True)
            prefer.append(False)
            required.append(False)
        nq = [JOINT_COORDINATES[t][0] for t in types]
        nv = [JOINT_COORDINATES[t][1] for t in types]

        sets = UnionFind(B)
        for k in range(J):
            sets.union(parent[k], child[k])
        rep = [sets.find(i) for i in range(B)]
        ids = {r: n for n, r in enumerate(dict.fromkeys(rep))}
        component = np.array([ids[r] for r in rep], dtype=np.int64)
        rooted = {component[c] for c in child[J:]}
        orphans = [record.bodies[i].name for i in range(B) if component[i] not in rooted]
        if orphans:
            raise CompileError(
                f"{record.source}: bodies {', '.join(orphans)} have no path to a root; "
                "mark one of them `fixed: true` (welded to the world) or `floating: true`"
            )
        E, V = len(names), B + 1
        return Multigraph(
            record=record,
            body_names=tuple(b.name for b in record.bodies),
            edge_names=tuple(names),
            edge_types=tuple(types),
            parent=np.array(parent, dtype=np.int64),
            child=np.array(child, dtype=np.int64),
            nq=np.array(nq, dtype=np.int64),
            nv=np.array(nv, dtype=np.int64),
            keep=np.array(keep, dtype=bool),
            prefer_cut=np.array(prefer, dtype=bool),
            require_cut=np.array(required, dtype=bool),
            n_joints=J,
            component=component,
            components=len(ids),
            cycle_rank=E - V + 1,
        )

    def verify(self, g: Multigraph) -> None:
        check(g.n_edges == g.n_joints + int(np.sum(g.parent == g.world)), self.name,
              "root edges are exactly the edges from the world")
        check(bool(np.all(g.parent != g.child)), self.name, "no self-loop edges")
        check(g.cycle_rank >= 0, self.name, f"cycle rank {g.cycle_rank} < 0")

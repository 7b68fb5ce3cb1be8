"""Pass ``paths``: forest → ordered closure paths per chord (DESIGN.md §4).

Post-conditions: each path composes ``T_b_c`` through the tree (checked symbolically: the
factors chain vertex b to vertex c, each factor's exponent matching its traversal
direction). Cost O(Σ_e (|P_e| + 1)): the walk climbs from the deeper end only as far as the
lowest common ancestor.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from rbc.ir.forest import Forest
from rbc.ir.paths import ClosurePath, ClosurePaths, Factor
from rbc.passes.base import check


def closure_path(f: Forest, chord: int) -> ClosurePath:
    """Ordered factors ``X_j^{σ}`` from the chord's parent b to its child c through the LCA."""
    g = f.graph
    b, c = int(g.parent[chord]), int(g.child[chord])
    up: list[Factor] = []  # from b upwards
    down: list[Factor] = []  # from c upwards, reversed at the end
    x, y = b, c
    while x != y:
        if f.depth[x] >= f.depth[y]:
            k = int(f.parent_edge[x])
            up.append(Factor(k, -int(f.sign[k]), g.edge_names[k]))
            x = int(f.parent_vertex[x])
        else:
            k = int(f.parent_edge[y])
            down.append(Factor(k, int(f.sign[k]), g.edge_names[k]))
            y = int(f.parent_vertex[y])
    return ClosurePath(chord, g.edge_names[chord], b, c, x, tuple(up + down[::-1]))


@dataclass(frozen=True)
class BuildPaths:
    """Compute every chord's closure path with common-ancestor pruning."""

    name: ClassVar[str] = "paths"

    def run(self, f: Forest) -> ClosurePaths:
        return ClosurePaths(f, tuple(closure_path(f, e) for e in f.chords))

    def verify(self, cp: ClosurePaths) -> None:
        f, g = cp.forest, cp.forest.graph
        for p in cp.paths:
            v = p.b
            for fa in p.factors:
                k = fa.edge
                up = int(f.parent_edge[v]) == k and fa.sign == -int(f.sign[k])
                w = int(f.parent_vertex[v]) if up else (
                    int(g.child[k]) if f.sign[k] > 0 else int(g.parent[k]))
                check(up or fa.sign == int(f.sign[k]), self.name,
                      f"{p.name}: factor {fa.name} has the exponent of its direction")
                check(up or int(f.parent_vertex[w]) == v, self.name,
                      f"{p.name}: factor {fa.name} continues the chain")
                v = w
            check(v == p.c, self.name, f"{p.name}: the path ends at the chord's child")

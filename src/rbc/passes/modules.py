"""Pass ``modules``: union–find over residual blocks sharing candidate dependent variables.

Blocks are the chords (in chord order) and the couplings (in record order). Two blocks are
in one module when they touch a common candidate edge (see :mod:`rbc.ir.modules`). Cost
O(|B| + |J| + Σ_e (|P_e| + 1)) with a near-constant union–find.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from rbc.ir.modules import Module, Modules
from rbc.ir.paths import ClosurePaths
from rbc.ir.unionfind import UnionFind
from rbc.passes.base import check


def block_edges(cp: ClosurePaths) -> list[list[int]]:
    """Edges touched by each residual block: chords first, then couplings."""
    g = cp.forest.graph
    joints = g.record.joint_index()
    blocks = [[p.chord] + [fa.edge for fa in p.factors] for p in cp.paths]
    blocks += [[joints[name] for name in c.joints] for c in g.record.couplings]
    return blocks


@dataclass(frozen=True)
class BuildModules:
    """Group residual blocks into independently solvable dependency modules."""

    name: ClassVar[str] = "modules"

    def run(self, cp: ClosurePaths) -> Modules:
        g = cp.forest.graph
        n_chords = len(cp.paths)
        blocks = block_edges(cp)
        sets = UnionFind(len(blocks))
        owner: dict[int, int] = {}
        for i, edges in enumerate(blocks):
            for k in edges:
                if g.nv[k] == 0 or (g.keep[k] and not (i < n_chords and k == cp.paths[i].chord)):
                    continue
                if k in owner:
                    sets.union(owner[k], i)
                else:
                    owner[k] = i
        groups: dict[int, list[int]] = {}
        for i in range(len(blocks)):
            groups.setdefault(sets.find(i), []).append(i)
        modules = []
        for members in groups.values():
            touched = sorted({k for i in members for k in blocks[i]})
            cands = tuple(k for k in touched if owner.get(k) is not None
                          and sets.find(owner[k]) == sets.find(members[0]))
            inputs = tuple(k for k in touched if k not in cands and g.nv[k] > 0)
            chords = tuple(i for i in members if i < n_chords)
            couplings = tuple(i - n_chords for i in members if i >= n_chords)
            modules.append(Module(chords, couplings, cands, inputs,
                                  rows=6 * len(chords) + len(couplings),
                                  variables=int(sum(g.nv[k] for k in cands))))
        return Modules(cp, tuple(modules))

    def verify(self, m: Modules) -> None:
        seen = [c for mod in m.modules for c in mod.chords]
        check(sorted(seen) == list(range(len(m.paths.paths))), self.name,
              "every chord is in exactly one module")
        owners: dict[int, int] = {}
        for i, mod in enumerate(m.modules):
            for k in mod.edges:
                check(owners.setdefault(k, i) == i, self.name,
                      f"candidate edge {k} belongs to one module only")

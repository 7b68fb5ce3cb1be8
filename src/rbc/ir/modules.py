"""Dependency-module IR (DESIGN.md §4).

A module is a set of residual blocks (chord closures, couplings) that share candidate
dependent variables. Candidates are the coordinates that the rank analysis may make
dependent: every edge with coordinates on a chord's path or in a coupling, plus the chord's
own coordinates, except edges that must stay independent-capable (actuated, drive data,
``independent``, root edges). Each module can be solved on its own once the independent
inputs are fixed, and skipped when those inputs did not change.
"""

from __future__ import annotations

from dataclasses import dataclass

from rbc.ir.paths import ClosurePaths


@dataclass(frozen=True)
class Module:
    """One dependency module.

    Attributes:
        chords: positions in ``ClosurePaths.paths`` (chord order).
        couplings: indices into ``record.couplings``.
        edges: candidate dependent edges (sorted edge indices).
        inputs: edges that feed the module but are not candidates (kept joints on its paths).
        rows: residual rows (6 per chord + 1 per coupling).
        variables: candidate dependent velocity coordinates (Σ nv over ``edges``).
    """

    chords: tuple[int, ...]
    couplings: tuple[int, ...]
    edges: tuple[int, ...]
    inputs: tuple[int, ...]
    rows: int
    variables: int


@dataclass(frozen=True, eq=False)
class Modules:
    """The module decomposition of a mechanism, ordered by first chord/coupling."""

    paths: ClosurePaths
    modules: tuple[Module, ...]

    def dump(self) -> str:
        """Human-readable listing (``--dump-after modules``)."""
        g = self.paths.forest.graph
        rec = g.record
        lines = [f"modules: {len(self.modules)}"]
        for i, m in enumerate(self.modules):
            chords = [self.paths.paths[c].name for c in m.chords]
            coup = [rec.couplings[c].name for c in m.couplings]
            lines.append(f"  module {i}: chords {chords} couplings {coup} rows={m.rows} "
                         f"variables={m.variables} inputs {[g.edge_names[k] for k in m.inputs]}")
        return "\n".join(lines)

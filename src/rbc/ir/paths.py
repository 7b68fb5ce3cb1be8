"""Closure-path IR: per chord, the ordered factors through the lowest common ancestor.

For a chord e = (b, c) (record parent b, child c), DESIGN.md §4:

    Δ_e = [∏_{i} X_{j_i}^{σ_i}] · X_e(q_e)⁻¹ = I,     ρ_e = log(Δ_e)  (6 rows)

where the product runs over the tree path from b up to the lowest common ancestor (LCA) and
down to c, so that ``∏ X^{σ} = T_b_c`` evaluated through the tree. Going up from a vertex to
its tree parent through edge j uses ``σ = −sign_j``; going down uses ``σ = +sign_j``. Only the
path below the LCA is stored (common-ancestor pruning). A loop that closes through the
world (two roots in one component) includes the root edges; a fixed root edge is the
identity factor.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rbc.ir.forest import Forest


@dataclass(frozen=True)
class Factor:
    """One factor ``X_j^{σ}`` of a closure path.

    Attributes:
        edge: edge (joint) index in the multigraph.
        sign: +1 or −1, the exponent σ.
        name: source joint name.
    """

    edge: int
    sign: int
    name: str


@dataclass(frozen=True)
class ClosurePath:
    """The closure comparison of one chord.

    Attributes:
        chord: edge index of the cut joint e.
        name: its joint name.
        b, c: record parent and child vertices of the chord.
        lca: lowest common ancestor vertex of b and c (may be the world, B).
        factors: ordered factors from b to c.
    """

    chord: int
    name: str
    b: int
    c: int
    lca: int
    factors: tuple[Factor, ...]

    @property
    def length(self) -> int:
        """Number of factors |P_e|."""
        return len(self.factors)


@dataclass(frozen=True, eq=False)
class ClosurePaths:
    """All closure paths of a forest, in chord order.

    Attributes:
        forest: the spanning forest.
        paths: one :class:`ClosurePath` per chord, in ``forest.chords`` order.
    """

    forest: Forest
    paths: tuple[ClosurePath, ...]

    def csr(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Flat arrays ``(ptr (n_chords+1,), edge (n_factors,), sign (n_factors,))``."""
        lengths = [p.length for p in self.paths]
        ptr = np.concatenate([[0], np.cumsum(lengths, dtype=np.int64)]).astype(np.int64)
        edge = np.array([f.edge for p in self.paths for f in p.factors], dtype=np.int64)
        sign = np.array([f.sign for p in self.paths for f in p.factors], dtype=np.int64)
        return ptr, edge, sign

    def dump(self) -> str:
        """Human-readable listing (``--dump-after paths``)."""
        g = self.forest.graph
        lines = [f"closure paths: {len(self.paths)} chords, "
                 f"{sum(p.length for p in self.paths)} factors"]
        for p in self.paths:
            chain = " · ".join(f"{f.name}^{'+1' if f.sign > 0 else '-1'}" for f in p.factors)
            lines.append(f"  {p.name} ({g.vertex_name(p.b)} -> {g.vertex_name(p.c)}, "
                         f"lca {g.vertex_name(p.lca)}, |P|={p.length}): {chain or 'I'}")
        return "\n".join(lines)

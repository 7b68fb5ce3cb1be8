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

from collections.abc import Sequence
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


@dataclass(frozen=True)
class PathFamily:
    """Chords whose closure paths end (``side == "suffix"``) or start (``"prefix"``) with the
    same stretch of tree path: loops that meet at a common endpoint body through one shared
    tree branch — the Stewart platform reached from the base through each of its legs.

    The family has ``n_paths = len(chords) + 1`` paths between its two endpoints (the tree
    branch and one through each chord) and needs ``n_paths − 1`` comparisons, one per chord,
    not one per pair of paths; the shared stretch's product is evaluated once per family
    instead of once per chord, saving ``(len(chords) − 1) · len(shared)`` factor products
    per residual evaluation.

    Attributes:
        chords: chord positions (0 … n_chords−1), ascending.
        shared: the common factors ``((edge, sign), …)`` in path order.
        side: ``"suffix"`` (the paths end with ``shared``) or ``"prefix"`` (they start with it).
    """

    chords: tuple[int, ...]
    shared: tuple[tuple[int, int], ...]
    side: str

    @property
    def n_paths(self) -> int:
        """N_p: paths between the family's endpoints (the tree branch plus one per chord)."""
        return len(self.chords) + 1

    @property
    def saving(self) -> int:
        """Factor products saved per residual evaluation by evaluating ``shared`` once."""
        return (len(self.chords) - 1) * len(self.shared)


def _common(paths: Sequence[Sequence[tuple[int, int]]], members: list[int], side: str) -> int:
    """Length of the common suffix (or prefix) of the members' factor lists."""
    seqs = [list(paths[i])[::-1] if side == "suffix" else list(paths[i]) for i in members]
    n = 0
    while all(len(s) > n for s in seqs) and all(s[n] == seqs[0][n] for s in seqs):
        n += 1
    return n


def path_families(paths: Sequence[Sequence[tuple[int, int]]]) -> tuple[PathFamily, ...]:
    """Common-endpoint path families of a model's closure paths (RoboCompiler's pairwise
    path comparison: N_p paths to one endpoint need N_p − 1 comparisons).

    Chords are grouped by their last factor (common endpoint reached through one tree
    branch, the suffix families) and then, among the chords left, by their first factor
    (prefix families); a group's shared stretch is its members' longest common suffix or
    prefix, so each chord belongs to at most one family. (A subgroup that shares a longer
    stretch than its whole group keeps only the group's: the saving is a lower bound.)

    Args:
        paths: per chord, its factors ``((edge, sign), …)`` from b to c
            (:attr:`rbc.model.compiled.CompiledModel.paths`); an empty path (a chord
            between a body and its tree parent's frame) joins no family.

    Returns:
        The families with at least two chords, suffix families first, each ordered by its
        first chord.
    """
    out: list[PathFamily] = []
    taken: set[int] = set()
    for side, end in (("suffix", -1), ("prefix", 0)):
        groups: dict[tuple[int, int], list[int]] = {}
        for i, p in enumerate(paths):
            if p and i not in taken:
                groups.setdefault(tuple(p[end]), []).append(i)
        for members in sorted((m for m in groups.values() if len(m) > 1), key=lambda m: m[0]):
            n = _common(paths, members, side)
            seq = tuple(tuple(f) for f in paths[members[0]])
            shared = seq[len(seq) - n:] if side == "suffix" else seq[:n]
            out.append(PathFamily(tuple(members), shared, side))
            taken.update(members)
    return tuple(out)

"""Disjoint-set forest (union by size, path halving), shared by the graph passes.

Tarjan, "Efficiency of a good but not linear set union algorithm", J. ACM 22(2), 1975.
"""

from __future__ import annotations


class UnionFind:
    """Disjoint sets over ``0..n-1``; near-constant amortized ``find``/``union``."""

    def __init__(self, n: int) -> None:
        self._parent = list(range(n))
        self._size = [1] * n

    def find(self, x: int) -> int:
        """Representative of the set holding ``x``."""
        parent = self._parent
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    def union(self, a: int, b: int) -> bool:
        """Merge the sets of ``a`` and ``b``; False if they were already one set."""
        ra, rb = self.find(a), self.find(b)
        if ra == rb:
            return False
        if self._size[ra] < self._size[rb]:
            ra, rb = rb, ra
        self._parent[rb] = ra
        self._size[ra] += self._size[rb]
        return True

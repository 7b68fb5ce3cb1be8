"""Segment access into the flat layout (:mod:`rbc.kernels.layout`) from inside kernels."""

from __future__ import annotations

from numba import njit


@njit(cache=True, inline="always")
def iseg(I, IO, k):
    """Integer segment k (a view)."""
    return I[IO[k]: IO[k + 1]]


@njit(cache=True, inline="always")
def fseg(F, FO, k):
    """Float segment k (a view)."""
    return F[FO[k]: FO[k + 1]]

"""The 50-digit reference's own sparse product and LU solve (rbc.verify.kkt50._mul,
_lu_solve) against mpmath's dense ones on seeded random sparse matrices."""

from __future__ import annotations

import mpmath
import numpy as np
import pytest

from rbc.verify import kkt50


def _sparse(rng, m: int, n: int, density: float) -> mpmath.matrix:
    A = mpmath.matrix(m, n)
    with mpmath.workdps(kkt50.DPS):
        for i in range(m):
            for j in range(n):
                if rng.random() < density:
                    A[i, j] = mpmath.mpf(rng.standard_normal()) / 3
    return A


@pytest.mark.parametrize("seed", range(4))
def test_sparse_product_equals_mpmath(seed):
    rng = np.random.default_rng(seed)
    A, B = _sparse(rng, 17, 23, 0.3), _sparse(rng, 23, 9, 0.5)
    with mpmath.workdps(kkt50.DPS):
        got, want = kkt50._mul(A, B), A * B
        # the same non-zero pairs summed by the same fdot: equal to the last digit
        assert max(abs(got[i, j] - want[i, j]) for i in range(17) for j in range(9)) \
            <= mpmath.mpf(10) ** -(kkt50.DPS - 2)
    with pytest.raises(ValueError):
        kkt50._mul(A, A)


@pytest.mark.parametrize("seed", range(4))
def test_lu_solve_equals_mpmath(seed):
    rng = np.random.default_rng(10 + seed)
    n = 12
    A = _sparse(rng, n, n, 0.4)
    with mpmath.workdps(kkt50.DPS):
        for i in range(n):
            A[i, i] += 2  # nonsingular
        b = _sparse(rng, n, 3, 1.0)
        got = kkt50._lu_solve(A, b)
        for j in range(3):  # mpmath solves one right-hand side at a time
            want = mpmath.lu_solve(A, mpmath.matrix([b[i, j] for i in range(n)]))
            # two pivot orders of one well-conditioned solve: 50-digit round-off
            assert max(abs(got[i, j] - want[i]) for i in range(n)) \
                <= mpmath.mpf(10) ** -(kkt50.DPS - 5)
        with pytest.raises(ZeroDivisionError):
            kkt50._lu_solve(mpmath.matrix(3, 3), mpmath.matrix(3, 1))

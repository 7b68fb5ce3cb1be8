"""The 50-digit KKT reference's sparse-elimination null space (used above
kkt50.ELIMINATION_SIZE rows and columns, i.e. for composed systems) against its Gram
eigen-decomposition null space on the shipped records and the humanoid: the KKT solution
a* is unique, so the two bases must give the same accelerations to far below double
precision."""

from __future__ import annotations

import mpmath
import numpy as np
import pytest

from rbc.model.dynamics import DynamicsData, DynamicsModel
from rbc.verify import kkt50
from rbc.verify.states import make_states
from tests.model.conftest import SHIPPED, compiled


def _solve_with(p: kkt50.KKTProblem, ns: kkt50.NullSpace) -> np.ndarray:
    return kkt50.accelerations(kkt50.KKTProblem(p.rows, p.J, p.gamma, ns, p.M, p.h, p.tau,
                                                p.v))


@pytest.mark.parametrize("name", SHIPPED)
def test_elimination_equals_gram_svd(name):
    model, part = compiled(name)
    dm = DynamicsModel.build(model)
    data = DynamicsData.of(dm)
    _, set_b = make_states(model, part, 2)
    for s in set_b:
        p = kkt50.problem(dm, data, s.q, s.u, part.independent, s.f, s.wrenches)
        Jm = kkt50.reference_rows(dm, p.rows)
        el = kkt50.null_space_elimination(Jm)
        assert el.rank == p.ns.rank and el.Z.cols == p.ns.Z.cols
        with mpmath.workdps(kkt50.DPS):
            # the elimination's Z spans the null space of the retained rows: J Z = 0 up to
            # the dropped dependent rows (the planar loops' out-of-plane rows), no worse
            # than the truncated SVD's own basis
            res_el = float(mpmath.mnorm(Jm * el.Z, 1)) / float(mpmath.mnorm(el.Z, 1))
            res_svd = float(mpmath.mnorm(Jm * p.ns.Z, 1)) / float(mpmath.mnorm(p.ns.Z, 1))
            assert res_el <= max(1e-30, 10 * res_svd), (res_el, res_svd)
        a_svd, a_el = _solve_with(p, p.ns), _solve_with(p, el)
        # two 50-digit solves of the same unique problem: their difference is far below the
        # double-precision rounding of a* (the gap is bounded by the truncation of the
        # dependent rows, 1e-9 relative singular values, times the consistent drift)
        assert np.abs(a_svd - a_el).max() <= 1e-20 * max(1.0, np.abs(a_svd).max()), name


def test_large_problems_take_elimination():
    J = np.zeros((kkt50.ELIMINATION_SIZE + 1, kkt50.ELIMINATION_SIZE + 3))
    for i in range(J.shape[0]):
        J[i, i], J[i, i + 1] = 1.0, -2.0
    ns = kkt50.null_space(J)
    assert isinstance(ns, kkt50._Eliminated) and ns.rank == J.shape[0] and ns.Z.cols == 2

"""The Newton–Euler reference's two-level solve (rbc.verify.newton_euler, "Blocks") equals
its one-level solve: on seeded random block systems (with redundant rows inside the blocks
and redundant coupling rows), and on the composed pair of humanoids holding hands."""

from __future__ import annotations

import numpy as np
import pytest

from rbc.verify import newton_euler as ne_mod
from rbc.verify.newton_euler import Blocks, NewtonEuler


def _system(rng, sizes=(12, 18, 6), internal=(7, 10, 3), coupling=4, redundant=False):
    """A consistent ``G x = −γ`` with per-block rows (one duplicated row per block: a
    dependent row, as the out-of-plane rows of planar loops) and coupling rows."""
    n = sum(sizes)
    starts = np.cumsum((0, *sizes))
    rows, comp = [], []
    for c, (a, b, m) in enumerate(zip(starts[:-1], starts[1:], internal, strict=True)):
        R = np.zeros((m, n))
        R[:, a:b] = rng.standard_normal((m, b - a))
        R[-1] = R[0]  # dependent
        rows.append(R)
        comp += [c] * m
    Rc = rng.standard_normal((coupling, n))
    if redundant:
        Rc[-1] = Rc[0] + rows[0][1]  # a coupling row dependent on the others
    rows.append(Rc)
    comp += [-1] * coupling
    G = np.vstack(rows)
    x0 = rng.standard_normal(n)
    gamma = -G @ x0
    cols = tuple(np.arange(a, b) for a, b in zip(starts[:-1], starts[1:], strict=True))
    comp = np.array(comp)
    blocks = Blocks(cols, tuple(np.flatnonzero(comp == c) for c in range(len(sizes))),
                    np.flatnonzero(comp == -1))
    A = rng.standard_normal((n, n))
    return G, gamma, blocks, A @ A.T + n * np.eye(n), rng.standard_normal(n)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("redundant", [False, True])
def test_two_levels_equal_one_level(seed, redundant):
    rng = np.random.default_rng(seed)
    G, gamma, blocks, M, F = _system(rng, redundant=redundant)
    one = ne_mod._null_spaces(G, gamma, None)
    two = ne_mod._null_spaces(G, gamma, blocks)
    assert one[1].shape[1] == two[1].shape[1]  # the same mobility
    x1 = ne_mod._null_space_solve(M, F, one)
    x2 = ne_mod._null_space_solve(M, F, two)
    # one unique solution by two factorizations of a well-conditioned system: round-off
    np.testing.assert_allclose(x2, x1, rtol=0, atol=1e-10 * np.abs(x1).max())
    np.testing.assert_allclose(G @ x2, -gamma, rtol=0, atol=1e-10 * np.abs(gamma).max())
    rhs = M @ x1 - F
    lam1 = ne_mod._min_norm_multipliers(G, rhs)
    lam2 = ne_mod._min_norm_multipliers(G, rhs, blocks, two)
    # the minimum-norm multipliers (self-stresses and redundant couplings included): the
    # two-level path, or its one-level fallback when the coupling rows are redundant
    np.testing.assert_allclose(lam2, lam1, rtol=0, atol=1e-9 * np.abs(lam1).max())


def test_pair_two_levels_equal_one_level(pair):
    """On the pair (two components joined by the hand link): accelerations and every
    joint's reaction equal the one-level solve."""
    from rbc.compose.dynamics import MemberModel, composed_terms
    from rbc.model.dynamics import DynamicsData
    from rbc.verify.composition import composed_states

    _, comp = pair
    md = comp.modes["stand"]
    mm = MemberModel.build(comp, "stand")
    two = NewtonEuler.build(mm.dm)
    assert int(two.component.max()) + 1 == 2
    one = NewtonEuler(mm.dm, two.data, two.moving)  # no components: one level
    s = composed_states(comp, md, 1)[1][0]
    v = composed_terms(mm, DynamicsData.of(mm.dm), s.q, s.u, s.f, s.wrenches).v
    x1, _ = one.accelerations(s.q, v, s.f, s.wrenches)
    x2, _ = two.accelerations(s.q, v, s.f, s.wrenches)
    # the same maximal-coordinate system, two factorizations (measured 2e-13)
    assert np.abs(x2 - x1).max() <= 1e-11 * np.abs(x1).max()
    r1, r2 = one.reactions(s.q, v, s.f, s.wrenches), two.reactions(s.q, v, s.f, s.wrenches)
    scale = max(np.abs(w).max() for w in r1.values())
    assert max(np.abs(r2[n] - r1[n]).max() for n in r1) <= 1e-10 * scale

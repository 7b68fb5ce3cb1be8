"""Stored references (rbc.control.knots): a dance sampled on a knot grid and interpolated,
on the pair of humanoids holding hands. Checks against independent references: exact
samples stepped from the interval's knot (the closure residual of the interpolated
configuration, its configuration, speed and acceleration errors, and their order in the
knot spacing); the right Jacobians of the exponential against centred differences of the
model's own ⊕; the file cache (built once, read after, rebuilt when stale)."""

from __future__ import annotations

import numpy as np
import pytest

from rbc.control.dances import DanceReference, dance_reference
from rbc.control.knots import (
    KnotReference,
    Knots,
    cached_knots,
    content_key,
    interpolation_error,
    knot_times,
    sample_knots,
)


@pytest.fixture(scope="module")
def dance(pair):
    return dance_reference(pair, "stand", calibrate=False)


def _fresh(ref):
    return DanceReference(ref.kin, ref.part, ref.q0, ref.moves)


def _errors(dance, start, length, spacing):
    kn = sample_knots(_fresh(dance), dance.part.independent,
                      knot_times(start, length, spacing, dance.breakpoints()))
    ex = _fresh(dance)

    def exact(t, k):
        ex.restart_at(kn.t[k], kn.q[k])
        return ex(t)

    return kn, interpolation_error(dance.kin, exact, kn, kn.t[:-1] + 0.5 * np.diff(kn.t))


def test_knot_times_hold_the_breakpoints():
    t = knot_times(1.0, 1.0, 0.1, (0.5, 1.42, 1.5001, 2.0, 3.0))
    assert t[0] == 1.0 and t[-1] == 2.0 and np.all(np.diff(t) > 0)
    assert 1.42 in t and 1.5001 in t and 1.5 not in t  # a grid point 1e-4 s away dropped
    assert 0.5 not in t and 3.0 not in t


def test_interpolation_converges_and_stays_closed(dance):
    """In the sway (pelvis, yaw and waist moving; the ball link's chart rotating about a
    moving axis), 0.3 s: halving the spacing from 20 to 10 ms shrinks every error at least
    threefold (measured: q 8×, v 4×, a 3.9×, residual 16×: at least second order; the
    interpolant is quintic, the motion is limited here by the corrector's own tolerance
    in the chart), and at 20 ms the
    interpolated configurations stay closed to 1e-10 (measured 3.7e-11; the knots 1e-13)
    with configuration errors ≤ 1e-7 (measured 3.6e-8) — four decades below the realistic
    plant's measurement noise (1e-4 rad, 5e-6 m)."""
    kn20, e20 = _errors(dance, 21.0, 0.3, 0.02)
    _, e10 = _errors(dance, 21.0, 0.3, 0.01)
    assert kn20.residual.max() <= 1e-12
    assert e20["residual"] <= 1e-10 and e20["q"] <= 1e-7
    assert e20["v"] <= 1e-4 * e20["v_scale"] and e20["a"] <= 1e-4 * e20["a_scale"]
    for key in ("q", "v", "a"):
        assert e10[key] <= e20[key] / 3, key


def test_exact_at_the_knots_and_clamped(dance):
    kn = sample_knots(_fresh(dance), dance.part.independent, knot_times(3.0, 0.06, 0.02))
    ref = KnotReference(dance.kin, kn)
    for k, t in enumerate(kn.t):
        r = ref(t)
        assert np.array_equal(r.q, kn.q[k]) and np.array_equal(r.v, kn.v[k])
        assert np.array_equal(r.u, kn.v[k][kn.independent])
    assert np.array_equal(ref(10.0).q, kn.q[-1]) and np.array_equal(ref(0.0).q, kn.q[0])


def test_right_jacobians_against_the_models_exponential(dance):
    """``q ⊕ (d + εx) ⊖ (q ⊕ d) = ε J_r(d) x + O(ε²)`` on the free roots and the ball
    link's chart, and ``J_r⁻¹`` is its inverse (centred differences, ε = 1e-6: truncation
    ~1e-12, round-off ~1e-10)."""
    kin = dance.kin
    ref = KnotReference(kin, sample_knots(_fresh(dance), dance.part.independent,
                                          np.array([0.0, 0.02])))
    rng = np.random.default_rng(3)
    q = dance.q0
    d, x = 0.3 * rng.standard_normal(kin.nv), rng.standard_normal(kin.nv)
    qd = kin.integrate(q, d)
    eps = 1e-6
    fd = (kin.difference(qd, kin.integrate(q, d + eps * x))
          - kin.difference(qd, kin.integrate(q, d - eps * x))) / (2 * eps)
    jr = ref._jr(d, inverse=False)
    assert {sl.stop - sl.start for sl, _ in jr} == {3, 6}
    for (sl, J), (_, Ji) in zip(jr, ref._jr(d, inverse=True), strict=True):
        assert np.abs(J @ x[sl] - fd[sl]).max() <= 1e-8
        assert np.abs(J @ Ji - np.eye(J.shape[0])).max() <= 1e-12


def test_cache_builds_once_and_rebuilds_stale(tmp_path):
    calls = []

    def build():
        calls.append(1)
        return Knots(np.array([0.0, 1.0]), np.zeros((2, 3)), np.zeros((2, 2)),
                     np.zeros((2, 2)), np.zeros(2), np.array([0]), {"key": "a"})

    path = tmp_path / f"x-{content_key('a', np.arange(3), 0.02)}.npz"
    kn, loaded = cached_knots(path, build)
    assert not loaded and path.exists() and len(calls) == 1
    kn2, loaded = cached_knots(path, build)
    assert loaded and len(calls) == 1 and kn2.meta == {"key": "a"}
    assert np.array_equal(kn2.q, kn.q)
    _, loaded = cached_knots(path, build, check=lambda k: "stale")
    assert not loaded and len(calls) == 2
    path.write_bytes(b"not an npz")
    _, loaded = cached_knots(path, build)
    assert not loaded and len(calls) == 3
    assert content_key("a", np.arange(3), 0.02) != content_key("a", np.arange(3), 0.01)
    assert content_key("a", np.arange(3)) != content_key("a", np.arange(3.0))

"""The port-space controller's reference terms tabulated at the control instants
(:meth:`rbc.sim.controllers.Controller.tabulate`, used by the control loop): cubic Hermite
against SciPy's, linear feedforward against ``numpy.interp``, and the table's commands the
controller's own at each instant, bit for bit."""

from __future__ import annotations

import numpy as np
from scipy.interpolate import CubicHermiteSpline

from rbc.sim.controllers import Controller, Gains
from rbc.sim.reference import LiftedReference


def _reference(rng, k=7, n=3) -> LiftedReference:
    t = np.cumsum(rng.uniform(0.005, 0.02, size=k)) - 0.004
    t[0] = 0.0
    ports, rates = rng.normal(size=(k, n)), rng.normal(size=(k, n))
    ports[:, 2] = np.nan  # a velocity port: no displacement
    x, xd = rng.normal(size=(k, 3)), rng.normal(size=(k, 3))
    return LiftedReference(t, None, None, None, None, None, ports, rates, {"tip": (x, xd)})


def test_batched_hermite_is_scipys_and_the_scalar_one():
    rng = np.random.default_rng(3)
    ref = _reference(rng)
    times = np.concatenate([[0.0, ref.time[-1], ref.time[-1] + 0.1],
                            rng.uniform(0, ref.time[-1], 40), ref.time])
    val, rate = ref.port_references(times)
    spline = CubicHermiteSpline(ref.time, ref.ports[:, :2], ref.port_rates[:, :2])
    inside = times <= ref.time[-1]
    # the same cubic in two evaluations (Bernstein-like weights vs SciPy's power form):
    # a few roundings of O(1) values and of rates ~ values / 5 ms
    assert np.abs(val[inside, :2] - spline(times[inside])).max() <= 1e-13
    assert np.abs(rate[inside, :2] - spline(times[inside], 1)).max() <= 1e-10
    # the velocity port: its rate the linear interpolation of its rate samples (numpy.interp;
    # the same two-term sum up to a rounding), finite, and no value
    assert np.abs(rate[inside, 2] - np.interp(times[inside], ref.time,
                                              ref.port_rates[:, 2])).max() <= 1e-14
    assert np.isfinite(rate[:, 2]).all() and np.isnan(val[:, 2]).all()
    after = ~inside  # held at the last sample
    assert np.array_equal(val[after], np.repeat(ref.ports[-1:], after.sum(), axis=0),
                          equal_nan=True)
    for i, t in enumerate(times):  # one time at a time: the same bits
        r, rd = ref.port_reference(t)
        assert np.array_equal(r, val[i], equal_nan=True)
        assert np.array_equal(rd, rate[i], equal_nan=True)
        assert np.array_equal(ref.task_reference("tip", t), ref.task_references("tip",
                                                                              times)[i])


def test_table_commands_are_the_controllers():
    rng = np.random.default_rng(4)
    ref = _reference(rng)
    ff = rng.normal(size=(ref.time.size, 3))
    gains = Gains(rng.uniform(1, 9, 3), rng.uniform(1, 9, 3), np.ones(3), 5.0, 1.0)
    lim = np.full(3, np.inf)
    times = np.arange(30) * 1e-3 * 3.7
    for kind, table_ff in (("pd", None), ("pd+ff", ff), ("passive", None)):
        ctrl = Controller(kind, None if kind == "passive" else gains,
                          None if kind == "passive" else ref, table_ff, -lim, lim)
        table = ctrl.tabulate(times)
        for i, t in enumerate(times):
            ell, ell_dot = rng.normal(size=3), rng.normal(size=3)
            assert np.array_equal(table.command(i, ell, ell_dot),
                                  ctrl.command(t, ell, ell_dot), equal_nan=True), (kind, i)
    # the feedforward interpolates linearly in time and holds at both ends (numpy.interp)
    ctrl = Controller("pd+ff", gains, ref, ff, -lim, lim)
    t = np.concatenate([[-1.0, 10.0], rng.uniform(0, ref.time[-1], 20)])
    got = ctrl.tabulate(t).ff
    for c in range(3):
        assert np.abs(got[:, c] - np.interp(t, ref.time, ff[:, c])).max() <= 1e-15


def test_clip_is_numpys():
    """``clip_efforts`` (the loop's clip, without ``np.clip``'s overhead) gives np.clip's
    values bit for bit — infinite limits, efforts at the limits, NaN — and flags a clip."""
    from rbc.sim.controllers import clip_efforts

    rng = np.random.default_rng(6)
    lower, upper = np.array([-1.0, -np.inf, -2.0, 0.0]), np.array([1.0, np.inf, 2.0, 0.0])
    for f in (*rng.normal(scale=3, size=(20, 4)), np.array([1.0, 5.0, -2.0, 0.0]),
              np.array([np.nan, 0.0, 0.0, 0.0])):
        g, clipped = clip_efforts(f, lower, upper)
        want = np.clip(f, lower, upper)
        assert np.array_equal(g, want, equal_nan=True)
        assert clipped == bool(np.any(want != f))

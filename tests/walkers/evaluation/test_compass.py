"""Passive compass gait on a 3 deg slope (Goswami et al. 1998): a stable period-one gait."""

import numpy as np

from rbc.walkers.control.controllers import make_controller
from rbc.walkers.evaluation.poincare import find_fixed_point, stride_map
from rbc.walkers.hybrid.registry import load_model
from rbc.walkers.hybrid.simulate import walk

ALPHA = np.deg2rad(3.0)
DT = 1e-3


def test_compass_converges_to_newton_fixed_point():
    m = load_model("compass")
    ctrl = make_controller("passive", m, ALPHA)
    x0 = np.array(m.params["initial_state"])  # a nearby state, not the fixed point
    fp = find_fixed_point(stride_map(m, ctrl, ALPHA, DT), x0)
    # structure of a period-one gait: legs symmetric about the slope normal after impact;
    # the guard is located to ~1e-15 and Newton stops at |dx| < 1e-10
    assert abs(fp.x[0] + fp.x[1]) < 1e-10
    assert fp.spectral_radius < 1.0
    # the structural zero eigenvalue (image of P on the impact surface), FD noise ~1e-8
    assert np.min(np.abs(fp.eigenvalues)) < 1e-6

    # independent of Newton: plain forward simulation from the nearby state converges to it
    res = walk(m, ctrl, ALPHA, x0, 25, dt=DT)
    assert not res.fell and len(res.strides) == 25
    err = np.abs(res.poincare - fp.x).max(axis=1)
    # contraction per stride is bounded by ~spectral radius (transient factor 3 allowed);
    # after 25 strides 0.58^25 ~ 1e-6 of the initial 0.01 error
    assert err[-1] < 1e-6
    assert err[-1] < 3 * fp.spectral_radius ** 20 * err[4]
    for s in res.strides:
        assert s.impact.ok  # positive normal impulse, inside the cone, liftoff

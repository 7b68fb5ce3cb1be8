"""LbDNN switching adaptive controller on the footed humanoid (true plant with payload)."""

import numpy as np
import pytest

from rbc.walkers.control.footed import FootedWalker, walk_footed
from rbc.walkers.control.lbdnn import DeepNet, SwitchingLbDNN, footed_output_error
from rbc.walkers.environment.plant import Actuation, Mismatch, true_model
from rbc.walkers.environment.plant_sim import tracking_ema
from rbc.walkers.hybrid.registry import load_model

DT = 5e-4  # the humanoid's step [s]


@pytest.fixture(scope="module")
def walker():
    return FootedWalker.from_model(load_model("humanoid"), 0.0)


def test_all_layer_jacobian_transpose_matches_finite_differences():
    rng = np.random.default_rng(0)
    net = DeepNet((6, 5, 4, 3), rng)
    net.W[-1] = rng.normal(size=net.W[-1].shape)  # non-zero output layer for the check
    x, g = rng.normal(size=6), rng.normal(size=3)
    _, acts = net.forward(x)
    gW, gb = net.jacobian_transpose(acts, g)
    h = 1e-6
    for k in range(3):
        for (i, j) in ((0, 0), (1, 2)):
            net.W[k][i, j] += h
            fp = g @ net.forward(x)[0]
            net.W[k][i, j] -= 2 * h
            fm = g @ net.forward(x)[0]
            net.W[k][i, j] += h
            # central difference: O(h^2) truncation ~1e-12, round-off eps/h ~ 1e-10
            assert gW[k][i, j] == pytest.approx((fp - fm) / (2 * h), abs=1e-8)
        net.b[k][0] += h
        fp = g @ net.forward(x)[0]
        net.b[k][0] -= 2 * h
        fm = g @ net.forward(x)[0]
        net.b[k][0] += h
        assert gb[k][0] == pytest.approx((fp - fm) / (2 * h), abs=1e-8)


def test_inactive_phase_network_is_frozen(walker):
    c = SwitchingLbDNN(walker, DT, rise=True)  # composite: networks + robust integrals
    x = walker.initial_state()
    toe_before = [W.copy() for W in c.nets[1].W]
    flat_before = [W.copy() for W in c.nets[0].W]
    for _ in range(5):
        c(0, 0.0, x + 0.01)  # off the constraints: r != 0, the flat network learns
    assert c.updates == [5, 0]
    assert np.all(c.nu[1] == 0.0) and np.any(c.nu[0] != 0.0)  # transported frozen
    for a, b in zip(c.nets[1].W, toe_before, strict=True):
        np.testing.assert_array_equal(a, b)
    assert any(not np.array_equal(a, b) for a, b in zip(c.nets[0].W, flat_before,
                                                         strict=True))


def test_fully_actuated_phase_decouples_exactly(walker):
    """With Phi = 0 on the design plant, the flat-foot closed loop obeys the hierarchy:
    the computed-torque rows equal PhaseFL's torque (same square system)."""
    c = SwitchingLbDNN(walker, DT, learn=False)
    x = walker.initial_state() + 0.003
    u = c(0, 0.0, x)
    u_ref = walker.flat.accel(x[:9], x[9:])[1]
    # Lambda K = kp, Lambda + K = kd: the same control law, two factorizations (N m)
    np.testing.assert_allclose(u, u_ref, atol=1e-8)


def test_lbdnn_tracks_better_than_frozen_network_under_payload(walker):
    mm = Mismatch(payload=0.5)  # the hand-designed footed gait tolerates only small gaps
    plant = (true_model(walker.model, mm), Actuation.from_mismatch(mm, 9))
    x0 = walker.initial_state()
    ema = {}
    for learn in (False, True):
        c = SwitchingLbDNN(walker, DT, learn=learn)
        r = walk_footed(walker, x0, 3, dt=DT, plant=plant, controller=c)
        assert not r.fell, r.fall_reason
        ema[learn] = tracking_ema(r.t, footed_output_error(walker, r), 0.5)[-1]
        if learn:
            assert c.updates[0] > 0 and c.updates[1] > 0
            assert all(np.isfinite(n.norm()) for n in c.nets)
    # measured: EMA 3.5e-5 with learning vs 5.8e-5 frozen (ratio 0.60) after 3 strides
    assert ema[True] < 0.7 * ema[False], ema

"""The force-prediction metrics (rbc.control.prediction) against hand-computed values, and
the predicted wrenches read from a policy step (composed allocation, per-robot, none)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from rbc.control.prediction import normal_forces, predicted_wrenches, prediction_errors


def test_prediction_errors_by_hand():
    t = np.array([0.0, 0.4, 0.5, 1.0])
    # the first two samples are before `after` and must not count (errors of 1000 N)
    fn_pred = np.array([[1000.0, 0.0], [0.0, 1000.0], [100.0, 200.0], [110.0, 190.0]])
    fn_prod = np.array([[0.0, 1000.0], [1000.0, 0.0], [103.0, 196.0], [110.0, 190.0]])
    h_pred = np.array([[[500.0, 0, 0]], [[0, 500.0, 0]], [[3.0, 0, 0]], [[0, 0, 2.0]]])
    h_prod = np.array([[[0, 0, 0.0]], [[0, 0, 0.0]], [[0, 4.0, 0]], [[0, 0, 2.0]]])
    e = prediction_errors(t, fn_pred, fn_prod, h_pred, h_prod, after=0.5)
    assert e["samples"] == 2 and e["after"] == 0.5
    # sole differences -3, 4, 0, 0 N: RMS sqrt(25 / 4) = 2.5 N; mean produced 599 / 4 N
    assert e["sole_rms"] == pytest.approx(2.5, rel=1e-15)
    assert e["sole_mean"] == pytest.approx(149.75, rel=1e-15)
    assert e["sole_relative"] == pytest.approx(2.5 / 149.75, rel=1e-15)
    # link differences (3, -4, 0) and 0: RMS of the norms sqrt(25 / 2); produced RMS
    # sqrt((16 + 4) / 2)
    assert e["link_rms"] == pytest.approx(np.sqrt(12.5), rel=1e-15)
    assert e["link_force_rms"] == pytest.approx(np.sqrt(10.0), rel=1e-15)
    assert e["link_relative"] == pytest.approx(np.sqrt(1.25), rel=1e-15)


def test_prediction_errors_without_samples_links_or_force():
    t = np.array([0.0, 0.1])
    fn = np.full((2, 4), 300.0)
    none = prediction_errors(t, fn, fn, np.zeros((2, 1, 3)), np.zeros((2, 1, 3)), after=1.0)
    assert none["samples"] == 0 and none["sole_rms"] is None and none["link_rms"] is None
    # a perfect prediction: zero error; zero produced link force: no relative figure
    e = prediction_errors(t, fn, fn, np.zeros((2, 1, 3)), np.zeros((2, 1, 3)), after=0.0)
    assert e["sole_rms"] == 0.0 and e["sole_relative"] == 0.0
    assert e["link_rms"] == 0.0 and e["link_relative"] is None
    # no links in the mode
    e = prediction_errors(t, fn, fn + 1.0, np.zeros((2, 0, 3)), np.zeros((2, 0, 3)), 0.0)
    assert e["sole_rms"] == pytest.approx(1.0) and e["link_rms"] is None


def test_normal_forces_along_the_up_direction():
    w = np.array([[1.0, 2.0, 3.0, 10.0, -20.0, 300.0], [0, 0, 0, 3.0, 4.0, 0.0]])
    assert np.array_equal(normal_forces(w, np.array([0.0, 0.0, 1.0])), [300.0, 0.0])
    up = np.array([0.6, 0.8, 0.0])  # moments do not count, only the force along up
    assert normal_forces(w, up) == pytest.approx([6.0 - 16.0, 1.8 + 3.2], abs=1e-14)


def test_predicted_wrenches_of_each_kind_of_step():
    wa, wb, wl = np.arange(6.0), np.arange(6.0) + 10, np.arange(6.0) + 20
    composed = SimpleNamespace(allocation=SimpleNamespace(
        supports=("a", "b"), wrenches=np.array([wa, wb]), links=("hands",),
        link_wrenches=np.array([wl])), robots=())
    p = predicted_wrenches(composed, ("hands",))
    assert set(p.supports) == {"a", "b"} and np.array_equal(p.supports["b"], wb)
    assert np.array_equal(p.links["hands"], wl)
    # per-robot: each robot's own soles; the links are in no robot's model: zero
    robots = SimpleNamespace(allocation=None, robots=(
        SimpleNamespace(supports=("a",), wrenches=np.array([wa])),
        SimpleNamespace(supports=("b",), wrenches=np.array([wb]))))
    p = predicted_wrenches(robots, ("hands",))
    assert np.array_equal(p.supports["a"], wa) and np.array_equal(p.supports["b"], wb)
    assert np.array_equal(p.links["hands"], np.zeros(6))
    # actuator PD: no allocation, no prediction
    assert predicted_wrenches(SimpleNamespace(allocation=None, robots=()), ("hands",)) is None

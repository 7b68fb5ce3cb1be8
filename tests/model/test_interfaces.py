"""Actuator and task maps against finite differences along the closure manifold."""

from __future__ import annotations

import numpy as np
import pytest

from rbc.model.closure import ClosureState
from rbc.model.interfaces import actuator_map, port_jacobian, port_values, task_map
from rbc.model.partition import lift
from tests.model.conftest import compiled


def manifold_difference(model, part, fn, u, h=1e-5):
    """d/dt fn(q(t)) at t=0 along the lift with independent speeds u, by centered
    differences of two closed motion steps (each corrected to 1e-13)."""
    plus = ClosureState(model, part, part.q_ref.copy()).step(u, h)
    minus = ClosureState(model, part, part.q_ref.copy()).step(-u, h)
    return (fn(plus) - fn(minus)) / (2 * h)


def test_actuator_map_is_the_rate_of_the_port_displacement():
    model, part = compiled("stewart")
    L = actuator_map(model, lift(model, part, part.q_ref).E)
    u = np.random.default_rng(20260927).normal(size=part.independent.size)
    fd = manifold_difference(model, part, lambda q: port_values(model, q), u)
    assert np.allclose(L @ u, fd, atol=1e-8)  # FD truncation ~h² with O(1) curvature
    assert np.allclose(port_jacobian(model) @ lift(model, part, part.q_ref).E, L)


@pytest.mark.parametrize("name", ["excavator", "fivebar", "stewart"])
def test_task_map_is_the_rate_of_the_task_point(name):
    model, part = compiled(name)
    E = lift(model, part, part.q_ref).E
    task = model.record.tasks[0].name
    x, Jx = task_map(model, task, part.q_ref, E)
    u = np.random.default_rng(1).normal(size=part.independent.size)
    fd = manifold_difference(model, part, lambda q: task_map(model, task, q, E)[0][:3], u)
    assert np.allclose((Jx @ u)[-3:], fd, atol=1e-7)  # linear rows (last three); FD ~h²

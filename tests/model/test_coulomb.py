"""Coulomb friction's direction at rest (model.dynamics.coulomb_direction): a speed that is
zero only up to round-off takes no direction (the composed-vs-one-level consequence is
tests/control/test_cli.py::test_moving_state_is_self_consistent[sideways])."""

from __future__ import annotations

import numpy as np

from rbc.model.dynamics import COULOMB_REST_SPEED, coulomb_direction


def test_round_off_speeds_take_no_direction():
    v = np.array([0.0, 1e-16, -3e-15, COULOMB_REST_SPEED, 2 * COULOMB_REST_SPEED,
                  -2 * COULOMB_REST_SPEED, 0.3, -7.0])
    assert coulomb_direction(v).tolist() == [0, 0, 0, 0, 1, -1, 1, -1]


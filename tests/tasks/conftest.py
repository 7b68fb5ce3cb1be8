"""Closed configurations and dynamics models of the shipped records for the task tests."""

from __future__ import annotations

import functools

import numpy as np

from rbc.model.dynamics import DynamicsData, DynamicsModel
from rbc.model.partition import lift
from rbc.verify.kinematics import sample_configurations
from tests.model.conftest import compiled

SEED = 20260927


@functools.cache
def dynamics(name: str) -> tuple[DynamicsModel, object]:
    """(dynamics model, default partition) of a shipped record."""
    model, part = compiled(name)
    return DynamicsModel.build(model), part


@functools.cache
def states(name: str, n: int, seed: int = SEED) -> tuple:
    """n closed configurations (q, E) of a shipped record, seeded (cached)."""
    dm, part = dynamics(name)
    qs = sample_configurations(dm.kin, part, n, np.random.default_rng(seed)).q
    return tuple((q, lift(dm.kin, part, q).E) for q in qs)


def data(dm: DynamicsModel) -> DynamicsData:
    return DynamicsData.of(dm)

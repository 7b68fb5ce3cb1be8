"""Fixtures shared by the walker tests: the rabbit's control context on flat ground and a
post-impact state on its virtual-constraint surface."""

from __future__ import annotations

import pytest

from rbc.walkers.plant import ControlContext
from rbc.walkers.registry import load_model
from rbc.walkers.vc import vc_initial_state


@pytest.fixture(scope="module")
def ctx():
    return ControlContext.from_model(load_model("rabbit"), 0.0, 1e-3)


@pytest.fixture(scope="module")
def x0(ctx):
    return vc_initial_state(ctx.extra["fl"], 1.2)

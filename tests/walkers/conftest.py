"""Fixtures shared by the walker tests: the rabbit's control context on flat ground and a
post-impact state on its virtual-constraint surface."""

from __future__ import annotations

import pytest

from rbc.walkers.control.context import ControlContext
from rbc.walkers.control.vc import vc_initial_state
from rbc.walkers.hybrid.registry import load_model


@pytest.fixture(scope="module")
def ctx():
    return ControlContext.from_model(load_model("rabbit"), 0.0, 1e-3)


@pytest.fixture(scope="module")
def x0(ctx):
    return vc_initial_state(ctx.extra["fl"], 1.2)

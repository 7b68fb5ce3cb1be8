"""Shared test fixtures: repository paths and record helpers."""

from __future__ import annotations

import functools
import importlib.util
from pathlib import Path

import pytest

# MuJoCo's warnings as Python warnings, never a MUJOCO_LOG.TXT in the working directory (the
# tests that step MuJoCo directly, not through rbc)
import rbc.backends.mujoco_log  # noqa: F401

REPO = Path(__file__).resolve().parents[1]
RECORDS = REPO / "records"
EXTERNAL = RECORDS / "external"  # vendored robot models (each folder: LICENSE, SOURCE.md)
POLICIES = RECORDS / "policies"  # vendored Unitree deployment policies and reference rollouts
EXAMPLES = RECORDS / "examples"  # the design's conformance record
HARD = RECORDS / "hard"  # hard mechanisms (records/hard/README.md) and their generator


@functools.cache
def hard_generator():
    """records/hard/make_hard.py as a module (its closed-form geometry is the independent
    reference of the hard-mechanism tests)."""
    spec = importlib.util.spec_from_file_location("make_hard", HARD / "make_hard.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def repo() -> Path:
    return REPO


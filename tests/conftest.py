"""Shared test fixtures: repository paths and record helpers."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
RECORDS = REPO / "records"
EXTERNAL = RECORDS / "external"  # vendored robot models (each folder: LICENSE, SOURCE.md)
POLICIES = RECORDS / "policies"  # vendored Unitree deployment policies and reference rollouts
EXAMPLES = RECORDS / "examples"  # the design's conformance record


@pytest.fixture
def repo() -> Path:
    return REPO


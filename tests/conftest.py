"""Shared test fixtures: repository paths and record helpers."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
RECORDS = REPO / "records"
SHARED = REPO.parent / "shared"  # CI lays shared/ beside the clone, as in development


@pytest.fixture
def repo() -> Path:
    return REPO


@pytest.fixture
def shared() -> Path:
    if not SHARED.is_dir():
        pytest.skip(f"{SHARED} not present")
    return SHARED

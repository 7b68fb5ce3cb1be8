"""Walker tests: ``slow`` tests run in CI (``CI`` set, as CI services do) or when a marker
expression is given (``pytest -m slow``); a plain local ``pytest`` skips them to keep the
default run fast (STYLE.md: "mark slow tests; keep the default run fast")."""

from __future__ import annotations

import os

import pytest


def pytest_collection_modifyitems(config, items):
    if os.environ.get("CI") or config.getoption("markexpr", ""):
        return
    skip = pytest.mark.skip(reason="slow: runs in CI or with -m slow")
    for item in items:
        if "slow" in item.keywords and "walkers" in str(item.fspath):
            item.add_marker(skip)

"""Bundles of the shipped records, compiled once per test session."""

from __future__ import annotations

from pathlib import Path

import pytest

from rbc.compiler import compile_to_file
from rbc.sim.threads import limit_blas_threads
from tests.conftest import RECORDS

REFERENCES = RECORDS / "references"


@pytest.fixture(scope="session")
def bundles(tmp_path_factory) -> dict[str, Path]:
    limit_blas_threads(1)
    out = tmp_path_factory.mktemp("bundles")
    paths = {}
    for name in ("fourbar", "stewart", "excavator"):
        paths[name] = out / f"{name}.h5"
        compile_to_file(RECORDS / f"{name}.yaml", paths[name])
    return paths

"""Compiled bundles of the shipped records, shared by the model, verify and CLI tests."""

from __future__ import annotations

import pytest

from rbc.compiler import compile_to_file
from rbc.passes.rank import parse_partition_request
from tests.conftest import RECORDS

EXCAVATOR_PARTITIONS = ("joint_space=slew,boom_foot,arm_pin,bucket_pin",
                        "stroke=slew,boom_cyl,arm_cyl,bucket_cyl")


def compile_bundle(directory, name: str):
    """Compile records/<name>.yaml into directory (excavator with its two partitions)."""
    out = directory / f"{name}.h5"
    if not out.exists():
        req = EXCAVATOR_PARTITIONS if name == "excavator" else ()
        compile_to_file(RECORDS / f"{name}.yaml", out,
                        partitions=tuple(parse_partition_request(p) for p in req))
    return out


@pytest.fixture(scope="session")
def bundle(tmp_path_factory):
    """``bundle(name)`` → path of the compiled shipped record."""
    directory = tmp_path_factory.mktemp("bundles")
    return lambda name: compile_bundle(directory, name)

"""Compiled models of the shipped records, built once per test session."""

from __future__ import annotations

import functools

import pytest

from rbc.compiler import compile_record
from rbc.model.compiled import CompiledModel
from tests.conftest import RECORDS

SHIPPED = ("fourbar", "slider_crank", "fivebar", "stewart", "excavator")


@functools.cache
def compiled(name: str) -> tuple[CompiledModel, object]:
    """(model, default partition) of a shipped record, through the real pipeline."""
    _, report = compile_record(RECORDS / f"{name}.yaml")
    parted = report.stages["rank"]
    model = parted.model
    return model, parted.partitions[0]


@pytest.fixture(params=SHIPPED)
def shipped(request):
    return (request.param, *compiled(request.param))

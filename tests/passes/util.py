"""Build records and run the front half of the pipeline in tests."""

from __future__ import annotations

from pathlib import Path

from rbc.ir.modules import Modules
from rbc.ir.schema import parse_record, parse_record_text
from rbc.passes.forest import BuildForest
from rbc.passes.graph import BuildGraph
from rbc.passes.modules import BuildModules
from rbc.passes.paths import BuildPaths


def front(record) -> Modules:
    """Run graph → forest → paths → modules with verification on a Record."""
    ir = record
    for p in (BuildGraph(), BuildForest(), BuildPaths(), BuildModules()):
        ir = p.run(ir)
        p.verify(ir)
    return ir


def front_file(path: str | Path) -> Modules:
    return front(parse_record(path))


def front_text(text: str) -> Modules:
    return front(parse_record_text(text))

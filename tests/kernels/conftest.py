"""Every shipped and imported record, compiled once per session for the kernel tests."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest

from rbc.compiler import compile_record
from tests.conftest import EXAMPLES, EXTERNAL, RECORDS

SHIPPED = ("fourbar", "slider_crank", "fivebar", "stewart", "excavator")
#: imported records: (name, importer, source, extra CLI arguments)
IMPORTED = (
    ("cassie", "mjcf", EXTERNAL / "agility_cassie/cassie.xml", ()),
    ("kangaroo", "mjcf", EXTERNAL / "pal_kangaroo/kangaroo.xml", ()),
    *((f"gepetto_{n}", "urdf", EXTERNAL / "gepetto" / n / "robot.urdf",
       ("--loops", str(EXTERNAL / "gepetto" / n / "robot.yaml"), "--repair-inertia"))
      for n in ("5bar_linkage", "cassie_like", "digit_like")),
)
ALL = (*SHIPPED, "fourbar_v1", *(n for n, *_ in IMPORTED))


@functools.cache
def _record_path(name: str, tmp: Path) -> Path:
    if name in SHIPPED:
        return RECORDS / f"{name}.yaml"
    if name == "fourbar_v1":
        return EXAMPLES / "fourbar_v1.yaml"
    from rbc.cli.main import main

    _, importer, source, extra = next(i for i in IMPORTED if i[0] == name)
    out = tmp / f"{name}.yaml"
    assert main(["import", importer, str(source), *extra, "-o", str(out)]) == 0
    return out


@functools.cache
def compiled_model(name: str, tmp: Path):
    """(compiled model, default partition) of a shipped or imported record."""
    _, report = compile_record(_record_path(name, tmp))
    parted = report.stages["rank"]
    return parted.model, parted.partitions[0]


@pytest.fixture(scope="session")
def record_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("kernel_records")


@pytest.fixture(params=ALL)
def any_record(request, record_dir):
    return (request.param, *compiled_model(request.param, record_dir))


from tests.sim.conftest import bundles  # noqa: E402,F401  (session bundles for the sim tests)

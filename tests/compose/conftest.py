"""Compiled humanoid members and a composed pair, built once per test session."""

from __future__ import annotations

import functools
import shutil
from pathlib import Path

import pytest

from rbc.compiler import compile_to_file
from rbc.repro.dances import PAIR as DANCE_PAIR
from tests.conftest import RECORDS

HUMANOID = RECORDS / "humanoid"

#: Two humanoids side by side holding hands (right palm of h1, left palm of h2), both soles
#: of each supporting: 84 bodies, 16 member loops + 1 link + 4 soles, 27 speeds (the dances
#: target's quick pair, rbc.repro.dances.PAIR), and a free-flight mode without the link.
PAIR = DANCE_PAIR + "  - {name: free, supports: [], links: none}\n"


@pytest.fixture(scope="session")
def members_dir(tmp_path_factory) -> Path:
    """A directory with humanoid_v1.h5 … humanoid_v5.h5 (compiled from the shipped records)."""
    out = tmp_path_factory.mktemp("members")
    for n in range(1, 6):
        compile_to_file(HUMANOID / f"humanoid_v{n}.yaml", out / f"humanoid_v{n}.h5")
    (out / "pair.yaml").write_text(PAIR)
    for kind in ("ring", "semicircle", "line"):
        shutil.copy(HUMANOID / f"{kind}.yaml", out / f"{kind}.yaml")
    return out


@functools.cache
def _composed(directory: str, name: str):
    from rbc.compose.bundle import load, write_composed
    from rbc.compose.spec import member_path, parse_composition
    from rbc.compose.system import compose
    from rbc.model.compiled import CompiledModel

    d = Path(directory)
    spec = parse_composition(d / f"{name}.yaml")
    files = [member_path(spec, m, d) for m in spec.members]
    comp = compose(spec, [CompiledModel.from_bundle(f) for f in files])
    write_composed(d / f"{name}.h5", comp, files)
    return comp, load(d / f"{name}.h5")


@functools.cache
def composed_text(directory: str, name: str, text: str):
    """The loaded composition of ``text`` written as ``NAME.yaml`` in the members'
    directory (its bundle ``NAME.h5`` beside it), once per session."""
    (Path(directory) / f"{name}.yaml").write_text(text)
    return _composed(directory, name)[1]


@pytest.fixture(scope="session")
def pair(members_dir):
    """(composition as built, composition as loaded from its bundle) of PAIR."""
    return _composed(str(members_dir), "pair")


@pytest.fixture(scope="session")
def ring(members_dir):
    """(built, loaded) of records/humanoid/ring.yaml."""
    return _composed(str(members_dir), "ring")

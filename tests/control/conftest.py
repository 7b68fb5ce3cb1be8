"""Composed humanoid systems for the control tests, built once per session: one humanoid
standing on both soles (``solo``) and the pair holding hands (``pair``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rbc.cli.main import main
from rbc.compiler import compile_to_file
from tests.compose.conftest import HUMANOID, PAIR, _composed
from tests.compose.test_dynamics import SOLO  # one humanoid (variant 3) on both soles


@pytest.fixture(scope="session")
def control_dir(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("control")
    for n in (1, 2, 3):
        compile_to_file(HUMANOID / f"humanoid_v{n}.yaml", out / f"humanoid_v{n}.h5")
    (out / "solo.yaml").write_text(SOLO)
    (out / "pair.yaml").write_text(PAIR)
    return out


@pytest.fixture(scope="session")
def solo(control_dir):
    """The composition (loaded from its bundle) of SOLO."""
    return _composed(str(control_dir), "solo")[1]


@pytest.fixture(scope="session")
def pair(control_dir):
    """The composition (loaded from its bundle) of the two humanoids holding hands."""
    return _composed(str(control_dir), "pair")[1]


def run(capsys, *argv):
    """``rbc argv`` in this process: (exit status, stdout, stderr)."""
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def solo_bundle(solo, control_dir):
    return control_dir / "solo.h5"

"""The synthetic humanoid generator: deterministic, and every variant has the counts the
design states (42 bodies, 49 joints, 8 loops, 21 ports, 27 independent speeds)."""

from __future__ import annotations

import importlib.util
import sys

import pytest

from rbc.model.compiled import CompiledModel
from tests.compose.conftest import HUMANOID


def _generator():
    spec = importlib.util.spec_from_file_location("make_humanoid", HUMANOID / "make_humanoid.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("make_humanoid", mod)  # dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod


def test_generator_reproduces_the_shipped_files(tmp_path):
    _generator().main(tmp_path)
    for p in sorted(tmp_path.glob("*.yaml")):
        assert p.read_text() == (HUMANOID / p.name).read_text(), p.name


def test_knee_equivalent_mass():
    gen = _generator()
    lead, rotor = gen.SCREW["knee"][:2]
    import math

    assert 31.0 < rotor * (2 * math.pi / lead) ** 2 < 33.0  # "about 32 kg" (issue #19)


@pytest.mark.parametrize("n", range(1, 6))
def test_variant_counts(members_dir, n):
    m = CompiledModel.from_bundle(members_dir / f"humanoid_v{n}.h5")
    rec = m.record
    assert (len(rec.bodies), len(rec.joints), m.n_chords, len(rec.actuators)) == (42, 49, 8, 21)
    assert m.partitions["default"].independent.size == 27
    assert {s.name for s in rec.supports} == {"sole_l", "sole_r"}

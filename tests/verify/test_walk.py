"""rbc verify's states: a random walk along the closure manifold (records/hard/), the
coverage report, and the curvature checks that are informational when Ė u is legitimately
zero."""

from __future__ import annotations

import json

import numpy as np
import pytest

from rbc.cli.main import main
from rbc.compiler import compile_to_file
from rbc.model.closure import within_limits
from rbc.model.compiled import CompiledModel
from rbc.model.kinematics import residual
from rbc.verify import kinematics as K
from tests.conftest import HARD, hard_generator


@pytest.fixture(scope="module")
def hard_bundle(tmp_path_factory):
    directory = tmp_path_factory.mktemp("walk")

    def build(name: str):
        out = directory / f"{name}.h5"
        if not out.exists():
            compile_to_file(HARD / f"{name}.yaml", out)
        return out
    return build


def walk(model, n: int, seed: int = 20260927) -> K.Samples:
    return K.sample_configurations(model, model.partitions["default"], n,
                                   np.random.default_rng(seed))


def test_walk_visits_the_whole_turn(bundle):
    """An unlimited crank is sampled over the whole turn (the box sampler used ±π/8): 40
    walk samples of the four-bar's crank fill ≥ 60 % of the 36 10° bins (measured 69 %;
    100 samples: 97 %), every sample closed and on the reference branch."""
    m = CompiledModel.from_bundle(bundle("fourbar"))
    s = walk(m, 40)
    (name, lo, hi, frac), = K.coverage(s)
    assert name == "A" and frac >= 0.6 and hi - lo > 2 * np.pi
    fourbar_angles = hard_generator().fourbar_angles
    a, d = m.v_names.index("A"), m.v_names.index("D")
    for q in s.q:
        assert np.abs(residual(m, q)).max() <= 1e-12 and not within_limits(m, q)
        crank, rocker = m.limited_values(q)[[a, d]]
        # the open branch of the reference (circle intersections), at every sample
        expected = fourbar_angles(0.40, 0.10, 0.35, 0.30, crank, +1)[2]
        assert np.angle(np.exp(1j * (rocker - expected))) == pytest.approx(0.0, abs=1e-9)
    c = K.check_coverage(m, s)
    assert c.passed and c.detail.startswith("informational") and "A [" in c.detail


def test_walk_covers_the_general_platform_legs(hard_bundle):
    """General 6-6 platform: 40 walk samples (one lifted step each, all six legs at once)
    span ≥ 40 % of every leg's ±0.35 m limit range (measured 47–56 %; the default 100
    samples: 80–98 %, docs/kinematics.md) — a box of independent values would be almost
    entirely unreachable."""
    m = CompiledModel.from_bundle(hard_bundle("stewart66"))
    s = walk(m, 40)
    cov = K.coverage(s)
    assert [c[0] for c in cov] == [f"P{i}" for i in range(1, 7)]
    assert min(c[3] for c in cov) >= 0.4, cov
    assert max(s.residuals) <= 1e-12


def test_parallelogram_passes_verify(hard_bundle, capsys, tmp_path):
    """Acceptance (#12): a parallelogram linkage (constant lift, Ė u ≡ 0) passes `rbc verify
    --dynamics`; both "the term matters" checks are informational, not failed."""
    out = tmp_path / "v.json"
    code = main(["verify", str(hard_bundle("parallelogram")), "--samples", "20", "--dynamics",
                 "--dynamics-samples", "6", "--json", str(out)])
    capsys.readouterr()
    doc = json.loads(out.read_text())
    checks = {c["name"]: c for c in doc["checks"]}
    assert code == 0 and doc["passed"]
    for name in ("curvature.without_term", "curvature.omitted"):
        assert checks[name]["detail"].startswith("informational: Ė u is zero"), name
    assert checks["curvature.acceleration_residual"]["value"] <= 1e-9


def test_a_wrongly_zero_curvature_still_fails(bundle, monkeypatch):
    """The informational case cannot hide a bug: with our Ė u forced to zero on the
    four-bar (whose curvature is not zero), curvature.acceleration_residual fails."""
    m = CompiledModel.from_bundle(bundle("fourbar"))
    part = m.partitions["default"]
    real = K.curvature

    def no_term(*args, **kw):
        v, edu = real(*args, **kw)
        return v, np.zeros_like(edu)

    monkeypatch.setattr(K, "curvature", no_term)
    first, second = K.check_curvature(m, part, [part.q_ref], np.random.default_rng(0))
    assert not first.passed and second.passed
    assert not second.detail.startswith("informational")


def test_a_failing_reference_is_a_failed_check_not_a_traceback(bundle, monkeypatch):
    """A reference that raises (here the 50-digit KKT, as on a record whose mobility it
    disagrees with) fails its named checks with the message; the others still run."""
    from rbc.verify import dynamics as D
    from rbc.verify import kkt50

    def broken(*args, **kw):
        raise kkt50.ReferenceMismatch("mobility 2 against the partition's 1")

    monkeypatch.setattr(kkt50, "solve", broken)
    m = CompiledModel.from_bundle(bundle("fourbar"))
    checks = {c.name: c for c in D.run_dynamic_checks(m, m.partitions["default"], samples=2)}
    for name in ("dynamics.delta_a.kkt50", "dynamics.delta_f.kkt50", "curvature.omitted"):
        assert not checks[name].passed and "reference failed at 4 state(s)" in \
            checks[name].detail and "mobility 2" in checks[name].detail, name
    assert checks["dynamics.delta_a.pinocchio"].passed


def test_readback_of_a_broken_export(bundle, tmp_path, capsys):
    """An MJCF MuJoCo cannot parse is a failed export.mjcf.readback check (exit 1); a
    missing one is exit 2 before any check runs."""
    bad = tmp_path / "bad.xml"
    bad.write_text("garbage", encoding="utf-8")
    b = str(bundle("fourbar"))
    code = main(["verify", b, "--samples", "3", "--mjcf", str(bad), "--json",
                 str(tmp_path / "v.json")])
    _, err = capsys.readouterr()
    doc = json.loads((tmp_path / "v.json").read_text())
    check = {c["name"]: c for c in doc["checks"]}["export.mjcf.readback.load"]
    assert code == 1 and not check["passed"] and "MuJoCo cannot load" in check["detail"]
    assert "malformed XML" in check["detail"]
    assert "Traceback" not in err
    code = main(["verify", b, "--mjcf", str(tmp_path / "none.xml")])
    _, err = capsys.readouterr()
    assert code == 2 and "--mjcf" in err and "no such file" in err


@pytest.mark.slow
def test_verify_dynamics_on_the_general_platform(hard_bundle, capsys, tmp_path):
    """Acceptance (#12): `rbc verify --dynamics` on the general 6-6 platform passes, and its
    default 100 walk samples cover ≥ 50 % of every leg's ±0.35 m limit range (the limits
    bound the reachable range, so this understates the coverage of what is reachable;
    measured 80–98 %). The acceptance's "under 2 minutes" with the default 48 + 48 dynamics
    states is a wall-clock figure measured by hand (42 s, docs/kinematics.md), not here: 4
    states per set keep this test short."""
    out = tmp_path / "v66.json"
    code = main(["verify", str(hard_bundle("stewart66")), "--dynamics", "--dynamics-samples",
                 "4", "--json", str(out)])
    capsys.readouterr()
    doc = json.loads(out.read_text())
    checks = {c["name"]: c for c in doc["checks"]}
    assert code == 0 and doc["passed"]
    cov = checks["sampling.coverage"]
    assert cov["value"] >= 0.5, cov["detail"]
    assert all(f"P{i} [" in cov["detail"] for i in range(1, 7))
    assert checks["dynamics.delta_a.kkt50"]["value"] <= 1e-11

"""``rbc verify`` on records with linear couplings (issue 18, fix on the way).

Two small records: fingers tied by a coupling and no loops (the coupling rows are the only
closure rows), and the four-bar with a flag coupled to its cut joint (a coupling row through
a cut coordinate). Every reference must include the coupling rows: the checks pass, each
reference's accelerations satisfy the coupling at the acceleration level, and a reference
without the rows disagrees with the reduced model by far more than the limits.
"""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import pytest

from rbc.cli.main import main
from rbc.compiler import compile_record, compile_to_file
from rbc.model.dynamics import (
    DynamicsData,
    DynamicsModel,
    forward_dynamics,
    passive_efforts,
    reduced_terms,
    tree_acceleration,
)
from rbc.verify import kkt50
from rbc.verify.dynamics import REFERENCE_LIMIT, delta, run_dynamic_checks
from rbc.verify.kinematics import run_kinematic_checks
from rbc.verify.newton_euler import NewtonEuler
from rbc.verify.pinocchio_ref import PinocchioReference
from rbc.verify.states import make_states

HERE = Path(__file__).parent / "records"
COUPLED = ("coupled_fingers", "fourbar_coupled_cut")


@functools.cache
def compiled(name: str):
    _, report = compile_record(HERE / f"{name}.yaml")
    parted = report.stages["rank"]
    return parted.model, parted.partitions[0]


@pytest.mark.parametrize("name", COUPLED)
def test_verify_passes_with_couplings(name):
    model, part = compiled(name)
    checks = run_kinematic_checks(model, part, samples=8)
    checks += run_dynamic_checks(model, part, samples=4)
    for c in checks:
        assert c.passed, f"{name}: {c.name} = {c.value:.3g}: {c.detail}"
    by = {c.name: c for c in checks}
    if model.n_chords == 0:  # linear couplings only: the curvature checks do not apply
        assert "not applicable" in by["curvature.without_term"].detail
        assert "not applicable" in by["curvature.omitted"].detail
    else:
        assert by["curvature.without_term"].value >= by["curvature.without_term"].limit


def _coupling_rates(model, a_tree: np.ndarray, a_cut: np.ndarray | None = None) -> np.ndarray:
    """Σ c_k a_k per coupling (a over all coordinates)."""
    a = np.concatenate([a_tree, np.zeros(model.nv - model.nv_tree) if a_cut is None else a_cut])
    return np.array([sum(c * a[vi] for vi, _, c in terms) for terms in model.coupling_rows])


@pytest.mark.parametrize("name", COUPLED)
def test_references_include_the_coupling_rows(name):
    model, part = compiled(name)
    _, (s, *_) = make_states(model, part, 2, seed=3)
    dm = DynamicsModel.build(model)
    data = DynamicsData.of(dm)
    terms = reduced_terms(dm, data, part, s.q, s.u, s.f, s.wrenches)
    a = tree_acceleration(terms, forward_dynamics(dm, terms))
    nt = model.nv_tree
    scale = max(1.0, float(np.abs(a).max()))
    # ours: Σ c a = 0 over all coordinates (the coupling is holonomic and linear)
    assert np.abs(_coupling_rates(model, a[:nt], a[nt:])).max() <= 1e-12 * scale

    ref = kkt50.solve(dm, data, s.q, s.u, part.independent, s.f, s.wrenches)
    rows = kkt50.cut_rows(dm, data, s.q)
    G, gamma = kkt50.coupling_rows(dm, rows, kkt50.cut_drift(dm, data, s.q, ref.v)[1], ref.v)
    assert np.abs(G @ ref.a + gamma).max() <= 1e-12 * scale

    tau = terms.tau_full + passive_efforts(dm, s.q, terms.v)[1]
    tau[:nt] += terms.tree.g
    pr = PinocchioReference.build(model, part)
    a_pin = pr.accelerations(s.q, terms.v, tau)
    assert delta(a[:nt], a_pin) <= REFERENCE_LIMIT
    # without the coupling rows Pinocchio's answer is a different motion
    pr.coupled = None
    assert delta(a[:nt], pr.accelerations(s.q, terms.v, tau)) > 1e3 * REFERENCE_LIMIT

    ne = NewtonEuler.build(dm)
    x_ref, _ = ne.accelerations(s.q, terms.v, s.f, s.wrenches)
    assert delta(ne.implied(s.q, terms.v, a), x_ref) <= REFERENCE_LIMIT


def test_verify_dynamics_cli_on_a_coupled_record(tmp_path, capsys):
    out = tmp_path / "fingers.h5"
    compile_to_file(HERE / "coupled_fingers.yaml", out)
    code = main(["verify", str(out), "--samples", "6", "--dynamics", "--dynamics-samples", "3"])
    assert code == 0, capsys.readouterr().out[-2000:]

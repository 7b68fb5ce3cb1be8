"""The partition check's cheap upper bound of the scaled cond(R_p) (:func:`rbc.kernels.lift.
scaled_cond_bound`, Weyl's inequality from an anchor): never below the condition number it
stands for, tight near its anchor, and the reduced backend's decisions with it are the ones
the full evaluation makes at every step."""

from __future__ import annotations

import numpy as np
import pytest

from rbc.kernels import lift
from rbc.kernels.evaluator import KernelModel
from rbc.kernels.layout import S_NMOD, LayoutError
from rbc.model.partition import scales


def _compact_c(km: KernelModel, q: np.ndarray) -> np.ndarray:
    """The compact closure Jacobian at q (the stage's ``Cc``)."""
    from rbc.kernels import step

    lay = km.layout
    Cc = np.empty(6 * int(lay.segment("ch_col_ptr")[-1]))
    step.geometry(*km._args, np.ascontiguousarray(q, dtype=float), np.empty(lay.n_rows), Cc,
                  np.empty((km.kin.nv, km.nu)))
    return Cc


def test_bound_holds_and_is_tight_near_its_anchor(any_record):
    """At configurations ever farther from the anchor (on and off the manifold, steps 1e-6
    to 0.3 in every coordinate) the bound is ≥ the condition number; at the anchor it is the
    number times 1 + slack, and near it above the number by O(distance)."""
    name, kin, part = any_record
    try:
        km = KernelModel(kin, part)
    except LayoutError:
        pytest.skip("tendon ports")
    lay = km.layout
    sc = scales(kin, part.length_scale)
    rs, cs = np.ascontiguousarray(sc.rows, dtype=float), np.ascontiguousarray(sc.cols, dtype=float)
    args = (lay.I, lay.IO, lay.F, lay.FO)
    blocks = np.empty(lift.blocks_size(lay.I, lay.IO))
    sv = np.empty((int(lay.segment("sizes")[S_NMOD]), 2))
    q0 = np.array(part.q_ref)
    c0 = lift.scaled_cond_anchor(*args, _compact_c(km, q0), rs, cs, blocks, sv)
    # the anchor variant is the plain evaluation plus what it keeps: the same bits
    assert c0 == lift.scaled_cond(*args, _compact_c(km, q0), rs, cs), name
    b0 = lift.scaled_cond_bound(*args, _compact_c(km, q0), rs, cs, blocks, sv)
    # at the anchor δ = 0: exactly the slack above (one rounding of the product)
    assert b0 == pytest.approx(c0 * (1 + lift.COND_BOUND_SLACK), rel=1e-15), name
    rng = np.random.default_rng(11)
    for step_size in (1e-6, 1e-4, 1e-2, 0.3):
        for _ in range(3):
            q = kin.integrate(q0, step_size * rng.normal(size=kin.nv))
            Cc = _compact_c(km, q)
            c = lift.scaled_cond(*args, Cc, rs, cs)
            b = lift.scaled_cond_bound(*args, Cc, rs, cs, blocks, sv)
            assert b >= c, (name, step_size, b, c)
            if step_size <= 1e-4 and np.isfinite(c0):
                # the slack shrinks with the distance: (b/c − 1)/step measured ≤ 950 on
                # these records (gepetto cassie_like, cond 1e3: δ_F is up to r × ‖δ‖₂,
                # over σ_min); a bound that did not vanish at the anchor would fail here
                assert b / c - 1 <= 1e4 * step_size + 2 * lift.COND_BOUND_SLACK, (name, b, c)


def test_backend_decisions_with_the_bound_are_the_full_evaluations(tmp_path, monkeypatch):
    """The rocker four-bar swinging passively through the rocker's turning point
    (tests/sim/test_hard_sim.py; the run re-partitions D → A at t ≈ 0.24 s): the run with
    the bound and the run that evaluates cond(R_p) in full after every step are the same
    bits — the same event at the same time, the same states — while the bound spares most
    full evaluations."""
    from rbc.compiler import compile_to_file
    from rbc.kernels.evaluator import KernelStage
    from rbc.passes.rank import parse_partition_request
    from rbc.sim.run import SimOptions, prepare, simulate
    from tests.conftest import HARD

    bundle = tmp_path / "rocker.h5"
    compile_to_file(HARD / "rocker_fourbar.yaml", bundle,
                    partitions=(parse_partition_request("crank=A"),))
    opts = SimOptions(controller="passive", duration=0.5, dt=0.01, initial={"D": 2.0},
                      rtol=1e-12)
    full = {"n": 0}
    real = KernelStage.scaled_cond

    def counted(self):
        full["n"] += 1
        return real(self)

    monkeypatch.setattr(KernelStage, "scaled_cond", counted)
    a = simulate(prepare(bundle, opts))
    spared = full["n"]
    monkeypatch.setattr(KernelStage, "scaled_cond_bound", lambda self: None)
    full["n"] = 0
    b = simulate(prepare(bundle, opts))
    steps = a.summary["integration"]["accepted_steps"]
    assert a.summary["integration"]["evaluator"] == "kernel"
    assert full["n"] == steps  # without the bound: one full evaluation per accepted step
    assert spared < steps / 10  # measured 12 of 443
    assert len(a.summary["events"]) == 1 and a.summary["events"] == b.summary["events"]
    for key in ("q", "v", "work_passive"):
        assert np.array_equal(a.log[key], b.log[key]), key

"""``rbc bench scaling`` reports per-loop kernel times on chains, and the kernel it times
gives the reference path's answer there."""

from __future__ import annotations

import json

import numpy as np

from rbc.bench.compile import chain_record
from rbc.bench.scaling import bench_scaling
from rbc.cli.main import main
from rbc.compiler import compile_to_file


def test_bench_scaling_reports(capsys):
    rows = bench_scaling([2, 4], n_states=2)
    assert [r["loops"] for r in rows] == [2, 4]
    for r in rows:
        assert r["independent"] == r["loops"] and r["nv"] == 4 * r["loops"]
        assert 0 < r["geometry_us"] and 0 < r["curvature_us"] and 0 < r["forward_us"]
    assert rows[0]["ratio"] == 1.0
    assert main(["bench", "scaling", "--loops", "2,3", "--states", "1", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [c["loops"] for c in out["chains"]] == [2, 3]
    assert main(["bench", "scaling", "--loops", "0"]) == 2
    assert main(["bench", "scaling", "--loops", "5000"]) == 2


def test_chain_kernel_equals_reference(tmp_path):
    """The evaluation the benchmark times (KernelModel.forward_dynamics, and lift) equals
    the reference path on a 5-loop chain (1e-13, the kernels' agreement everywhere)."""
    from rbc.bench.dynamics import sample_states
    from rbc.kernels.evaluator import KernelModel
    from rbc.model.compiled import CompiledModel
    from rbc.model.dynamics import DynamicsData, DynamicsModel, forward_dynamics, reduced_terms
    from rbc.model.partition import lift

    (tmp_path / "c.yaml").write_text(chain_record(5))
    compile_to_file(tmp_path / "c.yaml", tmp_path / "c.h5")
    kin = CompiledModel.from_bundle(tmp_path / "c.h5")
    part = kin.partitions["default"]
    dm = DynamicsModel.build(kin)
    dd = DynamicsData.of(dm)
    # the layout's choice at 5 loops (dense M_r) and the recursion over nodes forced
    km, kr = KernelModel(kin, part), KernelModel(kin, part, recursion=True)
    assert kr.layout.segment("nd_base").size == 5  # one node per loop
    for s in sample_states(kin, 3):
        ref = forward_dynamics(dm, reduced_terms(dm, dd, part, s.q, s.u, f=s.f))
        for k in (km, kr):
            got = k.forward_dynamics(s.q, s.u, s.f)
            assert np.abs(got - ref).max() <= 1e-13 * max(1.0, np.abs(ref).max())
        E = lift(kin, part, s.q).E
        assert np.abs(km.lift(s.q) - E).max() <= 1e-13
        # the lift by node holds E's entries (node n's coordinates × its speeds)
        En, ptr = kr.node_lift(s.q), kr.layout.segment("nd_e_ptr")
        cs, us = kr.layout.segment("nd_c"), kr.layout.segment("nd_u")
        cp, up = kr.layout.segment("nd_c_ptr"), kr.layout.segment("nd_u_ptr")
        for n in range(5):
            block = En[ptr[n]: ptr[n + 1]].reshape(cp[n + 1] - cp[n], up[n + 1] - up[n])
            assert np.abs(block - E[np.ix_(cs[cp[n]: cp[n + 1]], us[up[n]: up[n + 1]])]
                          ).max() <= 1e-13
        # and nothing else: E vanishes outside the node blocks
        mask = np.ones_like(E, dtype=bool)
        for n in range(5):
            mask[np.ix_(cs[cp[n]: cp[n + 1]], us[up[n]: up[n + 1]])] = False
        assert not E[mask].any()

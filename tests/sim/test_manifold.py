"""The run-time corrector (LiftedCloser) against the path-product corrector (Closer)."""

from __future__ import annotations

import numpy as np
import pytest

from rbc.model.closure import CLOSURE_TOL
from rbc.model.compiled import CompiledModel
from rbc.model.dynamics import DynamicsData, DynamicsModel
from rbc.model.kinematics import residual
from rbc.model.partition import lift
from rbc.model.solve import independent_values
from rbc.sim.manifold import Closer, LiftedCloser


@pytest.mark.parametrize("name", ["stewart", "excavator", "fourbar"])
def test_lifted_closer_agrees_with_the_path_product_closer(bundles, name):
    kin = CompiledModel.from_bundle(bundles[name])
    part = kin.partitions["default"]
    dm = DynamicsModel.build(kin)
    fast, slow = LiftedCloser(dm, DynamicsData.of(dm), part, part.q_ref), Closer(kin, part,
                                                                                 part.q_ref)
    x0 = independent_values(kin, part, part.q_ref)
    rng = np.random.default_rng(20260927)
    direction = rng.normal(size=x0.size)
    for h in (1e-4, 1e-3, 1e-2):  # RK-stage-sized steps up to a coarse reference grid
        x = x0 + h * direction
        qa, qb = fast(x), slow(x)
        # closed to the solve tolerance by an independent residual (path products) …
        assert np.abs(residual(kin, qa)).max() <= CLOSURE_TOL, (name, h)
        # … at the same configuration as the other corrector (both closed to 1e-13 on a
        # locally unique branch; 1e-10 allows the conditioning of R_p)
        assert np.abs(kin.difference(qb, qa)).max() <= 1e-10, (name, h)
        # the kept lift is the lift at the closed configuration (two algorithms for C, the
        # same LU solve; E entries are O(1..10), so 1e-10 leaves the conditioning of R_p)
        assert np.abs(fast.lifted.E - lift(kin, part, qa).E).max() <= 1e-10, (name, h)
        assert np.array_equal(independent_values(kin, part, qa)[fast._keep], x[fast._keep])
    assert fast.fallbacks == 0


def test_lifted_closer_falls_back_to_the_continuation(bundles, monkeypatch):
    """With no Newton iterations allowed the predictor alone cannot close a 0.3 rad step:
    the continuation runs, is counted, and the lift is taken at its result."""
    import rbc.sim.manifold as manifold

    kin = CompiledModel.from_bundle(bundles["fourbar"])
    part = kin.partitions["default"]
    dm = DynamicsModel.build(kin)
    close = LiftedCloser(dm, DynamicsData.of(dm), part, part.q_ref)
    monkeypatch.setattr(manifold, "MAX_CORRECTOR", 0)
    x = independent_values(kin, part, part.q_ref) + 0.3
    q = close(x)
    assert close.fallbacks == 1
    assert np.abs(residual(kin, q)).max() <= CLOSURE_TOL
    assert np.abs(kin.difference(Closer(kin, part, part.q_ref)(x), q)).max() <= 1e-10
    assert np.abs(close.lifted.E - lift(kin, part, q).E).max() <= 1e-10


PLANAR_LOOP = """rbc: 1
name: planar_loop
gravity: [0, -9.81, 0]
bodies:
  - {name: ground, fixed: true}
  - {name: puck, mass: 1.0, inertia: [0.01, 0.01, 0.01, 0, 0, 0]}
  - {name: link, mass: 0.5, com: [0.15, 0, 0], inertia: [0.001, 0.004, 0.004, 0, 0, 0]}
  - {name: slider, mass: 0.3, inertia: [0.001, 0.001, 0.001, 0, 0, 0]}
joints:
  - {name: P, type: planar, parent: ground, child: puck, normal: [0, 0, 1],
     parent_frame: {xyz: [0, 0, 0]}, child_frame: {xyz: [0, 0, 0]}, initial: [0.3, 0.1, 0.2]}
  - {name: R1, type: revolute, parent: puck, child: link, axis: [0, 0, 1],
     parent_frame: {xyz: [0, 0, 0]}, child_frame: {xyz: [0, 0, 0]}}
  - {name: S, type: prismatic, parent: link, child: slider, axis: [1, 0, 0],
     parent_frame: {xyz: [0, 0, 0]}, child_frame: {xyz: [0, 0, 0]}}
  - {name: R2, type: revolute, parent: ground, child: slider, axis: [0, 0, 1],
     parent_frame: {xyz: [0, 0, 0]}, child_frame: {xyz: [0, 0, 0]}}
independent: [P]
"""


def test_lifted_closer_prescribes_a_planar_joint_through_its_own_maps(tmp_path):
    """A planar joint stores its angle as cos/sin: it is prescribed by the joint's maps, not
    by a q index, and the result equals the path-product corrector's."""
    from rbc.compiler import compile_record

    path = tmp_path / "planar_loop.yaml"
    path.write_text(PLANAR_LOOP)
    _, report = compile_record(path)
    parted = report.stages["rank"]
    kin, part = parted.model, parted.partitions[0]
    assert [kin.v_names[int(j)] for j in part.independent] == ["P.vx", "P.vy", "P.wz"]
    dm = DynamicsModel.build(kin)
    fast = LiftedCloser(dm, DynamicsData.of(dm), part, part.q_ref)
    assert not fast._direct.all()  # the angle goes through set_values
    x = independent_values(kin, part, part.q_ref) + np.array([0.01, -0.02, 0.05])
    qa, qb = fast(x), Closer(kin, part, part.q_ref)(x)
    assert np.abs(residual(kin, qa)).max() <= CLOSURE_TOL
    assert independent_values(kin, part, qa) == pytest.approx(x, abs=1e-15)
    assert np.abs(kin.difference(qb, qa)).max() <= 1e-10


def test_planar_independent_coordinates_integrate_their_value_rates(tmp_path):
    """The reduced backend integrates a planar joint's values with (ẋ, ẏ) = R(θ)(v_x, v_y)
    (its speeds are body-frame rates): a passive planar loop released under gravity keeps
    its energy to ≤ 1e-9 of the largest term over 0.5 s (with ẋ = u it lost 0.14 J in
    0.2 s). A reference still cannot prescribe a body-frame speed."""
    from rbc.compiler import compile_to_file
    from rbc.sim.reference import ReferenceError, load_knots, spline_reference
    from rbc.sim.run import SimOptions, prepare, simulate

    record, bundle = tmp_path / "planar_loop.yaml", tmp_path / "planar_loop.h5"
    record.write_text(PLANAR_LOOP)
    compile_to_file(record, bundle)
    r = simulate(prepare(bundle, SimOptions(controller="passive", duration=0.5, dt=0.005,
                                            velocity={"P.wz": 1.0})))
    assert r.summary["energy_ledger_relative"] <= 1e-9
    assert r.summary["max_kinetic_energy"] > 0.1
    assert np.ptp(r.log["q"][:, 0]) > 1e-3  # the puck moves in x
    kin = CompiledModel.from_bundle(bundle)
    csv = tmp_path / "p.csv"
    csv.write_text("time,P.wz\n0,0.2\n1,0.3\n")
    with pytest.raises(ReferenceError, match=r"P.wz is a planar joint's body-frame speed"):
        spline_reference(kin, kin.partitions["default"], load_knots(csv))

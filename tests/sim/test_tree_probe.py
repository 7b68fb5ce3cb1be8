"""The backends' measurement on the Pinocchio tree (:class:`rbc.sim.backends.tree_probe.
TreeProbe.measure`, one forward-kinematics pass) against independent evaluations: the
kinetic energy ½ vᵀ M v with ``crba``'s M (armature included), the potential from the
bodies' world centres of mass, the task positions from each body's world placement."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

from rbc.model.compiled import CompiledModel
from rbc.model.dynamics import DynamicsModel
from rbc.model.tree import joint_space_inertia
from rbc.sim.backends.tree_probe import TreeProbe, record_tasks


@pytest.mark.parametrize("name", ["stewart", "excavator"])
def test_measure_against_crba_centres_of_mass_and_placements(bundles, name):
    kin = CompiledModel.from_bundle(bundles[name])
    tree = DynamicsModel.build(kin).tree
    m = tree.model
    assert np.any(np.asarray(m.armature) > 0)  # the rotor inertia counts (the records' α)
    probe = TreeProbe(tree, record_tasks(kin))
    d = m.createData()
    rng = np.random.default_rng(2)
    for _ in range(3):
        q = pin.integrate(m, pin.neutral(m), 0.1 * rng.normal(size=m.nv))
        v = rng.normal(size=m.nv)
        kinetic, potential, tasks = probe.measure(q, v)
        M = joint_space_inertia(m, d, q)
        # two algorithms (forward pass vs composite inertias) on O(10 J): a few roundings
        assert kinetic == pytest.approx(0.5 * float(v @ M @ v), rel=1e-13)
        pin.forwardKinematics(m, d, q)
        g = np.asarray(m.gravity.linear)
        pe = -sum(float(m.inertias[i].mass) * float(g @ (d.oMi[i] * m.inertias[i].lever))
                  for i in range(1, m.njoints))
        assert potential == pytest.approx(pe, rel=1e-13, abs=1e-12)
        idx = kin.record.body_index()
        for t in kin.record.tasks:
            frame = d.oMi[int(m.frames[int(tree.body_frame[idx[t.body]])].parentJoint)] \
                * m.frames[int(tree.body_frame[idx[t.body]])].placement
            want = (frame * dict((n, T) for n, _, T in record_tasks(kin))[t.name]).translation
            assert np.abs(tasks[t.name] - want).max() <= 1e-14 * max(1.0, np.abs(want).max())

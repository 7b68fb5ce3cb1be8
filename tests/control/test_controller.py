"""The controller (tracking + allocation) and the manifold reference on one humanoid standing
on both soles: the reference is closed and its speeds and accelerations are the derivatives
of its samples; on the reference the allocated efforts reproduce the reference acceleration
through the composed forward dynamics, and off it the closed-loop acceleration of
Γ ṡ + C s = −k_s Γ s."""

from __future__ import annotations

import numpy as np
import pytest

from rbc.compose.dynamics import MemberModel, composed_terms, forward_dynamics
from rbc.control.controller import AllocationController
from rbc.control.reference import OffsetReference
from rbc.model.dynamics import DynamicsData

PERIOD = 2.0  # s


def _amplitude() -> np.ndarray:
    """A sway of the pelvis (3 cm sideways, 2 cm down, 0.1 rad yaw) and the shoulders."""
    a = np.zeros(15)
    a[2], a[4], a[5] = 0.1, 0.03, -0.02   # base twist [ω; v] in the pelvis frame
    a[7], a[11] = 0.5, -0.5               # shoulder pitch l, r [rad]
    return a


@pytest.fixture(scope="module")
def sway(solo):
    mm = MemberModel.build(solo, "stand")
    part = solo.modes["stand"].partition
    data = DynamicsData.of(mm.dm)
    return mm, part, data


def test_reference_is_closed_and_differentiable(sway):
    mm, part, data = sway
    ref = OffsetReference(mm, data, part, part.q_ref, _amplitude(), PERIOD)
    h = 1e-4
    for t in (0.3, 1.1):
        r, rp, rm = ref(t), ref(t + h), ref(t - h)
        assert max(r.residual, rp.residual, rm.residual) <= 1e-10  # the closure tolerance
        # centred differences on the manifold (q ⊖ q: body-frame increments for the base)
        fd_v = mm.kin.difference(rm.q, rp.q) / (2 * h)
        assert np.abs(fd_v - r.v).max() <= 1e-6 * max(1.0, np.abs(r.v).max())  # O(h²)
        fd_a = (rp.v - rm.v) / (2 * h)
        assert np.abs(fd_a - r.a).max() <= 1e-5 * max(1.0, np.abs(r.a).max())


def test_on_the_reference_the_efforts_give_the_reference_acceleration(sway):
    mm, part, data = sway
    ctrl = AllocationController(mm, part, OffsetReference(mm, data, part, part.q_ref,
                                                          _amplitude(), PERIOD))
    for t in (0.0, 0.5, 1.25):
        r = ctrl.reference(t)
        cs = ctrl.step(t, r.q, r.v)
        assert cs.allocation.phase == "reachable" and cs.allocation.cone_violation <= 1e-9
        assert np.abs(cs.tracking.e).max() <= 1e-12 and np.abs(cs.tracking.s).max() <= 1e-12
        T = composed_terms(mm, data, r.q, r.u)
        udot = forward_dynamics(T, r.u, cs.f, coulomb=False)
        # Cholesky of Γ and the allocation's equality residual: round-off
        assert np.abs(udot - r.udot).max() <= 1e-9 * max(1.0, np.abs(r.udot).max())


def test_off_the_reference_the_efforts_give_the_closed_loop_acceleration(sway):
    mm, part, data = sway
    ref = OffsetReference(mm, data, part, part.q_ref, _amplitude(), PERIOD)
    ctrl = AllocationController(mm, part, ref)
    r = ref(0.8)
    q = ref(0.8 + 0.004).q  # 4 ms ahead on the manifold, moving at the speed of 0.7 s
    v = composed_terms(mm, data, q, ref(0.7).u).v
    cs = ctrl.step(0.8, q, v)
    assert cs.allocation.phase == "reachable"
    assert np.abs(cs.tracking.e).max() > 1e-4 and np.abs(cs.tracking.s).max() > 1e-3
    u = v[part.independent]
    T = composed_terms(mm, data, q, u)
    udot = forward_dynamics(T, u, cs.f, coulomb=False)
    # the closed loop Γ ṡ + C s = −k_s Γ s
    s_ = cs.tracking.s
    want = cs.tracking.udot_r - ctrl.gains.k_s * s_ - np.linalg.solve(T.Gamma, T.C @ s_)
    assert np.abs(udot - want).max() <= 1e-9 * max(1.0, np.abs(want).max())
    assert r.t == 0.8


def test_unloading_ramp_before_lift_off(sway):
    """Stepping: the pelvis moves 10 cm over the left sole (period 4 s: there at 2 s) while
    the right sole's ramp (lift-off at 2 s) takes its load factor from 1 to 0 over the last
    0.35 s, with η = 2e-4: every instant is reachable, the right sole's normal force stays
    under its shrinking cap and vanishes at lift-off."""
    from rbc.control.allocation import AllocationWeights
    from rbc.control.cones import UnloadingRamp

    mm, part, data = sway
    a = np.zeros(15)
    a[4] = 0.10
    ramp = UnloadingRamp()
    right = "h/sole_r"
    ctrl = AllocationController(mm, part, OffsetReference(mm, data, part, part.q_ref, a, 4.0),
                                weights=AllocationWeights(eta=2e-4),
                                loads=lambda t: {right: ramp.factor(t, [2.0])})
    weight = 9.81 * sum(b.mass for b in mm.kin.record.bodies if b.kind != "fixed")
    normals = []
    for t in (1.6, 1.7, 1.8, 1.9, 2.0):
        r = ctrl.reference(t)
        al = ctrl.step(t, r.q, r.v).allocation
        sigma = ramp.factor(t, [2.0])
        assert al.phase == "reachable" and al.cone_violation <= 1e-9
        assert al.wrenches[1, 5] <= sigma * weight * (1 + 1e-9)
        normals.append(al.wrenches[1, 5])
    assert np.all(np.diff(normals) < 0)  # unloading
    assert np.abs(al.wrenches[1]).max() <= 1e-8 * weight  # σ = 0 at lift-off

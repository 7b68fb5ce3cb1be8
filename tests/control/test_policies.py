"""The eight policies of issue #20 on the pair of humanoids holding hands: where two must
agree by construction they do — proposed and projected tree on the reference (s = 0), the
curvature ablation against the tree's own curvature term, gravity + PD and actuator PD on
the reference at rest — and every policy keeps its efforts within the bounds off the
reference."""

from __future__ import annotations

import numpy as np
import pytest

from rbc.compose.dynamics import member_sums
from rbc.control.dances import dance_reference
from rbc.control.policies import (
    POLICIES,
    PolicyContext,
    actuator_bodies,
    no_curvature,
    projected_tree,
    proposed,
)
from rbc.control.reference import ReferenceSample
from rbc.model.dynamics import tree_terms


@pytest.fixture(scope="module")
def ctx(pair):
    return PolicyContext.build(pair, "stand")


@pytest.fixture(scope="module")
def moving_ref(pair):
    """A reference sample in the sway (the pelvis and waist moving, the soles loaded)."""
    return dance_reference(pair, "stand", calibrate=False)(21.3)


def test_actuator_members_are_the_screw_bodies(ctx):
    names = set(actuator_bodies(ctx.mm.kin))
    # per robot: knee barrel+rod, elbow barrels+rods, 4 ankle struts × (cross, barrel, rod)
    assert len(names) == 2 * (2 * 2 + 2 * 2 + 4 * 3)
    assert "h1/ankle_i_l_cross" in names and "h1/ankle_cross_l" not in names


def test_proposed_and_projected_tree_agree_on_the_reference(ctx, moving_ref):
    r = moving_ref
    a, b = proposed(ctx, r, r.q, r.v), projected_tree(ctx, r, r.q, r.v)
    assert np.abs(a.tracking.s).max() <= 1e-10
    # two algorithms for the same Γ u̇ + C u + g (CRBA/Coriolis vs member sums): round-off
    assert np.abs(a.Q - b.Q).max() <= 1e-10 * np.abs(a.Q).max()
    assert np.abs(a.f - b.f).max() <= 1e-6 * np.abs(a.f).max()  # the QP's conditioning


def test_no_curvature_drops_exactly_the_curvature_term(ctx, moving_ref):
    from rbc.compose.dynamics import composed_terms

    r = moving_ref
    u = r.v[ctx.part.independent]
    T = composed_terms(ctx.mm, ctx.data, r.q, u)
    _, C0, _ = member_sums(ctx.mm, T.kin, T.lift.E, ctx.mm.params, curvature=False)
    nt = ctx.mm.kin.nv_tree
    tt = tree_terms(ctx.mm.dm, ctx.data, r.q, T.v)
    # (C − C_no curvature) u = E_Tᵀ M_T (Ė u): Pinocchio's CRBA (armature = rotors) times the
    # composer's curvature
    want = T.lift.E[:nt].T @ tt.M @ T.edu[:nt]
    assert np.abs((T.C - C0) @ u - want).max() <= 1e-10 * max(1.0, np.abs(want).max())
    assert np.abs(want).max() > 1e-3  # the dance's curvature term is not negligible here
    assert no_curvature(ctx, r, r.q, r.v).slack <= 1e-9


def test_actuator_ablations_change_the_model_where_they_should(ctx, moving_ref):
    from rbc.compose.dynamics import composed_terms

    r = moving_ref
    T = composed_terms(ctx.mm, ctx.data, r.q, r.v[ctx.part.independent])
    G1, _, g1 = member_sums(ctx.mm, T.kin, T.lift.E, ctx.no_inertia)
    w = np.linalg.eigvalsh(0.5 * ((T.Gamma - G1) + (T.Gamma - G1).T))
    assert w.min() >= -1e-9 * w.max() and w.max() > 0  # the removed inertia is a PSD part
    assert np.abs(g1 - T.g).max() > 1.0  # their weight [N or N·m] is in g, removed there


def test_port_gains_follow_the_default_gain_rule(pair, ctx):
    from rbc.sim.controllers import default_gains

    md = pair.modes["stand"]
    g = default_gains(ctx.mm.dm, md.partition, md.partition.q_ref)  # M_r by Pinocchio CRBA
    assert np.abs(ctx.kp - g.kp).max() <= 1e-9 * np.abs(g.kp).max()
    assert np.abs(ctx.kd - g.kd).max() <= 1e-9 * np.abs(g.kd).max()


def test_pd_policies_on_the_reference_at_rest(pair, ctx):
    q = pair.modes["stand"].partition.q_ref
    z = np.zeros(ctx.mm.kin.nv)
    ref = ReferenceSample(0.0, q, z, z, z[:0], z[:0], 0.0)
    pd = POLICIES["actuator_pd"](ctx, ref, q, z)
    assert np.abs(pd.f).max() == 0.0
    gp = POLICIES["gravity_pd"](ctx, ref, q, z)
    pr = proposed(ctx, ref, q, z)
    assert np.abs(gp.Q - pr.Q).max() <= 1e-9 * np.abs(pr.Q).max()  # both Q = g at rest


def test_every_policy_stays_within_the_bounds_off_the_reference(ctx, moving_ref):
    r = moving_ref
    rng = np.random.default_rng(7)
    v = r.v.copy()
    v[ctx.part.independent] += rng.uniform(-0.05, 0.05, ctx.part.independent.size)
    from rbc.compose.lift import composer_lift

    L = composer_lift(ctx.mm.structure, ctx.mm.dm, ctx.data, r.q)
    v = L.E @ v[ctx.part.independent]  # admissible speeds at the closed q
    for name, pol in POLICIES.items():
        st = pol(ctx, r, r.q, v)
        assert np.all(st.f >= ctx.lower - 1e-9) and np.all(st.f <= ctx.upper + 1e-9), name
        assert np.isfinite(st.slack), name


def test_friction_compensation_is_the_stated_formula(pair, ctx, moving_ref):
    """``f + 0.85 F_c tanh(ℓ̇_d/ε)`` clipped to the bounds, with F_c the record's drive
    Coulomb friction, ε 0.005 m/s at the screws and 0.05 rad/s at rotary ports, and ℓ̇_d
    the reference's port rate — here against centred differences of the port positions
    along the reference (Δt = 1e-4 s: the rates' truncation ~1e-8 of the 0.005 m/s scale)."""
    from dataclasses import replace

    from rbc.control.policies import FrictionCompensation, compensated
    from rbc.model.interfaces import port_values

    kin = ctx.mm.kin
    acts = kin.record.actuators
    fc = FrictionCompensation.of(kin)
    screws = np.array([a.transmission.type == "screw" for a in acts])
    assert screws.any() and (~screws).any()
    assert np.all(fc.epsilon[screws] == 0.005) and np.all(fc.epsilon[~screws] == 0.05)
    assert np.array_equal(fc.coulomb, [a.coulomb for a in acts]) and fc.coulomb.any()
    dance = dance_reference(pair, "stand", calibrate=False)
    t, h = 21.3, 1e-4
    lo, r, hi = dance(t - h), dance(t), dance(t + h)
    rate = (port_values(kin, hi.q) - port_values(kin, lo.q)) / (2 * h)
    on = replace(ctx, friction=fc)
    step = proposed(ctx, r, r.q, r.v)
    got = compensated(on, step, r).f
    want = np.clip(step.f + 0.85 * fc.coulomb * np.tanh(rate / fc.epsilon), ctx.lower,
                   ctx.upper)
    assert np.abs(got - want).max() <= 1e-6 * np.abs(fc.coulomb).max()
    assert np.abs(got - step.f).max() > 1.0  # it does something at this moving instant
    assert compensated(ctx, step, r) is step  # no compensation without it
    big = replace(step, f=ctx.upper.copy())  # clipped to the bounds
    assert np.all(compensated(on, big, r).f <= ctx.upper)


def test_friction_compensation_only_on_the_realistic_plant():
    from rbc.repro.dances import PLANTS, compensates

    assert [p for p in PLANTS if compensates(p)] == ["mujoco-realistic"]

"""Dance references on a composed mode's closure manifold and inverse-dynamics allocation
at sampled reference states (issue #20 item 5 and the acceptance's first bullet), on the
pair of humanoids holding hands (27 independent speeds, 4 soles); the three formations of
five in the slow test.

Checks against independent references: the profiles' derivatives against centred
differences; the samples closed to the corrector's tolerance, their speeds and
accelerations against centred differences of the samples themselves on the manifold; the
wave's measured palm rise; the allocation's slack and cone rows at the samples; the
per-robot allocation's states closed on each robot's own manifold."""

from __future__ import annotations

import numpy as np
import pytest

from rbc.compose.dynamics import member_model
from rbc.control.dances import (
    DURATION,
    WINDOWS,
    DanceReference,
    Move,
    Profile,
    dance_reference,
    palm_height,
    smoothstep,
    wave_order,
)
from rbc.control.inverse import SLACK_LIMIT, sample_allocation
from rbc.control.per_robot import robot_models
from rbc.control.tracking import IndependentCoordinates
from rbc.model.closure import within_limits
from rbc.model.dynamics import DynamicsData
from rbc.model.kinematics import residual

#: The paper's worst closure residual of its references is 1.0e-11; ours close to the
#: corrector's 1e-13 tolerance, so 1e-11 holds with two decades to spare.
RESIDUAL_LIMIT = 1e-11


@pytest.mark.parametrize("prof", [Profile(0.0, 7.5, 1.5, "sin2", 0.75, 0.15),
                                  Profile(20.0, 25.0, 1.25, "sin", 2.5, 20.0),
                                  Profile(7.75, 9.0, 0.625)])
def test_profiles_derivatives_and_smoothness(prof):
    h = 1e-6
    for t in np.linspace(prof.start - 0.1, prof.stop + 0.1, 37):
        s, sd, sdd = prof(t)
        fd1 = (prof(t + h)[0] - prof(t - h)[0]) / (2 * h)
        fd2 = (prof(t + h)[1] - prof(t - h)[1]) / (2 * h)
        # O(h²) truncation where smooth; O(h) times the jump of the third derivative (≤ 1e4
        # 1/s³ at a ramp's end, a C² profile) where t ± h straddles one: ≤ 1e-2 · … ≪ 1e-3
        assert abs(fd1 - sd) <= 1e-4 and abs(fd2 - sdd) <= 1e-3
    for edge, inside in ((prof.start, prof.start + 1e-6), (prof.stop, prof.stop - 1e-6)):
        # C²: zero with both derivatives at the window's ends, s̈ ~ 60 δ/ramp³ just inside
        assert np.abs(prof(edge)).max() == 0.0
        assert np.abs(prof(inside)).max() <= 1e-3
    assert smoothstep(0.5) == (0.5, 1.875, 0.0)


def test_moves_are_checked(pair):
    kin = pair.model(pair.modes["stand"])
    ref = dance_reference(pair, "stand", calibrate=False)
    p = Profile(1.0, 2.0, 0.5)
    with pytest.raises(ValueError, match="amplitude"):
        DanceReference(kin, ref.part, ref.q0, (Move("x", "h1/waist", (0.1, 0.2), p),))
    with pytest.raises(ValueError, match="overlap"):
        DanceReference(kin, ref.part, ref.q0,
                       (Move("x", "h1/pelvis.root", (0,) * 5 + (0.01,), p),
                        Move("y", "h1/pelvis.root", (0.01,) + (0,) * 5, Profile(1.5, 3, 0.5))))


@pytest.fixture(scope="module")
def pair_dance(pair):
    return dance_reference(pair, "stand")


#: One instant inside each element of the dance (bounce, wave, lean, sway, bow) [s].
INSTANTS = (3.1, 8.4, 17.5, 21.3, 27.4)


def test_dance_on_the_manifold_with_its_derivatives(pair, pair_dance):
    ref = pair_dance
    kin = ref.kin
    assert {m.element for m in ref.moves} == set(WINDOWS)
    assert ref.wave_rise == pytest.approx(0.30, abs=2e-3)  # the 0.30 m rise
    h = 1e-4
    for t in INSTANTS:
        rm, r, rp = ref(t - h), ref(t), ref(t + h)
        for s in (rm, r, rp):
            assert s.residual <= RESIDUAL_LIMIT
            assert np.abs(residual(kin, s.q)).max() <= RESIDUAL_LIMIT
            assert not within_limits(kin, s.q)
        fd_v = kin.difference(rm.q, rp.q) / (2 * h)
        assert np.abs(fd_v - r.v).max() <= 1e-5 * max(1.0, np.abs(r.v).max())  # O(h²)
        fd_a = (rp.v - rm.v) / (2 * h)
        assert np.abs(fd_a - r.a).max() <= 1e-4 * max(1.0, np.abs(r.a).max())
    # the wave's first link point at its peak, measured on the reference itself
    link, _ = wave_order(pair, "stand")[0]
    palm = pair.links[link].child
    assert (palm_height(kin, ref(8.375).q, palm) - palm_height(kin, ref.q0, palm)
            == pytest.approx(0.30, abs=2e-3))
    assert ref.worst_residual <= RESIDUAL_LIMIT


def test_sampled_allocation_meets_the_limits(pair, pair_dance):
    ref = pair_dance
    mm = member_model(pair, "stand")
    md = pair.modes["stand"]
    data = DynamicsData.of(mm.dm)
    coords = IndependentCoordinates.of(mm.kin, md.partition)
    robots = robot_models(pair, "stand")
    for t in (0.0, *INSTANTS):
        r = ref(t)
        al = sample_allocation(mm, data, coords, r.q, r.v, r.a)
        assert al.slack <= SLACK_LIMIT and al.cone_violation <= 1e-9
        lo = np.array([a.effort_limits[0] for a in mm.kin.record.actuators])
        hi = np.array([a.effort_limits[1] for a in mm.kin.record.actuators])
        assert np.all(al.f >= lo - 1e-9) and np.all(al.f <= hi + 1e-9)
        for rb in robots:  # each robot's state is closed on its own manifold
            qk, vk = rb.state(r.q, r.v)
            assert np.abs(residual(rb.mm.kin, qk)).max() <= RESIDUAL_LIMIT
            _, ak = rb.state(r.q, r.a)
            sample_allocation(rb.mm, rb.data, IndependentCoordinates.of(rb.mm.kin, rb.part),
                              qk, vk, ak)


def test_the_per_robot_models_stack_to_the_unlinked_terms(pair):
    """Without the links, the composed Γ of the robots' own models is block-diagonal: each
    robot's Γ equals the one of its member alone at the same state (the model is the same
    member, only its reduction differs), checked through the kinetic energy."""
    from rbc.compose.dynamics import composed_terms

    md = pair.modes["stand"]
    mm = member_model(pair, "stand")
    data = DynamicsData.of(mm.dm)
    q = md.partition.q_ref
    rng = np.random.default_rng(3)
    u = rng.uniform(-0.2, 0.2, md.partition.independent.size)
    T = composed_terms(mm, data, q, u)
    energy = 0.5 * u @ T.Gamma @ u
    total = 0.0
    for rb in robot_models(pair, "stand"):
        qk, vk = rb.state(q, T.v)
        uk = vk[rb.part.independent]
        Tk = composed_terms(rb.mm, rb.data, qk, uk)
        assert np.abs(Tk.v - vk).max() <= 1e-10 * max(1.0, np.abs(vk).max())
        total += 0.5 * uk @ Tk.Gamma @ uk
    # the link charts are massless: the energies agree to round-off
    assert total == pytest.approx(energy, rel=1e-11)


@pytest.fixture(scope="module")
def formations_dir(control_dir):
    """control_dir with all five humanoids and the three formation files."""
    import shutil

    from rbc.compiler import compile_to_file
    from tests.compose.conftest import HUMANOID

    for n in (4, 5):
        compile_to_file(HUMANOID / f"humanoid_v{n}.yaml", control_dir / f"humanoid_v{n}.h5")
    for kind in ("ring", "semicircle", "line"):
        shutil.copy(HUMANOID / f"{kind}.yaml", control_dir / f"{kind}.yaml")
    return control_dir


@pytest.mark.slow
@pytest.mark.parametrize("formation", ["ring", "semicircle", "line"])
def test_formation_dances(formation, formations_dir):
    """30 s on each formation, sampled every 0.5 s: closed (≤ 1e-11), inside the joint
    limits, and the composed inverse-dynamics allocation reaches the reference (slack ≤
    1e-9) within the effort bounds and cones."""
    from tests.compose.conftest import _composed

    comp = _composed(str(formations_dir), formation)[1]
    ref = dance_reference(comp, "stand")
    mm = member_model(comp, "stand")
    data = DynamicsData.of(mm.dm)
    coords = IndependentCoordinates.of(mm.kin, comp.modes["stand"].partition)
    for t in np.arange(0.0, DURATION, 0.5):
        r = ref(float(t))
        assert r.residual <= RESIDUAL_LIMIT and not within_limits(ref.kin, r.q)
        if round(t / 0.5) % 4 == 0:
            al = sample_allocation(mm, data, coords, r.q, r.v, r.a)
            assert al.slack <= SLACK_LIMIT and al.cone_violation <= 1e-9


@pytest.mark.slow
def test_travelling_ring_steps(formations_dir):
    """The travelling ring's sideways steps (rbc.control.steps, the shipped ring's swing
    modes) at an instant of every phase of the first step and at the end of the last:
    closed (≤ 1e-10), inside the joint limits, the composed allocation reaching the
    reference (η = 2e-4, the ramps' σ) and the per-robot allocation evaluated."""
    from rbc.control.steps import TRAVEL_STEPS, StepAllocation, StepTiming, step_reference
    from tests.compose.conftest import _composed

    comp = _composed(str(formations_dir), "ring")[1]
    ref = step_reference(comp, steps=TRAVEL_STEPS)
    alloc = StepAllocation(comp, ref)
    for t in (0.8, 1.45, 2.0, 2.5, 3.6, 5.2, 6.4, TRAVEL_STEPS * StepTiming().step):
        row = alloc(t)
        assert row["residual"] <= 1e-10 and not within_limits(ref.kin, ref(t).q)
        assert row["slack"] <= SLACK_LIMIT and row["cone_violation"] <= 1e-9
        assert np.isfinite(row["per_robot_slack"])

"""Sideways steps of a travelling formation (issue #20 item 5 with the unloading ramps of
item 2) on the pair of humanoids holding hands, one step: the plan's phases and ramps, the
samples on the modes' closure manifolds with their rates against centred differences, the
formation moved rigidly after the step, and the composed inverse-dynamics allocation at
samples of every phase (η = 2e-4) with the unloading sole under its shrinking cap."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rbc.compose.dynamics import MemberModel
from rbc.control.allocation import AllocationWeights
from rbc.control.inverse import SLACK_LIMIT, sample_allocation
from rbc.control.steps import (
    Segment,
    bump,
    formation_motion,
    step_plan,
    step_reference,
    swing_modes,
)
from rbc.control.tracking import IndependentCoordinates
from rbc.ir import spatial as sp
from rbc.model.closure import within_limits
from rbc.model.dynamics import DynamicsData
from rbc.model.kinematics import residual
from rbc.model.modes import support_poses
from rbc.repro.dances import PAIR

#: The pair with the two single-support modes a step needs (every robot's left, or right,
#: sole lifted; the hand link kept).
PAIR_STEPS = PAIR + ("  - {name: swing_l, supports: [h1.sole_r, h2.sole_r]}\n"
                     "  - {name: swing_r, supports: [h1.sole_l, h2.sole_l]}\n")
#: The issue's closure bar for the stepping samples: Newton closes to 1e-13 (CLOSURE_TOL),
#: three decades below.
RESIDUAL_LIMIT = 1e-10


@pytest.fixture(scope="module")
def pair_steps(control_dir):
    from tests.compose.conftest import composed_text

    return composed_text(str(control_dir), "pair_steps", PAIR_STEPS)


@pytest.fixture(scope="module")
def stepping(pair_steps):
    return step_reference(pair_steps)


def test_bump_and_segment_rates():
    h = 1e-6
    for x in np.linspace(0.05, 0.95, 7):
        b, bd, bdd = bump(x)
        assert bd == pytest.approx((bump(x + h)[0] - bump(x - h)[0]) / (2 * h), abs=1e-6)
        assert bdd == pytest.approx((bump(x + h)[1] - bump(x - h)[1]) / (2 * h), abs=1e-5)
    assert bump(0.5)[0] == 1.0 and bump(0.0) == bump(1.0) == (0.0, 0.0, 0.0)
    a = pin.SE3(pin.exp3(np.array([0.1, -0.2, 0.3])), np.array([0.2, 0.1, 0.9]))
    b = a * pin.SE3(pin.exp3(np.array([0.0, 0.05, -0.1])), np.array([0.02, 0.04, -0.01]))
    seg = Segment(1.0, 2.5, a, b)
    h = 1e-5
    for t in (1.2, 1.75, 2.3):
        v, dv = seg.body_rates(t)
        fd = [sp.from_pinocchio_motion(np.asarray(pin.log6(seg.pose(t).inverse()
                                                           * seg.pose(t + s)).vector))
              for s in (-h, h)]
        assert np.abs((fd[1] - fd[0]) / (2 * h) - v).max() <= 1e-8  # O(h²) of ~1/s³ rates
        vp, vm = seg.body_rates(t + h)[0], seg.body_rates(t - h)[0]
        assert np.abs((vp - vm) / (2 * h) - dv).max() <= 1e-7
    assert np.abs((seg.pose(2.5).inverse() * b).homogeneous - np.eye(4)).max() <= 1e-14


def test_formation_motion_is_sideways():
    th = np.linspace(0.0, 2 * np.pi, 5, endpoint=False)
    c = np.column_stack([np.cos(th), np.sin(th), np.zeros(5)])
    lat = np.column_stack([np.sin(th), -np.cos(th), np.zeros(5)])  # facing the centre
    M = formation_motion(c, lat, 0.03)
    for k in range(5):
        d = M.act(c[k]) - c[k]
        assert np.linalg.norm(d) == pytest.approx(0.03, rel=1e-3)   # chord of a 0.03 arc
        assert d @ lat[k] > 0                                       # towards each left
        # a chord of the turn θ = 0.03 rad: θ/2 off the lateral axis
        assert np.linalg.norm(np.cross(d, lat[k])) <= 0.03 * (0.015 + 1e-6)
    line = formation_motion(np.array([[0, 0.45, 0.9], [0, -0.45, 0.9]]),
                            np.array([[0, 1.0, 0], [0, 1.0, 0]]), -0.03)
    assert np.allclose(line.translation, [0, -0.03, 0]) and np.allclose(line.rotation,
                                                                        np.eye(3))
    with pytest.raises(ValueError, match="not sideways"):
        formation_motion(np.array([[0, 0.45, 0.9], [0, -0.45, 0.9]]),
                         np.array([[0, 1.0, 0], [1.0, 0, 0]]), 0.03)


@settings(max_examples=40, deadline=None)
@given(st.integers(3, 8), st.floats(0.5, 3.0), st.floats(-2.0, 2.0), st.floats(-2.0, 2.0),
       st.floats(0.0, 2 * np.pi), st.floats(-0.05, 0.05).filter(lambda d: abs(d) > 1e-3),
       st.booleans())
def test_formation_motion_property(K, R, cx, cy, phase, dist, line):
    """Any ring facing its centre turns about that centre by dist / R, every robot moving
    the same chord sideways (towards robot 1's left for dist > 0); any line translates
    along itself by |dist|."""
    if line:
        th = phase
        d = np.array([np.cos(th), np.sin(th), 0.0])
        c = np.array([cx, cy, 0.9]) + np.outer(np.arange(K) * 0.9, d)
        lat = np.tile(d, (K, 1))
        M = formation_motion(c, lat, dist)
        assert np.allclose(M.rotation, np.eye(3), atol=1e-12)
        assert np.allclose(M.translation, dist * d, atol=1e-12)
        return
    th = phase + 2 * np.pi * np.arange(K) / K
    c = np.column_stack([cx + R * np.cos(th), cy + R * np.sin(th), np.full(K, 0.9)])
    lat = np.column_stack([np.sin(th), -np.cos(th), np.zeros(K)])
    M = formation_motion(c, lat, dist)
    chord = 2 * R * np.sin(abs(dist) / (2 * R))
    assert np.allclose(M.act(np.array([cx, cy, 0.0])), [cx, cy, 0.0], atol=1e-9)  # the axis
    for k in range(K):
        dp = M.act(c[k]) - c[k]
        assert np.linalg.norm(dp) == pytest.approx(chord, rel=1e-9)
        assert np.sign(dp @ lat[k]) == np.sign(dist)


def test_plan_phases_and_ramps(pair, pair_steps, stepping):
    with pytest.raises(ValueError, match="no mode lifts"):
        swing_modes(pair, "stand")
    plan = stepping.plan
    assert [(p.kind, p.mode) for p in plan.phases] == [
        ("shift", "stand"), ("swing", "swing_l"), ("transfer", "stand"),
        ("swing", "swing_r"), ("settle", "stand")]
    assert plan.lead == "l"  # the pair's motion is towards h1's left (+y)
    for s in ("h1/sole_l", "h2/sole_l"):
        (off,), (land,) = plan.lift_offs[s], plan.landings[s]
        assert plan.mode_at(off) == "swing_l" and plan.mode_at(land) == "stand"
        assert plan.loads(off - 0.35)[s] == pytest.approx(1.0, abs=1e-12)
        assert plan.loads(off - 0.175)[s] == pytest.approx(0.5, abs=1e-12)
        assert plan.loads(off - 1e-9)[s] == pytest.approx(0.0, abs=1e-8)
        assert s not in plan.loads(off)                             # lifted: no support
        assert plan.loads(land)[s] == 0.0 and plan.loads(land + 0.039)[s] == 0.0
        assert plan.loads(land + 0.19)[s] == pytest.approx(0.5, abs=1e-12)
        assert plan.loads(land + 0.34)[s] == pytest.approx(1.0, abs=1e-12)
    kin = stepping.kin
    with pytest.raises(ValueError, match="too short"):
        from rbc.control.steps import StepTiming

        step_plan(pair_steps, kin, stepping.q0, timing=StepTiming(shift=0.3))


#: Instants of the step [s]: the shift, the left soles' unloading ramp, mid-swing of the
#: left soles, just after their landing, the transfer, mid-swing of the right soles, the
#: settle and the end.
INSTANTS = (0.8, 1.45, 2.0, 2.5, 3.6, 5.2, 6.4, 7.2)


def test_step_on_the_manifolds(pair_steps, stepping):
    ref, plan = stepping, stepping.plan
    h = 1e-4
    for t in INSTANTS:
        rm, r, rp = ref(t - h), ref(t), ref(t + h)
        mode = plan.mode_at(t)
        kin_m = pair_steps.model(pair_steps.modes[mode], plan.anchors(t))
        for s in (rm, r, rp):
            assert s.residual <= RESIDUAL_LIMIT
            # the sample is closed in its own mode's model at the mode's anchors
            assert np.abs(residual(kin_m, s.q)).max() <= RESIDUAL_LIMIT
            assert not within_limits(ref.kin, s.q)
        fd_v = ref.kin.difference(rm.q, rp.q) / (2 * h)
        assert np.abs(fd_v - r.v).max() <= 1e-5 * max(1.0, np.abs(r.v).max())   # O(h²)
        fd_a = (rp.v - rm.v) / (2 * h)
        assert np.abs(fd_a - r.a).max() <= 1e-4 * max(1.0, np.abs(r.a).max())
    # the swing sole lifts, and after the step the formation stands moved rigidly by M
    lift = support_poses(ref.kin, ref(2.0).q, ["h1/sole_l"])[0].translation[2] - \
        support_poses(ref.kin, ref.q0, ["h1/sole_l"])[0].translation[2]
    assert lift == pytest.approx(0.03, abs=1e-9)                   # mid-swing: the bump's 1
    q_end = ref(plan.stop).q
    sup = pair_steps.modes["stand"].supports
    for a, b in zip(support_poses(ref.kin, ref.q0, sup), support_poses(ref.kin, q_end, sup),
                    strict=True):
        assert np.abs((plan.motion * a).homogeneous - b.homogeneous).max() <= 1e-12
    for m in ("h1", "h2"):
        sl = ref.kin.q_slice(ref.kin.edge(f"{m}/pelvis.root"))
        T0 = pin.SE3(sp.rotation_from_quat(ref.q0[sl][3:]), ref.q0[sl][:3])
        T1 = pin.SE3(sp.rotation_from_quat(q_end[sl][3:]), q_end[sl][:3])
        assert np.abs((plan.motion * T0).homogeneous - T1.homogeneous).max() <= 1e-12
    assert ref.worst_residual <= RESIDUAL_LIMIT


def test_step_allocation_with_the_ramps(pair_steps, stepping):
    """At samples of every phase the composed allocation (η = 2e-4, the ramps' σ) reaches
    the reference inside the bounds and cones; along the unloading ramp the left soles'
    normal force stays under the cap σ·F_max and vanishes at lift-off."""
    ref, plan = stepping, stepping.plan
    W = AllocationWeights(eta=2e-4)
    off = plan.lift_offs["h1/sole_l"][0]
    normals = []
    cases = [(t, plan.mode_at(t)) for t in (*INSTANTS, off - 0.30, off - 0.20, off - 0.10,
                                             off - 0.02)]
    cases.append((off, "stand"))  # at lift-off, still on both soles: σ = 0
    for t, mode in cases:
        r = ref(t)
        mm = MemberModel.build(pair_steps, mode, plan.anchors(t, mode))
        md = pair_steps.modes[mode]
        coords = IndependentCoordinates.of(mm.kin, md.partition)
        loads = plan.loads(t, mode)
        al = sample_allocation(mm, DynamicsData.of(mm.dm), coords, r.q, r.v, r.a,
                               loads=loads, weights=W)
        assert al.slack <= SLACK_LIMIT and al.cone_violation <= 1e-9
        lo = np.array([a.effort_limits[0] for a in mm.kin.record.actuators])
        hi = np.array([a.effort_limits[1] for a in mm.kin.record.actuators])
        assert np.all(al.f >= lo - 1e-9) and np.all(al.f <= hi + 1e-9)
        weight = sum(b.mass for b in mm.kin.record.bodies if b.kind != "fixed") * 9.81
        poses = support_poses(mm.kin, r.q, md.supports)
        for s, w, T in zip(md.supports, al.wrenches, poses, strict=True):
            fz = float(T.rotation[:, 2] @ w[3:])
            assert fz <= loads[s] * weight * (1 + 1e-9) + 1e-9       # the cap σ F_max
            if loads[s] == 0.0:
                assert np.abs(w).max() <= 1e-9                       # unloaded: no wrench
        if off - 0.35 < t <= off:
            k = md.supports.index("h1/sole_l")
            normals.append((t, loads["h1/sole_l"] * weight,
                            float(poses[k].rotation[:, 2] @ al.wrenches[k][3:])))
    # along the ramp the normal force stays under its falling cap, which binds 20 ms before
    # lift-off (64.7 N of the 65 N the motion asks 0.1 s earlier), and vanishes at lift-off
    normals.sort()
    assert all(fz <= cap * (1 + 1e-9) + 1e-9 for _, cap, fz in normals)
    assert normals[-2][2] == pytest.approx(normals[-2][1], rel=1e-6)
    assert abs(normals[-1][2]) <= 1e-9


def test_repro_samples_the_steps(pair_steps, monkeypatch):
    """``rbc.repro.dances.sampled_steps`` (the travelling ring's figures) on the pair: its
    rows in the sampled-allocation layout, the swing samples in their modes."""
    from rbc.repro import dances

    monkeypatch.setattr(dances, "formation", lambda name: pair_steps)
    out = dances.sampled_steps(("travelling_pair", "pair", 1.0, (0.8, 2.0, 5.2)))
    assert out["formation"] == "travelling_pair" and out["limits"] == []
    assert [r["mode"] for r in out["rows"]] == ["stand", "swing_l", "swing_r"]
    for r in out["rows"]:
        assert r["slack"] <= SLACK_LIMIT and r["per_robot_slack"] <= 1e-3
        assert r["residual"] <= RESIDUAL_LIMIT
    assert out["worst_residual"] <= RESIDUAL_LIMIT

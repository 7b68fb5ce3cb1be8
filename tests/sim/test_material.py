"""The excavation scene and the delivered-mass metric (rbc.sim.material; docs/excavation.md)."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest

from rbc.backends.mjcf_export import export_mjcf
from rbc.model.compiled import CompiledModel
from rbc.sim.material.delivery import (
    BED,
    CARRIED,
    DELIVERED,
    RELEASED,
    DeliveryRule,
    delivery,
)
from rbc.sim.material.scene import Bed, Bucket, Scene, SceneError

RULE = DeliveryRule(bed_top=0.3, clearance=0.1, settle_speed=0.05, settle_time=0.2)
DT = 0.01  # s: sample spacing of the synthetic tracks
T = np.arange(0.0, 3.0 + DT / 2, DT)


def track(phases: list[tuple[float, float, bool, bool, float]]) -> tuple[np.ndarray, ...]:
    """One particle's (T, 1) tracks from phases ``(until [s], height [m], in bucket, in
    region, speed [m/s])``, each holding from the previous phase's end."""
    z, b, r, v = (np.zeros((T.size, 1)) for _ in range(4))
    start = 0
    for until, height, bucket, region, speed in phases:
        stop = int(np.searchsorted(T, until - 1e-9, side="right"))
        z[start:stop], b[start:stop], r[start:stop], v[start:stop] = height, bucket, region, speed
        start = stop
    return z, v, b.astype(bool), r.astype(bool)


def run(*particles) -> object:
    z, v, b, r = (np.hstack([p[i] for p in particles]) for i in range(4))
    return delivery(T, z, v, b, r, RULE, particle_mass=2.5)


# the phases of a good cycle: in the bed, scooped, lifted, dumped, falling, at rest in the bin
LIFT_AND_DUMP = [(0.5, 0.05, False, False, 0.0), (0.8, 0.2, True, False, 0.3),
                 (1.5, 1.5, True, False, 0.5), (1.8, 1.0, False, False, 2.0)]


def test_lifted_released_settled_in_the_region_is_delivered():
    res = run(track(LIFT_AND_DUMP + [(3.01, 0.05, False, True, 0.01)]))
    assert res.delivered.tolist() == [True] and res.mass == 2.5
    # the state sequence: bed, carried, released, delivered after 0.2 s at rest
    assert res.states[0, 0] == BED and res.states[int(1.0 / DT), 0] == CARRIED
    assert res.states[int(1.6 / DT), 0] == RELEASED
    assert res.first_delivery == pytest.approx(1.8 + RULE.settle_time, abs=DT)


def test_pushed_never_lifted_does_not_count():
    # pushed off the bed along the floor into the region, at rest there
    pushed = track([(1.0, 0.05, False, False, 0.8), (3.01, 0.05, False, True, 0.0)])
    # scooped along inside the bucket but never above the bed's top + clearance
    scooped = track([(1.0, 0.05, False, False, 0.0), (2.0, 0.35, True, False, 0.5),
                     (3.01, 0.05, False, True, 0.0)])
    res = run(pushed, scooped)
    assert not res.delivered.any() and res.mass == 0.0 and not res.ever_carried.any()
    assert res.counts["bed"] == 2


def test_lifted_and_dropped_outside_does_not_count():
    res = run(track(LIFT_AND_DUMP + [(3.01, 0.05, False, False, 0.0)]))
    assert res.mass == 0.0 and res.states[-1, 0] == RELEASED and res.ever_carried[0]


def test_not_settled_or_still_in_the_bucket_does_not_count():
    moving = track(LIFT_AND_DUMP + [(3.01, 0.05, False, True, 0.2)])  # sliding in the bin
    brief = track(LIFT_AND_DUMP + [(2.85, 0.05, False, True, 1.0),
                                   (3.01, 0.05, False, True, 0.0)])  # 0.15 s < settle time
    in_bucket = track(LIFT_AND_DUMP[:3] + [(3.01, 1.5, True, True, 0.0)])  # bucket over bin
    res = run(moving, brief, in_bucket)
    assert res.mass == 0.0
    assert res.states[-1].tolist() == [RELEASED, RELEASED, CARRIED]


def test_leaving_the_region_after_delivery_does_not_count():
    res = run(track(LIFT_AND_DUMP + [(2.3, 0.05, False, True, 0.0),
                                     (3.01, 0.05, False, False, 0.0)]))
    assert DELIVERED in res.states[:, 0] and res.states[-1, 0] == RELEASED and res.mass == 0.0


def test_mass_is_the_count_times_the_particle_mass():
    good = track(LIFT_AND_DUMP + [(3.01, 0.05, False, True, 0.0)])
    bad = track(LIFT_AND_DUMP + [(3.01, 0.05, False, False, 0.0)])
    res = run(good, bad, good, good)
    assert res.delivered.tolist() == [True, False, True, True] and res.mass == 3 * 2.5
    assert res.counts == {"bed": 0, "carried": 0, "released": 1, "delivered": 3}


def test_empty_tracks_and_bad_shapes():
    empty = np.zeros((T.size, 0))
    res = delivery(T, empty, empty, empty.astype(bool), empty.astype(bool), RULE, 1.0)
    assert res.mass == 0.0 and res.delivered.size == 0
    with pytest.raises(ValueError, match="tracks must all be"):
        delivery(T, np.zeros((3, 2)), np.zeros((3, 2)), np.zeros((3, 2), bool),
                 np.zeros((3, 2), bool), RULE, 1.0)


# ------------------------------------------------------------------------------ the scene


@pytest.fixture(scope="module")
def excavator(bundles):
    kin = CompiledModel.from_bundle(bundles["excavator"])
    exp = export_mjcf(kin, kin.partitions["default"])
    names = {b.name: exp.body_names[i] for i, b in enumerate(kin.record.bodies)}
    return kin, exp, names


SMALL = Bed(x=(5.0, 5.5), y=(-0.2, 0.2), layers=2, size=0.1, gap=0.02, jitter=0.005,
            density=1800.0)


def load(scene: Scene, excavator) -> tuple[mujoco.MjModel, mujoco.MjData]:
    _, exp, names = excavator
    m = mujoco.MjModel.from_xml_string(scene.edit(exp, names))
    d = mujoco.MjData(m)
    mujoco.mj_resetDataKeyframe(m, d, 0)
    return m, d


def test_scene_particles_mass_matches_the_declaration(excavator):
    scene = Scene(bed=SMALL)
    m, _ = load(scene, excavator)
    ids = [mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, f"scene.particle{i}")
           for i in range(scene.n_particles)]
    # 0.5 m / 0.12 m pitch → 4 (+ the gap at the end), 0.4 m → 3, two layers
    assert scene.n_particles == 4 * 3 * 2 and min(ids) > 0
    # MuJoCo's body masses against N ρ s³ (float32-free: MuJoCo stores mass in float64;
    # 1e-12 relative is the decimal round trip of the XML)
    assert m.body_mass[ids].sum() == pytest.approx(scene.total_mass, rel=1e-12)
    assert scene.total_mass == pytest.approx(24 * 1800.0 * 0.1 ** 3, rel=1e-12)


def test_scene_keeps_the_robot(excavator):
    kin, exp, names = excavator
    plain = mujoco.MjModel.from_xml_string(exp.to_string())
    m, d = load(Scene(bed=SMALL), excavator)
    # the robot's bodies, joints and keyframe come first and are unchanged
    assert np.array_equal(m.body_mass[: plain.nbody], plain.body_mass)
    assert np.array_equal(d.qpos[: plain.nq], exp.qpos)
    assert m.nq == plain.nq + 7 * Scene(bed=SMALL).n_particles
    assert m.neq == plain.neq


def test_scene_layout_is_seeded_and_does_not_overlap():
    a, b = Scene(bed=SMALL, seed=1).positions(), Scene(bed=SMALL, seed=1).positions()
    c = Scene(bed=SMALL, seed=2).positions()
    assert np.array_equal(a, b) and not np.array_equal(a, c)
    # axis-aligned cubes overlap only if they are closer than an edge along every axis
    gaps = np.abs(a[:, None, :] - a[None, :, :]).max(axis=-1) + 10 * np.eye(len(a))
    assert gaps.min() >= SMALL.size
    face = Bed(x=(5.0, 5.5), y=(-0.2, 0.2), layers=2, face_x=5.25)
    assert Scene(bed=face).positions()[:, 0].min() >= 5.25
    with pytest.raises(SceneError, match="jitter"):
        Bed(gap=0.01, jitter=0.01)


def test_bucket_boxes_and_contact_switch(excavator):
    _, _, names = excavator
    m, _ = load(Scene(bed=SMALL), excavator)
    bucket_id = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, names["bucket"])
    off, _ = load(Scene(bed=SMALL, bucket_contact=False), excavator)
    for name, *_ in Bucket().plates():
        g = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_GEOM, f"scene.bucket.{name}")
        assert m.geom_contype[g] == 2 and off.geom_contype[g] == 0
        assert m.geom_bodyid[g] == bucket_id
    # the cavity: the middle of the bucket is inside, the tip and a point behind the back
    # plate are not; its struck volume is the rated 1 m³ class
    bucket = Bucket()
    inside = bucket.inside(np.array([[0.8, 0.0, 0.3], [1.5, 0.0, 0.0], [0.8, 0.0, 0.7]]))
    assert inside.tolist() == [True, False, False]
    assert 0.8 < bucket.struck_volume < 1.0


# ---------------------------------------------------------------------------- the mission


def test_mission_waypoints_close_on_the_manifold_and_match_mujoco(excavator):
    """Two waypoints solved on the closure manifold; the bucket's tip and pitch read back
    from MuJoCo's export of the closed configuration (an independent forward kinematics)."""
    from dataclasses import replace

    from rbc.model.kinematics import residual
    from rbc.model.solve import resolve_targets, solve
    from rbc.sim.material.mission import CYLINDERS, Waypoint, solve_waypoints

    kin, _, names = excavator
    part = kin.partitions["default"]
    wps = (Waypoint(0.0, 0.0, home=True), Waypoint(4.0, 0.0, 7.0, 0.05, -80.0),
           Waypoint(8.0, 0.0, 5.0, 0.5, -146.0))
    lengths, res = solve_waypoints(kin, part, wps)
    assert np.abs(res).max() < 1e-9  # the least squares converges to round-off
    for w, x in zip(wps[1:], lengths[1:], strict=True):
        named = {**dict(zip(CYLINDERS, x, strict=True)), "slew": 0.0}
        q = solve(kin, part, resolve_targets(kin, part, named)).q
        assert np.abs(residual(kin, q)).max() < 1e-12  # closed (solver tolerance 1e-13)
        exp = export_mjcf(kin, replace(part, q_ref=q))
        m = mujoco.MjModel.from_xml_string(exp.to_string())
        d = mujoco.MjData(m)
        mujoco.mj_resetDataKeyframe(m, d, 0)
        mujoco.mj_forward(m, d)
        b = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, names["bucket"])
        R = d.xmat[b].reshape(3, 3)
        tip = d.xpos[b] + R @ [1.5, 0.0, 0.0]
        phi = np.degrees(np.arctan2(R[2, 0], R[0, 0]))
        # MuJoCo's float64 forward kinematics of the same configuration: round-off
        assert np.allclose([tip[0], tip[2], phi], [w.r, w.z, w.phi], atol=1e-9)


def test_mission_knots_stay_between_waypoints_and_rest_at_them():
    from rbc.sim.material.mission import Waypoint, knots

    wps = (Waypoint(0.0, 0.0), Waypoint(2.0, 1.0), Waypoint(3.0, 1.0), Waypoint(5.0, -0.5))
    lengths = np.array([[2.5, 3.5, 2.7], [2.3, 3.3, 2.9], [2.3, 3.3, 2.9], [2.6, 3.0, 2.1]])
    t, x = knots(wps, lengths, spacing=0.25)
    assert t[0] == 0.0 and t[-1] == 5.0 and np.all(np.diff(t) > 0)
    ends = np.column_stack([[w.slew for w in wps], lengths])
    for i in range(len(wps) - 1):
        seg = (t >= wps[i].t) & (t <= wps[i + 1].t)
        lo, hi = np.minimum(ends[i], ends[i + 1]), np.maximum(ends[i], ends[i + 1])
        assert np.all((x[seg] >= lo - 1e-15) & (x[seg] <= hi + 1e-15))
        assert np.allclose(x[t == wps[i + 1].t], ends[i + 1])
    # smoothstep: the first knot after a waypoint moves 3s² − 2s³ of the way (s = 1/8)
    s = 0.25 / 2.0
    assert x[1, 0] == pytest.approx(3 * s ** 2 - 2 * s ** 3)


# ----------------------------------------------------------------------------- the plant


def test_plant_on_the_scene_runs_the_simulate_loop(bundles, tmp_path):
    """rbc.sim.run drives the scene's plant unchanged: a 1 s hold at home with a small bed
    in front (the bucket never reaches it): the log is the robot's, the recorder samples
    every 10 ms, nothing is carried or delivered, the bed's MuJoCo mass is its declaration,
    and the robot tracks as on the plain MuJoCo backend."""
    from rbc.model.interfaces import port_values
    from rbc.sim.material.transfer import run_transfer
    from rbc.sim.run import SimOptions, prepare, simulate

    kin = CompiledModel.from_bundle(bundles["excavator"])
    home = {a.joint: float(v) for a, v in zip(
        kin.record.actuators, port_values(kin, kin.partitions["default"].q_ref), strict=True)}
    ref = tmp_path / "hold.yaml"
    ref.write_text("time: [0.0, 1.0]\njoints:\n" + "".join(
        f"  {j}: [{v!r}, {v!r}]\n" for j, v in home.items()))
    scene = Scene(bed=SMALL)
    r = run_transfer(bundles["excavator"], scene, ref)
    assert r["delivered_mass"] == 0.0 and r["delivery"]["ever_carried"] == 0
    assert r["bed_mass_mujoco"] == pytest.approx(r["bed_mass"], rel=1e-12)
    assert r["tracks"]["pos"].shape == (101, scene.n_particles, 3)
    assert r["lift_ok"] and r["clipped_steps"] == 0
    plain = simulate(prepare(bundles["excavator"], SimOptions(
        backend="mujoco", controller="pd+ff", reference=ref)))
    # the resting bed shares MuJoCo's constraint solve with the robot but never touches it:
    # the bucket tip's tracking agrees to round-off of the solver (1e-9 m of a 1e-5 m RMS)
    assert r["tracking_rms"]["bucket_tip"] == pytest.approx(
        plain.summary["tracking_rms"]["bucket_tip"], abs=1e-9)

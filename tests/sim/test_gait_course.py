"""The Go2 course (docs/supports.md, "The Go2 course"): swing bumps of support references,
the deterministic course generator, the committed course on the closure manifold and on the
rigid model, short executed prefixes on the three plants, and the plant-only perturbations
(--push, --friction)."""

from __future__ import annotations

from pathlib import Path

import mujoco
import numpy as np
import pytest
import yaml

from rbc.cli.main import main
from rbc.compiler import compile_to_file
from rbc.model.compiled import CompiledModel
from rbc.sim import gait_course
from rbc.sim.run import SimOptions, prepare, simulate
from rbc.sim.schedule import (
    ScheduleError,
    knots_from_document,
    lift_support_reference,
    load_support_knots,
    modal_feedforward,
    reference_gaps,
)
from rbc.sim.support_loads import support_loads
from tests.conftest import RECORDS

COURSE = RECORDS / "references/go2_course.yaml"
FEET = ("FL", "FR", "RL", "RR")


@pytest.fixture(scope="module")
def go2(tmp_path_factory) -> Path:
    h5 = tmp_path_factory.mktemp("go2course") / "go2.h5"
    compile_to_file(RECORDS / "go2.yaml", h5, all_modes=True)
    return h5


@pytest.fixture(scope="module")
def kin(go2: Path) -> CompiledModel:
    return CompiledModel.from_bundle(go2)


def test_swing_bump_lifts_released_supports_only(kin: CompiledModel) -> None:
    """`swing: {FL: h}` adds h·64 s³(1 − s)³ to FL's height between its lift-off and its
    touchdown switch, nothing while it is held, nothing on other feet."""
    doc = {"time": [0.0, 1.0, 2.0, 3.0],
           "modes": [{"time": 0.0, "mode": "FL+FR+RL+RR"}, {"time": 1.0, "mode": "FR+RL+RR"},
                     {"time": 2.0, "mode": "FL+FR+RL+RR"}],
           "swing": {"FL": 0.05, "FR": 0.02}}
    k = knots_from_document(doc, kin, "<test>")
    assert k.swings["FL"] == ((1.0, 2.0, 0.05),) and k.swings["FR"] == ()
    assert k.swing_lift("FL", 1.5) == pytest.approx(0.05, rel=1e-15)
    assert k.swing_lift("FL", 1.25) == pytest.approx(0.05 * 64 * 0.25**3 * 0.75**3)
    assert k.swing_lift("FL", 1.0) == k.swing_lift("FL", 2.0) == k.swing_lift("FL", 0.5) == 0
    assert k.swing_lift("FR", 1.5) == 0.0  # FR is held throughout


@pytest.mark.parametrize("swing, message", [
    ({"XX": 0.1}, "swing.XX: unknown support"),
    ({"FL": -0.1}, "swing.FL: expected a height"),
    ({"FL": "high"}, "swing.FL: expected a height"),
    ([0.1], "swing: expected a mapping"),
])
def test_bad_swing_keys(kin: CompiledModel, swing, message: str) -> None:
    doc = {"time": [0.0, 1.0], "modes": [{"time": 0.0, "mode": "FL+FR+RL+RR"}],
           "swing": swing}
    with pytest.raises(ScheduleError, match=message):
        knots_from_document(doc, kin, "<test>")


SHORT = (gait_course.Leg("stand", 0.3), gait_course.Leg("walk", 1.1, (0.03, 0, 0)),
         gait_course.Leg("trot", 1.1, (0.07, 0, 0.1)), gait_course.Leg("stand", 0.2))


def test_generator_is_deterministic_and_steps_to_new_places(kin: CompiledModel) -> None:
    """Two generations give the same document; every swing ends elsewhere than it began;
    on two feet the centre of mass is on the stance diagonal (a trot step's design)."""
    a, b = gait_course.course(kin, SHORT), gait_course.course(kin, SHORT)
    assert a == b
    modes = [m["mode"] for m in a["modes"]]
    assert {len(m.split("+")) for m in modes} == {2, 3, 4}
    knots = knots_from_document(a, kin, "<short>")
    t = knots.time
    for f in FEET:
        for t_off, t_on, _ in knots.swings[f]:
            i, j = int(np.flatnonzero(t == t_off)[0]), int(np.flatnonzero(t == t_on)[0])
            step = np.hypot(*(knots.supports[f][c][j] - knots.supports[f][c][i] for c in "xy"))
            assert step > 0.01  # [m] every foot lands at a new place


def test_committed_course_has_the_issue_s_transitions(kin: CompiledModel) -> None:
    """The shipped course: 26 s, ≥ 100 transitions between two-, three- and four-foot
    sets, forward, turning and sideways base motion, feet landing at new places."""
    k = load_support_knots(COURSE, kin)
    sizes = [len(kin.modes[m].supports) for m in k.schedule.modes]
    assert k.time[-1] == 26.0
    assert len(sizes) - 1 >= 100
    assert set(sizes) == {2, 3, 4}
    assert all(abs(a - b) in (1, 2) for a, b in zip(sizes, sizes[1:], strict=False))
    yaw = k.base["yaw"]
    assert np.ptp(yaw) > 1.0  # [rad] a turn of more than 57°
    # sideways: somewhere the base moves mostly along its own y axis between knots
    dx, dy = np.diff(k.base["x"]), np.diff(k.base["y"])
    heading = yaw[:-1]
    along = dx * np.cos(heading) + dy * np.sin(heading)
    across = -dx * np.sin(heading) + dy * np.cos(heading)
    assert np.sum(across) > 0.15  # [m] net sideways travel in the body frame
    assert np.sum(along) > 0.8  # [m] net forward travel
    # every touchdown ends a swing: feet put down = swings of the four feet
    downs = sum(max(0, b - a) for a, b in zip(sizes, sizes[1:], strict=False))
    assert sum(len(k.swings[f]) for f in FEET) == downs


@pytest.mark.slow
def test_committed_course_is_the_generator_s_output(kin: CompiledModel) -> None:
    """records/references/go2_course.yaml is exactly what `python -m rbc.sim.gait_course`
    writes (a regenerated file would differ otherwise)."""
    assert gait_course.course_text(kin) == COURSE.read_text(encoding="utf-8")


def test_course_prefix_is_closed_and_carried_by_unilateral_feet(kin: CompiledModel) -> None:
    """The first 4.4 s (walk and the first trot steps: 3- and 2-foot phases) lifted on the
    closure manifold: held feet at their anchors to the closure tolerance; on the rigid
    model under the pd+ff feedforward every stance foot pushes (f_n > 0) within its
    friction cone (|f_t|/f_n < μ = 0.8)."""
    k = load_support_knots(COURSE, kin)
    sref = lift_support_reference(kin, k, 0.02, 4.4)
    # module Newton stops at 1e-13 on ρ; a held foot's position follows to that order
    assert reference_gaps(sref) < 1e-10
    s = support_loads(sref, modal_feedforward(kin, sref)).summary()
    assert s["min_normal_force"] > 5.0
    assert s["max_friction_ratio"] < 0.8


def test_support_loads_match_the_stepping_reference_s_documented_figures(
        kin: CompiledModel) -> None:
    """Against the reduced plant's measured figures of docs/supports.md for
    go2_steps.yaml (≥ 16 N, ratio ≤ 0.54 on the rigid plant), over its first 2 s."""
    k = load_support_knots(RECORDS / "references/go2_steps.yaml", kin)
    sref = lift_support_reference(kin, k, 0.02, 2.0)
    s = support_loads(sref, modal_feedforward(kin, sref)).summary()
    assert 16.0 < s["min_normal_force"] < 25.0
    assert 0.3 < s["max_friction_ratio"] < 0.55
    assert s["max_acceleration_residual"] < 1e-6  # 3- and 4-foot modes are fully driven


def _prefix(go2: Path, backend: str, duration: float, **extra):
    prep = prepare(go2, SimOptions(backend=backend, controller="pd+ff", reference=COURSE,
                                   duration=duration, reference_dt=0.02, **extra))
    return simulate(prep)


@pytest.mark.parametrize("backend", ["pinocchio", pytest.param("mujoco",
                                                               marks=pytest.mark.slow),
                                     pytest.param("reduced", marks=pytest.mark.slow)])
def test_course_prefix_on_each_plant(go2: Path, backend: str) -> None:
    """The first 1.7 s (RL lifted at 1.1 s, put down 4.8 cm further forward at 1.55 s): two
    switches, the base within millimetres of the reference, RL anchored where it landed
    (≈ its new target)."""
    r = _prefix(go2, backend, 1.7)
    sm = r.summary["support_modes"]
    assert [s["to"] for s in sm["switches"]] == ["FL+FR+RR", "FL+FR+RL+RR"]
    assert r.summary.get("closure_fallbacks", 0) == 0
    assert sm["base_position_rms"] < {"reduced": 2e-3, "pinocchio": 2e-3, "mujoco": 6e-3}[
        backend]
    k = yaml.safe_load(COURSE.read_text())
    i = k["time"].index(1.55)
    target = np.array([k["supports"]["RL"][c][i] for c in "xy"])
    anchor = r.log["supports/RL/anchor"][-1]
    assert np.linalg.norm(anchor[:2] - target) < 6e-3  # [m] tracking error at touchdown
    assert np.linalg.norm(anchor[:2] - r.log["supports/RL/anchor"][100][:2]) > 0.01


def test_push_moves_the_plant_and_is_refused_where_it_cannot_act(go2: Path) -> None:
    """A 40 N lateral push for 0.1 s on Pinocchio moves the base sideways against the
    unpushed run; the summary lists it; the reduced plant refuses pushes."""
    base = _prefix(go2, "pinocchio", 0.5)
    push = _prefix(go2, "pinocchio", 0.5, push=("base=0,40,0@0.1+0.1",))
    dy = push.log["base/position"][:, 1] - base.log["base/position"][:, 1]
    assert np.allclose(dy[:100], 0.0, atol=1e-12)  # nothing before 0.1 s
    assert dy[200] > 1e-4  # [m] pushed to +y
    assert push.summary["pushes"] == [{"body": "base", "force": [0.0, 40.0, 0.0],
                                       "start": 0.1, "duration": 0.1}]
    with pytest.raises(Exception, match="applies no external forces"):
        _prefix(go2, "reduced", 0.1, push=("base=0,40,0@0.1+0.1",))


def test_pinocchio_push_is_the_centre_of_mass_point_force(kin: CompiledModel) -> None:
    """J_cᵀ f of the Pinocchio plant is the generalized force of f at the body's centre of
    mass: its virtual power τ·v equals f·ṗ_c with ṗ_c from central differences of the
    centre of mass's world position (an independent computation)."""
    from rbc.model.kinematics import body_poses
    from rbc.sim.backends.pinocchio import PinocchioBackend

    part = kin.partitions["default"]
    q = np.array(part.q_ref)
    rng = np.random.default_rng(7)
    b = PinocchioBackend(kin, part, q, np.zeros(kin.nv), 1e-3)
    body = kin.record.body_index()["FL_calf"]
    f = rng.normal(size=3)
    b.apply_force(body, f)
    tau = b._push_efforts()
    v = rng.normal(size=kin.nv)
    com = np.asarray(kin.record.bodies[body].com)
    eps = 1e-6
    p = [body_poses(kin, kin.integrate(q, s * eps * v))[body].act(com) for s in (1, -1)]
    assert tau @ b.tree.v_pin(v) == pytest.approx(f @ (p[0] - p[1]) / (2 * eps), rel=1e-8)


def test_friction_option_reaches_mujoco_s_contacts(go2: Path, tmp_path: Path) -> None:
    """--friction 0.5 sets the plant's support μ (the MJCF foot geoms) and the summary's μ;
    bad values exit 2."""
    r = _prefix(go2, "mujoco", 0.05, friction=0.5)
    assert {x["friction"] for x in r.summary["support_modes"]["supports"].values()} == {0.5}
    from rbc.backends.mjcf_export import export_mjcf
    from rbc.sim.mismatch import plant_model

    kin = CompiledModel.from_bundle(go2)
    m = mujoco.MjModel.from_xml_string(export_mjcf(plant_model(kin, friction=0.5),
                                                   kin.partitions["default"],
                                                   floor=0.0).to_string())
    feet = [mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_GEOM, g) for g in
            export_mjcf(kin, kin.partitions["default"], floor=0.0).support_geoms.values()]
    assert np.allclose(m.geom_friction[feet, 0], 0.5)
    for bad in (["--friction", "-1"], ["--push", "base=0,1@0+1"], ["--push", "nobody=0,1,0@0+1"]):
        code = main(["simulate", str(go2), "--backend", "mujoco", "--reference", str(COURSE),
                     "--duration", "0.01", *bad])
        assert code == 2


def test_with_plant_is_prepare_of_the_variant(go2: Path) -> None:
    """A variant taken from the nominal prepared run (the repro batch's shortcut) runs
    exactly as the variant prepared afresh: same plant, pushes, steps, hence the same log."""
    from rbc.sim.run import with_plant

    def opts(**extra):
        return SimOptions(backend="pinocchio", controller="pd+ff", reference=COURSE,
                          duration=0.3, reference_dt=0.02, **extra)

    variant = {"payload": (("base", 1.5),), "friction": 0.5, "push": ("base=0,30,0@0.1+0.1",),
               "dt": 5e-4, "control_dt": 1e-3}
    fresh = simulate(prepare(go2, opts(**variant)))
    derived = simulate(with_plant(prepare(go2, opts()), opts(**variant)))
    for key in ("q", "v", "control/effort", "base/position"):
        assert np.array_equal(fresh.log[key], derived.log[key]), key
    with pytest.raises(Exception, match="differ in bandwidth"):
        with_plant(prepare(go2, opts()), opts(bandwidth=3.0))

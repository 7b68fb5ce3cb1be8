"""Run time on changing supports (docs/supports.md): the impact map, support reactions,
mode schedules and their reference lift, switching plants on the three backends, and the
exported Go2 standing on its floor."""

from __future__ import annotations

from pathlib import Path

import mujoco
import numpy as np
import pinocchio as pin
import pytest

from rbc.backends.pinocchio import pinocchio_model
from rbc.compiler import compile_to_file
from rbc.model.compiled import CompiledModel
from rbc.model.dynamics import (
    DynamicsData,
    DynamicsModel,
    forward_dynamics,
    passive_efforts,
    reduced_terms,
    tree_terms,
)
from rbc.model.impact import impact_map
from rbc.model.kinematics import closure_jacobian
from rbc.model.modes import model_for
from rbc.model.partition import lift
from rbc.model.reactions import support_reactions
from rbc.sim.run import SimOptions, prepare, simulate
from rbc.sim.schedule import (
    FD_STEP,
    ScheduleError,
    _Inverse,
    lift_support_reference,
    load_support_knots,
    reference_gaps,
)
from rbc.verify.newton_euler import NewtonEuler
from tests.conftest import RECORDS

STEPS = RECORDS / "references/go2_steps.yaml"
STAND = RECORDS / "references/go2_stand.yaml"
ALL = "FL+FR+RL+RR"


@pytest.fixture(scope="module")
def go2(tmp_path_factory) -> Path:
    h5 = tmp_path_factory.mktemp("go2sim") / "go2.h5"
    compile_to_file(RECORDS / "go2.yaml", h5, all_modes=True)
    return h5


def _mode(h5: Path, name: str):
    base = CompiledModel.from_bundle(h5)
    mm = model_for(base, base.modes[name])
    dm = DynamicsModel.build(mm)
    return base, mm, mm.partitions[name], dm, DynamicsData.of(dm)


def test_impact_map_is_the_plastic_projection(go2: Path) -> None:
    """Touchdown on four feet from arbitrary speeds: the new constraints hold, momentum is
    kept in every admissible direction, the energy loss is ½ΔvᵀMΔv ≥ 0, and Pinocchio's own
    impulseDynamics (restitution 0) gives the same speeds; admissible speeds pass unchanged."""
    _, mm, part, dm, data = _mode(go2, ALL)
    q = part.q_ref
    vm = np.random.default_rng(3).standard_normal(mm.nv_tree)
    imp = impact_map(dm, data, part, q, vm)
    nt = mm.nv_tree
    C = closure_jacobian(mm, q)[1]
    assert np.abs(C @ imp.v).max() < 1e-12  # the supports hold after the impact
    M = tree_terms(dm, data, q, np.zeros(mm.nv)).M
    dv = imp.v[:nt] - vm
    ET = lift(mm, part, q).E[:nt]
    assert np.abs(ET.T @ M @ dv).max() < 1e-12  # no impulse along admissible directions
    assert imp.loss == pytest.approx(0.5 * dv @ M @ dv, rel=1e-12) and imp.loss > 0
    # Pinocchio's impulse dynamics, contacts on the foot side (joint1) against the world
    pmod = pinocchio_model(mm, part)
    t = pmod.tree
    models = pin.StdVec_RigidConstraintModel([pin.RigidConstraintModel(
        pin.ContactType.CONTACT_3D, t.model, s.joint2, s.placement2, s.joint1, s.placement1,
        pin.ReferenceFrame.LOCAL) for s in pmod.specs])
    cds = pin.StdVec_RigidConstraintData([c.createData() for c in models])
    pd = t.model.createData()
    pin.initConstraintDynamics(t.model, pd, models, cds)
    vp = pin.impulseDynamics(t.model, pd, t.q_pin(q[: mm.nq_tree]), t.v_pin(vm), models, cds,
                             0.0, pin.ProximalSettings(1e-14, 1e-12, 200))
    # two algorithms in double precision on a 18-dof system: agreement to ~1e-12
    assert np.abs(t.v_rbc(vp) - imp.v[:nt]).max() < 1e-10
    again = impact_map(dm, data, part, q, imp.v[:nt])
    assert again.loss == pytest.approx(0.0, abs=1e-12)
    np.testing.assert_allclose(again.v, imp.v, atol=1e-12)


def test_support_reactions_three_ways(go2: Path) -> None:
    """The ground's wrench on each stance foot: rbc's dependent equations, the maximal-
    coordinate Newton–Euler model's support rows and Pinocchio's constraintDynamics agree;
    a point foot carries no moment about itself."""
    _, mm, part, dm, data = _mode(go2, "FL+FR+RL")
    q = part.q_ref
    rng = np.random.default_rng(1)
    u, f = rng.uniform(-1, 1, part.independent.size), rng.uniform(-5, 5, 12)
    terms = reduced_terms(dm, data, part, q, u, f)
    ours = support_reactions(dm, data, q, terms, forward_dynamics(dm, terms))
    ne = NewtonEuler.build(dm).reactions(q, terms.v, f)
    from rbc.sim.backends.pinocchio import PinocchioBackend

    plant = PinocchioBackend(mm, part, q, terms.v, 1e-3)
    tau = -plant.damping * plant.v
    tau += plant.Pv.T @ f  # the port map (tendon-capable) in Pinocchio order
    # the plant's efforts have no Coulomb friction: give the reference the same loads
    coul = passive_efforts(dm, q, terms.v)[1]
    assert np.any(coul)
    pin.constraintDynamics(plant.model, plant.data, plant.q, plant.v, tau, plant.pmod.constraints,
                           plant.cdatas, plant.prox)
    pins = plant.support_wrenches(mm.supports)
    for name in mm.supports:
        w = ours[name]
        scale = max(1.0, np.abs(w).max())
        assert np.abs(w - ne[f"{name}.support"]).max() < 1e-9 * scale
        assert np.abs(w[:3]).max() < 1e-9 * scale  # point contact: no moment
    # Pinocchio without Coulomb friction vs ours without it
    bare = replace_friction(dm, data, part, q, u, f)
    for name in mm.supports:
        assert np.abs(pins[name] - bare[name]).max() < 1e-8 * max(1.0, np.abs(bare[name]).max())


def replace_friction(dm, data, part, q, u, f):
    """Support reactions with the record's Coulomb friction removed (the Pinocchio plant
    applies damping but not friction)."""
    from dataclasses import replace

    k = dm.kin
    rec = replace(k.record, joints=tuple(replace(j, friction=0.0) for j in k.record.joints))
    mm = replace(k, record=rec)
    dm2 = DynamicsModel(mm, dm.tree, dm.augmented)
    terms = reduced_terms(dm2, data, part, q, u, f)
    return support_reactions(dm2, data, q, terms, forward_dynamics(dm2, terms))


@pytest.mark.parametrize(("text", "message"), [
    ("time: [0, 1]\n", "expected a mapping with `time` and `modes`"),
    ("time: [0, 1]\nmodes: [{time: 0, mode: trot}]\n", "stores no mode 'trot'"),
    ("time: [0, 1]\nmodes: [{time: 0.5, mode: FL+FR+RL+RR}]\n", "first entry must be at"),
    ("time: [0, 1, 2]\nmodes: [{time: 0, mode: FL+FR+RL+RR}, {time: 0.5, mode: FR+RL+RR}]\n",
     "is not a knot time"),
    ("time: [0, 1]\nmodes: [{time: 0, mode: FL+FR+RL+RR}]\nsupports: {FL: {z: [0, 0.1]}}\n",
     "supports.FL.z moves between 0 s and 1 s while mode FL+FR+RL+RR holds FL"),
    ("time: [0, 1]\nmodes: [{time: 0, mode: FL+FR+RL+RR}]\nsupports: {LF: {z: [0, 0]}}\n",
     "supports.LF: unknown support"),
    ("time: [0, 1]\nmodes: [{time: 0, mode: FL+FR+RL+RR}]\nbase: {height: [0, 0]}\n",
     "base.height: unknown component"),
    ("time: [0, 1]\nmodes: [{time: 0, mode: FL+FR+RL+RR}]\nbase: {z: [0]}\n",
     "base.z: expected a list of 2 finite numbers"),
])
def test_bad_schedules(go2: Path, tmp_path: Path, text: str, message: str) -> None:
    f = tmp_path / "ref.yaml"
    f.write_text(text)
    with pytest.raises(ScheduleError) as info:
        load_support_knots(f, CompiledModel.from_bundle(go2))
    assert message in str(info.value) and str(f) in str(info.value)


def test_reference_lift_is_exact_on_the_manifolds(go2: Path) -> None:
    """The lifted Go2 step reference: held feet stay at their anchors in every segment's
    mode, and the analytic speeds and accelerations (moving anchors) match central
    differences of the closed configurations."""
    model = CompiledModel.from_bundle(go2)
    knots = load_support_knots(STEPS, model)
    sref = lift_support_reference(model, knots, 0.05, 1.5)
    assert reference_gaps(sref) < 1e-12
    # grid 0.05 s; switches take effect at their times, 0.9 s and 1.4 s
    assert list(sref.mode[[0, 17, 18, 27, 28]]) == [0, 0, 1, 1, 2]
    inv = _Inverse(knots, model)
    h = 1e-3  # FD check step: truncation h⁴·x⁽⁵⁾ ≲ 1e-8, round-off 1e-13/h² = 1e-7
    for i in (5, 12, 22):  # inside segments (not at a knot, where x⃛ jumps)
        t = sref.ref.time[i]
        q = np.concatenate([sref.ref.q[i], np.zeros(inv.ik.nq - model.nq)])
        for k in range(len(model.kinds), len(inv.ik.kinds)):
            q[inv.ik.q_slice(k)] = inv.ik.kinds[k].neutral()
        q = inv.close(q, t)
        phi = [model.difference(q[: model.nq], inv.close(q, t + j * h)[: model.nq])
               for j in (-2, -1, 1, 2)]
        v = (phi[0] - 8 * phi[1] + 8 * phi[2] - phi[3]) / (12 * h)
        a = (-phi[0] + 16 * phi[1] + 16 * phi[2] - phi[3]) / (12 * h * h)
        assert np.abs(v - sref.ref.v[i]).max() < 1e-7
        assert np.abs(a - sref.ref.a[i]).max() < 1e-5 * max(1.0, np.abs(a).max())
    assert FD_STEP < h


@pytest.mark.parametrize("backend", ["reduced", "pinocchio", "mujoco"])
def test_one_foot_lifted_and_replaced(go2: Path, backend: str) -> None:
    """The first 1.5 s of the step reference (4 → 3 → 4 feet, FL lifted 5 cm) on each plant:
    two switches, base within millimetres of the reference, feet held, the weight carried."""
    prep = prepare(go2, SimOptions(backend=backend, controller="pd+ff", reference=STEPS,
                                   duration=1.5, reference_dt=0.02))
    r = simulate(prep)
    sm = r.summary["support_modes"]
    assert [(s["from"], s["to"]) for s in sm["switches"]] == [(ALL, "FR+RL+RR"),
                                                            ("FR+RL+RR", ALL)]
    assert r.summary.get("closure_fallbacks", 0) == 0
    # MuJoCo's 22 mm foot spheres roll when the legs turn (≈ 3 mm over the base shift); the
    # rigid plants hold the foot centres exactly (reduced) or to Baumgarte drift (pinocchio)
    limit = {"reduced": 2e-3, "pinocchio": 1e-3, "mujoco": 5e-3}[backend]
    assert sm["base_position_rms"] < limit
    held = ("FR", "RL", "RR")  # never lifted
    slip = max(sm["supports"][n]["max_slip"] for n in held)
    assert slip < {"reduced": 1e-10, "pinocchio": 1e-4, "mujoco": 6e-3}[backend]
    if backend == "pinocchio":
        # FL touches down on the floor (docs/supports.md, "touchdown on the floor"): its
        # anchor is at the height the feet stood at t = 0, and its slip is the landing gap
        # the Baumgarte corrector closes (the base has drifted 1 mm while FL swung)
        z0 = r.log["supports/FL/position"][0, 2]
        assert abs(r.log["supports/FL/anchor"][-1, 2] - z0) < 1e-12
        assert sm["supports"]["FL"]["max_slip"] < 2e-3
    else:
        assert sm["supports"]["FL"]["max_slip"] < {"reduced": 1e-10, "mujoco": 6e-3}[backend]
    weight = 9.81 * sum(b.mass for b in prep.kin.record.bodies)
    # standing still on four feet (0.1 s – 0.3 s): the ground carries the weight on average
    # (momentum balance ∫(Σ f_z − m g) dt = Δp_z ≈ 0); single samples jitter by a few N on
    # the reduced plant, whose Coulomb joint friction flips sign at the joints' tiny speeds
    fz = sum(r.log[f"supports/{n}/wrench"][100:301, 5] for n in ("FL", "FR", "RL", "RR"))
    assert fz.mean() == pytest.approx(weight, rel=0.01)
    assert np.isnan(r.log["supports/FL/wrench"][1100, 0])  # t = 1.1 s: FL in the air
    if backend != "mujoco":
        loss = sm["switches"][1]["impact_loss"]
        # a lift-off transfers admissible speeds unchanged: exactly on the reduced plant, up
        # to the Baumgarte drift of the feet (~1e-9 J) on Pinocchio's
        assert loss >= 0 and sm["switches"][0]["impact_loss"] == pytest.approx(
            0, abs=1e-12 if backend == "reduced" else 1e-6)
        assert sm["impact_losses"] == pytest.approx(loss)
    if backend == "reduced":  # the ledger counts the impact; the works are integrated with
        # the motion, so the rest is dopri5's local error (2.3e-11 J over the 5.6 s run)
        assert r.summary["energy_ledger_residual"] < 1e-8


def test_exported_go2_stands_on_its_floor(go2: Path, tmp_path: Path) -> None:
    """`rbc compile --mjcf` writes a floor and the four foot spheres (μ, condim, elliptic
    cones); on MuJoCo with native contact, PD+FF keeps the base within 5 mm for 5 s."""
    from rbc.cli.main import main

    xml = tmp_path / "go2.xml"
    assert main(["compile", str(RECORDS / "go2.yaml"), "-o", str(tmp_path / "g.h5"), "--mjcf",
                 str(xml)]) == 0
    m = mujoco.MjModel.from_xml_path(str(xml))
    floor = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_GEOM, "floor")
    assert m.geom_type[floor] == mujoco.mjtGeom.mjGEOM_PLANE
    assert m.opt.cone == mujoco.mjtCone.mjCONE_ELLIPTIC
    for foot in ("FL", "FR", "RL", "RR"):
        g = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_GEOM, foot)
        assert m.geom_type[g] == mujoco.mjtGeom.mjGEOM_SPHERE and m.geom_size[g][0] == 0.022
        assert m.geom_friction[g][0] == 0.8 and m.geom_condim[g] == 3
    r = simulate(prepare(go2, SimOptions(backend="mujoco", controller="pd+ff", reference=STAND,
                                         reference_dt=0.1)))
    sm = r.summary["support_modes"]
    assert r.summary["duration"] == 5.0 and sm["base_position_max_error"] < 5e-3


def _raised(text: str, dz: float, free_until: float | None = None) -> str:
    """go2_steps.yaml with every height raised by dz (a floor at z = dz) and, if asked, a
    free-flight phase first: released at rest 5 mm above that floor, a knot at
    ``free_until`` (the fall time) where the standing reference begins."""
    import yaml

    doc = yaml.safe_load(text)
    series = [doc["base"]] + list(doc["supports"].values())
    for s in series:
        s["z"] = [z + dz for z in s["z"]]
    if free_until is not None:
        doc["time"].insert(1, free_until)
        for s in series:
            for x in s.values():
                x.insert(1, x[0])
            s["z"][0] += 0.005
        doc["modes"] = [{"time": 0.0, "mode": "free"},
                        {"time": free_until, "mode": ALL}] + doc["modes"][1:]
    return yaml.safe_dump(doc)


@pytest.mark.parametrize("free_until", [None, 0.032])
def test_native_floor_is_where_the_reference_stands(go2: Path, tmp_path: Path,
                                                    free_until) -> None:
    """MuJoCo's floor (rbc.sim.switching.floor_level) under the foot spheres of the first
    supported mode: at the initial state, or — when the run starts in free flight — at the
    reference's state when the feet first touch down (it was z = 0 whatever the reference)."""
    from rbc.sim.schedule import lift_support_reference, load_support_knots
    from rbc.sim.switching import floor_level

    model = CompiledModel.from_bundle(go2)
    f = tmp_path / "raised.yaml"
    f.write_text(_raised(STEPS.read_text(), 0.5, free_until))
    sref = lift_support_reference(model, load_support_knots(f, model), 0.05, 1.0)
    q0 = sref.ref.q[0]
    # the foot centres are planned 0.022 m (their radius) above the floor at z = 0.5; the
    # closure holds them to 1e-12, so the level is 0.5 to round-off
    assert floor_level(model, sref, q0) == pytest.approx(0.5, abs=1e-9)


@pytest.mark.parametrize("free_until", [None, 0.032])
def test_auto_floor_is_the_first_modes_contact_or_refused(go2: Path, tmp_path: Path,
                                                          free_until) -> None:
    """ModalPlant's floor="auto" (rbc.sim.switching.auto_floor): the first mode's contact
    level at q0 when the schedule starts on supports — floor_level's value there —, and a
    UsageError naming the modes when it starts in free flight (it took z = 0 before, under
    a reference planned at z = 0.5)."""
    from rbc.errors import UsageError
    from rbc.sim.schedule import lift_support_reference, load_support_knots
    from rbc.sim.switching import auto_floor, floor_level

    model = CompiledModel.from_bundle(go2)
    f = tmp_path / "raised.yaml"
    f.write_text(_raised(STEPS.read_text(), 0.5, free_until))
    sref = lift_support_reference(model, load_support_knots(f, model), 0.05, 1.0)
    q0 = sref.ref.q[0]
    if free_until is None:
        # the same function of the same state: equal to round-off
        assert auto_floor(model, sref.schedule, q0) == pytest.approx(
            floor_level(model, sref, q0), abs=1e-12)
    else:
        with pytest.raises(UsageError, match="starts in mode 'free' without supports"):
            auto_floor(model, sref.schedule, q0)


def test_drop_from_free_flight_lands_on_the_planned_floor(go2: Path, tmp_path: Path) -> None:
    """End to end on MuJoCo: released 5 mm above a floor planned at z = 0.5 m (free fall
    √(2h/g) = 32 ms), the robot lands on it (with the floor at z = 0 it fell half a metre:
    base errors of decimetres)."""
    f = tmp_path / "raised.yaml"
    f.write_text(_raised(STEPS.read_text(), 0.5, 0.032))
    prep = prepare(go2, SimOptions(backend="mujoco", controller="pd+ff", reference=f,
                                   duration=0.6, reference_dt=0.02))
    r = simulate(prep)
    # measured 7.2 mm (the touchdown transient on the soft sphere contacts); with the floor
    # at z = 0 the robot fell through its reference: 389 mm
    assert r.summary["support_modes"]["base_position_rms"] < 2e-2

"""Engine plants of composed modes (rbc.compose.plant; docs/composition.md "Plants"): the
Pinocchio plant against the composed model's forward dynamics and wrench recovery at
closed states, its energy ledger, the MuJoCo plants, and the CLI contract."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

from rbc.cli.main import main
from rbc.compose.dynamics import MemberModel, composed_terms, forward_dynamics
from rbc.compose.plant import (
    ComposedMujoco,
    ComposedPinocchio,
    chart_coordinates,
    ideal_record_model,
    lifted_speeds,
)
from rbc.compose.wrenches import chord_wrenches
from rbc.model.dynamics import DynamicsData
from rbc.model.partition import lift
from rbc.sim.run import SimOptions, prepare, simulate
from rbc.verify.composition import composed_states
from tests.compose.conftest import PAIR, composed_text


#: The pair of tests/compose/conftest.py placed so that all four soles touch one floor
#: (v1 and v2 stand 27.8 mm and −11.6 mm from the pair's 0.93 m: z from their anchors),
#: with a mode of the two floating while holding hands.
def _edited(text: str, *pairs: tuple[str, str]) -> str:
    for old, new in pairs:
        assert text.count(old) == 1, old  # the pair's text changed: edit FLOOR_PAIR
        text = text.replace(old, new)
    return text


FLOOR_PAIR = _edited(PAIR, ("name: pair", "name: floor_pair"),
                     ("[0, 0.45, 0.93]", "[0, 0.45, 0.9578]"),
                     ("[0, -0.45, 0.93]", "[0, -0.45, 0.9184]"),
                     ("{name: free, supports: [], links: none}", "{name: float, supports: []}"))


@pytest.fixture(scope="module")
def floor_pair(members_dir):
    return composed_text(str(members_dir), "floor_pair", FLOOR_PAIR)


def _rel(a, b) -> float:
    return float(np.abs(a - b).max() / max(1.0, np.abs(b).max()))


def test_chart_coordinates_at_closed_states(pair):
    """The cut-joint charts read from body poses give back a closed configuration's own
    (ball quaternions, revolute angles): exact up to round-off."""
    _, comp = pair
    md = comp.mode("stand")
    k = comp.model(md)
    for s in composed_states(comp, md, 2, seed=3)[0]:
        q = s.q.copy()
        for e in k.chord_edges:  # forget every chart
            if k.kinds[e].nq:
                q[k.q_slice(e)] = k.kinds[e].neutral()
        # 1e-12: trigonometric round-off of the pose products on a closed state
        assert np.abs(chart_coordinates(k, q) - s.q).max() < 1e-12
        # the speeds of the sparse solve are the lift's (the same algebra; round-off)
        assert _rel(lifted_speeds(k, md.partition, s.q, s.u),
                    lift(k, md.partition, s.q).E @ s.u) < 1e-12


def test_pinocchio_plant_accelerations_and_wrenches(pair):
    """At closed states with random speeds and efforts, the Pinocchio plant's tree
    accelerations equal the composed model's (member-wise terms, forward dynamics, no
    Coulomb friction — the ideal plant has none) and its sole and hand-link constraint
    forces equal the composed wrench recovery."""
    _, comp = pair
    md = comp.mode("stand")
    k = comp.model(md)
    plant = ComposedPinocchio(k, md.partition, md.partition.q_ref, np.zeros(k.nv), 1e-3,
                              composed=(comp, md))
    mm = MemberModel.of(ideal_record_model(k), comp.members, md.level2)
    data = DynamicsData.of(mm.dm)
    t = plant.inner.tree
    worst_a = worst_w = 0.0
    for s in composed_states(comp, md, 3, seed=11)[0]:
        terms = composed_terms(mm, data, s.q, s.u, s.f)
        udot = forward_dynamics(terms, s.u, s.f, coulomb=False)
        a_ref = (terms.lift.E @ udot + terms.edu)[: k.nv_tree]
        plant.inner.set_state(s.q, terms.v)
        a = t.v_rbc(plant.inner.evaluate(s.f))
        worst_a = max(worst_a, _rel(a, a_ref))
        ref = chord_wrenches(mm, data, terms, udot, s.f).by_name()
        sup, links = plant.wrenches(s.f)
        scale = max(np.abs(w).max() for w in ref.values())
        for n in md.supports:
            worst_w = max(worst_w, np.abs(sup[n] - ref[n + ".support"]).max() / scale)
        for n in md.links:  # a ball link: the force, no moment
            worst_w = max(worst_w, np.abs(links[n] - ref[n]).max() / scale)
    # δ_a ≤ 1e-9: the KKT solve of the closed state in double precision (proximal accuracy
    # 1e-13 on the constraint rows; the rotor inertias of up to 32 kg against 0.1 kg rods
    # put the condition number near 1e6) and the Baumgarte terms of a closure residual of
    # 1e-13 (Kp·1e-13 = 4e-11 m/s²); measured ≤ 5.7e-12 on three states
    assert worst_a < 1e-9
    # wrenches: the same KKT solve; relative to the largest chord wrench
    assert worst_w < 1e-8


def test_pinocchio_plant_passive_ledger(members_dir, pair):
    """A passive 20 ms run on the Pinocchio plant: the energy ledger's residual is the
    semi-implicit Euler step's (first order in h: ten times smaller at a tenth of the step)
    and the Baumgarte correction's work; the wrenches balance the weight."""
    res = [simulate(prepare(members_dir / "pair.h5", SimOptions(
        backend="pinocchio", controller="passive", duration=0.02, dt=dt, control_dt=1e-3)))
        for dt in (1e-3, 1e-4)]
    r1, r2 = (r.summary["energy_ledger_residual"] for r in res)
    assert 7.0 < r1 / r2 < 13.0  # first order: the ratio of the steps, 10
    assert res[1].summary["energy_ledger_relative"] < 1e-2
    s = res[0].summary
    assert s["plant"] == "ideal" and s["backend"] == "pinocchio"
    assert s["max_loop_gap"] < 1e-5  # Baumgarte holds the loops to micrometres
    comp = s["composition"]
    assert comp["unbalanced"] is None and set(comp["links"]) == {"hands"}
    # the first logged wrenches are the reactions at the initial state (rest, no effort)
    _, c = pair
    md = c.mode("stand")
    k = c.model(md)
    mm = MemberModel.of(ideal_record_model(k), c.members, md.level2)
    data = DynamicsData.of(mm.dm)
    u = np.zeros(md.partition.independent.size)
    f = np.zeros(len(k.record.actuators))
    terms = composed_terms(mm, data, md.partition.q_ref, u, f)
    ref = chord_wrenches(mm, data, terms, forward_dynamics(terms, u, f, coulomb=False),
                         f).by_name()
    log = res[0].log
    for n in md.supports:  # 1e-8 of the 230 N sole loads: the KKT solve, as above
        assert np.abs(log[f"supports/{n}/wrench"][0] - ref[n + ".support"]).max() < 1e-6
    assert np.abs(log["links/hands/wrench"][0] - ref["hands"]).max() < 1e-6


def test_cli_plant_errors(members_dir, pair, tmp_path, capsys):
    """Combinations that do not apply exit 2 with a message and no output."""
    pair = str(members_dir / "pair.h5")
    plain = str(members_dir / "humanoid_v1.h5")
    cases = [
        ([pair, "--backend", "pinocchio", "--plant", "realistic"], "--plant realistic"),
        ([pair, "--backend", "mujoco", "--plant", "real"], "valid: ideal, realistic"),
        ([pair, "--backend", "mujoco", "--seed", "3"], "--seed"),
        ([pair, "--backend", "mujoco", "--plant", "realistic", "--seed", "-1"], "--seed -1"),
        ([pair, "--plant", "ideal"], "--plant"),
        ([plain, "--backend", "mujoco", "--plant", "ideal"], "--plant"),
        ([pair, "--backend", "mujoco"], "one floor"),
    ]
    for args, needle in cases:
        out = tmp_path / "out"
        code = main(["simulate", *args, "--controller", "passive", "--duration", "0.002",
                     "--out", str(out)])
        err = capsys.readouterr().err
        assert code == 2, args
        assert needle in " ".join(err.split()), (args, err)
        assert not out.exists()


def test_cli_pinocchio_json(members_dir, pair, capsys):
    code = main(["simulate", str(members_dir / "pair.h5"), "--backend", "pinocchio",
                 "--controller", "passive", "--duration", "0.003", "--json"])
    assert code == 0
    s = json.loads(capsys.readouterr().out)
    assert s["plant"] == "ideal" and s["physics_steps"] == 3
    assert set(s["composition"]["supports"]) == {"h1/sole_l", "h1/sole_r", "h2/sole_l",
                                                 "h2/sole_r"}


def _qacc_error(comp, mode: str, seed: int, welded: bool) -> list[float]:
    """MuJoCo's qacc (contacts and joint limits off, ctrl = f) against the composed
    model's accelerations mapped to MuJoCo's speeds, ``P a + Ṗ v`` (Ṗ v by a centred
    difference of P along v), relative 2-norm, at closed states with random speeds and
    efforts. ``welded``: the whole mode model exported (soles as weld equalities to the
    world) instead of the contact plant's links model."""
    import mujoco

    from rbc.sim.backends.mujoco import MujocoBackend

    md = comp.mode(mode)
    k = comp.model(md)
    ideal = ideal_record_model(k)
    mm = MemberModel.of(ideal, comp.members, md.level2)
    data = DynamicsData.of(mm.dm)
    out, eps = [], 1e-6
    for s in composed_states(comp, md, 2, seed=seed)[0]:
        terms = composed_terms(mm, data, s.q, s.u, s.f)
        a = terms.lift.E @ forward_dynamics(terms, s.u, s.f, coulomb=False) + terms.edu
        if welded:
            inner = MujocoBackend(ideal, replace(md.partition, q_ref=s.q), s.q, terms.v, 1e-3,
                                  floor=None)
        else:
            inner = ComposedMujoco(k, md.partition, s.q, terms.v, 1e-3,
                                   composed=(comp, md)).inner
        ke, m, d, exp = inner.plant, inner.m, inner.d, inner.exp
        m.opt.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_CONTACT) | int(
            mujoco.mjtDisableBit.mjDSBL_LIMIT)  # the random states may pass joint limits
        inner.set_state(s.q, terms.v)
        d.ctrl[:] = s.f
        mujoco.mj_forward(m, d)
        v = terms.v[: ke.nv]
        Pdv = (exp.velocity_map(ke, ke.integrate(s.q, eps * v))
               - exp.velocity_map(ke, ke.integrate(s.q, -eps * v))) @ v / (2 * eps)
        pred = exp.velocity_map(ke, s.q) @ a[: ke.nv] + Pdv
        out.append(float(np.linalg.norm(d.qacc - pred) / np.linalg.norm(pred)))
    return out


def test_mujoco_free_flight_qacc(floor_pair):
    """The pair holding hands in free flight (mode ``float``: the members' loops and the
    hand link as MuJoCo equalities): MuJoCo's qacc equals the composed model's."""
    # 1e-7: the equalities' reference acceleration on the closure residual of the drawn
    # state (solref 2·dt: stiffness ~1/(2 dt)² = 2.5e5 s⁻² on ~1e-13 m) and the
    # regularisation of the solve; measured 2e-10 - 2.3e-9 at 1 ms
    assert max(_qacc_error(floor_pair, "float", 5, welded=False)) < 1e-7


def test_mujoco_welded_qacc(floor_pair):
    """The stand mode exported whole (soles welded to the world by weld equalities):
    MuJoCo's qacc against the composed model's, within the regularisation of welds that
    carry the robots' weight and the random efforts."""
    # 5e-2: MuJoCo's largest impedance d = 0.9999 (solimp; it clamps above) regularises
    # every constraint force by (1 − d)/d = 1e-4 of its effective mass, and the welds carry
    # forces up to 1e3 times the accelerations' scale here; the error grows tenfold at
    # d = 0.999 (measured 1.0e-2 - 1.2e-2 at d = 0.9999, 1.1e-1 at 0.999), so it is the
    # regularisation, not a frame or sign (those give O(1))
    assert max(_qacc_error(floor_pair, "stand", 5, welded=True)) < 5e-2


def test_mujoco_pair_stands(members_dir, floor_pair):
    """The pair stands 0.2 s on the ideal MuJoCo plant (frictional sole contacts) under the
    allocation controller holding the reference stance: the pelvises stay within 5 mm of
    their start, every sole carries load after the first sample and the hand link holds."""
    res = simulate(prepare(members_dir / "floor_pair.h5", SimOptions(
        backend="mujoco", controller="allocation", duration=0.2, control_dt=2e-3)))
    s, log = res.summary, res.log
    assert s["plant"] == "ideal" and s["allocation"]["slack_max"] < 1e-9
    assert not s["warnings"]  # the soles are on one floor
    for n in ("h1/pelvis", "h2/pelvis"):
        p = log[f"tasks/{n}/position"]
        assert np.abs(p - p[0]).max() < 5e-3, n
    for n in floor_pair.mode("stand").supports:
        fn = log[f"supports/{n}/wrench"][1:, 5]
        assert fn.min() > 50.0, n  # of about 280 N each
        # the summary tells the samples out of contact (t = 0, before the contact engages)
        # from the loaded ones: its smallest normal force over the contact samples is theirs
        x = s["composition"]["supports"][n]
        w = log[f"supports/{n}/wrench"][:, 5]
        assert x["contactless_samples"] == int((w == 0.0).sum())
        assert x["min_contact_normal_force"] == pytest.approx(w[w != 0.0].min(), rel=1e-12)
    assert s["max_loop_gap"] < 1e-4


def _engine(comp, mode: str, realism=None) -> ComposedMujoco:
    md = comp.mode(mode)
    k = comp.model(md)
    return ComposedMujoco(k, md.partition, md.partition.q_ref, np.zeros(k.nv), 1e-3,
                          composed=(comp, md), realism=realism)


def test_realistic_friction_and_drives(floor_pair):
    """The ideal MJCF has no dry friction; the realistic one has the record's drive Coulomb
    friction on every port coordinate and the bearing friction on every passive one, and
    its drives give full effort up to half the no-load speed, then the line to zero."""
    from rbc.compose.plant import Realism
    from rbc.sim.drives import Drives

    ideal = _engine(floor_pair, "stand")
    assert not np.any(ideal.inner.m.dof_frictionloss)
    r = Realism()
    real = _engine(floor_pair, "stand", r)
    m, exp, k = real.inner.m, real.inner.exp, real.inner.plant
    import mujoco

    driven = {}
    for a in k.record.actuators:
        driven[a.joint] = a.coulomb
    for j in k.record.joints:
        if j.type in ("fixed", "spherical") or k.edge(j.name) in k.chord_edges:
            continue  # no 1-dof MuJoCo joint of its own (balls: three dofs; cuts: equalities)
        jid = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, exp.joint_name(k.edge(j.name)))
        if jid < 0:
            continue  # merged into a ball or re-rooted
        want = driven.get(j.name, r.bearing_linear if j.type == "prismatic"
                          else r.bearing_rotary)
        assert m.dof_frictionloss[m.jnt_dofadr[jid]] == pytest.approx(want), j.name
    drives = Drives.of(k.record)
    lo, hi = real.inner.ctrl_lo, real.inner.ctrl_hi
    peak = hi
    speed = np.array([a.speed_limit for a in k.record.actuators])
    assert np.all(drives.lag == 0.002)
    for frac, share in ((0.0, 1.0), (0.3, 1.0), (0.5, 1.0), (0.75, 0.5), (1.0, 0.0)):
        c = 1e3 * peak  # a saturated command, the drive state settled on it
        f, _ = drives.efforts(c[drives.lagged], c, frac * speed)
        f = np.clip(f, lo, hi)
        np.testing.assert_allclose(f, share * peak, rtol=1e-12, atol=1e-9 * peak.max())


def test_realistic_measurement_noise(floor_pair):
    """At a fixed state, repeated measurements scatter with the issue's standard
    deviations on the independent coordinates (rotary 0.1 mrad and 10 mrad/s, screws
    5 µm and 1 mm/s, base pose 0.25 mm / 0.25 mrad and twist 5 mm/s / 5 mrad/s), zero
    mean; the same seed repeats the draws, another seed does not."""
    from rbc.compose.plant import Realism

    md = floor_pair.mode("stand")
    k = floor_pair.model(md)
    names = ["h1/waist", "h1/pelvis.root.wx", "h1/pelvis.root.vz", "h1/elbow_screw_l"]
    cols = [int(np.flatnonzero(md.partition.independent == k.v_names.index(n))[0])
            for n in names]
    want_v = np.array([1e-2, 5e-3, 5e-3, 1e-3])
    plant = _engine(floor_pair, "stand", Realism(seed=4))
    n = 400
    u = np.array([plant.measure().v[md.partition.independent][cols] for _ in range(n)])
    # 400 draws: the sample deviation is within 3 standard errors (σ/√(2n) ≈ 3.5 %) of σ
    np.testing.assert_allclose(u.std(axis=0), want_v, rtol=0.15)
    assert np.all(np.abs(u.mean(axis=0)) < 4 * want_v / np.sqrt(n))
    waist = k.q_offset[k.edge("h1/waist")]
    q = np.array([plant.measure().q[waist] for _ in range(n)]) - md.partition.q_ref[waist]
    assert q.std() == pytest.approx(1e-4, rel=0.15)
    a = _engine(floor_pair, "stand", Realism(seed=4)).measure().v
    b = _engine(floor_pair, "stand", Realism(seed=4)).measure().v
    c = _engine(floor_pair, "stand", Realism(seed=5)).measure().v
    assert np.array_equal(a, b) and not np.array_equal(a, c)


@pytest.mark.slow
def test_realistic_pair_stands(members_dir, floor_pair):
    """The pair stands 0.3 s on the realistic plant under allocation (friction
    uncompensated, lag, noise): pelvises within 1 cm, soles loaded."""
    res = simulate(prepare(members_dir / "floor_pair.h5", SimOptions(
        backend="mujoco", plant="realistic", controller="allocation", duration=0.3,
        control_dt=2e-3)))
    s, log = res.summary, res.log
    assert s["plant"] == "realistic" and "drives" in s
    for n in ("h1/pelvis", "h2/pelvis"):
        p = log[f"tasks/{n}/position"]
        assert np.abs(p - p[0]).max() < 1e-2, n
    for n in floor_pair.mode("stand").supports:
        assert log[f"supports/{n}/wrench"][1:, 5].min() > 50.0, n


@pytest.mark.slow
def test_ring_stands_on_mujoco(members_dir, ring):
    """Five humanoids in a ring, holding hands, stand on the ideal MuJoCo plant under the
    allocation controller holding the reference stance (issue #20 item 3): no pelvis moves
    more than 1 cm, every sole stays loaded, the allocation is exact. 0.25 s here (about
    2 min at load; the whole second, run by rbc simulate and reported in
    docs/composition.md, took 292 s wall: pelvises within 19 µm)."""
    _, comp = ring
    res = simulate(prepare(members_dir / "ring.h5", SimOptions(
        backend="mujoco", controller="allocation", duration=0.25, control_dt=2e-3)))
    s, log = res.summary, res.log
    assert s["allocation"]["slack_max"] < 1e-9
    for m in comp.members:
        p = log[f"tasks/{m.name}/pelvis/position"]
        assert np.abs(p - p[0]).max() < 1e-2, m.name
    for n in comp.mode("stand").supports:
        assert log[f"supports/{n}/wrench"][1:, 5].min() > 50.0, n


def test_mujoco_plant_warns_off_the_floor(pair):
    """Built directly (the API; rbc simulate refuses it), the MuJoCo plant of a mode whose
    soles are at different heights says so in its warnings."""
    _, comp = pair
    plant = _engine(comp, "stand")
    assert plant.warnings and "one floor" in plant.warnings[0]

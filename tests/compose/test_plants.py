"""Engine plants of composed modes (rbc.compose.plant; docs/composition.md "Plants"): the
Pinocchio plant against the composed model's forward dynamics and wrench recovery at
closed states, its energy ledger, the MuJoCo plants, and the CLI contract."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import numpy as np
import pytest

from rbc.cli.main import main
from rbc.compose.dynamics import MemberModel, composed_terms, forward_dynamics
from rbc.compose.plant import ComposedPinocchio, chart_coordinates, ideal_record_model
from rbc.compose.wrenches import chord_wrenches
from rbc.model.dynamics import DynamicsData
from rbc.sim.run import SimOptions, prepare, simulate
from rbc.verify.composition import composed_states
from tests.compose.conftest import _composed

#: The pair of tests/compose/conftest.py placed so that all four soles touch one floor
#: (v1 and v2 stand 27.8 mm and −11.6 mm from the pair's 0.93 m: z from their anchors).
FLOOR_PAIR = """\
rbc_composition: 1
name: floor_pair
members:
  - {name: h1, bundle: humanoid_v1.h5, placement: {xyz: [0, 0.45, 0.9578]}}
  - {name: h2, bundle: humanoid_v2.h5, placement: {xyz: [0, -0.45, 0.9184]}}
links:
  - {name: hands, type: ball, a: {member: h1, body: forearm_r, frame: palm},
     b: {member: h2, body: forearm_l, frame: palm}}
modes:
  - {name: stand, supports: [h1.sole_l, h1.sole_r, h2.sole_l, h2.sole_r]}
"""


@functools.cache
def _floor_pair(directory: str):
    d = Path(directory)
    (d / "floor_pair.yaml").write_text(FLOOR_PAIR)
    return _composed(directory, "floor_pair")[1]


@pytest.fixture(scope="module")
def floor_pair(members_dir):
    return _floor_pair(str(members_dir))


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


def test_cli_plant_errors(members_dir, tmp_path, capsys):
    """Combinations that do not apply exit 2 with a message and no output."""
    pair = str(members_dir / "pair.h5")
    plain = str(members_dir / "humanoid_v1.h5")
    cases = [
        ([pair, "--backend", "pinocchio", "--plant", "realistic"], "--plant realistic"),
        ([pair, "--backend", "mujoco", "--plant", "real"], "valid: ideal, realistic"),
        ([pair, "--backend", "mujoco", "--seed", "3"], "--seed"),
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


def test_cli_pinocchio_json(members_dir, capsys):
    code = main(["simulate", str(members_dir / "pair.h5"), "--backend", "pinocchio",
                 "--controller", "passive", "--duration", "0.003", "--json"])
    assert code == 0
    s = json.loads(capsys.readouterr().out)
    assert s["plant"] == "ideal" and s["physics_steps"] == 3
    assert set(s["composition"]["supports"]) == {"h1/sole_l", "h1/sole_r", "h2/sole_l",
                                                 "h2/sole_r"}

"""``rbc simulate`` on composed bundles (docs/composition.md, "Simulation"): the energy
ledger, the hand-link and sole wrenches against a second recovery, a composition of one
robot against the robot's own bundle, and the CLI contract (errors exit 2, --json)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from rbc.cli.main import main
from rbc.compiler import compile_to_file
from rbc.model.compiled import CompiledModel
from rbc.model.modes import model_for
from rbc.model.partition import lift
from rbc.sim.backends.reduced import ReducedBackend
from rbc.sim.run import SimOptions, prepare, simulate
from tests.compose.conftest import HUMANOID, composed_text

#: One humanoid at the world origin (its own frame), both soles down, and floating.
SOLO = """\
rbc_composition: 1
name: one_humanoid
members:
  - {name: h1, bundle: humanoid_v1.h5}
modes:
  - {name: stand, supports: [h1.sole_l, h1.sole_r]}
  - {name: free, supports: []}
"""


@pytest.fixture(scope="module")
def solo(members_dir):
    return composed_text(str(members_dir), "one_humanoid", SOLO)


def _run(bundle: Path, **options):
    return simulate(prepare(bundle, SimOptions(**options)))


def _reference(path: Path, comp, mode: str) -> Path:
    """A 0.04 s reference moving two shoulders of each member by 0.05 rad from q_ref."""
    md = comp.modes[mode]
    k = comp.model(md)
    names = [k.v_names[int(j)] for j in md.partition.independent
             if k.v_names[int(j)].endswith(("shoulder_pitch_l", "shoulder_yaw_r"))]
    q0 = [md.partition.q_ref[k.q_offset[k.edge(n)]] for n in names]
    rows = [f"0,{','.join(f'{x:.17g}' for x in q0)}",
            f"0.04,{','.join(f'{x + 0.05:.17g}' for x in q0)}"]
    path.write_text("time," + ",".join(names) + "\n" + "\n".join(rows) + "\n")
    return path


def test_passive_pair_ledger_and_wrenches(members_dir, pair):
    """Passive pair standing and holding hands, 20 ms: the ledger closes (the integration
    error only) and the logged hand and sole wrenches are the plant's own support reactions
    (rbc.model.reactions.support_reactions, the one-level recovery) and balance gravity."""
    _, comp = pair
    res = _run(members_dir / "pair.h5", controller="passive", duration=0.02)
    s = res.summary
    # dopri5 at rtol 1e-9: the ledger is the integration error, far below 1e-8 of the
    # largest energy term (measured 1.1e-11)
    assert s["energy_ledger_relative"] < 1e-8
    assert s["max_loop_gap"] < 1e-12  # the projection closes every step to 1e-13
    assert set(s["composition"]["links"]) == {"hands"}
    assert s["composition"]["unbalanced"] < 1e-9
    log = res.log
    n = log["time"].size
    for key in ("links/hands/wrench", "supports/h1/sole_l/wrench"):
        assert log[key].shape == (n, 6) and np.all(np.isfinite(log[key]))
    # at t = 0 (at rest) the supports carry the weight minus the inertial forces; the
    # second recovery on the plant itself at the same state must give the same wrenches
    md = comp.modes["stand"]
    kin = comp.model(md)
    plant = ReducedBackend(kin, md.partition, md.partition.q_ref, np.zeros(kin.nv), 1e-3)
    ref = plant.support_wrenches(md.supports)
    for name, w in ref.items():
        got = log[f"supports/{name}/wrench"][0]
        # two minimum-norm recoveries of the same equations: round-off of ~300 N wrenches
        assert np.abs(got - w).max() <= 1e-9 * np.abs(w).max(), name


def test_composed_accelerations_equal_the_plant(members_dir, pair):
    """Member-wise forward dynamics (the wrench log's) equal the plant's integrated
    right-hand side along a moving pd+ff run (composer lift and member-wise terms vs the
    one-level reduced terms), and the ledger closes with the actuators working."""
    from rbc.compose.dynamics import composed_terms, forward_dynamics, member_model
    from rbc.model.dynamics import DynamicsData

    _, comp = pair
    ref = _reference(members_dir / "pair_ref.csv", comp, "stand")
    prep = prepare(members_dir / "pair.h5", SimOptions(reference=ref, duration=0.02))
    res = simulate(prep)
    s = res.summary
    # ledger: dopri5's integration error (rtol 1e-9), now with actuator work (measured
    # 5e-10 relative)
    assert s["energy_ledger_relative"] < 1e-8
    assert s["work_actuators"] != 0.0
    md = comp.modes["stand"]
    kin = comp.model(md)
    mm = member_model(comp, "stand")
    data = DynamicsData.of(mm.dm)
    for i in (0, 10, 20):
        q, v = res.log["q"][i], res.log["v"][i]
        f = res.log["control/effort"][min(i, 19)]
        plant = ReducedBackend(kin, md.partition, q, v, 1e-3)
        plant._hold_coulomb()  # the Coulomb direction the next step holds: sign(v)
        want = plant.rhs(plant.y, f)[plant.n: 2 * plant.n]
        u = v[md.partition.independent]
        got = forward_dynamics(composed_terms(mm, data, q, u), u, f)
        # two algorithms (member-wise vs projected tree terms) on the same state: Γ is
        # conditioned ~1e4 (screw drives' 32 kg against light arms), so 1e-9 relative
        assert np.abs(got - want).max() <= 1e-9 * np.abs(want).max()


def _by_name(kin: CompiledModel, prefix: str = "") -> dict[str, slice]:
    return {kin.edge_names[e][len(prefix):]: kin.q_slice(e) for e in range(len(kin.edge_names))
            if kin.edge_names[e].startswith(prefix)}


def test_solo_free_equals_the_robots_own_bundle(members_dir, solo):
    """A composition of one floating humanoid (mode free: no supports, no links) simulates
    exactly as the humanoid's own bundle with its own partition."""
    opts = {"controller": "passive", "duration": 0.02}
    comp_run = _run(members_dir / "one_humanoid.h5", mode="free", **opts)
    own = _run(members_dir / "humanoid_v1.h5", **opts)
    kin_c = solo.model(solo.modes["free"])
    kin_o = CompiledModel.from_bundle(members_dir / "humanoid_v1.h5")
    sc, so = _by_name(kin_c, "h1/"), _by_name(kin_o)
    assert set(sc) == set(so)
    for name, sl in so.items():
        # the same equations, coordinates and steps: round-off only
        np.testing.assert_allclose(comp_run.log["q"][-1][sc[name]], own.log["q"][-1][sl],
                                   rtol=0, atol=1e-12, err_msg=name)
    assert comp_run.summary["physics_steps"] == own.summary["physics_steps"]
    assert comp_run.summary["composition"]["supports"] == {}


def test_solo_stand_equals_the_robots_own_mode(members_dir, solo, tmp_path):
    """The composed stand mode of one humanoid and the humanoid compiled with the same
    support mode (rbc compile --modes stand=sole_l,sole_r) give the same accelerations of
    every coordinate (each with its own partition) at a moving state with efforts."""
    own = tmp_path / "h1_modes.h5"
    compile_to_file(HUMANOID / "humanoid_v1.yaml", own, modes=(("stand", ("sole_l",
                                                                           "sole_r")),))
    base = CompiledModel.from_bundle(own)
    kin_o = model_for(base, base.modes["stand"])
    part_o = base.modes["stand"].partition
    md = solo.modes["stand"]
    kin_c = solo.model(md)
    q_c = md.partition.q_ref
    rng = np.random.default_rng(7)
    v_c = lift(kin_c, md.partition, q_c).E @ (0.3 * rng.standard_normal(
        md.partition.independent.size))
    sc, so = _by_name(kin_c, "h1/"), _by_name(kin_o)
    q_o = np.empty(kin_o.nq)
    for name, sl in so.items():
        q_o[sl] = q_c[sc[name]]
    vc = {kin_c.v_names[j][3:]: j for j in range(kin_c.nv)}
    perm = np.array([vc[n] for n in kin_o.v_names])  # own coordinate i is composed perm[i]
    f = 5.0 * rng.standard_normal(len(kin_c.record.actuators))
    acc = []
    for p in (ReducedBackend(kin_c, md.partition, q_c, v_c, 1e-3, evaluator="reference"),
              ReducedBackend(kin_o, part_o, q_o, v_c[perm], 1e-3, evaluator="reference")):
        p._hold_coulomb()
        udot = p.rhs(p.y, f)[p.n: 2 * p.n]
        t = p._terms(p.q, p.u, f)
        acc.append(t.lifted.E @ udot + t.edu)
    a_c, a_o = acc
    # two partitions of the same mode model: the accelerations of every coordinate agree to
    # the conditioning of the two lifts (1e-9 relative)
    np.testing.assert_allclose(a_c[perm], a_o, rtol=0, atol=1e-9 * np.abs(a_o).max())


@pytest.mark.parametrize("args", [
    ["--backend", "mujoco", "--controller", "passive", "--duration", "0.01"],
    ["--fix-root", "--controller", "passive", "--duration", "0.01"],
    ["--partition", "default", "--controller", "passive", "--duration", "0.01"],
    ["--mode", "sit", "--controller", "passive", "--duration", "0.01"],
])
def test_cli_refusals_exit_2(members_dir, pair, args, capsys, tmp_path):
    out = tmp_path / "run"
    code = main(["simulate", str(members_dir / "pair.h5"), *args, "--out", str(out)])
    assert code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.strip()
    assert not out.exists()


def test_cli_mode_on_plain_bundle_exit_2(members_dir, capsys):
    code = main(["simulate", str(members_dir / "humanoid_v1.h5"), "--mode", "stand",
                 "--controller", "passive", "--duration", "0.01"])
    assert code == 2
    assert "not a composed bundle" in capsys.readouterr().err


def test_cli_json_and_outputs(members_dir, pair, capsys, tmp_path):
    out = tmp_path / "run"
    code = main(["simulate", str(members_dir / "pair.h5"), "--controller", "passive",
                 "--duration", "0.005", "--json", "--out", str(out)])
    assert code == 0
    doc = json.loads(capsys.readouterr().out)
    c = doc["composition"]
    assert c["mode"] == "stand" and set(c["links"]) == {"hands"}
    assert set(c["supports"]) == {"h1/sole_l", "h1/sole_r", "h2/sole_l", "h2/sole_r"}
    for x in c["supports"].values():
        assert x["min_normal_force"] > 0 and x["tensile_samples"] == 0
        # the reduced plant's soles are closures: always in contact
        assert x["contactless_samples"] == 0
        assert x["min_contact_normal_force"] == x["min_normal_force"]
        assert 0 <= x["max_friction_ratio"] < x["friction"]
    import h5py

    with h5py.File(out / "log.h5") as h5:
        assert h5["links/hands/wrench"].shape == (6, 6)
        assert h5.attrs["composed_mode"] == "stand"
    assert (out / "wrenches.png").exists()


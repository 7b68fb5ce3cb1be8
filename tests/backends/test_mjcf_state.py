"""MuJoCo qpos back to rbc coordinates (rbc.backends.mjcf_state): the inverse of the export's
``qpos_of`` on every tree joint kind — hinge, slide, universal, ball (body-frame
conjugation), planar, free root and a gimbal ball that replaced three revolutes through
massless bodies — at seeded random tree configurations."""

from __future__ import annotations

import numpy as np
import pytest

from rbc.backends.mjcf_export import export_mjcf
from rbc.backends.mjcf_state import tree_configuration
from rbc.compiler import compile_to_file
from rbc.ir import spatial as sp
from rbc.model.compiled import CompiledModel
from tests.conftest import RECORDS

MIXED = """rbc: 1
name: mixed
gravity: [0, 0, -9.81]
bodies:
  - {name: base, floating: true, mass: 2.0, com: [0, 0, 0], inertia: [0.1, 0.2, 0.3, 0, 0, 0]}
  - {name: g1, mass: 0}
  - {name: g2, mass: 0}
  - {name: tip, mass: 0.5, com: [0.1, 0.02, 0], inertia: [0.002, 0.003, 0.004, 0, 0, 0]}
  - {name: puck, mass: 0.3, com: [0, 0, 0], inertia: [0.001, 0.001, 0.001, 0, 0, 0]}
joints:
  - {name: s1, type: revolute, parent: base, child: g1, axis: [1, 0, 0],
     parent_frame: {xyz: [0.4, 0, 0], rpy: [0.3, 0, 0]}}
  - {name: s2, type: revolute, parent: g1, child: g2, axis: [0, 1, 0]}
  - {name: s3, type: revolute, parent: g2, child: tip, axis: [0, 0, 1],
     child_frame: {xyz: [0.05, 0, 0]}}
  - {name: P, type: planar, parent: base, child: puck, parent_frame: {rpy: [0.2, -0.1, 0.4]},
     initial: [0.1, 0.2, 0.3]}
"""

#: The map is exact joint by joint (a copy, a 3×3 conjugation, or a Gauss–Newton split
#: converged to 1e-13 rad): round-off of a few rotations.
TOL = 1e-11


def _compiled(tmp_path, name: str, text: str | None = None) -> CompiledModel:
    src = RECORDS / f"{name}.yaml"
    if text is not None:
        src = tmp_path / f"{name}.yaml"
        src.write_text(text)
    compile_to_file(src, tmp_path / f"{name}.h5")
    return CompiledModel.from_bundle(tmp_path / f"{name}.h5")


def _random_tree_q(model: CompiledModel, rng: np.random.Generator) -> np.ndarray:
    """A configuration with every tree coordinate moved (quaternions: random rotations)."""
    q = np.array(model.partitions["default"].q_ref, dtype=float)
    for k in model.tree_edges:
        sl = model.q_slice(k)
        n = sl.stop - sl.start
        j = model.edge_joints[k]
        if j.type == "spherical":
            q[sl] = sp.quat_from_rotation(sp.exp3(rng.uniform(-1, 1, 3)))
        elif j.type == "free":
            q[sl] = np.concatenate([rng.uniform(-1, 1, 3),
                                    sp.quat_from_rotation(sp.exp3(rng.uniform(-1, 1, 3)))])
        elif j.type == "planar":
            x, y, th = rng.uniform(-1, 1, 3)
            q[sl] = [x, y, np.cos(th), np.sin(th)]
        elif n:
            q[sl] += rng.uniform(-0.3, 0.3, n)
    return q


def _same_tree(model: CompiledModel, a: np.ndarray, b: np.ndarray) -> float:
    """Largest difference over the tree coordinates (a quaternion and its negative agree)."""
    err = 0.0
    for k in model.tree_edges:
        sl = model.q_slice(k)
        x, y = a[sl], b[sl]
        if model.edge_joints[k].type == "spherical":
            err = max(err, min(np.abs(x - y).max(), np.abs(x + y).max()))
        elif model.edge_joints[k].type == "free":
            err = max(err, np.abs(x[:3] - y[:3]).max(),
                      min(np.abs(x[3:] - y[3:]).max(), np.abs(x[3:] + y[3:]).max()))
        elif x.size:
            err = max(err, float(np.abs(x - y).max()))
    return err


@pytest.mark.parametrize("name", ["stewart", "fourbar", "excavator", "mixed"])
def test_tree_configuration_inverts_qpos_of(tmp_path, name):
    model = _compiled(tmp_path, name, MIXED if name == "mixed" else None)
    part = model.partitions["default"]
    exp = export_mjcf(model, part)
    if name == "mixed":
        assert any(mj.group for mj in exp.order)  # the gimbal was merged into a ball
        assert {model.edge_joints[k].type for k in model.tree_edges} >= {"free", "planar"}
    rng = np.random.default_rng(20261201)
    for _ in range(5):
        q = _random_tree_q(model, rng)
        back = tree_configuration(model, exp, exp.qpos_of(model, q), part.q_ref)
        assert _same_tree(model, back, q) <= TOL
        cut = [i for k in model.chord_edges for i in range(*model.q_slice(k).indices(model.nq))]
        assert np.array_equal(back[cut], np.asarray(part.q_ref)[cut])  # not in qpos: kept


def test_wrong_length_is_refused(tmp_path):
    model = _compiled(tmp_path, "fourbar")
    exp = export_mjcf(model, model.partitions["default"])
    for n in (exp.qpos.size + 1, exp.qpos.size - 1):  # too long, and short on a joint border
        with pytest.raises(ValueError, match="qpos has"):
            tree_configuration(model, exp, np.zeros(n), model.partitions["default"].q_ref)


@pytest.mark.parametrize("name", ["stewart", "excavator", "mixed"])
def test_readback_speeds_invert_the_velocity_map(tmp_path, name):
    """TreeReadback.speeds solves ``P v = qvel`` block by block (copies, a ball's body-frame
    rotation, a free root's ``[ṗ; ω]``, a planar rotation, a gimbal's three columns): the
    speeds that made qvel come back, and equal the whole map's sparse solve (map_solve)."""
    from rbc.backends.mjcf_state import TreeReadback
    from rbc.sim.backends.mujoco import map_solve

    model = _compiled(tmp_path, name, MIXED if name == "mixed" else None)
    exp = export_mjcf(model, model.partitions["default"])
    rb = TreeReadback.of(model, exp)
    assert rb.exact and rb.nq == exp.qpos.size
    rng = np.random.default_rng(20261202)
    tree = np.concatenate([np.arange(model.nv)[model.v_slice(k)] for k in model.tree_edges])
    for _ in range(5):
        q = _random_tree_q(model, rng)
        v = np.zeros(model.nv)
        v[tree] = rng.uniform(-1, 1, tree.size)
        P = exp.velocity_map(model, q)
        qvel = P @ v
        back = rb.speeds(q, qvel)
        # a 3 × 3 or 6 × 6 solve per joint against a sparse LU of the whole map: round-off
        np.testing.assert_allclose(back, v, rtol=0, atol=1e-13)
        np.testing.assert_allclose(back, map_solve(P, qvel), rtol=0, atol=1e-13)


def test_readback_keeps_the_quaternion_side(tmp_path):
    """A ball or free joint read back from −q's MuJoCo quaternion keeps the fallback's
    side (the same rotation either way; continuity from one readback to the next)."""
    from rbc.backends.mjcf_state import TreeReadback

    model = _compiled(tmp_path, "mixed", MIXED)
    exp = export_mjcf(model, model.partitions["default"])
    q = _random_tree_q(model, np.random.default_rng(3))
    qpos = exp.qpos_of(model, q)
    mj, r, _ = next(x for x in TreeReadback.of(model, exp).joints if x[0].type == "free")
    qpos[r + 3: r + 7] *= -1.0  # the same root orientation, the other side
    back = tree_configuration(model, exp, qpos, q)
    sl = model.q_slice(mj.edge)
    np.testing.assert_allclose(back[sl], q[sl], rtol=0, atol=1e-14)

"""`rbc import mjcf`: real models (Cassie, Kangaroo) and a feature model, checked against MuJoCo."""

from __future__ import annotations

from pathlib import Path

import mujoco
import numpy as np
import pytest
import yaml

from rbc.backends.mjcf_import import import_mjcf, iter_bodies_qpos0, load_mujoco
from rbc.ir import spatial
from rbc.ir.record import Record
from tests.backends.util import import_and_compile, pose, run_import, tree_poses
from tests.conftest import EXTERNAL
from tests.passes.util import front_file

# Relative agreement of inertias with MuJoCo: MuJoCo diagonalises every inertia (eigen
# solver, ~1e-15 per sweep) and stores float64; 1e-12 leaves margin for the round trip.
INERTIA_RTOL = 1e-12
# Positions computed through two different float64 chains of a few transforms [m].
POSE_ATOL = 1e-12

FEATURES = """
<mujoco model="features">
  <compiler angle="degree" eulerseq="zyx" autolimits="true"/>
  <option gravity="0 0 -9.8"/>
  <default>
    <joint damping="0.5"/>
    <geom contype="0" conaffinity="0"/>
    <default class="arm">
      <joint armature="0.01" range="-90 90"/>
      <default class="stiff">
        <joint stiffness="3" springref="10"/>
        <geom contype="1" type="box" size="0.01 0.02 0.03"/>
      </default>
    </default>
  </default>
  <worldbody>
    <site name="origin_mark" pos="0 0 0.1"/>
    <body name="base" pos="0 0 1" euler="10 20 30" childclass="arm">
      <inertial pos="0.01 0 0" quat="0.9 0.1 0.2 0.3" mass="2" diaginertia="0.03 0.02 0.015"/>
      <joint name="j1" type="hinge" axis="0 1 1" ref="15"/>
      <geom class="stiff" pos="0 0 0.1" axisangle="1 0 0 30"/>
      <body name="link" pos="0.3 0 0" xyaxes="0 1 0 -1 0 0">
        <inertial pos="0 0 0.05" mass="1" fullinertia="0.01 0.012 0.008 0.001 -0.0005 0.0002"/>
        <joint name="j2a" class="stiff" pos="0 0 0.05" axis="1 0 0"/>
        <joint name="j2b" type="slide" axis="0 0 1" ref="0.02"/>
        <site name="tip" pos="0 0 0.2" zaxis="1 1 0"/>
        <body name="ball" pos="0 0 0.2" zaxis="0 0 -1">
          <inertial pos="0 0 0" mass="0.5" diaginertia="0.001 0.001 0.001"/>
          <joint name="j3" type="ball" pos="0 0 0.01" range="0 60"/>
          <body name="welded" pos="0.1 0 0" axisangle="0 0 1 45">
            <inertial pos="0 0 0" mass="0.1" diaginertia="0.0001 0.0001 0.0001"/>
          </body>
        </body>
      </body>
    </body>
    <body name="other" pos="0.5 0 1">
      <inertial pos="0 0 0" mass="1" diaginertia="0.01 0.01 0.01"/>
      <joint name="j4" axis="0 0 1" range="-1 1" limited="false"/>
    </body>
  </worldbody>
  <equality>
    <connect name="loop" body1="welded" body2="other" anchor="0.05 0.01 0"/>
    <weld body1="other" body2="base"/>
    <joint joint1="j4" joint2="j1" polycoef="0.1 2 0 0 0"/>
  </equality>
  <actuator>
    <motor joint="j1" gear="10" ctrlrange="-2 2"/>
    <position joint="j2a" kp="50" forcerange="-5 5"/>
    <general joint="j4" gear="3" gainprm="2" ctrlrange="-1 1"/>
  </actuator>
  <keyframe>
    <key name="first" qpos="0.1 0.2 0.03 1 0 0 0 0.4"/>
    <key name="home" qpos="0.3 -0.2 0.01 0.9238795325112867 0 0.3826834323650898 0 -0.5"/>
  </keyframe>
</mujoco>
"""


def _mass_properties_agree(xml: Path, rec: dict) -> int:
    model, _ = load_mujoco(xml)
    bodies = {b["name"]: b for b in rec["bodies"]}
    checked = 0
    for bid in range(1, model.nbody):
        b = bodies[mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_BODY, bid)]
        assert b.get("mass", 0.0) == pytest.approx(model.body_mass[bid], rel=INERTIA_RTOL)
        if model.body_mass[bid] == 0.0:
            continue
        np.testing.assert_allclose(b["com"], model.body_ipos[bid], rtol=0, atol=POSE_ATOL)
        R = spatial.rotation_from_quat(model.body_iquat[bid])
        ref = R @ np.diag(model.body_inertia[bid]) @ R.T
        ixx, iyy, izz, ixy, ixz, iyz = b["inertia"]
        mine = np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])
        assert np.abs(mine - ref).max() <= INERTIA_RTOL * np.abs(ref).max(), b["name"]
        checked += 1
    return checked


def _poses_agree_with_mujoco(xml: Path) -> None:
    model, _ = load_mujoco(xml)
    data = mujoco.MjData(model)
    mujoco.mj_kinematics(model, data)
    for name, T in iter_bodies_qpos0(xml):
        bid = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, name)
        np.testing.assert_allclose(T.translation, data.xpos[bid], atol=POSE_ATOL)
        np.testing.assert_allclose(T.rotation, data.xmat[bid].reshape(3, 3), atol=POSE_ATOL)


def _connect_anchors_agree(xml: Path, rec: dict) -> int:
    """Both attachment points of every connect coincide in world at qpos0 (MuJoCo poses)."""
    model, _ = load_mujoco(xml)
    data = mujoco.MjData(model)
    mujoco.mj_kinematics(model, data)

    def world(body: str, xyz) -> np.ndarray:
        bid = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, body)
        return data.xpos[bid] + data.xmat[bid].reshape(3, 3) @ np.asarray(xyz)

    n = 0
    for eq in range(model.neq):
        if model.eq_type[eq] != mujoco.mjtEq.mjEQ_CONNECT:
            continue
        j = next(j for j in rec["joints"] if j["type"] == "spherical" and j["parent"]
                 == mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_BODY, model.eq_obj1id[eq])
                 and j["child"] == mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_BODY,
                                                     model.eq_obj2id[eq]))
        a = pose(j.get("parent_frame")).translation
        b = pose(j.get("child_frame")).translation
        np.testing.assert_allclose(a, model.eq_data[eq, :3], atol=POSE_ATOL)
        np.testing.assert_allclose(b, model.eq_data[eq, 3:6], atol=POSE_ATOL)  # MuJoCo's anchor2
        np.testing.assert_allclose(world(j["parent"], a), world(j["child"], b), atol=POSE_ATOL)
        n += 1
    return n


@pytest.fixture
def cassie() -> Path:
    return EXTERNAL / "agility_cassie/cassie.xml"


@pytest.fixture
def kangaroo() -> Path:
    return EXTERNAL / "pal_kangaroo/kangaroo.xml"


def test_cassie_imports_and_compiles(cassie, tmp_path, capsys):
    rec, s = import_and_compile(capsys, tmp_path, "mjcf", str(cassie))
    assert s["cycle_rank"] == 4
    assert sorted(s["cut_joints"]) == ["connect1", "connect2", "connect3", "connect4"]
    assert len(s["modules"]) == 4
    assert [b["name"] for b in rec["bodies"] if b.get("floating")] == ["cassie-pelvis"]
    assert not any(b["name"] == "world" for b in rec["bodies"])  # free root: no world needed
    act = {a["name"]: a for a in rec["actuators"]}
    assert act["left-hip-pitch"]["transmission"] == {"type": "gear", "ratio": 16.0}
    assert act["left-hip-pitch"]["effort_limits"] == [-16 * 12.2, 16 * 12.2]
    knee = next(j for j in rec["joints"] if j["name"] == "left-knee")
    assert knee["initial"] == -1.1997  # the 'home' keyframe
    # 1e-15 relative: a single degree-to-radian conversion in float64
    assert knee["limits"]["lower"] == pytest.approx(np.radians(-164), rel=1e-15)
    assert "Keyframes: home" in (tmp_path / "rec.yaml").read_text()
    assert _mass_properties_agree(cassie, rec) == 25
    assert _connect_anchors_agree(cassie, rec) == 4
    _poses_agree_with_mujoco(cassie)


def test_kangaroo_imports_and_compiles(kangaroo, tmp_path, capsys):
    rec, s = import_and_compile(capsys, tmp_path, "mjcf", str(kangaroo))
    assert s["cycle_rank"] == 2
    assert sorted(s["cut_joints"]) == ["leg_left_closed_kin_joint", "leg_right_closed_kin_joint"]
    assert len(s["modules"]) == 2
    # bodies without <inertial> get MuJoCo's geom-inferred mass (capsules, density 1000)
    ankle = next(b for b in rec["bodies"] if b["name"] == "leg_left_ankle_link")
    assert ankle["mass"] > 0.0
    assert _mass_properties_agree(kangaroo, rec) == 29  # 32 bodies, 3 massless
    assert _connect_anchors_agree(kangaroo, rec) == 2
    _poses_agree_with_mujoco(kangaroo)


def test_feature_model_matches_mujoco_kinematics(tmp_path, capsys):
    """Orientations, defaults, ref, chained joints and the keyframe against MuJoCo's FK."""
    xml = tmp_path / "features.xml"
    xml.write_text(FEATURES)
    rec_path = tmp_path / "features.yaml"
    code, _, err = run_import(capsys, "mjcf", str(xml), "-o", str(rec_path))
    assert code == 0, err
    rec = yaml.safe_load(rec_path.read_text())
    front_file(rec_path)  # graph → forest → paths → modules, with verification
    model, _ = load_mujoco(xml)
    data = mujoco.MjData(model)
    _poses_agree_with_mujoco(xml)
    assert _mass_properties_agree(xml, rec) == 5
    assert _connect_anchors_agree(xml, rec) == 1
    mujoco.mj_resetDataKeyframe(model, data, 1)
    mujoco.mj_kinematics(model, data)
    joints = {j["name"]: j for j in rec["joints"]}
    q = {n: j["initial"] for n, j in joints.items() if "initial" in j}
    assert q["j1"] == 0.3 and q["j2b"] == 0.01  # 'home' keyframe, not the first one
    poses = tree_poses(rec, q, {"world": pose(None)}, {"loop", "weld2"})
    for bid in range(1, model.nbody):
        name = mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_BODY, bid)
        np.testing.assert_allclose(poses[name].translation, data.xpos[bid], atol=POSE_ATOL)
        np.testing.assert_allclose(poses[name].rotation, data.xmat[bid].reshape(3, 3),
                                   atol=POSE_ATOL)
    # several joints in one body: a massless intermediate body
    assert joints["j2a"]["child"] == "link__j2a" and joints["j2b"]["parent"] == "link__j2a"
    assert joints["welded_fixed"]["type"] == "fixed"
    # rest in rad (springref is in degrees); 1e-15: one float64 conversion
    assert joints["j2a"]["spring"] == {"stiffness": 3.0,
                                       "rest": pytest.approx(np.radians(10), rel=1e-15)}
    assert joints["j2a"]["armature"] == 0.01 and joints["j1"]["damping"] == 0.5
    assert "limits" not in joints["j4"]  # limited="false" wins over the range
    assert joints["weld2"]["type"] == "fixed" and joints["loop"]["type"] == "spherical"
    (coupling,) = rec["couplings"]
    # MuJoCo: j4 − qpos0(j4) = 0.1 + 2·(j1 − qpos0(j1)), qpos0(j1) = ref = 15°
    assert coupling["terms"] == {"j4": 1.0, "j1": -2.0}
    # 1e-15 relative: one multiply-add in float64
    assert coupling["offset"] == pytest.approx(-0.1 + 2 * np.radians(15), rel=1e-15)
    act = {a["joint"]: a for a in rec["actuators"]}
    assert act["j1"]["effort_limits"] == [-20.0, 20.0]  # motor: gear · ctrlrange
    assert act["j2a"]["effort_limits"] == [-5.0, 5.0]  # position: forcerange only
    assert act["j4"]["effort_limits"] == [-6.0, 6.0]  # general: gear · gain · ctrlrange
    assert rec["bodies"][0]["name"] == "world" and "origin_mark" in rec["bodies"][0]["frames"]
    assert rec["gravity"] == [0.0, 0.0, -9.8]
    geom = next(b for b in rec["bodies"] if b["name"] == "base")["geometry"][0]
    assert geom["type"] == "box" and geom["half_extents"] == [0.01, 0.02, 0.03]


def test_import_mjcf_returns_a_parseable_record(cassie):
    from rbc.backends.record_writer import render_record
    from rbc.ir.schema import parse_record_text

    assert isinstance(parse_record_text(render_record(import_mjcf(cassie))), Record)


TWO = ("<mujoco><worldbody><body name='a'><inertial pos='0 0 0' mass='1' diaginertia='1 1 1'/>"
       "<joint name='x' type='slide'/><body name='b'><inertial pos='0 0 0' mass='1' "
       "diaginertia='1 1 1'/><joint name='y' type='slide'/></body></body></worldbody>")

BAD = {
    "malformed": ("<mujoco><worldbody>\n<body name='a'>\n</worldbody></mujoco>", "line 3"),
    "spatial tendon": (TWO + "<tendon>\n<spatial name='s'><site site='a'/></spatial>"
                       "</tendon></mujoco>", "spatial tendon 's'"),
    "tendon element": ("<mujoco><worldbody/>\n<tendons/></mujoco>",
                       "unsupported element <tendons>"),
    "tendon joint": (TWO + "<tendon><fixed name='t'>\n<joint joint='z' coef='1'/></fixed>"
                     "</tendon></mujoco>", "tendon joint 'z' is not a joint"),
    "unnamed tendon": (TWO + "<tendon>\n<fixed><joint joint='x' coef='1'/></fixed></tendon>"
                       "</mujoco>", "needs a 'name'"),
    "actuator tendon": (TWO + "<tendon><fixed name='t'><joint joint='x' coef='1'/></fixed>"
                        "</tendon><actuator>\n<motor tendon='u'/></actuator></mujoco>",
                        "actuator tendon 'u' is not a fixed tendon"),
    "joint type": ("<mujoco><worldbody><body name='a'><inertial pos='0 0 0' mass='1' "
                   "diaginertia='1 1 1'/>\n<joint type='hfield'/></body></worldbody></mujoco>",
                   "unsupported joint type 'hfield'"),
    "missing body": ("<mujoco><worldbody><body name='a'><inertial pos='0 0 0' mass='1' "
                     "diaginertia='1 1 1'/><joint/></body></worldbody><equality>\n"
                     "<connect body1='a' body2='nope' anchor='0 0 0'/></equality></mujoco>",
                     "body2='nope' is not a body"),
    "equality_unknown": ("<mujoco><worldbody><body name='a'><inertial pos='0 0 0' mass='1' "
                         "diaginertia='1 1 1'/><joint name='x'/><joint name='y'/></body>"
                         "</worldbody><equality>\n<joint joint1='x' joint2='z' "
                         "polycoef='0 1 0.5 0 0'/></equality></mujoco>", "'z' is not a joint"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_models_exit_2_without_output(case, tmp_path, capsys):
    text, needle = BAD[case]
    xml = tmp_path / "bad.xml"
    xml.write_text(text)
    out = tmp_path / "out.yaml"
    code, _, err = run_import(capsys, "mjcf", str(xml), "-o", str(out))
    assert code == 2
    assert needle in err and "bad.xml" in err
    assert not out.exists() and list(tmp_path.iterdir()) == [xml]


def test_missing_file_exits_2(tmp_path, capsys):
    code, _, err = run_import(capsys, "mjcf", str(tmp_path / "none.xml"), "-o",
                              str(tmp_path / "o.yaml"))
    assert code == 2 and "file not found" in err
    assert not (tmp_path / "o.yaml").exists()


def test_equality_error_names_the_line(tmp_path, capsys):
    xml = tmp_path / "bad.xml"
    xml.write_text(BAD["equality_unknown"][0])
    code, _, err = run_import(capsys, "mjcf", str(xml), "-o", str(tmp_path / "o.yaml"))
    assert code == 2 and "line 2" in err and "/mujoco/equality/joint" in err


def test_fixed_tendon_actuator_is_a_port_on_the_joint_combination(tmp_path):
    """A motor on a fixed tendon becomes an actuator whose port is Σ coef·q (terms); a
    joint equality tying the joints stays a coupling; passive tendon data is reported."""
    xml = tmp_path / "gripper.xml"
    xml.write_text(TWO + "<tendon><fixed name='split' stiffness='5'><joint joint='x' coef='0.5'/>"
                   "<joint joint='y' coef='0.5'/></fixed></tendon>"
                   "<equality><joint joint1='x' joint2='y'/></equality>"
                   "<actuator><motor name='grip' tendon='split' gear='2' forcerange='-10 10'/>"
                   "</actuator></mujoco>")
    res = import_mjcf(xml)
    (act,) = res.record["actuators"]
    assert act["terms"] == {"x": 0.5, "y": 0.5} and "joint" not in act
    assert act["transmission"] == {"type": "gear", "ratio": 2.0}
    assert act["effort_limits"] == [-20.0, 20.0]  # gear × forcerange, at the port
    assert res.record["couplings"][0]["terms"] == {"x": 1.0, "y": -1.0}
    assert any("stiffness not imported" in w for w in res.warnings)

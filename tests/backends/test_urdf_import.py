"""`rbc import urdf`: Gepetto closed-loop models (+ sidecar), example-robot-data trees,
features, errors; mass properties checked against Pinocchio's URDF parser."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest
import yaml

from rbc.backends.urdf import import_urdf
from tests.backends.util import erd_urdf, import_and_compile, run_import
from tests.conftest import EXTERNAL
from tests.passes.util import front_file

# Relative agreement of lumped inertias with Pinocchio: both sum a handful of float64
# transformed tensors, so round-off stays at ~1e-15 of the largest entry; 1e-12 is margin.
INERTIA_RTOL = 1e-12

GEPETTO = {  # model: (cycle rank, closes from the solved initial guess)
    "5bar_linkage": 1,
    "cassie_like": 2,
    "digit_like": 3,
}


def _record_inertia(body: dict) -> pin.Inertia:
    ixx, iyy, izz, ixy, ixz, iyz = body.get("inertia", [0.0] * 6)
    tensor = np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])
    return pin.Inertia(body.get("mass", 0.0), np.array(body.get("com", [0.0] * 3)), tensor)


def _inertias_agree_with_pinocchio(urdf: Path, rec: dict) -> None:
    """Per Pinocchio joint: the sum of our link inertias placed by the BODY frames equals
    ``model.inertias[j]`` (Pinocchio lumps fixed-joint links); total masses agree."""
    model = pin.buildModelFromUrdf(str(urdf))
    bodies = {b["name"]: b for b in rec["bodies"]}
    sums = [pin.Inertia.Zero() for _ in range(model.njoints)]
    for f in model.frames:
        if f.type == pin.FrameType.BODY and f.name in bodies:
            sums[f.parentJoint] += f.placement.act(_record_inertia(bodies[f.name]))
    for j in range(1, model.njoints):
        ref = model.inertias[j]
        scale = max(abs(ref.mass), np.abs(ref.inertia).max(), 1e-300)
        assert abs(sums[j].mass - ref.mass) <= INERTIA_RTOL * scale, model.names[j]
        assert np.abs(sums[j].inertia - ref.inertia).max() <= INERTIA_RTOL * scale, model.names[j]
        assert np.abs(sums[j].lever * sums[j].mass - ref.lever * ref.mass).max() <= \
            INERTIA_RTOL * scale, model.names[j]
    total = sum(b.get("mass", 0.0) for b in rec["bodies"])
    ref_total = sum(i.mass for i in model.inertias)  # inertias[0]: links fixed to the root
    assert total == pytest.approx(ref_total, rel=INERTIA_RTOL)


@pytest.mark.parametrize("name", sorted(GEPETTO))
def test_gepetto_models_import_and_compile(name, tmp_path, capsys):
    d = EXTERNAL / "gepetto" / name
    rec, s = import_and_compile(capsys, tmp_path, "urdf", str(d / "robot.urdf"), "--loops",
                                str(d / "robot.yaml"), "--repair-inertia")
    side = yaml.safe_load((d / "robot.yaml").read_text())
    assert s["cycle_rank"] == GEPETTO[name] == len(side["closed_loop"])
    assert len(s["cut_joints"]) == GEPETTO[name]
    assert sorted(a["joint"] for a in rec["actuators"]) == sorted(side["name_mot"])
    _inertias_agree_with_pinocchio(d / "robot.urdf", rec)


def test_gepetto_kangaroo_like_loops_do_not_close(tmp_path, capsys):
    """Its eleven 6d closures cannot all be closed at once (least-squares gap ≈ 0.08): the
    import succeeds and warns; the graph passes see cycle rank 11."""
    d = EXTERNAL / "gepetto/kangaroo_like"
    out = tmp_path / "k.yaml"
    code, _, err = run_import(capsys, "urdf", str(d / "robot.urdf"), "--loops",
                              str(d / "robot.yaml"), "--repair-inertia", "-o", str(out))
    assert code == 0 and "loops could not be closed" in err
    mods = front_file(out)
    assert mods.paths.forest.graph.cycle_rank == 11
    assert len(mods.paths.forest.chords) == 11 and len(mods.modules) == 3


def test_point_masses_are_valid_bodies(tmp_path, capsys):
    """A point mass (mass, zero tensor) is a physical rigid body: it imports as it is, with
    no repair and no warning about it (docs/records.md, "Physical checks")."""
    d = EXTERNAL / "gepetto/5bar_linkage"
    out = tmp_path / "o.yaml"
    code, _, err = run_import(capsys, "urdf", str(d / "robot.urdf"), "--loops",
                              str(d / "robot.yaml"), "-o", str(out))
    assert code == 0 and "repaired" not in err, err
    body = next(b for b in yaml.safe_load(out.read_text())["bodies"] if b["name"] == "effector")
    assert body["mass"] > 0 and body["inertia"] == [0.0] * 6


@pytest.mark.parametrize("urdf", ["panda.urdf", "go2.urdf"])
def test_example_robot_data_trees(urdf, tmp_path, capsys):
    path = erd_urdf(urdf)
    rec, s = import_and_compile(capsys, tmp_path, "urdf", str(path))
    assert s["cycle_rank"] == 0 and s["cut_joints"] == []
    _inertias_agree_with_pinocchio(path, rec)
    if urdf == "panda.urdf":
        (c,) = rec["couplings"]
        assert c["terms"] == {"panda_finger_joint2": 1.0, "panda_finger_joint1": -1.0}
        j4 = next(j for j in rec["joints"] if j["name"] == "panda_joint4")
        assert j4["limits"]["lower"] < j4["initial"] < j4["limits"]["upper"]


FEATURES = """<robot name="feat">
  <link name="world"/>
  <joint name="float" type="floating"><parent link="world"/><child link="base"/></joint>
  <link name="base"><inertial><origin xyz="0.1 0 0" rpy="0.3 0.2 0.1"/><mass value="2"/>
    <inertia ixx="0.03" ixy="0.001" ixz="0" iyy="0.02" iyz="0" izz="0.015"/></inertial></link>
  <joint name="wheel" type="continuous"><origin xyz="0 0.2 0" rpy="1.5707963267948966 0 0"/>
    <parent link="base"/><child link="w"/><axis xyz="0 0 1"/>
    <dynamics damping="0.1" friction="0.2"/></joint>
  <link name="w"><inertial><mass value="1"/>
    <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.02"/></inertial></link>
  <joint name="slide" type="prismatic"><parent link="base"/><child link="s"/>
    <limit lower="0.1" upper="0.3" effort="50" velocity="1"/>
    <mimic joint="wheel" multiplier="0.5" offset="0.2"/></joint>
  <link name="s"><inertial><mass value="1"/>
    <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial></link>
  <transmission name="t1"><joint name="slide"/><actuator name="m">
    <mechanicalReduction>20</mechanicalReduction></actuator></transmission>
</robot>"""


def test_urdf_features(tmp_path):
    urdf = tmp_path / "f.urdf"
    urdf.write_text(FEATURES)
    rec = import_urdf(urdf).record
    bodies = {b["name"]: b for b in rec["bodies"]}
    assert "world" not in bodies and bodies["base"]["floating"] is True
    joints = {j["name"]: j for j in rec["joints"]}
    assert joints["wheel"]["type"] == "revolute" and "limits" not in joints["wheel"]
    assert joints["wheel"]["damping"] == 0.1 and joints["wheel"]["friction"] == 0.2
    assert joints["slide"]["initial"] == pytest.approx(0.2, rel=1e-15)  # 0 is outside limits
    (c,) = rec["couplings"]
    assert c["terms"] == {"slide": 1.0, "wheel": -0.5} and c["offset"] == -0.2
    (a,) = rec["actuators"]
    assert a["transmission"] == {"type": "gear", "ratio": 20.0}
    assert a["effort_limits"] == [-50.0, 50.0] and a["speed_limit"] == 1.0
    # the inertia is rotated from the inertial frame (rpy) into link axes
    R = pin.rpy.rpyToMatrix(0.3, 0.2, 0.1)
    ref = R @ np.array([[0.03, 0.001, 0], [0.001, 0.02, 0], [0, 0, 0.015]]) @ R.T
    ixx, iyy, izz, ixy, ixz, iyz = bodies["base"]["inertia"]
    mine = np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])
    np.testing.assert_allclose(mine, ref, rtol=0, atol=1e-17)  # float64 round-off of 0.03


BAD = {
    "malformed": ("<robot name='x'>\n<link name='a'>\n</robot>", [], "line 3"),
    "joint type": ("<robot name='x'><link name='a'/><link name='b'/>\n<joint name='j' "
                   "type='hinge'><parent link='a'/><child link='b'/></joint></robot>", [],
                   "unsupported joint type 'hinge'"),
    "missing link": ("<robot name='x'><link name='a'/>\n<joint name='j' type='fixed'>"
                     "<parent link='a'/><child link='nope'/></joint></robot>", [],
                     "unknown link 'nope'"),
    "loop frame": ("<robot name='x'><link name='a'/><link name='b'/><joint name='j' "
                   "type='fixed'><parent link='a'/><child link='b'/></joint></robot>",
                   ["closed_loop: [[a, zz]]", "type: ['6d']"], "unknown frame 'zz'"),
    "urdfdom refuses": ("<robot name='x'><link name='a'/><link name='b'/><link name='c'/>"
                        "<joint name='j' type='revolute'><parent link='a'/><child link='b'/>"
                        "<limit lower='-1' upper='1'/></joint><joint name='k' type='fixed'>"
                        "<parent link='b'/><child link='c'/></joint></robot>",
                        ["closed_loop: [[a, c]]", "type: ['3d']"],
                        "Pinocchio's URDF parser (urdfdom), which closes the loops, refuses"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_urdf_exit_2_without_output(case, tmp_path, capsys):
    text, side, needle = BAD[case]
    urdf = tmp_path / "bad.urdf"
    urdf.write_text(text)
    args = ["urdf", str(urdf)]
    if side:
        (tmp_path / "loops.yaml").write_text("\n".join(side))
        args += ["--loops", str(tmp_path / "loops.yaml")]
    out = tmp_path / "out.yaml"
    code, _, err = run_import(capsys, *args, "-o", str(out))
    assert code == 2 and needle in err, err
    assert not out.exists()


# An RSSR linkage as a CAD export writes it: every joint a URDF revolute, the loop cut at the
# second ball (a `3d` closure between two frame links). Cranks along y (0.1 m), coupler along
# x (0.4 m): a parallelogram that is closed at the URDF zero and far from its singularities.
RSSR = """<robot name="rssr">
  <link name="base"/>
  <link name="crank1"><inertial><origin xyz="0 0.05 0"/><mass value="0.2"/>
    <inertia ixx="2e-4" iyy="1e-5" izz="2e-4" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="coupler"><inertial><origin xyz="0.2 0 0"/><mass value="0.5"/>
    <inertia ixx="1e-4" iyy="7e-3" izz="7e-3" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="crank2"><inertial><origin xyz="0 0.05 0"/><mass value="0.2"/>
    <inertia ixx="2e-4" iyy="1e-5" izz="2e-4" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="coupler_tip"/>
  <link name="crank2_tip"/>
  <joint name="mot1" type="revolute"><parent link="base"/><child link="crank1"/>
    <axis xyz="0 0 1"/><limit lower="-3" upper="3" effort="5" velocity="10"/></joint>
  <joint name="ball1" type="revolute"><origin xyz="0 0.1 0"/><parent link="crank1"/>
    <child link="coupler"/><axis xyz="1 0 0"/>
    <limit lower="-1" upper="1" effort="0" velocity="0"/></joint>
  <joint name="pivot2" type="continuous"><origin xyz="0.4 0 0"/><parent link="base"/>
    <child link="crank2"/><axis xyz="0 0 1"/></joint>
  <joint name="coupler_tip_frame" type="fixed"><origin xyz="0.4 0 0"/>
    <parent link="coupler"/><child link="coupler_tip"/></joint>
  <joint name="crank2_tip_frame" type="fixed"><origin xyz="0 0.1 0"/>
    <parent link="crank2"/><child link="crank2_tip"/></joint>
</robot>
"""


def _rssr(tmp_path, conversions: str) -> tuple[Path, Path]:
    urdf, side = tmp_path / "rssr.urdf", tmp_path / "rssr.yaml"
    urdf.write_text(RSSR)
    side.write_text("closed_loop: [['coupler_tip', 'crank2_tip']]\ntype: ['3d']\n"
                    "name_mot: ['mot1']\n" + conversions)
    return urdf, side


@pytest.mark.parametrize(("conversion", "kind", "speeds"), [
    ("SPHERICAL", "spherical", 2),  # RSSR: the crank and the coupler's spin about its axis
    ("UJOINT_ZY", "universal", 1),  # RUSR: one degree of freedom
])
def test_sidecar_joint_conversions(conversion, kind, speeds, tmp_path, capsys):
    """``joint_name``/``joint_type`` replace a URDF joint as the Gepetto loader does; the
    converted mechanism compiles with the mobility of the intended joints."""
    urdf, side = _rssr(tmp_path, f"joint_name: ['ball1']\njoint_type: ['{conversion}']\n")
    rec, s = import_and_compile(capsys, tmp_path, "urdf", str(urdf), "--loops", str(side))
    ball = next(j for j in rec["joints"] if j["name"] == "ball1")
    assert ball["type"] == kind and "limits" not in ball and "axis" not in ball
    assert ball["parent"] == "crank1" and ball["child"] == "coupler"
    assert ball["parent_frame"]["xyz"] == [0.0, 0.1, 0.0]
    if kind == "universal":
        assert ball["axes"] == [[0.0, 0.0, 1.0], [0.0, 1.0, 0.0]]
    assert s["cycle_rank"] == 1 and s["partitions"][0]["speeds"] == speeds


def test_sidecar_fixed_conversion_welds_the_joint(tmp_path):
    urdf, side = _rssr(tmp_path, "joint_name: ['pivot2', 'ball1']\n"
                                 "joint_type: ['FIXED', 'SPHERICAL']\n")
    rec = import_urdf(urdf, side).record
    pivot = next(j for j in rec["joints"] if j["name"] == "pivot2")
    assert pivot["type"] == "fixed" and "axis" not in pivot


@pytest.mark.parametrize(("conversions", "needle"), [
    ("joint_name: ['ball1']\njoint_type: ['CARDAN']\n",
     "joint_type[0]: unknown joint type 'CARDAN'"),
    ("joint_name: ['ball1']\njoint_type: []\n", "expected one joint type per joint_name"),
    ("joint_name: ['bal1']\njoint_type: ['SPHERICAL']\n",
     "unknown joint 'bal1'; valid choices: ball1"),
    ("joint_name: ['mot1']\njoint_type: ['SPHERICAL']\n", "is actuated (name_mot)"),
    ("joint_name: ['coupler_tip_frame']\njoint_type: ['SPHERICAL']\n",
     "is a fixed joint; only revolute, continuous, prismatic joints can be converted"),
    ("joint_name: ['ball1', 'ball1']\njoint_type: ['SPHERICAL', 'FIXED']\n",
     "converted twice"),
])
def test_bad_sidecar_conversions_exit_2(conversions, needle, tmp_path, capsys):
    urdf, side = _rssr(tmp_path, conversions)
    out = tmp_path / "out.yaml"
    code, _, err = run_import(capsys, "urdf", str(urdf), "--loops", str(side), "-o", str(out))
    assert code == 2 and needle in err, err
    assert not out.exists()

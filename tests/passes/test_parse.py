"""Tests of the parse pass (schema v1): good records, conversions, and golden bad-input messages."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from rbc.errors import RecordError
from rbc.ir.record import Record
from rbc.ir.schema import parse_record, parse_record_text, rpy_to_quat
from rbc.passes.parse import Parse
from tests.conftest import EXAMPLES

FOURBAR = EXAMPLES / "fourbar_v1.yaml"
RECORDS = Path(__file__).parents[2] / "records"

HEAD = "rbc: 1\nname: t\n"
GROUND = "  - {name: ground, fixed: true}\n"
LINK = "  - {name: link, mass: 1, com: [0, 0, 0], inertia: [1, 1, 1, 0, 0, 0]}\n"
BODIES = "bodies:\n" + GROUND + LINK
HINGE = "  - {name: j, type: revolute, parent: ground, child: link, axis: [0, 0, 1]}\n"
JOINTS = "joints:\n" + HINGE


def doc(*, head: str = HEAD, bodies: str = BODIES, joints: str = JOINTS, extra: str = "") -> str:
    """A small record: the default is valid; each keyword replaces one section."""
    return head + bodies + joints + extra


def body(fields: str) -> str:
    """The default bodies with ``link`` given ``fields`` (flow-mapping text)."""
    return "bodies:\n" + GROUND + f"  - {{name: link, {fields}}}\n"


def joint(fields: str) -> str:
    """The default joints with ``j`` (ground → link) given ``fields``."""
    return f"joints:\n  - {{name: j, parent: ground, child: link, {fields}}}\n"


def parse(tmp_path: Path, text: str) -> Record:
    f = tmp_path / "robot.yaml"
    f.write_text(text)
    return parse_record(f)


# --------------------------------------------------------------------------- good records


def test_fourbar_example_parses() -> None:
    r = parse_record(FOURBAR)
    assert r.name == "fourbar_conformance"
    assert [b.kind for b in r.bodies] == ["fixed", "ordinary", "ordinary", "ordinary"]
    assert [j.name for j in r.joints] == ["A", "B", "C", "D"]
    assert r.joints[2].parent_frame.xyz == (2.0, 0.0, 0.0)
    assert r.joints[2].child_frame.xyz == (1.5, 0.0, 0.0)
    assert r.joints[1].initial == (-0.92,)
    assert r.gravity == (0.0, -9.81, 0.0)
    (m,) = r.actuators
    assert m.transmission.reduction == 20.0
    assert m.effort_limits == (-40.0, 40.0)
    assert r.source == str(FOURBAR) and len(r.sha256) == 64
    Parse().verify(r)


@pytest.mark.parametrize("path", sorted(RECORDS.glob("*.yaml")), ids=lambda p: p.name)
def test_shipped_records_parse(path: Path) -> None:
    Parse().verify(Parse().run(path))


def test_defaults(tmp_path: Path) -> None:
    r = parse(tmp_path, doc())
    assert r.gravity == (0.0, 0.0, -9.81)
    assert r.actuators == r.couplings == r.forces == r.supports == r.tasks == ()
    j = r.joints[0]
    assert j.parent_frame.quat == (1.0, 0.0, 0.0, 0.0) and j.lower == () and j.initial is None
    assert parse_record_text(doc()).source == "<string>"


@pytest.mark.parametrize(
    "rpy", [(0.3, -0.7, 1.9), (math.pi / 2, 0.1, -2.5), (-3.0, 1.5, 0.2), (0.0, 0.0, 0.0)]
)
def test_rpy_matches_scipy_extrinsic_xyz(rpy: tuple[float, float, float]) -> None:
    # URDF R = Rz(yaw)·Ry(pitch)·Rx(roll) is scipy's extrinsic 'xyz'.
    x, y, z, w = Rotation.from_euler("xyz", rpy).as_quat()
    ours = np.array(rpy_to_quat(*rpy))
    expected = np.array([w, x, y, z])
    sign = 1.0 if ours @ expected >= 0 else -1.0  # double cover
    np.testing.assert_allclose(ours, sign * expected, atol=1e-15)  # float64 round-off
    # and the same rotation as the conventions module's rpy (one convention, two codes)
    from rbc.ir import spatial

    np.testing.assert_allclose(spatial.rotation_from_quat(ours),
                               spatial.rotation_from_rpy(np.array(rpy)), atol=1e-15)


def test_deg_conversion(tmp_path: Path) -> None:
    text = doc(
        head=HEAD + "angle_unit: deg\n",
        bodies="bodies:\n"
        + GROUND
        + "  - name: link\n    mass: 1\n    inertia: [1, 1, 1, 0, 0, 0]\n"
        "    frames: {tip: {xyz: [1, 0, 0], rpy: [90, 0, 0]}}\n",
        joints="joints:\n"
        "  - {name: j, type: revolute, parent: ground, child: link, axis: [0, 0, 2],\n"
        "     parent_frame: {rpy: [0, 0, 180]}, child_frame: {frame: tip},\n"
        "     limits: {lower: -90, upper: 90}, initial: 45, spring: {stiffness: 2, rest: 30}}\n",
        extra="couplings: [{name: c, type: linear, terms: {j: 1}, offset: 10}]\n",
    )
    r = parse(tmp_path, text)
    j = r.joints[0]
    assert j.axis == (0.0, 0.0, 1.0)
    assert j.lower == pytest.approx((-math.pi / 2,)) and j.upper == pytest.approx((math.pi / 2,))
    assert j.initial == pytest.approx((math.pi / 4,))
    assert j.spring.rest == pytest.approx(math.pi / 6) and j.spring.stiffness == 2.0
    np.testing.assert_allclose(j.parent_frame.quat, (0.0, 0.0, 0.0, 1.0), atol=1e-15)
    h = math.sqrt(0.5)
    assert j.child_frame == r.bodies[1].frame("tip")
    np.testing.assert_allclose(j.child_frame.quat, (h, h, 0.0, 0.0), atol=1e-15)
    assert r.couplings[0].offset == 10.0  # couplings stay as written (SI)


D = math.pi / 180  # one degree [rad]


@pytest.mark.parametrize(
    ("fields", "initial", "expected", "unit_limit"),
    [
        # layout [θ1, θ2]: both angles convert
        ("type: universal, axes: [[1, 0, 0], [0, 1, 0]]", "[10, 20]", (10 * D, 20 * D), (D, D)),
        # layout [d, θ]: the translation stays in m
        ("type: cylindrical, axis: [0, 0, 1]", "[0.5, 90]", (0.5, 90 * D), (1.0, D)),
        # layout [x, y, θ]
        ("type: planar", "[1, 2, 180]", (1.0, 2.0, math.pi), (1.0, 1.0, D)),
        # helical: the coordinate is the rotation angle θ (translation = lead·θ/2π)
        ("type: helical, axis: [0, 0, 1], lead: 0.01", "90", (90 * D,), (D,)),
        ("type: prismatic, axis: [1, 0, 0]", "0.25", (0.25,), (1.0,)),
    ],
)
def test_coordinate_layouts_in_degrees(
    tmp_path: Path,
    fields: str,
    initial: str,
    expected: tuple[float, ...],
    unit_limit: tuple[float, ...],
) -> None:
    # limits of ±200 (in the file's units) hold every initial value (it must lie inside)
    lo, hi = (
        ("-200", "200") if len(expected) == 1
        else (str([-200] * len(expected)), str([200] * len(expected)))
    )
    text = doc(
        head=HEAD + "angle_unit: deg\n",
        joints=joint(f"{fields}, initial: {initial}, limits: {{lower: {lo}, upper: {hi}}}"),
    )
    j = parse(tmp_path, text).joints[0]
    assert j.initial == pytest.approx(expected)
    assert j.upper == pytest.approx([200 * x for x in unit_limit])
    assert j.lower == pytest.approx([-200 * x for x in unit_limit])


def test_quaternion_initial_and_frames(tmp_path: Path) -> None:
    text = doc(
        bodies=body("floating: true, mass: 1, inertia: [1, 1, 1, 0, 0, 0]"),
        joints="joints:\n  - {name: j, type: spherical, parent: ground, child: link,"
        " initial: [0.9999999, 0, 0, 0], parent_frame: {xyz: [1, 2, 3], quat: [0, 0, 0, 1]}}\n",
    )
    j = parse(tmp_path, text).joints[0]
    assert j.initial == (1.0, 0.0, 0.0, 0.0)
    assert j.parent_frame.xyz == (1.0, 2.0, 3.0)
    assert j.parent_frame.quat == (0.0, 0.0, 0.0, 1.0)


def test_moving_joint_between_two_fixed_bodies_is_noted(tmp_path: Path) -> None:
    """A revolute joint between two welded bodies parses (the loop through the world holds
    it) with a note naming the joint's field; a `fixed` joint there, or a hinge to an
    ordinary body, gets none."""
    two = "bodies:\n" + GROUND + "  - {name: post, fixed: true}\n" + LINK
    hinge = "  - {name: h, type: revolute, parent: ground, child: post, axis: [0, 0, 1]}\n"
    rec = parse(tmp_path, doc(bodies=two, joints="joints:\n" + HINGE + hinge))
    assert len(rec.notes) == 1 and "joints[1]" in rec.notes[0]
    assert "'h'" in rec.notes[0] and "cannot move" in rec.notes[0]
    weld = "  - {name: h, type: fixed, parent: ground, child: post}\n"
    assert parse(tmp_path, doc(bodies=two, joints="joints:\n" + HINGE + weld)).notes == ()


def test_guess_quaternion_is_normalised_with_a_note(tmp_path: Path) -> None:
    """An `initial` quaternion typed with 4 decimals (norm 0.99998) is a guess: normalised,
    with a note naming the field; the same quaternion as a frame is physical data and is
    refused; a guess further than 1e-3 from unit norm is refused too."""
    guess = "[0.7071, 0.7071, 0, 0]"
    rec = parse(tmp_path, doc(joints=joint(f"type: spherical, initial: {guess}")))
    assert rec.joints[0].initial == pytest.approx((2**-0.5, 2**-0.5, 0.0, 0.0), abs=1e-15)
    assert len(rec.notes) == 1 and "joints[0].initial" in rec.notes[0]
    assert "normalised" in rec.notes[0]
    assert parse(tmp_path, doc()).notes == ()
    with pytest.raises(RecordError, match="never renormalises"):
        parse(tmp_path, doc(joints=joint(f"type: revolute, axis: [0, 0, 1], "
                                         f"child_frame: {{quat: {guess}}}")))
    with pytest.raises(RecordError, match="within 0.001 of unit norm"):
        parse(tmp_path, doc(joints=joint("type: spherical, initial: [0.7, 0.7, 0, 0]")))


def test_free_initial_and_interfaces(tmp_path: Path) -> None:
    text = doc(
        bodies="bodies:\n" + GROUND + LINK + "  - {name: b2, mass: 0}\n",
        joints="joints:\n"
        + HINGE
        + "  - {name: f, type: free, parent: ground, child: b2, initial: [1, 2, 3, 1, 0, 0, 0]}\n"
        + "  - {name: p, type: prismatic, parent: link, child: b2, axis: [1, 0, 0], cut: prefer}\n",
        extra="actuators:\n"
        "  - {name: m, joint: p, transmission: {type: screw, lead: 0.005}, rotor_inertia: 1e-5}\n"
        "forces:\n"
        "  - {name: s, type: spring, a: {body: link, xyz: [0, 0, 1]}, b: {body: b2},"
        " stiffness: 10, rest_length: 0.1}\n"
        "  - {name: e, type: joint_effort, joint: j, value: 0.5}\n"
        "supports: [{name: sole, body: link, xyz: [0, 0, -0.05], half_extents: [0.1, 0.05]}]\n"
        "tasks: [{name: tool, body: b2, kind: pose, rpy: [0, 0, 0]}]\n"
        "independent: [j]\n",
    )
    r = parse(tmp_path, text)
    assert r.joints[1].initial == (1.0, 2.0, 3.0, 1.0, 0.0, 0.0, 0.0)
    assert r.joints[2].cut_prefer
    assert r.actuators[0].transmission.reduction == pytest.approx(2 * math.pi / 0.005)
    assert r.forces[0].b.xyz == (0.0, 0.0, 0.0) and r.forces[1].value == 0.5
    assert r.supports[0].half_extents == (0.1, 0.05) and r.tasks[0].kind == "pose"
    assert r.independent == ("j",)


def test_geometry(tmp_path: Path) -> None:
    text = doc(
        bodies=body(
            "mass: 1, inertia: [1, 1, 1, 0, 0, 0], geometry: ["
            "{type: capsule, fromto: [0, 0, 0, 1, 0, 0], radius: 0.02},"
            "{type: box, half_extents: [1, 2, 3], xyz: [0, 0, 1]},"
            "{type: mesh, file: link.stl}]"
        )
    )
    g = parse(tmp_path, text).bodies[1].geometry
    assert [x.type for x in g] == ["capsule", "box", "mesh"]
    assert dict(g[0].params) == {"fromto": (0.0, 0.0, 0.0, 1.0, 0.0, 0.0), "radius": 0.02}
    assert g[1].pose.xyz == (0.0, 0.0, 1.0) and dict(g[2].params) == {"file": "link.stl"}


@pytest.mark.parametrize(("fields", "why"), [
    ("mass: 1, inertia: [0, 0.1, 0.1, 0, 0, 0]", "slender rod along x (zero axial moment)"),
    ("mass: 1, inertia: [0.05, 0.05, 0.1, 0.05, 0, 0]",
     "slender rod along (1, -1, 0)/√2 (moments 0, 0.1, 0.1 with products)"),
    ("mass: 2", "point mass (zero tensor)"),
    ("mass: 1, inertia: [0.1, 0.1, 0.2, 0, 0, 0]", "thin disc: the triangle equality"),
    ("mass: 1, inertia: [-1e-20, 0.1, 0.1, 0, 0, 0]", "round-off below the slack"),
])
def test_semidefinite_inertia_is_accepted(tmp_path: Path, fields: str, why: str) -> None:
    rec = parse(tmp_path, doc(bodies=body(fields)))
    assert rec.bodies[1].mass > 0, why


def test_parse_pass_object() -> None:
    assert Parse.name == "parse"
    assert Parse().run(FOURBAR) == parse_record(FOURBAR)


# --------------------------------------------------------------------------- bad input
# (id, record text, expected substring of the message). Every message also starts with the
# file name; that is checked once for all cases below.

A3 = "axis: [0, 0, 1]"
BAD: list[tuple[str, str, str]] = [
    # --- file level
    ("empty_file", "", "robot.yaml: empty record; expected a YAML mapping"),
    ("comments_only", "# nothing\n", "empty record"),
    ("list_document", "- 1\n- 2\n", "robot.yaml: the record is a list of 2, not a mapping"),
    ("scalar_document", "42\n", "the record is number 42, not a mapping"),
    ("yaml_syntax", "rbc: 1\nbodies: [a, b\n", "YAML syntax error at line 3, column 1"),
    ("yaml_bad_indent", "rbc: 1\n name: x\nfoo: [\n", "YAML syntax error at line 2"),
    (
        "schema_version",
        doc(head="rbc: 2\nname: t\n"),
        "robot.yaml: rbc: unsupported schema version 2; this rbc reads schema 1",
    ),
    ("schema_missing", doc(head="name: t\n"), "rbc: missing required field 'rbc'"),
    ("name_missing", doc(head="rbc: 1\n"), "name: missing required field 'name'"),
    (
        "angle_unit",
        doc(head=HEAD + "angle_unit: degree\n"),
        "angle_unit: invalid value string 'degree'; valid choices: rad, deg (did you mean 'deg'?)",
    ),
    # --- unknown keys
    (
        "unknown_top_key",
        doc(bodies=BODIES.replace("bodies:", "bodys:")),
        "bodys: unknown key 'bodys'; valid choices: rbc, name,",
    ),
    (
        "unknown_top_key_dym",
        doc(bodies=BODIES.replace("bodies:", "bodys:")),
        "(did you mean 'bodies'?)",
    ),
    (
        "unknown_body_key",
        doc(bodies=body("mass: 1, intertia: [1, 1, 1, 0, 0, 0]")),
        "bodies[1].intertia: unknown key 'intertia'; valid choices: name, fixed, floating, mass, "
        "com, inertia, frames, geometry (did you mean 'inertia'?)",
    ),
    (
        "unknown_joint_key",
        doc(joints=joint(f"type: revolute, {A3}, damp: 0.1")),
        "joints[0].damp: unknown key 'damp' for a revolute joint; "
        "valid choices: name, type, parent,",
    ),
    (
        "key_wrong_joint_type",
        doc(joints=joint("type: spherical, axis: [0, 0, 1]")),
        "joints[0].axis: unknown key 'axis' for a spherical joint",
    ),
    (
        "limits_on_free",
        doc(joints=joint("type: free, limits: {lower: 0, upper: 1}")),
        "joints[0].limits: unknown key 'limits' for a free joint",
    ),
    (
        "unknown_pose_key",
        doc(joints=joint(f"type: revolute, {A3}, parent_frame: {{xyz: [0,0,0], rot: [0,0,0]}}")),
        "joints[0].parent_frame.rot: unknown key 'rot'; valid choices: xyz, rpy, quat, frame",
    ),
    (
        "unknown_transmission_key",
        doc(extra="actuators: [{name: m, joint: j, transmission: {type: gear, ratoi: 5}}]\n"),
        "actuators[0].transmission.ratoi: unknown key 'ratoi' for a gear transmission; "
        "valid choices: type, ratio (did you mean 'ratio'?)",
    ),
    # --- missing required fields
    ("missing_joint_type", doc(joints=joint(A3)), "joints[0].type: missing required field 'type'"),
    ("missing_axis", doc(joints=joint("type: revolute")), "joints[0].axis: missing required field"),
    (
        "missing_universal_axes",
        doc(joints=joint("type: universal")),
        "joints[0].axes: missing required field 'axes'",
    ),
    (
        "missing_helical_lead",
        doc(joints=joint(f"type: helical, {A3}")),
        "joints[0].lead: missing required field 'lead'",
    ),
    (
        "missing_body_name",
        doc(bodies="bodies:\n" + GROUND + "  - {mass: 1}\n"),
        "bodies[1].name: missing required field 'name'",
    ),
    ("missing_bodies", HEAD + "joints: []\n", "bodies: missing or empty 'bodies'"),
    (
        "missing_gear_ratio",
        doc(extra="actuators: [{name: m, joint: j, transmission: {type: gear}}]\n"),
        "actuators[0].transmission.ratio: missing required field 'ratio'",
    ),
    (
        "missing_limit_upper",
        doc(joints=joint(f"type: revolute, {A3}, limits: {{lower: 0}}")),
        "joints[0].limits.upper: missing required field 'upper'",
    ),
    # --- shapes and types
    (
        "com_two_numbers",
        doc(bodies=body("mass: 1, com: [0, 0], inertia: [1, 1, 1, 0, 0, 0]")),
        "bodies[1].com: wrong shape: got a list of 2; expected a list of 3 numbers",
    ),
    (
        "inertia_five_numbers",
        doc(bodies=body("mass: 1, inertia: [1, 1, 1, 0, 0]")),
        "bodies[1].inertia: wrong shape: got a list of 5; expected a list of 6 numbers",
    ),
    (
        "string_mass",
        doc(bodies=body("mass: heavy, inertia: [1, 1, 1, 0, 0, 0]")),
        "bodies[1].mass: wrong type: got string 'heavy'; expected a number",
    ),
    (
        "string_in_vector",
        doc(bodies=body("mass: 1, com: [0, x, 0], inertia: [1, 1, 1, 0, 0, 0]")),
        "bodies[1].com[1]: wrong type: got string 'x'; expected a number",
    ),
    (
        "quoted_number",
        doc(bodies=body("mass: '1.0', inertia: [1, 1, 1, 0, 0, 0]")),
        "bodies[1].mass: wrong type: got string '1.0'; expected a number",
    ),
    (
        "bool_as_number",
        doc(joints=joint(f"type: revolute, {A3}, damping: true")),
        "joints[0].damping: wrong type: got boolean true; expected a number",
    ),
    (
        "bodies_not_list",
        doc(bodies="bodies: {ground: 1}\n"),
        "bodies: wrong shape: got a mapping; expected a list of mappings",
    ),
    (
        "body_not_mapping",
        doc(bodies="bodies:\n  - ground\n"),
        "bodies[0]: wrong type: got string 'ground'; expected a mapping",
    ),
    (
        "fixed_not_bool",
        doc(bodies="bodies:\n  - {name: ground, fixed: 1}\n" + LINK),
        "bodies[0].fixed: wrong type: got number 1; expected true or false",
    ),
    (
        "scalar_initial_list",
        doc(joints=joint(f"type: revolute, {A3}, initial: [0.1]")),
        "joints[0].initial: wrong type: got a list of 1; expected a number",
    ),
    (
        "universal_initial_scalar",
        doc(joints=joint("type: universal, axes: [[1,0,0],[0,1,0]], initial: 0")),
        "joints[0].initial: wrong shape: got number 0; expected a list of 2 numbers",
    ),
    (
        "free_initial_short",
        doc(joints=joint("type: free, initial: [0, 0, 0, 1, 0, 0]")),
        "joints[0].initial: wrong shape: got a list of 6; expected a list of 7 numbers",
    ),
    (
        "unknown_joint_type",
        doc(joints=joint(f"type: revolut, {A3}")),
        "joints[0].type: invalid value string 'revolut'; "
        "valid choices: fixed, revolute, prismatic, "
        "spherical, universal, cylindrical, helical, planar, free (did you mean 'revolute'?)",
    ),
    (
        "unknown_geometry_type",
        doc(bodies=body("geometry: [{type: cone, radius: 1}]")),
        "bodies[1].geometry[0].type: invalid value string 'cone'; valid choices: box, sphere,",
    ),
    (
        "capsule_without_length",
        doc(bodies=body("geometry: [{type: capsule, radius: 1}]")),
        "bodies[1].geometry[0]: a capsule needs exactly one of 'fromto' and 'length'",
    ),
    (
        "task_kind",
        doc(extra="tasks: [{name: t, body: link, kind: orientation}]\n"),
        "tasks[0].kind: invalid value string 'orientation'; valid choices: position, pose",
    ),
    # --- non-finite numbers
    (
        "nan_mass",
        doc(bodies=body("mass: .nan, inertia: [1, 1, 1, 0, 0, 0]")),
        "bodies[1].mass: non-finite number nan; expected a finite number",
    ),
    (
        "inf_in_com",
        doc(bodies=body("mass: 1, com: [0, -.inf, 0], inertia: [1, 1, 1, 0, 0, 0]")),
        "bodies[1].com[1]: non-finite number -inf",
    ),
    (
        "inf_gravity",
        doc(head=HEAD + "gravity: [0, 0, .inf]\n"),
        "gravity[2]: non-finite number inf",
    ),
    (
        "nan_axis",
        doc(joints=joint("type: revolute, axis: [.nan, 0, 1]")),
        "joints[0].axis[0]: non-finite number nan",
    ),
    # --- axes, poses, quaternions
    (
        "zero_axis",
        doc(joints=joint("type: prismatic, axis: [0, 0, 0]")),
        "joints[0].axis: zero axis; expected a nonzero direction",
    ),
    (
        "parallel_universal_axes",
        doc(joints=joint("type: universal, axes: [[1, 0, 0], [-2, 0, 0]]")),
        "joints[0].axes: the two axes are parallel",
    ),
    (
        "planar_normal",
        doc(joints=joint("type: planar, normal: [1, 0, 0]")),
        "joints[0].normal: unsupported planar normal [1.0, 0.0, 0.0]; expected [0, 0, 1]",
    ),
    (
        "helical_zero_lead",
        doc(joints=joint(f"type: helical, {A3}, lead: 0")),
        "joints[0].lead: invalid value 0.0; expected a nonzero number",
    ),
    (
        "rpy_and_quat",
        doc(joints=joint(f"type: revolute, {A3}, child_frame: {{rpy: [0,0,0], quat: [1,0,0,0]}}")),
        "joints[0].child_frame.quat: both 'rpy' and 'quat' given",
    ),
    (
        "quat_not_unit",
        doc(joints=joint(f"type: revolute, {A3}, child_frame: {{quat: [1, 0, 0, 0.1]}}")),
        "joints[0].child_frame.quat: quaternion norm 1.004987562112089 is not 1 "
        "(rbc never renormalises silently)",
    ),
    (
        "spherical_initial_not_unit",
        doc(joints=joint("type: spherical, initial: [2, 0, 0, 0]")),
        "joints[0].initial: quaternion norm 2.0 is not 1",
    ),
    (
        "unknown_frame",
        doc(
            bodies=body("mass: 1, inertia: [1, 1, 1, 0, 0, 0], frames: {tip: {xyz: [1, 0, 0]}}"),
            joints=joint(f"type: revolute, {A3}, child_frame: {{frame: tpi}}"),
        ),
        "joints[0].child_frame.frame: body 'link' has no frame 'tpi'; valid choices: tip "
        "(did you mean 'tip'?)",
    ),
    (
        "frame_with_xyz",
        doc(joints=joint(f"type: revolute, {A3}, child_frame: {{frame: a, xyz: [0,0,0]}}")),
        "joints[0].child_frame.xyz: 'xyz' cannot be combined with 'frame'",
    ),
    (
        "frame_ref_inside_frames",
        doc(bodies=body("frames: {a: {frame: b}}")),
        "bodies[1].frames.a.frame: unknown key 'frame'; valid choices: xyz, rpy, quat",
    ),
    # --- physics
    (
        "negative_mass",
        doc(bodies=body("mass: -1, inertia: [1, 1, 1, 0, 0, 0]")),
        "bodies[1].mass: negative mass -1.0; expected a mass ≥ 0 [kg]",
    ),
    (
        "inertia_not_pd",
        doc(bodies=body("mass: 1, inertia: [1, 1, -1, 0, 0, 0]")),
        "bodies[1].inertia: inertia is not positive semi-definite (principal moments "
        "[-1.0, 1.0, 1.0])",
    ),
    (
        "inertia_indefinite_products",
        doc(bodies=body("mass: 1, inertia: [1, 1, 1, 2, 0, 0]")),
        "bodies[1].inertia: inertia is not positive semi-definite",
    ),
    (
        "inertia_triangle",
        doc(bodies=body("mass: 1, inertia: [1, 1, 3, 0, 0, 0]")),
        "bodies[1].inertia: principal moments [1.0, 1.0, 3.0] break the triangle inequality; "
        "expected each principal moment ≤ the sum of the other two",
    ),
    (
        "negative_damping",
        doc(joints=joint(f"type: revolute, {A3}, damping: -0.1")),
        "joints[0].damping: invalid value -0.1; expected a number ≥ 0",
    ),
    (
        "negative_armature",
        doc(joints=joint(f"type: revolute, {A3}, armature: -1")),
        "joints[0].armature: invalid value -1.0; expected a number ≥ 0",
    ),
    (
        "limits_reversed",
        doc(joints=joint(f"type: revolute, {A3}, limits: {{lower: 1, upper: -1}}")),
        "joints[0].limits: lower 1.0 is not below upper -1.0; expected lower < upper",
    ),
    (
        "limits_equal_cylindrical",
        doc(joints=joint(f"type: cylindrical, {A3}, limits: {{lower: [0, 1], upper: [1, 1]}}")),
        "joints[0].limits: lower 1.0 is not below upper 1.0 (coordinate 1)",
    ),
    (
        "both_fixed_and_floating",
        doc(bodies="bodies:\n  - {name: ground, fixed: true, floating: true}\n" + LINK),
        "bodies[0].floating: a body cannot be both fixed and floating",
    ),
    (
        "gear_ratio_zero",
        doc(extra="actuators: [{name: m, joint: j, transmission: {type: gear, ratio: 0}}]\n"),
        "actuators[0].transmission.ratio: invalid value 0.0; expected a number > 0",
    ),
    (
        "effort_limits_reversed",
        doc(extra="actuators: [{name: m, joint: j, effort_limits: [5, -5]}]\n"),
        "actuators[0].effort_limits: lower 5.0 is not below upper -5.0",
    ),
    (
        "speed_limit_zero",
        doc(extra="actuators: [{name: m, joint: j, speed_limit: 0}]\n"),
        "actuators[0].speed_limit: invalid value 0.0; expected a number > 0",
    ),
    (
        "negative_coulomb",
        doc(extra="actuators: [{name: m, joint: j, coulomb: -1}]\n"),
        "actuators[0].coulomb: invalid value -1.0; expected a number ≥ 0",
    ),
    (
        "actuator_joint_and_terms",
        doc(extra="actuators: [{name: m, joint: j, terms: {j: 1}}]\n"),
        "actuators[0].terms: an actuator has exactly one port definition: 'joint'",
    ),
    (
        "actuator_without_port",
        doc(extra="actuators: [{name: m}]\n"),
        "actuators[0]: an actuator has exactly one port definition: 'joint'",
    ),
    (
        "tendon_unknown_joint",
        doc(extra="actuators: [{name: m, terms: {j: 0.5, k: 0.5}}]\n"),
        "actuators[0].terms.k: unknown joint 'k'",
    ),
    (
        "tendon_zero_coefficient",
        doc(extra="actuators: [{name: m, terms: {j: 0}}]\n"),
        "actuators[0].terms.j: coefficient of 'j' is zero",
    ),
    (
        "tendon_rotor_inertia",
        doc(extra="actuators: [{name: m, terms: {j: 0.5}, rotor_inertia: 1e-4}]\n"),
        "actuators[0].rotor_inertia: rotor_inertia on a tendon port is not supported",
    ),
    (
        "tendon_mixed_units",
        doc(bodies=BODIES + LINK.replace("link", "slide"),
            joints=JOINTS + "  - {name: p, type: prismatic, parent: link, child: slide, "
            "axis: [1, 0, 0]}\n",
            extra="actuators: [{name: m, terms: {j: 1, p: 1}}]\n"),
        "actuators[0].terms: a tendon port mixes prismatic and angular joints",
    ),
    (
        "tendon_joint_driven_twice",
        doc(extra="actuators: [{name: m, joint: j}, {name: t, terms: {j: 2}}]\n"),
        "actuators[1].terms.j: joint 'j' already driven by actuators[0]",
    ),
    (
        "screw_on_revolute",
        doc(extra="actuators: [{name: m, joint: j, transmission: {type: screw, lead: 0.01}}]\n"),
        "actuators[0].transmission: a screw transmission drives a linear port "
        "but joint 'j' is revolute",
    ),
    # --- references and names
    (
        "unknown_parent_body",
        doc(joints=joint(f"type: revolute, {A3}").replace("parent: ground", "parent: grund")),
        "joints[0].parent: unknown body 'grund'; valid choices: ground, link "
        "(did you mean 'ground'?)",
    ),
    (
        "unknown_child_body",
        doc(joints=joint(f"type: revolute, {A3}").replace("child: link", "child: lnk")),
        "joints[0].child: unknown body 'lnk'; valid choices: ground, link (did you mean 'link'?)",
    ),
    (
        "parent_is_child",
        doc(joints=joint(f"type: revolute, {A3}").replace("child: link", "child: ground")),
        "joints[0].child: joint 'j' connects body 'ground' to itself",
    ),
    (
        "duplicate_body",
        doc(bodies=BODIES + LINK),
        "bodies[2].name: duplicate name 'link' (already used by bodies[1])",
    ),
    (
        "duplicate_joint",
        doc(joints=JOINTS + HINGE),
        "joints[1].name: duplicate name 'j' (already used by joints[0])",
    ),
    (
        "duplicate_actuator",
        doc(
            bodies=BODIES + "  - {name: l2, mass: 0}\n",
            joints=JOINTS
            + "  - {name: k, type: revolute, parent: link, child: l2, axis: [0, 0, 1]}\n",
            extra="actuators: [{name: m, joint: j}, {name: m, joint: k}]\n",
        ),
        "actuators[1].name: duplicate name 'm' (already used by actuators[0])",
    ),
    (
        "duplicate_frame",
        doc(
            bodies="bodies:\n"
            + GROUND
            + "  - name: link\n    frames:\n      a: {}\n      a: {xyz: [1, 0, 0]}\n"
        ),
        "bodies[1].frames: duplicate key 'a' (line 8)",
    ),
    ("duplicate_top_key", doc(extra="name: again\n"), "robot.yaml: duplicate key 'name' (line 8)"),
    (
        "duplicate_task",
        doc(extra="tasks: [{name: t, body: link}, {name: t, body: ground}]\n"),
        "tasks[1].name: duplicate name 't'",
    ),
    (
        "two_actuators_one_joint",
        doc(extra="actuators: [{name: m1, joint: j}, {name: m2, joint: j}]\n"),
        "actuators[1].joint: joint 'j' already driven by actuators[0]; "
        "expected at most one actuator per joint",
    ),
    (
        "actuator_unknown_joint",
        doc(extra="actuators: [{name: m, joint: jj}]\n"),
        "actuators[0].joint: unknown joint 'jj'; valid choices: j (did you mean 'j'?)",
    ),
    (
        "actuator_on_spherical",
        doc(joints=joint("type: spherical"), extra="actuators: [{name: m, joint: j}]\n"),
        "actuators[0].joint: actuated joint 'j' is spherical; expected a 1-coordinate joint; "
        "valid choices: revolute, prismatic, helical",
    ),
    (
        "coupling_unknown_joint",
        doc(extra="couplings: [{name: c, type: linear, terms: {k: 1}}]\n"),
        "couplings[0].terms.k: unknown joint 'k'",
    ),
    (
        "coupling_all_zero",
        doc(extra="couplings: [{name: c, type: linear, terms: {j: 0}}]\n"),
        "couplings[0].terms: all coefficients are zero; expected at least one nonzero coefficient",
    ),
    (
        "coupling_no_terms",
        doc(extra="couplings: [{name: c, type: linear, terms: {}}]\n"),
        "couplings[0].terms: missing or empty 'terms'",
    ),
    (
        "coupling_type",
        doc(extra="couplings: [{name: c, type: gear, terms: {j: 1}}]\n"),
        "couplings[0].type: invalid value string 'gear'; valid choices: linear",
    ),
    (
        "effort_on_spherical",
        doc(
            joints=joint("type: spherical"),
            extra="forces: [{name: e, type: joint_effort, joint: j, value: 1}]\n",
        ),
        "forces[0].joint: loaded joint 'j' is spherical",
    ),
    (
        "spring_unknown_body",
        doc(
            extra="forces: [{name: s, type: spring, a: {body: link}, b: {body: wall},"
            " stiffness: 1, rest_length: 0}]\n"
        ),
        "forces[0].b.body: unknown body 'wall'",
    ),
    (
        "support_unknown_body",
        doc(extra="supports: [{name: s, body: foot}]\n"),
        "supports[0].body: unknown body 'foot'",
    ),
    (
        "initial_outside_limits",
        doc(joints=joint("type: revolute, axis: [0, 0, 1], initial: 1, "
                         "limits: {lower: -0.5, upper: 0.5}")),
        "joints[0].initial: initial value 1 is outside the joint's limits [-0.5, 0.5]",
    ),
    *(
        (f"support_name_{tag}", doc(extra=f"supports: [{{name: '{name}', body: link}}]\n"),
         f"supports[0].name: support name '{name}' {why}")
        for tag, name, why in (("dot", ".", "is '.'"),
                               ("dotdot", "..", "is '..'"), ("plus", "a+b", "contains '+'"))
    ),
    (
        "support_kind",
        doc(extra="supports: [{name: s, body: link, kind: line}]\n"),
        "supports[0].kind: invalid value string 'line'; valid choices: point, surface",
    ),
    (
        "support_point_with_patch",
        doc(extra="supports: [{name: s, body: link, kind: point, half_extents: [0.1, 0.1]}]\n"),
        "supports[0].half_extents: a point support has no contact rectangle",
    ),
    (
        "support_surface_without_patch",
        doc(extra="supports: [{name: s, body: link, kind: surface}]\n"),
        "supports[0].half_extents: a surface support needs 'half_extents'",
    ),
    (
        "support_flat_patch",
        doc(extra="supports: [{name: s, body: link, half_extents: [0.1, 0]}]\n"),
        "supports[0].half_extents[1]: invalid value 0.0; expected a number > 0",
    ),
    (
        "support_surface_radius",
        doc(extra="supports: [{name: s, body: link, half_extents: [0.1, 0.1], radius: 0.01}]\n"),
        "supports[0].radius: 'radius' is for point supports",
    ),
    (
        "support_negative_friction",
        doc(extra="supports: [{name: s, body: link, friction: -0.5}]\n"),
        "supports[0].friction: invalid value -0.5; expected a number ≥ 0",
    ),
    (
        "support_zero_normal",
        doc(extra="supports: [{name: s, body: link, normal: [0, 0, 0]}]\n"),
        "supports[0].normal: zero axis",
    ),
    (
        "support_solref",
        doc(extra="supports: [{name: s, body: link, solref: [0.02]}]\n"),
        "supports[0].solref: wrong shape",
    ),
    (
        "independent_unknown",
        doc(extra="independent: [jj]\n"),
        "independent[0]: unknown joint 'jj'; valid choices: j (did you mean 'j'?)",
    ),
    (
        "independent_twice",
        doc(extra="independent: [j, j]\n"),
        "independent[1]: joint 'j' listed twice",
    ),
    # --- roots
    (
        "no_root",
        doc(bodies="bodies:\n" + LINK + "  - {name: ground, mass: 0}\n"),
        "bodies[0]: bodies link, ground have no path to any root (no fixed or floating body among "
        "them); expected one of them marked `fixed: true` or `floating: true`",
    ),
    (
        "island",
        doc(
            bodies=BODIES + "  - {name: a, mass: 0}\n  - {name: b, mass: 0}\n",
            joints=JOINTS + "  - {name: k, type: fixed, parent: a, child: b}\n",
        ),
        "bodies[2]: bodies a, b have no path to any root",
    ),
    (
        "lone_body",
        doc(bodies=BODIES + "  - {name: orphan, mass: 0}\n"),
        "bodies[2]: body orphan has no path to any root",
    ),
    # --- pre-authored compiler output
    *[
        (
            f"preauthored_{key}",
            doc(extra=f"{key}: [j]\n"),
            f"{key}: '{key}' pre-authors {what}, which the compiler generates; expected a record "
            "holds only physical facts; rbc generates the spanning tree, cut joints",
        )
        for key, what in [
            ("tree", "the spanning tree"),
            ("spanning_tree", "the spanning tree"),
            ("cut_joints", "the cut joints"),
            ("chords", "the cut joints"),
            ("paths", "the closure paths"),
            ("modules", "the dependency modules"),
            ("partition", "the coordinate partition"),
            ("partitions", "the coordinate partition"),
            ("dependent", "the coordinate partition"),
            ("coordinates", "the coordinate order"),
            ("coordinate_order", "the coordinate order"),
        ]
    ],
    (
        "joint_cut_true",
        doc(joints=joint(f"type: revolute, {A3}, cut: true")),
        "joints[0].cut: 'cut' = boolean true would pre-author the cut joints, which the compiler "
        "generates; expected 'cut: prefer' (a hint) or 'cut: required' (a declared cut)",
    ),
    (
        "joint_cut_yes",
        doc(joints=joint(f"type: revolute, {A3}, cut: yes")),
        "joints[0].cut: 'cut' = boolean true would pre-author",
    ),
    (
        "joint_cut_always",
        doc(joints=joint(f"type: revolute, {A3}, cut: always")),
        "joints[0].cut: 'cut' = string 'always' would pre-author",
    ),
    (
        "joint_tree",
        doc(joints=joint(f"type: revolute, {A3}, tree: true")),
        "joints[0].tree: 'tree' pre-authors the spanning tree, which the compiler generates",
    ),
]


def test_support_fields(tmp_path: Path) -> None:
    r = parse(tmp_path, doc(extra="supports:\n"
                        "  - {name: foot, body: link, xyz: [0, 0, -0.2], radius: 0.02}\n"
                        "  - {name: sole, body: link, half_extents: [0.1, 0.05], friction: 0.7,"
                        " normal: [0, 0, 2], solref: [0.004, 1]}\n"))
    foot, sole = r.supports
    assert (foot.kind, foot.rows, foot.radius, foot.half_extents) == ("point", 3, 0.02, ())
    assert foot.friction == 1.0 and foot.normal == (0.0, 0.0, 1.0)  # documented defaults
    assert (sole.kind, sole.rows, sole.half_extents) == ("surface", 6, (0.1, 0.05))
    assert sole.friction == 0.7 and sole.normal == (0.0, 0.0, 1.0) and sole.solref == (0.004, 1.0)


@pytest.mark.parametrize(("text", "expected"), [c[1:] for c in BAD], ids=[c[0] for c in BAD])
def test_bad_record(tmp_path: Path, text: str, expected: str) -> None:
    with pytest.raises(RecordError) as info:
        parse(tmp_path, text)
    message = str(info.value)
    assert message.startswith(str(tmp_path / "robot.yaml") + ":"), message
    assert expected in message, message


def test_bad_case_ids_are_unique() -> None:
    ids = [c[0] for c in BAD]
    assert len(ids) == len(set(ids))


def test_file_not_found(tmp_path: Path) -> None:
    missing = tmp_path / "nope.yaml"
    with pytest.raises(RecordError, match=r"nope\.yaml: file not found"):
        parse_record(missing)


def test_error_carries_fields(tmp_path: Path) -> None:
    with pytest.raises(RecordError) as info:
        parse(tmp_path, doc(joints=joint(f"type: revolut, {A3}")))
    e = info.value
    assert (e.path, e.suggestion, e.exit_code) == ("joints[0].type", "revolute", 2)
    assert e.file == str(tmp_path / "robot.yaml")


def test_verify_catches_a_broken_record() -> None:
    from dataclasses import replace

    r = parse_record(FOURBAR)
    bad = replace(r, joints=(*r.joints, replace(r.joints[0])))
    with pytest.raises(RecordError, match=r"joints\[4\]\.name: duplicate name 'A'"):
        Parse().verify(bad)
    skew = replace(r, joints=(replace(r.joints[0], axis=(0.0, 0.0, 2.0)), *r.joints[1:]))
    with pytest.raises(RecordError, match=r"joints\[0\]\.axis: not a unit vector"):
        Parse().verify(skew)


def test_tendon_actuator_parses(tmp_path: Path) -> None:
    text = doc(extra="actuators: [{name: m, terms: {j: 0.5}, effort_limits: [-1, 1]}]\n")
    r = parse(tmp_path, text)
    (a,) = r.actuators
    assert a.joint is None and a.terms == (("j", 0.5),) and a.port_terms == (("j", 0.5),)
    assert r.actuated_joints() == frozenset({"j"})


@pytest.mark.parametrize("big", [1e308, -1e308])
def test_inertia_near_the_float_limit_is_checked_not_a_lapack_error(big) -> None:
    """The import fuzz's draw 1e308 in an inertia entry: LAPACK's eigensolver overflowed
    ('Eigenvalues did not converge', a traceback); the checks are scale-free and run on the
    tensor over its largest entry."""
    from rbc.ir.schema import inertia_problem

    t = np.diag([1.0, 1.0, 1.0])
    t[0, 1] = t[1, 0] = big  # indefinite: eigenvalues about ±1e308
    assert "not positive semi-definite" in inertia_problem(1.0, t)
    assert inertia_problem(1.0, np.diag([abs(big)] * 3)) is None  # isotropic: physical

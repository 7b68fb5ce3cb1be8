"""Generate ``records/excavator_tracked.yaml`` (issue 23 item 9; deterministic).

Run from the repository root: ``python records/make_excavator_tracked.py``. The machine is
``records/excavator.yaml``'s digging front (swing, boom, arm, bucket four-bar, the same
dimensions, masses and initial pose) on a tracked undercarriage with a dozer blade — the
machine of the RoboCompiler paper, as far as a rigid-body record can hold it:

* **Two boom cylinders** (left and right, 0.35 m off the centre plane), each its own loop
  swing – barrel – rod – boom, both driven (the equivalent cylinder of excavator.yaml split
  in two: half the mass and half the force each).
* **Tracks** (each side): the drive sprocket (rear, travel motor through a 40:1 gear), the
  front idler on its recoil yoke and three track rollers. The track holds the idler at its
  centre distance from the sprocket against the recoil spring: a rigid loop frame –
  sprocket axle – track strand – idler yoke – recoil slide – frame (the strand is a link
  pinned coaxially with the sprocket and the idler; its three joints are determined, the
  loop has no mobility). The track is inextensible and does not slip on the wheels, so the
  idler and the rollers turn with the sprocket at the ratio of the radii: linear couplings
  ``r_w ω_w = r_s ω_s`` (a belt transmission at the velocity level with a constant ratio,
  which integrates to a linear holonomic coupling).
* **Dozer blade** on two lift arms pivoting on the frame (a loop: frame – left arm – blade –
  right arm – frame, coaxial pivots) raised by one blade cylinder (a loop).

Seven independent inputs in the joint-space partition: ``sprocket_l``, ``sprocket_r``,
``slew``, ``boom_foot``, ``arm_pin``, ``bucket_pin``, ``blade_l``. Every loop closes at the
written ``initial`` values to round-off (the cylinder and linkage values are computed here
in closed form; the front's values are excavator.yaml's).
"""

from __future__ import annotations

import math
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
FRONT = HERE / "excavator.yaml"
OUT = HERE / "excavator_tracked.yaml"

#: Track geometry [m]: sprocket and idler centres, wheel radii, roller stations.
TRACK_Y = 1.2
SPROCKET_X, IDLER_X, AXLE_Z = -1.85, 1.85, 0.45
R_SPROCKET, R_IDLER, R_ROLLER = 0.35, 0.30, 0.10
ROLLER_X, ROLLER_Z = (-0.9, 0.0, 0.9), 0.15
#: Recoil spring [N/m] (a 20 t excavator's idler recoil spring, order of magnitude).
RECOIL_STIFFNESS = 2.0e6
#: Blade: lift-arm pivots, arm length to the blade mount, blade cylinder anchors [m].
BLADE_PIVOT_X, BLADE_PIVOT_Y, BLADE_PIVOT_Z = 2.25, 0.95, 0.55
BLADE_ARM = (0.8, 0.0, -0.1)
BLADE_CYL_MOUNT = (1.6, 0.0, 0.75)
BLADE_CYL_EYE = (-0.2, -0.95, 0.35)  # in the blade frame (origin at the left mount)
BOOM_CYL_Y = 0.35


def box_inertia(m: float, a: float, b: float, c: float) -> list[float]:
    """Solid box a × b × c about its COM: [ixx, iyy, izz, 0, 0, 0]."""
    return [m * (b * b + c * c) / 12, m * (a * a + c * c) / 12, m * (a * a + b * b) / 12,
            0.0, 0.0, 0.0]


def wheel_inertia(m: float, r: float, width: float) -> list[float]:
    """Solid disc of radius r and width w with its axis along y."""
    i_axis = 0.5 * m * r * r
    i_dia = m * (3 * r * r + width * width) / 12
    return [i_dia, i_axis, i_dia, 0.0, 0.0, 0.0]


def rot_y(theta: float, p: tuple[float, float, float]) -> tuple[float, float, float]:
    """Rotate p about +y by theta (rbc revolute about [0, 1, 0])."""
    c, s = math.cos(theta), math.sin(theta)
    return (c * p[0] + s * p[2], p[1], -s * p[0] + c * p[2])


def cylinder_angles(a: tuple, b: tuple, child_theta: float) -> tuple[float, float, float]:
    """``(mount angle φ, length, rod-pin angle)`` of a planar (x-z) cylinder from world
    point a to world point b, the rod pin on a body turned by child_theta about y."""
    dx, dz = b[0] - a[0], b[2] - a[2]
    phi = math.atan2(-dz, dx)  # Ry(φ) maps x to the unit vector a → b
    return phi, math.hypot(dx, dz), child_theta - phi


def front() -> dict:
    """excavator.yaml's front, its single boom cylinder split into a left and a right one."""
    rec = yaml.safe_load(FRONT.read_text())
    bodies = [b for b in rec["bodies"] if b["name"] != "base"]
    joints = list(rec["joints"])
    out_b, out_j = [], []
    for b in bodies:
        if b["name"].startswith("boom_cyl_"):
            for side in ("l", "r"):
                half = dict(b, name=f"{b['name']}_{side}", mass=b["mass"] / 2,
                            inertia=[x / 2 for x in b["inertia"]])
                out_b.append(half)
        else:
            out_b.append(b)
    for j in joints:
        if j["name"].startswith("boom_cyl"):
            for side, y in (("l", BOOM_CYL_Y), ("r", -BOOM_CYL_Y)):
                jj = dict(j, name=f"{j['name']}_{side}")
                for end in ("parent", "child"):
                    if jj[end].startswith("boom_cyl_"):
                        jj[end] = f"{jj[end]}_{side}"
                for key in ("parent_frame", "child_frame"):
                    frame = dict(jj[key])
                    host = jj["parent" if key == "parent_frame" else "child"]
                    if host in ("swing", "boom"):
                        x, _, z = frame["xyz"]
                        frame["xyz"] = [x, y, z]
                    jj[key] = frame
                out_j.append(jj)
        else:
            out_j.append(j)
    acts = []
    for a in rec["actuators"]:
        if a["joint"] == "boom_cyl":
            for side in ("l", "r"):
                lo, hi = a["effort_limits"]
                acts.append(dict(a, name=f"boom_cylinder_{side}", joint=f"boom_cyl_{side}",
                                 effort_limits=[lo / 2, hi / 2]))
        else:
            acts.append(a)
    return {"bodies": out_b, "joints": out_j, "actuators": acts, "tasks": rec["tasks"]}


def undercarriage() -> tuple[list, list, list, list]:
    """Bodies, joints, actuators and couplings of the frame, tracks and blade."""
    bodies = [{"name": "base", "fixed": True, "mass": 4600.0, "com": [0.0, 0.0, 0.5],
               "inertia": box_inertia(4600.0, 4.45, 2.98, 0.8)}]
    joints, acts, couplings = [], [], []
    for side, y in (("l", TRACK_Y), ("r", -TRACK_Y)):
        bodies += [
            {"name": f"sprocket_{side}", "mass": 250.0,
             "inertia": wheel_inertia(250.0, R_SPROCKET, 0.3)},
            {"name": f"strand_{side}", "mass": 5.0, "com": [1.85, 0.0, 0.0],
             "inertia": box_inertia(5.0, 3.7, 0.05, 0.05)},
            {"name": f"yoke_{side}", "mass": 150.0, "inertia": box_inertia(150.0, 0.6, 0.3, 0.3)},
            {"name": f"idler_{side}", "mass": 300.0,
             "inertia": wheel_inertia(300.0, R_IDLER, 0.3)},
        ]
        bodies += [{"name": f"roller_{side}{k}", "mass": 40.0,
                    "inertia": wheel_inertia(40.0, R_ROLLER, 0.25)} for k in range(1, 4)]
        axle = {"axis": [0, 1, 0]}
        joints += [
            {"name": f"sprocket_{side}", "type": "revolute", "parent": "base",
             "child": f"sprocket_{side}", "parent_frame": {"xyz": [SPROCKET_X, y, AXLE_Z]},
             **axle, "initial": 0.0},
            {"name": f"track_rear_{side}", "type": "revolute", "parent": "base",
             "child": f"strand_{side}", "parent_frame": {"xyz": [SPROCKET_X, y, AXLE_Z]},
             **axle, "initial": 0.0},
            {"name": f"recoil_{side}", "type": "prismatic", "parent": "base",
             "child": f"yoke_{side}", "parent_frame": {"xyz": [IDLER_X, y, AXLE_Z]},
             "axis": [1, 0, 0], "limits": {"lower": -0.1, "upper": 0.1},
             "spring": {"stiffness": RECOIL_STIFFNESS, "rest": 0.0}, "initial": 0.0},
            {"name": f"idler_{side}", "type": "revolute", "parent": f"yoke_{side}",
             "child": f"idler_{side}", **axle, "initial": 0.0},
        ]
        joints += [{"name": f"roller_{side}{k}", "type": "revolute", "parent": "base",
                    "child": f"roller_{side}{k}",
                    "parent_frame": {"xyz": [x, y, ROLLER_Z]}, **axle, "initial": 0.0}
                   for k, x in enumerate(ROLLER_X, start=1)]
        # closes the track loop: the strand's front end is pinned at the idler axle
        joints.append({"name": f"track_front_{side}", "type": "revolute",
                       "parent": f"strand_{side}", "child": f"yoke_{side}",
                       "parent_frame": {"xyz": [IDLER_X - SPROCKET_X, 0, 0]}, **axle,
                       "initial": 0.0})
        acts.append({"name": f"travel_motor_{side}", "joint": f"sprocket_{side}",
                     "transmission": {"type": "gear", "ratio": 40}, "rotor_inertia": 0.02,
                     "effort_limits": [-60000, 60000], "speed_limit": 3.0})
        couplings.append({"name": f"track_idler_{side}", "type": "linear",
                          "terms": {f"idler_{side}": 1.0,
                                    f"sprocket_{side}": -R_SPROCKET / R_IDLER}})
        couplings += [{"name": f"track_roller_{side}{k}", "type": "linear",
                       "terms": {f"roller_{side}{k}": 1.0,
                                 f"sprocket_{side}": -R_SPROCKET / R_ROLLER}}
                      for k in range(1, 4)]
    # dozer blade: two lift arms, the blade welded to both, one cylinder
    blade_theta = 0.0
    bodies += [
        {"name": "blade_arm_l", "mass": 120.0, "com": [0.4, 0.0, -0.05],
         "inertia": box_inertia(120.0, 0.9, 0.15, 0.2)},
        {"name": "blade_arm_r", "mass": 120.0, "com": [0.4, 0.0, -0.05],
         "inertia": box_inertia(120.0, 0.9, 0.15, 0.2)},
        {"name": "blade", "mass": 600.0, "com": [0.1, -0.95, 0.2],
         "inertia": box_inertia(600.0, 0.3, 2.9, 0.6)},
        {"name": "blade_cyl_barrel", "mass": 60.0, "com": [0.35, 0, 0],
         "inertia": box_inertia(60.0, 0.8, 0.12, 0.12)},
        {"name": "blade_cyl_rod", "mass": 30.0, "com": [-0.3, 0, 0],
         "inertia": box_inertia(30.0, 0.7, 0.06, 0.06)},
    ]
    pivot = {"l": BLADE_PIVOT_Y, "r": -BLADE_PIVOT_Y}
    for side in ("l", "r"):
        joints.append({"name": f"blade_{side}", "type": "revolute", "parent": "base",
                       "child": f"blade_arm_{side}",
                       "parent_frame": {"xyz": [BLADE_PIVOT_X, pivot[side], BLADE_PIVOT_Z]},
                       "axis": [0, 1, 0], "limits": {"lower": -0.4, "upper": 0.3},
                       "initial": blade_theta})
    mount_w = (BLADE_PIVOT_X + BLADE_ARM[0], BLADE_PIVOT_Y, BLADE_PIVOT_Z + BLADE_ARM[2])
    eye_w = tuple(m + e for m, e in zip(mount_w, rot_y(blade_theta, BLADE_CYL_EYE),
                                        strict=True))
    phi, length, pin_angle = cylinder_angles(BLADE_CYL_MOUNT, eye_w, blade_theta)
    joints += [
        {"name": "blade_mount_l", "type": "fixed", "parent": "blade_arm_l", "child": "blade",
         "parent_frame": {"xyz": list(BLADE_ARM)}},
        {"name": "blade_cyl_mount", "type": "revolute", "parent": "base",
         "child": "blade_cyl_barrel", "parent_frame": {"xyz": list(BLADE_CYL_MOUNT)},
         "axis": [0, 1, 0], "initial": phi},
        {"name": "blade_cyl", "type": "prismatic", "parent": "blade_cyl_barrel",
         "child": "blade_cyl_rod", "axis": [1, 0, 0],
         "limits": {"lower": 1.0, "upper": 1.5}, "initial": length},
        # closes the blade loop (the right arm also holds the blade)
        {"name": "blade_mount_r", "type": "fixed", "parent": "blade_arm_r", "child": "blade",
         "parent_frame": {"xyz": list(BLADE_ARM)},
         "child_frame": {"xyz": [0.0, -2 * BLADE_PIVOT_Y, 0.0]}},
        # closes the blade cylinder loop
        {"name": "blade_cyl_rod_pin", "type": "revolute", "parent": "blade_cyl_rod",
         "child": "blade", "child_frame": {"xyz": list(BLADE_CYL_EYE)}, "axis": [0, 1, 0],
         "initial": pin_angle},
    ]
    acts.append({"name": "blade_cylinder", "joint": "blade_cyl",
                 "effort_limits": [-90000, 150000], "speed_limit": 0.25})
    return bodies, joints, acts, couplings


HEADER = """\
# excavator_tracked — generated by records/make_excavator_tracked.py (do not edit by hand).
# The 20 t excavator of excavator.yaml (same front: swing, boom 5.7 m, arm 2.9 m, bucket
# four-bar, now with a left and a right boom cylinder) on a tracked undercarriage (per side:
# drive sprocket r 0.35 m with a 40:1 travel motor, front idler r 0.30 m on a recoil yoke
# held by the track strand against a 2 MN/m recoil spring, three rollers r 0.10 m; the track
# turns idler and rollers at the ratio of the radii) and a dozer blade on two lift arms with
# one cylinder. Seven independent inputs in the joint-space partition: sprocket_l,
# sprocket_r, slew, boom_foot, arm_pin, bucket_pin, blade_l. Loops: 2 boom cylinders, arm
# cylinder, bucket cylinder, bucket four-bar, 2 track strands, blade arms, blade cylinder.
"""


def _flow(x) -> str:
    return yaml.safe_dump(x, default_flow_style=True, width=10_000, sort_keys=False).strip()


def render(rec: dict) -> str:
    """Block-style sections of one flow mapping per item (diff-friendly)."""
    lines = [HEADER.rstrip(), "rbc: 1", f"name: {rec['name']}", "gravity: [0, 0, -9.81]"]
    for section in ("bodies", "joints", "actuators", "couplings", "tasks"):
        lines.append(f"{section}:")
        lines += [f"  - {_flow(item)}" for item in rec[section]]
    return "\n".join(lines) + "\n"


def build() -> dict:
    fr = front()
    ub, uj, ua, uc = undercarriage()
    return {"name": "excavator_tracked", "bodies": ub + fr["bodies"],
            "joints": uj + fr["joints"], "actuators": fr["actuators"] + ua,
            "couplings": uc, "tasks": fr["tasks"]}


if __name__ == "__main__":
    OUT.write_text(render(build()))
    print(f"wrote {OUT}")

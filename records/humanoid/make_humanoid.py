"""Generate the synthetic linkage-driven humanoid records and the formation files.

    python records/humanoid/make_humanoid.py [DIR]     # rewrites records/humanoid/*.yaml

Deterministic: the same numbers every run (no randomness, no dependency beyond numpy and
PyYAML). Writes

* ``humanoid_v1.yaml`` … ``humanoid_v5.yaml``: five variants of one design (link lengths,
  masses and inertias differ; README.md lists them), each 42 bodies, 49 joints, 8
  independent loops, 21 actuators (ports), a floating pelvis, two sole supports
  (``sole_l``, ``sole_r``, surfaces) and two palm frames (``forearm_l/palm``,
  ``forearm_r/palm``);
* ``ring.yaml``, ``semicircle.yaml``, ``line.yaml``: compositions of the five variants
  holding hands with ideal ball joints between palm points (docs/composition.md).

**The design, per side.** Hip: three rotary drives (yaw z, roll x, pitch y) between pelvis,
``hip_yaw``, ``hip_roll`` and ``thigh``. Knee: a passive pin (``knee``, flexion +y) driven
by a ball screw acting in a planar triangle — barrel pinned to the thigh
(``knee_barrel``), the screw's rod sliding in it (``knee_screw``, the port: the pin-to-pin
length [m]), the rod pinned to a horn on the shank (``knee_rod``). Ankle: two passive axes
(``ankle_pitch`` shank → ``ankle_cross``, ``ankle_roll`` cross → foot) driven by two screw
struts behind the shank (inner ``i`` and outer ``o``), each a universal joint on the shank
with its cross body (``ankle_<s>_u1`` pitch axis, ``ankle_<s>_u2`` roll axis), a barrel, the
screw (``ankle_<s>_screw``, the port) and a ball joint on the foot (``ankle_<s>_ball``).
Elbow: a passive pin (``elbow``) driven by a screw in a planar triangle like the knee
(``elbow_barrel``, ``elbow_screw``, ``elbow_rod``). Shoulder: three rotary drives (pitch y,
roll x, yaw z). Waist: one rotary drive (yaw z) between pelvis and torso.

Counts: bodies 2 + 2 × 14 (legs) + 2 × 6 (arms) = 42; joints 1 + 2 × 17 + 2 × 7 = 49;
cycle rank 49 − 42 + 1 = 8 (per side: knee, two ankle struts, elbow); ports 1 + 2 × 6 +
2 × 4 = 21. With a free pelvis the robot has 6 + 21 = 27 independent speeds.

**Drive data** (representative of electric humanoids; README.md gives the sources and the
assumptions): rotary drives are frameless motors with planetary or cycloid reductions
(rotor inertia, ratio, peak torque, no-load speed at the joint, viscous and Coulomb
friction); screws are motors on ball/roller screws (lead, rotor inertia; the knee's 5 mm
lead and 2.0e-5 kg·m² rotor give α = I_m (2π/lead)² = 31.6 kg of equivalent mass along the
stroke).

**Geometry.** x forward, y left, z up; the pelvis frame is at the hip-joint height. Body
masses and inertias come from boxes and solid cylinders of the stated sizes
(:func:`box`, :func:`rod`). All ``initial`` values close every loop exactly (computed here
from the loop geometry, :func:`knee_like` and :func:`ankle_strut`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import yaml

HERE = Path(__file__).resolve().parent


# ------------------------------------------------------------------------ rigid-body data

def box(m: float, sx: float, sy: float, sz: float, com=(0.0, 0.0, 0.0)) -> dict:
    """Mass, COM and inertia about the COM of a solid box of full sizes sx, sy, sz [m]."""
    return {"mass": m, "com": list(com),
            "inertia": [m * (sy ** 2 + sz ** 2) / 12, m * (sx ** 2 + sz ** 2) / 12,
                        m * (sx ** 2 + sy ** 2) / 12, 0.0, 0.0, 0.0]}


def rod(m: float, length: float, radius: float, com=(0.0, 0.0, 0.0), axis: str = "z") -> dict:
    """A solid cylinder of the given length and radius along ``axis`` (x, y or z)."""
    ax = m * radius ** 2 / 2
    tr = m * (3 * radius ** 2 + length ** 2) / 12
    diag = {"x": [ax, tr, tr], "y": [tr, ax, tr], "z": [tr, tr, ax]}[axis]
    return {"mass": m, "com": list(com), "inertia": [*diag, 0.0, 0.0, 0.0]}


def Rx(a: float) -> np.ndarray:
    c, s = math.cos(a), math.sin(a)
    return np.array([[1, 0, 0], [0, c, -s], [0, s, c]])


def Ry(a: float) -> np.ndarray:
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, 0, s], [0, 1, 0], [-s, 0, c]])


def Rz(a: float) -> np.ndarray:
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]])


def quat(R: np.ndarray) -> list[float]:
    """Unit quaternion (w, x, y, z) of a rotation matrix (w ≥ 0)."""
    w = math.sqrt(max(0.0, 1 + R[0, 0] + R[1, 1] + R[2, 2])) / 2
    x = math.sqrt(max(0.0, 1 + R[0, 0] - R[1, 1] - R[2, 2])) / 2
    y = math.sqrt(max(0.0, 1 - R[0, 0] + R[1, 1] - R[2, 2])) / 2
    z = math.sqrt(max(0.0, 1 - R[0, 0] - R[1, 1] + R[2, 2])) / 2
    x = math.copysign(x, R[2, 1] - R[1, 2])
    y = math.copysign(y, R[0, 2] - R[2, 0])
    z = math.copysign(z, R[1, 0] - R[0, 1])
    q = np.array([w, x, y, z])
    return [float(v) for v in q / np.linalg.norm(q)]


def f(x) -> list[float] | float:
    """Rounded plain floats for the YAML (12 significant digits; loops close to ≤ 1e-11)."""
    if np.ndim(x) == 0:
        return float(f"{float(x):.12g}") + 0.0
    return [float(f"{float(v):.12g}") + 0.0 for v in np.ravel(x)]


# ------------------------------------------------------------------------ variant data

@dataclass(frozen=True)
class Variant:
    """Dimensions [m] and mass scale of one humanoid variant."""

    name: str
    pelvis_width: float = 0.20      # hip yaw axes ±pelvis_width/2 apart
    thigh: float = 0.40
    shank: float = 0.40
    foot: float = 0.22              # sole length
    torso: float = 0.45             # waist to shoulder height
    shoulder_width: float = 0.40
    upper_arm: float = 0.28
    forearm: float = 0.26
    mass_scale: float = 1.0
    torso_mass: float = 16.0


VARIANTS = (
    Variant("humanoid_v1"),
    Variant("humanoid_v2", thigh=0.38, shank=0.38, upper_arm=0.27, forearm=0.25,
            mass_scale=0.92, torso_mass=14.5),
    Variant("humanoid_v3", thigh=0.42, shank=0.42, torso=0.47, upper_arm=0.29, forearm=0.27,
            mass_scale=1.08, torso_mass=17.5),
    Variant("humanoid_v4", thigh=0.41, shank=0.39, pelvis_width=0.22, shoulder_width=0.42,
            upper_arm=0.30, forearm=0.28, mass_scale=1.0, torso_mass=15.0),
    Variant("humanoid_v5", thigh=0.39, shank=0.41, torso=0.43, upper_arm=0.27,
            forearm=0.26, mass_scale=1.05, torso_mass=19.0),
)

#: Rotary drives: (rotor inertia kg·m², gear ratio, peak torque N·m at the joint,
#: no-load speed rad/s at the joint, viscous N·m·s/rad, Coulomb N·m).
ROTARY = {
    "hip_yaw": (6.0e-5, 18.0, 120.0, 16.0, 0.4, 1.5),
    "hip_roll": (1.2e-4, 25.0, 220.0, 12.0, 0.6, 2.5),
    "hip_pitch": (1.2e-4, 25.0, 220.0, 12.0, 0.6, 2.5),
    "waist": (1.2e-4, 25.0, 200.0, 12.0, 0.6, 2.5),
    "shoulder_pitch": (4.0e-5, 20.0, 60.0, 18.0, 0.2, 0.8),
    "shoulder_roll": (4.0e-5, 20.0, 60.0, 18.0, 0.2, 0.8),
    "shoulder_yaw": (2.5e-5, 16.0, 30.0, 20.0, 0.1, 0.5),
}
#: Screw drives: (lead m/rev, rotor inertia kg·m², peak force N, no-load speed m/s at the
#: port, viscous N·s/m, Coulomb N). Knee: 5 mm lead, α = 2.0e-5·(2π/0.005)² = 31.6 kg.
SCREW = {
    "knee": (0.005, 2.0e-5, 8000.0, 0.45, 300.0, 120.0),
    "ankle": (0.004, 1.0e-5, 3500.0, 0.40, 200.0, 60.0),
    "elbow": (0.004, 6.0e-6, 2000.0, 0.45, 120.0, 40.0),
}

#: Joint-angle ranges [rad] the knee and elbow screws' strokes cover (the pins' own limits
#: are a little wider, so that every stroke inside the screw limits is reachable).
KNEE_RANGE = (0.05, 2.0)
ELBOW_RANGE = (0.05, 2.2)
#: Half stroke of an ankle screw about its length at the neutral foot [m]: ±15 mm is within
#: ±0.25 rad of pitch (lever 0.06 m) and ±0.43 rad of roll (lever 0.035 m), inside the
#: passive axes' limits for every pair of screw lengths.
ANKLE_STROKE = 0.015

#: The standing reference pose [rad]: slightly bent knees, arms raised sideways and forward.
STAND = {"knee": 0.35, "hip_pitch": -0.17, "ankle_pitch": -0.18, "ankle_roll": 0.0,
         "shoulder_pitch": -0.45, "shoulder_roll": 0.55, "shoulder_yaw": 0.0, "elbow": 0.5}


# ------------------------------------------------------------------------ loop geometry

def knee_like(P: np.ndarray, K: np.ndarray, Q_c: np.ndarray, theta: float, flex: np.ndarray
              ) -> tuple[float, float, float]:
    """Closed values of a planar screw triangle (knee or elbow).

    Host body H carries the barrel pin at P and the main pin at K (axis ``flex``, the
    child's rotation R(flex, θ)); the child carries the horn point Q_c (child coords, origin
    at K). Barrel orientation Ry(β) (strut along the barrel's −z), screw length s, rod pin γ
    (rod → child about y). Returns ``(β, s, γ)``.
    """
    R = axis_rotation(flex, theta)
    Q = K + R @ Q_c
    d = Q - P
    s = float(np.linalg.norm(d))
    beta = math.atan2(-d[0], -d[2])
    # rod orientation Ry(β); child orientation R = Ry(±θ): γ so that Ry(β)·Ry(γ) = R
    gamma = theta * float(flex[1]) - beta
    return beta, s, gamma


def stroke(P: np.ndarray, K: np.ndarray, Q_c: np.ndarray, flex: np.ndarray,
           angles: tuple[float, float]) -> dict:
    """Screw limits [m] of a triangle: the pin-to-pin lengths at the ends of the angle range
    (the length is monotone in the angle over the range; asserted)."""
    grid = np.linspace(*angles, 41)
    lengths = np.array([knee_like(P, K, Q_c, a, flex)[1] for a in grid])
    steps = np.diff(lengths)
    assert np.all(steps > 0) or np.all(steps < 0), "screw length not monotone over the range"
    return {"lower": f(lengths.min()), "upper": f(lengths.max())}


def axis_rotation(axis: np.ndarray, angle: float) -> np.ndarray:
    a = np.asarray(axis, dtype=float)
    a = a / np.linalg.norm(a)
    K = np.array([[0, -a[2], a[1]], [a[2], 0, -a[0]], [-a[1], a[0], 0]])
    return np.eye(3) + math.sin(angle) * K + (1 - math.cos(angle)) * K @ K


def ankle_strut(U: np.ndarray, A: np.ndarray, F_f: np.ndarray, pitch: float, roll: float
                ) -> tuple[float, float, float, list[float]]:
    """Closed values of one ankle strut: universal angles (a1 about y, a2 about x), screw
    length s and the ball joint's quaternion (rod → foot), for the foot at
    ``Ry(pitch)·Rx(roll)`` about the ankle point A (shank coords)."""
    Rf = Ry(pitch) @ Rx(roll)
    F = A + Rf @ F_f
    v = F - U
    s = float(np.linalg.norm(v))
    d = v / s
    a2 = math.asin(float(d[1]))
    a1 = math.atan2(-d[0], -d[2])
    Rb = Ry(a1) @ Rx(a2)
    return a1, a2, s, quat(Rb.T @ Rf)


# ------------------------------------------------------------------------ the record

def humanoid(v: Variant) -> dict:
    """The record of one variant (module docstring)."""
    ms = v.mass_scale
    bodies: list[dict] = []
    joints: list[dict] = []
    acts: list[dict] = []

    def body(name: str, data: dict, **extra) -> None:
        bodies.append({"name": name, **extra, **data})

    def joint(name, type_, parent, child, pf=None, cf=None, **extra) -> None:
        j = {"name": name, "type": type_, "parent": parent, "child": child}
        if pf is not None:
            j["parent_frame"] = pf
        if cf is not None:
            j["child_frame"] = cf
        j.update(extra)
        joints.append(j)

    def rotary(joint_name: str, kind: str) -> None:
        I_m, N, peak, speed, visc, coul = ROTARY[kind]
        acts.append({"name": f"m_{joint_name}", "joint": joint_name,
                     "transmission": {"type": "gear", "ratio": N}, "rotor_inertia": I_m,
                     "effort_limits": [-peak, peak], "speed_limit": speed,
                     "viscous": visc, "coulomb": coul})

    def screw(joint_name: str, kind: str) -> None:
        lead, I_m, peak, speed, visc, coul = SCREW[kind]
        acts.append({"name": f"m_{joint_name}", "joint": joint_name,
                     "transmission": {"type": "screw", "lead": lead}, "rotor_inertia": I_m,
                     "effort_limits": [-peak, peak], "speed_limit": speed,
                     "viscous": visc, "coulomb": coul})

    body("pelvis", box(8.0 * ms, 0.18, v.pelvis_width + 0.08, 0.14, (0.0, 0.0, 0.04)),
         floating=True)
    body("torso", box(v.torso_mass * ms, 0.22, v.shoulder_width - 0.04, v.torso,
                      (0.0, 0.0, 0.5 * v.torso)))
    joint("waist", "revolute", "pelvis", "torso", {"xyz": [0.0, 0.0, 0.12]}, axis=[0, 0, 1],
          limits={"lower": -1.0, "upper": 1.0}, initial=0.0)
    rotary("waist", "waist")
    for side, sgn in (("l", 1.0), ("r", -1.0)):
        leg(v, side, sgn, body, joint, rotary, screw)
    for side, sgn in (("l", 1.0), ("r", -1.0)):
        arm(v, side, sgn, body, joint, rotary, screw)
    rec = {
        "rbc": 1,
        "name": v.name,
        "gravity": [0.0, 0.0, -9.81],
        "bodies": bodies,
        "joints": joints,
        "actuators": acts,
        "supports": [{"name": f"sole_{s}", "body": f"foot_{s}",
                      "xyz": [0.03, 0.0, -0.07], "kind": "surface",
                      "half_extents": [v.foot / 2, 0.05], "friction": 0.8}
                     for s in ("l", "r")],
        "tasks": [{"name": "pelvis", "body": "pelvis", "kind": "pose"},
                  *({"name": f"palm_{s}", "body": f"forearm_{s}", "frame": "palm",
                     "kind": "position"} for s in ("l", "r"))],
    }
    return rec


def leg(v: Variant, side: str, sgn: float, body, joint, rotary, screw) -> None:
    ms = v.mass_scale
    s = side
    y0 = sgn * v.pelvis_width / 2
    body(f"hip_yaw_{s}", rod(1.0 * ms, 0.08, 0.05, (0.0, 0.0, -0.03)))
    body(f"hip_roll_{s}", rod(1.2 * ms, 0.08, 0.05, (0.0, 0.0, -0.02), axis="x"))
    body(f"thigh_{s}", rod(5.0 * ms, v.thigh, 0.06, (0.0, 0.0, -0.45 * v.thigh)))
    body(f"shank_{s}", rod(3.0 * ms, v.shank, 0.045, (0.0, 0.0, -0.4 * v.shank)))
    hp = STAND["hip_pitch"]
    joint(f"hip_yaw_{s}", "revolute", "pelvis", f"hip_yaw_{s}", {"xyz": [0.0, y0, -0.02]},
          axis=[0, 0, 1], limits={"lower": -0.8, "upper": 0.8}, initial=0.0)
    joint(f"hip_roll_{s}", "revolute", f"hip_yaw_{s}", f"hip_roll_{s}",
          {"xyz": [0.0, 0.0, -0.05]}, axis=[1, 0, 0], limits={"lower": -0.6, "upper": 0.6},
          initial=0.0)
    joint(f"hip_pitch_{s}", "revolute", f"hip_roll_{s}", f"thigh_{s}",
          {"xyz": [0.0, 0.0, -0.03]}, axis=[0, 1, 0], limits={"lower": -1.8, "upper": 0.8},
          initial=hp)
    for n, kind in (("hip_yaw", "hip_yaw"), ("hip_roll", "hip_roll"), ("hip_pitch", "hip_pitch")):
        rotary(f"{n}_{s}", kind)
    # knee: passive pin driven by the screw triangle in front of the thigh
    K = np.array([0.0, 0.0, -v.thigh])
    P = np.array([0.055, 0.0, -0.12])
    Q_c = np.array([0.055, 0.0, 0.06])
    th = STAND["knee"]
    beta, length, gamma = knee_like(P, K, Q_c, th, np.array([0.0, 1.0, 0.0]))
    body(f"knee_barrel_{s}", rod(0.8 * ms, 0.16, 0.03, (0.0, 0.0, -0.06)))
    body(f"knee_rod_{s}", rod(0.3 * ms, 0.16, 0.012, (0.0, 0.0, 0.07)))
    joint(f"knee_{s}", "revolute", f"thigh_{s}", f"shank_{s}", {"xyz": f(K)}, axis=[0, 1, 0],
          limits={"lower": 0.0, "upper": 2.2}, initial=f(th))
    joint(f"knee_barrel_{s}", "revolute", f"thigh_{s}", f"knee_barrel_{s}", {"xyz": f(P)},
          axis=[0, 1, 0], initial=f(beta))
    joint(f"knee_screw_{s}", "prismatic", f"knee_barrel_{s}", f"knee_rod_{s}", axis=[0, 0, -1],
          limits=stroke(P, K, Q_c, np.array([0.0, 1.0, 0.0]), KNEE_RANGE), initial=f(length))
    joint(f"knee_rod_{s}", "revolute", f"knee_rod_{s}", f"shank_{s}", None, {"xyz": f(Q_c)},
          axis=[0, 1, 0], initial=f(gamma))
    screw(f"knee_screw_{s}", "knee")
    # ankle: two passive axes and two screw struts behind the shank
    A = np.array([0.0, 0.0, -v.shank])
    body(f"ankle_cross_{s}", rod(0.15 * ms, 0.06, 0.015, axis="y"))
    body(f"foot_{s}", box(1.0 * ms, v.foot, 0.10, 0.05, (0.03, 0.0, -0.045)))
    pitch, roll = STAND["ankle_pitch"], STAND["ankle_roll"]
    joint(f"ankle_pitch_{s}", "revolute", f"shank_{s}", f"ankle_cross_{s}", {"xyz": f(A)},
          axis=[0, 1, 0], limits={"lower": -0.9, "upper": 0.7}, initial=pitch)
    joint(f"ankle_roll_{s}", "revolute", f"ankle_cross_{s}", f"foot_{s}", axis=[1, 0, 0],
          limits={"lower": -0.5, "upper": 0.5}, initial=roll)
    for strut, lat in (("i", -sgn * 0.035), ("o", sgn * 0.035)):
        U = np.array([-0.06, lat, -0.12])
        F_f = np.array([-0.06, lat, -0.025])
        a1, a2, ls, qb = ankle_strut(U, A, F_f, pitch, roll)
        ls0 = ankle_strut(U, A, F_f, 0.0, 0.0)[2]
        nm = f"ankle_{strut}_{s}"
        body(f"{nm}_cross", rod(0.05 * ms, 0.03, 0.01, axis="y"))
        body(f"{nm}_barrel", rod(0.5 * ms, 0.14, 0.022, (0.0, 0.0, -0.05)))
        body(f"{nm}_rod", rod(0.15 * ms, 0.16, 0.008, (0.0, 0.0, 0.07)))
        joint(f"{nm}_u1", "revolute", f"shank_{s}", f"{nm}_cross", {"xyz": f(U)},
              axis=[0, 1, 0], initial=f(a1))
        joint(f"{nm}_u2", "revolute", f"{nm}_cross", f"{nm}_barrel", axis=[1, 0, 0],
              initial=f(a2))
        joint(f"{nm}_screw", "prismatic", f"{nm}_barrel", f"{nm}_rod", axis=[0, 0, -1],
              limits={"lower": f(ls0 - ANKLE_STROKE), "upper": f(ls0 + ANKLE_STROKE)},
              initial=f(ls))
        joint(f"{nm}_ball", "spherical", f"{nm}_rod", f"foot_{s}", None, {"xyz": f(F_f)},
              initial=f(qb))
        screw(f"{nm}_screw", "ankle")


def arm(v: Variant, side: str, sgn: float, body, joint, rotary, screw) -> None:
    ms = v.mass_scale
    s = side
    body(f"shoulder_pitch_{s}", rod(0.6 * ms, 0.08, 0.04, axis="y"))
    body(f"shoulder_roll_{s}", rod(0.6 * ms, 0.08, 0.04, axis="x"))
    body(f"upper_arm_{s}", rod(1.8 * ms, v.upper_arm, 0.04, (0.0, 0.0, -0.45 * v.upper_arm)))
    body(f"forearm_{s}", rod(1.0 * ms, v.forearm, 0.035, (0.0, 0.0, -0.5 * v.forearm)),
         frames={"palm": {"xyz": [0.0, 0.0, -v.forearm]}})
    joint(f"shoulder_pitch_{s}", "revolute", "torso", f"shoulder_pitch_{s}",
          {"xyz": [0.0, sgn * v.shoulder_width / 2, v.torso]}, axis=[0, 1, 0],
          limits={"lower": -2.5, "upper": 1.2}, initial=STAND["shoulder_pitch"])
    joint(f"shoulder_roll_{s}", "revolute", f"shoulder_pitch_{s}", f"shoulder_roll_{s}",
          axis=[sgn, 0, 0], limits={"lower": -0.3, "upper": 2.0},
          initial=STAND["shoulder_roll"])
    joint(f"shoulder_yaw_{s}", "revolute", f"shoulder_roll_{s}", f"upper_arm_{s}",
          axis=[0, 0, 1], limits={"lower": -1.5, "upper": 1.5}, initial=STAND["shoulder_yaw"])
    for n in ("shoulder_pitch", "shoulder_roll", "shoulder_yaw"):
        rotary(f"{n}_{s}", n)
    # elbow: flexion moves the forearm forward (rotation about −y); screw in front
    E = np.array([0.0, 0.0, -v.upper_arm])
    P = np.array([0.045, 0.0, -0.06])
    Q_c = np.array([0.03, 0.0, -0.05])
    ep = STAND["elbow"]
    beta, length, gamma = knee_like(P, E, Q_c, ep, np.array([0.0, -1.0, 0.0]))
    body(f"elbow_barrel_{s}", rod(0.4 * ms, 0.12, 0.02, (0.0, 0.0, -0.05)))
    body(f"elbow_rod_{s}", rod(0.15 * ms, 0.12, 0.008, (0.0, 0.0, 0.05)))
    joint(f"elbow_{s}", "revolute", f"upper_arm_{s}", f"forearm_{s}", {"xyz": f(E)},
          axis=[0, -1, 0], limits={"lower": 0.0, "upper": 2.4}, initial=ep)
    joint(f"elbow_barrel_{s}", "revolute", f"upper_arm_{s}", f"elbow_barrel_{s}",
          {"xyz": f(P)}, axis=[0, 1, 0], initial=f(beta))
    joint(f"elbow_screw_{s}", "prismatic", f"elbow_barrel_{s}", f"elbow_rod_{s}",
          axis=[0, 0, -1], limits=stroke(P, E, Q_c, np.array([0.0, -1.0, 0.0]), ELBOW_RANGE),
          initial=f(length))
    joint(f"elbow_rod_{s}", "revolute", f"elbow_rod_{s}", f"forearm_{s}", None,
          {"xyz": f(Q_c)}, axis=[0, 1, 0], initial=f(gamma))
    screw(f"elbow_screw_{s}", "elbow")


# ------------------------------------------------------------------------ stance geometry

def stand_geometry(v: Variant) -> tuple[float, np.ndarray]:
    """``(pelvis height above the soles [m], left palm in the pelvis frame (3,) [m])`` at the
    standing pose (forward kinematics of the chains above, both legs alike)."""
    hp, kn, ap = STAND["hip_pitch"], STAND["knee"], STAND["ankle_pitch"]
    R = Ry(hp)
    p = np.array([0.0, 0.0, -0.02 - 0.05 - 0.03])
    p = p + R @ np.array([0.0, 0.0, -v.thigh])
    R = R @ Ry(kn)
    p = p + R @ np.array([0.0, 0.0, -v.shank])
    R = R @ Ry(ap)
    sole = p + R @ np.array([0.03, 0.0, -0.07])
    R = Ry(STAND["shoulder_pitch"]) @ axis_rotation(np.array([1.0, 0, 0]),
                                                    STAND["shoulder_roll"])
    R = R @ Rz(STAND["shoulder_yaw"])
    palm = np.array([0.0, v.shoulder_width / 2, 0.12 + v.torso])
    palm = palm + R @ np.array([0.0, 0.0, -v.upper_arm])
    R = R @ axis_rotation(np.array([0.0, -1.0, 0.0]), STAND["elbow"])
    palm = palm + R @ np.array([0.0, 0.0, -v.forearm])
    return float(-sole[2]), palm


#: The formations that travel (rbc.control.steps): their compositions also have the modes
#: ``swing_l`` / ``swing_r`` (every robot's left / right sole lifted, the hands linked).
TRAVELLING = ("ring",)


def formation(kind: str) -> dict:
    """A composition of the five variants (docs/composition.md): ``ring`` (5 hand links),
    ``semicircle`` or ``line`` (4 links), every robot on both soles (mode ``stand``)."""
    geo = [stand_geometry(v) for v in VARIANTS]
    x_p = float(np.mean([g[1][0] for g in geo]))
    y_p = float(np.mean([g[1][1] for g in geo]))
    n = len(VARIANTS)
    members = []
    for k, (v, (height, _)) in enumerate(zip(VARIANTS, geo, strict=True)):
        if kind == "line":
            xyz, yaw = [0.0, -k * 2 * y_p, height], 0.0  # side by side facing +x, right to k+1
        else:
            step = 2 * math.pi / n if kind == "ring" else math.pi / (n - 1)
            half = step / 2
            radius = x_p + y_p / math.tan(half)
            th = k * step  # counterclockwise: a robot's right-hand neighbour is the next one
            xyz = [radius * math.cos(th), radius * math.sin(th), height]
            yaw = th + math.pi
        members.append({"name": f"h{k + 1}", "bundle": f"{v.name}.h5",
                        "placement": {"xyz": f(xyz), "rpy": [0.0, 0.0, f(yaw)]}})
    pairs = [(k, k + 1) for k in range(n - 1)] + ([(n - 1, 0)] if kind == "ring" else [])
    links = [{"name": f"hands_h{a + 1}_h{b + 1}", "type": "ball",
              "a": {"member": f"h{a + 1}", "body": "forearm_r", "frame": "palm"},
              "b": {"member": f"h{b + 1}", "body": "forearm_l", "frame": "palm"}}
             for a, b in pairs]
    soles = [f"h{k + 1}.sole_{s}" for k in range(n) for s in ("l", "r")]
    modes = [{"name": "stand", "supports": soles, "links": "all"}]
    if kind in TRAVELLING:  # every robot on one sole: the sideways steps' swing phases
        modes += [{"name": f"swing_{s}", "supports": [x for x in soles
                                                      if not x.endswith(f"sole_{s}")],
                   "links": "all"} for s in ("l", "r")]
    return {"rbc_composition": 1, "name": kind, "members": members, "links": links,
            "modes": modes}



HEADER = """\
# Generated by records/humanoid/make_humanoid.py (do not edit by hand; rerun the script).
# {what}
"""


def main(out: Path = HERE) -> None:
    """Write the five records and the three formations into ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    for v in VARIANTS:
        text = yaml.safe_dump(humanoid(v), sort_keys=False, default_flow_style=None,
                              width=100)
        what = (f"Synthetic linkage-driven humanoid, variant {v.name}: thigh {v.thigh} m, "
                f"shank {v.shank} m, arms {v.upper_arm}/{v.forearm} m, mass scale "
                f"{v.mass_scale}; 42 bodies, 49 joints, 8 loops, 21 ports (README.md).")
        (out / f"{v.name}.yaml").write_text(HEADER.format(what=what) + text)
    for kind in ("ring", "semicircle", "line"):
        text = yaml.safe_dump(formation(kind), sort_keys=False, default_flow_style=None,
                              width=100)
        what = (f"Five humanoids (v1..v5) in a {kind}, holding hands with ideal ball joints "
                "between palm points; mode 'stand': both soles of every robot supporting"
                + ("; modes 'swing_l'/'swing_r': every robot's left/right sole lifted (the "
                   "sideways steps)" if kind in TRAVELLING else "")
                + ". Member bundles: rbc compile humanoid_vN.yaml -o DIR/humanoid_vN.h5.")
        (out / f"{kind}.yaml").write_text(HEADER.format(what=what) + text)


if __name__ == "__main__":
    import sys

    main(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE)

"""Generate the hard-mechanism records of ``records/hard/`` (deterministic).

Run from the repository root: ``python records/hard/make_hard.py``. Every record is written
from closed-form geometry (circle intersections, Denavit–Hartenberg chains) or, for the
6-6 platform, from a seeded random geometry (``numpy.random.default_rng(SEED)``), so the
committed YAML files can be regenerated exactly. Mass properties come from thin rods of a
constant linear density (mass, centre of mass and inertia about it summed over the rod
segments of each body, parallel-axis theorem), plus discs where stated.

Records (records/hard/README.md gives the details and what each one tests):

* ``jansen.yaml`` — Theo Jansen's leg with the published "holy numbers" (strandbeest.com),
  1 unit = 1 cm, crank actuated;
* ``stewart66.yaml`` — a general 6-6 UPS platform (non-planar, non-symmetric anchors);
* ``bricard.yaml`` — the orthogonal Bricard 6R linkage (overconstrained: rank 5 of 6 rows);
* ``rssr.yaml`` — a spatial RSSR crank-rocker driven from the rocker (turning points);
* ``rocker_fourbar.yaml`` — a planar Grashof crank-rocker whose rocker is independent;
* ``fast_crank.yaml`` — a slider-crank with a flywheel and a stiff slider spring;
* ``parallelogram.yaml`` — a parallelogram four-bar (constant lift, Ė u = 0).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import yaml
from scipy.optimize import least_squares
from scipy.spatial.transform import Rotation

HERE = Path(__file__).resolve().parent
SEED = 20260927
#: Linear density of the bars [kg/m] (a 20 × 6 mm aluminium flat bar: 2700 kg/m³).
RHO = 0.324
#: Radius used for a rod's inertia about its own axis [m].
ROD_R = 0.005


# ------------------------------------------------------------------ mass properties

def rods(segments: list[tuple[np.ndarray, np.ndarray]], rho: float = RHO,
         extra: list[tuple[float, np.ndarray, np.ndarray]] = ()) -> dict:
    """Body mass properties of thin rods (endpoints in body coordinates, 2-D or 3-D) plus
    ``extra`` point bodies ``(mass, position, inertia tensor about it)``.

    Returns the record keys ``mass``, ``com``, ``inertia`` (``[ixx, iyy, izz, ixy, ixz, iyz]``
    about the COM, tensor entries).
    """
    parts = []
    for a, b in segments:
        a, b = _pad3(a), _pad3(b)
        d = b - a
        L = float(np.linalg.norm(d))
        m = rho * L
        u = d / L
        Ic = m * L * L / 12.0 * (np.eye(3) - np.outer(u, u)) + 0.5 * m * ROD_R**2 * np.outer(u, u)
        parts.append((m, 0.5 * (a + b), Ic))
    parts += list(extra)
    mass = sum(m for m, _, _ in parts)
    com = sum(m * c for m, c, _ in parts) / mass
    inertia = np.zeros((3, 3))
    for m, c, Ic in parts:
        r = c - com
        inertia += Ic + m * (r @ r * np.eye(3) - np.outer(r, r))
    return {"mass": _f(mass), "com": [_f(x) for x in com],
            "inertia": [_f(inertia[0, 0]), _f(inertia[1, 1]), _f(inertia[2, 2]),
                        _f(inertia[0, 1]), _f(inertia[0, 2]), _f(inertia[1, 2])]}


def _pad3(x) -> np.ndarray:
    """A 2-D or 3-D point as a 3-vector (z = 0 for plane points)."""
    out = np.zeros(3)
    x = np.asarray(x, dtype=float)
    out[: x.size] = x
    return out


def disc(mass: float, radius: float, at: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
    """A thin disc in the x-y plane (axis z) as an ``extra`` part of :func:`rods`."""
    I = mass * radius**2 * np.diag([0.25, 0.25, 0.5])
    return mass, _pad3(at), I


def _f(x: float) -> float:
    """A float rounded to 12 significant digits (closure to ~1e-12 at the initial guesses);
    round-off residues below 1e-14 (e.g. a product of inertia of a rod along x) are 0."""
    return 0.0 if abs(x) < 1e-14 else float(f"{float(x):.12g}")


def p3(xy) -> list[float]:
    """A point of the x-y plane as a 3-vector of rounded floats."""
    return [_f(xy[0]), _f(xy[1]), 0.0]


def quat_wxyz(R: np.ndarray) -> list[float]:
    x, y, z, w = Rotation.from_matrix(R).as_quat()
    q = np.array([w, x, y, z])
    q = q if q[0] >= 0 else -q
    return [float(f"{c:.15g}") for c in q]


def revolute(name, parent, child, at_parent, at_child=(0, 0), initial=0.0, **extra) -> dict:
    j = {"name": name, "type": "revolute", "parent": parent, "child": child,
         "parent_frame": {"xyz": p3(at_parent)}, "child_frame": {"xyz": p3(at_child)},
         "axis": [0, 0, 1], "initial": _f(initial)}
    j.update(extra)
    return j


def angle(v) -> float:
    return math.atan2(v[1], v[0])


def rot2(phi: float) -> np.ndarray:
    c, s = math.cos(phi), math.sin(phi)
    return np.array([[c, -s], [s, c]])


def local(p, origin, phi) -> np.ndarray:
    """Coordinates of plane point p in a frame at ``origin`` turned by ``phi``."""
    return rot2(phi).T @ (np.asarray(p) - np.asarray(origin))


def circles(P, r1, Q, r2, side: int) -> np.ndarray:
    """Intersection of circles (P, r1) and (Q, r2) on the given side (±1) of P→Q."""
    P, Q = np.asarray(P, float), np.asarray(Q, float)
    d = float(np.linalg.norm(Q - P))
    x = (r1 * r1 - r2 * r2 + d * d) / (2 * d)
    y = math.sqrt(r1 * r1 - x * x)
    ex = (Q - P) / d
    return P + x * ex + side * y * np.array([-ex[1], ex[0]])


def header(comment: str) -> str:
    return "".join(f"# {line}".rstrip() + "\n" for line in comment.strip().splitlines())


def text(comment: str, doc: dict) -> str:
    """The YAML text of a record: the header comment, then the document."""
    body = yaml.safe_dump(doc, sort_keys=False, default_flow_style=None, width=100,
                          allow_unicode=True)
    return header(comment) + body


# ------------------------------------------------------------------ Jansen

#: Jansen's "holy numbers" (strandbeest.com/explains), in units of 1 cm.
HOLY = dict(a=38.0, b=41.5, c=39.3, d=40.1, e=55.8, f=39.4, g=36.7, h=65.7, i=49.0,
            j=50.0, k=61.9, l=7.8, m=15.0)
JANSEN_UNIT = 0.01  # m per holy unit
JANSEN_CRANK0 = 0.5  # rad, the crank angle of the record's initial configuration


def jansen_points(theta: float) -> dict[str, np.ndarray]:
    """Joint centres [m] of Jansen's leg at crank angle theta (crank axle O at the origin,
    fixed pivot B at (−a, −l); the branch of the standard drawing, foot G at the bottom)."""
    n = {k: v * JANSEN_UNIT for k, v in HOLY.items()}
    O, B = np.zeros(2), np.array([-n["a"], -n["l"]])
    A = n["m"] * np.array([math.cos(theta), math.sin(theta)])
    C = circles(A, n["j"], B, n["b"], -1)
    F = circles(A, n["k"], B, n["c"], +1)
    D = circles(B, n["d"], C, n["e"], +1)
    E = circles(D, n["f"], F, n["g"], -1)
    G = circles(E, n["h"], F, n["i"], -1)
    return dict(O=O, A=A, B=B, C=C, D=D, E=E, F=F, G=G)


def jansen() -> tuple[str, str]:
    P = jansen_points(JANSEN_CRANK0)
    # absolute body angles: each frame at its first point, x towards its second
    phi = {"crank": JANSEN_CRANK0, "bar_j": angle(P["C"] - P["A"]),
           "upper": angle(P["C"] - P["B"]), "bar_k": angle(P["F"] - P["A"]),
           "bar_c": angle(P["F"] - P["B"]), "bar_f": angle(P["E"] - P["D"]),
           "foot": angle(P["E"] - P["F"])}
    origin = {"crank": P["O"], "bar_j": P["A"], "upper": P["B"], "bar_k": P["A"],
              "bar_c": P["B"], "bar_f": P["D"], "foot": P["F"]}

    def loc(body, point):
        return local(P[point], origin[body], phi[body])

    crank = rods([(loc("crank", "O"), loc("crank", "A"))],
                 extra=[disc(0.4, 0.05, np.zeros(3))])  # a flywheel hub on the axle
    bodies = [{"name": "ground", "fixed": True}, {"name": "crank", **crank}]
    shapes = {"bar_j": ["A", "C"], "upper": ["B", "C", "D"], "bar_k": ["A", "F"],
              "bar_c": ["B", "F"], "bar_f": ["D", "E"], "foot": ["F", "E", "G"]}
    for body, pts in shapes.items():
        ends = [loc(body, p) for p in pts]
        segs = [(ends[i], ends[(i + 1) % len(ends)]) for i in range(len(ends))] \
            if len(ends) == 3 else [(ends[0], ends[1])]
        bodies.append({"name": body, **rods(segs)})
    bodies[-1]["frames"] = {"toe": {"xyz": p3(loc("foot", "G"))}}

    def rel(child, parent):
        return phi[child] - (phi[parent] if parent != "ground" else 0.0)

    joints = [
        revolute("O", "ground", "crank", (0, 0), initial=rel("crank", "ground")),
        revolute("B_upper", "ground", "upper", P["B"], initial=rel("upper", "ground")),
        revolute("B_c", "ground", "bar_c", P["B"], initial=rel("bar_c", "ground")),
        revolute("A_j", "crank", "bar_j", loc("crank", "A"), initial=rel("bar_j", "crank")),
        revolute("A_k", "crank", "bar_k", loc("crank", "A"), initial=rel("bar_k", "crank")),
        revolute("C", "bar_j", "upper", loc("bar_j", "C"), loc("upper", "C"),
                 initial=rel("upper", "bar_j")),
        revolute("F_c", "bar_c", "foot", loc("bar_c", "F"), initial=rel("foot", "bar_c")),
        revolute("F_k", "bar_k", "foot", loc("bar_k", "F"), initial=rel("foot", "bar_k")),
        revolute("D", "upper", "bar_f", loc("upper", "D"), initial=rel("bar_f", "upper")),
        revolute("E", "bar_f", "foot", loc("bar_f", "E"), loc("foot", "E"),
                 initial=rel("foot", "bar_f")),
    ]
    doc = {"rbc": 1, "name": "jansen", "gravity": [0, -9.81, 0], "bodies": bodies,
           "joints": joints,
           "actuators": [{"name": "motor_O", "joint": "O",
                          "transmission": {"type": "gear", "ratio": 20},
                          "rotor_inertia": 1.0e-5, "effort_limits": [-20, 20],
                          "speed_limit": 20}],
           "tasks": [{"name": "foot", "body": "foot", "xyz": p3(loc("foot", "G")),
                      "kind": "position"}]}
    return "jansen", text(f"""
jansen — Theo Jansen's strandbeest leg (one leg) with the published "holy numbers"
(strandbeest.com/explains): a=38, b=41.5, c=39.3, d=40.1, e=55.8, f=39.4, g=36.7, h=65.7,
i=49, j=50, k=61.9, l=7.8, m=15, in units of 1 cm. Crank axle O at the origin, fixed pivot B at
(-a, -l); crank m; bars j (crank-C), k (crank-F), c (B-F), f (D-E); rigid triangles BCD
(sides b, d, e) and EFG (sides g, h, i; G is the foot, task `foot`). Vertical x-y plane,
gravity -y, all axes +z. 10 revolute joints, 8 bodies, cycle rank 3, 1 independent speed.
Bars: thin rods of {RHO} kg/m; the crank carries a 0.4 kg, 50 mm flywheel disc.
`initial`: the standard drawing's branch at crank angle {JANSEN_CRANK0} rad, from circle
intersections, to 12 digits. Generated by make_hard.py.""", doc)


# ------------------------------------------------------------------ general 6-6 platform

def stewart66_geometry(seed: int = SEED) -> dict[str, np.ndarray]:
    """Seeded random anchors of a general 6-6 platform [m]: base b_i (6, 3), platform p_i
    (6, 3) in the platform frame, and the home pose (R, t)."""
    rng = np.random.default_rng(seed)
    ang_b = np.deg2rad(np.arange(6) * 60.0 + rng.uniform(-20, 20, 6))
    ang_p = np.deg2rad(np.arange(6) * 60.0 + 30.0 + rng.uniform(-20, 20, 6))
    rb, rp = 0.5 * rng.uniform(0.8, 1.2, 6), 0.28 * rng.uniform(0.8, 1.2, 6)
    b = np.stack([rb * np.cos(ang_b), rb * np.sin(ang_b), rng.uniform(-0.06, 0.06, 6)], 1)
    p = np.stack([rp * np.cos(ang_p), rp * np.sin(ang_p), rng.uniform(-0.04, 0.04, 6)], 1)
    t = np.array([0.03, -0.02, 0.62]) + rng.uniform(-0.01, 0.01, 3)
    R = Rotation.from_rotvec(rng.uniform(-0.1, 0.1, 3)).as_matrix()
    return {"b": b, "p": p, "R": R, "t": t}


def stewart66_legs(g: dict, R: np.ndarray, t: np.ndarray) -> list[dict]:
    """Per leg the joint values at platform pose (R, t): U angles (θ1, θ2), length, and the
    S quaternion (rod → platform), with the U frame ``Ub_i`` of :func:`stewart66`."""
    out = []
    for i in range(6):
        Rb = u_frame(g, i)
        d = Rb.T @ (R @ g["p"][i] + t - g["b"][i])
        L = float(np.linalg.norm(d))
        d /= L
        th2 = math.asin(max(-1.0, min(1.0, d[0])))
        th1 = math.atan2(-d[1], d[2])
        Rleg = Rb @ Rotation.from_rotvec([th1, 0, 0]).as_matrix() \
            @ Rotation.from_rotvec([0, th2, 0]).as_matrix()
        out.append({"U": (th1, th2), "P": L, "S": Rleg.T @ R})
    return out


def u_frame(g: dict, i: int) -> np.ndarray:
    """Rotation of leg i's universal-joint frame on the base: z along the leg at home, x
    horizontal."""
    z = g["R"] @ g["p"][i] + g["t"] - g["b"][i]
    z /= np.linalg.norm(z)
    x = np.cross([0.0, 0.0, 1.0], z)
    x /= np.linalg.norm(x)
    return np.stack([x, np.cross(z, x), z], 1)


def stewart66() -> tuple[str, str]:
    g = stewart66_geometry()
    legs = stewart66_legs(g, g["R"], g["t"])
    bodies = [{"name": "base", "fixed": True},
              {"name": "platform", **rods([(g["p"][i], g["p"][(i + 1) % 6]) for i in range(6)],
                                          rho=4.0)}]
    joints = []
    for i, leg in enumerate(legs, start=1):
        L = leg["P"]
        bodies += [{"name": f"barrel_{i}", **rods([((0, 0, 0), (0, 0, 0.45))], rho=3.3)},
                   {"name": f"rod_{i}", **rods([((0, 0, -0.5), (0, 0, 0))], rho=1.6)}]
        joints += [
            {"name": f"U{i}", "type": "universal", "parent": "base", "child": f"barrel_{i}",
             "parent_frame": {"xyz": [_f(x) for x in g["b"][i - 1]],
                              "quat": quat_wxyz(u_frame(g, i - 1))},
             "child_frame": {"xyz": [0, 0, 0]}, "axes": [[1, 0, 0], [0, 1, 0]],
             "initial": [_f(x) for x in leg["U"]]},
            {"name": f"P{i}", "type": "prismatic", "parent": f"barrel_{i}", "child": f"rod_{i}",
             "parent_frame": {"xyz": [0, 0, 0]}, "child_frame": {"xyz": [0, 0, 0]},
             "axis": [0, 0, 1], "limits": {"lower": _f(L - 0.35), "upper": _f(L + 0.35)},
             "initial": _f(L)},
            {"name": f"S{i}", "type": "spherical", "parent": f"rod_{i}", "child": "platform",
             "parent_frame": {"xyz": [0, 0, 0]},
             "child_frame": {"xyz": [_f(x) for x in g["p"][i - 1]]},
             "initial": quat_wxyz(leg["S"])},
        ]
    doc = {"rbc": 1, "name": "stewart66", "gravity": [0, 0, -9.81], "bodies": bodies,
           "joints": joints,
           "actuators": [{"name": f"leg_{i}", "joint": f"P{i}",
                          "transmission": {"type": "screw", "lead": 0.01},
                          "rotor_inertia": 3.0e-5, "effort_limits": [-900, 900],
                          "speed_limit": 0.5} for i in range(1, 7)],
           "tasks": [{"name": "platform", "body": "platform", "xyz": [0, 0, 0],
                      "kind": "pose"}]}
    return "stewart66", text(f"""
stewart66 — a general 6-6 UPS platform: six base anchors on a ~0.5 m radius and six platform
anchors on a ~0.28 m radius at angles jittered by up to 20 deg, radii by up to 20 % and heights by
up to 60/40 mm (numpy default_rng({SEED}), make_hard.py: stewart66_geometry), so no two anchors
coincide, neither anchor set is planar and the platform has no symmetry. Home pose: platform
at about (0.03, -0.02, 0.62) m, tilted by a random rotation of up to 0.1 rad per axis. Each
leg: universal joint U on the base (frame z along the leg at home, x horizontal, axes [x, y]),
actuated prismatic P (ball screw 10 mm/rev; P is the U-centre-to-S-centre length, limits home
+- 0.35 m), spherical S to the platform. Rods of 3.3 / 1.6 / 4.0 kg/m for barrels, rods and the
platform rim. For fixed leg lengths the forward kinematics has several real assembly modes
(tests/model/test_hard_mechanisms.py finds them with scipy least_squares on the pose).""", doc)


# ------------------------------------------------------------------ Bricard

BRICARD_A = 0.3  # m, every link length
BRICARD_TWISTS = (math.pi / 2, 3 * math.pi / 2) * 3  # orthogonal Bricard
BRICARD_PHI0 = 1.0  # rad, odd joint angles of the initial configuration


def _dh(a: float, alpha: float) -> np.ndarray:
    T = np.eye(4)
    c, s = math.cos(alpha), math.sin(alpha)
    T[1:3, 1:3] = [[c, -s], [s, c]]
    T[0, 3] = a
    return T


def _rz(t: float) -> np.ndarray:
    T = np.eye(4)
    c, s = math.cos(t), math.sin(t)
    T[:2, :2] = [[c, -s], [s, c]]
    return T


def bricard_loop(theta) -> np.ndarray:
    """``Π Rz(θ_i)·Tx(a)·Rx(α_i)`` (4, 4): the identity on the closure manifold."""
    T = np.eye(4)
    for th, al in zip(theta, BRICARD_TWISTS, strict=True):
        T = T @ _rz(th) @ _dh(BRICARD_A, al)
    return T


def bricard_even(phi: float) -> float:
    """The even joint angle ψ > 0 of the threefold-symmetric motion θ = (φ, ψ, φ, ψ, φ, ψ)."""
    def res(x):
        T = bricard_loop([phi, x[0]] * 3)
        return np.concatenate([Rotation.from_matrix(T[:3, :3]).as_rotvec(), T[:3, 3]])
    return float(least_squares(res, [2.0], xtol=1e-15, ftol=1e-15, gtol=1e-15).x[0])


def bricard() -> tuple[str, str]:
    a = BRICARD_A
    psi = bricard_even(BRICARD_PHI0)
    theta = [BRICARD_PHI0, psi] * 3
    names = [f"J{i}" for i in range(1, 7)]
    bodies = [{"name": "ground", "fixed": True}]
    bodies += [{"name": f"link{i}", **rods([((0, 0, 0), (a, 0, 0))], rho=1.0)}
               for i in range(1, 6)]
    joints = []
    for i in range(6):
        parent = "ground" if i == 0 else f"link{i}"
        child = f"link{i + 1}" if i < 5 else "ground"
        if i == 0:
            pf = {"xyz": [0, 0, 0]}
        else:
            pf = {"xyz": [a, 0, 0], "rpy": [float(BRICARD_TWISTS[i - 1]), 0, 0]}
        if i < 5:
            cf = {"xyz": [0, 0, 0]}
        else:  # the frame of axis 6 in the ground frame (on axis 1): (Tx(a) Rx(α6))⁻¹
            cf = {"xyz": [-a, 0, 0], "rpy": [-float(BRICARD_TWISTS[5]), 0, 0]}
        joints.append({"name": names[i], "type": "revolute", "parent": parent, "child": child,
                       "parent_frame": pf, "child_frame": cf, "axis": [0, 0, 1],
                       "initial": _f(theta[i])})
    doc = {"rbc": 1, "name": "bricard", "gravity": [0, 0, -9.81], "bodies": bodies,
           "joints": joints,
           "actuators": [{"name": "motor_J1", "joint": "J1",
                          "transmission": {"type": "gear", "ratio": 10},
                          "rotor_inertia": 1.0e-5}]}
    return "bricard", text(f"""
bricard — the orthogonal Bricard linkage: a single 6R loop with every link length a = {a} m,
every offset 0 and twists alternating 90 / 270 deg (Denavit–Hartenberg; Baker, "The Bricard
linkages", Mech. Mach. Theory 15, 1980). Overconstrained: Grübler–Kutzbach gives 6 − 6 = 0,
but the closure rows have rank 5 everywhere on the motion, so the mobility is 1. On the
threefold-symmetric motion θ = (φ, ψ, φ, ψ, φ, ψ) each angle oscillates between −2π/3 and
2π/3: the actuated J1 (the default independent coordinate) has turning points at
φ = ±2π/3 (where ψ = 0), at which its partition is singular while the rank stays 5.
`initial`: φ = {BRICARD_PHI0} rad, ψ solved to round-off. Links: rods of 1 kg/m along the DH
common normals. Generated by make_hard.py.""", doc)


# ------------------------------------------------------------------ spatial RSSR

RSSR = dict(r1=0.05, r2=0.10, c=0.215, C2=(0.15, 0.05, 0.10))
RSSR_THETA0 = 1.4  # rad, crank angle of the initial configuration (rocker mid-swing)


def rssr_points(theta: float, branch: int = 1) -> tuple[np.ndarray, np.ndarray, float]:
    """Crank tip P, rocker tip Q [m] and rocker angle ψ at crank angle θ (the rocker turns
    about the world x axis through C2; branch ±1 picks one of the two rocker solutions)."""
    r1, r2, c = RSSR["r1"], RSSR["r2"], RSSR["c"]
    C2 = np.array(RSSR["C2"])
    P = np.array([r1 * math.cos(theta), r1 * math.sin(theta), 0.0])
    # |C2 + r2 (0, cos ψ, sin ψ) − P|² = c²  →  A cos ψ + B sin ψ = K
    w = C2 - P
    A, B = 2 * r2 * w[1], 2 * r2 * w[2]
    K = c * c - w @ w - r2 * r2
    rho, base = math.hypot(A, B), math.atan2(B, A)
    psi = base + branch * math.acos(K / rho)
    Q = C2 + r2 * np.array([0.0, math.cos(psi), math.sin(psi)])
    return P, Q, psi


def rssr() -> tuple[str, str]:
    r1, r2 = RSSR["r1"], RSSR["r2"]
    C2 = np.array(RSSR["C2"])
    P, Q, psi = rssr_points(RSSR_THETA0)
    # crank frame at O (z axis), x towards P; rocker frame at C2 with the joint axis along
    # world x: rocker z = world x, rocker x towards Q at ψ = 0 ⇒ world y
    R_rock0 = np.array([[0.0, 0.0, 1.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])  # cols: x, y, z
    coupler_dir = (Q - P) / np.linalg.norm(Q - P)
    # coupler frame at P: x along the coupler
    zc = np.cross(coupler_dir, [0.0, 0.0, 1.0])
    zc /= np.linalg.norm(zc)
    R_coup = np.stack([coupler_dir, np.cross(zc, coupler_dir), zc], 1)
    R_crank = Rotation.from_rotvec([0, 0, RSSR_THETA0]).as_matrix()
    R_rock = R_rock0 @ Rotation.from_rotvec([0, 0, psi]).as_matrix()
    c = float(np.linalg.norm(Q - P))
    bodies = [{"name": "ground", "fixed": True},
              {"name": "crank", **rods([((0, 0, 0), (r1, 0, 0))],
                                       extra=[disc(0.2, 0.03, np.zeros(3))])},
              {"name": "coupler", **rods([((0, 0, 0), (c, 0, 0))], rho=0.2)},
              {"name": "rocker", **rods([((0, 0, 0), (r2, 0, 0))])}]
    joints = [
        {"name": "R1", "type": "revolute", "parent": "ground", "child": "crank",
         "parent_frame": {"xyz": [0, 0, 0]}, "child_frame": {"xyz": [0, 0, 0]},
         "axis": [0, 0, 1], "initial": _f(RSSR_THETA0)},
        {"name": "S1", "type": "spherical", "parent": "crank", "child": "coupler",
         "parent_frame": {"xyz": [r1, 0, 0]}, "child_frame": {"xyz": [0, 0, 0]},
         "initial": quat_wxyz(R_crank.T @ R_coup)},
        {"name": "S2", "type": "spherical", "parent": "coupler", "child": "rocker",
         "parent_frame": {"xyz": [_f(c), 0, 0]}, "child_frame": {"xyz": [r2, 0, 0]},
         "initial": quat_wxyz(R_coup.T @ R_rock)},
        {"name": "R2", "type": "revolute", "parent": "ground", "child": "rocker",
         "parent_frame": {"xyz": [_f(x) for x in C2], "quat": quat_wxyz(R_rock0)},
         "child_frame": {"xyz": [0, 0, 0]}, "axis": [0, 0, 1], "initial": _f(psi)},
    ]
    doc = {"rbc": 1, "name": "rssr", "gravity": [0, 0, -9.81], "bodies": bodies,
           "joints": joints,
           "actuators": [{"name": "motor_R2", "joint": "R2",
                          "transmission": {"type": "gear", "ratio": 20},
                          "rotor_inertia": 1.0e-5, "effort_limits": [-10, 10]}]}
    return "rssr", text(f"""
rssr — a spatial RSSR crank-rocker driven from the rocker. Crank R1 about world z at the
origin (radius {r1} m), rocker R2 about world x through {list(RSSR['C2'])} m (radius {r2} m),
coupler S1-S2 of {RSSR['c']} m: skew axes, so the loop is spatial. The crank turns fully and
the rocker swings through 1.52 rad (2.02 to 3.53 rad on this branch), so the actuated rocker
R2 — the default independent coordinate — has two turning points per crank revolution, where
that partition is singular at unchanged rank. The coupler is free to spin about its own axis
(an idle spin: the second independent speed). Rods of 0.324 kg/m (coupler 0.2 kg/m), a
0.2 kg, 30 mm disc on the crank. `initial`: crank {RSSR_THETA0} rad, the rest in closed form.
Generated by make_hard.py.""", doc)


# ------------------------------------------------------------------ planar four-bars

def fourbar_angles(ground, crank, coupler, rocker, theta, branch=+1):
    """(θ_B, θ_C, θ_D): relative joint angles of a four-bar at crank angle θ (crank pivot at
    the origin, rocker pivot at (ground, 0); open branch for branch = +1)."""
    A = crank * np.array([math.cos(theta), math.sin(theta)])
    D = np.array([ground, 0.0])
    Cp = circles(A, coupler, D, rocker, branch)
    phi_c = angle(Cp - A)
    phi_r = angle(Cp - D)
    return phi_c - theta, phi_r - phi_c, phi_r


def fourbar_doc(name, ground, crank, coupler, rocker, theta0, branch, *, independent=None,
                actuated="A", limits=None, flywheel=0.0):
    tB, tC, tD = fourbar_angles(ground, crank, coupler, rocker, theta0, branch)
    extra = [disc(flywheel, 0.04, np.zeros(3))] if flywheel else []
    bodies = [{"name": "ground", "fixed": True},
              {"name": "crank", **rods([((0, 0, 0), (crank, 0, 0))], extra=extra)},
              {"name": "coupler", **rods([((0, 0, 0), (coupler, 0, 0))])},
              {"name": "rocker", **rods([((0, 0, 0), (rocker, 0, 0))])}]
    A = revolute("A", "ground", "crank", (0, 0), initial=theta0)
    if limits:
        A["limits"] = {"lower": limits[0], "upper": limits[1]}
    joints = [A,
              revolute("B", "crank", "coupler", (crank, 0), initial=tB),
              revolute("C", "coupler", "rocker", (coupler, 0), (rocker, 0), initial=tC),
              revolute("D", "ground", "rocker", (ground, 0), initial=tD)]
    doc = {"rbc": 1, "name": name, "gravity": [0, -9.81, 0], "bodies": bodies, "joints": joints,
           "actuators": [{"name": f"motor_{actuated}", "joint": actuated,
                          "transmission": {"type": "gear", "ratio": 10},
                          "rotor_inertia": 1.0e-5}]}
    if independent:
        doc["independent"] = list(independent)
    return doc


def rocker_fourbar() -> tuple[str, str]:
    doc = fourbar_doc("rocker_fourbar", 0.40, 0.10, 0.35, 0.30, 1.0, +1, actuated="D")
    return "rocker_fourbar", text("""
rocker_fourbar — the shipped four-bar's geometry (ground 0.40, crank 0.10, coupler 0.35,
rocker 0.30 m; Grashof crank-rocker) with the actuator on the rocker pivot D, so the rocker
angle is the default independent coordinate. The crank turns fully; the rocker reverses at
the two configurations where crank and coupler are aligned: turning points of the
independent coordinate (R_p = 0 at rank 3), while the crank angle A is a regular coordinate
everywhere. Vertical x-y plane, gravity -y. Rods of 0.324 kg/m. `initial`: crank 1 rad,
open branch. Generated by make_hard.py.""", doc)


def parallelogram() -> tuple[str, str]:
    doc = fourbar_doc("parallelogram", 0.40, 0.15, 0.40, 0.15, 1.2, +1,
                      limits=(0.3, 2.8))
    return "parallelogram", text("""
parallelogram — a parallelogram four-bar: ground = coupler = 0.40 m, crank = rocker = 0.15 m.
On the parallelogram branch the rocker angle equals the crank angle and the coupler
translates, so the lift E is constant and the curvature Ė u is exactly zero (a correct
model in which `curvature.without_term` must not fail). The crank is limited to
[0.3, 2.8] rad: at 0 and π the four links are collinear (the change points where the
antiparallelogram branch meets, a rank drop). Vertical x-y plane, gravity -y, crank
actuated. `initial`: crank 1.2 rad. Generated by make_hard.py.""", doc)


def fast_crank() -> tuple[str, str]:
    crank, rod = 0.05, 0.20
    theta0 = 0.3
    A = crank * np.array([math.cos(theta0), math.sin(theta0)])
    x = A[0] + math.sqrt(rod * rod - A[1] ** 2)
    phi_rod = angle(np.array([x, 0.0]) - A)
    bodies = [{"name": "ground", "fixed": True},
              {"name": "crank", **rods([((0, 0, 0), (crank, 0, 0))],
                                       extra=[disc(1.0, 0.06, np.zeros(3))])},
              {"name": "rod", **rods([((0, 0, 0), (rod, 0, 0))], rho=1.0)},
              {"name": "slider", "mass": 0.2, "com": [0, 0, 0],
               "inertia": [2.0e-5, 2.0e-5, 2.0e-5, 0, 0, 0]}]
    joints = [revolute("A", "ground", "crank", (0, 0), initial=theta0),
              revolute("B", "crank", "rod", (crank, 0), initial=phi_rod - theta0),
              {"name": "P", "type": "prismatic", "parent": "ground", "child": "slider",
               "parent_frame": {"xyz": [0, 0, 0]}, "child_frame": {"xyz": [0, 0, 0]},
               "axis": [1, 0, 0], "spring": {"stiffness": 2.0e4, "rest": 0.2},
               "initial": _f(x)},
              revolute("C", "rod", "slider", (rod, 0), initial=-phi_rod)]
    doc = {"rbc": 1, "name": "fast_crank", "gravity": [0, -9.81, 0], "bodies": bodies,
           "joints": joints,
           "actuators": [{"name": "motor_A", "joint": "A",
                          "transmission": {"type": "direct"}}]}
    return "fast_crank", text(f"""
fast_crank — a slider-crank (crank {crank} m, rod {rod} m, in-line slider on ground x) whose
crank carries a 1 kg, 60 mm flywheel disc, with a stiff spring on the slider (20 kN/m, rest
0.2 m: ±50 mm of stroke store 25 J). Meant to be run fast: released at several hundred
rad/s the crank turns several times in 0.03 s, so a fixed 1 ms step is far too coarse
(0.6 rad of crank per step). Vertical x-y plane, gravity -y, crank actuated (direct).
`initial`: crank {theta0} rad, the rest in closed form. Generated by make_hard.py.""", doc)


#: Every record builder: each returns ``(name, YAML text)``.
BUILDERS = (jansen, stewart66, bricard, rssr, rocker_fourbar, parallelogram, fast_crank)


def main(out: Path = HERE) -> None:
    for build in BUILDERS:
        name, content = build()
        (out / f"{name}.yaml").write_text(content, encoding="utf-8")


if __name__ == "__main__":
    main()

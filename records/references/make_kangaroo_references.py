"""Generate the Kangaroo-like biped's references (issue 21 item 2; deterministic).

Run from the repository root: ``.venv/bin/python records/references/make_kangaroo_references.py``.

``kangaroo_legs.yaml`` — the fixed-pelvis feedforward ablation's 4 s leg motion on
``records/kangaroo_locked.yaml`` (pelvis welded, docs/supports.md): the twelve drive
coordinates of both legs, each a sum of two sines at incommensurate frequencies
(0.37–1.3 Hz) under a quintic fade-in/fade-out envelope (0.5 s each end), so the motion
starts and ends at rest at the record's initial posture. The leg-length stroke is ±40 mm
about 0.4231 m (limits 0.132–0.714 m), hip yaw ±0.1 rad, hip pitch ±0.3 rad, hip roll
±0.12 rad, ankle pitch ±0.25 rad, ankle roll ±0.1 rad; the right leg runs with other phases.
Knots every 10 ms. The femur and knee joints of each knee loop are dependent: ``rbc
simulate`` lifts the reference onto the closure manifold (the test checks its closure
residual along the motion).

``kangaroo_landing.yaml`` — the 10 s floating-base sequence on the same record, a support
reference (docs/supports.md, "Mode schedules"; modes of ``rbc compile --modes all --mode
double=left_sole,right_sole``): released at rest with the soles :data:`RELEASE` = 5 cm above
their stance height, in mode ``free`` until the touchdown time of a free fall from that
height, ``t = √(2h/g)`` (the plant falls ballistically with the legs held; the reference's
base and soles follow one quintic over the fall, so the legs keep their posture), then
``double`` to the end: settle, a 12 cm crouch and back, a lateral shift ±3 cm, a yaw ±0.15
rad, and 2.5 s of quiet stance in which the experiments push the torso (the push is a plant
option, not part of the reference). Stance heights put the sole plane at :data:`SOLE_Z` =
1 mm, the thickness of the plants' contact box (MuJoCo's box bottom touches the floor at
z = 0; docs/supports.md, "Plants"). ``landing_reference(h)`` gives the same sequence for
another release height (the "higher release" condition).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import yaml

HERE = Path(__file__).resolve().parent
LEGS = HERE / "kangaroo_legs.yaml"
LANDING = HERE / "kangaroo_landing.yaml"
LEGS_DURATION = 4.0  # s
KNOT_DT = 0.01  # s
FADE = 0.5  # s of fade-in and fade-out
#: The leg length's initial value (records/kangaroo.yaml, ``leg_*_length_joint.initial``) [m].
LENGTH0 = 0.4230695
#: Per drive joint suffix: (offset, (amplitude, frequency [Hz]) × 2) [m or rad].
LEG_MOTION = {
    "1": (0.0, (0.07, 0.41), (0.03, 1.13)),        # hip yaw
    "2": (0.0, (0.22, 0.53), (0.08, 1.31)),        # hip pitch
    "3": (0.0, (0.09, 0.37), (0.03, 0.97)),        # hip roll
    "length": (LENGTH0, (0.03, 0.61), (0.01, 1.27)),  # leg length stroke
    "4": (0.0, (0.18, 0.47), (0.07, 1.19)),        # ankle pitch
    "5": (0.0, (0.07, 0.43), (0.03, 1.07)),        # ankle roll
}
#: Phase offsets [rad] of the two legs.
PHASE = {"left": 0.0, "right": 1.9}


def envelope(t: np.ndarray, duration: float, fade: float = FADE) -> np.ndarray:
    """Quintic fade-in over ``[0, fade]`` and fade-out over ``[duration − fade, duration]``
    (C², zero rate and curvature at both ends), 1 in between."""

    def step(x):
        x = np.clip(x, 0.0, 1.0)
        return x ** 3 * (10 - 15 * x + 6 * x * x)

    return step(t / fade) * step((duration - t) / fade)


def legs_reference() -> dict:
    """The ``kangaroo_legs.yaml`` document: ``{time: [...], joints: {name: [...]}}``."""
    t = np.round(np.arange(0.0, LEGS_DURATION + KNOT_DT / 2, KNOT_DT), 10)
    env = envelope(t, LEGS_DURATION)
    joints = {}
    for side, phase in PHASE.items():
        for k, (offset, *terms) in LEG_MOTION.items():
            x = sum(a * np.sin(2 * np.pi * f * t + phase * (i + 1) + 0.3 * len(k))
                    for i, (a, f) in enumerate(terms))
            joints[f"leg_{side}_{k}_joint"] = [round(float(v), 12) for v in offset + env * x]
    return {"time": [float(v) for v in t], "joints": joints}


#: Landing sequence: release height [m]; sole-plane height in stance [m] (the contact box's
#: thickness, module docstring); pelvis height above the sole plane in the record's
#: posture [m] (``base_link`` origin minus the sole frames' z at ``q_ref``; the test checks it).
RELEASE = 0.05
SOLE_Z = 0.001
PELVIS_OVER_SOLE = 0.731019049
GRAVITY = 9.81
#: (time [s], base component → value) after the touchdown: the knots of the stance part;
#: components not named keep their previous value.
STANCE_KNOTS = (
    (1.0, {}),                      # settle
    (2.0, {"z": -0.12}),            # crouch 12 cm (relative to the stance height)
    (2.5, {}),
    (3.5, {"z": 0.0}),              # and back up
    (4.5, {"y": 0.03}),             # lateral shift
    (5.5, {"y": -0.03}),
    (6.0, {"y": 0.0}),
    (6.75, {"yaw": 0.15}),          # yaw
    (7.5, {"yaw": -0.15}),
    (8.0, {"yaw": 0.0}),
    (10.0, {}),                     # quiet stance (the torso push lands here)
)


def touchdown_time(release: float = RELEASE) -> float:
    """Free-fall time [s] from rest over ``release`` [m]: ``√(2h/g)``."""
    return float(np.sqrt(2.0 * release / GRAVITY))


def landing_reference(release: float = RELEASE) -> dict:
    """The landing support reference (module docstring) for a release height [m]:
    ``{time, modes, base: {x, y, z, yaw}, supports: {left_sole: {z}, right_sole: {z}}}``."""
    t_land = round(touchdown_time(release), 6)
    stand = SOLE_Z + PELVIS_OVER_SOLE
    times = [0.0, t_land]
    rows = [{"x": 0.0, "y": 0.0, "z": stand + release, "yaw": 0.0},
            {"x": 0.0, "y": 0.0, "z": stand, "yaw": 0.0}]
    for t, change in STANCE_KNOTS:
        row = dict(rows[-1])
        row.update({k: (stand + v if k == "z" else v) for k, v in change.items()})
        times.append(t)
        rows.append(row)
    sole = [round(SOLE_Z + release, 12)] + [SOLE_Z] * (len(times) - 1)
    return {"time": times,
            "modes": [{"time": 0.0, "mode": "free"}, {"time": t_land, "mode": "double"}],
            "base": {k: [round(r[k], 12) for r in rows] for k in ("x", "y", "z", "yaw")},
            "supports": {"left_sole": {"z": sole}, "right_sole": {"z": list(sole)}},
            "joints": {}}


def landing_text(release: float = RELEASE) -> str:
    """The YAML text of the landing reference for a release height [m]."""
    return _dump(landing_reference(release),
                 f"# Kangaroo-like landing sequence, 10 s, release {100 * release:g} cm "
                 "(records/references/make_kangaroo_references.py; docs/supports.md)\n")


def _dump(doc: dict, comment: str) -> str:
    return comment + yaml.safe_dump(doc, sort_keys=False, default_flow_style=None,
                                    width=10_000)


def legs_text() -> str:
    """The YAML text of ``kangaroo_legs.yaml``."""
    return _dump(legs_reference(),
                 "# Kangaroo-like fixed-pelvis leg motion, 4 s (records/references/"
                 "make_kangaroo_references.py; docs/supports.md)\n")


def main() -> None:
    LEGS.write_text(legs_text(), encoding="utf-8")
    LANDING.write_text(landing_text(), encoding="utf-8")


if __name__ == "__main__":
    main()

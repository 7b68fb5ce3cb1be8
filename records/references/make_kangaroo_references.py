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
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import yaml

HERE = Path(__file__).resolve().parent
LEGS = HERE / "kangaroo_legs.yaml"
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


if __name__ == "__main__":
    main()

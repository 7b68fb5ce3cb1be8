"""A 4 s squat-and-swing leg reference for Cassie (imported from MJCF) with the pelvis fixed.

The reference names only the ten actuated coordinates (per leg ``hip-roll``, ``hip-yaw``,
``hip-pitch``, ``knee``, ``foot``); each starts and ends at rest at the home keyframe
(windows ``s(t) = sin²(πt/T)``, T = 4 s):

* squat: ``hip-pitch`` +0.35 s(t), ``knee`` −0.45 s(t), ``foot`` −0.25 s(t);
* swing: ``hip-roll`` ±0.12 sin(2πt / 2 s)·s(t) (mirrored on the right leg),
  ``hip-yaw`` ±0.20 sin(2πt / T)·s(t).

Every other independent coordinate is held at ``q_ref``. For a physically sensible motion
the record should request the leg springs as independent coordinates (docs/simulate.md,
"Cassie"): ``independent: [left-shin, left-heel-spring, right-shin, right-heel-spring]``;
then the springs are held at rest and the tarsus follows the knee through the achilles-rod
loop. (The default partition of the imported record makes the ``tarsus`` independent
instead; holding it while the knee moves deflects the 1500 N·m/rad shin spring by ≈ 0.8 rad
per rad of knee — beyond its ±0.35 rad range for this squat.)

``python -m rbc.sim.references_cassie BUNDLE OUT.yaml`` writes the knots (YAML reference,
docs/simulate.md) from the home values of a compiled Cassie bundle; the shipped
``records/references/cassie_legs.yaml`` was written from a fresh ``rbc import mjcf
…/agility_cassie/cassie.xml`` (the import is deterministic).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

DURATION = 4.0  # s
KNOT_DT = 0.05  # s
SIDES = ("left", "right")


def actuated_motion(t: np.ndarray, home: dict[str, float]) -> dict[str, np.ndarray]:
    """Actuated independent coordinates [rad] at times t (module docstring)."""
    s = np.sin(np.pi * t / DURATION) ** 2
    out = {}
    for side, sign in zip(SIDES, (1.0, -1.0), strict=True):
        out[f"{side}-hip-roll"] = home[f"{side}-hip-roll"] + sign * 0.12 * np.sin(
            2 * np.pi * t / 2.0) * s
        out[f"{side}-hip-yaw"] = home[f"{side}-hip-yaw"] + sign * 0.20 * np.sin(
            2 * np.pi * t / DURATION) * s
        out[f"{side}-hip-pitch"] = home[f"{side}-hip-pitch"] + 0.35 * s
        out[f"{side}-knee"] = home[f"{side}-knee"] - 0.45 * s
        out[f"{side}-foot"] = home[f"{side}-foot"] - 0.25 * s
    return out


def cassie_knots(bundle: str | Path) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """``(time, {coordinate: values})``: knots every 50 ms about the bundle's ``q_ref``."""
    from rbc.model.compiled import CompiledModel
    from rbc.model.solve import configuration_by_joint

    kin = CompiledModel.from_bundle(bundle)
    home = configuration_by_joint(kin, kin.partitions["default"].q_ref)
    time = np.round(np.arange(0.0, DURATION + 0.5 * KNOT_DT, KNOT_DT), 10)
    return time, actuated_motion(time, home)


def write_reference(bundle: str | Path, out: str | Path) -> None:
    """Write the knots as a YAML reference file (docs/simulate.md)."""
    import yaml

    time, knots = cassie_knots(bundle)
    doc = {"time": [float(t) for t in time],
           "joints": {n: [round(float(x), 10) for x in v] for n, v in knots.items()}}
    head = ("# Cassie (rbc import mjcf agility_cassie/cassie.xml), pelvis fixed: 4 s "
            "squat-and-swing\n# of the actuated joints; written by `python -m "
            "rbc.sim.references_cassie BUNDLE OUT`\n")
    from rbc.safeio import atomic_write_text

    atomic_write_text(out, head + yaml.safe_dump(doc, sort_keys=False,
                                                 default_flow_style=None, width=100))


if __name__ == "__main__":
    write_reference(sys.argv[1], sys.argv[2])

"""Generate ``stewart.csv``: a 22 s platform-like motion of the six Stewart leg lengths.

Run from the repository root: ``python records/references/make_references.py``. The output
is deterministic (no random numbers), so the committed CSV can be regenerated exactly.

The platform pose (x, y, z, roll, pitch, yaw) about the home pose (0, 0, 0.70) m is a sum of
sines at incommensurate frequencies (0.17–0.53 Hz) under a quintic fade-in/fade-out envelope
(2 s each end), so the motion starts and ends at rest at home. Leg lengths are the exact
inverse kinematics ``ℓ_i = |p + R s_i − b_i|`` with the universal-joint centres b_i and the
spherical-joint centres s_i read from ``records/stewart.yaml``. The pose amplitudes are then
scaled by one factor so that the peak leg speed is 0.23 m/s; knots every 20 ms.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import yaml

HERE = Path(__file__).resolve().parent
RECORD = HERE.parent / "stewart.yaml"
DURATION = 22.0  # s
KNOT_DT = 0.02  # s
PEAK_LEG_SPEED = 0.23  # m/s
HOME = np.array([0.0, 0.0, 0.70])  # platform frame above the base frame [m]
FADE = 2.0  # s of fade-in and fade-out
#: (axis, amplitude [m or rad], frequency [Hz], phase [rad]) of the pose components
COMPONENTS = (
    ("x", 0.040, 0.23, 0.0), ("x", 0.015, 0.53, 1.0),
    ("y", 0.040, 0.19, 0.7), ("y", 0.015, 0.47, 2.1),
    ("z", 0.035, 0.31, 0.3),
    ("roll", 0.060, 0.29, 1.3), ("pitch", 0.060, 0.37, 0.4),
    ("yaw", 0.080, 0.17, 2.6),
)
AXES = ("x", "y", "z", "roll", "pitch", "yaw")


def anchors() -> tuple[np.ndarray, np.ndarray]:
    """(6, 3) base anchors b_i (universal centres) and platform anchors s_i [m]."""
    rec = yaml.safe_load(RECORD.read_text())
    joints = {j["name"]: j for j in rec["joints"]}
    b = np.array([joints[f"U{i}"]["parent_frame"]["xyz"] for i in range(1, 7)], dtype=float)
    s = np.array([joints[f"S{i}"]["child_frame"]["xyz"] for i in range(1, 7)], dtype=float)
    return b, s


def rotation(roll: float, pitch: float, yaw: float) -> np.ndarray:
    """``Rz(yaw) Ry(pitch) Rx(roll)``."""
    cr, sr, cp, sp, cy, sy = (np.cos(roll), np.sin(roll), np.cos(pitch), np.sin(pitch),
                              np.cos(yaw), np.sin(yaw))
    return np.array([[cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
                     [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
                     [-sp, cp * sr, cp * cr]])


def envelope(t: np.ndarray) -> np.ndarray:
    """Quintic smoothstep fade-in over [0, FADE] and fade-out over [DURATION − FADE, DURATION]."""
    def step(x):
        x = np.clip(x, 0.0, 1.0)
        return x**3 * (10 - 15 * x + 6 * x**2)
    return step(t / FADE) * step((DURATION - t) / FADE)


def leg_lengths(t: np.ndarray, scale: float) -> np.ndarray:
    """(len(t), 6) leg lengths [m] for pose amplitudes multiplied by ``scale``."""
    b, s = anchors()
    pose = np.zeros((t.size, 6))
    for axis, amp, freq, phase in COMPONENTS:
        pose[:, AXES.index(axis)] += scale * amp * np.sin(2 * np.pi * freq * t + phase)
    pose *= envelope(t)[:, None]
    out = np.empty((t.size, 6))
    for k in range(t.size):
        p, R = HOME + pose[k, :3], rotation(*pose[k, 3:])
        out[k] = np.linalg.norm(p + s @ R.T - b, axis=1)
    return out


def main() -> None:
    fine = np.arange(0.0, DURATION + 1e-9, 1e-3)
    speed = np.abs(np.gradient(leg_lengths(fine, 1.0), fine, axis=0)).max()
    scale = PEAK_LEG_SPEED / speed  # leg speed is linear in small pose amplitudes
    for _ in range(3):  # correct the small nonlinearity of the inverse kinematics
        speed = np.abs(np.gradient(leg_lengths(fine, scale), fine, axis=0)).max()
        scale *= PEAK_LEG_SPEED / speed
    t = np.round(np.arange(0.0, DURATION + 1e-9, KNOT_DT), 9)
    legs = leg_lengths(t, scale)
    home = leg_lengths(np.zeros(1), 0.0)[0]
    assert np.abs(legs - home).max() < 0.14, "leg stroke exceeds the ±0.15 m limits"
    lines = ["time," + ",".join(f"P{i}" for i in range(1, 7))]
    lines += [f"{tk:.3f}," + ",".join(f"{x:.9f}" for x in row) for tk, row in zip(t, legs)]
    (HERE / "stewart.csv").write_text("\n".join(lines) + "\n")
    print(f"stewart.csv: {t.size} knots, scale {scale:.4f}, peak leg speed "
          f"{np.abs(np.gradient(legs, t, axis=0)).max():.4f} m/s, stroke "
          f"{np.abs(legs - home).max():.4f} m")


if __name__ == "__main__":
    main()

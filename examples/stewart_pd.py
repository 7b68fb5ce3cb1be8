"""PD + feedforward on the Stewart platform through rbc's Python API, on the MuJoCo plant.

The six legs follow a heave x_d(t) = x0 + a sin(ωt); each control period the reduced model
closes at the desired state and its inverse dynamics give the feedforward efforts; a PD term
on the measured leg lengths corrects the rest. Run: python examples/stewart_pd.py BUNDLE
"""

import sys

import numpy as np

import rbc


def track(bundle, duration=1.0, feedforward=True, dt=1e-3, steps=5, kp=2e4, kd=4e2):
    """Largest leg-length error [m] over the run (1 kHz physics, 200 Hz control)."""
    model = rbc.load(bundle)
    x0, a, w = model.port_map(model.close()).values, 0.03, 2 * np.pi
    desired = model.close(x0, speeds=a * w * np.ones(6))            # x_d(0), u_d(0)
    plant = model.plant(desired, "mujoco", dt=dt)
    worst = 0.0
    for n in range(round(duration / (steps * dt))):
        t = n * steps * dt
        x, u, udot = x0 + a * np.sin(w * t), a * w * np.cos(w * t), -a * w**2 * np.sin(w * t)
        desired = model.close(x, speeds=u * np.ones(6), guess=desired)
        m = plant.measure()                                          # ports ℓ, ℓ̇ [m, m/s]
        f = kp * (x - m.ports) + kd * (u - m.port_rates)             # PD on the legs [N]
        if feedforward:
            f += model.inverse_dynamics(desired, udot * np.ones(6))  # M_r u̇ + h_r − τ_r
        plant.advance(f, steps)
        worst = max(worst, float(np.abs(x - m.ports).max()))
    return worst


if __name__ == "__main__":
    path = sys.argv[1] if len(sys.argv) > 1 else "artifacts/stewart.h5"
    print(f"max leg error: PD {track(path, feedforward=False) * 1e3:.3f} mm, "
          f"PD + feedforward {track(path) * 1e3:.3f} mm")

"""Throughput of the swing integrator: RK4 steps per second for RABBIT under FL.

Run ``python -m rbc.walkers.bench``. Two numbers: the bare integrator (``rk4_step`` with
the closed-loop vector field, 4 controller evaluations per step) and the full simulator
(:func:`rbc.walkers.hybrid.simulate.walk`: guard, fall watch, event location, impacts, logging).
"""

from __future__ import annotations

import time

import numpy as np


def rk4_steps_per_second(steps: int = 20000, repeats: int = 3) -> tuple[float, float]:
    """Best-of-``repeats`` ``(bare RK4 steps/s, full-walk steps/s)`` on one core."""
    from rbc.walkers.control.controllers import make_controller
    from rbc.walkers.control.vc import vc_initial_state
    from rbc.walkers.hybrid.registry import load_model
    from rbc.walkers.hybrid.simulate import walk
    from rbc.walkers.hybrid.swing import rk4_step

    m = load_model("rabbit")
    ctrl = make_controller("fl", m, 0.0)
    x0 = vc_initial_state(ctrl, m.params["controller"]["initial_phase_rate"])
    n = m.n

    def deriv(x, u):
        qdd, ua = ctrl.accel(x[:n], x[n:])
        return np.concatenate([x[n:], qdd]), ua

    bare, full = 0.0, 0.0
    for _ in range(repeats):
        x = x0.copy()
        t = time.perf_counter()
        for _k in range(steps):
            x = rk4_step(deriv, x, 1e-6, None)  # tiny step: stays in the swing phase
        bare = max(bare, steps / (time.perf_counter() - t))
        t = time.perf_counter()
        res = walk(m, ctrl, 0.0, x0, 10, dt=1e-3)
        full = max(full, (len(res.t) - len(res.strides)) / (time.perf_counter() - t))
    return bare, full


if __name__ == "__main__":  # pragma: no cover
    b, f = rk4_steps_per_second()
    print(f"RABBIT + FL: {b:,.0f} RK4 steps/s (integrator), {f:,.0f} steps/s (full walk)")

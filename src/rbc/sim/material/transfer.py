"""One material-transfer run: the mission tracked by ``rbc simulate``'s machinery on the
excavation scene, and its figures (docs/excavation.md).

:func:`run_transfer` prepares the run exactly as ``rbc simulate --backend mujoco
--controller pd+ff --reference MISSION`` would (:func:`rbc.sim.run.prepare`: checks, the
reference lift, the feedforward table), swaps the plant for the scene's
(:func:`rbc.sim.material.plant.material_backend`), runs :func:`rbc.sim.run.simulate` and
adds the delivered-mass metric, the arm loop gaps and the reference lift's closure check to
the run's summary.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np

from rbc.model.compiled import CompiledModel
from rbc.sim.material.plant import TrackRecorder, default_rule, material_backend
from rbc.sim.material.scene import Scene

#: the lifted reference must close to this at every grid sample [m, rad] (the corrector's
#: tolerance is 1e-13; the margin is round-off of the residual's own evaluation)
LIFT_TOL = 1e-10


def lift_residual(kin: CompiledModel, q: np.ndarray) -> float:
    """Largest closure residual ‖ρ(q_k)‖∞ over the lifted reference's samples q (K, nq)
    [m, rad] — an independent check that every corrector update of the lift succeeded."""
    from rbc.model.kinematics import residual

    return float(max((np.abs(residual(kin, qk)).max(initial=0.0) for qk in q), default=0.0))


def run_transfer(bundle: str | Path, scene: Scene, reference: Path, *,
                 duration: float | None = None, dt: float = 1e-3, sample: float = 0.01,
                 ) -> dict:
    """Run the mission on the scene (module docstring).

    Args:
        bundle: the excavator's bundle; scene: the scene; reference: the mission file
            (:func:`rbc.sim.material.mission.write_reference`).
        duration: simulated time [s] (default the reference's); dt: physics step and
            control period [s]; sample: particle-track spacing [s].

    Returns:
        A dict: ``summary`` (``rbc simulate``'s), ``delivery`` (the metric's summary),
        ``delivered_mass`` [kg], ``particles``, ``bed_mass`` (declared) and
        ``bed_mass_mujoco`` [kg], ``loop_gaps`` {equality: max [m]}, ``arm_loop_gap`` [m],
        ``lift_residual`` [m, rad], ``lift_ok``, ``clipped_steps``, ``peak_effort``,
        ``effort_limits``, ``tracks`` (the recorder's arrays, for plots).

    Raises:
        the errors of :func:`rbc.sim.run.prepare` (a bad reference, bundle or backend).
    """
    from rbc.sim.run import SimOptions, prepare, simulate

    prep = prepare(bundle, SimOptions(backend="mujoco", controller="pd+ff", dt=dt,
                                      reference=Path(reference), duration=duration))
    rec = TrackRecorder(scene, sample)
    prep = dataclasses.replace(prep, backend=material_backend(scene, rec))
    res = simulate(prep)
    s = res.summary
    metric = rec.delivery(default_rule(scene))
    gaps = s["max_loop_gap_by_constraint"]
    lift = lift_residual(prep.kin, prep.controller.reference.q)
    return {"summary": s, "delivery": metric.summary(), "delivered_mass": metric.mass,
            "particles": scene.n_particles, "particle_mass": scene.particle_mass,
            "bed_mass": scene.total_mass, "bed_mass_mujoco": rec.total_mass,
            "loop_gaps": gaps, "arm_loop_gap": max(
                (g for n, g in gaps.items() if n.startswith("arm_cyl")), default=0.0),
            "max_loop_gap": s["max_loop_gap"], "lift_residual": lift,
            "lift_ok": bool(lift <= LIFT_TOL), "clipped_steps": s["clipped_steps"],
            "peak_effort": s["peak_effort"], "effort_limits": s["effort_limits"],
            "tracking_rms": s["tracking_rms"], "wall_time": s["wall_time"],
            "prepare_time": s["prepare_time"], "physics_steps": s["physics_steps"],
            "energy_ledger_residual": s["energy_ledger_residual"],
            "tracks": rec.arrays(), "states": metric.states}

"""``rbc bench simulate``: one closed-loop simulation run on each backend, side by side.

Every backend gets the same request (:class:`rbc.sim.run.SimOptions`: bundle, reference,
controller, duration, physics step; everything else at its default) and runs one after
another in the same process. All requests are *prepared* (:func:`rbc.sim.run.prepare`:
every check, the reference lift and the feedforward table) before the first control loop
runs, so a request a backend cannot run fails before anything is timed.

Timed per backend:

* ``prepare_s`` — :func:`~rbc.sim.run.prepare` (``Prepared.prepare_time``), reported apart
  and **not** in the real-time factor;
* ``wall_s`` — the control loop of :func:`~rbc.sim.run.simulate` (the summary's
  ``wall_time``: controller, physics steps and measurement, per control step);
* ``real_time_factor`` — simulated duration / ``wall_s`` (the summary's own value);
* ``us_per_step`` — ``wall_s`` / physics steps [µs] (controller and measurement included);
* ``outside_loop_s`` — the rest of the :func:`~rbc.sim.run.simulate` call: building the
  plant (e.g. the MJCF export for MuJoCo; loading the reduced backend's compiled kernels)
  and computing the summary;
* ``kernel_load_s`` — of that, the reduced backend's first call of its kernels (numba's
  cache load, about a second per process; a compile on a fresh install), None for the
  other backends: the first-call time, apart from the warm loop's;
* ``ratio_to_peer`` — ``wall_s`` / the peer's ``wall_s``. The peer is ``mujoco`` when it is
  in the list, else the first backend.

The tracking errors (task RMS, port RMS, largest loop gap) are reported with the times, so
a fast wrong answer shows.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path

from rbc.errors import UsageError
from rbc.sim.backends import BACKENDS, backend_class
from rbc.sim.run import Prepared, SimOptions, prepare, simulate

#: Backends run by default, in this order.
DEFAULT_BACKENDS: tuple[str, ...] = ("reduced", "mujoco", "pinocchio")
#: The preferred peer of the wall-time ratios.
PEER = "mujoco"

#: ``progress(backend, stage, fraction)``; stage ``lift``, ``ff`` (prepare) or ``simulate``.
BenchProgress = Callable[[str, str, float], None]


def parse_backends(text: str) -> list[str]:
    """Backend names from a comma-separated list, checked against the registry.

    Args:
        text: e.g. ``"reduced,mujoco"`` (spaces around names are ignored).

    Returns:
        The names, in the given order.

    Raises:
        BackendError: an unknown name (the message lists the valid ones).
        UsageError: an empty list or a name given twice.
    """
    names = [x.strip() for x in text.split(",") if x.strip()]
    if not names:
        raise UsageError(f"--backends: expected a comma-separated list of backends, got "
                         f"'{text}'; valid: {', '.join(BACKENDS)}")
    for name in names:
        backend_class(name)  # BackendError with did-you-mean and the valid names
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise UsageError(f"--backends: {', '.join(repeated)} listed more than once")
    return names


def peer_of(backends: Sequence[str]) -> str:
    """The peer of the wall-time ratios: ``mujoco`` if listed, else the first backend."""
    return PEER if PEER in backends else backends[0]


def bench_simulate(bundle: str | Path, reference: str | Path,
                   backends: Sequence[str] = DEFAULT_BACKENDS, duration: float = 2.0,
                   dt: float = 1e-3, controller: str = "pd+ff",
                   progress: BenchProgress | None = None, evaluator: str = "kernel",
                   integrator: str = "dopri5", fix_root: bool = False) -> dict:
    """Run the same simulation on each backend in turn and time it (module docstring).

    Args:
        bundle: compiled bundle.
        reference: reference knots (CSV or YAML; docs/simulate.md).
        backends: registered backend names, run in this order (no repeats).
        duration: simulated time [s] (> 0).
        dt: physics step [s] (> 0); the control period is ``dt``.
        controller: ``pd``, ``pd+ff`` or ``passive``.
        evaluator, integrator: the reduced backend's (``kernel`` | ``reference``; ``dopri5``
            | ``rk4`` | ``RK45`` | ``DOP853``).
        progress: called with (backend, stage, fraction in [0, 1]).
        fix_root: weld floating roots to the world on every backend (``rbc simulate
            --fix-root``; an imported Cassie's pelvis).

    Returns:
        ``{"bundle", "reference", "robot", "controller", "evaluator", "integrator",
        "duration" [s], "dt" [s], "peer",
        "backends": {name: {"prepare_s", "wall_s", "outside_loop_s", "kernel_load_s",
        "duration_s",
        "real_time_factor", "physics_steps", "us_per_step", "ratio_to_peer",
        "tracking_rms" {task: m}, "port_rms" {actuator: m or rad}, "max_loop_gap" [m]}}}``,
        backends in run order; times in seconds unless the key says µs.

    Raises:
        UsageError: a non-positive duration or step, an empty or repeated backend list.
        BackendError, SimulationError, ControllerError, ReferenceError, …: a request that
            :func:`rbc.sim.run.prepare` rejects on any backend; nothing has run.
    """
    names = list(backends)
    if not names:
        raise UsageError(f"no backends given; valid: {', '.join(BACKENDS)}")
    if len(set(names)) != len(names):
        raise UsageError(f"a backend is listed more than once: {', '.join(names)}")
    if not (duration > 0):
        raise UsageError(f"--duration {duration:g}: must be positive")
    if not (dt > 0):
        raise UsageError(f"--dt {dt:g}: must be positive")
    default = SimOptions()
    if "reduced" not in names and (evaluator, integrator) != (default.evaluator,
                                                             default.integrator):
        raise UsageError("--evaluator/--integrator apply to the reduced backend only; it is "
                         f"not among --backends {','.join(names)}")

    def stage(name: str) -> Callable[[str, float], None] | None:
        return None if progress is None else (lambda s, x: progress(name, s, x))

    prepared: dict[str, Prepared] = {}
    for name in names:  # every check on every backend before the first loop runs
        own = {"evaluator": evaluator, "integrator": integrator} if name == "reduced" else {}
        opts = SimOptions(backend=name, controller=controller, duration=duration, dt=dt,
                          reference=Path(reference), fix_root=fix_root, **own)
        prepared[name] = prepare(bundle, opts, stage(name))
    rows: dict[str, dict] = {}
    for name in names:
        t0 = time.perf_counter()
        s = simulate(prepared[name], stage(name)).summary
        call = time.perf_counter() - t0
        wall, steps = float(s["wall_time"]), int(s["physics_steps"])
        rows[name] = {
            "prepare_s": float(s["prepare_time"]),
            "wall_s": wall,
            "outside_loop_s": call - wall,
            "kernel_load_s": (s.get("integration") or {}).get("kernel_load_s"),
            "duration_s": float(s["duration"]),
            "real_time_factor": float(s["real_time_factor"]),
            "physics_steps": steps,
            "us_per_step": 1e6 * wall / steps if steps else float("nan"),
            "tracking_rms": dict(s["tracking_rms"]),
            "port_rms": dict(s["port_rms"]),
            "max_loop_gap": float(s["max_loop_gap"]),
        }
    peer = peer_of(names)
    for row in rows.values():
        peer_wall = rows[peer]["wall_s"]
        row["ratio_to_peer"] = row["wall_s"] / peer_wall if peer_wall > 0 else float("inf")
    first = prepared[names[0]]
    return {"bundle": str(bundle), "reference": str(reference), "robot": first.kin.record.name,
            "controller": controller, "evaluator": evaluator, "integrator": integrator,
            "duration": first.duration, "dt": dt, "peer": peer,
            "backends": rows}

"""``rbc plan``: integrate the resolved motion on the closure manifold (docs/tasks.md).

The state is the vector x (n_u,) of the partition's independent coordinates (each a scalar
whose rate is its speed, so ẋ = u); every evaluation closes the mechanism at x
(:class:`rbc.sim.manifold.LiftedCloser`: lift predictor, Newton corrector, the lift E at the
closed configuration reused) and solves the velocity problem there (:func:`.resolve.resolve`)
against the desired sample of the path at that time. The motion ``ẋ = u(x, t)`` is
integrated by the classical Runge–Kutta method (RK4) at a fixed step; the configuration at
every step is a closed one (the corrector's tolerance, 1e-13), so the plan never drifts off
the manifold. Under exact execution the task error obeys ``ė_x = −K_x e_x``; RK4's local
error O((K_x h)⁵) keeps that to better than 1e-6 relative at the default step.

The plan's outputs (:func:`write_plan`): ``reference.csv`` — the independent coordinates at
``sample_dt`` spacing, the reference format ``rbc simulate --reference`` tracks (with the
same ``--partition``); ``log.h5`` — time, q, x, u, e_x, the task value and its desired value,
Φ, the active bounds and the slack; ``summary.json``; ``plan.png`` (e_x, Φ and the strokes,
bound activity and slack).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import h5py
import numpy as np

from rbc.model.closure import ClosureError
from rbc.model.compiled import Partition
from rbc.model.dynamics import DynamicsData, DynamicsModel
from rbc.model.solve import independent_values, rate_is_speed
from rbc.sim.manifold import LiftedCloser
from rbc.sim.threads import limit_blas_threads
from rbc.tasks import preference
from rbc.tasks.charts import TaskError
from rbc.tasks.paths import TaskPath
from rbc.tasks.qp import TaskInfeasible
from rbc.tasks.resolve import Resolved, TaskLaw, resolve

#: Default integration step [s]: RK4 at K_x h = 0.02 (default gain) has a relative local
#: error ≈ (K_x h)⁵/120 ≈ 3e-11 per step.
DEFAULT_DT = 0.01
#: Default spacing [s] of the reference knots written for ``rbc simulate`` (its clamped
#: cubic spline through 20 ms knots reproduces a smooth plan to ≈ 1e-9 m).
DEFAULT_SAMPLE_DT = 0.02


@dataclass(eq=False)
class PlanResult:
    """A resolved motion sampled at every integration step.

    Attributes:
        time: (K,) [s]; q: (K, nq) closed configurations; x, u: (K, n_u) independent values
        and speeds; e: (K, m) task errors; value, desired: (K, size) the task value and its
        desired value; phi: (K,) Φ; strokes: (K, n_lim) normalised strokes s_i; active:
        (K, k) bool bound activity; slack: (K, m) task-velocity slack; relaxed: (K,) bool;
        rows, bounds, strokes_names, independent: names; partition: its name;
        attrs: what the summary reports about the request.
    """

    time: np.ndarray
    q: np.ndarray
    x: np.ndarray
    u: np.ndarray
    e: np.ndarray
    value: np.ndarray
    desired: np.ndarray
    phi: np.ndarray
    strokes: np.ndarray
    active: np.ndarray
    slack: np.ndarray
    relaxed: np.ndarray
    rows: tuple[str, ...]
    bounds: tuple[str, ...]
    stroke_names: tuple[str, ...]
    independent: tuple[str, ...]
    partition: str
    attrs: dict = field(default_factory=dict)


def check_partition(dm: DynamicsModel, part: Partition) -> None:
    """Every independent coordinate must be a scalar whose rate is its speed (ẋ = u).

    Raises:
        TaskError: names the coordinates that are not (spherical, free, planar joints).
    """
    k = dm.kin
    bad = [k.v_names[int(j)] for j in part.independent if not rate_is_speed(k, int(j))]
    if bad:
        raise TaskError(f"partition '{part.name}': the independent coordinates {', '.join(bad)} "
                        "have no scalar value whose rate is the speed (spherical, free or "
                        "planar joints); plan in a partition that makes other joints "
                        "independent (rbc compile --partition)")


def plan(dm: DynamicsModel, part: Partition, law: TaskLaw, path: TaskPath, q0: np.ndarray,
         *, dt: float = DEFAULT_DT, duration: float | None = None,
         progress: Callable[[float], None] | None = None) -> PlanResult:
    """Integrate the resolved motion from the closed configuration q0 (module docstring).

    Args:
        duration: integrated time [s] (default: the path's); rounded to whole steps.

    Raises:
        TaskError: a bad partition or step.
        TaskInfeasible: the task cannot be met at some time (the message names the time and
            the blocking bounds); only without the slack relaxation.
        ClosureError: the motion reaches a configuration that cannot be closed.
    """
    check_partition(dm, part)
    limit_blas_threads(1)  # small matrices: one BLAS thread (rbc.sim.threads)
    T = path.duration if duration is None else duration
    if not (np.isfinite(dt) and dt > 0):
        raise TaskError(f"--dt {dt:g}: must be positive and finite [s]")
    n = max(int(round(T / dt)), 1)
    k = dm.kin
    data = DynamicsData.of(dm)
    close = LiftedCloser(dm, data, part, q0)

    def f(t: float, x: np.ndarray) -> tuple[np.ndarray, Resolved]:
        q = close(x)
        try:
            r = resolve(dm, data, law, q, close.lifted.E, path(t))
        except TaskInfeasible as err:
            raise TaskInfeasible(f"at t = {t:.3f} s: {err}", err.bounds, err.slack,
                                 err.rank_deficient) from None
        return r.u, r

    x = independent_values(k, part, close.q)
    st = preference.strokes(k)
    out: dict[str, list] = {key: [] for key in ("q", "x", "u", "e", "value", "desired", "phi",
                                                 "strokes", "active", "slack", "relaxed")}
    u, r = f(0.0, x)
    bounds = r.bounds.names

    def record(t: float, x: np.ndarray, r: Resolved) -> None:
        out["q"].append(close.q.copy())
        out["x"].append(x.copy())
        out["u"].append(r.u)
        out["e"].append(r.task.e)
        out["value"].append(r.task.value)
        out["desired"].append(path(t).value)
        out["phi"].append(r.phi)
        out["strokes"].append(st.normalised(k, close.q))
        out["active"].append(r.solution.active)
        out["slack"].append(r.solution.slack)
        out["relaxed"].append(r.solution.relaxed)

    record(0.0, x, r)
    for i in range(n):
        t = i * dt
        try:
            k2, _ = f(t + dt / 2, x + dt / 2 * u)
            k3, _ = f(t + dt / 2, x + dt / 2 * k2)
            k4, _ = f(t + dt, x + dt * k3)
            x = x + dt / 6 * (u + 2 * k2 + 2 * k3 + k4)
            u, r = f(t + dt, x)
        except ClosureError as err:
            raise ClosureError(f"the resolved motion cannot be closed at t = {t:.3f} s: {err}"
                               ) from None
        record(t + dt, x, r)
        if progress is not None:
            progress((i + 1) / n)
    arr = {key: np.array(v) for key, v in out.items()}
    return PlanResult(
        time=np.arange(n + 1) * dt, q=arr["q"], x=arr["x"], u=arr["u"], e=arr["e"],
        value=arr["value"], desired=arr["desired"], phi=arr["phi"],
        strokes=arr["strokes"].reshape(n + 1, st.columns.size),
        active=arr["active"].reshape(n + 1, len(bounds)).astype(bool), slack=arr["slack"],
        relaxed=arr["relaxed"].astype(bool), rows=law.chart.row_names(), bounds=bounds,
        stroke_names=st.names, independent=tuple(k.v_names[int(j)] for j in part.independent),
        partition=part.name,
        attrs={"task": law.chart.label, "gains": law.gains.tolist(), "k_phi": law.k_phi,
               "relax": law.relax, "speed_scale": law.speed_scale,
               "stroke_rate": law.stroke_rate, "dt": dt})


def summary(res: PlanResult) -> dict:
    """The ``summary.json`` document (docs/cli.md lists the keys)."""
    err = np.linalg.norm(res.e, axis=1)
    slack = np.linalg.norm(res.slack, axis=1)
    counts = res.active.sum(axis=0)
    return {
        **res.attrs, "rows": list(res.rows), "partition": res.partition,
        "independent": list(res.independent), "duration": float(res.time[-1]),
        "steps": int(res.time.size - 1),
        "error_initial": float(err[0]), "error_final": float(err[-1]),
        "error_max": float(err.max()), "phi_initial": _finite(res.phi[0]),
        "phi_final": _finite(res.phi[-1]), "phi_max_increase": _finite(
            np.max(np.diff(res.phi), initial=0.0)),
        "slack_max": float(slack.max()), "relaxed_steps": int(res.relaxed.sum()),
        "bounds_active": {n: int(c) for n, c in zip(res.bounds, counts, strict=True) if c},
        "strokes_min": {n: float(v) for n, v in zip(res.stroke_names,
                                                     res.strokes.min(axis=0), strict=True)},
        "strokes_max": {n: float(v) for n, v in zip(res.stroke_names,
                                                     res.strokes.max(axis=0), strict=True)},
    }


def _finite(x: float) -> float | None:
    """x, or None (JSON null) where Φ is infinite: a coordinate at its limit."""
    return float(x) if np.isfinite(x) else None


def write_plan(res: PlanResult, out_dir: str | Path, *, sample_dt: float = DEFAULT_SAMPLE_DT,
               bundle: str = "") -> list[Path]:
    """Write ``reference.csv``, ``log.h5``, ``summary.json`` and ``plan.png`` into the
    directory out_dir, all-or-nothing (:func:`rbc.safeio.atomic_directory`: a temporary
    sibling renamed into place, so an interrupt leaves the previous plan, never a mix of
    two); returns their final paths.

    Raises:
        TaskError: sample_dt is not a positive multiple of the plan's step.
        UsageError: out_dir exists and is a file or a non-empty directory rbc did not write.
    """
    from rbc.safeio import atomic_directory

    dt = float(res.attrs["dt"])
    every = int(round(sample_dt / dt))
    if every < 1 or abs(every * dt - sample_dt) > 1e-9 * sample_dt:
        raise TaskError(f"--sample-dt {sample_dt:g} must be a positive multiple of --dt {dt:g}")
    out = Path(out_dir)
    idx = np.arange(0, res.time.size, every)
    if idx[-1] != res.time.size - 1:
        idx = np.append(idx, res.time.size - 1)
    lines = ["time," + ",".join(res.independent)]
    lines += [",".join(repr(float(v)) for v in (res.time[i], *res.x[i])) for i in idx]
    names = ("reference.csv", "log.h5", "summary.json", "plan.png")
    with atomic_directory(out, "--out") as tmp:
        (tmp / "reference.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
        with h5py.File(tmp / "log.h5", "w") as f:
            for key in ("time", "q", "x", "u", "e", "value", "desired", "phi", "strokes",
                        "active", "slack", "relaxed"):
                f.create_dataset(key, data=getattr(res, key))
            f.attrs["bundle"] = bundle
            for key in ("rows", "bounds", "stroke_names", "independent"):
                f.attrs[key] = list(getattr(res, key))
            f.attrs["partition"] = res.partition
            for key, value in res.attrs.items():
                f.attrs[key] = value
        doc = {"bundle": bundle, **summary(res), "reference": str(out / "reference.csv"),
               "sample_dt": sample_dt}
        (tmp / "summary.json").write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
        _plot(res, tmp / "plan.png", bundle)
    return [out / name for name in names]


def _plot(res: PlanResult, path: Path, bundle: str) -> Path:
    """``plan.png``: e_x per row (log scale), Φ and the normalised strokes, bound activity
    and slack."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t = res.time
    fig, ax = plt.subplots(4, 1, figsize=(8, 10), sharex=True)
    for i, name in enumerate(res.rows):
        ax[0].semilogy(t, np.maximum(np.abs(res.e[:, i]), 1e-16), label=name)
    ax[0].set_ylabel("|e_x| [m, rad]")
    ax[0].legend(fontsize="small", ncol=3, loc="upper right")
    ax[1].plot(t, res.phi, "k")
    ax[1].set_ylabel("Φ (stroke preference)")
    for i, name in enumerate(res.stroke_names):
        ax[2].plot(t, res.strokes[:, i], label=name)
    ax[2].set_ylim(0.0, 1.0)
    ax[2].set_ylabel("normalised stroke s")
    if res.stroke_names:
        ax[2].legend(fontsize="small", ncol=3, loc="upper right")
    active = np.flatnonzero(res.active.any(axis=0))
    for n, b in enumerate(active):
        ts = t[res.active[:, b]]
        ax[3].plot(ts, np.full(ts.size, n), "|", ms=8, label=res.bounds[b])
    ax[3].plot(t, np.linalg.norm(res.slack, axis=1), "r-", lw=0.8, label="‖slack‖")
    ax[3].set_ylabel("active bounds / slack")
    ax[3].set_xlabel("time [s]")
    if active.size or res.relaxed.any():
        ax[3].legend(fontsize="x-small", loc="upper right")
    fig.suptitle(f"{Path(bundle).stem}: plan of {res.attrs['task']}")
    fig.tight_layout()
    try:
        fig.savefig(path, format="png", dpi=100)
    finally:
        plt.close(fig)
    return path

"""Outputs of ``rbc simulate --out DIR``: ``log.h5``, ``summary.json`` and PNG plots.

``log.h5`` layout (SI units; N control steps, N + 1 samples):

=============================  ===========  ================================================
dataset                        shape        meaning
=============================  ===========  ================================================
``time``                       (N+1,)       sample times [s]
``q``, ``v``                   (N+1, ·)     the backend's own state vectors (rbc q and
                                            v = E u for ``reduced``; MuJoCo qpos/qvel;
                                            Pinocchio q/v in Pinocchio order)
``ports``, ``port_rates``      (N+1, n_act) measured ℓ [m, rad], ℓ̇
``port_reference``             (N+1, n_act) reference ℓ (with a reference)
``control/command``            (N, n_act)   controller output before clipping [N, N·m]
``control/effort``             (N, n_act)   applied (clipped) effort, held over step i
``control/clipped``            (N,)         whether any port was clipped at step i
``loop_gaps``                  (N+1, n_gap) world-frame anchor distances [m] (columns
                                            named by the root attribute ``gap_names``)
``kinetic``, ``potential``     (N+1,)       energies [J]
``work_actuators``,            (N+1,)       cumulative work [J]
``work_passive``
``energy_residual``            (N+1,)       the ledger residual [J] (:mod:`rbc.sim.run`)
``tasks/<name>/position``      (N+1, 3)     measured task position [m]
``tasks/<name>/reference``     (N+1, 3)     reference task position [m]
``mode``                       (N+1,)       with a mode schedule: index of the active mode
                                            in the root attribute ``modes``
``work_impacts``               (N+1,)       kinetic energy the impact maps absorbed [J] (≤ 0)
``base/position``,             (N+1, 3)     floating-base origin, measured and reference,
``base/reference``                          world [m]
``supports/<s>/position``,     (N+1, 3)     support frame origin and its anchor (NaN while
``supports/<s>/anchor``                     inactive), world [m]
``supports/<s>/wrench``        (N+1, 6)     the ground's wrench on the support ``[n; f]``,
                                            world axes, about the support point [N·m; N]
                                            (NaN while inactive)
``supports/<s>/slip``          (N+1,)       distance from the anchor while active [m]
``links/<l>/wrench``           (N+1, 6)     a composed run (docs/composition.md): palm a's
                                            wrench on palm b ``[n; f]``, world axes, about
                                            palm b [N·m; N]; with ``supports/<s>/wrench``
                                            of the mode's supports, sample i at the start
                                            of interval i with its efforts
=============================  ===========  ================================================

Root attributes: bundle, backend, controller, dt, control_dt, actuators, gap_names (and with
a mode schedule: modes, supports; on a composed bundle: composed_mode).
"""

from __future__ import annotations

import json
from pathlib import Path

import h5py
import numpy as np

from rbc.safeio import atomic_directory
from rbc.sim.run import SimResult


def write_outputs(result: SimResult, out_dir: str | Path) -> list[Path]:
    """Write ``log.h5``, ``summary.json`` and the plots into ``out_dir`` all-or-nothing
    (:func:`rbc.safeio.atomic_directory`: a temporary sibling swapped in whole, so an
    interrupt leaves the previous run's outputs); returns the final paths.

    Raises:
        UsageError: ``out_dir`` exists and is not an rbc output directory.
    """
    out = Path(out_dir)
    with atomic_directory(out, "--out") as tmp:
        with h5py.File(tmp / "log.h5", "w") as h5:
            for key, value in result.log.items():
                h5.create_dataset(key, data=value)
            for key, value in result.attrs.items():
                h5.attrs[key] = value
        (tmp / "summary.json").write_text(json.dumps(result.summary, indent=2) + "\n")
        names = ["log.h5", "summary.json", *(p.name for p in plot(result, tmp))]
    return [out / n for n in names]


def plot(result: SimResult, out: Path) -> list[Path]:
    """``tracking.png`` (with a reference; under the allocation controller its tracking
    error ‖e‖∞ and ‖s‖∞ in the mode's independent coordinates, which it always has: the
    held stance without ``--reference``), ``efforts.png``, ``loop_gaps.png``,
    ``wrenches.png`` (a composed run)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    log, s = result.log, result.summary
    t, paths = log["time"], []
    title = f"{Path(str(s['bundle'])).stem}: {s['backend']}, {s['controller']}"
    if "port_reference" in log:
        fig, ax = plt.subplots(2, 1, figsize=(8, 6), sharex=True)
        for key in log:
            if key.startswith("tasks/") and key.endswith("/position"):
                name = key.removeprefix("tasks/").removesuffix("/position")  # h1/pelvis
                err = np.linalg.norm(log[key] - log[f"tasks/{name}/reference"], axis=1)
                ax[0].plot(t, 1e3 * err, label=name)
        ax[0].set_ylabel("task error [mm]")
        ax[0].legend(loc="upper right")
        perr = log["port_reference"] - log["ports"]
        for i, name in enumerate(result.attrs["actuators"]):
            ax[1].plot(t, 1e3 * perr[:, i], label=name)
        ax[1].set_ylabel("port error [mm or mrad]")
        ax[1].set_xlabel("time [s]")
        ax[1].legend(fontsize="small", ncol=3, loc="upper right")
        fig.suptitle(title + " — tracking error")
        paths.append(_save(fig, out / "tracking.png"))
    elif "allocation/tracking_error" in log:
        paths.append(_allocation_tracking_plot(plt, log, title, out / "tracking.png"))
    paths.append(_effort_plot(plt, t, log["control/effort"], result.attrs["actuators"],
                              s["effort_limits"], title, out / "efforts.png"))
    fig, ax = plt.subplots(figsize=(8, 4))
    gaps = log["loop_gaps"]
    for i, name in enumerate(result.attrs["gap_names"]):
        ax.semilogy(t, np.maximum(gaps[:, i], 1e-17), label=name)
    ax.set_xlabel("time [s]")
    ax.set_ylabel("loop gap [m]")
    if result.attrs["gap_names"]:
        ax.legend(fontsize="small", ncol=3, loc="upper right")
    ax.set_title(title + " — loop gaps")
    paths.append(_save(fig, out / "loop_gaps.png"))
    if "composed_mode" in result.attrs:
        paths.append(_wrench_plot(plt, log, title, out / "wrenches.png"))
    return paths


def _allocation_tracking_plot(plt, log: dict[str, np.ndarray], title: str, path: Path
                              ) -> Path:
    """The allocation controller's ‖e‖∞ [rad or m], ‖s‖∞ [rad/s or m/s] and slack ‖z‖∞ per
    control step (:mod:`rbc.sim.allocation_control`), log scale."""
    fig, ax = plt.subplots(2, 1, figsize=(8, 6), sharex=True)
    t = log["allocation/time"]
    ax[0].semilogy(t, np.maximum(log["allocation/tracking_error"], 1e-17), label="‖e‖∞")
    ax[0].semilogy(t, np.maximum(log["allocation/sliding"], 1e-17), label="‖s‖∞")
    ax[0].set_ylabel("tracking error [rad, m; rad/s, m/s]")
    ax[0].legend(loc="upper right")
    ax[1].semilogy(t, np.maximum(log["allocation/slack"], 1e-17))
    ax[1].set_ylabel("allocation slack ‖z‖∞ [N, N·m]")
    ax[1].set_xlabel("time [s]")
    fig.suptitle(title + " — tracking error (independent coordinates)")
    return _save(fig, path)


def _wrench_plot(plt, log: dict[str, np.ndarray], title: str, path: Path) -> Path:
    """A composed run's hand-link force magnitudes and support normal forces (the wrench
    log of :mod:`rbc.compose.runlog`; "up" is the world z axis against gravity)."""
    fig, ax = plt.subplots(2, 1, figsize=(8, 6), sharex=True)
    t = log["time"]
    for key, w in log.items():
        if key.endswith("/wrench") and key.startswith("links/"):
            ax[0].plot(t, np.linalg.norm(w[:, 3:], axis=1), label=key.split("/")[1])
        elif key.endswith("/wrench") and key.startswith("supports/"):
            ax[1].plot(t, w[:, 5], label=key[len("supports/"):-len("/wrench")])
    ax[0].set_ylabel("link force |f| [N]")
    ax[1].set_ylabel("support normal force f_z [N]")
    ax[1].axhline(0.0, color="k", lw=0.8)
    ax[1].set_xlabel("time [s]")
    for a in ax:
        if a.get_legend_handles_labels()[0]:
            a.legend(fontsize="small", ncol=3, loc="upper right")
    fig.suptitle(title + " — hand-link and support wrenches")
    return _save(fig, path)


def _effort_plot(plt, t: np.ndarray, eff: np.ndarray, names: list[str],
                 limits: dict[str, list[float]], title: str, path: Path) -> Path:
    """Efforts on their own scale (limits dashed only when within 2× of the peak, so small
    efforts are not flattened by far-away limits) and, below, the share of the limit used
    in the effort's direction [%], with ±100 % marked."""
    fig, ax = plt.subplots(2, 1, figsize=(8, 6), sharex=True)
    peak = float(np.abs(eff).max(initial=0.0))
    for i, name in enumerate(names):
        line, = ax[0].plot(t[:-1], eff[:, i], label=name)
        lo, hi = limits[name]
        for lim in (lo, hi):
            if np.isfinite(lim) and abs(lim) <= 2.0 * peak:
                ax[0].axhline(lim, color=line.get_color(), ls="--", lw=0.8)
        with np.errstate(divide="ignore", invalid="ignore"):
            share = np.where(eff[:, i] >= 0, eff[:, i] / hi, -eff[:, i] / lo)
        ax[1].plot(t[:-1], 100.0 * share, color=line.get_color())
    ax[0].set_ylabel("port effort [N or N·m]")
    if names:
        ax[0].legend(fontsize="small", ncol=3, loc="upper right")
    for y in (-100.0, 100.0):
        ax[1].axhline(y, color="k", ls="--", lw=0.8)
    ax[1].set_ylabel("share of limit [%]")
    ax[1].set_xlabel("time [s]")
    fig.suptitle(title + " — efforts (dashed: limits)")
    return _save(fig, path)


def _save(fig, path: Path) -> Path:
    import matplotlib.pyplot as plt

    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path

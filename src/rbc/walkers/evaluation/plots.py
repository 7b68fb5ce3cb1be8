"""Figures of a walk: phase portrait (PNG) and stick-figure animation (GIF).

Drawing only; the positions come from :func:`rbc.walkers.hybrid.model.point` (tilted frame),
rotated to the world frame by the slope for display.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from rbc.walkers.hybrid.simulate import WalkResult


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def phase_portrait(res: WalkResult, path: str | Path, controller: str | None = None) -> str:
    """Plot ``dq/dt`` against ``q`` for every coordinate over the run (PNG); returns path."""
    plt = _pyplot()
    n = res.model.n
    fig, ax = plt.subplots(figsize=(6, 5))
    # break the curves at impacts (NaN rows) so relabeling jumps are not drawn as lines
    cut = np.flatnonzero(np.diff(res.stride_index)) + 1
    X = np.insert(res.x, cut, np.nan, axis=0)
    for j in range(n):
        ax.plot(X[:, j], X[:, n + j], lw=0.8, label=res.model.coords[j])
    if len(res.strides):
        P = res.poincare
        k = min(P.shape[1] // 2, n)
        ax.plot(P[:, 0], P[:, k], "k.", ms=4, label="Poincaré samples (stance)")
    ax.set_xlabel("angle q [rad]")
    ax.set_ylabel("rate dq/dt [rad/s]")
    ax.set_title(f"{res.model.name}: phase portrait")
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return str(path)


def animation(res: WalkResult, path: str | Path, max_frames: int = 60, fps: int = 15) -> str:
    """Stick-figure GIF (matplotlib PillowWriter); segments from the model's ``sketch``.

    Raises:
        ImportError: pillow is missing (matplotlib normally depends on it).
    """
    try:
        import PIL  # noqa: F401  (PillowWriter needs pillow; matplotlib normally ships it)
    except ImportError as err:
        raise ImportError("the GIF animation needs pillow: pip install pillow") from err
    plt = _pyplot()
    from matplotlib.animation import PillowWriter

    from rbc.walkers.hybrid.model import point

    m = res.model
    n = m.n
    a = res.alpha
    rot = np.array([[np.cos(a), np.sin(a)], [-np.sin(a), np.cos(a)]])  # tilted -> world

    def world(p):
        return p @ rot.T if p.ndim > 1 else rot @ p

    sketch = m.params.get("sketch", [["hip"], ["hip", "swing_foot"]])
    frames = np.linspace(0, len(res.t) - 1, min(max_frames, len(res.t))).astype(int)
    fig, ax = plt.subplots(figsize=(6, 3.5))
    xmax = float(res.base[-1, 0]) + 1.0
    ground = world(np.array([[-1.0, 0.0], [xmax, 0.0]]))
    ax.plot(ground[:, 0], ground[:, 1], "k-", lw=1)
    lines = [ax.plot([], [], "o-", lw=2, ms=3)[0] for _ in sketch]
    ax.set_aspect("equal")
    ax.set_xlim(ground[:, 0].min(), ground[:, 0].max())
    ax.set_ylim(min(ground[:, 1].min(), 0) - 0.2, max(ground[:, 1].max(), 0) + 1.8)
    ax.set_title(f"{m.name}")
    writer = PillowWriter(fps=fps)
    with writer.saving(fig, str(path), dpi=60):
        for k in frames:
            q = res.x[k, :n]
            b = res.base[k]
            for ln, seg in zip(lines, sketch, strict=True):
                pts = [np.zeros(2)] if len(seg) == 1 else []
                pts += [point(m, s, q) for s in seg]
                P = world(np.array(pts) + b)
                ln.set_data(P[:, 0], P[:, 1])
            writer.grab_frame()
    plt.close(fig)
    return str(path)


def batch_plot(summary: dict, path: str | Path) -> str:
    """Monte Carlo batch figure (PNG): fall rate, tracking EMA distribution and the
    contraction scatter ``sum a_k b_k`` vs ``sum a_k^2`` per controller; returns path.

    Args:
        summary: the dict of :func:`rbc.walkers.evaluation.batch.summarize`.
    """
    plt = _pyplot()
    per = summary["controllers"]
    names = list(per)
    fig, ax = plt.subplots(1, 3, figsize=(12, 3.8))
    ax[0].bar(names, [per[c]["fall_rate"] for c in names], color="tab:red")
    ax[0].set_ylabel("fall rate")
    ax[0].set_ylim(0, 1)
    emas = [[r["tracking_ema"] for r in summary["runs"]
             if r["controller"] == c and not r["fell"]] or [np.nan] for c in names]
    ax[1].boxplot(emas)
    ax[1].set_xticks(range(1, len(names) + 1), names)
    ax[1].set_yscale("log")
    ax[1].set_ylabel("tracking EMA of |y|^2 [rad^2]")
    for c in names:
        rs = [r for r in summary["runs"] if r["controller"] == c and not r["fell"]]
        ax[2].scatter([r["contraction_aa"] for r in rs], [r["contraction_ab"] for r in rs],
                      s=8, label=f"{c}: rho={per[c]['contraction'] or float('nan'):.3f}")
    ax[2].set_xlabel("sum |x_k - x*|^2")
    ax[2].set_ylabel("sum |x_k - x*| |x_k+1 - x*|")
    ax[2].legend(fontsize=7)
    cfg = summary["config"]
    fig.suptitle(f"{cfg['model']}: {cfg['samples']} samples x {cfg['strides']} strides, "
                 f"seed {cfg['seed']}")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return str(path)

"""Figures of a walk: phase portrait (PNG) and stick-figure animation (GIF).

Drawing only; the positions come from :func:`rbc.walkers.model.point` (tilted frame),
rotated to the world frame by the slope for display.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from rbc.walkers.simulate import WalkResult


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def phase_portrait(res: WalkResult, path: str | Path) -> str:
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

    from rbc.walkers.model import point

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

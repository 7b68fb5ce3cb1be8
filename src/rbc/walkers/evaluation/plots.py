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


SIGN = "angles from the slope normal, clockwise (forward) positive"
ROLE_STYLE = {"stance": ("tab:blue", "stance leg"), "swing": ("tab:orange", "swing leg"),
              "body": ("0.45", "torso / other")}


def _title(res: WalkResult, controller: str | None) -> str:
    m = res.model
    name = str(m.params.get("title", m.name))
    ctrl = f", {controller}" if controller else ""
    return f"{name}{ctrl}, slope {np.degrees(res.alpha):.2f}° ({res.alpha:.4f} rad)"


def phase_portrait(res: WalkResult, path: str | Path, controller: str | None = None) -> str:
    """Plot ``dq/dt`` against ``q`` for every coordinate over the run (PNG); returns path.

    The title states the model, controller and slope; the subtitle the angle convention;
    the post-impact (Poincaré) samples are marked for every coordinate.
    """
    plt = _pyplot()
    n = res.model.n
    fig, ax = plt.subplots(figsize=(7, 5.2))
    # break the curves at impacts (NaN rows) so relabeling jumps are not drawn as lines
    cut = np.flatnonzero(np.diff(res.stride_index)) + 1
    X = np.insert(res.x, cut, np.nan, axis=0)
    P = res.poincare if len(res.strides) else np.zeros((0, 2 * n))
    k = P.shape[1] // 2 if len(P) else n
    for j in range(n):
        color = f"C{j % 10}"
        ax.plot(X[:, j], X[:, n + j], lw=0.8, color=color, label=res.model.coords[j])
        if len(P) and j < k:
            ax.plot(P[:, j], P[:, k + j], "o", ms=4, mfc="none", mec=color)
    if len(P):
        ax.plot([], [], "ko", ms=4, mfc="none", label="post-impact (Poincaré) samples")
    ax.set_xlabel("angle q [rad]")
    ax.set_ylabel("rate dq/dt [rad/s]")
    ax.set_title(_title(res, controller), fontsize=10)
    fig.text(0.5, 0.005, f"{SIGN}; {len(res.strides)} strides"
             + (f", {res.fall_reason}" if res.fell else ""), ha="center", va="bottom",
             fontsize=8)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return str(path)


def segment_roles(model) -> list[str]:
    """``"stance"``, ``"swing"`` or ``"body"`` per ``sketch`` segment: the stance side is the
    coordinates on the base-to-hip path, the swing side their relabeling images; a segment
    from the base or spanning only stance coordinates (no angle offsets) is stance, one
    touching a swing coordinate is swing, the rest (torso, a rimless wheel's other spokes)
    is body."""
    sketch = model.params.get("sketch", [["hip"], ["hip", "swing_foot"]])
    stance = set(np.flatnonzero(model.points["hip"]))
    swing = {model.relabel[j] for j in stance} - stance
    zero = np.zeros(model.n)
    out = []
    for seg in sketch:
        a = zero if len(seg) == 1 else model.points[seg[0]]
        av = zero if len(seg) == 1 else model.points_v.get(seg[0], zero)
        b, bv = model.points[seg[-1]], model.points_v.get(seg[-1], zero)
        span = set(np.flatnonzero(b - a)) | set(np.flatnonzero(bv - av))
        if span & swing:
            out.append("swing")
        elif len(seg) == 1 or (span <= stance and not np.any(bv - av)):
            out.append("stance")
        else:
            out.append("body")
    return out


def animation(res: WalkResult, path: str | Path, controller: str | None = None,
              fps: int = 20, max_frames: int = 300) -> str:
    """Stick-figure GIF (matplotlib PillowWriter); segments from the model's ``sketch``.

    Frames are sampled evenly in time over the whole run, ``fps`` frames per simulated
    second (real time) up to ``max_frames`` (then faster, stated in the frame); axes in
    metres of the world frame, ground drawn at the slope, a time and stride counter, and a
    stance/swing legend. About 640×320 pixels.

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
    roles = segment_roles(m)
    T = float(res.t[-1] - res.t[0])
    count = int(min(max_frames, max(2, np.ceil(T * fps) + 1)))
    times = np.linspace(res.t[0], res.t[-1], count)
    frames = np.minimum(np.searchsorted(res.t, times), len(res.t) - 1)
    speed = T / max((count - 1) / fps, 1e-9)
    leg = float(m.params.get("leg_length", 1.0))
    fig, ax = plt.subplots(figsize=(8, 4))
    xmax = float(res.base[-1, 0]) + 1.2 * leg
    ground = world(np.array([[-1.2 * leg, 0.0], [xmax, 0.0]]))
    ax.plot(ground[:, 0], ground[:, 1], "k-", lw=1, label=f"ground ({np.degrees(a):.2f}°)")
    lines = []
    for role in roles:
        color, _ = ROLE_STYLE[role]
        lines.append(ax.plot([], [], "o-", lw=2.2, ms=3, color=color)[0])
    for role in dict.fromkeys(roles):
        color, label = ROLE_STYLE[role]
        ax.plot([], [], "-", lw=2.2, color=color, label=label)
    ax.set_aspect("equal")
    ax.set_xlim(ground[:, 0].min(), ground[:, 0].max())
    top = max(1.8 * leg, float(np.max([point(m, p, res.x[0, :n])[1] for p in m.points])) + 0.2)
    ax.set_ylim(min(ground[:, 1].min(), 0) - 0.1 * leg, max(ground[:, 1].max(), 0) + top)
    ax.set_xlabel("horizontal position [m]")
    ax.set_ylabel("height [m]")
    ax.set_title(_title(res, controller), fontsize=10)
    ax.legend(loc="upper right", fontsize=7)
    clock = ax.text(0.01, 0.96, "", transform=ax.transAxes, va="top", fontsize=9,
                    family="monospace")
    total = len(res.strides) + (1 if res.fell else 0)
    writer = PillowWriter(fps=fps)
    with writer.saving(fig, str(path), dpi=80):
        for k in frames:
            q = res.x[k, :n]
            b = res.base[k]
            for ln, seg in zip(lines, sketch, strict=True):
                pts = [np.zeros(2)] if len(seg) == 1 else []
                pts += [point(m, s, q) for s in seg]
                P = world(np.array(pts) + b)
                ln.set_data(P[:, 0], P[:, 1])
            clock.set_text(f"t = {res.t[k]:6.2f} s   stride {int(res.stride_index[k]) + 1}/"
                           f"{total}" + (f"   ({speed:.1f}x real time)" if speed > 1.05
                                         else ""))
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
    if any(np.isfinite(x) and x > 0 for e in emas for x in e):
        ax[1].set_yscale("log")  # a log axis needs a positive value (all-zero runs: linear)
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

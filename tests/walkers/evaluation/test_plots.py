"""Figures a person can read: GIF size, evenly sampled frames, counter and legend roles;
phase portraits with slope, controller, sign convention and Poincaré samples."""

import math

import numpy as np
import pytest
from PIL import Image

from rbc.walkers.api import run_walk
from rbc.walkers.evaluation.plots import animation, phase_portrait, segment_roles
from rbc.walkers.hybrid.registry import load_model


@pytest.fixture(scope="module")
def compass_walk():
    return run_walk("compass", "passive", math.pi / 60, 2)


def test_gif_frames_are_even_in_time_and_sized(tmp_path, compass_walk):
    res = compass_walk
    f = animation(res, tmp_path / "c.gif", controller="passive", fps=20)
    im = Image.open(f)
    assert im.size == (640, 320)  # 8 x 4 in at 80 dpi
    T = res.t[-1] - res.t[0]
    assert im.n_frames == int(np.ceil(T * 20)) + 1  # real time at 20 frames/s
    im.seek(0)
    assert im.info["duration"] == pytest.approx(50, abs=1)  # [ms] per frame
    capped = Image.open(animation(res, tmp_path / "d.gif", fps=20, max_frames=10))
    assert capped.n_frames == 10


def test_phase_portrait_states_its_conditions(tmp_path, compass_walk, monkeypatch):
    import matplotlib.figure

    texts = []
    orig = matplotlib.figure.Figure.savefig

    def spy(fig, *a, **k):
        texts.extend(t.get_text() for t in fig.texts)
        texts.extend(ax.get_title() for ax in fig.axes)
        texts.extend(str(line.get_label()) for ax in fig.axes for line in ax.lines)
        markers = [ln for ax in fig.axes for ln in ax.lines if ln.get_marker() == "o"]
        texts.append(f"markers={len(markers)}")
        return orig(fig, *a, **k)

    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", spy)
    phase_portrait(compass_walk, tmp_path / "p.png", controller="passive")
    joined = " | ".join(texts)
    assert "passive" in joined and "3.00°" in joined
    assert "clockwise (forward) positive" in joined
    # one marker series per coordinate plus the legend entry
    assert "markers=3" in joined and "Poincaré" in joined


@pytest.mark.parametrize(("name", "roles"), [
    ("compass", {"stance", "swing"}), ("rabbit", {"stance", "swing", "body"}),
    ("rimless", {"stance", "body"}), ("humanoid", {"stance", "swing", "body"}),
])
def test_sketch_roles(name, roles):
    assert set(segment_roles(load_model(name))) == roles

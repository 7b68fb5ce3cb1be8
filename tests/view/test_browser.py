"""``rbc view`` in a real browser: headless Chromium opens the saved page (no server, no
network), and the screenshot must show the mechanism with its cut joints in their colour.

The screenshots are kept under ``artifacts/view/`` (CI artifacts). The test skips, saying
why, only where no Chromium is installed (``.ci/run`` installs Debian's ``chromium``).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from rbc.cli.main import main
from rbc.compiler import compile_to_file
from tests.conftest import RECORDS, REPO

BROWSER = next((b for b in ("chromium", "chromium-browser", "google-chrome")
                if shutil.which(b)), None)
pytestmark = pytest.mark.skipif(BROWSER is None, reason="no Chromium on this machine "
                                "(Debian: apt-get install chromium; .ci/run installs it)")
BACKGROUND = np.array([244, 246, 248])  # COLORS.background of app.js


def screenshot(page: Path, png: Path, tmp: Path) -> np.ndarray:
    """Render ``page`` at 1000×700 in headless Chromium (software WebGL) → RGB array."""
    from matplotlib.image import imread

    cmd = [BROWSER, "--headless=new", "--no-sandbox", "--disable-gpu", "--use-angle=swiftshader",
           "--enable-unsafe-swiftshader", "--disable-background-networking",
           "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic",
           f"--user-data-dir={tmp / 'profile'}", "--window-size=1000,700",
           "--virtual-time-budget=8000", f"--screenshot={png}", page.resolve().as_uri()]
    subprocess.run(cmd, capture_output=True, timeout=180, check=False)
    assert png.is_file(), "Chromium wrote no screenshot"
    return (imread(png)[..., :3] * 255).round().astype(int)


@pytest.mark.parametrize("name", ["stewart", "excavator"])
def test_mechanism_is_drawn_with_cut_joints_in_their_colour(name, tmp_path, capsys):
    bundle = tmp_path / f"{name}.h5"
    compile_to_file(RECORDS / f"{name}.yaml", bundle)
    page = tmp_path / f"{name}.html"
    assert main(["view", str(bundle), "--save", str(page)]) == 0
    capsys.readouterr()
    out = REPO / "artifacts" / "view"
    out.mkdir(parents=True, exist_ok=True)
    img = screenshot(page, out / f"{name}.png", tmp_path)
    h, w = img.shape[:2]
    scene = img[int(0.15 * h): int(0.9 * h), int(0.33 * w): int(0.95 * w)]  # right of the panel
    drawn = np.abs(scene - BACKGROUND).sum(axis=2) > 60
    assert drawn.mean() > 0.03, "the mechanism is not drawn"
    r, g, b = (scene[..., i] for i in range(3))
    orange = (r > 150) & (g > 40) & (g < 150) & (b < 90) & (r - b > 110)  # cut joints
    blue = (b > 120) & (b - r > 60)  # tree joints
    assert orange.sum() > 100, "no cut joint drawn in its colour"
    assert blue.sum() > 100, "no tree joint drawn in its colour"

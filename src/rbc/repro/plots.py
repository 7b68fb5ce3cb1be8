"""Figures of the reproduction targets: matplotlib (Agg), saved as PNG with every axis
labelled with its unit.

:func:`save` refuses a figure with an axes whose x or y label is empty or carries no unit
in brackets (``"speed multiplier [1]"``, ``"δ_a [1]"``, ``"time [s]"``): a plot a reader
cannot interpret is a bug in the target, caught by the quick run in CI.
"""

from __future__ import annotations

import re
from pathlib import Path

_UNIT = re.compile(r"\[[^\]]+\]")


def pyplot():
    """``matplotlib.pyplot`` on the Agg backend (no display needed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def unlabelled(fig) -> list[str]:
    """Descriptions of the axes of ``fig`` whose x or y label lacks a ``[unit]``."""
    bad = []
    for n, ax in enumerate(fig.get_axes()):
        if not ax.has_data() or not ax.axison:
            continue
        for which, label in (("x", ax.get_xlabel()), ("y", ax.get_ylabel())):
            if not _UNIT.search(label or ""):
                bad.append(f"axes {n} ('{ax.get_title()}'): {which} label '{label}'")
    return bad


def save(fig, path: str | Path, dpi: int = 110) -> str:
    """Save ``fig`` as PNG at ``path`` and close it; returns the file name.

    Raises:
        ValueError: an axes without a labelled unit on x or y (see :func:`unlabelled`).
    """
    plt = pyplot()
    bad = unlabelled(fig)
    if bad:
        plt.close(fig)
        raise ValueError(f"{Path(path).name}: every axis needs a label with its unit in "
                         f"brackets: {'; '.join(bad)}")
    fig.tight_layout()
    fig.savefig(path, dpi=dpi)
    plt.close(fig)
    return Path(path).name

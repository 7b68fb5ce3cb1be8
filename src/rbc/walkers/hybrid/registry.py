"""Walker models by name: the registry is data (YAML files shipped in ``models/``).

A model file lists coordinates (absolute link angles), lumped masses with their path from
the base (one row of ``A`` each), named points, link inertias, actuators, joint limits, the
friction coefficient, the stance-exchange relabeling and free-form controller data. See
``docs/walkers.md`` for the format.
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from typing import Any

import numpy as np
import yaml

from rbc.walkers.errors import WalkerError
from rbc.walkers.hybrid.model import WalkerModel

# name -> file in rbc/walkers/hybrid/models/
MODELS: dict[str, str] = {
    "compass": "compass.yaml",
    "threelink": "threelink.yaml",
    "rabbit": "rabbit.yaml",
    "humanoid": "humanoid.yaml",
}


def model_names() -> tuple[str, ...]:
    """Registered model names."""
    return tuple(MODELS)


def _row(path: dict[str, float], coords: list[str], where: str) -> np.ndarray:
    row = np.zeros(len(coords))
    for link, length in path.items():
        if link not in coords:
            raise WalkerError(f"{where}: unknown link '{link}'", choices=coords, got=link)
        row[coords.index(link)] = float(length)
    return row


def model_from_dict(data: dict[str, Any], where: str = "<dict>") -> WalkerModel:
    """Build a :class:`WalkerModel` from a parsed model file.

    Raises:
        WalkerError: a link name is unknown or the relabeling is not a permutation.
    """
    coords = list(data["coordinates"])
    n = len(coords)
    masses = data["masses"]
    A = np.stack([_row(mk["path"], coords, f"{where}: masses.{mk['name']}") for mk in masses])
    m = np.array([float(mk["mass"]) for mk in masses])
    inertia = data.get("inertia", {})
    I = np.array([float(inertia.get(c, 0.0)) for c in coords])
    points = {k: _row(v, coords, f"{where}: points.{k}") for k, v in data["points"].items()}
    acts = data.get("actuators", [])
    B = np.zeros((n, len(acts)))
    for i, a in enumerate(acts):
        if a.get("parent") is not None:
            B[coords.index(a["parent"]), i] = -1.0
        B[coords.index(a["child"]), i] = 1.0
    relabel = tuple(coords.index(c) for c in data.get("relabel", coords))
    if sorted(relabel) != list(range(n)):
        raise WalkerError(f"{where}: relabel is not a permutation of the coordinates")
    limits = [
        (coords.index(lim["parent"]), coords.index(lim["child"]), lim["lo"], lim["hi"])
        for lim in data.get("limits", [])
    ]
    known = {"name", "coordinates", "masses", "inertia", "points", "actuators", "relabel",
             "limits", "mu", "gravity"}
    return WalkerModel(
        name=str(data["name"]),
        coords=tuple(coords),
        A=A,
        m=m,
        I=I,
        B=B,
        points=points,
        relabel=relabel,
        actuators=tuple(a["name"] for a in acts),
        mu=float(data.get("mu", 0.7)),
        limits=np.array(limits, dtype=float).reshape(-1, 4),
        params={k: v for k, v in data.items() if k not in known},
        g=float(data.get("gravity", 9.81)),
    )


@cache
def load_model(name: str) -> WalkerModel:
    """Load registered model ``name``.

    Raises:
        WalkerError: unknown name (the message lists the registered names).
    """
    if name not in MODELS:
        raise WalkerError(f"unknown walker model '{name}'", choices=model_names(), got=name)
    text = resources.files("rbc.walkers.hybrid").joinpath("models", MODELS[name]).read_text()
    return model_from_dict(yaml.safe_load(text), where=MODELS[name])

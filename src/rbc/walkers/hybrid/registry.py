"""Walker models by name or file: the registry is data (YAML files shipped in ``models/``).

A model file lists coordinates (absolute link angles), lumped masses with their path from
the base (one row of ``A`` each), named points, link inertias, actuators, joint limits, the
friction coefficient, the stance-exchange relabeling and free-form controller data. The
reader and its validation are :mod:`rbc.walkers.hybrid.modelfile`; built-in models and a
user's file go through the same one. See ``docs/walkers.md`` §8 for the format.
"""

from __future__ import annotations

import math
import re
from functools import cache
from importlib import resources
from pathlib import Path

from rbc.walkers.errors import WalkerError
from rbc.walkers.hybrid.model import WalkerModel
from rbc.walkers.hybrid.modelfile import model_from_text, read_model_file

# name -> file in rbc/walkers/hybrid/models/
MODELS: dict[str, str] = {
    "compass": "compass.yaml",
    "threelink": "threelink.yaml",
    "rabbit": "rabbit.yaml",
    "humanoid": "humanoid.yaml",
    "garcia": "garcia.yaml",
    "rimless": "rimless.yaml",
}


def model_names() -> tuple[str, ...]:
    """Registered model names."""
    return tuple(MODELS)


@cache
def load_model(name: str) -> WalkerModel:
    """Load registered model ``name``.

    Raises:
        WalkerError: unknown name (the message lists the registered names).
    """
    if name not in MODELS:
        raise WalkerError(f"unknown walker model '{name}'", choices=model_names(), got=name)
    text = resources.files("rbc.walkers.hybrid").joinpath("models", MODELS[name]).read_text()
    return model_from_text(text, where=MODELS[name])


def is_model_file(spec: str) -> bool:
    """Whether ``spec`` names a model file (a path ending in .yaml/.yml, or containing a
    directory separator) rather than a registered name."""
    return spec.endswith((".yaml", ".yml")) or "/" in spec or "\\" in spec


def resolve_model(spec: str) -> WalkerModel:
    """A registered model by name, or a model file by path (``--model NAME|FILE.yaml``).

    Raises:
        WalkerError: unknown name (lists the registered names and the file form) or an
            invalid file (names the file and the field).
    """
    if is_model_file(spec):
        return read_model_file(spec)
    if spec not in MODELS:
        raise WalkerError(f"unknown walker model '{spec}' (or give a model file, "
                          "FILE.yaml)", choices=model_names(), got=spec)
    return load_model(spec)


def model_label(spec: str) -> str:
    """Safe stem for output file names: the registered name, or the file's stem with
    characters other than letters, digits, '-', '_' replaced (never the file's contents)."""
    stem = Path(spec).stem if is_model_file(spec) else spec
    return re.sub(r"[^A-Za-z0-9_-]", "_", stem) or "model"


def default_slope(model: WalkerModel) -> float:
    """Slope [rad] the model file suggests: ``slope``, or ``slope_degrees`` converted as
    ``pi * deg / 180`` (3 degrees is exactly ``pi / 60``), else 0."""
    p = model.params
    if "slope_degrees" in p:
        return math.pi * float(p["slope_degrees"]) / 180.0
    return float(p.get("slope", 0.0))


def stride_time_limit(model: WalkerModel) -> float:
    """Longest swing phase [s] before a run stops with "no touchdown": the model file's
    ``stride_time_limit``, else four small-oscillation periods of a pendulum of the leg
    length, ``4 * 2 pi sqrt(leg_length / g)`` (compass: 8.0 s; Garcia's walker in its
    dimensionless units, g = 1: 25.1 s against its 3.81 period)."""
    p = model.params
    if "stride_time_limit" in p:
        return float(p["stride_time_limit"])
    return 8.0 * math.pi * math.sqrt(float(p.get("leg_length", 1.0)) / model.g)

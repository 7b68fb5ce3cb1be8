"""Walker model files: read, validate and build a :class:`WalkerModel` (docs/walkers.md §8).

The built-in models (``models/*.yaml``) and a user's ``--model FILE.yaml`` go through the
same reader. Every error names the file and the field (``FILE: masses[2].path.swing: ...``)
and lists the valid choices where there are any; it is a :class:`WalkerError` (exit status
2 on the command line). Files are untrusted: size-limited (1 MB), YAML anchors/aliases and
duplicate keys are refused, nothing in a file names another file.

Format additions for limit and constrained models:

* a path term is a length, ``{length: L, offset: DELTA}`` (``offset_degrees`` also
  accepted), or a list of terms ``[{link: q, length: L, offset: DELTA}, ...]`` (the same link
  may appear twice, e.g. a rimless wheel's next spoke): the term is ``L u(q + DELTA)``;
* ``relabel_offsets: {coord: DELTA}``: ``q+ = q-[relabel] + offset`` (a rimless wheel's
  next spoke is ``2 pi / N`` behind);
* ``infinitesimal: true`` on a mass: its weight is relative, the model is the limit of that
  mass -> 0 (Garcia's simplest walker); the equations are the limit equations
  (:func:`rbc.walkers.hybrid.model.limit_solve`), not a singular mass matrix.

A coordinate that carries no (finite or infinitesimal) mass and no inertia makes the mass
matrix singular; it is named at load time.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import numpy as np

from rbc.errors import InputError
from rbc.safeio import MAX_MAGNITUDE, load_yaml, read_text
from rbc.walkers.errors import WalkerError
from rbc.walkers.hybrid.model import GRAVITY, WalkerModel, limit_solve, mass_matrix

MAX_BYTES = 1 << 20  # a model file is a few kB; refuse pathological inputs
_SCI = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)[eE][-+]?\d+")

KEYS = ("name", "title", "coordinates", "relabel", "relabel_offsets", "masses", "inertia",
        "points", "actuators", "limits", "mu", "gravity", "leg_length", "min_step", "phase",
        "initial_state", "slope", "slope_degrees", "dt", "stride_time_limit", "sketch",
        "controller", "foot", "gait")
_STRUCTURAL = ("name", "coordinates", "masses", "inertia", "points", "actuators", "relabel",
               "relabel_offsets", "limits", "mu", "gravity")


class _Reader:
    """Field accessors that raise :class:`WalkerError` naming ``file: field``."""

    def __init__(self, where: str) -> None:
        self.where = where

    def fail(self, field: str, problem: str, choices=None, got=None) -> WalkerError:
        at = f"{self.where}: {field}" if field else self.where
        return WalkerError(f"{at}: {problem}", choices=choices, got=got)

    def mapping(self, v: Any, field: str) -> dict:
        if not isinstance(v, dict):
            raise self.fail(field, f"expected a mapping, got {type(v).__name__}")
        for k in v:
            if not isinstance(k, str):
                raise self.fail(field, f"keys must be names (strings), got {k!r}")
        return v

    def seq(self, v: Any, field: str, min_len: int = 0) -> list:
        if not isinstance(v, list):
            raise self.fail(field, f"expected a list, got {type(v).__name__}")
        if len(v) < min_len:
            raise self.fail(field, f"expected at least {min_len} entries, got {len(v)}")
        return v

    def name(self, v: Any, field: str) -> str:
        if not isinstance(v, str) or not v.strip():
            raise self.fail(field, f"expected a non-empty name, got {v!r}")
        return v

    def number(self, v: Any, field: str, lo: float | None = None, hi: float | None = None,
               lo_open: bool = False) -> float:
        if isinstance(v, str) and _SCI.fullmatch(v.strip()):
            v = float(v)  # YAML 1.1 reads 1e-6 (no dot) as text; a user means the number
        if isinstance(v, bool) or not isinstance(v, int | float):
            raise self.fail(field, f"expected a number, got {v!r}")
        x = float(v)
        if not math.isfinite(x):
            raise self.fail(field, f"expected a finite number, got {v!r}")
        if abs(x) > MAX_MAGNITUDE:  # (squares of larger values overflow in the dynamics)
            raise self.fail(field, f"expected a magnitude ≤ {MAX_MAGNITUDE:g}, got {x:g}")
        if lo is not None and (x < lo or (lo_open and x == lo)):
            raise self.fail(field, f"expected a value {'>' if lo_open else '>='} {lo:g}, "
                                   f"got {x:g}")
        if hi is not None and x >= hi:
            raise self.fail(field, f"expected a value < {hi:g}, got {x:g}")
        return x

    def coord(self, v: Any, coords: list[str], field: str) -> int:
        if v not in coords:
            raise self.fail(field, f"unknown coordinate {v!r}", choices=coords,
                            got=v if isinstance(v, str) else None)
        return coords.index(v)

    def keys(self, d: dict, allowed: tuple[str, ...], field: str,
             required: tuple[str, ...] = ()) -> None:
        for k in d:
            if k not in allowed:
                raise self.fail(f"{field}.{k}" if field else k, "unknown field",
                                choices=allowed, got=k)
        for k in required:
            if k not in d:
                raise self.fail(f"{field}.{k}" if field else k, "missing field")


def _term(r: _Reader, v: Any, field: str) -> tuple[float, float]:
    """``(length [m], offset [rad])`` of one path term."""
    if isinstance(v, dict):
        r.keys(v, ("length", "offset", "offset_degrees", "link"), field, ("length",))
        if "offset" in v and "offset_degrees" in v:
            raise r.fail(field, "give offset or offset_degrees, not both")
        off = (r.number(v["offset"], f"{field}.offset") if "offset" in v else
               math.pi * r.number(v.get("offset_degrees", 0.0), f"{field}.offset_degrees")
               / 180.0)
        return r.number(v["length"], f"{field}.length"), off
    return r.number(v, field), 0.0


def _path(r: _Reader, v: Any, coords: list[str], field: str) -> tuple[np.ndarray, np.ndarray]:
    """Rows ``(a, av)`` (n,) each: coefficients of ``u(q_j)`` and ``v(q_j)``."""
    a, av = np.zeros(len(coords)), np.zeros(len(coords))
    if isinstance(v, list):
        items = []
        for i, t in enumerate(v):
            f = f"{field}[{i}]"
            r.mapping(t, f)
            if "link" not in t:
                raise r.fail(f"{f}.link", "missing field")
            items.append((r.coord(t["link"], coords, f"{f}.link"), t, f))
    else:
        items = [(r.coord(k, coords, f"{field}.{k}"), t, f"{field}.{k}")
                 for k, t in r.mapping(v, field).items()]
    for j, t, f in items:
        length, off = _term(r, t, f)
        if off == 0.0:
            a[j] += length
        else:
            a[j] += length * math.cos(off)
            av[j] += length * math.sin(off)
    return a, av


def read_model_file(path: str | Path) -> WalkerModel:
    """Read and validate a walker model file.

    Raises:
        WalkerError: unreadable, too large, not YAML, or any field invalid (named).
    """
    p = Path(path)
    where = str(path)
    try:
        text = read_text(p, "config", limit=MAX_BYTES)
    except InputError as err:
        if err.problem == "file not found":
            raise WalkerError(f"{where}: no such model file (give a registered model name "
                              "or an existing .yaml file)") from None
        raise WalkerError(str(err)) from None
    return model_from_text(text, where)


def model_from_text(text: str, where: str) -> WalkerModel:
    """Parse YAML ``text`` (from ``where``, named in errors) into a validated model.

    Raises:
        WalkerError: not YAML, or any field invalid.
    """
    data = load_yaml(text, where, error=_yaml_error, aliases=False)
    return model_from_dict(data, where)


def _yaml_error(file: str, path: str, problem: str, expected: str | None = None,
                **_: Any) -> WalkerError:
    """:func:`rbc.safeio.load_yaml`'s error as a :class:`WalkerError` naming the file."""
    where = f"{file}: {path}" if path else file
    return WalkerError(f"{where}: {problem}" + (f"; expected {expected}" if expected else ""))


def model_from_dict(data: Any, where: str = "<dict>") -> WalkerModel:
    """Build a :class:`WalkerModel` from a parsed model file, validating every field.

    Raises:
        WalkerError: a missing or unknown field, a wrong type or value, a name that is not
            a coordinate or point, a relabeling that is not a permutation, or a singular
            mass matrix (names the coordinate).
    """
    r = _Reader(where)
    r.mapping(data, "")
    r.keys(data, KEYS, "", ("name", "coordinates", "masses", "points"))
    name = r.name(data["name"], "name")
    coords = [r.name(c, f"coordinates[{i}]")
              for i, c in enumerate(r.seq(data["coordinates"], "coordinates", 1))]
    if len(set(coords)) != len(coords):
        raise r.fail("coordinates", "coordinate names must be distinct")
    n = len(coords)

    rows, rows_v, ms, eps = [], [], [], []
    for i, mk in enumerate(r.seq(data["masses"], "masses", 1)):
        f = f"masses[{i}]"
        r.keys(r.mapping(mk, f), ("name", "mass", "path", "infinitesimal"), f,
               ("name", "mass", "path"))
        r.name(mk["name"], f"{f}.name")
        ms.append(r.number(mk["mass"], f"{f}.mass", lo=0.0, lo_open=True))
        a, av = _path(r, mk["path"], coords, f"{f}.path")
        rows.append(a)
        rows_v.append(av)
        inf = mk.get("infinitesimal", False)
        if not isinstance(inf, bool):
            raise r.fail(f"{f}.infinitesimal", f"expected true or false, got {inf!r}")
        eps.append(inf)
    A, Av, m, eps = np.array(rows), np.array(rows_v), np.array(ms), np.array(eps)
    if eps.all():
        raise r.fail("masses", "every mass is infinitesimal; at least one must be finite")

    inertia = r.mapping(data.get("inertia", {}), "inertia")
    I = np.zeros(n)
    for k, v in inertia.items():
        I[r.coord(k, coords, f"inertia.{k}")] = r.number(v, f"inertia.{k}", lo=0.0)

    pts = r.mapping(data["points"], "points")
    r.keys(pts, tuple(pts), "points", ("hip", "swing_foot"))
    points, points_v = {}, {}
    for k, v in pts.items():
        points[k], points_v[k] = _path(r, v, coords, f"points.{k}")

    acts = r.seq(data.get("actuators", []), "actuators")
    B = np.zeros((n, len(acts)))
    act_names = []
    for i, a in enumerate(acts):
        f = f"actuators[{i}]"
        r.keys(r.mapping(a, f), ("name", "parent", "child"), f, ("name", "child"))
        act_names.append(r.name(a["name"], f"{f}.name"))
        if a.get("parent") is not None:
            B[r.coord(a["parent"], coords, f"{f}.parent"), i] = -1.0
        B[r.coord(a["child"], coords, f"{f}.child"), i] = 1.0
    if len(set(act_names)) != len(act_names):
        raise r.fail("actuators", "actuator names must be distinct")

    rel = r.seq(data.get("relabel", coords), "relabel")
    relabel = tuple(r.coord(c, coords, f"relabel[{i}]") for i, c in enumerate(rel))
    if sorted(relabel) != list(range(n)):
        raise r.fail("relabel", "not a permutation of the coordinates (each coordinate "
                                "exactly once)", choices=coords)
    offset = np.zeros(n)
    for k, v in r.mapping(data.get("relabel_offsets", {}), "relabel_offsets").items():
        offset[r.coord(k, coords, f"relabel_offsets.{k}")] = r.number(v, f"relabel_offsets.{k}")

    limits = []
    for i, lim in enumerate(r.seq(data.get("limits", []), "limits")):
        f = f"limits[{i}]"
        r.keys(r.mapping(lim, f), ("parent", "child", "lo", "hi"), f,
               ("parent", "child", "lo", "hi"))
        lo, hi = r.number(lim["lo"], f"{f}.lo"), r.number(lim["hi"], f"{f}.hi")
        if not lo < hi:
            raise r.fail(f, f"expected lo < hi, got [{lo:g}, {hi:g}]")
        limits.append((r.coord(lim["parent"], coords, f"{f}.parent"),
                       r.coord(lim["child"], coords, f"{f}.child"), lo, hi))

    mu = r.number(data.get("mu", 0.7), "mu", lo=0.0, lo_open=True)
    g = r.number(data.get("gravity", GRAVITY), "gravity", lo=0.0, lo_open=True)
    params = {k: v for k, v in data.items() if k not in _STRUCTURAL}
    _check_params(r, params, coords, tuple(points))

    def model(sel: np.ndarray, inert: np.ndarray, nm: str) -> WalkerModel:
        return WalkerModel(name=nm, coords=tuple(coords), A=A[sel], m=m[sel], I=inert, B=B,
                           points=points, relabel=relabel, actuators=tuple(act_names), mu=mu,
                           limits=np.array(limits, dtype=float).reshape(-1, 4),
                           params=params, g=g, Av=Av[sel], points_v=points_v,
                           relabel_offset=offset)

    inf_part = model(eps, np.zeros(n), f"{name} (infinitesimal masses)") if eps.any() else None
    wm = model(~eps, I, name)
    if inf_part is not None:
        object.__setattr__(wm, "infinitesimal", inf_part)
    _check_regular(r, wm, A, Av, eps, I)
    return wm


def _check_params(r: _Reader, p: dict, coords: list[str], points: tuple[str, ...]) -> None:
    """Validate the non-structural fields the simulator reads."""
    n = len(coords)
    if "title" in p and not isinstance(p["title"], str):
        raise r.fail("title", "expected text")
    for k in ("leg_length", "dt", "stride_time_limit"):
        if k in p:
            r.number(p[k], k, lo=0.0, lo_open=True)
    if "dt" in p and p["dt"] > 0.1:
        raise r.fail("dt", f"RK4 step {p['dt']:g} s is larger than 0.1 s")
    if "min_step" in p:
        r.number(p["min_step"], "min_step", lo=0.0)
    if "slope" in p and "slope_degrees" in p:
        raise r.fail("slope", "give slope or slope_degrees, not both")
    if "slope" in p:
        r.number(p["slope"], "slope", lo=-math.pi / 4, hi=math.pi / 4, lo_open=True)
    if "slope_degrees" in p:
        r.number(p["slope_degrees"], "slope_degrees", lo=-45.0, hi=45.0, lo_open=True)
    if "initial_state" in p:
        x = r.seq(p["initial_state"], "initial_state")
        if len(x) != 2 * n:
            raise r.fail("initial_state", f"expected {2 * n} numbers (angles then rates), "
                                          f"got {len(x)}")
        for i, v in enumerate(x):
            r.number(v, f"initial_state[{i}]")
    if "phase" in p:
        ph = r.mapping(p["phase"], "phase")
        r.keys(ph, ("coefficients",), "phase", ("coefficients",))
        c = r.mapping(ph["coefficients"], "phase.coefficients")
        vals = [r.number(v, f"phase.coefficients.{k}") for k, v in c.items()]
        for k in c:
            r.coord(k, coords, f"phase.coefficients.{k}")
        if not any(vals):
            raise r.fail("phase.coefficients", "all zero; the phase variable must increase "
                                               "during a stride")
    if "sketch" in p:
        for i, seg in enumerate(r.seq(p["sketch"], "sketch")):
            s = r.seq(seg, f"sketch[{i}]", 1)
            if len(s) > 2:
                raise r.fail(f"sketch[{i}]", "expected [point] or [point, point]")
            for j, name in enumerate(s):
                if name not in points:
                    raise r.fail(f"sketch[{i}][{j}]", f"unknown point {name!r}",
                                 choices=points, got=name if isinstance(name, str) else None)
    for k in ("controller", "foot", "gait"):
        if k in p:
            r.mapping(p[k], k)


def _check_regular(r: _Reader, wm: WalkerModel, A, Av, eps, I) -> None:
    """Name a coordinate that carries nothing; check the (limit) mass matrix is regular at a
    generic configuration."""
    moved = np.any(A != 0, axis=0) | np.any(Av != 0, axis=0) | (I > 0)
    for j, c in enumerate(wm.coords):
        if not moved[j]:
            raise r.fail("masses", f"coordinate '{c}' carries no mass and no inertia: the "
                                   "mass matrix is singular (add a mass on its link, an "
                                   "inertia, or an infinitesimal mass for the m -> 0 limit)")
    q = np.random.default_rng(0).uniform(-0.5, 0.5, wm.n)  # generic, reproducible
    D0 = mass_matrix(wm, q)
    if wm.is_limit:
        try:
            limit_solve(D0, mass_matrix(wm.infinitesimal, q), np.ones(wm.n), np.ones(wm.n),
                        what="limit mass matrix")
        except WalkerError as err:
            raise r.fail("masses", err.problem) from None
        return
    ev = np.linalg.eigvalsh(D0)
    if ev[0] <= 1e-12 * ev[-1]:
        null = np.linalg.eigh(D0)[1][:, 0]
        k = int(np.argmax(np.abs(null)))
        raise r.fail("masses", f"the mass matrix is singular (coordinate '{wm.coords[k]}' "
                               "moves no mass independently of the others)")

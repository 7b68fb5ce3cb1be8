"""Reference motions: knots of independent coordinates, splined and lifted onto the manifold.

**File formats** (docs/simulate.md). A CSV with a header ``time,NAME,NAME,…`` (one row per
knot, times strictly increasing, seconds; values in rad or m), or a YAML mapping::

    time: [0, 2, 5, …]
    joints: {boom_cyl: [2.55, 2.10, …], slew: [0, 0, …]}

NAME is an independent coordinate of the bundle's partition (a joint name, or
``JOINT.suffix`` for multi-coordinate joints: :attr:`CompiledModel.v_names`); independent
coordinates the file does not name are held at their value in the partition's ``q_ref``.

**Spline.** Each named coordinate is a C² cubic spline through its knots with clamped
(zero) end velocities (``scipy.interpolate.CubicSpline(bc_type="clamped")``), so the motion
starts and ends at rest; the spline is sampled at 1 ms to check the joint limits (a cubic
can overshoot between knots).

**Lift** (DESIGN.md §5). On a uniform grid ``t_k = k·h_ref`` the independent values
``x(t_k)`` are closed from the previous sample (:class:`rbc.sim.manifold.LiftedCloser`:
lift predictor and Newton corrector on the augmented tree's closure geometry, the full
continuation of :func:`rbc.model.solve.solve` as the fallback), then
``v = E u`` and ``a = E u̇ + Ė u`` through :func:`rbc.model.partition.curvature`. Between
grid points the port displacements and task positions are interpolated by cubic Hermite
polynomials through the sampled values and rates (error O(h_ref⁴)).
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy.interpolate import CubicSpline

from rbc.errors import RbcError, did_you_mean
from rbc.model.closure import ClosureError
from rbc.model.compiled import CompiledModel, Partition
from rbc.model.dynamics import DynamicsData, DynamicsModel
from rbc.model.interfaces import port_state, ports, task_map
from rbc.model.partition import curvature
from rbc.model.solve import SolveError, independent_values, rate_is_speed, resolve_targets
from rbc.safeio import load_yaml, read_text
from rbc.sim.manifold import LiftedCloser

#: Spacing [s] of the limit check of the splined reference (a cubic's overshoot between
#: 20 ms knots is resolved to well below a micrometre at this spacing).
LIMIT_CHECK_DT = 1e-3


class ReferenceError(RbcError):
    """A reference file cannot be used (format, names, limits, reachability)."""


@dataclass(frozen=True, eq=False)
class Knots:
    """Knots of a reference motion.

    Attributes:
        names: (n,) coordinate names; time: (K,) knot times [s]; values: (K, n) [rad or m];
        source: the file it was read from.
    """

    names: tuple[str, ...]
    time: np.ndarray
    values: np.ndarray
    source: str


def _check_knots(names: list[str], time: np.ndarray, values: np.ndarray, source: str) -> Knots:
    if not names:
        raise ReferenceError(f"{source}: the reference names no coordinate")
    if len(set(names)) != len(names):
        raise ReferenceError(f"{source}: a coordinate is named twice: {', '.join(names)}")
    if time.ndim != 1 or time.size < 2 or values.shape != (time.size, len(names)):
        raise ReferenceError(f"{source}: expected at least two knots with one value per "
                             f"coordinate ({len(names)}) per time")
    if not (np.all(np.isfinite(time)) and np.all(np.isfinite(values))):
        raise ReferenceError(f"{source}: times and values must be finite numbers")
    if time[0] < 0:
        raise ReferenceError(f"{source}: time: the first knot is at {time[0]:g} s; expected "
                             "knot times from 0 (the run starts at t = 0)")
    if np.any(np.diff(time) <= 0):
        k = int(np.argmin(np.diff(time)))
        raise ReferenceError(f"{source}: knot times must increase strictly (row {k + 2}: "
                             f"{time[k + 1]:g} after {time[k]:g})")
    return Knots(tuple(names), time, values, source)


def load_knots(path: str | Path) -> Knots:
    """Read a reference file (``.csv``, or ``.yaml``/``.yml``; module docstring).

    Raises:
        ReferenceError: missing file, unknown extension, malformed content.
    """
    p = Path(path)
    suffix = p.suffix.lower()
    if p.is_dir():
        raise ReferenceError(f"{p}: is a directory; expected a reference file (.csv or .yaml)")
    if suffix not in (".csv", ".yaml", ".yml"):
        raise ReferenceError(f"{p}: unknown reference format '{p.suffix}'; valid: .csv, .yaml")
    text = read_text(p, "reference")
    try:
        if suffix == ".csv":
            rows = [r for r in csv.reader(io.StringIO(text, newline=""))
                    if r and not r[0].lstrip().startswith("#")]
            if not rows:
                raise ReferenceError(f"{p}: empty CSV; expected a header `time,NAME,…` and "
                                     "knot rows")
            head = [h.strip() for h in rows[0]]
            if head[0] != "time":
                raise ReferenceError(f"{p}: the first CSV column must be `time`, got "
                                     f"'{head[0]}'")
            for i, r in enumerate(rows[1:], start=2):
                if len(r) != len(head):
                    raise ReferenceError(f"{p}: row {i} has {len(r)} values, the header "
                                         f"{len(head)}")
            data = np.array([[float(x) for x in r] for r in rows[1:]], dtype=float)
            return _check_knots(head[1:], data[:, 0], data[:, 1:], str(p))
        doc = load_yaml(text, p)
        if not isinstance(doc, dict):
            raise ReferenceError(f"{p}: expected a mapping with `time` (list) and "
                                 "`joints` ({name: list})")
        for key in doc:
            if key not in ("time", "joints"):
                near = did_you_mean(str(key), ("time", "joints"))
                hint = f" (did you mean '{near}'?)" if near else ""
                raise ReferenceError(f"{p}: {key}: unknown key{hint}; valid keys: time, joints "
                                     "(a support reference also has modes, docs/supports.md)")
        for key in ("time", "joints"):
            if key not in doc:
                raise ReferenceError(f"{p}: {key}: missing; expected a mapping with `time` "
                                     "(list) and `joints` ({name: list})")
        if not isinstance(doc["joints"], dict):
            raise ReferenceError(f"{p}: joints: expected a mapping {{name: list of values}}")
        names = [str(n) for n in doc["joints"]]
        series = [doc["joints"][n] for n in doc["joints"]]
        if not isinstance(doc["time"], list) or not all(isinstance(v, list) for v in series):
            raise ReferenceError(f"{p}: `time` and each `joints` entry must be lists of "
                                 "numbers")
        values = np.array(series, dtype=float).T
        return _check_knots(names, np.asarray(doc["time"], dtype=float), values, str(p))
    except (ValueError, IndexError, TypeError, csv.Error) as err:
        raise ReferenceError(f"{p}: malformed reference ({err})") from None


@dataclass(frozen=True, eq=False)
class SplinedReference:
    """Independent-coordinate reference x(t) (n_u,) over all independent coordinates.

    Attributes:
        knots: the knots; columns: (n,) position of each named coordinate in u;
        x_hold: (n_u,) values of the coordinates the file does not name; spline: the
        clamped cubic spline of the named ones.
    """

    knots: Knots
    columns: np.ndarray
    x_hold: np.ndarray
    spline: CubicSpline

    @property
    def duration(self) -> float:
        """Time of the last knot [s]."""
        return float(self.knots.time[-1])

    def __call__(self, t: float, order: int = 0) -> np.ndarray:
        """``x``, ``ẋ`` or ``ẍ`` (order 0, 1, 2) at time t (n_u,); held after the last knot."""
        t = min(max(t, float(self.knots.time[0])), self.duration)
        out = self.x_hold.copy() if order == 0 else np.zeros_like(self.x_hold)
        out[self.columns] = self.spline(t, order)
        return out


def spline_reference(model: CompiledModel, part: Partition, knots: Knots) -> SplinedReference:
    """Bind knots to the partition's independent coordinates and spline them.

    Raises:
        ReferenceError: an unknown or dependent coordinate, a planar joint's coordinate,
            a knot or a spline sample outside the joint limits (names the coordinate, time
            and value).
    """
    try:
        resolve_targets(model, part, {n: float(x) for n, x in
                                      zip(knots.names, knots.values[0], strict=True)})
    except SolveError as err:
        raise ReferenceError(f"{knots.source}: {err}") from err
    v_index = {n: j for j, n in enumerate(model.v_names)}
    for n in knots.names:
        if not rate_is_speed(model, v_index[n]):
            raise ReferenceError(f"{knots.source}: {n} is a planar joint's body-frame speed, "
                                 "not the rate of a value: a reference cannot prescribe it "
                                 "(hold it, or make other joints independent)")
    pos = {int(j): i for i, j in enumerate(part.independent)}
    columns = np.array([pos[v_index[n]] for n in knots.names], dtype=np.int64)
    spline = CubicSpline(knots.time, knots.values, axis=0, bc_type="clamped")
    t = np.arange(knots.time[0], knots.time[-1] + LIMIT_CHECK_DT, LIMIT_CHECK_DT)
    xs = spline(np.minimum(t, knots.time[-1]))
    for i, n in enumerate(knots.names):
        j = v_index[n]
        lo, hi = model.lower[j], model.upper[j]
        bad = np.where((xs[:, i] < lo) | (xs[:, i] > hi))[0]
        if bad.size:
            k = bad[0]
            raise ReferenceError(f"{knots.source}: {n} = {xs[k, i]:.6g} at t = {t[k]:.3f} s "
                                 f"(splined) is outside the joint limits [{lo:g}, {hi:g}]")
    hold = independent_values(model, part, part.q_ref)
    return SplinedReference(knots, columns, hold, spline)


@dataclass(frozen=True, eq=False)
class LiftedReference:
    """The reference lifted onto the closure manifold on a uniform grid.

    Attributes:
        time: (K,) grid [s]; q: (K, nq); u, udot: (K, n_u); v, a: (K, nv) all speeds and
        accelerations ``E u`` and ``E u̇ + Ė u``; ports, port_rates: (K, n_act) ℓ, ℓ̇;
        tasks: {task name: ((K, 3) positions [m], (K, 3) velocities [m/s])}.
    """

    time: np.ndarray
    q: np.ndarray
    u: np.ndarray
    udot: np.ndarray
    v: np.ndarray
    a: np.ndarray
    ports: np.ndarray
    port_rates: np.ndarray
    tasks: dict[str, tuple[np.ndarray, np.ndarray]]

    def port_reference(self, t: float) -> tuple[np.ndarray, np.ndarray]:
        """``(ℓ_ref, ℓ̇_ref)`` (n_act,) at time t (cubic Hermite between grid points)."""
        val, rate = _hermite(self.time, self.ports, self.port_rates, np.array([float(t)]))
        return val[0], rate[0]

    def port_references(self, times: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(ℓ_ref, ℓ̇_ref)`` (T, n_act) at the times (T,) — :meth:`port_reference` at each,
        the same bits, in one pass."""
        return _hermite(self.time, self.ports, self.port_rates, np.asarray(times, dtype=float))

    def task_reference(self, name: str, t: float) -> np.ndarray:
        """Reference position (3,) [m] of a task at time t."""
        return self.task_references(name, np.array([float(t)]))[0]

    def task_references(self, name: str, times: np.ndarray) -> np.ndarray:
        """Reference positions (T, 3) [m] of a task at the times (T,) (one pass)."""
        x, xd = self.tasks[name]
        return _hermite(self.time, x, xd, np.asarray(times, dtype=float))[0]


def _hermite(tg: np.ndarray, y: np.ndarray, yd: np.ndarray, t: np.ndarray
             ) -> tuple[np.ndarray, np.ndarray]:
    """Cubic Hermite values and rates (T, n) at the times t (T,) through samples
    ``(tg, y, ẏ)`` (K,), (K, n), (K, n), clamped to the grid (held after its end). A column
    of y that is not finite (a velocity port) keeps NaN values and gets its rates by linear
    interpolation of ẏ."""
    if tg.size == 1:
        return (np.repeat(y[-1:], t.size, axis=0), np.repeat(yd[-1:], t.size, axis=0))
    k = np.minimum(np.maximum(np.searchsorted(tg, t, side="right") - 1, 0), tg.size - 2)
    h = tg[k + 1] - tg[k]
    s = (np.maximum(t, tg[0]) - tg[k]) / h
    s2, s3 = s * s, s * s * s
    s, s2, s3, h = s[:, None], s2[:, None], s3[:, None], h[:, None]  # per time, per sample
    val = ((2 * s3 - 3 * s2 + 1) * y[k] + (s3 - 2 * s2 + s) * h * yd[k]
           + (3 * s2 - 2 * s3) * y[k + 1] + (s3 - s2) * h * yd[k + 1])
    rate = ((6 * s2 - 6 * s) * (y[k] - y[k + 1]) / h + (3 * s2 - 4 * s + 1) * yd[k]
            + (3 * s2 - 2 * s) * yd[k + 1])
    # a column without values (a velocity port: ℓ is NaN) has only its rates: those are
    # interpolated linearly (the Hermite rate would carry the NaN of ℓ into ℓ̇)
    free = ~np.isfinite(y).all(axis=0)
    if free.any():
        rate[:, free] = ((1 - s) * yd[k] + s * yd[k + 1])[:, free]
    end = t >= tg[-1]
    val[end], rate[end] = y[-1], yd[-1]
    return val, rate


def lift_reference(dm: DynamicsModel, part: Partition, ref: SplinedReference,
                   duration: float, dt: float, progress=None) -> LiftedReference:
    """Close the reference on the grid ``0, dt, …, duration`` (module docstring).

    Args:
        dm: the dynamics model (its augmented tree evaluates the closure geometry).
        progress: optional callable receiving the fraction done (0–1).

    Raises:
        ReferenceError: a sample cannot be closed (unreachable on the manifold: a
            singular configuration or the edge of the workspace); names the time.
    """
    model = dm.kin
    n = int(round(duration / dt)) + 1
    time = np.arange(n) * dt
    nu, pm = part.independent.size, ports(model)
    q = np.empty((n, model.nq))
    u, ud = np.empty((n, nu)), np.empty((n, nu))
    v, a = np.empty((n, model.nv)), np.empty((n, model.nv))
    tnames = [t.name for t in model.record.tasks]
    tx = {name: (np.empty((n, 3)), np.empty((n, 3))) for name in tnames}
    close = LiftedCloser(dm, DynamicsData.of(dm), part, part.q_ref)
    for k, t in enumerate(time):
        try:
            qk = close(ref(t))
        except ClosureError as err:
            raise ReferenceError(f"{ref.knots.source}: the reference is unreachable on the "
                                 f"closure manifold at t = {t:.3f} s: {err}") from err
        L = close.lifted
        u[k], ud[k] = ref(t, 1), ref(t, 2)
        v[k], edu = curvature(model, part, qk, u[k], L)
        a[k] = L.E @ ud[k] + edu
        q[k] = qk
        for name in tnames:
            xt, J = task_map(model, name, qk, L.E)
            tx[name][0][k], tx[name][1][k] = xt[:3], (J[-3:] @ u[k])
        if progress is not None:
            progress((k + 1) / n)
    ell, ell_dot = np.empty((n, len(pm.names))), np.empty((n, len(pm.names)))
    for k in range(n):
        ell[k], J = port_state(model, q[k])
        ell_dot[k] = J @ v[k]
    return LiftedReference(time, q, u, ud, v, a, ell, ell_dot, tx)

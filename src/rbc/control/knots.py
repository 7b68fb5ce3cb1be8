"""References sampled once on a knot grid and interpolated (docs/allocation.md "Stored
references").

A dance sample costs one predictor–corrector step on the mode model (0.25–0.3 s on the
ring of five, :class:`rbc.control.dances.DanceReference`); a 30 s run at 2 ms control needs
15 000 of them, and every policy × plant run the same ones. :func:`sample_knots` samples a
reference once at knots ``t_k = k h`` (:class:`Knots`: q, v, a of the mode model and the
closure residual at every knot), :class:`KnotReference` interpolates between them, and
:func:`cached_knots` stores them in a file named by the content hash of everything they
depend on, so every later run reads them.

**Interpolation** (per interval [t_k, t_k+1], τ = (t − t_k)/h). Every joint's coordinates
are ``q(t) = q_k ⊕ δ(t)`` (:meth:`rbc.model.compiled.CompiledModel.integrate`: a vector
joint's sum, a ball's ``R exp₃(δ)``, a free joint's ``T exp₆(δ)``) with δ the quintic
Hermite polynomial of the interval's end values in the tangent at q_k:

    δ(0) = 0,       δ̇(0) = v_k,            δ̈(0) = a_k,
    δ(h) = Δ = q_k+1 ⊖ q_k,   δ̇(h) = J_r(Δ)⁻¹ v_k+1,   δ̈(h) = J_r(Δ)⁻¹ a_k+1,

and ``v(t) = J_r(δ) δ̇``, ``a(t) = J_r(δ) δ̈ + J̇_r δ̇`` (J_r the right Jacobian of the
exponential: the identity for vector joints, Pinocchio's ``Jexp3`` / ``Jexp6`` for balls
and free joints; its rate by central differences along δ̇). At t_k+1 the end conditions
are the knot's speed and acceleration carried to the tangent at q_k the same way:
``δ̇ = J_r⁻¹(Δ) v_k+1``, ``δ̈ = J_r⁻¹(Δ) a_k+1 + (d/dt J_r⁻¹) v_k+1``. Positions, speeds and
accelerations are exact at the knots; between them the error of a quintic Hermite
interpolant is ``O(h⁶ q⁽⁶⁾)`` — the dance's profiles are C² (quintic ramps), so near a
window's ends it is the ramps' jerk that bounds it. :func:`interpolation_error` measures
it against exact samples at interval midpoints (the closure residual of the interpolated
configuration, and the speed and acceleration errors); docs/allocation.md gives the numbers
that justify the knot spacing.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pinocchio as pin

from rbc.control.reference import ReferenceSample
from rbc.ir import spatial as sp
from rbc.model.kinematics import residual

#: Version of the stored knots' layout and of the sampling (part of the content hash).
FORMAT = 1


@dataclass(frozen=True, eq=False)
class Knots:
    """A reference sampled at ``t_k = t0 + k h``.

    Attributes:
        t: (N,) knot times [s]; q: (N, nq); v, a: (N, nv) of the mode model;
        residual: (N,) closure residual ‖ρ(q_k)‖∞ [rad, m] of every knot;
        independent: (n_u',) the reference's own independent speeds (u = v[independent],
            u̇ = a[independent]: the dance partition's); meta: free-form information
            (wave rise, knot spacing, build time).
    """

    t: np.ndarray
    q: np.ndarray
    v: np.ndarray
    a: np.ndarray
    residual: np.ndarray
    independent: np.ndarray
    meta: dict = field(default_factory=dict)

    @property
    def spacing(self) -> float:
        return float(self.t[1] - self.t[0]) if self.t.size > 1 else 0.0

    def save(self, path: Path) -> None:
        """Write an ``.npz`` (atomically: a temporary file renamed)."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp.npz")
        np.savez_compressed(tmp, t=self.t, q=self.q, v=self.v, a=self.a,
                            residual=self.residual, independent=self.independent,
                            meta=np.array(json.dumps(self.meta)))
        tmp.replace(path)

    @classmethod
    def load(cls, path: Path) -> Knots:
        with np.load(path) as z:
            return cls(z["t"], z["q"], z["v"], z["a"], z["residual"], z["independent"],
                       json.loads(str(z["meta"])))


def knot_times(start: float, duration: float, spacing: float,
               breakpoints: Sequence[float] = ()) -> np.ndarray:
    """Knot times [s]: the uniform grid ``start + k·spacing`` over [start, start +
    duration] merged with the ``breakpoints`` inside it (where a reference's profiles are
    only C², e.g. the ends of a quintic ramp: a knot there keeps every interval analytic,
    so the quintic interpolant's error stays O(h⁶)); grid points closer than spacing/4 to
    a breakpoint are dropped."""
    n = int(np.ceil(duration / spacing - 1e-9))
    end = start + duration
    grid = start + spacing * np.arange(n + 1)
    grid[-1] = min(grid[-1], end)
    bp = np.array(sorted({float(b) for b in breakpoints if start < b < end}))
    if bp.size:
        near = np.min(np.abs(grid[:, None] - bp[None, :]), axis=1) < 0.25 * spacing
        near[0] = near[-1] = False
        grid = np.union1d(grid[~near], bp)
    return grid


def sample_knots(reference: Callable[[float], ReferenceSample], independent: np.ndarray,
                 times: np.ndarray, *,
                 progress: Callable[[int, int], None] | None = None) -> Knots:
    """Sample ``reference`` at the increasing ``times`` [s] (:func:`knot_times`; a dance
    reference steps forward from its last sample).

    Args:
        reference: t ↦ :class:`~rbc.control.reference.ReferenceSample` of the mode model;
        independent: (n_u',) its own independent speed indices; progress: (i, n) ↦ None.
    """
    ts = np.asarray(times, dtype=float)
    q, v, a, res = [], [], [], []
    for i, t in enumerate(ts):
        r = reference(float(t))
        q.append(r.q)
        v.append(r.v)
        a.append(r.a)
        res.append(r.residual)
        if progress is not None:
            progress(i, ts.size)
    return Knots(ts, np.array(q), np.array(v), np.array(a), np.array(res),
                 np.asarray(independent, dtype=np.int64),
                 {"spacing": float(np.max(np.diff(ts))) if ts.size > 1 else 0.0})


# --------------------------------------------------------------------------- Hermite

def _hermite(tau: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The six quintic Hermite basis polynomials on [0, 1] and their first two
    derivatives in τ, ordered (p0, p0', p0'', p1, p1', p1'')."""
    t2, t3, t4, t5 = tau * tau, tau ** 3, tau ** 4, tau ** 5
    h = np.array([1 - 10 * t3 + 15 * t4 - 6 * t5, tau - 6 * t3 + 8 * t4 - 3 * t5,
                  0.5 * t2 - 1.5 * t3 + 1.5 * t4 - 0.5 * t5, 10 * t3 - 15 * t4 + 6 * t5,
                  -4 * t3 + 7 * t4 - 3 * t5, 0.5 * t3 - t4 + 0.5 * t5])
    dh = np.array([-30 * t2 + 60 * t3 - 30 * t4, 1 - 18 * t2 + 32 * t3 - 15 * t4,
                   tau - 4.5 * t2 + 6 * t3 - 2.5 * t4, 30 * t2 - 60 * t3 + 30 * t4,
                   -12 * t2 + 28 * t3 - 15 * t4, 1.5 * t2 - 4 * t3 + 2.5 * t4])
    ddh = np.array([-60 * tau + 180 * t2 - 120 * t3, -36 * tau + 96 * t2 - 60 * t3,
                    1 - 9 * tau + 18 * t2 - 10 * t3, 60 * tau - 180 * t2 + 120 * t3,
                    -24 * tau + 84 * t2 - 60 * t3, 3 * tau - 12 * t2 + 10 * t3])
    return h, dh, ddh


@dataclass(eq=False)
class KnotReference:
    """The interpolated reference of :class:`Knots` on the mode model ``kin`` (module
    docstring): ``ref(t)`` → :class:`~rbc.control.reference.ReferenceSample` for t in
    [t_0, t_N] (clamped outside).

    Attributes:
        kin: the mode model; knots: the samples; with_residual: evaluate the closure
            residual of every interpolated sample (one pass over the chords; off, the
            sample's ``residual`` is NaN).
    """

    kin: object
    knots: Knots
    with_residual: bool = True
    _groups: list = field(default_factory=list, repr=False)
    _interval: tuple[int, np.ndarray] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        k = self.kin
        if self.knots.q.shape[1] != k.nq or self.knots.v.shape[1] != k.nv:
            raise ValueError(f"knots of shape q {self.knots.q.shape}, v {self.knots.v.shape} "
                             f"for a model of nq {k.nq}, nv {k.nv}")
        for e, kind in enumerate(k.kinds):
            if kind.type in ("free", "spherical") and kind.nv:
                self._groups.append((kind.type, k.v_slice(e)))

    # ------------------------------------------------------------- Lie-group Jacobians
    def _jr(self, d: np.ndarray, inverse: bool) -> list[tuple[slice, np.ndarray]]:
        """Per ball / free joint its right Jacobian J_r(d) (or J_r(d)⁻¹) in rbc's order."""
        out = []
        for typ, sl in self._groups:
            x = d[sl]
            if typ == "spherical":
                J = pin.Jlog3(pin.exp3(x)) if inverse else pin.Jexp3(x)
            else:
                xp = x[list(sp.PIN_MOTION_ORDER)]
                M = pin.exp6(pin.Motion(xp))
                Jp = pin.Jlog6(M) if inverse else pin.Jexp6(pin.Motion(xp))
                perm = list(sp.PIN_MOTION_ORDER)
                J = Jp[np.ix_(perm, perm)]
            out.append((sl, J))
        return out

    @staticmethod
    def _apply(blocks, x: np.ndarray, add: bool = True) -> np.ndarray:
        """x with each block's coordinates multiplied by its matrix (the others kept, or
        zero when ``add`` is False)."""
        y = np.array(x, dtype=float) if add else np.zeros_like(x, dtype=float)
        for sl, J in blocks:
            y[sl] = J @ x[sl]
        return y

    def _jr_rate(self, d: np.ndarray, dd: np.ndarray, inverse: bool
                 ) -> list[tuple[slice, np.ndarray]]:
        """Per ball / free joint ``d/dt J_r(δ)^{±1}`` along δ̇ = dd at δ = d: central
        differences of the Jacobian in the direction dd (step ε = 1e-5/‖dd‖: truncation
        ~ε² ‖dd‖², round-off ~1e-16/ε, both far below the interpolation's error)."""
        n = float(np.abs(dd).max(initial=0.0))
        if not self._groups or n == 0.0:
            return [(sl, np.zeros((sl.stop - sl.start,) * 2)) for _, sl in self._groups]
        eps = 1e-5 / n
        plus = self._jr(d + eps * dd, inverse)
        minus = self._jr(d - eps * dd, inverse)
        return [(sl, (Jp - Jm) / (2 * eps))
                for (sl, Jp), (_, Jm) in zip(plus, minus, strict=True)]

    def _coefficients(self, k: int) -> np.ndarray:
        """(6, nv) end values of interval k in the order of :func:`_hermite`, scaled by
        h and h² (τ derivatives): at t_k+1 ``δ̇ = J_r⁻¹(Δ) v``, ``δ̈ = J_r⁻¹(Δ) a +
        (d/dt J_r⁻¹) v``."""
        if self._interval is not None and self._interval[0] == k:
            return self._interval[1]
        kn, kin = self.knots, self.kin
        h = kn.t[k + 1] - kn.t[k]
        d = kin.difference(kn.q[k], kn.q[k + 1])
        inv = self._jr(d, inverse=True)
        d1 = self._apply(inv, kn.v[k + 1])
        d2 = self._apply(inv, kn.a[k + 1]) + self._apply(
            self._jr_rate(d, d1, inverse=True), kn.v[k + 1], add=False)
        c = np.stack([np.zeros(kin.nv), h * kn.v[k], h * h * kn.a[k], d, h * d1, h * h * d2])
        self._interval = (k, c)
        return c

    def __call__(self, t: float) -> ReferenceSample:
        """The sample at t [s] (module docstring)."""
        kn, kin = self.knots, self.kin
        t = float(t)
        tc = min(max(t, float(kn.t[0])), float(kn.t[-1]))
        k = int(np.clip(np.searchsorted(kn.t, tc, side="right") - 1, 0, kn.t.size - 2))
        h = float(kn.t[k + 1] - kn.t[k])
        tau = (tc - float(kn.t[k])) / h
        if tau == 0.0 or tau == 1.0:
            j = k if tau == 0.0 else k + 1
            q, v, a = kn.q[j].copy(), kn.v[j].copy(), kn.a[j].copy()
            res = float(kn.residual[j])
        else:
            c = self._coefficients(k)
            b, db, ddb = _hermite(tau)
            d = b @ c
            jr = self._jr(d, inverse=False)
            q = kin.integrate(kn.q[k], d)
            d1, d2 = (db @ c) / h, (ddb @ c) / (h * h)
            v = self._apply(jr, d1)
            a = self._apply(jr, d2) + self._apply(self._jr_rate(d, d1, inverse=False), d1,
                                                  add=False)
            res = (float(np.abs(residual(kin, q)).max(initial=0.0)) if self.with_residual
                   else float("nan"))
        ind = kn.independent
        return ReferenceSample(t, q, v, a, v[ind], a[ind], res)


def interpolation_error(kin, exact: Callable[[float, int], ReferenceSample], knots: Knots,
                        times: Sequence[float]) -> dict:
    """Errors of :class:`KnotReference` against exact samples at ``times`` (e.g. interval
    midpoints; ``exact(t, k)`` the reference's sample at t stepped from knot k, the
    interval's start — a dance reference's samples depend on the path by ~1e-8 per step
    in the massless link charts, so only a sample from the same knot is comparable): the
    largest closure residual of the interpolated configuration ‖ρ(q)‖∞ [rad, m], the
    largest configuration error ‖q ⊖ q_exact‖∞ and speed and acceleration errors
    ‖v − v_exact‖∞, ‖a − a_exact‖∞ (SI units per coordinate), and the largest speed and
    acceleration magnitudes for scale."""
    ref = KnotReference(kin, knots)
    out = {"residual": 0.0, "q": 0.0, "v": 0.0, "a": 0.0, "v_scale": 0.0, "a_scale": 0.0,
           "samples": 0}
    for t in times:
        k = int(np.clip(np.searchsorted(knots.t, t, side="right") - 1, 0, knots.t.size - 2))
        r, x = ref(float(t)), exact(float(t), k)
        out["residual"] = max(out["residual"], r.residual)
        out["q"] = max(out["q"], float(np.abs(kin.difference(x.q, r.q)).max()))
        out["v"] = max(out["v"], float(np.abs(r.v - x.v).max()))
        out["a"] = max(out["a"], float(np.abs(r.a - x.a).max()))
        out["v_scale"] = max(out["v_scale"], float(np.abs(x.v).max()))
        out["a_scale"] = max(out["a_scale"], float(np.abs(x.a).max()))
        out["samples"] += 1
    return out


# --------------------------------------------------------------------------- the cache

def content_key(*parts) -> str:
    """The sha256 (hex, first 16 digits) of ``parts`` (strings, bytes, numbers, arrays,
    nested tuples) and :data:`FORMAT` — the name of a stored set of knots."""
    h = hashlib.sha256(f"rbc-knots-{FORMAT}".encode())

    def feed(x) -> None:
        if isinstance(x, bytes):
            h.update(x)
        elif isinstance(x, np.ndarray):
            h.update(str(x.dtype).encode() + str(x.shape).encode())
            h.update(np.ascontiguousarray(x).tobytes())
        elif isinstance(x, (tuple, list)):
            h.update(b"(")
            for y in x:
                feed(y)
            h.update(b")")
        else:
            h.update(repr(x).encode())
        h.update(b"\x00")

    for p in parts:
        feed(p)
    return h.hexdigest()[:16]


def cached_knots(path: Path, build: Callable[[], Knots], *,
                 check: Callable[[Knots], str | None] | None = None) -> tuple[Knots, bool]:
    """``(knots, loaded)``: the knots stored at ``path`` (a name from :func:`content_key`)
    or, when there are none — or ``check`` (knots → a reason or None) rejects them — the
    ones ``build()`` makes, stored there."""
    path = Path(path)
    if path.exists():
        try:
            kn = Knots.load(path)
        except (OSError, ValueError, KeyError):
            kn = None
        if kn is not None and (check is None or check(kn) is None):
            return kn, True
    kn = build()
    kn.save(path)
    return kn, False


__all__: Sequence[str] = ("FORMAT", "KnotReference", "Knots", "cached_knots", "content_key",
                          "interpolation_error", "knot_times", "sample_knots")

"""Kinematic checks of ``rbc verify``: closure, closure Jacobian, lift, curvature, rank.

Every check compares an analytic quantity of :mod:`rbc.model` with a reference computed
*without* it (docs/kinematics.md):

* ``closure.residual`` — ‖ρ‖∞ at sampled configurations closed by :func:`rbc.model.solve.solve`
  (re-evaluated over all rows, not only the modules the solve touched);
* ``jacobian.fd`` / ``jacobian.sparsity`` — C of :func:`~rbc.model.kinematics.closure_jacobian`
  against centred differences of :func:`~rbc.model.kinematics.residual` through
  ``model.integrate`` at *off-manifold* states (so that J_l(ρ)⁻¹ ≠ I matters), and the
  nonzeros of the difference quotient against :func:`~rbc.model.kinematics.sparsity_pattern`;
* ``lift.fd`` — E against differences of closed configurations solved at u ± h;
* ``curvature.acceleration_residual`` — ‖d²ρ/dt²‖∞ along ``q(t) = q ⊕ (t v + t²/2 a)`` with
  ``v = E u``, ``a = E u̇ + Ė u``, by Richardson-extrapolated centred second differences of
  the residual (no use of our Ċ v code); ``curvature.without_term`` repeats it with
  ``a = E u̇`` and must be large (the term matters);
* ``rank`` — the rank of C at every sample equals the stored rank.

Sampling: ``numpy.random.default_rng(seed)``; per sample one uniform draw per independent
coordinate in partition order (within its limits shrunk by :data:`LIMIT_MARGIN`, or
:data:`ANGLE_WINDOW` / :data:`LENGTH_WINDOW` around ``q_ref`` when unlimited). An independent
free joint (a floating base, e.g. standing on its feet in a support mode) then gets one
uniform draw per speed component — a tangent displacement δ within ±ANGLE_WINDOW (angular)
or ±LENGTH_WINDOW·L (linear) — reached by :data:`TANGENT_STEPS` closed motion steps of
δ/TANGENT_STEPS (:meth:`rbc.model.closure.ClosureState.step`); other coordinates without a
scalar value (spherical joints) stay at their ``q_ref`` value. A draw the solve cannot
reach (ClosureError) or that leaves the joint limits is redrawn; redraws are counted and
reported. ``lift.fd`` moves coordinates without a scalar value by one closed motion step.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from rbc.model.closure import ClosureError, ClosureState, within_limits
from rbc.model.compiled import CompiledModel, Partition
from rbc.model.kinematics import closure_jacobian, residual, sparsity_pattern
from rbc.model.partition import closure_rank, curvature, lift, scales
from rbc.model.solve import coordinate_value, prescribable, solve
from rbc.verify.checks import DEFAULT_SEED, Check, make_check

#: Sampling window of an unlimited angle around q_ref [rad] (±π/8): a "modest range" that
#: keeps most draws of the shipped linkages assemblable (few redraws).
ANGLE_WINDOW = np.pi / 8
#: Sampling window of an unlimited length around q_ref, in length scales L (±0.1 L).
LENGTH_WINDOW = 0.1
#: Draws stay this fraction of the limit range inside the limits, so that the lift check's
#: u ± h never leaves them.
LIMIT_MARGIN = 0.01
#: Redraw budget per requested sample before sampling gives up.
REDRAW_FACTOR = 10
#: Closed motion steps that carry a tangent draw of the non-scalar independent coordinates
#: (each a predictor–corrector step of ≤ ANGLE_WINDOW/8 ≈ 0.05 rad: well inside the
#: corrector's quadratic convergence).
TANGENT_STEPS = 8

#: closure.residual limit [rad, m]: the acceptance target of the shipped records; the solve
#: itself stops at CLOSURE_TOL = 1e-13, so this leaves a factor 10 for rows the solve did
#: not look at.
CLOSURE_LIMIT = 1e-12
#: Off-manifold perturbation for jacobian.fd (scaled units): 0.05 makes J_l(ρ)⁻¹ differ from
#: I by ~2.5e-2, five orders of magnitude above the limit, so dropping it would fail.
OFF_MANIFOLD = 0.05
#: Centred-difference step for C_fd (scaled units). Truncation ~h²·|ρ'''|/6 ≈ 1e-12,
#: round-off ~ε·|Δ|/h ≈ 1e-10: both far below JACOBIAN_LIMIT.
JACOBIAN_STEP = 1e-6
#: jacobian.fd limit (relative to max(1, max|C|)): 1000× the FD error budget above.
JACOBIAN_LIMIT = 1e-7
#: lift.fd step h (scaled units), with one Richardson level (h and h/2), so truncation is
#: O(h⁴) ≈ 1e-16·|q⁽⁵⁾|. Each solve stops at ‖ρ‖∞ ≤ 1e-13, a configuration error
#: ≲ cond(R_p)·1e-13, which the difference divides by h: ≈ 1e-9·cond — up to ~5e-7 at the
#: worst-conditioned Stewart samples (cond ≈ 600).
LIFT_STEP = 1e-4
#: lift.fd limit (relative): the solve-tolerance term above at cond ≲ 1000.
LIFT_LIMIT = 1e-6
#: Nominal speed: the fastest velocity coordinate moves 1 rad/s, or 1 L/s for lengths
#: (scaled units); the curvature checks run at four times that.
SPEED_FACTOR = 4.0
#: Largest Richardson step, as a scaled distance travelled (max scaled speed × h₀ = 0.8), and
#: the number of halvings: the tableau reaches O(h¹⁴) truncation, the smallest step
#: (h₀/128) has round-off ε·|Δ|/h² ≈ 1e-9; Ridders' error estimate picks the best entry
#: in between (≈ 1e-10 on the shipped records, docs/kinematics.md).
RICHARDSON_TRAVEL = 0.8
RICHARDSON_LEVELS = 8
#: Acceleration-closure limit with the curvature term [rad/s², m/s²] (SI).
CURVATURE_LIMIT = 1e-9
#: Lower bound without the curvature term [rad/s², m/s²], on the largest sample: three decades
#: above CURVATURE_LIMIT, so the reference would have caught a missing Ė u. (A fixed 1e-2 on
#: the smallest sample failed correct models whose loops happen to curve little, e.g. Cassie's
#: leg linkages at 7e-3; the Stewart acceptance test asserts ≥ 1e-2 on its own.)
WITHOUT_TERM_MIN = 1e3 * CURVATURE_LIMIT

CHECK_NAMES = ("closure.residual", "jacobian.fd", "jacobian.sparsity", "lift.fd",
               "curvature.acceleration_residual", "curvature.without_term", "rank")


@dataclass(frozen=True, eq=False)
class Samples:
    """Closed sample configurations.

    Attributes:
        q: list of (nq,) closed configurations.
        residuals: ‖ρ(q)‖∞ of each [rad, m].
        redraws: draws that could not be reached and were redrawn.
        requested: the number asked for.
    """

    q: list[np.ndarray]
    residuals: list[float]
    redraws: int
    requested: int


def _box(model: CompiledModel, part: Partition) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sampled independent coordinates (v-indices) and their sampling interval."""
    sc = scales(model, part.length_scale).cols
    idx = np.array([j for j in part.independent if prescribable(model, int(j))], dtype=np.int64)
    lo, hi = np.empty(idx.size), np.empty(idx.size)
    for n, j in enumerate(idx):
        a, b = model.lower[j], model.upper[j]
        if np.isfinite(a) and np.isfinite(b):
            pad = LIMIT_MARGIN * (b - a)
            lo[n], hi[n] = a + pad, b - pad
        else:
            ref = coordinate_value(model, part.q_ref, int(j))
            w = ANGLE_WINDOW if sc[j] == 1.0 else LENGTH_WINDOW * sc[j]
            lo[n], hi[n] = max(a, ref - w), min(b, ref + w)
    return idx, lo, hi


def _tangent_window(model: CompiledModel, part: Partition) -> np.ndarray:
    """(n_u,) half-width of the tangent draw of each independent speed: ANGLE_WINDOW or
    LENGTH_WINDOW·L for a free joint's (a floating base), 0 for the others (scalar ones are
    drawn by value; a spherical joint's stay at q_ref)."""
    sc = scales(model, part.length_scale).cols
    free = [model.kinds[int(model.v_edge[j])].type == "free" for j in part.independent]
    return np.array([(ANGLE_WINDOW if sc[j] == 1.0 else LENGTH_WINDOW * sc[j]) if f else 0.0
                     for j, f in zip(part.independent, free, strict=True)])


def tangent_move(model: CompiledModel, part: Partition, q: np.ndarray, delta: np.ndarray,
                 steps: int = TANGENT_STEPS) -> np.ndarray:
    """The closed configuration reached from q by moving the independent coordinates by
    the tangent displacement δ (n_u,) in ``steps`` closed motion steps.

    Raises:
        ClosureError: a step does not close, or the partition had to be changed on the way.
    """
    st = ClosureState(model, part, np.array(q, dtype=float))
    for _ in range(steps):
        st.step(np.asarray(delta, dtype=float) / steps, 1.0)
        if st.partition is not part:
            raise ClosureError("the partition became singular along the tangent move")
    return st.q


def sample_configurations(model: CompiledModel, part: Partition, n: int,
                          rng: np.random.Generator,
                          progress: Callable[[int], None] | None = None) -> Samples:
    """n closed configurations with uniformly drawn independent coordinates (module
    docstring, "Sampling").

    Raises:
        ClosureError: more than ``REDRAW_FACTOR·n`` draws could not be reached.
    """
    idx, lo, hi = _box(model, part)
    window = _tangent_window(model, part)
    qs, res, redraws = [], [], 0
    while len(qs) < n:
        u = rng.uniform(lo, hi)
        try:
            r = solve(model, part, dict(zip(idx.tolist(), u, strict=True)))
            if window.any():
                r = replace(r, q=tangent_move(model, part, r.q,
                                              rng.uniform(-1.0, 1.0, window.size) * window))
                if within_limits(model, r.q):
                    raise ClosureError("the tangent draw leaves the joint limits")
        except ClosureError:
            redraws += 1
            if redraws > REDRAW_FACTOR * max(n, 1):
                raise ClosureError(f"sampling gave up: {redraws} of the draws could not be "
                                   "closed (the sampling box is mostly outside the workspace)"
                                   ) from None
            continue
        qs.append(r.q)
        res.append(float(np.abs(residual(model, r.q)).max(initial=0.0)))
        if progress:
            progress(1)
    return Samples(qs, res, redraws, n)


def check_closure(s: Samples) -> Check:
    """``closure.residual``: max ‖ρ‖∞ over the samples."""
    worst = int(np.argmax(s.residuals)) if s.residuals else 0
    return make_check("closure.residual", max(s.residuals, default=0.0), CLOSURE_LIMIT,
                      "rad|m", f"{len(s.q)} samples solved from q_ref, {s.redraws} redraws; "
                      f"worst at sample {worst}")


def jacobian_fd(model: CompiledModel, q: np.ndarray, h: float) -> np.ndarray:
    """(m, nv) centred differences of ρ along ``q ⊕ ±h_j e_j`` (h_j = h in scaled units)."""
    sc = scales(model).cols
    C = np.zeros((model.n_rows, model.nv))
    for j in range(model.nv):
        e = np.zeros(model.nv)
        e[j] = h * sc[j]
        C[:, j] = (residual(model, model.integrate(q, e))
                   - residual(model, model.integrate(q, -e))) / (2 * e[j])
    return C


def check_jacobian(model: CompiledModel, qs: list[np.ndarray], rng: np.random.Generator
                   ) -> list[Check]:
    """``jacobian.fd`` and ``jacobian.sparsity`` at off-manifold perturbations of ``qs``."""
    sc = scales(model).cols
    pattern = sparsity_pattern(model)
    err, leak, where = 0.0, 0.0, ""
    offs = []
    for n, q in enumerate(qs):
        qp = model.integrate(q, OFF_MANIFOLD * sc * rng.standard_normal(model.nv))
        rho, C, _ = closure_jacobian(model, qp)
        offs.append(float(np.abs(rho).max(initial=0.0)))
        Cfd = jacobian_fd(model, qp, JACOBIAN_STEP)
        norm = max(1.0, float(np.abs(C).max(initial=0.0)))
        e = float(np.abs(C - Cfd).max(initial=0.0)) / norm
        if e >= err:
            err, where = e, f"sample {n}"
        leak = max(leak, float(np.abs(Cfd[~pattern]).max(initial=0.0)) / norm)
    off = f"{len(qs)} states off the manifold (‖ρ‖∞ up to {max(offs, default=0):.2g})"
    return [make_check("jacobian.fd", err, JACOBIAN_LIMIT, "1",
                       f"max|C−C_fd|/max(1,max|C|), centred FD h={JACOBIAN_STEP:g} at {off}; "
                       f"worst {where}"),
            make_check("jacobian.sparsity", leak, JACOBIAN_LIMIT, "1",
                       f"largest |C_fd| outside sparsity_pattern (relative) at {off}")]


def check_lift(model: CompiledModel, part: Partition, qs: list[np.ndarray]) -> Check:
    """``lift.fd``: E against centred differences of solves at u ± h per coordinate."""
    sc = scales(model, part.length_scale).cols
    err = 0.0
    for q in qs:
        E = lift(model, part, q).E
        Efd = np.full_like(E, np.nan)
        for col, j in enumerate(part.independent):
            j = int(j)

            def moved(h: float, j: int = j, col: int = col, q: np.ndarray = q) -> np.ndarray:
                """Closed configuration with independent coordinate j moved by h."""
                if prescribable(model, j):
                    return solve(model, part, {j: coordinate_value(model, q, j) + h}, q).q
                e = np.zeros(part.independent.size)
                e[col] = h
                return tangent_move(model, part, q, e, steps=1)

            def diff(h: float, moved=moved) -> np.ndarray:
                return model.difference(moved(-h), moved(h)) / (2 * h)

            h = LIFT_STEP * sc[j]
            Efd[:, col] = (4 * diff(h / 2) - diff(h)) / 3  # Richardson: O(h⁴) truncation
        ok = np.isfinite(Efd).all(axis=0)
        if ok.any():
            norm = max(1.0, float(np.abs(E).max()))
            err = max(err, float(np.abs(E[:, ok] - Efd[:, ok]).max()) / norm)
    return make_check("lift.fd", err, LIFT_LIMIT, "1",
                      f"max|E−E_fd|/max(1,max|E|) at {len(qs)} samples, E_fd from solves at "
                      f"u ± {LIFT_STEP:g} (scaled)")


def second_derivative(f: Callable[[float], np.ndarray], h0: float, levels: int
                      ) -> tuple[np.ndarray, float]:
    """f''(0) by Richardson extrapolation of centred second differences (Ridders' choice).

    ``D(h) = (f(h) − 2f(0) + f(−h))/h²`` at h₀, h₀/2, …, h₀/2^(levels−1); column k of the
    tableau removes the h^(2k) term (``(4ᵏ T(h/2) − T(h))/(4ᵏ − 1)``). Of all tableau entries
    the one with the smallest error estimate (its distance to the two entries it was formed
    from, ∞-norm) is returned, which balances truncation against round-off without a
    hand-tuned step (Ridders 1982; Press et al., *Numerical Recipes*, 3rd ed., §5.7).

    Returns:
        ``(f''(0), error estimate)``.
    """
    f0 = f(0.0)
    col = [(f(h) - 2 * f0 + f(-h)) / h**2 for h in (h0 / 2**i for i in range(levels))]
    best, best_err = col[-1], np.inf
    for k in range(1, levels):
        nxt = [(4**k * col[i + 1] - col[i]) / (4**k - 1) for i in range(len(col) - 1)]
        for i, t in enumerate(nxt):
            err = float(max(np.abs(t - col[i]).max(initial=0.0),
                            np.abs(t - col[i + 1]).max(initial=0.0)))
            if err < best_err:
                best, best_err = t, err
        col = nxt
    return best, best_err


def acceleration_residuals(model: CompiledModel, part: Partition, q: np.ndarray,
                           rng: np.random.Generator) -> tuple[float, float]:
    """‖ρ̈‖∞ with and without the curvature term at four times nominal speed (SI).

    Draws u and u̇ (standard-normal directions) in this order; u is scaled to four times
    nominal speed, u̇ so that the fastest coordinate of E u̇ accelerates 16 rad/s² or 16 L/s².
    """
    sc = scales(model, part.length_scale).cols
    L = lift(model, part, q)
    u = rng.standard_normal(part.independent.size)
    u *= SPEED_FACTOR / np.abs(L.E @ u / sc).max()
    udot = rng.standard_normal(part.independent.size)
    udot *= SPEED_FACTOR**2 / np.abs(L.E @ udot / sc).max()
    v, edu = curvature(model, part, q, u, L)
    a = L.E @ udot
    h0 = RICHARDSON_TRAVEL / SPEED_FACTOR

    def rho_dd(a: np.ndarray) -> float:
        def f(t: float) -> np.ndarray:
            return residual(model, model.integrate(q, t * v + 0.5 * t * t * a))
        dd, _ = second_derivative(f, h0, RICHARDSON_LEVELS)
        return float(np.abs(dd).max(initial=0.0))

    return rho_dd(a + edu), rho_dd(a)


def check_curvature(model: CompiledModel, part: Partition, qs: list[np.ndarray],
                    rng: np.random.Generator) -> list[Check]:
    """``curvature.acceleration_residual`` and ``curvature.without_term``.

    Without cut joints every closure row is a linear coupling, whose curvature vanishes
    identically (Ė u ≡ 0): ``curvature.without_term`` then does not apply and passes with a
    note, instead of demanding a term that cannot exist.
    """
    pairs = [acceleration_residuals(model, part, q, rng) for q in qs]
    with_t = max((p[0] for p in pairs), default=0.0)
    without = max((p[1] for p in pairs), default=np.nan)
    smallest = min((p[1] for p in pairs), default=np.nan)
    where = f"{len(qs)} samples at {SPEED_FACTOR:g}× nominal speed (fastest coordinate " \
            f"{SPEED_FACTOR:g} rad/s or {SPEED_FACTOR:g} L/s)"
    first = make_check("curvature.acceleration_residual", with_t, CURVATURE_LIMIT,
                       "rad/s²|m/s²", f"max‖C a + Ċ v‖∞, a = E u̇ + Ė u, by Richardson FD of "
                       f"ρ(t) at {where}")
    if model.n_chords == 0:
        return [first, Check("curvature.without_term", without, WITHOUT_TERM_MIN, "rad/s²|m/s²",
                             True, "not applicable: no cut joints, the closure rows are linear "
                             f"couplings (Ė u ≡ 0; measured {without:.3g} without the term)",
                             True)]
    return [first, make_check("curvature.without_term", without, WITHOUT_TERM_MIN,
                              "rad/s²|m/s²", f"largest over samples of the same with a = E u̇ "
                              f"only (must be ≥ limit; smallest {smallest:.3g}) at {where}",
                              lower_bound=True)]


def check_rank(model: CompiledModel, part: Partition, qs: list[np.ndarray]) -> Check:
    """``rank``: |rank(C(q)) − stored rank| over the samples (0 required)."""
    ranks = [closure_rank(model, q, part.length_scale) for q in qs]
    dev = max((abs(r - part.rank) for r in ranks), default=0)
    seen = sorted(set(ranks))
    return make_check("rank", dev, 0, "1", f"ranks seen {seen} at {len(qs)} samples; stored "
                      f"rank {part.rank}")


#: Samples (at most) used by the costlier checks.
JACOBIAN_SAMPLES = 5
LIFT_SAMPLES = 2
CURVATURE_SAMPLES = 5


def run_kinematic_checks(model: CompiledModel, part: Partition, *, samples: int = 100,
                         seed: int = DEFAULT_SEED,
                         progress: Callable[[int], None] | None = None) -> list[Check]:
    """All kinematic checks of one partition (fixed draw order: samples, Jacobian
    perturbations, curvature speeds).

    Args:
        samples: configurations for ``closure.residual`` and ``rank``; the costlier checks
            use the first few of them.
        progress: called with the number of finished work units (``work_units(samples)``).

    Raises:
        ClosureError: sampling gave up.
    """
    rng = np.random.default_rng(seed)
    if model.n_rows == 0:
        return [make_check("closure.residual", 0.0, CLOSURE_LIMIT, "rad|m", "no loops")]
    s = sample_configurations(model, part, samples, rng, progress)
    out = [check_closure(s)]
    out += check_jacobian(model, s.q[:JACOBIAN_SAMPLES], rng)
    _tick(progress)
    out.append(check_lift(model, part, s.q[:LIFT_SAMPLES]))
    _tick(progress)
    out += check_curvature(model, part, s.q[:CURVATURE_SAMPLES], rng)
    _tick(progress)
    out.append(check_rank(model, part, s.q))
    _tick(progress)
    return out


def work_units(samples: int) -> int:
    """Progress total of :func:`run_kinematic_checks`."""
    return samples + 4


def _tick(progress: Callable[[int], None] | None) -> None:
    if progress:
        progress(1)

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

Sampling (:func:`sample_configurations`): a **random walk along the closure manifold** from
``q_ref``, never a box of independent coordinates (on a general 6-6 platform almost no box
sample is reachable, and an unreachable draw says nothing about the model). Each sample is one
lifted step from the previous one: a direction drawn uniformly in the cube of the
prescribable independent coordinates, each coordinate's step up to :data:`WALK_FRACTION` of
its limit range (an unlimited angle up to :data:`WALK_ANGLE`, so the walk visits the whole
turn; an unlimited length up to :data:`WALK_LENGTH` length scales), reflected back into the
limits shrunk by :data:`LIMIT_MARGIN`, and reached by :func:`rbc.model.solve.solve`'s
branch-safe continuation from the previous sample. A step the continuation cannot take (a
singular configuration or the edge of the workspace between) is redrawn at half the length
(counted); ``numpy.random.default_rng(seed)`` draws, per attempt, one uniform per coordinate.
An independent free joint (a floating base, e.g. standing on its feet in a support mode)
has no scalar values: each walk step also draws one uniform per speed component, a tangent
displacement δ within ±ANGLE_WINDOW (angular) or ±LENGTH_WINDOW·L (linear), reached by
:data:`TANGENT_STEPS` closed motion steps of δ/TANGENT_STEPS
(:meth:`rbc.model.closure.ClosureState.step`); other coordinates without a scalar value
(spherical joints) keep their value. A step that leaves the joint limits is redrawn too.
The range covered per independent coordinate is reported (``sampling.coverage``).
``lift.fd`` moves coordinates without a scalar value by one closed motion step.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from rbc.model.closure import ClosureError, ClosureState, within_limits
from rbc.model.compiled import CompiledModel, Partition
from rbc.model.kinematics import closure_jacobian, residual, sparsity_pattern
from rbc.model.partition import closure_rank, curvature, lift, linear_columns, scales
from rbc.model.solve import coordinate_value, prescribable, solve
from rbc.verify.checks import DEFAULT_SEED, Check, make_check

#: Tangent-draw window of a free joint's angular speed components per walk step [rad]
#: (±π/8): a floating base tilts by a "modest range" per step.
ANGLE_WINDOW = np.pi / 8
#: Tangent-draw window of a free joint's linear components per walk step, in length scales L.
LENGTH_WINDOW = 0.1
#: Largest walk step of a limited coordinate, as a fraction of its limit range: a quarter of
#: the stroke per sample crosses the range in a few samples (100 samples cover ≥ 90 % of each
#: Stewart leg's stroke) while keeping each continuation short.
WALK_FRACTION = 0.25
#: Largest walk step of an unlimited angle [rad]: ±π, so the walk visits the whole turn.
WALK_ANGLE = np.pi
#: Largest walk step of an unlimited length, in length scales L.
WALK_LENGTH = 0.5
#: Draws stay this fraction of the limit range inside the limits, so that the lift check's
#: u ± h never leaves them.
LIMIT_MARGIN = 0.01
#: Attempts per sample (each at half the step of the previous one) before sampling gives up.
WALK_TRIES = 12
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
#: A residual within this multiple of the difference scheme's own error estimate (Ridders)
#: cannot be told from zero: the limit is raised to it when the estimate exceeds the limit
#: (round-off of fast motion near a singular gimbal chain; ≈ 1e-10 on the shipped records,
#: so never there).
FD_ERROR_FACTOR = 3.0
#: Lower bound without the curvature term [rad/s², m/s²], on the largest sample: three decades
#: above CURVATURE_LIMIT, so the reference would have caught a missing Ė u. (A fixed 1e-2 on
#: the smallest sample failed correct models whose loops happen to curve little, e.g. Cassie's
#: leg linkages at 7e-3; the Stewart acceptance test asserts ≥ 1e-2 on its own.)
WITHOUT_TERM_MIN = 1e3 * CURVATURE_LIMIT

CHECK_NAMES = ("closure.residual", "sampling.coverage", "jacobian.fd", "jacobian.sparsity",
               "lift.fd", "curvature.acceleration_residual", "curvature.without_term", "rank")


@dataclass(frozen=True, eq=False)
class Samples:
    """Closed sample configurations of a random walk.

    Attributes:
        q: list of (nq,) closed configurations.
        residuals: ‖ρ(q)‖∞ of each [rad, m].
        redraws: walk steps the continuation could not take (redrawn at half length).
        requested: the number asked for.
        names: (k,) the walked (prescribable independent) coordinates; values: (n, k) their
            values at the samples [rad or m]; lower, upper: (k,) their limits (±inf);
            angular: (k,) whether each is an angle.
    """

    q: list[np.ndarray]
    residuals: list[float]
    redraws: int
    requested: int
    names: tuple[str, ...] = ()
    values: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))
    lower: np.ndarray = field(default_factory=lambda: np.zeros(0))
    upper: np.ndarray = field(default_factory=lambda: np.zeros(0))
    angular: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))


def _walk_box(model: CompiledModel, part: Partition
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Walked coordinates (v-indices), the interval they are reflected into, and each one's
    largest step (module docstring)."""
    sc, linear = scales(model, part.length_scale).cols, linear_columns(model)
    idx = np.array([j for j in part.independent if prescribable(model, int(j))], dtype=np.int64)
    lo, hi, step = np.full(idx.size, -np.inf), np.full(idx.size, np.inf), np.empty(idx.size)
    for n, j in enumerate(idx):
        a, b = model.lower[j], model.upper[j]
        if np.isfinite(a) and np.isfinite(b):
            pad = LIMIT_MARGIN * (b - a)
            lo[n], hi[n] = a + pad, b - pad
            step[n] = WALK_FRACTION * (b - a)
        else:
            lo[n], hi[n] = a, b
            step[n] = WALK_LENGTH * sc[j] if linear[j] else WALK_ANGLE
    return idx, lo, hi, step


def _reflect(x: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """x folded back into [lo, hi] by reflection at the bounds (unbounded sides unchanged)."""
    out = np.array(x, dtype=float)
    for n in range(out.size):
        if np.isfinite(lo[n]) and np.isfinite(hi[n]):
            w = hi[n] - lo[n]
            t = np.mod(out[n] - lo[n], 2 * w)
            out[n] = lo[n] + (t if t <= w else 2 * w - t)
        elif np.isfinite(lo[n]) and out[n] < lo[n]:
            out[n] = 2 * lo[n] - out[n]
        elif np.isfinite(hi[n]) and out[n] > hi[n]:
            out[n] = 2 * hi[n] - out[n]
    return out


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
    """n closed configurations by a random walk along the closure manifold from ``q_ref``
    (module docstring, "Sampling").

    Raises:
        ClosureError: no step of :data:`WALK_TRIES` attempts could be taken from a sample.
    """
    idx, lo, hi, step = _walk_box(model, part)
    window = _tangent_window(model, part)
    q = np.array(part.q_ref, dtype=float)
    x = np.array([coordinate_value(model, q, int(j)) for j in idx])
    qs, res, vals, redraws = [], [], [], 0
    while len(qs) < n:
        for attempt in range(WALK_TRIES):
            target = _reflect(x + 0.5**attempt * step * rng.uniform(-1.0, 1.0, idx.size),
                              lo, hi)
            try:
                qn = solve(model, part, dict(zip(idx.tolist(), target, strict=True)), q).q
                if window.any():
                    qn = tangent_move(model, part, qn, 0.5**attempt * window
                                      * rng.uniform(-1.0, 1.0, window.size))
                    if within_limits(model, qn):
                        raise ClosureError("the tangent draw leaves the joint limits")
                break
            except ClosureError:
                redraws += 1
        else:
            raise ClosureError(f"sampling gave up: after {len(qs)} samples no walk step of "
                               f"{WALK_TRIES} attempts (down to 2^-{WALK_TRIES - 1} of the "
                               "largest step) could be taken from the last one") from None
        q, x = qn, target
        qs.append(q)
        vals.append(x)
        res.append(float(np.abs(residual(model, q)).max(initial=0.0)))
        if progress:
            progress(1)
    return Samples(qs, res, redraws, n, tuple(model.v_names[int(j)] for j in idx),
                   np.array(vals).reshape(len(qs), idx.size),
                   np.asarray(model.lower)[idx], np.asarray(model.upper)[idx],
                   ~linear_columns(model)[idx])


#: Bins of the whole-turn coverage of an unlimited angle (10° each).
TURN_BINS = 36


def coverage(s: Samples) -> list[tuple[str, float, float, float]]:
    """Per walked coordinate ``(name, min, max, fraction)``: the fraction of its limit range
    between the smallest and largest sample, or for an unlimited angle the fraction of the
    :data:`TURN_BINS` 10° bins of the turn that hold a sample (NaN for an unlimited length)."""
    out = []
    for k, name in enumerate(s.names):
        v = s.values[:, k]
        lo, hi = float(s.lower[k]), float(s.upper[k])
        if np.isfinite(lo) and np.isfinite(hi):
            frac = float((v.max() - v.min()) / (hi - lo))
        elif s.angular[k]:
            bins = np.floor(np.mod(v, 2 * np.pi) / (2 * np.pi / TURN_BINS)).astype(int)
            frac = len(set(bins.tolist())) / TURN_BINS
        else:
            frac = float("nan")
        out.append((name, float(v.min()), float(v.max()), frac))
    return out


def check_coverage(model: CompiledModel, s: Samples) -> Check:
    """``sampling.coverage`` (informational): the range the walk covered per independent
    coordinate; the value is the smallest fraction (of the limit range, or of the turn)."""
    cov = coverage(s)
    fracs = [f for *_, f in cov if np.isfinite(f)]
    parts = [f"{n} [{a:.4g}, {b:.4g}]" + (f" {100 * f:.0f}%" if np.isfinite(f) else "")
             for n, a, b, f in cov]
    return Check("sampling.coverage", min(fracs, default=float("nan")), 0.0, "1", True,
                 f"informational: random walk of {len(s.q)} samples from q_ref "
                 f"({s.redraws} steps redrawn); covered " + (", ".join(parts) or "nothing"),
                 lower_bound=True)


def check_closure(s: Samples) -> Check:
    """``closure.residual``: max ‖ρ‖∞ over the samples."""
    worst = int(np.argmax(s.residuals)) if s.residuals else 0
    return make_check("closure.residual", max(s.residuals, default=0.0), CLOSURE_LIMIT,
                      "rad|m", f"{len(s.q)} samples of a random walk from q_ref, {s.redraws} "
                      f"steps redrawn; worst at sample {worst}")


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
                           rng: np.random.Generator) -> tuple[float, float, float, float]:
    """‖ρ̈‖∞ with and without the curvature term at four times nominal speed, ‖Ė u‖∞ (SI),
    and the difference scheme's error estimate of the first.

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

    def rho_dd(a: np.ndarray) -> tuple[float, float]:
        def f(t: float) -> np.ndarray:
            return residual(model, model.integrate(q, t * v + 0.5 * t * t * a))
        dd, err = second_derivative(f, h0, RICHARDSON_LEVELS)
        return float(np.abs(dd).max(initial=0.0)), err

    (with_t, err), (without, _) = rho_dd(a + edu), rho_dd(a)
    return with_t, without, float(np.abs(edu).max(initial=0.0)), err


def check_curvature(model: CompiledModel, part: Partition, qs: list[np.ndarray],
                    rng: np.random.Generator) -> list[Check]:
    """``curvature.acceleration_residual`` and ``curvature.without_term``.

    Without cut joints and nonlinear couplings every closure row is a linear coupling, whose
    curvature vanishes identically (Ė u ≡ 0): ``curvature.without_term`` then does not apply
    and passes with a note, instead of demanding a term that cannot exist. With cut joints the
    term can still be legitimately zero (a parallelogram linkage: constant lift): when our
    Ė u is zero at every sample (≤ CURVATURE_LIMIT) *and* the reference confirms that
    dropping it changes nothing (without-term residual below WITHOUT_TERM_MIN), the check is
    informational —
    reported, never failed. A model whose Ė u is wrongly zero still fails
    ``curvature.acceleration_residual``, whose reference does not use Ė u.
    """
    pairs = [acceleration_residuals(model, part, q, rng) for q in qs]
    edu_max = max((p[2] for p in pairs), default=0.0)
    with_t = max((p[0] for p in pairs), default=0.0)
    without = max((p[1] for p in pairs), default=np.nan)
    smallest = min((p[1] for p in pairs), default=np.nan)
    fd_err = max((p[3] for p in pairs), default=0.0)
    where = f"{len(qs)} samples at {SPEED_FACTOR:g}× nominal speed (fastest coordinate " \
            f"{SPEED_FACTOR:g} rad/s or {SPEED_FACTOR:g} L/s)"
    limit, note = CURVATURE_LIMIT, ""
    if FD_ERROR_FACTOR * fd_err > limit:
        limit = FD_ERROR_FACTOR * fd_err
        note = (f"; limit {FD_ERROR_FACTOR:g}× the difference scheme's error estimate "
                f"{fd_err:.2g} (base {CURVATURE_LIMIT:g})")
    first = make_check("curvature.acceleration_residual", with_t, limit,
                       "rad/s²|m/s²", f"max‖C a + Ċ v‖∞, a = E u̇ + Ė u, by Richardson FD of "
                       f"ρ(t) at {where}{note}")
    if model.curvature_free:
        return [first, Check("curvature.without_term", without, WITHOUT_TERM_MIN, "rad/s²|m/s²",
                             True, "not applicable: no cut joints, the closure rows are linear "
                             f"couplings (Ė u ≡ 0; measured {without:.3g} without the term)",
                             True)]
    if without < WITHOUT_TERM_MIN and edu_max <= CURVATURE_LIMIT:
        return [first, Check("curvature.without_term", without, WITHOUT_TERM_MIN, "rad/s²|m/s²",
                             True, f"informational: Ė u is zero on this mechanism (max ‖Ė u‖∞ "
                             f"{edu_max:.3g} over the samples: a constant lift, e.g. a "
                             f"parallelogram) and the reference agrees ({without:.3g} without "
                             f"the term) at {where}", True)]
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
    out = [check_closure(s), check_coverage(model, s)]
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

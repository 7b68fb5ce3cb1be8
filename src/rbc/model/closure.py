"""Closure solves: the nearest assembly to a guess, the Newton corrector and the motion lift.

**Projection onto the closure manifold** (:func:`project`, the first half of acquisition,
DESIGN.md §5): artificial-defect continuation with *every* coordinate free. With
ρ⁰ = ρ(q⁰) at the guess, ``ρ(q) = (1 − η) ρ⁰`` is followed for η: 0 → 1 by a tangent
predictor ``q ⊕ Δη·t`` (``C t = −ρ⁰``) and a Gauss–Newton corrector, both minimum-norm in the
scaled joint metric of :func:`rbc.model.partition.scales` (truncated SVD; so each step
moves the guess as little as the defect allows and the path ends at, to first order, the
assembly nearest the guess). A step is accepted only if the corrector converged, stayed
within half the predicted displacement (the jump test), every limited coordinate stays
inside its limits and every Δ_e stays inside the log domain; the predicted displacement is
capped at :data:`MAX_STEP`; a rejected step halves Δη. Modules are projected one by one over
their own columns (inputs shared with another module are held), so the cost stays linear in
the number of loops. :func:`rbc.model.solve.acquire` then continues the independent
coordinates to their prescribed values. Allgower & Georg, *Introduction to Numerical
Continuation Methods*, 2003, ch. 2 and §6.1 (step control).

**Motion** (``ClosureState.step``): predictor ``q⁻ = q ⊕ h E(q) u``; then per module a
Newton corrector on that module's dependent coordinates and rows only; modules none of
whose independent inputs moved are skipped. If a corrector fails, the step is retried as two
half steps (recovery by continuation in h).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field

import numpy as np

from rbc.errors import RbcError
from rbc.model.compiled import CompiledModel, ModuleBlock, Partition
from rbc.model.kinematics import local_jacobian, residual
from rbc.model.partition import lift, partition_at, scales

#: Closure tolerance [rad, m] (∞-norm of ρ): a few hundred ulps of unit-size coordinates;
#: the acceptance target of the shipped records is 1e-12.
CLOSURE_TOL = 1e-13
#: Rotation angles of Δ must stay this far below π, where log is discontinuous.
LOG_MARGIN = 1e-3
MAX_NEWTON = 30
#: Contraction a corrector must show per iteration (after its second) when asked to
#: (``newton(contract=True)``): quadratic convergence gives far more; 0.5 still admits the
#: linear convergence seen near singular configurations.
CONTRACTION = 0.5
#: Largest continuation step, in scaled units (rad, or lengths divided by the length scale
#: L), of acquisition's projection and of ``rbc solve``: from a tangent predictor, half a
#: radian (or L/2) converges in 3–6 Newton iterations on the shipped records. It is a hard
#: cap (an accepted step doubles the next one only up to it): a larger step can converge
#: onto another assembly branch — on Jansen's linkage a 2.2 rad crank step landed on a
#: branch whose foot is 0.76 m away.
MAX_STEP = 0.5
#: Jump test: the corrector's displacement (scaled ∞-norm) must stay below this fraction
#: of the predicted step. A tangent predictor leaves an O(κh²) gap to the solution curve
#: (κ its curvature), so at the largest step (0.5) it fails only where κ ≳ 2 rad⁻¹ — there
#: the step is halved; a corrector that travels as far as the predictor has left the
#: branch (Allgower & Georg 2003, §6.1: "distance to the curve" step control).
JUMP_RATIO = 0.5
#: Relative singular-value cutoff of the minimum-norm steps of :func:`project`: directions
#: below 1e-10 σ₁ of the scaled block (the rank decision's 1e-9 with a decade to spare) are
#: numerically redundant rows (planar loops) and are not stepped along.
MIN_NORM_RCOND = 1e-10


class ClosureError(RbcError):
    """The loops cannot be closed (names the chords and their residuals)."""


class MechanismEvent(RbcError):
    """The rank of the closure constraints changed along a motion (a mechanism event)."""


@dataclass
class SolveStats:
    """Counts of one solve: Newton iterations, fresh residual/Jacobian evaluations,
    accepted continuation steps and the largest of them (scaled units: rad, or lengths
    over the partition's length scale)."""

    iterations: int = 0
    residual_evals: int = 0
    jacobian_evals: int = 0
    continuation_steps: int = 0
    largest_step: float = 0.0


def unclosed_report(model: CompiledModel, rho: np.ndarray, tol: float) -> str:
    parts = []
    for i in range(model.n_chords):
        r = float(np.abs(rho[6 * i: 6 * i + 6]).max())
        if r > tol:
            parts.append(f"{model.edge_names[model.chord_edges[i]]} ({r:.3g})")
    base = 6 * model.n_chords
    for c, cp in enumerate(model.record.couplings):
        if abs(rho[base + c]) > tol:
            parts.append(f"coupling {cp.name} ({abs(rho[base + c]):.3g})")
    return ", ".join(parts) or "none"


def within_limits(model: CompiledModel, q: np.ndarray, slack: float = 1e-9) -> list[str]:
    """Names of coordinates outside their limits at q (empty when all are inside)."""
    val = model.limited_values(q)
    bad = np.where((val < model.lower - slack) | (val > model.upper + slack))[0]
    return [model.v_names[j] for j in bad]


def log_domain_ok(rho: np.ndarray, n_chords: int) -> bool:
    ang = [np.linalg.norm(rho[6 * i: 6 * i + 3]) for i in range(n_chords)]
    return all(a < np.pi - LOG_MARGIN for a in ang)


def newton(
    model: CompiledModel,
    q: np.ndarray,
    chords: Collection[int],
    couplings: Collection[int],
    cols: np.ndarray,
    *,
    target: np.ndarray | None = None,
    tol: float = CLOSURE_TOL,
    stats: SolveStats | None = None,
    max_iter: int = MAX_NEWTON,
    scale: tuple[np.ndarray, np.ndarray] | None = None,
    contract: bool = False,
) -> tuple[np.ndarray, bool]:
    """Gauss–Newton on ``ρ_rows(q) = target`` over the velocity columns ``cols``.

    Each iteration is one fresh residual + Jacobian evaluation of the given rows only
    (:func:`~rbc.model.kinematics.local_jacobian`); the step is the least-squares solution
    (minimum norm when the block is rank deficient), applied with ``q ⊕ δ``. With
    ``scale = (row scales, column scales)`` of these rows and columns the step is the
    minimum-norm solution in the scaled metric, singular values below
    :data:`MIN_NORM_RCOND`·σ₁ truncated. With ``contract`` the iteration gives up as soon as
    the residual (∞-norm) fails to shrink by :data:`CONTRACTION` from one iteration to the
    next after the second: a corrector from a predictor inside Newton's basin contracts
    quadratically, so a stall means the step was too long (the caller halves it) and further
    iterations are wasted.

    Returns:
        ``(q, converged)``; q is returned even when not converged.
    """
    st = stats if stats is not None else SolveStats()
    chords, couplings = list(chords), list(couplings)
    last = np.inf
    for it in range(max_iter + 1):
        rho, C, _ = local_jacobian(model, q, chords, couplings, cols)
        st.residual_evals += 1
        st.jacobian_evals += 1
        r = rho if target is None else rho - target
        size = float(np.abs(r).max(initial=0.0))
        if size <= tol:
            return q, True
        if it == max_iter or (contract and it >= 2 and size > CONTRACTION * last):
            break
        last = size
        dv = np.zeros(model.nv)
        dv[cols] = min_norm_step(C, -r, scale)
        q = model.integrate(q, dv)
        st.iterations += 1
    return q, False


def min_norm_step(C: np.ndarray, rhs: np.ndarray,
                  scale: tuple[np.ndarray, np.ndarray] | None) -> np.ndarray:
    """Least-squares, minimum-norm x of ``C x = rhs`` (unscaled), or with ``scale =
    (rows, cols)`` the one of ``(D_r C D_c) y = D_r rhs``, ``x = D_c y`` (truncated at
    :data:`MIN_NORM_RCOND`)."""
    if scale is None:
        return np.linalg.lstsq(C, rhs, rcond=None)[0]
    rows, cols = scale
    y = np.linalg.lstsq(rows[:, None] * C * cols[None, :], rows * rhs, rcond=MIN_NORM_RCOND)[0]
    return cols * y


def project(
    model: CompiledModel,
    q0: np.ndarray,
    *,
    tol: float = CLOSURE_TOL,
    length: float | None = None,
    stats: SolveStats | None = None,
    max_steps: int = 256,
) -> np.ndarray:
    """The assembly nearest a guess (module docstring: defect continuation, every
    coordinate of each module free, minimum-norm steps in the scaled metric).

    Args:
        model: compiled model.
        q0: (nq,) the guess (need not be closed).
        tol: closure tolerance (∞-norm) [rad, m].
        length: length scale of the metric [m] (default: the record's characteristic one).
        stats: counts to accumulate into.
        max_steps: continuation step budget per module.

    Returns:
        (nq,) q with ``‖ρ(q)‖∞ ≤ tol``, inside the limits.

    Raises:
        ClosureError: the continuation stalls (names how far it got and the chords that stay
            open) — the guess is too far from any assembly, or a limit is in the way.
    """
    q = np.array(q0, dtype=float)
    st = stats if stats is not None else SolveStats()
    if model.n_rows == 0:
        return q
    sc = scales(model, length)
    seen = np.zeros(model.nv, dtype=np.int64)
    for blk in model.blocks:
        seen[blk.cols] += 1
    # a module moves only its own columns (touched by no other module), so a module closed
    # in the guess stays closed: one residual pass finds the modules to project (instead
    # of one closure Jacobian per module; a guess of 10 000 closed loops costs 1 pass)
    rho = np.abs(residual(model, q))
    st.residual_evals += 1
    for blk in model.blocks:
        if rho[blk.rows].max(initial=0.0) <= tol:
            continue
        free = np.array([j for j in blk.cols if seen[j] == 1], dtype=np.int64)
        q = _project_module(model, q, blk, free, (sc.rows[blk.rows], sc.cols[free]), tol,
                            max_steps, st)
    return q


def _project_module(model: CompiledModel, q: np.ndarray, blk: ModuleBlock, cols: np.ndarray,
                    scale: tuple[np.ndarray, np.ndarray], tol: float, max_steps: int,
                    st: SolveStats) -> np.ndarray:
    """Defect continuation η: 0 → 1 of one module over the columns ``cols``."""
    chords, couplings = blk.chords, blk.couplings
    rho0 = local_jacobian(model, q, chords, couplings, cols)[0]
    st.residual_evals += 1
    if np.abs(rho0).max(initial=0.0) <= tol:
        return q
    eta, d_eta, why = 0.0, 1.0, "the corrector did not converge"
    for _ in range(max_steps):
        if eta >= 1.0 or d_eta < 1e-6:
            break
        C = local_jacobian(model, q, chords, couplings, cols)[1]
        st.jacobian_evals += 1
        t = min_norm_step(C, -rho0, scale)  # dq/dη
        reach = float(np.abs(t / scale[1]).max(initial=0.0))
        d_eta = min(d_eta, 1.0 - eta, MAX_STEP / reach if reach > 0 else 1.0)
        trial = eta + d_eta
        dv = np.zeros(model.nv)
        dv[cols] = d_eta * t
        qp = model.integrate(q, dv)
        qt, ok = newton(model, qp, chords, couplings, cols, target=(1.0 - trial) * rho0,
                        tol=tol if trial >= 1.0 else max(tol, 1e-10), stats=st, max_iter=12,
                        scale=scale)
        moved = float(np.abs(model.difference(qp, qt)[cols] / scale[1]).max(initial=0.0))
        rho = local_jacobian(model, qt, chords, [], cols)[0]
        out = within_limits(model, qt)
        if not ok:
            why = "the corrector did not converge"
        elif moved > JUMP_RATIO * d_eta * reach + 10 * tol:
            why, ok = "the corrector left the path (jump test)", False
        elif not log_domain_ok(rho, len(chords)):
            why, ok = "a loop rotation reached π (the log domain)", False
        elif out:
            why, ok = f"the limits of {', '.join(out)} are in the way", False
        if ok:
            q, eta = qt, trial
            st.continuation_steps += 1
            st.largest_step = max(st.largest_step, d_eta * reach)
            d_eta *= 2.0
        else:
            d_eta *= 0.5
    if eta < 1.0:
        rho = residual(model, q)
        raise ClosureError(
            f"{model.record.source}: the loops do not close from the initial guesses "
            f"(the projection onto the closure manifold stalled at η = {eta:.3g}: {why}); "
            f"unclosed: {unclosed_report(model, rho, tol)} — check the attachment frames "
            "and `initial` values")
    return q


def det_sign(model: CompiledModel, q: np.ndarray, blk: ModuleBlock, cols: np.ndarray,
              sel: np.ndarray) -> float:
    """Sign of det R_p of one module (the branch indicator: it flips only through a
    singular configuration, where the assembly could switch branches)."""
    return branch_signs(model, q, blk, cols, sel)[0]


def chord_blocks(model: CompiledModel, blk: ModuleBlock, cols: np.ndarray, sel: np.ndarray
                 ) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per chord of a module with a square *own* dependent block: ``(row positions in
    R_p, column positions in cols)``.

    A dependent column is a chord's own when its joint lies on that chord's closure path
    (or is the cut joint itself) and on no other path or coupling of the module; the
    chord's rows are its selected rows. Where these blocks are square, each one's
    determinant is a branch indicator of that loop alone: it changes sign when that loop's
    assembly flips with the shared coordinates held, which the module's determinant cannot
    see when two loops flip together (their signs multiply).
    """
    owner: dict[int, int] = {}
    for p, i in enumerate(blk.chords):
        for e in {model.chord_edges[i], *(edge for edge, _ in model.paths[i])}:
            owner[e] = -1 if e in owner and owner[e] != p else p
    for c in blk.couplings:
        for vi, _, _ in model.coupling_rows[c]:
            owner[int(model.v_edge[vi])] = -1
    out = []
    for p in range(len(blk.chords)):
        rows = np.flatnonzero((sel >= 6 * p) & (sel < 6 * p + 6))
        own = np.array([n for n, j in enumerate(cols) if owner.get(int(model.v_edge[j])) == p],
                       dtype=np.int64)
        if rows.size and rows.size == own.size:
            out.append((rows, own))
    return out


def branch_signs(model: CompiledModel, q: np.ndarray, blk: ModuleBlock, cols: np.ndarray,
                 sel: np.ndarray) -> tuple[float, ...]:
    """Branch indicators of one module at q: the sign of det R_p, then the sign of each
    chord's own dependent block (:func:`chord_blocks`). A continuation step that changes any
    of them has crossed a singular configuration (or jumped to another assembly)."""
    _, C, _ = local_jacobian(model, q, blk.chords, blk.couplings, cols)
    Rp = C[sel]
    if Rp.size == 0 or Rp.shape[0] != Rp.shape[1]:
        return (1.0,)
    signs = [float(np.sign(np.linalg.det(Rp)))]
    signs += [float(np.sign(np.linalg.det(Rp[np.ix_(r, c)])))
              for r, c in chord_blocks(model, blk, cols, sel)]
    return tuple(signs)


@dataclass
class ClosureState:
    """Mutable per-state data of the motion lift (the Data of the Model/Data split).

    A step whose R_p has a condition number above ``singular_cond`` (the partition is
    nearly singular while the rank is unchanged) first re-partitions at the current
    configuration, choosing the best-conditioned dependent columns with no preference (a
    computational reconfiguration, logged in ``events``), and re-expresses the requested
    speeds in the new independent coordinates: ``u' = (E_old u)[new independent]``, stored in
    ``u`` — callers continue with ``state.u`` and ``state.partition``. A rank change raises
    :class:`MechanismEvent`.

    Attributes:
        model: the compiled model (immutable).
        partition: the current partition (replaced on a computational reconfiguration).
        q: (nq,) current configuration on the manifold.
        u: (n_u,) the independent speeds of the last step, in the current partition.
        events: log of reconfigurations and mechanism events (strings).
        stats: accumulated counts.
        singular_cond: condition number of R_p that triggers a reconfiguration (1e8: six
            significant digits of E left, two decades before the rank tolerance).
    """

    model: CompiledModel
    partition: Partition
    q: np.ndarray
    u: np.ndarray | None = None
    events: list[str] = field(default_factory=list)
    stats: SolveStats = field(default_factory=SolveStats)
    singular_cond: float = 1e8

    def module_columns(self) -> list[tuple[tuple[int, ...], tuple[int, ...], np.ndarray,
                                          np.ndarray]]:
        """Per module ``(chords, couplings, dependent v-columns, independent v-columns)``."""
        dep = set(self.partition.dependent.tolist())
        out = []
        for blk in self.model.blocks:
            d = np.array([j for j in blk.cols if j in dep], dtype=np.int64)
            i = np.array([j for j in blk.cols if j not in dep], dtype=np.int64)
            out.append((blk.chords, blk.couplings, d, i))
        return out

    def step(self, u: np.ndarray, h: float, *, depth: int = 0) -> np.ndarray:
        """Advance along the manifold by ``h·u`` (independent speeds u, step h [s]).

        Returns the new q (also stored). Raises ClosureError after 8 halvings.
        """
        m = self.model
        L = lift(m, self.partition, self.q)
        self.stats.jacobian_evals += 1
        if L.cond > self.singular_cond:
            v = L.E @ u
            self._reconfigure()
            u = v[self.partition.independent]
            L = lift(m, self.partition, self.q)
        self.u = np.asarray(u, dtype=float)
        du = h * (L.E @ u)
        q = m.integrate(self.q, du)
        ok = True
        for chords, couplings, cols, inputs in self.module_columns():
            if cols.size == 0 or not np.any(du[inputs]):
                continue  # no independent input of this module moved: nothing to correct
            q, good = newton(m, q, chords, couplings, cols, stats=self.stats)
            ok &= good
        if not ok:
            if depth >= 8:
                raise ClosureError(f"{m.record.source}: the motion step does not close "
                                   f"(unclosed: {unclosed_report(m, residual(m, q), CLOSURE_TOL)})")
            self.step(u, h / 2, depth=depth + 1)
            return self.step(u, h / 2, depth=depth + 1)
        self.q = q
        return q

    def _reconfigure(self) -> None:
        """New partition with the same rank (logged); a rank change is a mechanism event."""
        old = self.partition
        new = partition_at(self.model, self.q, name=old.name, length=old.length_scale,
                           preferred=())
        if new.rank != old.rank:
            self.events.append(f"mechanism event: rank {old.rank} -> {new.rank}")
            raise MechanismEvent(f"mechanism event: the closure rank changed {old.rank} -> "
                                 f"{new.rank} at the current configuration")
        self.events.append(
            f"computational reconfiguration: independent {old.joints} -> {new.joints}")
        self.partition = new

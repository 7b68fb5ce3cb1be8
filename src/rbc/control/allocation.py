"""Effort allocation with contact-wrench cones: the QP of issue #20 item 2 (docs/allocation.md
"Allocation QP").

At a state (q, u) of a support mode, the ports' efforts f (n_act,) and a slack z (n_u,)
solve

    minimise    ½ fᵀ W f + ½ ρ ‖z‖² + η Σ_b ‖H_b λ_b(f)‖²
    subject to  Lᵀ f + z = Q − τ,      f_min ≤ f ≤ f_max,      λ_b(f) ∈ K_b  (every support b),

with Q the commanded generalised force (:func:`rbc.control.tracking.commanded_force`), τ the
other smooth loads of the model reduced to u (springs, constant efforts; Coulomb friction
too when the nominal model keeps it), ``W_jj = 1 / max(|f_min,j|, |f_max,j|)²``, H_b the
selection of the support-frame tangential forces and all moments (moments divided by
``moment_length = 0.1 m``), η = 0 for dances and 2e-4 for stepping, and K_b the cones of
:mod:`rbc.control.cones`. The support wrenches ``λ_b(f) = λ_b0 + Λ_b f`` are the affine maps
of :func:`rbc.compose.wrenches.support_wrench_map`: the reactions at the accelerations the
efforts induce, ``u̇(f) = Γ⁻¹ (Lᵀ f + τ − C u − g − D u)`` — with z = 0 exactly the
accelerations the tracking law asks for. The allocation slack ‖z‖∞ measures how far the
ports fall short of Q inside the bounds and cones.

**Solver.** DAQP (Arnström, Bemporad, Axehill, IEEE TAC 2022) on the same problem in the
scaled efforts ``f̃ = f / d``, ``d_j = max(|f_min,j|, |f_max,j|)`` (so ``fᵀ W f = ‖f̃‖²``),
equality and cone rows scaled to unit norm; equality rows are DAQP equalities (sense 5),
effort bounds DAQP simple bounds.

**Two phases.** At a reachable Q the weighted QP's slack is ``z = −ν/ρ`` (ν the cost's
sensitivity to Q, ≈ 1e-3 per N at rest on the humanoid), vanishing as ρ → ∞, while at an
unreachable Q its active sets become numerically degenerate in the efforts for large ρ
(DAQP reports them infeasible above ρ ≈ 1e7 on the humanoid). So :func:`allocate` first
solves the ρ → ∞ problem — the equalities hard, z = 0 (phase ``reachable``); only when
that has no solution it solves the weighted QP with ρ (phase ``slack``). The default
ρ = 1e6 gives the slack of an unreachable Q to 1e-9 relative of its ρ → ∞ limit
(measured: 216.785401425 at 1e6 vs 216.785402040 at 1e4 N·m), and at a reachable Q the
weighted solution would differ from phase 1's by ‖ν‖/ρ ≈ 1e-9.

Only when no efforts within the bounds keep every support wrench in its cone (or DAQP fails
otherwise) :class:`AllocationError` is raised, naming DAQP's exit flag.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from dataclasses import dataclass

import daqp
import numpy as np

from rbc.control.cones import ContactLimits, WrenchCone, wrench_cone
from rbc.errors import RbcError

#: DAQP's infinity.
INF = 1e30
#: DAQP sense flags.
INEQUALITY, EQUALITY = 0, 5
#: DAQP exit flags → meaning (DAQP's documentation).
DAQP_FLAGS = {1: "optimal", 2: "soft optimal", -1: "infeasible", -2: "cycling",
              -3: "unbounded", -4: "iteration limit", -5: "nonconvex problem",
              -6: "initial working set overdetermined"}
#: DAQP primal tolerance on the unit-norm rows (in scaled efforts, |f̃| ≤ 1): 1e-10 of the
#: largest effort bound, far below any physical margin.
PRIMAL_TOL = 1e-10
#: Above this ρ DAQP's slack phase can fail on degenerate active sets (module docstring).
RHO_SOLVABLE = 1e6


class AllocationError(RbcError):
    """The allocation QP has no solution (efforts and cones incompatible) or DAQP failed.

    Attributes:
        flag: DAQP's exit flag.
    """

    def __init__(self, message: str, flag: int) -> None:
        super().__init__(message)
        self.flag = flag


@dataclass(frozen=True)
class AllocationWeights:
    """Weights of the allocation cost.

    Attributes:
        rho: ρ, the slack weight [1/N², 1/(N·m)²] (module docstring).
        eta: η, the weight of the tangential forces and moments [1/N²] (0: dances; 2e-4:
            stepping).
        moment_length: [m] the moments' divisor in H (0.1 m).
    """

    rho: float = 1e6
    eta: float = 0.0
    moment_length: float = 0.1


@dataclass(frozen=True, eq=False)
class AllocationProblem:
    """One instance of the allocation QP (module docstring).

    Attributes:
        L: (n_act, n_u) actuator map; rhs: (n_u,) ``Q − τ``; lower, upper: (n_act,) effort
        bounds [N or N·m]; lam0: (k, 6) and Lam: (k, 6, n_act) the support-wrench maps
        (world axes, about each support origin); cones: (k,) K_b per support;
        weights: ρ, η, moment length; ports: port names; links: the mode's link chords and
        link_lam0 (n_l, 6), link_Lam (n_l, 6, n_act) their wrench maps (palm a on palm b;
        not constrained, reported: :attr:`Allocation.link_wrenches`).
    """

    L: np.ndarray
    rhs: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    lam0: np.ndarray
    Lam: np.ndarray
    cones: tuple[WrenchCone, ...]
    weights: AllocationWeights = AllocationWeights()
    ports: tuple[str, ...] = ()
    links: tuple[str, ...] = ()
    link_lam0: np.ndarray | None = None
    link_Lam: np.ndarray | None = None

    @property
    def scale(self) -> np.ndarray:
        """(n_act,) ``d_j = max(|f_min,j|, |f_max,j|)`` (W = diag(d)⁻²)."""
        return np.maximum(np.abs(self.lower), np.abs(self.upper))

    def selection(self, cone: WrenchCone) -> np.ndarray:
        """H_b (5, 6) on the world wrench: support-frame ``[f_x, f_y, n_x/ℓ, n_y/ℓ, n_z/ℓ]``."""
        S = np.zeros((5, 6))
        S[0, 3], S[1, 4] = 1.0, 1.0
        S[2:, :3] = np.eye(3) / self.weights.moment_length
        return S @ np.kron(np.eye(2), cone.R.T)

    def wrenches(self, f: np.ndarray) -> np.ndarray:
        """(k, 6) ``λ_b(f)``."""
        return self.lam0 + self.Lam @ np.asarray(f, dtype=float)

    def link_wrenches(self, f: np.ndarray) -> np.ndarray:
        """(n_l, 6) the link wrenches ``λ_l(f)`` (none without link maps)."""
        if self.link_lam0 is None:
            return np.zeros((0, 6))
        return self.link_lam0 + self.link_Lam @ np.asarray(f, dtype=float)

    def cost(self, f: np.ndarray, z: np.ndarray) -> float:
        """The objective at (f, z)."""
        w = self.weights
        c = 0.5 * float(np.sum((f / self.scale) ** 2)) + 0.5 * w.rho * float(z @ z)
        if w.eta:
            lam = self.wrenches(f)
            c += w.eta * sum(float(np.sum((self.selection(cn) @ lb) ** 2))
                             for cn, lb in zip(self.cones, lam, strict=True))
        return c

    def dense(self, slack: bool = True) -> tuple[np.ndarray, ...]:
        """The QP as dense arrays ``(H, c, A, lower, upper, sense)`` for the solver and for
        independent checks: ``min ½ xᵀHx + cᵀx`` s.t. ``lower ≤ A x ≤ upper``, x = [f̃; z]
        (``slack=False``: x = f̃ and the equalities hard, the ρ → ∞ problem). The first
        n_act rows of A are the identity on f̃ (the simple bounds), then the n_u equality
        rows, then the cone rows (all but the bounds scaled to unit norm)."""
        n, m = self.L.shape
        nz = m if slack else 0
        d = self.scale
        w = self.weights
        H = np.zeros((n + nz, n + nz))
        c = np.zeros(n + nz)
        H[:n, :n] = np.eye(n)
        H[n:, n:] = w.rho * np.eye(nz)
        if w.eta:
            for cn, l0, Lb in zip(self.cones, self.lam0, self.Lam, strict=True):
                S = self.selection(cn)
                SL = S @ Lb * d[None, :]
                H[:n, :n] += 2.0 * w.eta * SL.T @ SL
                c[:n] += 2.0 * w.eta * SL.T @ (S @ l0)
        eq = np.hstack([self.L.T * d[None, :], np.eye(m)[:, :nz]])
        rows, lo, up = [np.eye(n, n + nz)], [self.lower / d], [self.upper / d]
        sense = [np.zeros(n, dtype=np.int32)]
        r = np.linalg.norm(eq, axis=1)
        r[r == 0] = 1.0
        rows.append(eq / r[:, None])
        lo.append(self.rhs / r)
        up.append(self.rhs / r)
        sense.append(np.full(m, EQUALITY, dtype=np.int32))
        for cn, l0, Lb in zip(self.cones, self.lam0, self.Lam, strict=True):
            Ac = cn.A @ Lb * d[None, :]
            off = cn.A @ l0
            s = np.linalg.norm(Ac, axis=1)
            s[s == 0] = 1.0
            rows.append(np.hstack([Ac / s[:, None], np.zeros((Ac.shape[0], nz))]))
            lo.append((cn.lower - off) / s)
            up.append((cn.upper - off) / s)
            sense.append(np.where(cn.equality, EQUALITY, INEQUALITY).astype(np.int32))
        return (H, c, np.vstack(rows), np.concatenate(lo), np.concatenate(up),
                np.concatenate(sense))


@dataclass(frozen=True, eq=False)
class Allocation:
    """The allocated efforts.

    Attributes:
        f: (n_act,) port efforts [N or N·m]; z: (n_u,) slack ``Q − τ − Lᵀ f``;
        slack: ‖z‖∞; wrenches: (k, 6) λ_b(f) (world axes, about each support origin);
        cone_violation: largest violation of any K_b row [N or N·m] (DAQP's tolerance);
        active: names of the active bounds and cone rows; phase: ``reachable`` (the
        hard-equality QP solved: z = 0) or ``slack`` (the weighted QP); iterations: DAQP's
        (both phases); cost: the objective; x: the scaled solution ([f̃] or [f̃; z] by
        phase); lam: DAQP's multipliers on the rows of :meth:`AllocationProblem.dense`
        of that phase; supports: the names of the rows of ``wrenches``; links: the mode's
        link chords and link_wrenches: (n_l, 6) their wrenches λ_l(f) at the allocated
        efforts (palm a on palm b, world axes, about the link's second frame origin).
    """

    f: np.ndarray
    z: np.ndarray
    slack: float
    wrenches: np.ndarray
    cone_violation: float
    active: tuple[str, ...]
    phase: str
    iterations: int
    cost: float
    x: np.ndarray
    lam: np.ndarray
    supports: tuple[str, ...] = ()
    links: tuple[str, ...] = ()
    link_wrenches: np.ndarray | None = None


def allocate(problem: AllocationProblem) -> Allocation:
    """Solve the allocation QP with DAQP (module docstring, "Two phases").

    Raises:
        AllocationError: no efforts within the bounds keep every support wrench in its cone
            (DAQP infeasible), or another DAQP failure (its flag named).
    """
    p = problem
    n, m = p.L.shape
    hard = _daqp(p.dense(slack=False), n)
    x, flag, mult, iters, sense = hard
    phase = "reachable"
    if flag not in (1, 2):
        x, flag, mult, it2, sense = _daqp(p.dense(slack=True), n)
        iters += it2
        phase = "slack"
    if flag not in (1, 2):
        what = DAQP_FLAGS.get(int(flag), "unknown")
        hint = (": no efforts within the bounds keep every support wrench inside its cone ("
                + ", ".join(cn.support for cn in p.cones) + ")") if flag == -1 else ""
        if p.weights.rho > RHO_SOLVABLE:
            hint += (f"; ρ = {p.weights.rho:g} is above what DAQP resolves reliably at an "
                     f"unreachable Q (≤ {RHO_SOLVABLE:g})")
        raise AllocationError(f"effort allocation failed (DAQP {what}, flag {flag}){hint}",
                              int(flag))
    f = x[:n] * p.scale
    z = x[n:] if phase == "slack" else np.zeros(m)
    lam = p.wrenches(f)
    viol = max((cn.violation(lb) for cn, lb in zip(p.cones, lam, strict=True)), default=0.0)
    names = _row_names(p)
    active = tuple(nm for nm, y, s in zip(names, mult, sense, strict=True)
                   if y != 0.0 and s != EQUALITY)
    return Allocation(f, z, float(np.abs(z).max(initial=0.0)), lam, viol, active, phase,
                      iters, p.cost(f, z), x, mult, tuple(cn.support for cn in p.cones),
                      p.links, p.link_wrenches(f))


def _daqp(qp: tuple[np.ndarray, ...], n: int):
    """DAQP on :meth:`AllocationProblem.dense` arrays (the first n rows simple bounds):
    ``(x, flag, multipliers, iterations, sense)``."""
    H, c, A, lo, up, sense = qp
    lo = np.where(np.isfinite(lo), lo, -INF)
    up = np.where(np.isfinite(up), up, INF)
    x, _, flag, info = daqp.solve(np.ascontiguousarray(H), np.ascontiguousarray(c),
                                  np.ascontiguousarray(A[n:]), np.ascontiguousarray(up),
                                  np.ascontiguousarray(lo), np.ascontiguousarray(sense),
                                  primal_tol=PRIMAL_TOL)
    return (np.asarray(x, dtype=float), int(flag), np.asarray(info["lam"], dtype=float),
            int(info["iterations"]), sense)


def _row_names(p: AllocationProblem) -> list[str]:
    n, m = p.L.shape
    ports = p.ports or tuple(f"port {j}" for j in range(n))
    out = [f"{nm} bound" for nm in ports] + [f"Q[{i}]" for i in range(m)]
    for cn in p.cones:
        out += [f"{cn.support} {r}" for r in cn.rows]
    return out


def allocation_problem(mm, data, terms, Q: np.ndarray, *,
                       limits: ContactLimits = ContactLimits(),
                       weights: AllocationWeights = AllocationWeights(),
                       loads: dict[str, float] | None = None, max_normal: float | None = None,
                       coulomb: bool = False) -> AllocationProblem:
    """The allocation QP of a composed mode at the state of ``terms``.

    Args:
        mm: the mode's :class:`~rbc.compose.dynamics.MemberModel`; data: its
            :class:`~rbc.model.dynamics.DynamicsData`; terms: the member-wise terms at the
            measured (q, u) (:func:`~rbc.compose.dynamics.composed_terms`, without port
            efforts).
        Q: (n_u,) commanded generalised force.
        limits: the cone margins; weights: ρ, η.
        loads: load factor σ per support name (default 1 for every support; the stepping
            ramps of :class:`~rbc.control.cones.UnloadingRamp`).
        max_normal: F_max [N] of every support (default: ∞ for supports at σ = 1; the whole
            system's weight where σ < 1, so the cap σ F_max falls to zero with σ).
        coulomb: keep the model's Coulomb friction in the nominal model (default: leave it
            out; friction compensation is the plant policy's).

    Raises:
        AllocationError: a port without finite effort limits (W needs them).
    """
    from rbc.compose.wrenches import support_wrench_map

    kin = mm.kin
    lim, names, by_name, weight = _record_constants(kin)
    smap = support_wrench_map(mm, data, terms, coulomb=coulomb)
    cones = []
    for name, R in zip(smap.supports, smap.rotation, strict=True):
        sigma = 1.0 if loads is None else float(loads.get(name, 1.0))
        cap = max_normal if max_normal is not None else (np.inf if sigma == 1.0 else weight)
        cones.append(wrench_cone(by_name[name], R, limits, sigma, cap))
    rhs = np.asarray(Q, dtype=float) - terms.tau - (terms.tau_coulomb if coulomb else 0.0)
    return AllocationProblem(terms.L, rhs, lim[:, 0].copy(), lim[:, 1].copy(), smap.lam0, smap.Lam,
                             tuple(cones), weights, names, smap.links,
                             smap.link_lam0, smap.link_Lam)


def _record_constants(kin) -> tuple[np.ndarray, tuple[str, ...], dict, float]:
    """``(effort limits (n_act, 2), port names, supports by name, weight m·|g| [N])`` of a
    mode model's record, once per model (a record is immutable).

    Raises:
        AllocationError: a port without finite effort limits (W needs them).
    """
    hit = _CONSTANTS.get(kin)
    if hit is not None:
        return hit
    acts = kin.record.actuators
    missing = [a.name for a in acts if not a.effort_limits
               or not np.all(np.isfinite(a.effort_limits))]
    if missing:
        raise AllocationError("effort allocation needs finite effort_limits on every "
                              "actuator (W_jj = 1/max(|f_min|, |f_max|)²); missing on: "
                              + ", ".join(missing), 0)
    lim = np.array([a.effort_limits for a in acts], dtype=float).reshape(-1, 2)
    m = sum(b.mass for b in kin.record.bodies if b.kind != "fixed")
    hit = _CONSTANTS[kin] = (lim, tuple(a.name for a in acts),
                             {s.name: s for s in kin.record.supports},
                             float(m * np.linalg.norm(kin.record.gravity)))
    return hit


_CONSTANTS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


__all__: Sequence[str] = ("Allocation", "AllocationError", "AllocationProblem",
                          "AllocationWeights", "allocate", "allocation_problem")

"""The weighted velocity problem in the independent speeds (DESIGN.md §11; issue 18, eq. 17).

    minimise   ½ (u − u₀)ᵀ W (u − u₀) + k_Φ ∇Φ_uᵀ u
    subject to J_x u = w,   w = φ_d − K_x e_x,   lower ≤ A u ≤ upper

with W = M_r (the reduced inertia, so the cost is the kinetic energy of the correction: the
solution is the dynamically consistent, partition-independent one), ∇Φ_u the stroke
preference's gradient (:mod:`rbc.tasks.preference`), J_x, e_x, φ_d from a chart
(:mod:`rbc.tasks.charts`) and the bounds of :mod:`rbc.tasks.bounds`.

**Closed form** (no inequalities, J_x of full row rank; the test oracle). With
``f = k_Φ ∇Φ_u − W u₀`` the stationarity ``W u + f = J_xᵀ λ`` and ``J_x u = w`` give

    u = W⁻¹J_xᵀ (J_x W⁻¹ J_xᵀ)⁻¹ (w + J_x W⁻¹ f) − W⁻¹ f,

(:func:`closed_form`, by Cholesky of W). At a stationary task (w = 0, u₀ = 0) the motion is
``u = −k_Φ N ∇Φ_u`` with ``N = W⁻¹ − W⁻¹J_xᵀ(J_x W⁻¹ J_xᵀ)⁻¹J_x W⁻¹`` positive semidefinite,
so ``Φ̇ = −k_Φ ∇Φ_uᵀ N ∇Φ_u ≤ 0``: Φ is non-increasing along the self-motion. With the
bounds too: u = 0 is feasible (strokes strictly inside their limits), so the optimum has
cost ≤ 0, i.e. ``k_Φ Φ̇ ≤ −½ uᵀ W u ≤ 0``.

**Solver.** DAQP (Arnström, Bemporad, Axehill, "A dual active-set solver for embedded
quadratic programming using recursive LDLᵀ updates", IEEE TAC 2022) on the problem
preconditioned by the diagonal variable scaling ``u = D ũ``, ``D = diag(W)^(−1/2)`` and unit
row norms (the same problem; it only equalises units of rad/s and m/s). The task rows are
equalities (DAQP sense 5).

**Infeasibility** is never absorbed silently. When the equalities cannot be met inside the
bounds (or J_x is rank deficient: a singular configuration of the task), the bounds that
block are found from the least-squares problem ``min ‖J_x u − w‖²`` subject to the bounds
(the rows active there) and :class:`TaskInfeasible` names them — unless the declared
relaxation ``slack`` is chosen: then the task velocity actually commanded is the closest one
the bounds allow, ``w* = J_x u*``, the problem is solved with w* (same cost), and the slack
``s = w − w*`` (m,) is reported with the solution.

**Covariance.** In another partition ``u = F ũ`` (F invertible at q): ``W̃ = Fᵀ W F``,
``J̃ = J F``, ``∇̃Φ = Fᵀ ∇Φ``, ``Ã = A F``, so the solution is ``ũ = F⁻¹ u``: the same
physical velocity ``v = E u``, task velocity and port powers (test).
"""

from __future__ import annotations

from dataclasses import dataclass

import daqp
import numpy as np
from scipy.linalg import solve_triangular

from rbc.errors import RbcError
from rbc.tasks.bounds import Bounds

RELAXATIONS = ("none", "slack")
#: DAQP's infinity (its default bound magnitude).
INF = 1e30
#: DAQP sense flags: inequality, equality.
INEQUALITY, EQUALITY = 0, 5
#: Task rows are rank deficient when the smallest singular value of the scaled J_x falls
#: below this fraction of the largest (the rank tolerance of the partition, RANK_TOL).
RANK_RTOL = 1e-9
#: Relative regularisation of the least-squares diagnosis (makes its Hessian positive
#: definite when J_x has fewer rows than columns; far below any physical slack).
LSQ_REG = 1e-12
#: DAQP primal feasibility tolerance on the scaled rows (unit row norms, so in task-speed
#: units of the preconditioned problem): 1e-9, far below any bound's physical value.
PRIMAL_TOL = 1e-9


class TaskInfeasible(RbcError):
    """The task cannot be met inside the bounds; names the blocking bounds.

    Attributes:
        bounds: names of the bounds active at the closest feasible motion; slack: (m,)
        the smallest task-velocity deficit ``w − J_x u*``; rank_deficient: J_x lost rank.
    """

    def __init__(self, message: str, bounds: tuple[str, ...] = (),
                 slack: np.ndarray | None = None, rank_deficient: bool = False) -> None:
        super().__init__(message)
        self.bounds = bounds
        self.slack = slack
        self.rank_deficient = rank_deficient


@dataclass(frozen=True, eq=False)
class VelocityProblem:
    """One instance of the velocity problem (module docstring).

    Attributes:
        W: (n, n) metric (M_r); J: (m, n) task rows; w: (m,) task-velocity command;
        grad: (n,) ∇Φ_u; k_phi: k_Φ [J·s] (W u has units of momentum, Φ is dimensionless);
        bounds: the inequality rows (or None); u0: (n,) nominal motion (zero if None);
        row_names: (m,) task row names (for messages).
    """

    W: np.ndarray
    J: np.ndarray
    w: np.ndarray
    grad: np.ndarray
    k_phi: float = 0.0
    bounds: Bounds | None = None
    u0: np.ndarray | None = None
    row_names: tuple[str, ...] = ()

    @property
    def f(self) -> np.ndarray:
        """The linear cost ``k_Φ ∇Φ_u − W u₀`` (n,)."""
        f = self.k_phi * np.asarray(self.grad, dtype=float)
        return f if self.u0 is None else f - self.W @ self.u0


@dataclass(frozen=True, eq=False)
class Solution:
    """The resolved independent speeds.

    Attributes:
        u: (n,) speeds; active: (k,) bool, the bounds active at u; slack: (m,) the
        task-velocity deficit ``w − J u`` (zero unless relaxed); relaxed: the slack policy
        was used at this instant; iterations: DAQP iterations.
    """

    u: np.ndarray
    active: np.ndarray
    slack: np.ndarray
    relaxed: bool
    iterations: int

    @property
    def slack_norm(self) -> float:
        """‖w − J u‖₂ in task-speed units (m/s, rad/s)."""
        return float(np.linalg.norm(self.slack))


def closed_form(p: VelocityProblem) -> np.ndarray:
    """The solution without inequalities (module docstring), the test oracle.

    Evaluated in the coordinates whitened by the Cholesky factor ``W = L Lᵀ``: with
    ``B = J L⁻ᵀ = R̃ᵀ Qᵀ`` (QR of Bᵀ) and ``y = L⁻¹ f``, the closed form is
    ``u = L⁻ᵀ (B⁺ w − (I − B⁺B) y)``, ``B⁺ = Q R̃⁻ᵀ``, ``I − B⁺B = I − Q Qᵀ`` — the same formula
    with the projector applied explicitly (and dropped for a square J_x, where it is zero),
    so the task term does not drown in the round-off of a large preference term.

    Raises:
        numpy.linalg.LinAlgError: W not positive definite or J_x rank deficient.
    """
    Lc = np.linalg.cholesky(p.W)
    B = solve_triangular(Lc, p.J.T, lower=True).T  # J L⁻ᵀ
    y = solve_triangular(Lc, p.f, lower=True)
    Q, R = np.linalg.qr(B.T)
    if np.any(np.abs(np.diag(R)) <= RANK_RTOL * max(np.abs(R).max(initial=0.0), 1e-300)):
        raise np.linalg.LinAlgError("the task rows are rank deficient")
    z = Q @ solve_triangular(R, p.w, trans="T")
    if Q.shape[1] < Q.shape[0]:  # a square J_x leaves no self-motion: the projector is 0
        z -= y - Q @ (Q.T @ y)
    return solve_triangular(Lc, z, lower=True, trans="T")


@dataclass(frozen=True, eq=False)
class _Scaled:
    """The preconditioned problem in ũ (module docstring)."""

    D: np.ndarray
    H: np.ndarray
    f: np.ndarray
    J: np.ndarray
    w: np.ndarray
    A: np.ndarray
    lower: np.ndarray
    upper: np.ndarray

    @classmethod
    def of(cls, p: VelocityProblem) -> _Scaled:
        d = 1.0 / np.sqrt(np.diag(p.W))
        H = d[:, None] * p.W * d[None, :]
        J = p.J * d[None, :]
        rj = np.linalg.norm(J, axis=1)
        rj = np.where(rj > 0, rj, 1.0)
        b = p.bounds
        if b is None or b.size == 0:
            A, lo, hi = np.zeros((0, d.size)), np.zeros(0), np.zeros(0)
        else:
            A = b.A * d[None, :]
            ra = np.linalg.norm(A, axis=1)
            ra = np.where(ra > 0, ra, 1.0)
            A, lo, hi = A / ra[:, None], b.lower / ra, b.upper / ra
        return cls(d, H, d * p.f, J / rj[:, None], p.w / rj, A,
                   np.clip(lo, -INF, INF), np.clip(hi, -INF, INF))


def _daqp(H: np.ndarray, f: np.ndarray, A: np.ndarray, lower: np.ndarray, upper: np.ndarray,
          n_eq: int) -> tuple[np.ndarray, int, np.ndarray, int]:
    """DAQP on ``min ½xᵀHx + fᵀx``, rows ``lower ≤ A x ≤ upper`` (the first n_eq equalities):
    ``(x, exitflag, multipliers, iterations)``."""
    sense = np.zeros(A.shape[0], dtype=np.int32)
    sense[:n_eq] = EQUALITY
    x, _, flag, info = daqp.solve(np.ascontiguousarray(H), np.ascontiguousarray(f),
                                  np.ascontiguousarray(A), np.ascontiguousarray(upper),
                                  np.ascontiguousarray(lower), sense, primal_tol=PRIMAL_TOL)
    return np.asarray(x, dtype=float), int(flag), np.asarray(info["lam"]), int(
        info["iterations"])


def solve(p: VelocityProblem, relax: str = "none") -> Solution:
    """Solve the velocity problem with DAQP (module docstring).

    Args:
        relax: ``none`` (an infeasible task raises) or ``slack`` (the declared relaxation).

    Raises:
        TaskInfeasible: the task rows are rank deficient or cannot be met inside the bounds
            (names the blocking bounds); only with ``relax="none"``.
        ValueError: unknown relaxation.
    """
    if relax not in RELAXATIONS:
        raise ValueError(f"unknown relaxation '{relax}'; valid: {', '.join(RELAXATIONS)}")
    s = _Scaled.of(p)
    m = s.J.shape[0]
    sv = np.linalg.svd(s.J, compute_uv=False) if m else np.zeros(0)
    deficient = bool(m) and (m > s.J.shape[1] or sv[-1] <= RANK_RTOL * max(sv[0], 1e-300))
    if not deficient:
        x, flag, lam, it = _daqp(s.H, s.f, np.vstack([s.J, s.A]), np.concatenate([s.w, s.lower]),
                                 np.concatenate([s.w, s.upper]), m)
        if flag >= 1:
            return Solution(s.D * x, lam[m:] != 0.0, np.zeros(m), False, it)
    return _infeasible(p, s, relax, deficient)


def _infeasible(p: VelocityProblem, s: _Scaled, relax: str, deficient: bool) -> Solution:
    """Least-squares diagnosis; raise naming the bounds, or solve the relaxed problem."""
    m, n = s.J.shape
    H = s.J.T @ s.J
    H = H + LSQ_REG * max(float(np.trace(H)) / max(n, 1), 1e-300) * s.H
    x, flag, lam, it = _daqp(H, -s.J.T @ s.w, s.A, s.lower, s.upper, 0)
    if flag < 1:  # the bounds alone are inconsistent (cannot happen for speed/stroke rows)
        raise TaskInfeasible("the kinematic bounds admit no motion at all")
    u_star = s.D * x
    active = lam != 0.0
    names = tuple(n_ for n_, a in zip(p.bounds.names, active, strict=True)
                  if a) if p.bounds is not None and p.bounds.size else ()
    slack = p.w - p.J @ u_star
    if relax == "none":
        rows = ", ".join(p.row_names) if p.row_names else f"{m} task rows"
        if names:
            why = "blocked by " + "; ".join(names)
        elif deficient:
            why = ("the task rows are rank deficient (a singular configuration of the task: "
                   "the target is at or beyond the edge of the workspace)")
        else:
            why = "no bound is active at the closest motion (numerically infeasible)"
        raise TaskInfeasible(f"the task ({rows}) cannot be met: {why}; smallest task-speed "
                             f"deficit {np.linalg.norm(slack):.3g} (m/s, rad/s); use --relax "
                             "slack to follow the closest feasible motion, or change the "
                             "target, its duration or the bounds", names, slack, deficient)
    # the relaxed problem: same cost, the task rows at the closest achievable velocity
    w_star = s.J @ x
    x2, flag, lam2, it2 = _daqp(s.H, s.f, np.vstack([s.J, s.A]),
                                np.concatenate([w_star, s.lower]),
                                np.concatenate([w_star, s.upper]), m)
    if flag >= 1 and not deficient:
        u, act, it = s.D * x2, lam2[m:] != 0.0, it + it2
    else:  # on the boundary of the feasible set (or rank deficient): the closest motion
        u, act = u_star, active
    return Solution(u, act, p.w - p.J @ u, True, it)

"""Rank analysis, the independent/dependent partition, the lift E and the curvature Ė u.

**Scaling** (DESIGN.md §5). C mixes units (rad and m rows; rad/s and m/s columns). Rank
decisions use ``C_s = D_r C D_c`` with linear rows divided by a length scale L and linear
columns multiplied by L, so that every entry is dimensionless. L defaults to the median
distance of the record's joint attachment points from their body origins
(:func:`characteristic_length`); ``--length-scale`` overrides it.

**Partition.** Rows: QR with column pivoting on ``C_sᵀ`` picks r rows spanning the row space
(the row selector S; r counts ``|R_ii| > tol·|R_00|``). Columns: pivoted QR picks the r
dependent columns, first among the passive coordinates and only then, on the orthogonal
complement, among the preferred ones (actuated joints and the record's ``independent``), so
that actuated and requested joints stay independent whenever the rank allows
(Businger & Golub 1965; Golub & Van Loan, *Matrix Computations*, §5.4.2).

**Lift.** With ``R_p = S C Π_p`` (r × r) and ``R_a = S C Π_a``, ``S C v = 0`` gives
``v_p = −R_p⁻¹ R_a u``, i.e. ``E = Πᵀ [−R_p⁻¹ R_a; I]`` — computed with a linear solve, never an
explicit inverse (LAPACK getrf once per configuration, its factors kept for the curvature
and the corrector).

**Curvature.** Differentiating ``C E = 0`` along the motion gives ``C Ė u = −Ċ v`` with
``v = E u``; only the dependent rows of Ė are nonzero, so ``(Ė u)_p = −R_p⁻¹ S Ċ v`` and
``(Ė u)_a = 0``. Ċ v is the analytic velocity product of :mod:`rbc.model.kinematics`
(preferred over a directional difference of C: it is exact on the manifold and costs one
pass over the paths).
"""

from __future__ import annotations

import functools
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from rbc.errors import CompileError
from rbc.model.compiled import CompiledModel, Partition
from rbc.model.kinematics import (
    ClosureGeometry,
    closure_geometry,
    closure_jacobian,
    local_jacobian,
)

#: Relative threshold on |R_ii| / |R_00| of the scaled pivoted QR below which a direction is
#: counted as rank deficient. Scaled entries are O(1); round-off in C is ~1e-15, so 1e-9
#: separates numerical zeros from genuine (even badly conditioned) directions by six
#: orders of magnitude on either side.
RANK_TOL = 1e-9

#: Condition number of R_p beyond which a partition is considered singular at the current
#: configuration (1/RANK_TOL: the same margin as the rank decision).
SINGULAR_COND = 1.0 / RANK_TOL


@dataclass(frozen=True)
class Scales:
    """Row and column scales of C (``C_s = diag(rows) · C · diag(cols)``)."""

    rows: np.ndarray
    cols: np.ndarray
    length: float


def characteristic_length(model: CompiledModel) -> float:
    """Median nonzero distance [m] of joint attachment points from their body origins.

    Falls back to 1 m for records without any offset.
    """
    d = [np.linalg.norm(T.translation) for T in (*model.A, *model.B)]
    d = [x for x in d if x > 1e-9]
    return float(np.median(d)) if d else 1.0


def linear_columns(model: CompiledModel) -> np.ndarray:
    """(nv,) True for the velocity coordinates that are lengths (m/s), False for angles."""
    out = np.zeros(model.nv, dtype=bool)
    for k, kind in enumerate(model.kinds):
        linear = {"prismatic": [0], "cylindrical": [0], "planar": [0, 1],
                  "free": [3, 4, 5]}.get(kind.type, [])
        out[model.v_slice(k).start + np.array(linear, dtype=np.int64)] = True
    return out


def scales(model: CompiledModel, length: float | None = None) -> Scales:
    """Scales making C dimensionless (see module docstring)."""
    L = length or characteristic_length(model)
    rows = np.ones(model.n_rows)
    for i in range(model.n_chords):
        rows[6 * i + 3: 6 * i + 6] = 1.0 / L
    cols = np.where(linear_columns(model), L, 1.0)
    return Scales(rows, cols, L)


def pivoted_qr(A: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Householder QR with column pivoting (Golub & Van Loan, Alg. 5.4.1): ``A Π = Q R``.

    Returns ``(piv (n,), |diag R| (min(m, n),))``: the column order and the magnitudes of
    R's diagonal (non-increasing). Written with NumPy so that compiling a record does not
    import scipy.linalg (a third of ``rbc compile``'s start-up); checked against
    ``scipy.linalg.qr(pivoting=True)`` in the tests.
    """
    R = np.array(A, dtype=float)
    m, n = R.shape
    piv = np.arange(n)
    diag = np.zeros(min(m, n))
    for k in range(min(m, n)):
        norms = np.einsum("ij,ij->j", R[k:, k:], R[k:, k:])
        j = k + int(np.argmax(norms))
        if j != k:
            R[:, [k, j]] = R[:, [j, k]]
            piv[[k, j]] = piv[[j, k]]
        x = R[k:, k]
        alpha = float(np.linalg.norm(x))
        diag[k] = alpha
        if alpha == 0.0:
            break
        w = x.copy()
        w[0] += np.copysign(alpha, x[0])
        w /= np.linalg.norm(w)
        R[k:, k:] -= 2.0 * np.outer(w, w @ R[k:, k:])
    return piv, diag


def numerical_rank(Rdiag: np.ndarray) -> int:
    """Rank from the diagonal of a pivoted-QR R factor (relative threshold RANK_TOL)."""
    a = np.abs(Rdiag)
    if a.size == 0 or a[0] == 0.0:
        return 0
    return int(np.sum(a > RANK_TOL * a[0]))


def select_rows(Cs: np.ndarray) -> tuple[np.ndarray, int]:
    """Row selector and rank: pivoted QR of ``C_sᵀ``; returns (sorted rows (r,), r)."""
    if Cs.size == 0:
        return np.zeros(0, dtype=np.int64), 0
    piv, diag = pivoted_qr(Cs.T)
    r = numerical_rank(diag)
    return np.sort(piv[:r]).astype(np.int64), r


def select_dependent(Cs: np.ndarray, r: int, preferred: Collection[int],
                     last: Collection[int] = (), taken: Collection[int] = ()) -> np.ndarray:
    """r dependent columns of ``C_s`` (selected rows): passive columns first, then the
    ``preferred`` ones, then those in ``last`` (e.g. a floating root in a support mode);
    never a column in ``taken`` (already dependent in another module: a coordinate is
    solved for by one module only — couplings that share an input, say rollers turned by
    one sprocket, must each solve for their own coordinate).

    Raises:
        CompileError: the columns do not reach rank r (cannot happen for r = rank(C_s)
            when nothing is taken).
    """
    n = Cs.shape[1]
    out = set(taken)
    passive = np.array([j for j in range(n) if j not in preferred and j not in last
                        and j not in out], dtype=np.int64)
    pref = np.array(sorted(set(preferred) - set(last) - out), dtype=np.int64)
    last = set(last) - out
    chosen: list[int] = []
    Q = np.zeros((Cs.shape[0], 0))
    for pool in (passive, pref, np.array(sorted(last), dtype=np.int64)):
        need = r - len(chosen)
        if need <= 0 or pool.size == 0:
            continue
        M = Cs[:, pool] - Q @ (Q.T @ Cs[:, pool])
        piv, diag = pivoted_qr(M)
        scale = max(np.abs(Cs).max(), 1e-300)
        k = int(min(need, np.sum(diag > RANK_TOL * scale)))
        chosen += pool[piv[:k]].tolist()
        Q = np.linalg.qr(Cs[:, chosen])[0] if chosen else Q
    if len(chosen) != r:
        raise CompileError(f"rank analysis: found {len(chosen)} dependent columns, need {r}")
    return np.sort(np.array(chosen, dtype=np.int64))


def joint_columns(model: CompiledModel, names: Collection[str]) -> set[int]:
    """v-indices of the named joints' coordinates."""
    out: set[int] = set()
    for n in names:
        sl = model.v_slice(model.edge(n))
        out.update(range(sl.start, sl.stop))
    return out


def preferred_independent(model: CompiledModel) -> set[int]:
    """Actuated joints and the record's ``independent`` list (and free roots)."""
    rec = model.record
    names = set(rec.actuated_joints()) | set(rec.independent)
    names |= {n for n, t in zip(model.edge_names, model.edge_types, strict=True)
              if n.endswith(".root") and t == "free"}
    return joint_columns(model, names)


def closure_rank(model: CompiledModel, q: np.ndarray, length: float | None = None) -> int:
    """Rank of the scaled closure Jacobian at q, module by module (the rank decision of
    :func:`partition_at` without choosing dependent columns)."""
    sc = scales(model, length)
    total = 0
    for blk in model.blocks:
        _, C, _ = local_jacobian(model, q, blk.chords, blk.couplings, blk.cols)
        total += select_rows(sc.rows[blk.rows][:, None] * C * sc.cols[blk.cols][None, :])[1]
    return total


def partition_at(
    model: CompiledModel,
    q: np.ndarray,
    *,
    name: str = "default",
    independent_joints: Collection[str] | None = None,
    length: float | None = None,
    preferred: Collection[int] | None = None,
    last: Collection[int] = (),
) -> Partition:
    """Rank analysis at configuration q, module by module.

    The closure Jacobian is block structured by the dependency modules (a module's rows
    touch only its candidate and input columns), so each module is analysed on its own
    small block: the cost stays linear in the number of loops.

    Args:
        model: compiled model.
        q: (nq,) configuration (normally assembled).
        name: partition name.
        independent_joints: joints that must be independent (their coordinates are exactly
            the independent speeds); None → preferred actuated/requested joints.
        length: length scale [m] (default :func:`characteristic_length`).
        preferred: v-columns to keep independent when the rank allows (default: actuated
            and requested joints; ``()`` picks the best-conditioned split).
        last: v-columns made dependent only after the preferred ones (a support mode's
            floating roots: the stance legs absorb the support rows when they can).

    Returns:
        The partition (``q_ref`` = q).

    Raises:
        CompileError: the requested joints do not give exactly nv − r independent speeds,
            leave a dependent block singular, or two modules claim one input coordinate.
    """
    sc = scales(model, length)
    forced = None if independent_joints is None else joint_columns(model, independent_joints)
    if forced is not None:
        pref: Collection[int] = forced
    else:
        pref = preferred_independent(model) if preferred is None else set(preferred)
    # the analysis of a block is a function of its bits alone: modules with the same scaled
    # block (a chain's identical loops, expressed in their own frames) are analysed once
    memo: dict[tuple, object] = {}
    analysed = []
    for blk in model.blocks:
        _, C, _ = local_jacobian(model, q, blk.chords, blk.couplings, blk.cols)
        Cs = sc.rows[blk.rows][:, None] * C * sc.cols[blk.cols][None, :]
        key = ("rows", Cs.shape, Cs.tobytes())
        if key not in memo:
            memo[key] = select_rows(Cs)
        sel, r = memo[key]
        analysed.append((blk, Cs, sel, r))
    rank = sum(r for *_, r in analysed)
    if forced is not None and len(forced) != model.nv - rank:
        raise CompileError(
            f"partition '{name}': this mechanism has {model.nv - rank} independent speeds "
            f"(nv {model.nv} − rank {rank}), but joints {', '.join(independent_joints or ())} "
            f"have {len(forced)} coordinates; name joints with exactly {model.nv - rank}")
    rows: list[int] = []
    dep: set[int] = set()
    solved: list[set[int]] = []
    for blk, Cs, sel, r in analysed:
        rows += blk.rows[sel].tolist()
        if forced is None:
            sets = tuple(frozenset(n for n, j in enumerate(blk.cols) if j in group)
                         for group in (pref, last, dep))
            key = ("dependent", Cs.shape, Cs.tobytes(), sel.tobytes(), r, sets)
            if key not in memo:
                memo[key] = select_dependent(Cs[sel], r, *sets)
            local = memo[key]
        else:
            local = np.array([n for n, j in enumerate(blk.cols) if j not in forced], dtype=int)
            block = Cs[sel][:, local]
            if local.size != r or (r and numerical_rank(
                    pivoted_qr(block)[1]) < r):
                chords = ", ".join(model.edge_names[model.chord_edges[i]] for i in blk.chords)
                raise CompileError(
                    f"partition '{name}': with {', '.join(independent_joints or ())} "
                    f"independent, the loops closed by {chords or 'the couplings'} would have "
                    f"{local.size} dependent coordinates for {r} independent closure rows "
                    "(or a singular block) at the reference configuration; choose other joints")
        cols = set(blk.cols[local].tolist())
        if cols & dep:
            raise CompileError(f"partition '{name}': coordinates "
                               f"{[model.v_names[j] for j in sorted(cols & dep)]} would be "
                               "dependent in two modules")
        dep |= cols
        solved.append(cols)
    _check_module_order(model, name, [blk.cols for blk, *_ in analysed], solved)
    dependent = np.array(sorted(dep), dtype=np.int64)
    ind = np.array(sorted(set(range(model.nv)) - dep), dtype=np.int64)
    joints = tuple(dict.fromkeys(model.edge_names[int(model.v_edge[j])] for j in ind))
    return Partition(name=name, independent=ind, dependent=dependent,
                     rows=np.array(sorted(rows), dtype=np.int64), rank=rank,
                     length_scale=sc.length, q_ref=np.array(q, dtype=float), joints=joints)


def _check_module_order(model: CompiledModel, name: str, touched: Sequence[np.ndarray],
                        solved: Sequence[set[int]]) -> None:
    """Refuse module choices that read each other's dependent coordinates in a cycle.

    Module i *reads* module j when a coordinate solved by j is among i's columns (an input
    of i). Reads are fine while they can be ordered — rollers turned by a sprocket that
    another module solves for — but in a cycle (two stance legs of a support mode each
    solving for a different coordinate of the shared floating root) the dependent block
    ``S C Π_p`` is coupled across the modules, and no module-by-module correction closes it:
    at Cassie's double support it was singular (cond 1e17) although every module's own
    block was regular.

    Raises:
        CompileError: naming the coordinates in the cycle.
    """
    owner = {j: i for i, cols in enumerate(solved) for j in cols}
    reads = [{owner[j] for j in cols.tolist() if owner.get(j, i) != i}
             for i, cols in enumerate(touched)]
    state = [0] * len(reads)  # 0 unvisited, 1 on the DFS stack, 2 done
    for start in range(len(reads)):
        if state[start]:
            continue
        stack = [(start, iter(sorted(reads[start])))]
        state[start] = 1
        while stack:
            i, it = stack[-1]
            j = next(it, None)
            if j is None:
                state[i] = 2
                stack.pop()
            elif state[j] == 1:
                cycle = [k for k, _ in stack[[k for k, _ in stack].index(j):]]
                coords = sorted({model.v_names[c] for a in cycle for c in touched[a].tolist()
                                 if owner.get(c, a) != a and owner[c] in cycle})
                raise CompileError(
                    f"partition '{name}': modules would solve for each other's inputs in a "
                    f"cycle (coordinates {', '.join(coords)}): the dependent block is not "
                    "module-solvable")
            elif state[j] == 0:
                state[j] = 1
                stack.append((j, iter(sorted(reads[j]))))


@functools.cache
def _lapack_lu() -> tuple[Any, Any]:
    """LAPACK ``getrf``/``getrs`` (imported on first use: scipy.linalg is not needed to
    compile, and importing it is a third of ``rbc compile``'s start-up)."""
    from scipy.linalg import lapack

    return lapack.dgetrf, lapack.dgetrs


@dataclass(frozen=True, eq=False)
class Lift:
    """The lift at one configuration: ``v = E u`` and ``Ė u`` (DESIGN.md §5).

    Attributes:
        E: (nv, n_u) maps independent speeds to all speeds.
        Rp: the dependent block ``S C Π_p`` (r × r), or None when r = 0.
        lu: its LU factorization (LAPACK ``getrf``: packed factors, pivots), reused by
            :meth:`solve` for the curvature and the Newton corrector.
        cond: condition number of R_p (2-norm, from its singular values; computed on first
            use — the motion lift needs it, the dynamics do not).
        C: (m, nv) the closure Jacobian at q.
        geometry: the closure geometry it was computed from (for Ċv), or None: a
            :class:`~rbc.model.kinematics.ClosureGeometry` or an
            :class:`~rbc.model.augmented.AugmentedGeometry` (both have ``velocity_product``).
    """

    E: np.ndarray
    Rp: np.ndarray | None
    C: np.ndarray
    geometry: ClosureGeometry | Any | None = None
    lu: tuple[np.ndarray, np.ndarray] | None = None

    @functools.cached_property
    def cond(self) -> float:
        if self.Rp is None or self.Rp.size == 0:
            return 1.0
        s = np.linalg.svd(self.Rp, compute_uv=False)
        return float(s[0] / s[-1]) if s[-1] > 0 else np.inf

    def solve(self, rhs: np.ndarray) -> np.ndarray:
        """``R_p⁻¹ rhs`` for rhs (r,) or (r, k), by the stored LU factors."""
        return _lapack_lu()[1](*self.lu, rhs)[0]


def lift(model: CompiledModel, part: Partition, q: np.ndarray) -> Lift:
    """E(q) for a partition: ``E[ind] = I``, ``E[dep] = −R_p⁻¹ R_a`` (LU solve)."""
    geo = closure_geometry(model, q)
    return lift_from_jacobian(part, geo.C, geo)


def lift_from_jacobian(part: Partition, C: np.ndarray, geometry: Any = None) -> Lift:
    """E from an already evaluated closure Jacobian C (m, nv) (and the geometry it came
    from, kept for the curvature's velocity product).

    Raises:
        numpy.linalg.LinAlgError: R_p is exactly singular (LAPACK getrf, ``info > 0``).
    """
    nv = C.shape[1]
    E = np.zeros((nv, part.independent.size))
    E[part.independent, np.arange(part.independent.size)] = 1.0
    if part.rank == 0:
        return Lift(E, None, C, geometry)
    SC = C if part.rows.size == C.shape[0] else C[part.rows]  # rows are sorted and unique
    Rp, Ra = SC[:, part.dependent], SC[:, part.independent]
    lu, piv, info = _lapack_lu()[0](Rp)
    if info > 0:
        raise np.linalg.LinAlgError("Singular matrix")
    lifted = Lift(E, Rp, C, geometry, lu=(lu, piv))
    E[part.dependent] = -lifted.solve(Ra)
    return lifted


def curvature(model: CompiledModel, part: Partition, q: np.ndarray, u: np.ndarray,
              lifted: Lift | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``(v, Ė u)``: all speeds and the curvature term (nv,), (nv,) at (q, u).

    ``(Ė u)_dep = −R_p⁻¹ S Ċ v``, ``(Ė u)_ind = 0``; the tree acceleration is then
    ``v̇ = E u̇ + Ė u``.
    """
    L = lifted or lift(model, part, q)
    v = L.E @ u
    if L.geometry is not None:
        cv = L.geometry.velocity_product(model, v)
    else:
        cv = closure_jacobian(model, q, v)[2]
    edu = np.zeros(model.nv)
    if part.rank and L.Rp is not None:
        edu[part.dependent] = -L.solve(cv[part.rows])
    return v, edu


#: Run-time re-partitioning (a coordinate singularity: an independent coordinate nearing a
#: turning point, where R_p becomes singular at unchanged rank). The alternatives are
#: examined when the scaled cond(R_p) has doubled since the partition was adopted (and
#: exceeds REPARTITION_MIN), and adopted when one is REPARTITION_GAIN times better
#: conditioned. Measured on the rocker-driven four-bar (records/hard/rocker_fourbar.yaml,
#: cond 27 at its reference configuration): leaving the rocker chart at cond 20 keeps a 10 s
#: passive run within 2e-9 rad of a DOP853 run in the crank chart, at cond 1e3 within only
#: 2e-6 (the closure's 1e-13 tolerance times cond², in the reduced inertia, degrades the
#: stages near the turning point).
REPARTITION_MIN = 10.0
REPARTITION_GAIN = 4.0


def scaled_cond(model: CompiledModel, part: Partition, lifted: Lift) -> float:
    """Condition number (2-norm) of the scaled dependent block ``D_r S C Π_p D_c`` of a lift
    (the quantity the rank decisions are made on; unit-free)."""
    if lifted.Rp is None or lifted.Rp.size == 0:
        return 1.0
    sc = scales(model, part.length_scale)
    Rs = sc.rows[part.rows][:, None] * lifted.Rp * sc.cols[part.dependent][None, :]
    s = np.linalg.svd(Rs, compute_uv=False)
    return float(s[0] / s[-1]) if s[-1] > 0 else np.inf


@dataclass(frozen=True)
class Reselection:
    """A re-partition at one configuration: the new partition and why.

    Attributes:
        partition: the new partition (``name`` kept); kind: ``"reconfiguration"`` (same
        rank, other independent set) or ``"mechanism_event"`` (the rank changed);
        cond_before, cond_after: scaled cond(R_p) of the old and the new partition there.
    """

    partition: Partition
    kind: str
    cond_before: float
    cond_after: float


def reselect(model: CompiledModel, part: Partition, q: np.ndarray, cond_before: float,
             *, allowed=None) -> Reselection | None:
    """A better-conditioned partition at q (its scaled cond(R_p) at least
    :data:`REPARTITION_GAIN` times below ``cond_before``, the current one's), or None.

    The rank pass's preferences come first (actuated and requested joints independent,
    :func:`partition_at`), then the best-conditioned split (pivoted QR with no preference).
    A changed rank is reported as a mechanism event with the partition of the new rank.
    ``allowed(partition)`` may veto a candidate (e.g. a backend that needs scalar
    independent coordinates).
    """
    best = None
    for preferred in (None, ()):
        cand = partition_at(model, q, name=part.name, length=part.length_scale,
                            preferred=preferred)
        if np.array_equal(cand.independent, part.independent) and cand.rank == part.rank:
            continue
        if allowed is not None and not allowed(cand):
            continue
        try:
            c = scaled_cond(model, cand, lift(model, cand, q))
        except np.linalg.LinAlgError:
            continue
        kind = "reconfiguration" if cand.rank == part.rank else "mechanism_event"
        if kind == "mechanism_event":
            return Reselection(cand, kind, cond_before, c)
        if c * REPARTITION_GAIN <= cond_before and (best is None or c < best.cond_after):
            best = Reselection(cand, kind, cond_before, c)
    return best

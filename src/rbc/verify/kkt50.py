"""Reference forward dynamics: an index-1 KKT solve in 50-digit arithmetic (DESIGN.md §6).

The reference shares no code with the lift (``E``, ``Ė``) or the closure Jacobian of
:mod:`rbc.model.kinematics`. It takes double-precision Pinocchio tree terms (``M_T``,
``h_T``, ``g_T`` from :func:`rbc.model.dynamics.tree_terms`; efforts from
:func:`~rbc.model.dynamics.passive_efforts`, :func:`~rbc.model.dynamics.wrench_efforts`
and the port efforts) and builds the constraint rows of every cut joint itself, in 50
digits, from the tree model's placements and joint transforms.

**Constraint rows.** For a cut joint e = (b, c) let ``Jb`` be the joint frame ``A_e`` on body
b and ``Jc`` the frame ``B_e`` on body c, both placed through the *tree*. With ``V_b``,
``V_c`` their twists in their own (LOCAL) frames and ``X = Ad(T_Jc_Jb)`` (from the tree
placements), the relative twist of Jc w.r.t. Jb written in Jc is
``V_rel = V_c − X V_b = J_rel v_T`` with ``J_rel = J_c − X J_b`` (LOCAL frame Jacobians, as
Pinocchio's ``getFrameJacobian(…, LOCAL)``). The joint allows exactly ``V_rel = S_e(q_e) q̇_e``
(S_e: the cut joint's motion subspace in Jc). Splitting the 6 rows with the invertible
``[P_e; S_e⁺]`` (``P_e``: the annihilator of S_e, ``P_e S_e = 0``, 6 − nv_e rows: spherical 3,
universal 4, revolute/prismatic/helical 5, cylindrical 4, fixed 6):

* physical rows ``P_e J_rel v_T = 0`` (no cut coordinates);
* rate rows ``q̇_e = K_e v_T`` with ``K_e = S_e⁺ J_rel`` (the massless cut coordinates).

**The rows in 50 digits** (:func:`cut_rows`). The frame Jacobians are not Pinocchio's: those
go through world placements in double precision, so every column carries ε·(distance from
the world origin) of rounding, and a structural zero — the idle spin of a rod between two
balls moves neither ball centre — becomes ~1e-17. On a light part that is the whole error:
the constraint force λ (~1 N) then leaks ε·λ into an equation whose inertia is ~1e-10, and
this reference was itself 1e-11 – 2e-10 off the exact answer on the RSSR of
docs/dynamics.md with a 1e-5 kg coupler. Instead the tree's own data in double — each
joint's placement and its joint transform and motion subspace at q (Pinocchio's
``jointPlacements`` and ``data.joints[i].M``, ``.S`` after ``forwardKinematics``), the
frame placements and ``A_e``, ``B_e`` — are composed in 50 digits: the Jacobian column of an
ancestor joint j in frame f is ``Ad(T_f_j) S_j`` with ``T_f_j`` exact for those data, so a
column that is zero by construction is zero. ``P_e`` is the double-precision annihilator
(the same row basis as the drift) projected to ``P_e S_e = 0`` in 50 digits, and
``S_e⁺ = (S_eᵀS_e)⁻¹S_eᵀ``. The drift γ stays in double: its rounding moves the particular
solution ``a_p`` within the row space of J, which the light directions are orthogonal to.

**Acceleration level.** ``d/dt X = −ad(V_rel) X`` gives
``V̇_rel = J_rel v̇_T + γ₆``, ``γ₆ = a⁰_c − X a⁰_b + V_rel × (X V_b)`` with ``a⁰`` the LOCAL
spatial frame accelerations at zero joint acceleration
(``pin.forwardKinematics(model, data, q, v, 0)``; Featherstone 2008 §2.11, Pinocchio
"frame acceleration"). Differentiating ``V_rel − S_e q̇_e = 0`` gives
``P_e J_rel a_T = −P_e (γ₆ − Ṡ_e q̇_e)`` and ``q̈_e = K_e a_T + S_e⁺(γ₆ − Ṡ_e q̇_e)``; the
time derivative of ``[P_e; S_e⁺]`` multiplies a vanishing quantity and drops out.

**Coupling rows.** A linear coupling ``γ_c = Σ_k c_k q_k + offset = 0`` between
1-coordinate joints (``q̇_k = v_k``) gives ``Σ_k c_k v_k = 0`` and ``Σ_k c_k a_k = 0``. A
coupled tree coordinate enters its column directly; a coupled cut coordinate enters through
its rate row (``v_e = K_e v_T``, ``a_e = K_e a_T + S_e⁺(γ₆ − Ṡ_e q̇_e)``), so each coupling is
one more physical row ``g_c = c_T + c_C K`` with drift ``Σ_{k∈C} c_k S⁺(γ₆ − Ṡ q̇)_k``
(:func:`coupling_rows`; the Pinocchio reference uses the same rows).

**Solve (Nocedal & Wright 2006, §16.2, null-space method).** With the cut coordinates
eliminated by their rate rows, the KKT system ``[M Jᵀ; J 0][a; −λ] = [τ − h; −γ]`` over all
coordinates (cut coordinates massless) reduces to the tree: with J the stacked physical
rows (m × nv_T) and its SVD ``J = U Σ Vᵀ`` truncated at ``σ_i > 1e-9 σ₁`` (redundant rows,
e.g. the out-of-plane rows of planar loops, are honoured in the least-squares sense),

    a_p = −V_r Σ_r⁻¹ U_rᵀ γ,   Z = null-space basis (nv_T × d),
    (Zᵀ M_T Z) w = Zᵀ (τ_T − h_T − M_T a_p) + (K Z)ᵀ τ_C,   a_T* = a_p + Z w.

Everything from the SVD on runs in ``mpmath`` with ``mp.dps = 50``. The SVD is taken
from the symmetric eigen-decomposition of the smaller Gram matrix (``JᵀJ`` or ``JJᵀ``,
``σ² = λ``), which costs far fewer multiprecision operations than ``mp.svd_r`` on the
rectangular J; squaring the condition number loses at most 2·9 of the 50 digits for the
retained singular values. The null-space basis is the orthogonal complement of the
retained right singular vectors (Householder reflections, Golub & Van Loan §5.2).

**State.** The velocity is not taken from our lift either: ``v* = Z_f (Z_f[ind])⁻¹ u`` with
``Z_f = [Z; K Z]`` the reference's own null space over all coordinates (``ind``: the
partition's independent v-indices), then the double-precision terms are evaluated at v*.

**Pieces.** :func:`problem` assembles the data (50-digit rows; double drift, terms,
efforts, v*), :func:`accelerations` solves it in 50 digits (:func:`solve` is the two);
for the reference-sensitivity study (docs/repro.md) :func:`accelerations` also takes
another basis of the rows (a subset, a recombination), and :func:`accelerations_double`
is the same solve in float64.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import mpmath
import numpy as np
import pinocchio as pin

from rbc.ir import spatial as sp
from rbc.model.couplings import coupling_terms
from rbc.model.dynamics import (
    DynamicsData,
    DynamicsModel,
    Wrench,
    passive_efforts,
    tree_terms,
    wrench_efforts,
)
from rbc.model.interfaces import port_jacobian

#: Working precision of the reference [decimal digits] (DESIGN.md §6).
DPS = 50
#: Singular values of J above this fraction of σ₁ are retained (DESIGN.md §6): row
#: dependencies that hold exactly in exact arithmetic appear as σ ≈ 1e-16 σ₁ in double input.
SVD_RTOL = 1e-9


def _mul(A: mpmath.matrix, B: mpmath.matrix) -> mpmath.matrix:
    """``A · B`` for mpmath matrices: each entry one ``fdot`` over the non-zero entries of
    A's row (the same products mpmath sums, at the caller's working precision).

    mpmath keeps a matrix as the dict of its non-zero entries (``matrix._data``), but its
    product visits every index triple through a generator of dictionary look-ups (about
    17 µs per product); here A's rows are read from its entries once, B's columns as lists,
    and each entry is one ``fdot`` over two lists (about 1.7 µs per product: the ring of
    five humanoids' ``Zᵀ M_T Z``, 60 × 235 · 235 × 60, from 11 s to about 1 s).
    """
    if A.cols != B.rows:
        raise ValueError(f"dimensions not compatible for multiplication: {A.rows}×{A.cols} "
                         f"· {B.rows}×{B.cols}")
    zero = mpmath.mpf(0)
    rows: dict[int, list] = {}
    for (i, k), a in A._data.items():
        rows.setdefault(i, []).append((k, a))
    bd = B._data
    cols = [[bd.get((k, j), zero) for k in range(B.rows)] for j in range(B.cols)]
    C = mpmath.matrix(A.rows, B.cols)
    for i, entries in rows.items():
        entries.sort(key=lambda e: e[0])
        ks = [k for k, _ in entries]
        avals = [a for _, a in entries]
        for j, col in enumerate(cols):
            x = mpmath.fdot(zip(avals, [col[k] for k in ks], strict=True))
            if x:
                C[i, j] = x
    return C


def _lu_solve(A: mpmath.matrix, b: mpmath.matrix) -> mpmath.matrix:
    """x with ``A x = b`` (A square, b n × k) by Gaussian elimination with scaled partial
    pivoting (Golub & Van Loan 2013 §3.4; row scales taken once) on Python lists, at the
    caller's precision plus 10 guard bits (as ``mpmath.lu_solve``). mpmath's own LU goes
    through per-entry matrix indexing and recomputes every row sum at every column: 10 s for
    one 60 × 60 system of the ring of five humanoids.

    Raises:
        ZeroDivisionError: A is numerically singular (a pivot ≤ ‖A‖₁ ε), as mpmath.
    """
    n, k = A.rows, b.cols
    with mpmath.workprec(mpmath.mp.prec + 10):
        rows = [[A[i, j] for j in range(n)] + [b[i, c] for c in range(k)] for i in range(n)]
        tol = max((mpmath.fsum(abs(rows[i][j]) for i in range(n)) for j in range(n)),
                  default=mpmath.mpf(0)) * mpmath.eps
        scale = [max((abs(x) for x in r[:n]), default=0) or 1 for r in rows]
        for c in range(n):
            p = max(range(c, n), key=lambda i: abs(rows[i][c]) / scale[i])
            if abs(rows[p][c]) <= tol:
                raise ZeroDivisionError("matrix is numerically singular")
            rows[c], rows[p], scale[c], scale[p] = rows[p], rows[c], scale[p], scale[c]
            piv = rows[c]
            for i in range(c + 1, n):
                r = rows[i]
                if r[c]:
                    f = r[c] / piv[c]
                    for j in range(c + 1, n + k):
                        r[j] -= f * piv[j]
        x = [[mpmath.mpf(0)] * k for _ in range(n)]
        for i in range(n - 1, -1, -1):
            r = rows[i]
            for c in range(k):
                x[i][c] = (r[n + c] - mpmath.fsum(r[j] * x[j][c] for j in range(i + 1, n))
                           ) / r[i]
    out = mpmath.matrix(n, k)
    for i in range(n):
        for c in range(k):
            out[i, c] = x[i][c]
    return out


class ReferenceMismatch(ValueError):
    """The reference's constraint rows disagree with the partition (mobility differs)."""


@dataclass(frozen=True, eq=False)
class CutRows:
    """Constraint rows of all cut joints at one configuration (tree columns, rbc order).

    Attributes:
        J: (m, nv_T) physical rows ``P_e J_rel`` [rad/s, m/s per unit v], rounded from Jm.
        K: (nv_C, nv_T) rate rows: cut-coordinate speeds from tree speeds, rounded from Km.
        cut_cols: (nv_C,) v-indices of the cut coordinates in the order of K.
        Jm, Km: the same rows in 50 digits (mp matrices; module docstring).
        q: (nq,) the configuration they were evaluated at (a nonlinear coupling's
            gradient Dγ(q) needs it).
    """

    J: np.ndarray
    K: np.ndarray
    cut_cols: np.ndarray
    Jm: mpmath.matrix | None = None
    Km: mpmath.matrix | None = None
    q: np.ndarray | None = None


def chord_hosts(dm: DynamicsModel, e: int
                ) -> tuple[tuple[int, pin.SE3, pin.SE3], tuple[int, pin.SE3, pin.SE3]]:
    """``((joint_b, T_jointb_bodyb, A_e), (joint_c, T_jointc_bodyc, B_e))`` of cut edge e in
    the tree model: each side's Pinocchio joint, its body frame there, the cut frame on it."""
    t, k = dm.tree, dm.kin

    def host(v: int) -> tuple[int, pin.SE3]:
        if v == k.n_bodies:
            return 0, pin.SE3.Identity()
        f = t.model.frames[int(t.body_frame[v])]
        return int(f.parentJoint), f.placement

    return ((*host(int(k.parent[e])), k.A[e]), (*host(int(k.child[e])), k.B[e]))


def chord_frames(dm: DynamicsModel, e: int) -> tuple[int, pin.SE3, int, pin.SE3]:
    """``(joint_b, T_jointb_Jb, joint_c, T_jointc_Jc)`` of cut edge e in the tree model."""
    (jb, Tb, A), (jc, Tc, B) = chord_hosts(dm, e)
    return jb, Tb * A, jc, Tc * B


def annihilator(S: np.ndarray) -> np.ndarray:
    """(6 − nv, 6) orthonormal rows P with ``P S = 0``."""
    U = np.linalg.svd(S, full_matrices=True)[0]
    return U[:, S.shape[1]:].T


# ------------------------------------------------------- 50-digit tree kinematics (rows)

_Pose = tuple  # (R 3×3, p 3): a rigid transform as nested lists of mpf (50 digits)


def _pose(M: pin.SE3) -> _Pose:
    return ([[mpmath.mpf(float(x)) for x in row] for row in M.rotation],
            [mpmath.mpf(float(x)) for x in M.translation])


def _rotate(R: list, x: list) -> list:
    return [mpmath.fdot(R[i], x) for i in range(3)]


def _compose(a: _Pose, b: _Pose) -> _Pose:
    (Ra, pa), (Rb, pb) = a, b
    cols = [[Rb[0][j], Rb[1][j], Rb[2][j]] for j in range(3)]
    return ([[mpmath.fdot(Ra[i], cols[j]) for j in range(3)] for i in range(3)],
            [x + y for x, y in zip(_rotate(Ra, pb), pa, strict=True)])


def _inverse(a: _Pose) -> _Pose:
    R, p = a
    Rt = [[R[0][i], R[1][i], R[2][i]] for i in range(3)]
    return Rt, [-x for x in _rotate(Rt, p)]


def _act(a: _Pose, m: list) -> list:
    """A linear-first twist ``[v; ω]`` (6 mpf) moved by the transform a: ``[R v + p × Rω; Rω]``."""
    R, p = a
    w = _rotate(R, m[3:])
    v = _rotate(R, m[:3])
    return [v[0] + p[1] * w[2] - p[2] * w[1], v[1] + p[2] * w[0] - p[0] * w[2],
            v[2] + p[0] * w[1] - p[1] * w[0], *w]


def _tree_poses(model: pin.Model, pd: pin.Data) -> tuple[list[_Pose], list[list[list]]]:
    """World poses of the joints composed in 50 digits from ``jointPlacements`` and the joint
    transforms at the q of the last ``forwardKinematics``, and each joint's motion subspace
    columns (linear-first, joint frame)."""
    poses: list[_Pose] = [([[mpmath.mpf(int(i == j)) for j in range(3)] for i in range(3)],
                           [mpmath.mpf(0)] * 3)]
    subspaces: list[list[list]] = [[]]
    for i in range(1, model.njoints):
        jd = pd.joints[i]
        poses.append(_compose(_compose(poses[model.parents[i]], _pose(model.jointPlacements[i])),
                              _pose(jd.M)))
        S = np.asarray(jd.S, dtype=float).reshape(6, -1)
        subspaces.append([[mpmath.mpf(float(x)) for x in S[:, c]] for c in range(S.shape[1])])
    return poses, subspaces


def _frame_columns(model: pin.Model, poses: list[_Pose], subspaces: list[list[list]],
                   joint: int, placement: _Pose) -> tuple[dict[int, list], _Pose]:
    """LOCAL linear-first Jacobian columns ``{pin v-index: [v; ω]}`` (ancestors only) of the
    frame ``placement`` on ``joint``, and the frame's world pose, in 50 digits: the column
    block of ancestor j is ``Ad(T_f_j) S_j``."""
    oMf = _compose(poses[joint], placement)
    fMo = _inverse(oMf)
    cols: dict[int, list] = {}
    j = joint
    while j > 0:
        T = _compose(fMo, poses[j])
        for c, s_col in enumerate(subspaces[j]):
            cols[model.joints[j].idx_v + c] = _act(T, s_col)
        j = model.parents[j]
    return cols, oMf


def _exact_split(S: np.ndarray) -> tuple[list[list], list[list]]:
    """``(P_e, S_e⁺)`` rows in 50 digits for the cut joint's motion subspace S (6, nv_e): the
    double annihilator projected onto ``P S = 0``, and ``(SᵀS)⁻¹Sᵀ``."""
    def rows(m: mpmath.matrix) -> list[list]:
        return [[m[i, j] for j in range(m.cols)] for i in range(m.rows)]

    P = annihilator(S)
    if not S.shape[1]:
        return rows(_mp(P)), []
    Sm = _mp(S)
    Splus = mpmath.inverse(Sm.T * Sm) * Sm.T
    return (rows(_mp(P) - (_mp(P) * Sm) * Splus) if P.shape[0] else []), rows(Splus)


def _rows_matrix(rows: list[list], cols: int) -> mpmath.matrix:
    return mpmath.matrix(rows) if rows else mpmath.matrix(0, cols)


def cut_rows(dm: DynamicsModel, data: DynamicsData, q: np.ndarray) -> CutRows:
    """Physical and rate rows of every cut joint at q, in 50 digits and rounded (module
    docstring)."""
    k, t = dm.kin, dm.tree
    pd = data.pin_data
    pin.forwardKinematics(t.model, pd, t.q_pin(q[: k.nq_tree]))
    nt = k.nv_tree
    rbc_column = [int(c) for c in t.v_perm]  # v_pin = v_tree[v_perm]
    phys: list[list] = []
    rates: list[list] = []
    cut_cols: list[int] = []
    with mpmath.workdps(DPS):
        zero = mpmath.mpf(0)
        poses, subspaces = _tree_poses(t.model, pd)
        for e in k.chord_edges:
            (jb, Tb, A), (jc, Tc, B) = chord_hosts(dm, e)
            Jb, oMb = _frame_columns(t.model, poses, subspaces, jb,
                                     _compose(_pose(Tb), _pose(A)))
            Jc, oMc = _frame_columns(t.model, poses, subspaces, jc,
                                     _compose(_pose(Tc), _pose(B)))
            X = _compose(_inverse(oMc), oMb)
            rel = dict(Jc)  # J_rel = J_c − Ad(T_Jc_Jb) J_b, column by column
            for c, col in Jb.items():
                rel[c] = [a - b for a, b in zip(rel.get(c, [zero] * 6), _act(X, col),
                                                strict=True)]
            rel = {rbc_column[c]: col[3:] + col[:3] for c, col in rel.items()}  # angular-first
            P, Splus = _exact_split(k.kinds[e].motion_subspace(q[k.q_slice(e)]))
            for out, basis in ((phys, P), (rates, Splus)):
                for b in basis:
                    row = [zero] * nt
                    for c, col in rel.items():
                        row[c] = mpmath.fdot(b, col)
                    out.append(row)
            cut_cols.extend(range(k.v_slice(e).start, k.v_slice(e).stop))
        Jm, Km = _rows_matrix(phys, nt), _rows_matrix(rates, nt)
        return CutRows(_np(Jm).reshape(Jm.rows, nt), _np(Km).reshape(Km.rows, nt),
                       np.array(cut_cols, dtype=np.int64), Jm, Km, np.asarray(q, dtype=float))


def cut_drift(dm: DynamicsModel, data: DynamicsData, q: np.ndarray, v: np.ndarray
              ) -> tuple[np.ndarray, np.ndarray]:
    """``(P_e(γ₆ − Ṡq̇_e), S_e⁺(γ₆ − Ṡq̇_e))`` stacked over the cut joints at (q, v).

    Args:
        v: (nv,) all speeds (tree part and cut-coordinate part).
    """
    k, t = dm.kin, dm.tree
    pd = data.pin_data
    nt = k.nv_tree
    pin.forwardKinematics(t.model, pd, t.q_pin(q[: k.nq_tree]), t.v_pin(v[:nt]),
                          np.zeros(t.model.nv))
    phys, rate = [], []
    for e in k.chord_edges:
        jb, Pb, jc, Pc = chord_frames(dm, e)
        X = (pd.oMi[jc] * Pc).inverse() * (pd.oMi[jb] * Pb)
        Vb, Vc = Pb.actInv(pd.v[jb]), Pc.actInv(pd.v[jc])
        XVb = X.act(Vb)
        g6 = Pc.actInv(pd.a[jc]) - X.act(Pb.actInv(pd.a[jb])) + (Vc - XVb).cross(XVb)
        qe, ve = q[k.q_slice(e)], v[k.v_slice(e)]
        kind = k.kinds[e]
        g = sp.from_pinocchio_motion(np.asarray(g6.vector)) - kind.motion_subspace_rate(qe, ve)
        S = kind.motion_subspace(qe)
        phys.append(annihilator(S) @ g)
        rate.append(np.linalg.pinv(S) @ g)
    return _stack(phys), _stack(rate)


def coupling_rows(dm: DynamicsModel, rows: CutRows, rate_drift: np.ndarray | None = None,
                  v: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Coupling rows over the tree coordinates and their drift (module docstring).

    A coupling's row ``Dγ(q)`` over all coordinates (:mod:`rbc.model.couplings`) acts on the
    tree accelerations directly and on the cut coordinates through their rate rows:
    ``Dγ a + vᵀD²γ v = 0`` with ``a_C = K a_T + rate_drift``.

    Args:
        rows: the cut-joint rows at q (their rate rows K carry coupled cut coordinates).
        rate_drift: (nv_C,) ``S⁺(γ₆ − Ṡ q̇)`` of the cut coordinates at (q, v) (the second
            value of :func:`cut_drift`), or None for the rows only.
        v: (nv,) the speeds, for the curvature ``vᵀ D²γ v`` of nonlinear couplings (needed
            with ``rate_drift`` when the model has any).

    Returns:
        ``(G (n_c, nv_T), γ_c (n_c,))`` with ``G a_T = −γ_c`` (γ_c = 0 when rate_drift is
        None).

    Raises:
        ValueError: rate_drift given without v on a model with nonlinear couplings.
    """
    k = dm.kin
    if rate_drift is not None and v is None and any(not f.linear for f in k.coupling_forms):
        raise ValueError("coupling_rows: nonlinear couplings need the speeds v for their "
                         "curvature term")
    CT, CC = coupling_coefficients(dm, rows)
    G = CT + CC @ rows.K if CC.size else CT
    gamma = CC @ rate_drift if rate_drift is not None and CC.size else np.zeros(CT.shape[0])
    if rate_drift is not None and v is not None:  # + vᵀ D²γ v (zero for linear couplings)
        q = rows.q if rows.q is not None else np.zeros(k.nq)
        gamma = gamma + coupling_terms(k.coupling_forms, k.nv, q, v)[2]
    return G, gamma


def coupling_coefficients(dm: DynamicsModel, rows: CutRows) -> tuple[np.ndarray, np.ndarray]:
    """The couplings' gradients ``Dγ(q)`` split ``(C_T (n_c, nv_T), C_C (n_c, nv_C))`` on the
    tree and cut coordinates (the latter in the order of ``rows.K``): ``G = C_T + C_C K``;
    constant coefficients for linear couplings."""
    k = dm.kin
    cut = {int(j): n for n, j in enumerate(rows.cut_cols)}
    q = rows.q if rows.q is not None else np.zeros(k.nq)
    _, D, _ = coupling_terms(k.coupling_forms, k.nv, q)  # Dγ(q): constant when linear
    CT = np.zeros((len(k.coupling_forms), k.nv_tree))
    CC = np.zeros((len(k.coupling_forms), rows.cut_cols.size))
    for c, form in enumerate(k.coupling_forms):
        for vi in sorted(set(form.v_index)):
            if vi < k.nv_tree:
                CT[c, vi] += D[c, vi]
            else:
                CC[c, cut[vi]] += D[c, vi]
    return CT, CC


def _stack(xs: list[np.ndarray]) -> np.ndarray:
    return np.concatenate(xs) if xs else np.zeros(0)


# ------------------------------------------------------------------ 50-digit linear algebra

def _mp(a: np.ndarray) -> mpmath.matrix:
    """Exact conversion of a float64 array (1-D → column) to an mp matrix."""
    a = np.asarray(a, dtype=float)
    return mpmath.matrix(a.reshape(a.shape[0], -1).tolist()) if a.size else mpmath.matrix(
        a.shape[0] if a.ndim else 0, 1)


def _np(a: mpmath.matrix) -> np.ndarray:
    return np.array([[float(a[i, j]) for j in range(a.cols)] for i in range(a.rows)])


def _cols(A: mpmath.matrix, idx: list[int]) -> mpmath.matrix:
    out = mpmath.matrix(A.rows, len(idx))
    for n, j in enumerate(idx):
        for i in range(A.rows):
            out[i, n] = A[i, j]
    return out


def _rows(A: mpmath.matrix, idx: list[int]) -> mpmath.matrix:
    return _cols(A.T, idx).T


def _complement(V: mpmath.matrix) -> mpmath.matrix:
    """Orthonormal basis (n × (n − r)) of the complement of the orthonormal columns V (n × r).

    Householder QR of V (Golub & Van Loan 2013, §5.2); the complement is ``Q[:, r:]``.
    """
    n, r = V.rows, V.cols
    A = V.copy()
    vs = []
    for j in range(r):
        x = [A[i, j] for i in range(j, n)]
        alpha = -mpmath.sign(x[0] or 1) * mpmath.sqrt(mpmath.fsum(xi * xi for xi in x))
        w = [x[0] - alpha, *x[1:]]
        ww = mpmath.fsum(wi * wi for wi in w)
        vs.append((j, w, ww))
        for c in range(j, r):
            s = 2 * mpmath.fdot(w, [A[i, c] for i in range(j, n)]) / ww
            for i in range(j, n):
                A[i, c] -= s * w[i - j]
    Z = mpmath.matrix(n, n - r)
    for c in range(n - r):
        Z[r + c, c] = 1
    for j, w, ww in reversed(vs):
        for c in range(n - r):
            s = 2 * mpmath.fdot(w, [Z[i, c] for i in range(j, n)]) / ww
            for i in range(j, n):
                Z[i, c] -= s * w[i - j]
    return Z


@dataclass(frozen=True, eq=False)
class NullSpace:
    """Truncated SVD of the physical rows in 50 digits.

    Attributes:
        U, s, V: retained left/right singular vectors and singular values (mp).
        Z: (nv_T, d) orthonormal null-space basis (mp); rank: retained rows.
    """

    U: mpmath.matrix
    s: list
    V: mpmath.matrix
    Z: mpmath.matrix
    rank: int


#: Above this many rows and columns (min(m, n)) the null space is taken by sparse
#: elimination (:func:`null_space_elimination`) instead of the Gram eigen-decomposition,
#: whose dense O(n³) multiprecision sweeps dominate for composed systems (two humanoids
#: holding hands, 91 × 94 rows: 220 s per state by the eigen-decomposition, 1.4 s by
#: elimination, on a loaded 2-core machine). Every shipped single robot stays below it
#: (the largest, the humanoid: 32 × 47).
ELIMINATION_SIZE = 60


def null_space(J: np.ndarray | mpmath.matrix) -> NullSpace:
    """Truncated SVD and null space of J (m × n; float64, or the 50-digit rows of
    :func:`cut_rows`) at ``mp.dps = DPS`` (module docstring); large sparse J by
    :func:`null_space_elimination`."""
    is_mp = isinstance(J, mpmath.matrix)
    m, n = (J.rows, J.cols) if is_mp else J.shape
    if min(m, n) > ELIMINATION_SIZE:
        return null_space_elimination(J)
    with mpmath.workdps(DPS):
        Jm = J if is_mp else _mp(J)
        if m == 0:
            return NullSpace(mpmath.matrix(0, 0), [], mpmath.matrix(n, 0),
                             mpmath.eye(n), 0)
        small_right = n <= m
        G = _mul(Jm.T, Jm) if small_right else _mul(Jm, Jm.T)
        lam, Q = mpmath.eigsy(G)
        order = sorted(range(G.rows), key=lambda i: -lam[i])
        lmax = lam[order[0]]
        keep = [i for i in order if lam[i] > (SVD_RTOL ** 2) * lmax and lmax > 0]
        s = [mpmath.sqrt(lam[i]) for i in keep]
        r = len(keep)
        Qk = _cols(Q, keep)
        inv_s = mpmath.diag([1 / x for x in s]) if r else mpmath.matrix(0, 0)
        if small_right:
            V, U = Qk, (_mul(_mul(Jm, Qk), inv_s) if r else mpmath.matrix(m, 0))
            Z = _cols(Q, [i for i in order if i not in keep])
        else:
            U, V = Qk, (_mul(_mul(Jm.T, Qk), inv_s) if r else mpmath.matrix(n, 0))
            Z = _complement(V) if r else mpmath.eye(n)
        return NullSpace(U, s, V, Z, r)


def null_space_elimination(J: np.ndarray | mpmath.matrix) -> NullSpace:
    """Null space and a particular-solution operator of J (m × n; float64 or 50-digit) by
    sparse Gaussian elimination in ``mp.dps = DPS`` arithmetic (Golub & Van Loan 2013 §3.2,
    §3.4).

    Rows are eliminated one at a time — next the remaining row with the fewest entries (less
    fill), its largest entry the pivot (rook pivoting within the row). A row whose largest
    remaining entry is below ``SVD_RTOL·max|J|`` is dependent and dropped (the out-of-plane
    rows of planar loops). With r pivots (rows R, columns P) the null space is spanned by
    ``Z = [−R_P⁻¹ R_F; I]`` over the free columns F (not orthonormal), and
    ``a_p = −R_P⁻¹ γ̃_R`` (zero on F, γ̃ the eliminated right-hand side) is a particular
    solution. It is returned in the fields of :class:`NullSpace` so that
    :func:`accelerations` reads it unchanged: ``U`` selects the pivot rows, ``s = 1``, ``V``
    is ``R_P⁻¹`` on the columns P, and :meth:`_Eliminated.reduce` maps γ to γ̃. The KKT
    solution a* is unique, so it does not depend on the basis (the two methods give the same
    a* rounded to double on the shipped records: tests/verify/test_kkt50_elimination.py).
    """
    is_mp = isinstance(J, mpmath.matrix)
    m, n = (J.rows, J.cols) if is_mp else J.shape
    with mpmath.workdps(DPS):
        mpf = mpmath.mpf
        rows = [{j: (J[i, j] if is_mp else mpf(float(J[i, j]))) for j in range(n)
                 if J[i, j] != 0} for i in range(m)]
        tol = SVD_RTOL * max((abs(x) for r in rows for x in r.values()), default=mpf(0))
        col_rows: dict[int, set[int]] = {}
        for i, r in enumerate(rows):
            for j in r:
                col_rows.setdefault(j, set()).add(i)
        pivots: list[tuple[int, int]] = []
        ops: list[tuple[int, int, object]] = []  # b[k] -= factor · b[i], in order
        done: set[int] = set()
        while True:
            live = [i for i in range(m) if i not in done and rows[i]]
            if not live:
                break
            i = min(live, key=lambda k: (len(rows[k]), k))
            done.add(i)
            r = rows[i]
            j, pv = max(r.items(), key=lambda kv: (abs(kv[1]), -kv[0]))
            if abs(pv) <= tol:  # a dependent row
                continue
            pivots.append((i, j))
            for k in sorted(col_rows.get(j, ())):
                if k in done:
                    continue
                rk = rows[k]
                factor = rk[j] / pv
                ops.append((k, i, factor))
                for c, x in r.items():
                    y = rk.get(c)
                    val = -factor * x if y is None else y - factor * x
                    if c == j or val == 0:
                        if c in rk:
                            del rk[c]
                            col_rows[c].discard(k)
                    else:
                        if y is None:
                            col_rows.setdefault(c, set()).add(k)
                        rk[c] = val
        # back substitution: a pivot row holds its own pivot column, later pivots' columns
        # and free columns only, so the pivot variables resolve in reverse order
        pos = {j: t for t, (_, j) in enumerate(pivots)}
        free = [j for j in range(n) if j not in pos]
        r_ = len(pivots)
        Z = mpmath.matrix(n, len(free))
        for c, jf in enumerate(free):
            Z[jf, c] = 1
        Rinv = mpmath.matrix(n, r_)
        for t in range(r_ - 1, -1, -1):
            i, j = pivots[t]
            r = rows[i]
            pv = r[j]
            others = [(cc, x) for cc, x in r.items() if cc != j]
            for c in range(len(free)):
                Z[j, c] = -mpmath.fsum(x * Z[cc, c] for cc, x in others) / pv
            for s_ in range(t, r_):
                acc = mpmath.fsum(x * Rinv[cc, s_] for cc, x in others)
                Rinv[j, s_] = ((1 if s_ == t else 0) - acc) / pv
        U = mpmath.matrix(m, r_)
        for t, (i, _) in enumerate(pivots):
            U[i, t] = 1
        return _Eliminated(U, [mpf(1)] * r_, Rinv, Z, r_, tuple(ops))


@dataclass(frozen=True, eq=False)
class _Eliminated(NullSpace):
    """A :class:`NullSpace` from :func:`null_space_elimination`, with the elimination's row
    operations (the right-hand sides of the eliminated rows are combinations of γ)."""

    ops: tuple = ()

    def reduce(self, gamma: mpmath.matrix) -> mpmath.matrix:
        """γ (m × 1, mp) → the eliminated right-hand side γ̃."""
        with mpmath.workdps(DPS):
            b = gamma.copy()
            for k, i, factor in self.ops:
                b[k] -= factor * b[i]
            return b


@dataclass(frozen=True, eq=False)
class KKTSolution:
    """Reference solution at one state.

    Attributes:
        a: (nv_T,) tree accelerations a* [rad/s², m/s²] (rounded from 50 digits).
        v: (nv,) the reference's own speeds v* for the given u.
        rank: rank of the physical rows; velocity_residual: ‖J v*_T‖∞ in double.
    """

    a: np.ndarray
    v: np.ndarray
    rank: int
    velocity_residual: float


@dataclass(frozen=True, eq=False)
class KKTProblem:
    """The reference's double-precision data at one state: everything the solve starts
    from (module docstring), at the reference's own speeds v*.

    Attributes:
        rows: the cut-joint rows at q; J: (m, nv_T) physical and coupling rows;
        gamma: (m,) their drift (``J a_T = −γ``); ns: the 50-digit null space of J;
        M: (nv_T, nv_T) ``M_T``; h: (nv_T,) ``h_T``; tau: (nv,) every effort (gravity,
        passive, wrenches, ports) over all coordinates; v: (nv,) v*.
    """

    rows: CutRows
    J: np.ndarray
    gamma: np.ndarray
    ns: NullSpace
    M: np.ndarray
    h: np.ndarray
    tau: np.ndarray
    v: np.ndarray


def reference_rows(dm: DynamicsModel, rows: CutRows) -> mpmath.matrix:
    """The 50-digit physical and coupling rows (m × nv_T) whose null space the reference
    takes (module docstring)."""
    nt = dm.kin.nv_tree
    CT, CC = coupling_coefficients(dm, rows)
    with mpmath.workdps(DPS):
        Gm = _mp(CT) + _mul(_mp(CC), rows.Km) if CC.size else _mp(CT)
        return _rows_matrix(
            [[m[i, j] for j in range(nt)] for m in (rows.Jm, Gm) for i in range(m.rows)], nt)


def problem(dm: DynamicsModel, data: DynamicsData, q: np.ndarray, u: np.ndarray,
            independent: np.ndarray, f: np.ndarray | None = None,
            wrenches: tuple[Wrench, ...] = ()) -> KKTProblem:
    """The reference's data at (q, u) with port efforts f and external wrenches.

    Args:
        q: (nq,) closed configuration; u: (n_u,) independent speeds of the v-indices
            ``independent``; f: (n_act,) port efforts [N·m | N]; wrenches: world wrenches.

    Raises:
        ReferenceMismatch: the null space of the reference rows has a dimension other than
            n_u, or the independent coordinates do not parametrize it.
    """
    k = dm.kin
    nt = k.nv_tree
    rows = cut_rows(dm, data, q)
    G, _ = coupling_rows(dm, rows)
    J = np.vstack([rows.J, G])
    ns = null_space(reference_rows(dm, rows))
    ind = [int(j) for j in independent]
    if ns.Z.cols != len(ind):
        raise ReferenceMismatch(
            f"{k.record.source}: the cut-joint rows leave {ns.Z.cols} degrees of freedom, the "
            f"partition has {len(ind)} independent speeds")
    with mpmath.workdps(DPS):
        Zf = mpmath.matrix(k.nv, ns.Z.cols)
        KZ = _mul(rows.Km, ns.Z) if rows.K.size else mpmath.matrix(0, ns.Z.cols)
        for i in range(nt):
            for c in range(ns.Z.cols):
                Zf[i, c] = ns.Z[i, c]
        for n, j in enumerate(rows.cut_cols):
            for c in range(ns.Z.cols):
                Zf[int(j), c] = KZ[n, c]
        coef = _lu_solve(_rows(Zf, ind), _mp(np.asarray(u, dtype=float))) if ind else (
            mpmath.matrix(0, 1))
        v = _np(_mul(Zf, coef)).ravel() if ind else np.zeros(k.nv)
    tt = tree_terms(dm, data, q, v)
    tau, coul = passive_efforts(dm, q, v)
    tau = tau + coul
    tau[:nt] -= tt.g
    if wrenches:
        tau += wrench_efforts(dm, q, wrenches)
    if f is not None:
        tau += port_jacobian(k, q).T @ np.asarray(f, dtype=float)
    gamma, rate = cut_drift(dm, data, q, v)
    gamma = np.concatenate([gamma, coupling_rows(dm, rows, rate, v)[1]])
    return KKTProblem(rows, J, gamma, ns, tt.M, tt.h, tau, v)


def with_rows(dm: DynamicsModel, p: KKTProblem, A: np.ndarray, drift: np.ndarray
              ) -> KKTProblem:
    """The problem with extra velocity rows ``A_T a_T = −drift`` appended to its physical
    rows and a new 50-digit null space of the stack — nonholonomic rows such as rolling
    (:mod:`rbc.model.rolling`), supplied in double by the caller and checked by it on their
    own (finite differences). The state ``p.v`` must satisfy ``A v = 0`` (pass independent
    speeds u that do); the rows must not touch cut coordinates.

    Args:
        A: (k, nv) rows over all coordinates (cut columns zero); drift: (k,) ``Ȧ v*``.

    Raises:
        ReferenceMismatch: A has nonzero entries in cut-coordinate columns.
    """
    nt = dm.kin.nv_tree
    A = np.asarray(A, dtype=float)
    if A.shape[1] > nt and np.any(A[:, nt:]):
        raise ReferenceMismatch("extra rows touch cut coordinates")
    with mpmath.workdps(DPS):
        Jm = reference_rows(dm, p.rows)
        stacked = _rows_matrix([[Jm[i, j] for j in range(nt)] for i in range(Jm.rows)]
                               + [[mpmath.mpf(float(x)) for x in row[:nt]] for row in A], nt)
    return replace(p, J=np.vstack([p.J, A[:, :nt]]),
                   gamma=np.concatenate([p.gamma, np.asarray(drift, dtype=float)]),
                   ns=null_space(stacked))


def _combined(p: KKTProblem, basis: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """``(B J, B γ)`` for a row basis B (k, m); ``(J, γ)`` when None."""
    if basis is None:
        return p.J, p.gamma
    B = np.asarray(basis, dtype=float)
    return B @ p.J, B @ p.gamma


def accelerations(p: KKTProblem, basis: np.ndarray | None = None) -> np.ndarray:
    """Tree accelerations a* (nv_T,) solved in 50 digits (module docstring).

    Args:
        basis: (k, m) the constraint written as ``B J a_T = −B γ`` instead of
            ``J a_T = −γ`` (default: as assembled): a row subset (rows of the identity) or
            a recombination of the rows, with its own 50-digit null space — the
            reference-sensitivity study of docs/repro.md.

    Raises:
        ReferenceMismatch: a basis that changes the mobility.
    """
    J, gamma = _combined(p, basis)
    ns = p.ns if basis is None else null_space(J)
    if ns.Z.cols != p.ns.Z.cols:
        raise ReferenceMismatch(f"the row basis leaves {ns.Z.cols} degrees of freedom, the "
                                f"assembled rows {p.ns.Z.cols}")
    nt = p.M.shape[0]
    cut = p.rows.cut_cols
    with mpmath.workdps(DPS):
        M = _mp(p.M)
        a_p = mpmath.matrix(nt, 1)
        if ns.rank:
            g = _mp(gamma)
            y = _mul(ns.U.T, ns.reduce(g) if isinstance(ns, _Eliminated) else g)
            for i in range(ns.rank):
                y[i] = -y[i] / ns.s[i]
            a_p = _mul(ns.V, y)
        Z = ns.Z
        Zt = Z.T
        rhs = _mul(Zt, _mp(p.tau[:nt] - p.h) - _mul(M, a_p))
        if cut.size:
            rhs += _mul(_mul(p.rows.Km, Z).T, _mp(p.tau[cut]))
        a = a_p
        if Z.cols:
            a = a_p + _mul(Z, _lu_solve(_mul(Zt, _mul(M, Z)), rhs))
        return _np(a).ravel()


def accelerations_double(p: KKTProblem, basis: np.ndarray | None = None) -> np.ndarray:
    """The same null-space solve in float64 (LAPACK SVD of J, ``σ > SVD_RTOL·σ₁``): the
    double-precision twin of :func:`accelerations` (same ``basis``), for the
    reference-sensitivity study (how much of a measured δ a double-precision reference
    would itself contribute)."""
    J, gamma = _combined(p, basis)
    nt = p.M.shape[0]
    if J.shape[0]:
        U, s, Vt = np.linalg.svd(J)
        r = int(np.sum(s > SVD_RTOL * s[0])) if s.size and s[0] > 0 else 0
    else:
        U, s, Vt, r = np.zeros((0, 0)), np.zeros(0), np.eye(nt), 0
    a_p = -Vt[:r].T @ ((U[:, :r].T @ gamma) / s[:r])
    Z = Vt[r:].T
    rhs = Z.T @ (p.tau[:nt] - p.h - p.M @ a_p)
    cut = p.rows.cut_cols
    if cut.size:
        rhs += (p.rows.K @ Z).T @ p.tau[cut]
    return a_p + Z @ np.linalg.solve(Z.T @ p.M @ Z, rhs) if Z.shape[1] else a_p


def solve(dm: DynamicsModel, data: DynamicsData, q: np.ndarray, u: np.ndarray,
          independent: np.ndarray, f: np.ndarray | None = None,
          wrenches: tuple[Wrench, ...] = ()) -> KKTSolution:
    """Reference forward dynamics at (q, u): :func:`problem` (same arguments, same
    errors) solved by :func:`accelerations`."""
    p = problem(dm, data, q, u, independent, f, wrenches)
    nt = dm.kin.nv_tree
    return KKTSolution(accelerations(p), p.v, p.ns.rank,
                       float(np.abs(p.J @ p.v[:nt]).max(initial=0.0)))

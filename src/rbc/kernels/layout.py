"""The flat layout: a compiled model and a partition laid out once as contiguous arrays.

The kernels read the model as data, in the spirit of MuJoCo's ``mjModel``: every per-edge,
per-body, per-chord and per-module quantity is a segment of one int64 array ``I`` or one
float64 array ``F``; the segment bounds are in ``IO`` and ``FO`` (segment k of ``I`` is
``I[IO[k]:IO[k+1]]``). Four arrays cross the Python/numba boundary whatever the model,
so a call costs the same on a four-bar and on a 210-body composed system (unboxing a tuple
of 40 arrays costs ~5 µs; four cost ~0.4 µs).

Segments (the ``I_*`` and ``F_*`` indices below; edges k, bodies x, chords i, modules m;
world = vertex ``n_bodies``):

* sizes (``I_SIZES``): nq, nv, nq_tree, nv_tree, n_bodies, n_edges, n_chords, n_couplings,
  n_u, rank (the size of the kernels' ``R_p``: the partition's rank less 3 per point chord),
  n_modules, n_springs, n_kept, n_nodes, recursion;
* edges: joint code (:data:`CODES`), q/v offsets, nv, record parent/child vertex, tree
  sign (+1 / −1, 0 for chords), whether its world columns go unread (a point chord's cut
  joint), attachment frames A, B (transform records of
  :data:`rbc.kernels.se3.TR` floats: R row-major, p), the joint's parameter record
  (:data:`rbc.kernels.joints.JP` floats: axis, second axis (universal), pitch [m/rad]
  (helical), alignment R0 (planar));
* tree: tree edges in depth-first order, per tree edge its parent tree edge (−1 at the
  world), per body its spatial inertia at the body origin (6 × 6, body axes);
* chords: edge, and per chord its columns: a compact list of global v-indices with, per
  path factor coordinate and per chord coordinate, the local column and sign (+1/−1 for
  path factors ``(j, σ)``, −1 for the chord's own coordinates; repeats add);
* point chords (``ch_point``, 1 per chord laid out as one): a chord whose cut joint is
  spherical, with its three coordinates dependent and its six rows selected by the
  partition, constrains only its ball centre. Its rows keep their six places
  (``6 i … 6 i + 5``) but another left factor (:func:`rbc.kernels.kinematics.closure`):
  rows 3–5 the ball points' relative velocity ``[−p̂_c 1] Σ σ_j g_j`` (world, p_c the ball
  centre on c) with residual ``p_c − p_b`` [m]; rows 0–2 the cut coordinates' speeds
  ``R_Jcᵀ (Σ σ_j g_j)_ω``, which give them explicitly. Its compact columns are the path
  factors' only, its rows 0–2 and its cut coordinates are left out of the modules (the
  lift fills the cut coordinates' rows of E and Ė u from rows 0–2 afterwards): ``R_p``
  loses three rows and three columns per such chord and no chord needs log6 or ``J_l⁻¹``;
* couplings: per coupling its terms (v-index, q-index, coefficient) and offset;
* partition: independent and dependent v-indices, per v-index its position among the
  independent ones (−1 else) and its position in its module's dependent block (−1 else),
  per module its selected rows and dependent columns (``R_p`` is block diagonal by module),
  the independent columns its rows touch, and the static gather maps of its ``R_p`` and
  ``R_a`` blocks from the compact C (source: index into the compact C, or ``−1 − t`` for
  coupling coefficient t; destination: row-major index into the block);
* loads: viscous, Coulomb, spring coefficients and rest values per v-index, the q-index of
  each spring, constant joint efforts, port columns, point-to-point springs;
* prescribed independent coordinates (the closer): position in u and q-index.

An extra chord — a support to the world or a link between two robots — is one more entry
in the chord segments (its parent vertex may be the world): no kernel changes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rbc.ir.record import JointEffort, SpringForce
from rbc.kernels.joints import JP, parameters
from rbc.kernels.se3 import TR
from rbc.model.compiled import CompiledModel, Partition
from rbc.model.kinematics import sparsity_pattern
from rbc.model.tree import TreeModel, inertia_tensor

#: Joint codes of the kernels (record joint type → code).
CODES = {"fixed": 0, "revolute": 1, "prismatic": 2, "helical": 3, "universal": 4,
         "cylindrical": 5, "planar": 6, "spherical": 7, "free": 8}

#: Integer segments, in order.
INT_SEGMENTS = (
    "sizes",
    "e_code", "e_qo", "e_vo", "e_nv", "e_parent", "e_child", "e_sign", "e_skip",
    "tree", "tree_up",
    "ch_edge", "ch_col_ptr", "ch_cols", "ch_term_ptr", "ch_term_v", "ch_term_local",
    "ch_term_sign", "ch_path_ptr", "ch_path_edge", "ch_point",
    "cp_ptr", "cp_v", "cp_q",
    "ind", "dep", "v_indpos", "v_deppos", "mod_ptr", "mod_rows", "mod_dep", "mod_lu_ptr",
    "mod_p_ptr", "mod_p_src", "mod_p_dst", "mod_a_ptr", "mod_a_src", "mod_a_dst",
    "mod_u_ptr", "mod_u",
    "ld_qidx", "ports", "sp_body",
    "keep_u", "keep_q",
    "mod_e_ptr", "nd_ptr", "nd_body", "nd_edge", "nd_top", "nd_base", "nd_u_ptr", "nd_u",
    "nd_c_ptr", "nd_c", "nd_e_ptr", "nd_h_ptr", "nd_d_ptr", "v_node", "v_ndrow", "u_ndpos",
)
#: Float segments, in order.
FLOAT_SEGMENTS = (
    "e_A", "e_B", "e_joint",
    "b_inertia", "gravity",
    "cp_coef", "cp_offset",
    "ld_damping", "ld_friction", "ld_stiffness", "ld_rest", "ld_effort", "armature",
    "sp_xyz", "sp_coef",
)

# Segment indices as module constants (numba freezes globals at compile time).
(I_SIZES, I_E_CODE, I_E_QO, I_E_VO, I_E_NV, I_E_PARENT, I_E_CHILD, I_E_SIGN, I_E_SKIP,
 I_TREE,
 I_TREE_UP, I_CH_EDGE, I_CH_COL_PTR, I_CH_COLS, I_CH_TERM_PTR, I_CH_TERM_V, I_CH_TERM_LOCAL,
 I_CH_TERM_SIGN, I_CH_PATH_PTR, I_CH_PATH_EDGE, I_CH_POINT, I_CP_PTR, I_CP_V, I_CP_Q, I_IND, I_DEP,
 I_V_INDPOS, I_V_DEPPOS, I_MOD_PTR, I_MOD_ROWS, I_MOD_DEP, I_MOD_LU_PTR, I_MOD_P_PTR,
 I_MOD_P_SRC, I_MOD_P_DST, I_MOD_A_PTR, I_MOD_A_SRC, I_MOD_A_DST, I_MOD_U_PTR, I_MOD_U,
 I_LD_QIDX, I_PORTS, I_SP_BODY, I_KEEP_U, I_KEEP_Q, I_MOD_E_PTR, I_ND_PTR, I_ND_BODY,
 I_ND_EDGE, I_ND_TOP, I_ND_BASE, I_ND_U_PTR, I_ND_U, I_ND_C_PTR, I_ND_C, I_ND_E_PTR, I_ND_H_PTR,
 I_ND_D_PTR, I_V_NODE, I_V_NDROW, I_U_NDPOS) = range(len(INT_SEGMENTS))
(F_E_A, F_E_B, F_E_JOINT, F_B_INERTIA, F_GRAVITY, F_CP_COEF, F_CP_OFFSET, F_LD_DAMPING,
 F_LD_FRICTION, F_LD_STIFFNESS, F_LD_REST, F_LD_EFFORT, F_ARMATURE, F_SP_XYZ,
 F_SP_COEF) = range(len(FLOAT_SEGMENTS))
# positions in the sizes segment
(S_NQ, S_NV, S_NQ_TREE, S_NV_TREE, S_NB, S_NE, S_NCH, S_NCP, S_NU, S_RANK, S_NMOD, S_NSP,
 S_NKEEP, S_NNODE, S_RECURSE) = range(15)

#: The recursion over nodes is chosen (``recursion=None``) when its multiply–add estimate is
#: at most this fraction of the dense path's (:func:`_recursion_pays`): its per-node
#: bookkeeping costs about as much again as its arithmetic (measured, one process: serial
#: four-bar chains of 10 loops — estimate ratio 0.9 — 7 % slower than dense, of 30 loops —
#: ratio 0.4 — 16 % faster; the Stewart platform, one node, ratio 1.55, 15 % slower).
RECURSION_PAYS = 0.5


class LayoutError(ValueError):
    """The model uses something the kernels do not evaluate (the reference path does)."""


@dataclass(frozen=True, eq=False)
class Layout:
    """A model and partition as four flat arrays (module docstring).

    Attributes:
        I, IO, F, FO: the int64 data, its segment bounds, the float64 data and its bounds.
        kin, part: the compiled model and partition laid out.
        n_rows: closure rows (6 per chord plus couplings); lu_size: floats of all LU blocks.
        point: the chords laid out as point chords (module docstring).
    """

    I: np.ndarray
    IO: np.ndarray
    F: np.ndarray
    FO: np.ndarray
    kin: CompiledModel
    part: Partition
    n_rows: int
    lu_size: int
    point: tuple[int, ...] = ()

    def segment(self, name: str) -> np.ndarray:
        """A named segment (a view), for tests and diagnostics."""
        if name in INT_SEGMENTS:
            k = INT_SEGMENTS.index(name)
            return self.I[self.IO[k]: self.IO[k + 1]]
        k = FLOAT_SEGMENTS.index(name)
        return self.F[self.FO[k]: self.FO[k + 1]]


def _record(T) -> np.ndarray:
    """A transform (pin.SE3) as its record (:data:`rbc.kernels.se3.TR`,): R row-major, p."""
    return np.concatenate([np.asarray(T.rotation).ravel(), np.asarray(T.translation)])


def _pack(segments: dict[str, np.ndarray], names: tuple[str, ...], dtype) -> tuple:
    parts = [np.ascontiguousarray(np.asarray(segments[n], dtype=dtype).ravel()) for n in names]
    bounds = np.zeros(len(parts) + 1, dtype=np.int64)
    bounds[1:] = np.cumsum([p.size for p in parts])
    data = np.concatenate(parts) if parts else np.zeros(0, dtype=dtype)
    # writable, so that a kernel's own copy (the parallel batch's per-thread copies) has the
    # same numba type as the original and reuses its compiled code
    return data, bounds


def _modules(kin: CompiledModel, part: Partition) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per module its selected rows and dependent columns; one block when the partition's
    dependent block is not block diagonal by the compiled modules (always correct)."""
    rows, dep = np.asarray(part.rows), np.asarray(part.dependent)
    if part.rank == 0:
        return []
    out = []
    for blk in kin.blocks:
        r = rows[np.isin(rows, blk.rows)]
        d = dep[np.isin(dep, blk.cols)]
        if r.size or d.size:
            out.append((r, d))
    square = all(r.size == d.size for r, d in out)
    covered = (sum(r.size for r, _ in out) == rows.size
               and np.unique(np.concatenate([d for _, d in out])).size == dep.size)
    if square and covered:
        P = sparsity_pattern(kin)
        owner = np.full(kin.nv, -1)
        for m, (_, d) in enumerate(out):
            owner[d] = m
        # every selected row may touch only its own module's dependent columns
        ok = all(np.all(owner[dep[P[row][dep]]] == m)
                 for m, (r, _) in enumerate(out) for row in r)
        if ok:
            return out
    return [(rows, dep)]


def point_chords(kin: CompiledModel, part: Partition) -> tuple[int, ...]:
    """The chords that can be laid out as point chords (module docstring): a spherical cut
    joint whose three coordinates are dependent and whose six rows are all selected (then
    the three angular rows determine exactly the cut coordinates, which appear in no other
    row, and eliminating them leaves the three rows of the ball centre)."""
    dep, rows = set(np.asarray(part.dependent).tolist()), set(np.asarray(part.rows).tolist())
    out = []
    for i, e in enumerate(kin.chord_edges):
        vo = int(kin.v_offset[e])
        if (kin.kinds[e].type == "spherical" and {vo, vo + 1, vo + 2} <= dep
                and set(range(6 * i, 6 * i + 6)) <= rows):
            out.append(i)
    return tuple(out)


def _strip(kin: CompiledModel, mods, point: tuple[int, ...]):
    """The modules without the point chords' rows 0–2 and cut coordinates (each module
    loses as many rows as columns: a chord's rows and its cut coordinates share a block)."""
    rows = {6 * i + k for i in point for k in range(3)}
    cols = {int(kin.v_offset[kin.chord_edges[i]]) + d for i in point for d in range(3)}
    out = []
    for r, d in mods:
        r2 = np.array([g for g in r if int(g) not in rows], dtype=np.int64)
        d2 = np.array([j for j in d if int(j) not in cols], dtype=np.int64)
        if r2.size != d2.size:  # cannot happen (the blocks are square and closed)
            raise AssertionError("point chord split across modules")
        if r2.size:
            out.append((r2, d2))
    return out


def _row_entries(kin: CompiledModel, g: int, col_ptr: list[int], cols: list[int]):
    """(source, global v-index) of every structural entry of closure row g (sources as in
    the module docstring)."""
    nch = len(kin.chord_edges)
    if g < 6 * nch:
        i, k = divmod(g, 6)
        n = col_ptr[i + 1] - col_ptr[i]
        return [(6 * col_ptr[i] + k * n + loc, cols[col_ptr[i] + loc]) for loc in range(n)]
    t0 = sum(len(r) for r in kin.coupling_rows[: g - 6 * nch])
    return [(-1 - (t0 + n), int(vi)) for n, (vi, _, _) in
            enumerate(kin.coupling_rows[g - 6 * nch])]


def _gather_maps(kin, mods, deppos, indpos, col_ptr, cols):
    """Per module the gather maps of ``R_p`` (r × r) and ``R_a`` (r × touched) and the
    touched independent columns (u-indices, in first-touch order)."""
    p_ptr, p_src, p_dst, a_ptr, a_src, a_dst, u_ptr, us = [0], [], [], [0], [], [], [0], []
    for r, d in mods:
        n = d.size
        local: dict[int, int] = {}
        for a, g in enumerate(r):
            for src, vi in _row_entries(kin, int(g), col_ptr, cols):
                if deppos[vi] >= 0:
                    p_src.append(src)
                    p_dst.append(a * n + int(deppos[vi]))
                elif indpos[vi] >= 0:
                    local.setdefault(int(indpos[vi]), len(local))
        for a, g in enumerate(r):
            for src, vi in _row_entries(kin, int(g), col_ptr, cols):
                if indpos[vi] >= 0:
                    a_src.append(src)
                    a_dst.append(a * len(local) + local[int(indpos[vi])])
        us += list(local)
        p_ptr.append(len(p_src))
        a_ptr.append(len(a_src))
        u_ptr.append(len(us))
    return p_ptr, p_src, p_dst, a_ptr, a_src, a_dst, u_ptr, us


def _nodes(kin: CompiledModel, mods, indpos, u_ptr, us, point=()) -> dict[str, np.ndarray]:
    """The articulated nodes of the lift (:mod:`rbc.kernels.articulated`): the coordinates
    grouped so that the lift E is block diagonal by group — a module's dependent coordinates
    with the independent ones its rows touch, an edge's coordinates together (union–find) —
    each group with the bodies its tree edges move (a body on a fixed edge rides with its
    tree parent). Nodes are ordered by their first body in the depth-first tree order.

    The recursion needs every node to hang from one body outside it (its base: the world or
    a body of an earlier node) and to move at least one body; otherwise no nodes are laid out
    (every node segment empty, ``n_nodes`` 0) and the kernels form and factor ``M_r``.
    """
    nv, nb = kin.nv, kin.n_bodies
    root = list(range(nv))

    def find(a: int) -> int:
        while root[a] != a:
            root[a] = root[root[a]]
            a = root[a]
        return a

    def union(a: int, b: int) -> None:
        ra, rb = find(a), find(b)
        if ra != rb:
            root[max(ra, rb)] = min(ra, rb)

    for k, kind in enumerate(kin.kinds):
        for d in range(1, kind.nv):
            union(int(kin.v_offset[k]), int(kin.v_offset[k]) + d)
    ind = np.flatnonzero(indpos >= 0)[np.argsort(indpos[indpos >= 0])]
    for m, (_, d) in enumerate(mods):
        members = [int(j) for j in d] + [int(ind[u]) for u in us[u_ptr[m]: u_ptr[m + 1]]]
        for j in members[1:]:
            union(members[0], j)
    for i in point:  # a point chord's cut coordinates ride with its path (its module)
        first = next(int(kin.v_offset[j]) for j, _ in kin.paths[i] if kin.kinds[j].nv)
        union(first, int(kin.v_offset[kin.chord_edges[i]]))
    empty = {name: np.zeros(0, dtype=np.int64) for name in (
        "nd_ptr", "nd_body", "nd_edge", "nd_top", "nd_base", "nd_u_ptr", "nd_u", "nd_c_ptr",
        "nd_c", "nd_e_ptr", "nd_h_ptr", "nd_d_ptr", "v_node", "v_ndrow", "u_ndpos")}
    # bodies in depth-first order with their group (None: rigidly on the world)
    group_of_body: dict[int, int | None] = {nb: None}
    order: list[tuple[int, int, int]] = []  # (body, tree edge, top)
    for k in kin.tree_edges:
        top, low = ((int(kin.parent[k]), int(kin.child[k])) if kin.sign[k] > 0
                    else (int(kin.child[k]), int(kin.parent[k])))
        g = find(int(kin.v_offset[k])) if kin.kinds[k].nv else group_of_body[top]
        group_of_body[low] = g
        if g is not None:
            order.append((low, int(k), top))
    groups: dict[int, list[tuple[int, int, int]]] = {}
    for item in order:
        groups.setdefault(group_of_body[item[0]], []).append(item)
    coords: dict[int, list[int]] = {}
    for j in range(nv):
        coords.setdefault(find(j), []).append(j)
    if set(coords) != set(groups):  # a group that moves no body (a chord's own coordinates)
        return empty
    node_of = {g: n for n, g in enumerate(groups)}  # first-body order (dicts keep insertion)
    out: dict[str, list[int]] = {n: [] for n in empty}
    out["v_node"], out["v_ndrow"] = [-1] * nv, [-1] * nv
    out["u_ndpos"] = [-1] * int(ind.size)
    for ptr in ("nd_ptr", "nd_u_ptr", "nd_c_ptr", "nd_e_ptr", "nd_h_ptr", "nd_d_ptr"):
        out[ptr].append(0)
    for g, items in groups.items():
        n = node_of[g]
        bodies = {b: p for p, (b, _, _) in enumerate(items)}
        bases = {t for _, _, t in items if t not in bodies}
        if len(bases) != 1:
            return empty
        base = bases.pop()
        if group_of_body[base] is None:  # the world, or a body welded to it: at rest
            base = nb
        elif node_of[group_of_body[base]] >= n:
            return empty
        out["nd_base"].append(base)
        for b, k, t in items:
            out["nd_body"].append(b)
            out["nd_edge"].append(k)
            out["nd_top"].append(bodies.get(t, -1))
        us_n = sorted(int(indpos[j]) for j in coords[g] if indpos[j] >= 0)
        for p, u in enumerate(us_n):
            out["u_ndpos"][u] = p
        out["nd_u"] += us_n
        for r, j in enumerate(coords[g]):
            out["v_node"][j], out["v_ndrow"][j] = n, r
        out["nd_c"] += coords[g]
        nn = len(us_n)
        out["nd_ptr"].append(len(out["nd_body"]))
        out["nd_u_ptr"].append(len(out["nd_u"]))
        out["nd_c_ptr"].append(len(out["nd_c"]))
        out["nd_e_ptr"].append(out["nd_e_ptr"][-1] + len(coords[g]) * nn)
        out["nd_h_ptr"].append(out["nd_h_ptr"][-1] + 6 * len(items) * nn)
        out["nd_d_ptr"].append(out["nd_d_ptr"][-1] + nn * nn)
    return {k: np.asarray(v, dtype=np.int64) for k, v in out.items()}


def _recursion_pays(kin: CompiledModel, s: dict) -> bool:
    """Whether the recursion over nodes (:mod:`rbc.kernels.articulated`) does at most
    :data:`RECURSION_PAYS` of the dense path's multiply–adds, both estimated from the
    layout: dense — CRBA (each tree coordinate against its ancestors' ones), ``M_T E_T`` and
    ``E_Tᵀ (M_T E_T)`` over the nonzeros of E, the Cholesky of M_r (n_u³/6); recursion — per
    node and body ``H_x``, ``P_x H_x``, ``H_xᵀ P_x H_x`` and the transfer (6 × 6 × n_u,n),
    per node its Cholesky and solves."""
    nv_edge, up = np.asarray(s["e_nv"]), s["tree_up"]
    depth = np.zeros(len(nv_edge), dtype=np.int64)  # coordinates on the path to the root
    for k in s["tree"]:
        depth[k] = nv_edge[k] + (depth[up[k]] if up[k] >= 0 else 0)
    crba = sum(36 * nv_edge[k] + 6 * nv_edge[k] * depth[k] for k in s["tree"])
    nu, nt = len(s["ind"]), kin.nv_tree
    mod_ptr, u_ptr = s["mod_ptr"], s["mod_u_ptr"]
    nnz = nu + sum((mod_ptr[m + 1] - mod_ptr[m]) * (u_ptr[m + 1] - u_ptr[m])
                   for m in range(len(mod_ptr) - 1))
    dense = crba + nnz * (nt + nu) + nu**3 / 6 + 36 * kin.n_bodies
    b_ptr, n_ptr = s["nd_ptr"], s["nd_u_ptr"]
    rec = 0.0
    for n in range(len(b_ptr) - 1):
        bodies, nn = b_ptr[n + 1] - b_ptr[n], n_ptr[n + 1] - n_ptr[n]
        rec += bodies * (84 * nn + 6 * nn * nn + 36) + nn**3 / 3 + 72 * nn
    return rec <= RECURSION_PAYS * dense


def layout(kin: CompiledModel, part: Partition, tree: TreeModel,
           recursion: bool | None = None, point: bool = True) -> Layout:
    """Lay out a compiled model and a partition for the kernels.

    Args:
        kin: the compiled model (the plant, mass mismatch already applied).
        part: the partition whose lift the kernels evaluate.
        tree: its Pinocchio tree model (for the armature: joint armature plus reflected rotor
            inertia, exactly as the reference path adds it).
        recursion: whether :func:`rbc.kernels.step.forward` runs the recursion over the
            lift's nodes (:mod:`rbc.kernels.articulated`) where the model splits into nodes:
            True — always, False — never (the dense ``M_r``), None — when it pays
            (:func:`_recursion_pays`).
        point: lay out every chord that can be one as a point chord (module docstring,
            :func:`point_chords`); False — every chord with six rows (the bundle's rows:
            the residual, compact C and ``R_p`` of the reference path).

    Raises:
        LayoutError: a reversed multi-coordinate tree joint with a varying motion subspace
            (the tree model refuses those too); a port that is not a joint port (tendon,
            distance, profile, velocity) or a nonlinear coupling (polynomial, table): the
            kernels read port efforts at one velocity column and coupling rows as constant
            coefficients.
    """
    from rbc.model.dynamics import load_coefficients
    from rbc.model.interfaces import ports

    rec = kin.record
    other = [f"{a.name} ({a.kind})" for a in rec.actuators if a.kind != "joint"]
    other += [f"coupling {c.name} ({c.type})" for c, form in
              zip(rec.couplings, kin.coupling_forms, strict=True) if not form.linear]
    if other:
        raise LayoutError(f"the kernels evaluate joint ports and linear couplings only: "
                          f"{', '.join(other)}")
    E, nb = len(kin.kinds), kin.n_bodies
    s: dict[str, np.ndarray] = {}
    f: dict[str, np.ndarray] = {}
    s["e_code"] = [CODES[k.type] for k in kin.kinds]
    s["e_qo"], s["e_vo"] = kin.q_offset, kin.v_offset
    s["e_nv"] = [k.nv for k in kin.kinds]
    s["e_parent"], s["e_child"], s["e_sign"] = kin.parent, kin.child, kin.sign
    f["e_A"] = np.array([_record(a) for a in kin.A]).reshape(E, TR)
    f["e_B"] = np.array([_record(b) for b in kin.B]).reshape(E, TR)
    axis, axis2 = np.zeros((E, 3)), np.zeros((E, 3))
    pitch, R0 = np.zeros(E), np.tile(np.eye(3).ravel(), (E, 1))
    for k, kind in enumerate(kin.kinds):
        if hasattr(kind, "axis"):
            axis[k] = kind.axis
        if kind.type == "universal":
            axis[k], axis2[k] = kind.axes
        if kind.type == "helical":
            pitch[k] = kind.lead / (2.0 * np.pi)
        if kind.type == "planar":
            R0[k] = kind.alignment().rotation.ravel()
        if kin.sign[k] < 0 and not kind.constant_S:
            raise LayoutError(f"tree joint '{kin.edge_names[k]}' ({kind.type}) is reversed")
    f["e_joint"] = np.array([parameters(*p) for p in zip(axis, axis2, pitch, R0, strict=True)]
                            ).reshape(E, JP)

    # tree: depth-first edges, parent tree edge, body inertias at the body origin
    tree_edges = np.array(kin.tree_edges, dtype=np.int64)
    s["tree"] = tree_edges
    up = np.full(E, -1, dtype=np.int64)
    for k in tree_edges:
        top = int(kin.parent[k]) if kin.sign[k] > 0 else int(kin.child[k])
        up[k] = int(kin.parent_edge[top]) if top != nb else -1
    s["tree_up"] = up
    inertia = np.zeros((nb, 6, 6))
    for x, body in enumerate(rec.bodies):
        m, c = body.mass, np.asarray(body.com, dtype=float)
        ch = np.array([[0, -c[2], c[1]], [c[2], 0, -c[0]], [-c[1], c[0], 0]])
        inertia[x, :3, :3] = inertia_tensor(body.inertia) + m * ch @ ch.T
        inertia[x, :3, 3:] = m * ch
        inertia[x, 3:, :3] = m * ch.T
        inertia[x, 3:, 3:] = m * np.eye(3)
    f["b_inertia"] = inertia
    f["gravity"] = np.asarray(rec.gravity, dtype=float)

    # chords: compact columns and the terms that fill them
    pts = point_chords(kin, part) if point else ()
    col_ptr, cols, term_ptr, term_v, term_local, term_sign = [0], [], [0], [], [], []
    path_ptr, path_edge = [0], []
    for i, e in enumerate(kin.chord_edges):
        terms = [(j, float(sg)) for j, sg in kin.paths[i] if kin.kinds[j].nv]
        if i not in pts:  # a point chord's cut coordinates are not among its columns
            terms.append((e, -1.0))
        local: dict[int, int] = {}
        for j, sg in terms:
            for d in range(kin.kinds[j].nv):
                gv = int(kin.v_offset[j]) + d
                if gv not in local:
                    local[gv] = len(local)
                    cols.append(gv)
                term_v.append(gv)
                term_local.append(local[gv])
                term_sign.append(sg)
        col_ptr.append(len(cols))
        term_ptr.append(len(term_v))
        path_edge += [j for j, _ in kin.paths[i]]
        path_ptr.append(len(path_edge))
    s["ch_edge"] = np.array(kin.chord_edges, dtype=np.int64)
    s["ch_col_ptr"], s["ch_cols"] = col_ptr, cols
    s["ch_term_ptr"], s["ch_term_v"], s["ch_term_local"] = term_ptr, term_v, term_local
    s["ch_term_sign"] = term_sign
    s["ch_path_ptr"], s["ch_path_edge"] = path_ptr, path_edge
    s["ch_point"] = [int(i in pts) for i in range(kin.n_chords)]
    s["e_skip"] = np.isin(np.arange(E), [kin.chord_edges[i] for i in pts]).astype(np.int64)

    # couplings
    cp_ptr, cp_v, cp_q, cp_coef = [0], [], [], []
    for terms in kin.coupling_rows:
        for vi, qi, coef in terms:
            cp_v.append(vi)
            cp_q.append(qi)
            cp_coef.append(coef)
        cp_ptr.append(len(cp_v))
    s["cp_ptr"], s["cp_v"], s["cp_q"] = cp_ptr, cp_v, cp_q
    f["cp_coef"], f["cp_offset"] = cp_coef, kin.coupling_offset

    # partition and module blocks
    ind, dep = np.asarray(part.independent), np.asarray(part.dependent)
    s["ind"], s["dep"] = ind, dep
    indpos = np.full(kin.nv, -1, dtype=np.int64)
    indpos[ind] = np.arange(ind.size)
    deppos = np.full(kin.nv, -1, dtype=np.int64)
    mods = _strip(kin, _modules(kin, part), pts)
    mod_ptr, mod_rows, mod_dep, lu_ptr = [0], [], [], [0]
    pattern = sparsity_pattern(kin)
    for r, d in mods:
        # fill-reducing column order: the columns fewest of the block's rows touch first (a
        # Stewart leg's own coordinates before the platform's shared ones), so that the
        # pivoted LU eliminates each loop's own columns within its own rows
        d = d[np.argsort(pattern[np.ix_(r, d)].sum(axis=0), kind="stable")]
        deppos[d] = np.arange(d.size)
        mod_rows += r.tolist()
        mod_dep += d.tolist()
        mod_ptr.append(len(mod_rows))
        lu_ptr.append(lu_ptr[-1] + d.size * d.size)
    s["v_indpos"], s["v_deppos"] = indpos, deppos
    maps = _gather_maps(kin, mods, deppos, indpos, col_ptr, cols)
    (s["mod_p_ptr"], s["mod_p_src"], s["mod_p_dst"], s["mod_a_ptr"], s["mod_a_src"],
     s["mod_a_dst"], s["mod_u_ptr"], s["mod_u"]) = maps
    s["mod_ptr"], s["mod_rows"], s["mod_dep"], s["mod_lu_ptr"] = mod_ptr, mod_rows, mod_dep, lu_ptr

    # loads
    c = load_coefficients(kin)
    f["ld_damping"], f["ld_friction"] = c.damping, c.friction
    f["ld_stiffness"], f["ld_rest"], s["ld_qidx"] = c.stiffness, c.rest, c.q_index
    effort = np.zeros(kin.nv)
    sp_body, sp_xyz, sp_coef = [], [], []
    bodies = rec.body_index()
    for force in rec.forces:
        if isinstance(force, JointEffort):
            effort[kin.v_slice(kin.edge(force.joint))] += force.value
        elif isinstance(force, SpringForce):
            sp_body += [bodies[force.a.body], bodies[force.b.body]]
            sp_xyz += [*force.a.xyz, *force.b.xyz]
            sp_coef += [force.stiffness, force.rest_length, force.damping]
    f["ld_effort"] = effort
    arm = np.zeros(kin.nv)
    arm[tree.v_perm] = np.asarray(tree.model.armature)
    f["armature"] = arm
    try:
        s["ports"] = ports(kin).columns
    except ValueError as err:  # tendon ports (linear combinations of joints)
        raise LayoutError(str(err)) from err
    s["sp_body"], f["sp_xyz"], f["sp_coef"] = sp_body, sp_xyz, sp_coef

    # prescribed independent coordinates (those stored as their own value in q)
    from rbc.model.solve import scalar_q_index

    keep_u, keep_q = [], []
    for n, j in enumerate(ind):
        qi = scalar_q_index(kin, int(j))
        if qi is not None:
            keep_u.append(n)
            keep_q.append(qi)
    s["keep_u"], s["keep_q"] = keep_u, keep_q
    s["mod_e_ptr"] = np.concatenate([[0], np.cumsum([r.size * (maps[6][m + 1] - maps[6][m])
                                                     for m, (r, _) in enumerate(mods)])])
    nodes = _nodes(kin, mods, indpos, maps[6], maps[7], pts)
    s.update(nodes)

    s["sizes"] = [kin.nq, kin.nv, kin.nq_tree, kin.nv_tree, nb, E, kin.n_chords,
                  len(kin.coupling_rows), ind.size, len(mod_rows), len(mods), len(sp_coef) // 3,
                  len(keep_u), len(nodes["nd_base"]), 0]
    if len(nodes["nd_base"]) and recursion is not False:
        s["sizes"][-1] = int(recursion or _recursion_pays(kin, s))
    I, IO = _pack(s, INT_SEGMENTS, np.int64)
    Fa, FO = _pack(f, FLOAT_SEGMENTS, np.float64)
    return Layout(I, IO, Fa, FO, kin, part, kin.n_rows, int(lu_ptr[-1]), pts)

"""Compile-time analysis of a composed mode: closing the links at a reference
configuration and the rank analysis that gives the composer lift (docs/composition.md).

**Level 1** is each member's own reduction, kept as compiled: member k's independent speeds
``w_k`` (its stored partition) lift to its speeds by ``v_k = E_k w_k``. The level-1 speeds
of the composition stack every member's ``w_k`` and the coordinates of the mode's own
chords (a ball link's three chart rates; a point support's), ``w = [w_1; …; w_K; w_c]``,
and ``v = E₁ w`` with ``E₁ = diag(E_1, …, E_K, I)``.

**Level 2.** The mode's link and support rows, written in w, are ``C̄ = C_L E₁`` (C_L: their
rows of the mode model's closure Jacobian, i.e. the differences of the compiled world
Jacobians of the two frames, transported into the residual's tangent, plus the chart
columns). Rank analysis on the scaled C̄ (:mod:`rbc.model.partition`: pivoted QR for the row
selector, passive columns made dependent first — the chart coordinates — then actuated
ones, floating roots last) picks the rows S̄ and the split of w into the composer's
independent speeds u and the dependent rest, and ``w = G u`` with
``G = Π̄ᵀ [I; −R̄_p⁻¹ R̄_a]``. The composition's lift is ``E = E₁ G``: the same matrix as a
one-level lift of the mode model with that independent set (same null space, same
parametrisation), which is how the stored flat partition is written.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from rbc.compose.flat import MemberMap
from rbc.errors import CompileError
from rbc.model.closure import CLOSURE_TOL, ClosureError, newton, unclosed_report, within_limits
from rbc.model.compiled import CompiledModel, Partition
from rbc.model.kinematics import closure_geometry, residual
from rbc.model.partition import scales, select_dependent, select_rows


@dataclass(frozen=True, eq=False)
class Level2:
    """The composer's structure in one mode (stored per mode, docs/bundle.md).

    Attributes:
        w: (n_w,) the mode model's v-indices of the level-1 speeds (members' independent
            speeds in member order, then the coordinates of the mode's own chords).
        member_cols: per member, its slice of w.
        chord_rows: (m_L,) the rows of the mode's own chords in the mode model (6 each).
        rows: (r̄,) the selected rows S̄ (mode-model row indices, a subset of chord_rows).
        independent: (n_u,) positions in w of the independent speeds u (sorted).
        dependent: (r̄,) positions in w of the dependent level-1 speeds (sorted).
    """

    w: np.ndarray
    member_cols: tuple[slice, ...]
    chord_rows: np.ndarray
    rows: np.ndarray
    independent: np.ndarray
    dependent: np.ndarray


def level1_columns(members: Sequence[MemberMap], flat: CompiledModel, mode: CompiledModel
                   ) -> tuple[np.ndarray, tuple[slice, ...]]:
    """``(w, member slices)`` of a mode model (see :class:`Level2`)."""
    parts, slices, n = [], [], 0
    for m in members:
        ind = m.independent
        parts.append(ind)
        slices.append(slice(n, n + ind.size))
        n += ind.size
    own = np.arange(flat.nv, mode.nv, dtype=np.int64)
    return np.concatenate([*parts, own]).astype(np.int64), tuple(slices)


def close_reference(mode: CompiledModel, q0: np.ndarray, held: np.ndarray,
                    tol: float = CLOSURE_TOL, max_steps: int = 64) -> np.ndarray:
    """Close every loop of a mode model from q0 by artificial-defect continuation
    (``ρ(q) = (1 − η) ρ(q0)``, η: 0 → 1; Gauss–Newton with minimum-norm steps over every
    coordinate except ``held``, e.g. the floating bases).

    Raises:
        ClosureError: the continuation stalls, or the result leaves a joint limit.
    """
    cols = np.array(sorted(set(range(mode.nv)) - set(int(j) for j in held)), dtype=np.int64)
    chords, couplings = range(mode.n_chords), range(len(mode.coupling_rows))
    rho0 = residual(mode, q0)
    q, eta, d_eta = np.array(q0, dtype=float), 0.0, 0.25
    for _ in range(max_steps):
        if eta >= 1.0 or d_eta < 1e-4:
            break
        trial = min(1.0, eta + d_eta)
        qt, ok = newton(mode, q, chords, couplings, cols, target=(1.0 - trial) * rho0,
                        tol=tol if trial == 1.0 else 1e-10, max_iter=15)
        if ok:
            q, eta, d_eta = qt, trial, d_eta * 2.0
        else:
            d_eta *= 0.5
    rho = residual(mode, q)
    if eta < 1.0 or np.abs(rho).max(initial=0.0) > tol:
        raise ClosureError(f"{mode.record.source}: the links and supports do not close from "
                           f"the placed members (continuation stalled at η = {eta:.3g}); "
                           f"unclosed: {unclosed_report(mode, rho, tol)} — check the placements "
                           "and the link frames")
    out = within_limits(mode, q)
    if out:
        raise ClosureError(f"{mode.record.source}: closing the links leaves the limits of "
                           f"{', '.join(out)}; place the members closer to their partners")
    return q


def level1_lift(members: Sequence[MemberMap], mode: CompiledModel, C: np.ndarray,
                w: np.ndarray, member_cols: Sequence[slice]) -> np.ndarray:
    """``E₁`` (nv, n_w) at a closed configuration from the mode model's closure Jacobian C:
    each member's ``E_k`` by its own dependent block (``E_k[dep] = −R_p⁻¹ R_a``, LU solve)."""
    E1 = np.zeros((mode.nv, w.size))
    E1[w, np.arange(w.size)] = 1.0
    for m, cols in zip(members, member_cols, strict=True):
        rows = m.rows(mode)
        if rows.size:
            E1[m.dependent, cols] = -np.linalg.solve(C[np.ix_(rows, m.dependent)],
                                                     C[np.ix_(rows, m.independent)])
    return E1


def analyse(members: Sequence[MemberMap], flat: CompiledModel, mode: CompiledModel,
            q: np.ndarray, name: str, length: float | None = None
            ) -> tuple[Level2, Partition]:
    """Level-2 rank analysis of a mode at the closed configuration q (module docstring).

    Returns:
        ``(level2, partition)``: the composer structure and the equivalent one-level
        partition of the mode model (independent = the u coordinates; rows = the members'
        selected rows and S̄).

    Raises:
        CompileError: no valid split (e.g. the links over-constrain the members).
    """
    w, member_cols = level1_columns(members, flat, mode)
    C = closure_geometry(mode, q).C
    E1 = level1_lift(members, mode, C, w, member_cols)
    n0 = flat.n_chords
    chord_rows = np.arange(6 * n0, 6 * mode.n_chords, dtype=np.int64)
    Cbar = C[chord_rows] @ E1
    sc = scales(mode, length)
    Cs = sc.rows[chord_rows][:, None] * Cbar * sc.cols[w][None, :]
    sel, r = select_rows(Cs)
    roots = {j for k, (n, t) in enumerate(zip(mode.edge_names, mode.edge_types, strict=True))
             if n.endswith(".root") and t == "free"
             for j in range(mode.v_slice(k).start, mode.v_slice(k).stop)}
    acts = set()
    for a in mode.record.actuators:
        for n, _ in a.port_terms:
            acts.update(range(mode.v_slice(mode.edge(n)).start, mode.v_slice(mode.edge(n)).stop))
    preferred = {i for i, j in enumerate(w) if int(j) in acts}
    last = {i for i, j in enumerate(w) if int(j) in roots}
    try:
        dep = select_dependent(Cs[sel], r, preferred, last)
    except CompileError as err:
        raise CompileError(f"mode {name}: {err}") from err
    ind = np.array(sorted(set(range(w.size)) - set(dep.tolist())), dtype=np.int64)
    if r and np.linalg.matrix_rank(Cbar[sel][:, dep]) < r:
        raise CompileError(f"mode {name}: the links and supports leave a singular dependent "
                           "block at the reference configuration")
    level2 = Level2(w, member_cols, chord_rows, chord_rows[sel], ind, np.sort(dep))
    u_cols = w[ind]
    rows = np.sort(np.concatenate([*(m.rows(mode) for m in members), level2.rows]))
    joints = tuple(dict.fromkeys(mode.edge_names[int(mode.v_edge[j])] for j in u_cols))
    # u in the composer's order (w order: members, then the mode's own chords)
    part = Partition(name=name, independent=u_cols,
                     dependent=np.array(sorted(set(range(mode.nv)) - set(u_cols.tolist())),
                                        dtype=np.int64),
                     rows=rows.astype(np.int64), rank=mode.nv - u_cols.size,
                     length_scale=sc.length, q_ref=np.array(q, dtype=float), joints=joints)
    return level2, part

"""``rbc bench local-edit``: moving support targets re-solves only the modules they touch.

In a support mode whose floating base is independent, every stance leg is its own module
(docs/supports.md). A **local edit** moves the anchor (the target) of one or two supports by
a displacement of :data:`EDIT` (random direction per trial, seeded) with the base held, and
re-solves only the modules of the moved supports (Newton on their rows and dependent
columns, :func:`rbc.model.closure.newton`); the **global update** re-solves the same edit
as one Newton over all rows and dependent columns. Both start from the same closed
configuration and reach the same one (checked: ≤ 1e-12), and the local update leaves the
other legs' coordinates bit-identical. Reported: median wall time per update of each and
the reduction ``1 − t_local / t_global`` (the source paper reports 61.8 % for one foot and
28.1 % for two feet on its Go2). Times are the process's CPU time (``time.process_time``:
on a shared machine wall time mostly measures the other processes), interleaved, with BLAS
limited to one thread (multi-threaded LAPACK on these small systems adds scheduling noise
of several milliseconds on a shared machine).
"""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np
import pinocchio as pin

from rbc.model.closure import newton
from rbc.model.compiled import CompiledModel, ModeInfo
from rbc.model.modes import model_for
from rbc.sim.threads import limit_blas_threads
from rbc.verify.checks import DEFAULT_SEED

#: Size [m] of a target edit: a small correction of a foot placement (5 mm).
EDIT = 5e-3


def _moved(mm: CompiledModel, support: str, d: np.ndarray) -> CompiledModel:
    """The mode model with one support's anchor translated by d (world) [m]."""
    A = list(mm.A)
    k = mm.edge(support + ".support")
    A[k] = pin.SE3(A[k].rotation, A[k].translation + d)
    return replace(mm, A=tuple(A))


def bench_local_edits(model: CompiledModel, mode: ModeInfo, repeats: int = 50,
                      seed: int = DEFAULT_SEED) -> dict:
    """Median update times of one- and two-support edits, local against global.

    Returns:
        ``{"mode", "repeats", "edit", "cases": {"one": {...}, "two": {...}}}`` with per case
        ``local_median``, ``global_median`` [s], ``reduction`` (1 − local/global),
        ``modules_solved`` (local), ``modules`` (all), ``max_difference`` [rad, m] and
        ``untouched_changed`` (coordinates of other modules that moved; 0).

    Raises:
        ValueError: the mode has fewer than two supports, or its supports share a module.
    """
    mm = model_for(model, mode)
    part = mode.partition
    q0 = np.array(part.q_ref)
    dep = set(part.dependent.tolist())
    blocks = mm.blocks
    n0 = mm.n_chords - len(mm.supports)
    owner = {}
    for b, blk in enumerate(blocks):
        for c in blk.chords:
            if c >= n0:
                owner[mm.supports[c - n0]] = b
    if len(mm.supports) < 2 or len(set(owner.values())) < len(mm.supports):
        raise ValueError(f"mode {mode.name}: local edits need two or more supports in "
                         "separate modules (a floating base that stays independent)")
    cols = [np.array([j for j in blk.cols if j in dep], dtype=np.int64) for blk in blocks]
    all_dep = part.dependent
    limit_blas_threads(1)  # small dense solves: threads only add scheduling noise
    rng = np.random.default_rng(seed)
    newton(mm, q0, range(mm.n_chords), (), all_dep)  # warm-up: first-call costs not timed
    out = {}
    for case, k in (("one", 1), ("two", 2)):
        t_loc, t_glob, diff, touched = [], [], 0.0, 0
        for _ in range(repeats):
            names = list(rng.choice(mm.supports, size=k, replace=False))
            edited = mm
            for n in names:
                d = rng.standard_normal(3)
                edited = _moved(edited, n, EDIT * d / np.linalg.norm(d))
            t = time.process_time()
            q = q0
            for b in sorted({owner[n] for n in names}):
                q, ok = newton(edited, q, blocks[b].chords, blocks[b].couplings, cols[b])
            t_loc.append(time.process_time() - t)
            t = time.process_time()
            qg, okg = newton(edited, q0, range(edited.n_chords), range(len(edited.coupling_rows)),
                             all_dep)
            t_glob.append(time.process_time() - t)
            if not (ok and okg):
                raise ValueError(f"mode {mode.name}: an edit of {EDIT} m did not close")
            diff = max(diff, float(np.abs(edited.difference(q, qg)).max()))
            moved = {j for b in {owner[n] for n in names} for j in cols[b].tolist()}
            dq = edited.difference(q0, q)
            touched += int(np.count_nonzero(np.delete(dq, sorted(moved))))
        tl, tg = float(np.median(t_loc)), float(np.median(t_glob))
        out[case] = {"local_median": tl, "global_median": tg, "reduction": 1.0 - tl / tg,
                     "modules_solved": k, "modules": len(blocks), "max_difference": diff,
                     "untouched_changed": touched}
    return {"mode": mode.name, "repeats": repeats, "edit": EDIT, "cases": out}

"""``rbc bench corrector``: fresh evaluations and time per motion step of the corrector.

Motion: from the partition's ``q_ref`` the independent speeds follow
``u_i(t) = s_i cos(2π f t + iπ/n_u)`` (s_i = 1 rad/s or 1 L/s, f = :data:`FREQUENCY`), with
step h = :data:`STEP` (1 ms). Every step starts from the same closed q and the same
predictor ``q⁻ = q ⊕ h E(q) u``; the methods differ only in the corrector:

* **analytic** — :meth:`rbc.model.closure.ClosureState.step` (per-module Gauss–Newton with
  the analytic Jacobian); its evaluations are the lift's Jacobian plus one residual+Jacobian
  evaluation per Newton pass (``SolveStats.jacobian_evals``);
* **fd-dense** — ``scipy.optimize.least_squares(jac='2-point')`` on each module's rows and
  dependent columns; every call of the residual counts (the FD Jacobian's calls included);
* **fd-coloured** — the same with ``jac_sparsity`` from
  :func:`rbc.model.kinematics.sparsity_pattern` (column groups share evaluations).

least_squares stops when ‖ρ‖∞ ≤ CLOSURE_TOL, the analytic corrector's tolerance (checked
inside the residual wrapper). A second table compares per-module Newton against one global
Newton over all rows and dependent columns from the same predictor. Times are reported
relative to the analytic peer in the same process.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection

import numpy as np

from rbc.model.closure import CLOSURE_TOL, ClosureState, SolveStats, newton
from rbc.model.compiled import CompiledModel, Partition
from rbc.model.kinematics import residual, sparsity_pattern
from rbc.model.partition import lift, scales

#: Motion step [s]: 1 ms, a typical control/simulation period.
STEP = 1e-3
#: Frequency of the independent speeds [Hz]: slow enough to stay clear of the workspace
#: boundary over a few hundred steps from q_ref.
FREQUENCY = 0.5


class _Converged(Exception):
    """Raised inside the residual wrapper when ‖ρ‖∞ ≤ tol (stops least_squares)."""


def _fd_corrector(model: CompiledModel, qp: np.ndarray, plan: list, du: np.ndarray,
                  coloured: bool) -> int:
    """Residual evaluations of the least_squares corrector from qp (all modules)."""
    import scipy.optimize as so

    pattern = sparsity_pattern(model)
    calls = 0
    q = qp
    for chords, couplings, cols, inputs, rows in plan:
        if cols.size == 0 or not np.any(du[inputs]):
            continue
        base = q

        def f(x: np.ndarray, base: np.ndarray = base, cols: np.ndarray = cols,
              chords=chords, couplings=couplings) -> np.ndarray:
            nonlocal calls
            calls += 1
            dv = np.zeros(model.nv)
            dv[cols] = x
            r = residual(model, model.integrate(base, dv), chords, couplings)
            if np.abs(r).max(initial=0.0) <= CLOSURE_TOL:
                raise _Converged(dv)
            return r

        kw = {"jac_sparsity": pattern[rows][:, cols]} if coloured else {}
        try:
            so.least_squares(f, np.zeros(cols.size), jac="2-point", method="trf",
                             xtol=1e-15, ftol=1e-15, gtol=1e-15, max_nfev=200, **kw)
        except _Converged as done:
            q = model.integrate(base, done.args[0])
    return calls


def bench_corrector(model: CompiledModel, part: Partition, steps: int = 200,
                    progress: Callable[[int], None] | None = None,
                    moving: Collection[int] | None = None) -> dict:
    """Median evaluations per step and time ratios (module docstring).

    Args:
        moving: positions (in ``part.independent``) of the independent speeds that move;
            the others are held at zero (a local edit: only the modules those inputs drive
            are corrected). Default: all move.

    Returns:
        ``{"steps", "h", "methods": {name: {"evals_median", "evals_max", "seconds",
        "ratio"}}, "update": {"module": s, "global": s, "ratio"}}``.
    """
    sc = scales(model, part.length_scale).cols[part.independent]
    phase = np.arange(part.independent.size) * np.pi / max(part.independent.size, 1)
    if moving is not None:
        held = np.ones(part.independent.size, dtype=bool)
        held[list(moving)] = False
        sc = np.where(held, 0.0, sc)
    state = ClosureState(model, part, np.array(part.q_ref))
    plan = [(c, cp, d, i, np.array([6 * k + r for k in c for r in range(6)]
                                  + [6 * model.n_chords + k for k in cp], dtype=np.int64))
            for c, cp, d, i in state.module_columns()]
    all_dep = part.dependent
    all_chords, all_cp = range(model.n_chords), range(len(model.coupling_rows))
    evals = {"analytic": [], "fd-dense": [], "fd-coloured": []}
    secs = dict.fromkeys(evals, 0.0)
    upd = {"module": 0.0, "global": 0.0}
    for k in range(steps):
        u = sc * np.cos(2 * np.pi * FREQUENCY * k * STEP + phase)
        q0 = state.q
        du = STEP * (lift(model, part, q0).E @ u)
        qp = model.integrate(q0, du)
        for name, coloured in (("fd-dense", False), ("fd-coloured", True)):
            t = time.perf_counter()
            evals[name].append(_fd_corrector(model, qp, plan, du, coloured))
            secs[name] += time.perf_counter() - t
        t = time.perf_counter()
        q = qp
        for c, cp, d, i, _ in plan:
            if d.size and np.any(du[i]):
                q, _ = newton(model, q, c, cp, d)
        upd["module"] += time.perf_counter() - t
        t = time.perf_counter()
        newton(model, qp, all_chords, all_cp, all_dep, stats=SolveStats())
        upd["global"] += time.perf_counter() - t
        # fresh counters per step: newton's iteration cap reads the cumulative
        # SolveStats.iterations, so a long-lived state would stop iterating after 300
        state.stats = SolveStats()
        t = time.perf_counter()
        state.step(u, STEP)
        secs["analytic"] += time.perf_counter() - t
        evals["analytic"].append(state.stats.jacobian_evals)
        if progress:
            progress(1)
    base = secs["analytic"] or 1.0
    return {"steps": steps, "h": STEP,
            "methods": {n: {"evals_median": float(np.median(e)), "evals_max": int(max(e)),
                            "seconds": secs[n], "ratio": secs[n] / base}
                        for n, e in evals.items()},
            "update": {**upd, "ratio": upd["global"] / (upd["module"] or 1.0)}}

"""Closing the mechanism at prescribed independent coordinates (``rbc solve``).

Given a stored partition and target values for some of its independent coordinates, the
mechanism is moved from the partition's reference configuration ``q_ref`` to the targets by
**continuation on the independent values** (a homotopy ``u(s) = u_ref + s (u* − u_ref)``,
s: 0 → 1, Allgower & Georg 2003, ch. 2):

* predictor: ``q⁻ = q ⊕ E(q) δu`` (the lift of :mod:`rbc.model.partition`), then the
  independent coordinates are set *exactly* to ``u(s)``;
* corrector: per dependency module a Gauss–Newton solve on that module's dependent columns
  (:func:`rbc.model.closure.newton` with the analytic Jacobian), skipped for modules none of
  whose inputs moved;
* a step is accepted when every module converged, the corrector stayed close to the
  predictor (the jump test, :data:`JUMP_RATIO`), every limited coordinate stays inside its
  limits, no rotation angle of a Δ_e left the log domain and no branch indicator changed
  sign (:func:`rbc.model.closure.branch_signs`: det R_p per module and each chord's own
  dependent block; the assembly branch of ``q_ref`` is kept); a rejected step is halved, an
  accepted one doubles the next up to the cap :data:`MAX_STEP`. The full residual is
  checked at the end.

A coordinate can be prescribed *by value* when its joint's limited coordinates are its
velocity coordinates one to one (``len(kind.limited) == kind.nv``: revolute, prismatic,
helical, universal, cylindrical, planar); the value is that limited coordinate [rad or m].
Spherical and free joints have no scalar coordinates and cannot be prescribed.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from rbc.errors import BundleError, RbcError, UsageError
from rbc.model.closure import (
    CLOSURE_TOL,
    JUMP_RATIO,
    MAX_STEP,
    ClosureError,
    SolveStats,
    branch_signs,
    log_domain_ok,
    newton,
    project,
    unclosed_report,
    within_limits,
)
from rbc.model.compiled import CompiledModel, Partition
from rbc.model.kinematics import local_jacobian, residual
from rbc.model.partition import (
    REPARTITION_GAIN,
    REPARTITION_MIN,
    lift,
    partition_at,
    scaled_cond,
    scales,
)
from rbc.safeio import MAX_OPTION_MAGNITUDE, finite_option

#: Smallest continuation step (fraction of the whole path) before giving up: 2⁻¹² ≈ 2e-4
#: of the way (≤ 1e-4 rad or L·1e-4 per step on the shipped records), below which a stall
#: is a genuine boundary (a singular configuration or the edge of the workspace).
MIN_FRACTION = 2.0**-12
#: Newton iterations per corrector before the step is halved: a converging corrector from
#: the lift predictor needs 2–5 (quadratic convergence); 12 leaves room for slow linear
#: convergence near singular configurations without wasting work on hopeless steps.
MAX_CORRECTOR = 12


class SolveError(RbcError):
    """A ``rbc solve`` request cannot be met (bad coordinate, unreachable value)."""


@dataclass(frozen=True, eq=False)
class SolveResult:
    """A closed configuration.

    Attributes:
        q: (nq,) configuration on the closure manifold.
        residual: ‖ρ(q)‖∞ [rad, m] over every closure row.
        iterations: Newton iterations over the whole continuation.
        steps: accepted continuation steps.
        stats: evaluation counts.
        partition: name of the partition used.
        notes: adjustments of a user guess (a quaternion normalised), one line each.
        events: re-partitions made on the way (``{kind, fraction, old, new, cond_before,
            cond_after, released}``: ``released`` the joints that were held and no longer
            are; ``partition`` then names the stored partition they started from).
    """

    q: np.ndarray
    residual: float
    iterations: int
    steps: int
    stats: SolveStats
    partition: str
    notes: tuple[str, ...] = ()
    events: tuple[dict, ...] = ()


#: A stored ``q_ref`` must close to this (the compiler stores it at ≤ CLOSURE_TOL = 1e-13;
#: the slack absorbs another Pinocchio build's round-off, far below any real defect).
STORED_Q_REF_TOL = 1e-9


def get_partition(model: CompiledModel, name: str | None) -> Partition:
    """The stored partition ``name`` (None → ``default``, else the first stored one),
    after checking that its reference configuration closes.

    Raises:
        SolveError: no such partition (lists the stored ones).
        BundleError: its ``q_ref`` does not close (a corrupted or tampered bundle).
    """
    names = list(model.partitions)
    if not names:
        raise SolveError("the bundle stores no partition (a mechanism without loops?)")
    if name is None:
        part = model.partitions.get("default", model.partitions[names[0]])
    elif name not in model.partitions:
        close = difflib.get_close_matches(name, names, n=1)
        hint = f" (did you mean '{close[0]}'?)" if close else ""
        raise SolveError(f"unknown partition '{name}'{hint}; stored partitions: "
                         f"{', '.join(names)}")
    else:
        part = model.partitions[name]
    gap = float(np.abs(residual(model, part.q_ref)).max(initial=0.0))
    if not gap <= STORED_Q_REF_TOL:
        raise BundleError(f"partition '{part.name}': the stored reference configuration does "
                          f"not close (‖ρ‖∞ = {gap:.3g} > {STORED_Q_REF_TOL:g}); a corrupted or "
                          "tampered bundle — recompile the record")
    return part


def prescribable(model: CompiledModel, j: int) -> bool:
    """Whether velocity coordinate j has a scalar value (see module docstring)."""
    kind = model.kinds[int(model.v_edge[j])]
    return len(kind.limited) == kind.nv and kind.nv > 0


def rate_is_speed(model: CompiledModel, j: int) -> bool:
    """Whether velocity coordinate j is the time derivative of its value (q̇ = v: revolute,
    prismatic, helical, universal, cylindrical). A planar joint's speeds are body-frame
    rates (docs/conventions.md), not the rates of its x, y, θ; spherical and free joints
    have no scalar values."""
    kind = model.kinds[int(model.v_edge[j])]
    return prescribable(model, j) and kind.nq == kind.nv


def value_rates(model: CompiledModel, q: np.ndarray, v: np.ndarray, idx: np.ndarray
                ) -> np.ndarray:
    """Rates (len(idx),) of the values of prescribable velocity coordinates ``idx`` at
    (q, v) (:meth:`JointKind.value_rates`: v itself except for a planar joint, whose
    speeds are body-frame rates)."""
    out = np.empty(len(idx))
    for n, j in enumerate(idx):
        k = int(model.v_edge[j])
        vs = model.v_slice(k)
        out[n] = model.kinds[k].value_rates(q[model.q_slice(k)], v[vs])[int(j) - vs.start]
    return out


def coordinate_value(model: CompiledModel, q: np.ndarray, j: int) -> float:
    """Value [rad or m] of prescribable velocity coordinate j at q."""
    k = int(model.v_edge[j])
    vals = model.kinds[k].limited_coordinates(q[model.q_slice(k)])
    return float(vals[j - model.v_slice(k).start])


def independent_values(model: CompiledModel, part: Partition, q: np.ndarray) -> np.ndarray:
    """(n_u,) values of the partition's independent coordinates at q (NaN if not scalar)."""
    return np.array([coordinate_value(model, q, int(j)) if prescribable(model, int(j))
                     else np.nan for j in part.independent])


def set_values(model: CompiledModel, q: np.ndarray, values: Mapping[int, float]) -> np.ndarray:
    """q (nq,) with the prescribable coordinates ``{v-index: value}`` replaced."""
    out = np.array(q, dtype=float)
    by_edge: dict[int, list[tuple[int, float]]] = {}
    for j, x in values.items():
        by_edge.setdefault(int(model.v_edge[j]), []).append((int(j), float(x)))
    for k, items in by_edge.items():
        kind, sl = model.kinds[k], model.q_slice(k)
        lim = kind.limited_coordinates(out[sl])
        for j, x in items:
            lim[j - model.v_slice(k).start] = x
        out[sl] = kind.compose(lim)
    return out


def parse_assignment(text: str) -> tuple[str, float]:
    """``NAME=VALUE`` → (name, value).

    Raises:
        UsageError: not of that form or VALUE is not a finite number.
    """
    name, sep, val = text.partition("=")
    name, val = name.strip(), val.strip()
    try:
        x = float(val)
    except ValueError:
        x = math.nan
    if not sep or not name or not finite_option(x):
        why = ("a finite number" if not math.isfinite(x) else
               f"a value of magnitude ≤ {MAX_OPTION_MAGNITUDE:g} (SI units)")
        raise UsageError(f"--set '{text}': expected NAME=VALUE with {why}, e.g. --set A=0.5")
    return name, x


def resolve_targets(model: CompiledModel, part: Partition, assignments: Mapping[str, float]
                    ) -> dict[int, float]:
    """Map coordinate names to v-indices of the partition's independent coordinates.

    Args:
        assignments: ``{coordinate name: value}``; a name is a joint name for 1-coordinate
            joints or ``joint.suffix`` (:attr:`CompiledModel.v_names`).

    Returns:
        ``{v-index: value}``.

    Raises:
        SolveError: unknown name (did-you-mean, the independent coordinates), a dependent
            coordinate (suggests the partitions where it is independent), a coordinate
            without a scalar value, or a value outside the joint limits.
    """
    names = {n: j for j, n in enumerate(model.v_names)}
    ind = [model.v_names[int(j)] for j in part.independent]
    out: dict[int, float] = {}
    for name, value in assignments.items():
        j = names.get(name)
        if j is None:
            raise SolveError(_unknown_coordinate(model, part, name, ind))
        if j not in set(part.independent.tolist()):
            other = [p.name for p in model.partitions.values() if j in set(p.independent.tolist())]
            hint = (f"; it is independent in partition {', '.join(other)} (use --partition)"
                    if other else "")
            raise SolveError(f"'{name}' is a dependent coordinate in partition '{part.name}' "
                             f"(it is solved from the closure); prescribe the independent "
                             f"ones: {', '.join(ind)}{hint}")
        if not prescribable(model, j):
            raise SolveError(f"'{name}' belongs to a {model.kinds[int(model.v_edge[j])].type} "
                             "joint, which has no scalar coordinate to prescribe")
        lo, hi = model.lower[j], model.upper[j]
        if not lo <= value <= hi:
            raise SolveError(f"{name} = {value:g} is unreachable: outside the joint limits "
                             f"[{lo:g}, {hi:g}]")
        out[j] = float(value)
    return out


def _unknown_coordinate(model: CompiledModel, part: Partition, name: str, ind: list[str]) -> str:
    """Message for a name that is not a coordinate: a joint's own coordinate names, or the
    closest spelling (case-insensitive) among the independent coordinates first."""
    coords = [n for n in model.v_names if n == name or n.startswith(name + ".")]
    if coords:
        hint = (f"; joint '{name}' has the coordinates {', '.join(coords)}"
                + (" (a spherical/free joint's coordinates cannot be prescribed)"
                   if model.kinds[model.edge(name)].type in ("spherical", "free") else ""))
    else:
        pool = ind + [n for n in model.v_names if n not in ind]
        lower = {n.lower(): n for n in reversed(pool)}
        close = difflib.get_close_matches(name.lower(), list(lower), n=1)
        hint = f" (did you mean '{lower[close[0]]}'?)" if close else ""
    return (f"unknown coordinate '{name}'{hint}; the independent coordinates of partition "
            f"'{part.name}' are: {', '.join(ind)}")


def module_plan(model: CompiledModel, part: Partition) -> list[tuple]:
    """Per module: (chords, couplings, dependent cols, input cols, selected-row positions)."""
    dep, sel_rows = set(part.dependent.tolist()), set(part.rows.tolist())
    plan = []
    for blk in model.blocks:
        cols = np.array([j for j in blk.cols if j in dep], dtype=np.int64)
        inputs = np.array([j for j in blk.cols if j not in dep], dtype=np.int64)
        sel = np.array([n for n, r in enumerate(blk.rows) if r in sel_rows], dtype=np.int64)
        plan.append((blk, cols, inputs, sel))
    return plan


def solve(model: CompiledModel, part: Partition, targets: Mapping[int, float],
          q_start: np.ndarray | None = None, *, tol: float = CLOSURE_TOL,
          _depth: int = 0) -> SolveResult:
    """Close the mechanism with independent coordinates prescribed (module docstring).

    When the continuation stalls at a coordinate singularity of the partition (scaled
    cond(R_p) large, rank unchanged) while the *prescribed* coordinates can stay
    independent, the other independent coordinates are re-selected there
    (:func:`_repartition`, logged in :attr:`SolveResult.events`) and the continuation goes
    on with them held; when a prescribed coordinate itself has reached a turning point the
    error names it and its value.

    Args:
        model: compiled model.
        part: the partition whose independent coordinates are prescribed.
        targets: ``{v-index: value [rad or m]}`` (from :func:`resolve_targets`); the other
            independent coordinates keep their values at ``q_start``.
        q_start: (nq,) closed start configuration on the branch to follow (default
            ``part.q_ref``).
        tol: closure tolerance (∞-norm) [rad, m].

    Returns:
        The closed configuration with its residual and counts.

    Raises:
        ClosureError: the continuation stalls (a singular configuration, a joint limit or
            the edge of the workspace lies between start and target); the message names the
            chords that stay open and how far the continuation got.
    """
    q = np.array(part.q_ref if q_start is None else q_start, dtype=float)
    st = SolveStats()
    idx = np.array(sorted(targets), dtype=np.int64)
    u0 = np.array([coordinate_value(model, q, int(j)) for j in idx])
    u1 = np.array([targets[int(j)] for j in idx])
    sc = scales(model, part.length_scale).cols
    span = float(np.max(np.abs(u1 - u0) / sc[idx], initial=0.0))
    if span == 0.0:  # nothing to continue: the start itself, if it is admissible
        done = _closed_start(model, q, dict(zip(idx.tolist(), u1, strict=True)), tol, st)
        if done is not None:
            return SolveResult(q=done[0], residual=done[1], iterations=st.iterations,
                               steps=0, stats=st, partition=part.name)
    plan = module_plan(model, part)
    signs = [branch_signs(model, q, blk, cols, sel) for blk, cols, _, sel in plan]
    cap = min(1.0, MAX_STEP / span) if span > 0 else 1.0
    s, ds, ceiling = 0.0, cap, cap
    failed, why = None, "the corrector did not converge"
    while s < 1.0:
        if ds < MIN_FRACTION:
            new, turning = _repartition(model, part, q, idx)
            if new is not None and _depth < MAX_REPARTITIONS:
                event = {"kind": "reconfiguration", "fraction": s, "old": list(part.joints),
                         "new": list(new[0].joints), "cond_before": new[1],
                         "cond_after": new[2],
                         "released": [n for n in part.joints if n not in new[0].joints]}
                r = solve(model, new[0], targets, q, tol=tol, _depth=_depth + 1)
                return replace(r, events=(event, *r.events),
                               iterations=r.iterations + st.iterations)
            rho = residual(model, failed if failed is not None else q)
            raise ClosureError(
                f"cannot close the mechanism at the requested values (partition "
                f"'{part.name}'): the continuation stalled {100 * s:.3g}% of the way from "
                f"the start ({turning or why}); chords that stay open: "
                f"{unclosed_report(model, rho, tol)}")
        trial = min(1.0, s + ds)
        qt, reason = advance(model, part, q, idx, u0 + trial * (u1 - u0), plan, tol, st)
        if reason is None:
            reason = _inadmissible(model, qt, plan, signs)
        if reason is None:
            st.largest_step = max(st.largest_step, (trial - s) * span)
            q, s = qt, trial
            st.continuation_steps += 1
            ds = min(2.0 * ds, ceiling)
        else:  # do not grow back to a length that failed on this path
            failed, why = qt, reason
            ceiling = min(ceiling, 0.75 * ds)
            ds *= 0.5
    rho = residual(model, q)
    st.residual_evals += 1
    res = float(np.abs(rho).max(initial=0.0))
    if res > tol:
        raise ClosureError(f"the solve ended with residual {res:.3g} > {tol:g}; unclosed: "
                           f"{unclosed_report(model, rho, tol)}")
    return SolveResult(q=q, residual=res, iterations=st.iterations,
                       steps=st.continuation_steps, stats=st, partition=part.name)


#: Re-partitions one solve may make (each at a stall of the continuation).
MAX_REPARTITIONS = 4


def _repartition(model: CompiledModel, part: Partition, q: np.ndarray, idx: np.ndarray
                 ) -> tuple[tuple[Partition, float, float] | None, str | None]:
    """At a stall: ``((new partition, cond before, cond after), None)`` when R_p is ill
    conditioned here (a coordinate singularity) and another independent set that keeps the
    prescribed coordinates ``idx`` is REPARTITION_GAIN times better conditioned;
    ``(None, why)`` when only a set without some prescribed coordinate is (they have reached
    a turning point: named with their values) or the rank changes; else ``(None, None)``."""
    def cond_of(p: Partition) -> float:
        try:
            return scaled_cond(model, p, lift(model, p, q))
        except np.linalg.LinAlgError:
            return np.inf

    cond = cond_of(part)
    if cond <= REPARTITION_MIN:
        return None, None
    keep = partition_at(model, q, name=part.name, length=part.length_scale,
                        preferred=set(idx.tolist()))
    if keep.rank != part.rank:
        return None, (f"the closure rank changes here ({part.rank} → {keep.rank}): a singular "
                      "configuration of the mechanism")
    cands = [keep] if set(idx.tolist()) <= set(keep.independent.tolist()) else []
    cands += _swaps(model, part, q, set(idx.tolist()))
    scored = [(cond_of(c), n, c) for n, c in enumerate(cands)
              if not np.array_equal(c.independent, part.independent)]
    if scored:
        after, _, new = min(scored)
        if after * REPARTITION_GAIN <= cond:
            return (new, cond, after), None
    best = partition_at(model, q, name=part.name, length=part.length_scale, preferred=())
    stuck = [int(j) for j in idx if int(j) not in set(best.independent.tolist())]
    if stuck and cond_of(best) * REPARTITION_GAIN <= cond:
        names = ", ".join(f"{model.v_names[j]} = {coordinate_value(model, q, j):.6g}"
                          for j in stuck)
        return None, (f"a turning point of the prescribed {names} (cond R_p {cond:.3g}, and "
                      "no independent set that keeps it is better conditioned here): it "
                      "cannot move further on this branch")
    return None, None


def _swaps(model: CompiledModel, part: Partition, q: np.ndarray, prescribed: set[int]
           ) -> list[Partition]:
    """Partitions that exchange one unprescribed independent coordinate for one dependent
    coordinate of the same module (rows unchanged), i.e. every single pivot of the split
    that keeps the prescribed coordinates independent."""
    out = []
    ind, dep = part.independent.tolist(), part.dependent.tolist()
    for blk in model.blocks:
        cols = set(blk.cols.tolist())
        for jh in (j for j in ind if j in cols and j not in prescribed):
            for jd in (j for j in dep if j in cols):
                new_ind = np.array(sorted(set(ind) - {jh} | {jd}), dtype=np.int64)
                new_dep = np.array(sorted(set(dep) - {jd} | {jh}), dtype=np.int64)
                joints = tuple(dict.fromkeys(model.edge_names[int(model.v_edge[j])]
                                             for j in new_ind))
                out.append(Partition(part.name, new_ind, new_dep, part.rows, part.rank,
                                     part.length_scale, q, joints))
    return out


def module_predictor(model: CompiledModel, part: Partition, q: np.ndarray, du: np.ndarray,
                     plan: list[tuple]) -> np.ndarray:
    """The lift predictor ``δv = E du`` (nv,) at q for independent increments du (nv,; zero
    off the independent columns), its dependent part only (the independent part is du).

    When no module reads another's dependent coordinates, ``R_p`` is block diagonal by
    module and ``E[dep_m] du = −R_p,m⁻¹ R_a,m du[inputs_m]`` is solved module by module, on
    the modules whose inputs moved, from each module's own Jacobian rows
    (:func:`~rbc.model.kinematics.local_jacobian`): time and memory linear in the number of
    loops (the dense C and R_p of :func:`~rbc.model.partition.lift` are O(loops²) in
    memory and O(loops³) in time: a 10 000-loop chain would need ~19 GB for C). Otherwise
    the global lift.

    Raises:
        numpy.linalg.LinAlgError: a singular ``R_p`` block.
    """
    pred = np.zeros(model.nv)
    dep = set(part.dependent.tolist())
    if any(dep.intersection(inputs.tolist()) or sel.size != cols.size
           for _, cols, inputs, sel in plan):
        L = lift(model, part, q)
        pred[part.dependent] = L.E[part.dependent] @ du[part.independent]
        return pred
    for blk, cols, inputs, sel in plan:
        if cols.size == 0 or not np.any(du[inputs]):
            continue  # none of this module's inputs moved
        _, C, _ = local_jacobian(model, q, blk.chords, blk.couplings,
                                 np.concatenate([cols, inputs]))
        Cs = C[sel]
        pred[cols] = -np.linalg.solve(Cs[:, :cols.size], Cs[:, cols.size:] @ du[inputs])
    return pred


def advance(model: CompiledModel, part: Partition, q: np.ndarray, idx: np.ndarray,
            u: np.ndarray, plan: list[tuple], tol: float, st: SolveStats
            ) -> tuple[np.ndarray, str | None]:
    """One predictor–corrector step to independent values ``u``.

    Returns ``(q, None)`` when every corrector converged and passed the jump test
    (:data:`JUMP_RATIO`), else ``(q, why)``.
    """
    du = np.zeros(model.nv)
    du[idx] = u - np.array([coordinate_value(model, q, int(j)) for j in idx])
    pred = module_predictor(model, part, q, du, plan)
    st.jacobian_evals += 1
    qp = set_values(model, model.integrate(q, pred), dict(zip(idx.tolist(), u, strict=True)))
    qt = qp
    for blk, cols, inputs, _ in plan:
        if cols.size == 0 or not np.any(du[inputs]):
            continue  # none of this module's inputs moved: it stays closed
        qt, ok = newton(model, qt, blk.chords, blk.couplings, cols, tol=tol, stats=st,
                        max_iter=MAX_CORRECTOR, contract=True)
        if not ok:
            return qt, ("the corrector did not converge: a singular configuration or the edge "
                        "of the workspace")
    sc = scales(model, part.length_scale).cols
    step = float(np.abs((pred + du) / sc).max(initial=0.0))
    moved = float(np.abs(model.difference(qp, qt) / sc).max(initial=0.0))
    if moved > JUMP_RATIO * step:
        return qt, (f"the corrector moved {moved:.3g} (scaled) against a predicted step of "
                    f"{step:.3g}: it would leave the branch")
    return qt, None


def _closed_start(model: CompiledModel, q: np.ndarray, values: Mapping[int, float], tol: float,
                  st: SolveStats) -> tuple[np.ndarray, float] | None:
    """``(q', ‖ρ(q')‖∞)`` when the independent coordinates are already at their targets:
    q' is what the continuation's one full step returns there (a zero predictor, the
    values set, no corrector moves, the branch signs trivially unchanged), accepted when it
    closes to ``tol`` inside the limits and the log domain — the checks of that step, without
    the per-module Jacobians, factorizations and branch signs (on the 10 000-loop chain most
    of the acquisition's time). None: take the continuation (which reports why)."""
    qt = set_values(model, model.integrate(q, np.zeros(model.nv)), values)
    if within_limits(model, qt):
        return None
    rho = residual(model, qt)
    st.residual_evals += 1
    res = float(np.abs(rho).max(initial=0.0))
    if res > tol or not log_domain_ok(rho, model.n_chords):
        return None
    return qt, res


def _inadmissible(model: CompiledModel, q: np.ndarray, plan: list[tuple],
                  signs: list[float]) -> str | None:
    """Why a converged step is rejected (limits, log domain, branch), or None if accepted."""
    out = within_limits(model, q)
    if out:
        return f"the limits of {', '.join(out)} would be violated"
    rho = residual(model, q, couplings=[])
    if not log_domain_ok(rho, model.n_chords):
        return "a loop rotation reaches π (the log domain)"
    for (blk, cols, _, sel), s0 in zip(plan, signs, strict=True):
        s1 = branch_signs(model, q, blk, cols, sel)
        if s1 != s0:
            what = "det R_p" if s1[0] != s0[0] else "a loop's own dependent block"
            return ("a singular configuration lies between: the assembly branch would change "
                    f"({what} changes sign)")
    return None


def solve_named(model: CompiledModel, partition: str | None, assignments: Mapping[str, float],
                guesses: Mapping[str, Sequence[float]] | None = None) -> SolveResult:
    """:func:`solve` from coordinate names (what ``rbc solve`` calls).

    Without ``guesses`` the continuation starts at the partition's ``q_ref``. With them
    (``--guess``), the start is the user's guess: ``q_ref`` with the guessed coordinates
    replaced (:func:`guess_configuration`), projected onto the closure manifold with every
    coordinate free (:func:`rbc.model.closure.project`, the assembly nearest the guess);
    from there the independent coordinates are continued to the ``assignments`` and, for
    the others, to their guessed values.

    Raises:
        SolveError: bad partition, coordinate or guess (see :func:`resolve_targets`,
            :func:`guess_configuration`).
        ClosureError: the closure cannot be reached.
    """
    part = get_partition(model, partition)
    targets = resolve_targets(model, part, assignments)
    if not guesses:
        return solve(model, part, targets)
    q_guess, notes = guess_configuration(model, part.q_ref, guesses)
    st = SolveStats()
    start = project(model, q_guess, length=part.length_scale, stats=st)
    full = {int(j): coordinate_value(model, q_guess, int(j)) for j in part.independent
            if prescribable(model, int(j))}
    full.update(targets)
    r = solve(model, part, full, start)
    return replace(r, iterations=r.iterations + st.iterations, notes=notes)


def parse_guess(text: str) -> tuple[str, tuple[float, ...]]:
    """``NAME=VALUE`` or ``JOINT=v1,v2,…`` (a whole joint in its record `initial` layout, e.g.
    a spherical joint's quaternion ``w,x,y,z``) → (name, values).

    Raises:
        UsageError: not of that form or a value is not a finite number.
    """
    name, sep, val = text.partition("=")
    name = name.strip()
    try:
        values = tuple(float(x) for x in val.split(","))
    except ValueError:
        values = ()
    if not sep or not name or not values or not all(finite_option(x) for x in values):
        raise UsageError(f"--guess '{text}': expected NAME=VALUE (a coordinate) or "
                         "JOINT=v1,v2,… (a joint's `initial` layout) with finite numbers of "
                         f"magnitude ≤ {MAX_OPTION_MAGNITUDE:g}, e.g. "
                         "--guess U1.a=0.1 or --guess S1=1,0,0,0")
    return name, values


def guess_configuration(model: CompiledModel, q: np.ndarray,
                        guesses: Mapping[str, Sequence[float]]
                        ) -> tuple[np.ndarray, tuple[str, ...]]:
    """q (nq,) with guessed coordinates replaced, and notes on what was adjusted.

    A name is a scalar coordinate (:attr:`CompiledModel.v_names`, one value [rad or m]) or a
    joint name with its record `initial` layout (docs/records.md: e.g. ``[θ1, θ2]`` of a
    universal joint, a spherical joint's quaternion ``w, x, y, z``). A guessed quaternion
    within 1e-3 of unit norm is normalised with a note (:func:`rbc.ir.schema.guess_quaternion`).

    Raises:
        SolveError: an unknown name (with a did-you-mean), a wrong number of values, or a
            quaternion far from unit norm.
    """
    from rbc.ir.schema import guess_quaternion

    out, notes = np.array(q, dtype=float), []
    v_index = {n: j for j, n in enumerate(model.v_names)}
    joints = set(model.record.joint_index())
    for name, values in guesses.items():
        values = [float(x) for x in values]
        j = v_index.get(name)
        if j is not None and prescribable(model, j) and len(values) == 1:
            out = set_values(model, out, {j: values[0]})
            continue
        if name not in joints:
            pool = list(dict.fromkeys(  # coordinates, then joints not already listed
                [n for n in model.v_names if prescribable(model, v_index[n])] + sorted(joints)))
            close = difflib.get_close_matches(name, pool, n=1)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            raise SolveError(f"--guess {name}: not a coordinate or joint{hint}; coordinates: "
                             f"{', '.join(pool)}")
        k = model.edge(name)
        kind = model.kinds[k]
        n = len(kind.limited) + 4 * kind.has_quat
        if len(values) != n:
            raise SolveError(f"--guess {name}: a {kind.type} joint takes {n} value(s) "
                             f"(its `initial` layout, docs/records.md), got {len(values)}")
        if kind.has_quat:
            try:
                quat, note = guess_quaternion(values[-4:])
            except ValueError as exc:
                raise SolveError(f"--guess {name}: {exc} (a guess within 1e-3 of unit norm "
                                 "is normalised)") from None
            values[-4:] = quat
            if note:
                notes.append(f"--guess {name}: {note}")
        out[model.q_slice(k)] = kind.from_record_initial(values if n > 1 else values[0])
    return out, tuple(notes)


def acquire(
    model: CompiledModel,
    q0: np.ndarray | None = None,
    *,
    independent_joints: Collection[str] | None = None,
    length: float | None = None,
    tol: float = CLOSURE_TOL,
) -> tuple[np.ndarray, SolveStats]:
    """:func:`acquire_partitioned` without the partition."""
    q, st, _ = acquire_partitioned(model, q0, independent_joints=independent_joints,
                                   length=length, tol=tol)
    return q, st


def acquire_partitioned(
    model: CompiledModel,
    q0: np.ndarray | None = None,
    *,
    independent_joints: Collection[str] | None = None,
    length: float | None = None,
    tol: float = CLOSURE_TOL,
) -> tuple[np.ndarray, SolveStats, Partition | None]:
    """First feasible configuration: the assembly nearest the guess, then the independent
    coordinates continued to their guessed values (DESIGN.md §5, issue #12 item 1).

    1. :func:`rbc.model.closure.project` moves the whole guess (every coordinate free) onto
       the closure manifold by minimum-norm steps in the scaled metric, so the assembly
       mode of the guess is kept even when the guessed independent values (a measured leg
       length, a 3-decimal angle) are slightly off;
    2. the rank analysis at that configuration picks the independent coordinates
       (``independent_joints`` or the preferred actuated/requested joints), and
       :func:`solve` continues them from their projected values back to their values in
       the guess, branch-safely.

    Args:
        q0: (nq,) the guess (default: the record's ``initial`` values).
        independent_joints: joints that must be independent (default: preferences).
        length: length scale [m] of the metric and the rank analysis.

    Returns:
        ``(q, stats, partition)`` with ``‖ρ(q)‖∞ ≤ tol`` inside the limits; partition: the
        rank analysis of step 2 (None without closure rows) — at q itself when its
        ``q_ref`` equals q (the guess closed: nothing moved).

    Raises:
        ClosureError: the projection or the continuation stalls, or the result breaks
            limits; the message names the chords that do not close.
    """
    q = model.initial_configuration() if q0 is None else np.array(q0, dtype=float)
    st = SolveStats()
    if model.n_rows == 0:
        return q, st, None
    qp = project(model, q, tol=tol, length=length, stats=st)
    part = partition_at(model, qp, independent_joints=independent_joints, length=length)
    targets = {int(j): coordinate_value(model, q, int(j)) for j in part.independent
               if prescribable(model, int(j))}
    try:
        r = solve(model, part, targets, qp, tol=tol)
    except ClosureError as err:
        raise ClosureError(
            f"{model.record.source}: the assembly nearest the initial guesses was found, but "
            f"the independent coordinates ({', '.join(part.joints)}) cannot be continued "
            f"from there to their `initial` values: {err}") from err
    for name in ("iterations", "residual_evals", "jacobian_evals", "continuation_steps"):
        setattr(st, name, getattr(st, name) + getattr(r.stats, name))
    st.largest_step = max(st.largest_step, r.stats.largest_step)
    return r.q, st, part


def configuration_by_joint(model: CompiledModel, q: np.ndarray) -> dict[str, float | list]:
    """``{joint name: value or list}`` of the record joints' q coordinates (root edges
    omitted); 1-coordinate joints give a float."""
    out: dict[str, float | list] = {}
    record = set(model.record.joint_index())
    for k, name in enumerate(model.edge_names):
        if name not in record or model.kinds[k].nq == 0:
            continue
        vals = [float(x) for x in q[model.q_slice(k)]]
        out[name] = vals[0] if len(vals) == 1 else vals
    return out


def scalar_q_index(model: CompiledModel, j: int) -> int | None:
    """The q index holding velocity coordinate j's value when q and v coincide there
    (revolute, prismatic, helical, universal, cylindrical), else None (e.g. planar)."""
    k = int(model.v_edge[j])
    kind = model.kinds[k]
    if kind.nq != kind.nv:
        return None
    probe = np.linspace(0.1, 0.2, kind.nq)
    if not np.array_equal(kind.limited_coordinates(probe), probe):
        return None
    return model.q_slice(k).start + (j - model.v_slice(k).start)


__all__ = ["JUMP_RATIO", "MAX_CORRECTOR", "MAX_STEP", "SolveError", "SolveResult", "acquire",
           "acquire_partitioned",
           "configuration_by_joint", "coordinate_value", "get_partition",
           "guess_configuration", "independent_values", "parse_assignment", "parse_guess",
           "prescribable", "rate_is_speed", "resolve_targets", "scalar_q_index", "set_values",
           "solve", "solve_named", "value_rates"]

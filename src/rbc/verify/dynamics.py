"""Dynamics checks of ``rbc verify --dynamics`` (DESIGN.md §6, §8; docs/dynamics.md).

Our reduced forward dynamics (:mod:`rbc.model.dynamics`: ``u̇ = M_r⁻¹(τ_r − h_r)``, tree
accelerations ``a = E_T u̇ + Ė_T u``) is compared at the states of
:mod:`rbc.verify.states` with three references that do not use the lift or our closure
Jacobian:

* ``dynamics.delta_a.kkt50`` / ``dynamics.delta_f.kkt50`` — :mod:`rbc.verify.kkt50`,
  ``δ_a = ‖a − a*‖∞ / max(1, ‖a*‖∞)``, ``δ_f = ‖M_T(a − a*)‖∞ / max(1, ‖M_T a* + h_T‖∞)``;
* ``dynamics.delta_a.pinocchio`` — :mod:`rbc.verify.pinocchio_ref` (δ_a as above);
* ``dynamics.delta_b.newton_euler`` — :mod:`rbc.verify.newton_euler`,
  ``δ_b = ‖x − x*‖∞ / max(1, ‖x*‖∞)`` over the bodies' ``[ω̇; a_com]``;
* ``dynamics.mass_pd`` — ``λ_min(M_r)/λ_max(M_r)`` at every state (lower bound);
* the acceleration-space limits (δ_a, δ_b) follow the conditioning ``κ = λ_max/λ_min`` of
  ``M_r`` when ``10·κ·ε`` exceeds them (:data:`CONDITION_FACTOR`);
* ``ports.virtual_power`` — ``|uᵀ Eᵀ J_ℓᵀ f − fᵀ ℓ̇|`` with ℓ̇ from Richardson-extrapolated
  centred differences of the port displacements along closed motion steps
  (:meth:`rbc.model.closure.ClosureState.step`), not from L;
* ``curvature.omitted`` — δ_a against the 50-digit reference with ``Ė u`` dropped, on set B
  (lower bound on the median: it must be many orders of magnitude above the with-term δ_a).

Each check's value is the maximum over the states (the minimum for ``dynamics.mass_pd``, the
median for ``curvature.omitted``); the detail gives the median (the minimum). Coulomb
friction is included everywhere (the states have v ≠ 0 or no friction on the shipped records).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from rbc.backends.pinocchio import PinocchioExportError
from rbc.model.closure import ClosureError, ClosureState
from rbc.model.compiled import CompiledModel, Partition
from rbc.model.dynamics import (
    PD_RTOL,
    DynamicsData,
    DynamicsModel,
    SingularInertiaError,
    check_mass_pd,
    forward_dynamics,
    passive_efforts,
    reduced_terms,
    tree_acceleration,
)
from rbc.model.interfaces import port_jacobian, port_values
from rbc.verify import kkt50
from rbc.verify.checks import DEFAULT_SEED, Check, make_check
from rbc.verify.newton_euler import NewtonEuler
from rbc.verify.pinocchio_ref import PinocchioReference, SingularTreeInertia
from rbc.verify.states import State, make_states

#: δ_a, δ_f against the 50-digit reference: our double-precision pipeline (lift by LU,
#: Cholesky of M_r) loses at most cond·ε ≈ 1e-13 on the shipped records; 1e-11 is the
#: acceptance target (DESIGN.md §6) and leaves two orders of margin.
KKT_LIMIT = 1e-11
#: δ against Pinocchio and Newton–Euler: both references are themselves double precision
#: (Pinocchio's proximal iterations stop at 1e-13 absolute; Newton–Euler's maximal-coordinate
#: KKT system is condition-number-limited), so the acceptance target is looser: 1e-9.
REFERENCE_LIMIT = 1e-9
#: Virtual-power defect, relative to max(1 W, Σ|f_i ℓ̇_i|): the Richardson-extrapolated
#: centred difference of closed steps carries the closure solve's tolerance (≤ 1e-13 m)
#: divided by the step; 1e-9 bounds that noise on the shipped records with margin, while a
#: wrong port map (a sign, a missing ratio) gives O(1).
VIRTUAL_POWER_LIMIT = 1e-9
#: Step [s] of the port-displacement differences (at SPEED ≤ 2 scaled units per second:
#: displacements ≲ 2e-3 L, truncation after one Richardson stage O(h⁴) ≈ 1e-12).
VP_STEP = 1e-3
#: Acceleration-space comparisons (δ_a, δ_b) of an ill-conditioned reduced inertia: a
#: backward-stable double-precision solve is accurate to ~κ(M_r)·ε times a modest constant
#: (Higham 2002, §7.1), on our side and on the double-precision references alike, in the
#: directions of little inertia (a slender rod's spin about its axis). Their limits are
#: raised to this factor × max κ(M_r)·ε over the states when that exceeds them (never on the
#: shipped records, κ ≤ 370 → 8e-13); 10 covers the constants seen (Newton–Euler reached
#: 3 κ ε on the Gepetto digit_like, κ = 1.1e7). δ_f (force space) is not raised.
CONDITION_FACTOR = 10.0
#: Checks whose limit follows the conditioning (see CONDITION_FACTOR).
CONDITIONED = ("dynamics.delta_a.kkt50", "dynamics.delta_a.pinocchio",
               "dynamics.delta_b.newton_euler")
#: curvature.omitted lower bound: dropping Ė u must raise δ_a at least to 1e-6, five orders
#: above KKT_LIMIT ("many orders of magnitude").
OMITTED_MIN = 1e-6

CHECK_NAMES = ("dynamics.delta_a.kkt50", "dynamics.delta_f.kkt50", "dynamics.delta_a.pinocchio",
               "dynamics.delta_b.newton_euler", "dynamics.mass_pd", "ports.virtual_power",
               "curvature.omitted")


def delta(a: np.ndarray, ref: np.ndarray) -> float:
    """``‖a − a*‖∞ / max(1, ‖a*‖∞)`` (DESIGN.md §6)."""
    return float(np.abs(a - ref).max(initial=0.0) / max(1.0, np.abs(ref).max(initial=0.0)))


def delta_f(M: np.ndarray, h: np.ndarray, a: np.ndarray, ref: np.ndarray) -> float:
    """``‖M(a − a*)‖∞ / max(1, ‖M a* + h‖∞)`` (DESIGN.md §6)."""
    return float(np.abs(M @ (a - ref)).max(initial=0.0)
                 / max(1.0, np.abs(M @ ref + h).max(initial=0.0)))


@dataclass
class Results:
    """Per-check lists of ``(value, "set#index")`` plus notes on skipped references."""

    values: dict[str, list[tuple[float, str]]] = field(
        default_factory=lambda: {n: [] for n in CHECK_NAMES})
    notes: dict[str, str] = field(default_factory=dict)
    #: per set-B state ‖Ė_T u‖∞ / max(1, ‖a*‖∞): whether the curvature term exists at all
    curvature_size: list[float] = field(default_factory=list)
    #: per check, the states where its reference raised, with the first message
    failures: dict[str, list[str]] = field(default_factory=dict)

    def guarded(self, names: tuple[str, ...], state: State, fn):
        """``fn()``, or None when the reference raises (recorded against ``names``: the
        checks then fail with the message instead of a traceback)."""
        try:
            return fn()
        except (ArithmeticError, ValueError, RuntimeError, np.linalg.LinAlgError) as err:
            for name in names:
                self.failures.setdefault(name, []).append(
                    f"{state.set}#{state.index}: {type(err).__name__}: {err}")
            return None
    skipped: dict[str, list[str]] = field(default_factory=dict)  # states a check could not use

    def add(self, name: str, value: float, state: State) -> None:
        self.values[name].append((float(value), f"{state.set}#{state.index}"))


@dataclass(eq=False)
class Context:
    """Models and per-state data shared by the checks of one record."""

    kin: CompiledModel
    part: Partition
    dm: DynamicsModel
    data: DynamicsData
    ne: NewtonEuler
    pin_ref: PinocchioReference | None

    @classmethod
    def build(cls, kin: CompiledModel, part: Partition, notes: dict[str, str]) -> Context:
        dm = DynamicsModel.build(kin)
        try:
            pr = PinocchioReference.build(kin, part)
        except (PinocchioExportError, SingularTreeInertia) as err:
            pr = None
            notes["dynamics.delta_a.pinocchio"] = f"not applicable: {err}"
        return cls(kin, part, dm, DynamicsData.of(dm), NewtonEuler.build(dm), pr)


def port_rates_fd(ctx: Context, q: np.ndarray, u: np.ndarray, h: float = VP_STEP
                  ) -> np.ndarray:
    """ℓ̇ (n_act,) from closed motion steps: Richardson on centred differences at h, h/2."""

    def ell(step: float) -> np.ndarray:
        st = ClosureState(ctx.kin, ctx.part, np.array(q, dtype=float))
        return port_values(ctx.kin, st.step(u, step))

    def centred(step: float) -> np.ndarray:
        return (ell(step) - ell(-step)) / (2.0 * step)

    return (4.0 * centred(h / 2) - centred(h)) / 3.0


def evaluate(ctx: Context, state: State, res: Results) -> None:
    """Run every comparison at one state and record the metrics."""
    k, part, dm, data = ctx.kin, ctx.part, ctx.dm, ctx.data
    nt = k.nv_tree
    terms = reduced_terms(dm, data, part, state.q, state.u, state.f, state.wrenches)
    w = np.linalg.eigvalsh(terms.M)
    res.add("dynamics.mass_pd", w[0] / w[-1] if w.size else np.inf, state)
    udot = forward_dynamics(dm, terms)
    a = tree_acceleration(terms, udot)
    kkt = ("dynamics.delta_a.kkt50", "dynamics.delta_f.kkt50", "curvature.omitted")
    ref = res.guarded(kkt, state, lambda: kkt50.solve(dm, data, state.q, state.u,
                                                      part.independent, state.f,
                                                      state.wrenches))
    if ref is not None:
        res.add("dynamics.delta_a.kkt50", delta(a[:nt], ref.a), state)
        res.add("dynamics.delta_f.kkt50", delta_f(terms.tree.M, terms.tree.h, a[:nt], ref.a),
                state)
    if ctx.pin_ref is not None:
        tau = terms.tau_full + passive_efforts(dm, state.q, terms.v)[1]
        tau[:nt] += terms.tree.g
        a_pin = res.guarded(("dynamics.delta_a.pinocchio",), state,
                            lambda: ctx.pin_ref.accelerations(state.q, terms.v, tau))
        if a_pin is not None:
            res.add("dynamics.delta_a.pinocchio", delta(a[:nt], a_pin), state)
    ne = res.guarded(("dynamics.delta_b.newton_euler",), state, lambda: ctx.ne.accelerations(
        state.q, terms.v, state.f, state.wrenches))
    if ne is not None:
        res.add("dynamics.delta_b.newton_euler",
                delta(ctx.ne.implied(state.q, terms.v, a), ne[0]), state)
    if state.set != "B":
        return
    if state.f.size:
        try:
            rates = port_rates_fd(ctx, state.q, state.u)
        except ClosureError:  # the corrector cannot take the FD motion steps here
            res.skipped.setdefault("ports.virtual_power", []).append(
                f"{state.set}#{state.index}")
        else:
            held = np.isfinite(rates)  # a velocity port has no displacement to difference
            if held.any():
                f = np.where(held, state.f, 0.0)
                p_r = float(state.u @ (terms.lifted.E.T @ (port_jacobian(k, state.q).T @ f)))
                gross = max(1.0, float(np.abs(f[held] * rates[held]).sum()))
                res.add("ports.virtual_power",
                        abs(p_r - float(f[held] @ rates[held])) / gross, state)
    if k.curvature_free:  # no cut joints, linear couplings only: Ė u ≡ 0, nothing to omit
        res.notes["curvature.omitted"] = "not applicable: no cut joints (Ė u ≡ 0)"
        return
    if ref is None:
        return
    bare = reduced_terms(dm, data, part, state.q, state.u, state.f, state.wrenches,
                         curvature_term=False)
    a_bare = tree_acceleration(bare, forward_dynamics(dm, bare))
    res.add("curvature.omitted", delta(a_bare[:nt], ref.a), state)
    res.curvature_size.append(float(np.abs(terms.edu[:nt]).max(initial=0.0)
                                    / max(1.0, np.abs(ref.a).max(initial=0.0))))


def _summary(name: str, items: list[tuple[float, str]], limit: float, unit: str,
             what: str, lower: bool = False) -> Check:
    """Value: the max (upper bounds) or min (lower bounds); detail: the median.

    ``curvature.omitted`` is the exception: its value is the median (a state drawn near rest
    has a vanishing Ė u, so the minimum says nothing about the term at speed); the detail
    then gives the minimum.
    """
    vals = np.array([v for v, _ in items])
    n = int(np.argmin(vals) if lower else np.argmax(vals))
    word = "min" if lower else "max"
    med = float(np.median(vals))
    if name == "curvature.omitted":
        return make_check(name, med, limit, unit,
                          f"{what}; median over {len(vals)} states, min {vals[n]:.2e} at state "
                          f"{items[n][1]}", lower_bound=True)
    return make_check(name, float(vals[n]), limit, unit,
                      f"{what}; median {med:.2e}, {word} at state {items[n][1]} "
                      f"({_set_counts(items)})", lower_bound=lower)


def _set_counts(items: list[tuple[float, str]]) -> str:
    """E.g. ``"96 states: 48 of set A, 48 of set B"`` from state labels ``"A#25"``."""
    sets = sorted({label.split("#")[0] for _, label in items})
    counts = ", ".join(f"{sum(1 for _, lb in items if lb.split('#')[0] == s)} of set {s}"
                       for s in sets)
    return f"{len(items)} states: {counts}"


def _not_run(name: str, limit: float, unit: str, why: str, lower: bool = False,
             applicable: bool = True) -> Check:
    """A check without a value: failed, or passed when it does not apply to the record."""
    return Check(name, float("nan"), limit, unit, not applicable, why, lower)


SPECS: dict[str, tuple[float, str, str, bool]] = {
    "dynamics.delta_a.kkt50": (KKT_LIMIT, "1", "tree accelerations vs 50-digit KKT", False),
    "dynamics.delta_f.kkt50": (KKT_LIMIT, "1", "M_T(a − a*) vs 50-digit KKT", False),
    "dynamics.delta_a.pinocchio": (REFERENCE_LIMIT, "1",
                                   "tree accelerations vs pinocchio.constraintDynamics", False),
    "dynamics.delta_b.newton_euler": (REFERENCE_LIMIT, "1",
                                      "body [ω̇; a_com] vs maximal-coordinate Newton–Euler",
                                      False),
    "dynamics.mass_pd": (PD_RTOL, "1", "λ_min/λ_max of M_r", True),
    "ports.virtual_power": (VIRTUAL_POWER_LIMIT, "W/W",
                            "|uᵀEᵀJ_ℓᵀf − fᵀℓ̇_FD| / max(1 W, Σ|f ℓ̇|)", False),
    "curvature.omitted": (OMITTED_MIN, "1", "δ_a vs 50-digit KKT with Ė u dropped (set B)",
                          True),
}


def run_dynamic_checks(model: CompiledModel, part: Partition, *, samples: int = 48,
                       seed: int = DEFAULT_SEED,
                       progress: Callable[[int], None] | None = None) -> list[Check]:
    """The dynamics checks over sets A and B of ``samples`` states each.

    A singular reduced inertia fails ``dynamics.mass_pd`` with the message of
    :class:`~rbc.model.dynamics.SingularInertiaError` (naming the coordinates) and leaves
    the other checks unevaluated (NaN, failed).
    """
    res = Results()
    ctx = Context.build(model, part, res.notes)
    set_a, set_b = make_states(model, part, samples, seed)
    try:
        for s in set_a:  # positive definiteness first: the references need it
            check_mass_pd(ctx.dm, reduced_terms(ctx.dm, ctx.data, part, s.q, s.u))
    except SingularInertiaError as err:
        checks = [_not_run(n, lim, unit, "not evaluated: singular reduced inertia", low)
                  for n, (lim, unit, _, low) in SPECS.items()]
        checks[CHECK_NAMES.index("dynamics.mass_pd")] = _not_run(
            "dynamics.mass_pd", PD_RTOL, "1", str(err), True)
        return checks
    for s in (*set_a, *set_b):
        evaluate(ctx, s, res)
        if progress:
            progress(1)
    if model.curvature_free:
        res.notes["curvature.omitted"] = ("not applicable: no cut joints, the closure rows are "
                                          "linear couplings (Ė u ≡ 0)")
    kappa = 1.0 / max(min((v for v, _ in res.values["dynamics.mass_pd"]), default=1.0), 1e-300)
    floor = CONDITION_FACTOR * kappa * np.finfo(float).eps
    checks = []
    for name, (lim, unit, what, low) in SPECS.items():
        if name in CONDITIONED and floor > lim:
            lim, what = floor, (f"{what}; limit {CONDITION_FACTOR:g}·κ(M_r)·ε for the "
                                f"conditioning κ = {kappa:.3g} (base limit {lim:g})")
        if name in res.skipped:
            states = res.skipped[name]
            what = (f"{what}; {len(states)} state(s) skipped, the motion corrector could not "
                    f"take the difference steps there ({', '.join(states[:4])})")
        if res.failures.get(name):
            fails = res.failures[name]
            checks.append(Check(name, float("nan"), lim, unit, False,
                                f"{what}: the reference failed at {len(fails)} state(s), "
                                f"first {fails[0]}", low))
        elif name == "curvature.omitted" and _curvature_is_zero(res):
            med = float(np.median([v for v, _ in res.values[name]]))
            checks.append(Check(name, med, lim, unit, True, (
                f"informational: Ė u is zero on this mechanism (‖Ė_T u‖∞ ≤ "
                f"{max(res.curvature_size):.2g} of ‖a*‖ on set B: a constant lift, e.g. a "
                f"parallelogram), and the 50-digit reference agrees (median δ_a {med:.2e} "
                "with it dropped)"), True))
        elif res.values[name]:
            checks.append(_summary(name, res.values[name], lim, unit, what, low))
        else:
            why = res.notes.get(name, "not applicable: no actuators")
            checks.append(_not_run(name, lim, unit, why, low, applicable=False))
    return checks


def _curvature_is_zero(res: Results) -> bool:
    """Ė u legitimately zero: ours is zero at every set-B state (≤ KKT_LIMIT relative) and
    dropping it leaves δ_a below OMITTED_MIN (the reference sees no term either)."""
    vals = [v for v, _ in res.values["curvature.omitted"]]
    return bool(vals and res.curvature_size and max(res.curvature_size) <= KKT_LIMIT
                and float(np.median(vals)) < OMITTED_MIN)


def work_units(samples: int) -> int:
    """Progress units of :func:`run_dynamic_checks` (one per state)."""
    return 2 * samples

"""The check catalogue of ``rbc verify`` on a composed bundle (docs/composition.md,
"Verification").

Per mode, at states reached from the mode's reference configuration by closed motion
(:func:`composed_states`), the composer's algorithms (nested lift, member-wise terms,
wrench recovery) are compared with references that do not use them:

* ``closure.residual`` — ‖ρ‖∞ of every loop, link and support at the states;
* ``composer.lift`` — E₁G against the one-level lift of the mode model with the same
  independent set (path-product closure Jacobian, :mod:`rbc.model.kinematics`);
* ``composer.curvature`` — the nested Ė u against the one-level curvature;
* ``composer.rate.fd`` — Ė(v) X against Richardson-extrapolated differences of E along
  closed motions;

and with ``--dynamics``:

* ``dynamics.skew.fd`` — Γ̇ against C + Cᵀ, Γ̇ by three-level Richardson extrapolation of
  centred differences of Γ along closed motions;
* ``dynamics.memberwise.projected`` — Γ, C u, g against the projected tree terms
  (Pinocchio CRBA/RNEA through the lift);
* ``dynamics.regressor.pinocchio`` — Y π against ``pinocchio.computeJointTorqueRegressor``
  projected through the lift (plus the rotors);
* ``dynamics.delta_a.kkt50``, ``dynamics.delta_f.kkt50`` — the composed accelerations
  against the 50-digit KKT reference on the mode model (:mod:`rbc.verify.kkt50`);
* ``dynamics.delta_b.newton_euler`` — against the maximal-coordinate Newton–Euler model;
* ``forces.links.newton_euler``, ``forces.supports.newton_euler`` — the recovered link and
  support wrenches against Newton–Euler's multipliers;
* ``dynamics.mass_pd`` — λ_min/λ_max of Γ.

Sets A and B as docs/dynamics.md ("State sets"): A at rest without efforts, B with speeds,
port efforts within their limits and one external wrench.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from rbc.compose.dynamics import (
    MemberModel,
    accelerations,
    composed_terms,
    forward_dynamics,
    pinocchio_regressor_efforts,
    projected_terms,
    regressor,
)
from rbc.compose.lift import composer_lift
from rbc.compose.system import ComposedMode, Composition
from rbc.compose.wrenches import chord_wrenches
from rbc.model.closure import ClosureError, ClosureState
from rbc.model.dynamics import PD_RTOL, DynamicsData, tree_terms
from rbc.model.kinematics import residual
from rbc.model.partition import curvature, lift, scales
from rbc.sim.threads import limit_blas_threads
from rbc.verify import kkt50
from rbc.verify.checks import DEFAULT_SEED, Check, make_check
from rbc.verify.dynamics import KKT_LIMIT, REFERENCE_LIMIT, delta, delta_f
from rbc.verify.kinematics import CLOSURE_LIMIT
from rbc.verify.newton_euler import NewtonEuler
from rbc.verify.states import State, states_at

#: Half-width of the tangent draw of each independent coordinate around the reference
#: [rad, or length scales]: a composed formation is a small neighbourhood of its reference
#: (hands held, soles down), so states are drawn nearby rather than over the joint ranges.
WINDOW = 0.08
#: Closed motion steps per tangent draw (each ≤ WINDOW/STEPS of every coordinate).
STEPS = 8
#: Draws that do not close (a corrector that stalls near a loop's singular pose) are
#: replaced by new draws, at most this many in all — or twice the states asked for, if more
#: (the ring of five: 60 independent coordinates each moved by up to ±0.08; for 48 states
#: more than 20 draws reached a stance leg's singular pose).
MAX_REDRAWS = 20
#: Nested vs one-level lift and curvature, and member-wise vs projected terms: two double
#: precision algorithms on the same closure Jacobian or tree: their difference is round-off
#: amplified by the conditioning of the dependent blocks (measured ≤ 1e-13 relative on
#: the pair and the ring); 1e-10 leaves three decades.
TWO_ALGORITHMS_LIMIT = 1e-10
#: Ė(v) X and Γ̇ against finite differences: 1e-6 and 1e-8 relative (the difference's own
#: floor is the closure tolerance over the step; issue #19 asks ≤ 1e-8 for Γ̇).
RATE_LIMIT, SKEW_LIMIT = 1e-6, 1e-8
#: States with the finite-difference checks (six extra evaluations each).
FD_STATES = 2


def composed_states(comp: Composition, md: ComposedMode, n: int, seed: int = DEFAULT_SEED
                    ) -> tuple[list[State], list[State]]:
    """Sets A and B of n states each of a composed mode (module docstring; configurations by
    closed tangent moves of ±WINDOW from the reference, then the draws of
    :func:`rbc.verify.states.states_at`)."""
    rng = np.random.default_rng(seed)
    model = comp.model(md)
    part = md.partition
    sc = scales(model, part.length_scale).cols[part.independent]
    qs: list[np.ndarray] = []
    failures = 0
    while len(qs) < n:
        delta_ = rng.uniform(-1.0, 1.0, part.independent.size) * WINDOW * sc
        st = ClosureState(model, part, part.q_ref.copy())
        try:
            for _ in range(STEPS):
                st.step(delta_, 1.0 / STEPS)
        except ClosureError as err:  # a draw that leaves the neighbourhood: draw again
            failures += 1
            if failures > max(MAX_REDRAWS, 2 * n):
                raise ClosureError(f"{comp.name}, mode {md.name}: {failures} tangent draws of "
                                   f"±{WINDOW} did not close (last: {err})") from None
            continue
        qs.append(st.q)
    return states_at(model, part, qs, rng)


@dataclass(eq=False)
class _Acc:
    """Per-check lists of (value, state label)."""

    values: dict

    def add(self, name: str, value: float, s: State) -> None:
        self.values.setdefault(name, []).append((float(value), f"{s.set}#{s.index}"))


def _rel(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.abs(a - b).max(initial=0.0) / max(1.0, np.abs(b).max(initial=0.0)))


def _fd_checks(mm: MemberModel, data: DynamicsData, md: ComposedMode, s: State, acc: _Acc,
               dynamics: bool) -> None:
    """composer.rate.fd (and dynamics.skew.fd) at one state of set B."""
    model, part = mm.kin, md.partition
    rng = np.random.default_rng(s.index)
    X = rng.uniform(-1.0, 1.0, (s.u.size, 2))

    def at(h: float):
        qq = ClosureState(model, part, s.q.copy()).step(s.u, h)
        L = composer_lift(mm.structure, mm.dm, data, qq)
        return L.E, (composed_terms(mm, data, qq, s.u, lifted=L).Gamma if dynamics else None)

    # E by three-level Richardson on 1e-4 … 2.5e-5 (error O(h⁶)): near a singular
    # configuration of the ring (|Ė X| ~ 6e3) two levels from 2e-4 left 2.9e-6 of pure
    # truncation (it fell 16× per halving, to 2.8e-11 at 1.25e-5: the analytic rate was
    # right); the closure's 1e-13 over 2.5e-5 keeps the round-off near 1e-8 absolute.
    # Γ keeps its three levels from 2e-4.
    hs = (2e-4, 1e-4, 5e-5, 2.5e-5)
    vals = {h: (at(h), at(-h)) for h in hs}
    cE = {h: (vals[h][0][0] - vals[h][1][0]) / (2 * h) for h in hs}
    e1, e2 = (4 * cE[2.5e-5] - cE[5e-5]) / 3, (4 * cE[5e-5] - cE[1e-4]) / 3
    fdE = (16 * e1 - e2) / 15
    L = composer_lift(mm.structure, mm.dm, data, s.q)
    R = L.rate(mm.dm, data, L.E @ s.u, X)
    acc.add("composer.rate.fd", np.abs(fdE @ X - R).max() / max(1.0, np.abs(R).max()), s)
    if dynamics:
        cG = {h: (vals[h][0][1] - vals[h][1][1]) / (2 * h) for h in hs}
        d1, d2 = (4 * cG[5e-5] - cG[1e-4]) / 3, (4 * cG[1e-4] - cG[2e-4]) / 3
        fd = (16 * d1 - d2) / 15
        T = composed_terms(mm, data, s.q, s.u, lifted=L)
        S = T.C + T.C.T
        acc.add("dynamics.skew.fd", np.abs(fd - S).max() / np.abs(S).max(), s)


def _state_checks(comp: Composition, mm: MemberModel, data: DynamicsData, ne: NewtonEuler,
                  md: ComposedMode, s: State, acc: _Acc, dynamics: bool) -> None:
    model, part = mm.kin, md.partition
    nt = model.nv_tree
    acc.add("closure.residual", np.abs(residual(model, s.q)).max(initial=0.0), s)
    L = composer_lift(mm.structure, mm.dm, data, s.q)
    one = lift(model, part, s.q)
    acc.add("composer.lift", np.abs(L.E - one.E).max() / max(1.0, np.abs(one.E).max()), s)
    v, edu = L.curvature(s.u)
    _, edu1 = curvature(model, part, s.q, s.u, one)
    acc.add("composer.curvature", _rel(edu, edu1), s)
    if not dynamics:
        return
    T = composed_terms(mm, data, s.q, s.u, s.f, s.wrenches, lifted=L)
    w = np.linalg.eigvalsh(T.Gamma)
    acc.add("dynamics.mass_pd", w[0] / w[-1], s)
    G, h, g = projected_terms(mm, data, T)
    acc.add("dynamics.memberwise.projected",
            max(_rel(T.Gamma, G), _rel(T.C @ s.u, h), _rel(T.g, g)), s)
    udot = forward_dynamics(T, s.u)
    a = accelerations(T, udot)
    Y = regressor(mm, T, udot, s.u)
    acc.add("dynamics.regressor.pinocchio",
            _rel(Y @ mm.params.vector, pinocchio_regressor_efforts(mm, data, T, a)), s)
    ref = kkt50.solve(mm.dm, data, s.q, s.u, part.independent, s.f, s.wrenches)
    acc.add("dynamics.delta_a.kkt50", delta(a[:nt], ref.a), s)
    tt = tree_terms(mm.dm, data, s.q, T.v)
    acc.add("dynamics.delta_f.kkt50", delta_f(tt.M, tt.h, a[:nt], ref.a), s)
    x_ref, _ = ne.accelerations(s.q, T.v, s.f, s.wrenches)
    acc.add("dynamics.delta_b.newton_euler", delta(ne.implied(s.q, T.v, a), x_ref), s)
    W = chord_wrenches(mm, data, T, udot, s.f, s.wrenches).by_name()
    R = ne.reactions(s.q, T.v, s.f, s.wrenches)
    links = [n for n in md.links]
    sups = [n + ".support" for n in md.supports]
    for name, group in (("forces.links.newton_euler", links),
                        ("forces.supports.newton_euler", sups)):
        if group:
            acc.add(name, max(_rel(W[n], R[n]) for n in group), s)


SPECS = {
    "closure.residual": (CLOSURE_LIMIT, "rad|m", "‖ρ‖∞ of loops, links and supports", False),
    "composer.lift": (TWO_ALGORITHMS_LIMIT, "1", "E₁G vs the one-level lift (same "
                      "independent set)", False),
    "composer.curvature": (TWO_ALGORITHMS_LIMIT, "1", "nested Ė u vs one-level curvature",
                           False),
    "composer.rate.fd": (RATE_LIMIT, "1", "Ė(v)X vs Richardson FD of E along closed motions",
                         False),
    "dynamics.skew.fd": (SKEW_LIMIT, "1", "Γ̇ (3-level Richardson FD) vs C + Cᵀ", False),
    "dynamics.memberwise.projected": (TWO_ALGORITHMS_LIMIT, "1", "member-wise Γ, C u, g vs "
                                      "projected tree terms", False),
    "dynamics.regressor.pinocchio": (TWO_ALGORITHMS_LIMIT, "1", "Y π vs projected "
                                     "pinocchio.computeJointTorqueRegressor", False),
    "dynamics.delta_a.kkt50": (KKT_LIMIT, "1", "tree accelerations vs 50-digit KKT", False),
    "dynamics.delta_f.kkt50": (KKT_LIMIT, "1", "M_T(a − a*) vs 50-digit KKT", False),
    "dynamics.delta_b.newton_euler": (REFERENCE_LIMIT, "1", "body [ω̇; a_com] vs maximal-"
                                      "coordinate Newton–Euler", False),
    "forces.links.newton_euler": (REFERENCE_LIMIT, "1", "link wrenches vs Newton–Euler "
                                  "multipliers", False),
    "forces.supports.newton_euler": (REFERENCE_LIMIT, "1", "support wrenches vs Newton–Euler "
                                     "multipliers", False),
    "dynamics.mass_pd": (PD_RTOL, "1", "λ_min/λ_max of Γ", True),
}


def run_composed_checks(comp: Composition, mode: str, *, samples: int, seed: int = DEFAULT_SEED,
                        dynamics: bool = False,
                        progress: Callable[[int], None] | None = None) -> list[Check]:
    """The catalogue (module docstring) on ``samples`` states of each of sets A and B of one
    composed mode."""
    limit_blas_threads(1)  # per-block SVDs of a few hundred rows: threads only contend
    md = comp.modes[mode]
    mm = MemberModel.build(comp, mode)
    data = DynamicsData.of(mm.dm)
    ne = NewtonEuler.build(mm.dm) if dynamics else None
    set_a, set_b = composed_states(comp, md, samples, seed)
    acc = _Acc({})
    for s in (*set_a, *set_b):
        _state_checks(comp, mm, data, ne, md, s, acc, dynamics)
        if progress:
            progress(1)
    for s in set_b[:FD_STATES]:
        _fd_checks(mm, data, md, s, acc, dynamics)
        if progress:
            progress(1)
    out = []
    for name, (limit, unit, what, lower) in SPECS.items():
        items = acc.values.get(name)
        if not items:
            continue
        vals = np.array([v for v, _ in items])
        n = int(np.argmin(vals) if lower else np.argmax(vals))
        detail = (f"{what}; median {np.median(vals):.2e}, {'min' if lower else 'max'} at "
                  f"state {items[n][1]} ({len(vals)} states)")
        c = make_check(name, float(vals[n]), limit, unit, detail, lower_bound=lower)
        out.append(Check(c.name, c.value, c.limit, c.unit, c.passed, c.detail, c.lower_bound,
                         mode))
    return out


def work_units(samples: int) -> int:
    """Progress units of :func:`run_composed_checks` per mode."""
    return 2 * samples + FD_STATES

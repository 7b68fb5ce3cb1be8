"""``rbc bench api``: what the public Python API (:mod:`rbc.api`) costs over the internal
calls it wraps, per call, in the same process (issue #25: ratio ≤ 1.1).

Three calls, each timed through the API and through the internals the command line used to
call directly, on the same states:

* ``forward_dynamics`` — ``Model.forward_dynamics(state, f)`` against the numba kernel's
  ``KernelModel.forward_dynamics(q, u, f)`` (the run-time evaluator);
* ``forward_dynamics_wrench`` — the same with one external wrench, which takes the
  reference path: against ``forward_dynamics(dm, reduced_terms(…, lifted=L))``;
* ``inverse_dynamics`` — ``Model.inverse_dynamics(state, u̇)`` against
  ``port_efforts(dm, reduced_terms(…, lifted=L), u̇)``.

The internal calls get the lift L at each state precomputed, as the API's state keeps it, so
the ratio is the API's own overhead (argument checks, name resolution, dispatch). States:
``q_ref`` with seeded random speeds u and port efforts f (:mod:`rbc.bench.dynamics`). The
machine is shared, so every call is timed alone, API and internal alternating call by call,
and per state the fastest of ``rounds`` samples counts (the usual estimate of the
uncontended cost, as ``timeit`` recommends), averaged over the states.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from rbc.bench.dynamics import sample_states
from rbc.verify.checks import DEFAULT_SEED

#: The issue's acceptance bound on API time / internal time.
RATIO_LIMIT = 1.1


def _paired(a: Callable[[int], object], b: Callable[[int], object], n: int, rounds: int
            ) -> tuple[float, float]:
    """Per-call seconds of ``a`` and ``b``: each call timed alone, the two sides alternating
    call by call (which goes first swaps every round), the fastest of ``rounds`` samples
    kept per state, averaged over the n states (a preempted call spoils only its sample)."""
    t = {a: np.full(n, np.inf), b: np.full(n, np.inf)}
    clock = time.perf_counter
    for r in range(rounds):
        first, second = (a, b) if r % 2 == 0 else (b, a)  # neither side always runs warm
        for i in range(n):
            t0 = clock()
            first(i)
            t1 = clock()
            second(i)
            t2 = clock()
            t[first][i] = min(t[first][i], t1 - t0)
            t[second][i] = min(t[second][i], t2 - t1)
    ta, tb = t[a], t[b]
    return float(ta.mean()), float(tb.mean())


def bench_api(bundle: str | Path, n_states: int = 100, rounds: int = 15,
              seed: int = DEFAULT_SEED) -> dict:
    """Time the API against its internal calls (module docstring).

    Args:
        bundle: compiled bundle; n_states: distinct states (≥ 1); rounds: timed samples
            per state and side (≥ 1).

    Returns:
        ``{"robot", "states", "rounds", "limit", "calls": {name: {"api_us", "internal_us",
        "ratio", "max_difference", "evaluator"}}, "passed"}``: µs per call (the mean over
        the states of each state's fastest sample); ``max_difference`` the largest
        |API − internal| over the states (the two must compute the same numbers);
        ``passed``: every ratio ≤ ``limit``.
    """
    from rbc.api import Wrench, load
    from rbc.model.dynamics import forward_dynamics, reduced_terms
    from rbc.model.reactions import port_efforts

    model = load(bundle)
    kin, part = model.compiled, model.compiled.partitions[model.partition]
    states = sample_states(kin, n_states, seed, model.partition)
    api_states = [model.state(s.q, s.u) for s in states]
    for s in api_states:
        model.lift(s)  # the state keeps its lift; the internal side gets it precomputed
    lifts = [s._cache["lift"] for s in api_states]
    km = model._build_kernel()
    dm, dd = model._dm, model._data
    body = next(b.name for b in kin.record.bodies if b.kind != "fixed")
    wrench = Wrench(body, (0.01, 0.02, 0.03), (0.1, -0.2, 0.3, 1.0, -2.0, 3.0))
    udot = [0.1 * np.cos(np.arange(model.nu) + i) for i in range(n_states)]
    Q = [s.q for s in states]
    U = [s.u for s in states]
    F = [s.f for s in states]

    def ref_fd(i: int, w: tuple = ()) -> np.ndarray:
        return forward_dynamics(dm, reduced_terms(dm, dd, part, Q[i], U[i], F[i], w,
                                                  lifted=lifts[i]))

    calls: dict[str, tuple[Callable[[int], np.ndarray], Callable[[int], np.ndarray], str]] = {
        "forward_dynamics": (
            lambda i: model.forward_dynamics(api_states[i], F[i]),
            (lambda i: km.forward_dynamics(Q[i], U[i], F[i])) if km else ref_fd,
            "kernel" if km else "reference"),
        "forward_dynamics_wrench": (
            lambda i: model.forward_dynamics(api_states[i], F[i], (wrench,)),
            lambda i: ref_fd(i, (wrench,)), "reference"),
        "inverse_dynamics": (
            lambda i: model.inverse_dynamics(api_states[i], udot[i]),
            lambda i: port_efforts(dm, reduced_terms(dm, dd, part, Q[i], U[i], None,
                                                     lifted=lifts[i]), udot[i])[0],
            "reference"),
    }
    out = {}
    for name, (api, internal, evaluator) in calls.items():
        diff = max(float(np.abs(api(i) - internal(i)).max(initial=0.0))
                   for i in range(n_states))  # also warms both (JIT, caches)
        a, b = _paired(api, internal, n_states, rounds)
        out[name] = {"api_us": 1e6 * a, "internal_us": 1e6 * b, "ratio": a / b,
                     "max_difference": diff, "evaluator": evaluator}
    return {"robot": kin.record.name, "states": n_states, "rounds": rounds,
            "limit": RATIO_LIMIT, "calls": out,
            "passed": all(c["ratio"] <= RATIO_LIMIT for c in out.values())}

"""``rbc bench dynamics``: time per state of rbc's reduced forward dynamics against
Pinocchio's ``constraintDynamics`` on the same states, in the same process.

Ours, two evaluators of the same model: ``kernel`` — one numba call
(:class:`rbc.kernels.evaluator.KernelModel`, the run-time default), timed warm, with its
first call in the process (JIT compile, or loading numba's cache) reported apart, and a
batch of all states in parallel (``prange``) on 1 thread and on every core numba may use;
``reference`` — :func:`rbc.model.dynamics.reduced_terms` (lift E, curvature Ė u, tree terms,
loads) plus :func:`rbc.model.dynamics.forward_dynamics` (Cholesky of M_r). Peer: Pinocchio's
``constraintDynamics`` (called from Python; model and constraints from
:func:`rbc.backends.pinocchio.pinocchio_model`) with the same q, v and tree efforts τ
(gravity excluded, Pinocchio adds it). Every call is timed alone with ``time.perf_counter``,
the three alternating call by call, each state's fastest of :data:`ROUNDS` samples counting
(a loaded machine preempts long timed stretches; :data:`ROUNDS`); "single" repeats one
state, "batched" runs over N distinct states. The parallel batch is timed in chunks of
:data:`BATCH_CHUNK` states the same way, 1 thread and all threads alternating.

States: the partition's assembled configuration ``q_ref`` with independent speeds
``u ~ N(0, speed²)`` and port efforts ``f ~ N(0, effort²)`` (seeded), lifted to all speeds
``v = E u`` so Pinocchio sees a velocity that satisfies the closure. The largest δ_a
(DESIGN.md §6) over the states is reported alongside, so a fast wrong answer shows.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pinocchio as pin

from rbc.backends.pinocchio import constraint_dynamics, pinocchio_model
from rbc.model.compiled import CompiledModel
from rbc.model.dynamics import (
    DynamicsData,
    DynamicsModel,
    forward_dynamics,
    reduced_terms,
    tree_acceleration,
)
from rbc.verify.checks import DEFAULT_SEED

#: Standard deviation of the sampled independent speeds [rad/s or m/s] ("small").
SPEED = 0.1
#: Standard deviation of the sampled port efforts [N·m or N].
EFFORT = 10.0


@dataclass(frozen=True)
class State:
    """One benchmark state: q (nq,), u (n_u,), f (n_act,)."""

    q: np.ndarray
    u: np.ndarray
    f: np.ndarray


def sample_states(model: CompiledModel, n: int, seed: int = DEFAULT_SEED,
                  partition: str = "default") -> list[State]:
    """``n`` states at ``q_ref`` with random independent speeds and port efforts (seeded)."""
    part = model.partitions[partition]
    rng = np.random.default_rng(seed)
    n_act = len(model.record.actuators)
    return [State(np.array(part.q_ref), SPEED * rng.normal(size=len(part.independent)),
                  EFFORT * rng.normal(size=n_act)) for _ in range(n)]


def peer_efforts(t, nt: int) -> np.ndarray:
    """(nt,) the tree efforts [N·m or N] that give Pinocchio's ``constraintDynamics`` the
    loads of rbc's reduced terms ``t`` (gravity excluded: Pinocchio adds it).

    Tree coordinates take their own efforts and Coulomb friction; efforts on cut-joint
    coordinates (drive friction or an actuator at a cut joint: the peer has no such
    coordinate) are carried to the tree by virtual power, ``τ_eq = (E_T⁺)ᵀ E_cᵀ τ_c``, so that
    ``E_Tᵀ τ_eq = E_cᵀ τ_c`` on every closed motion ``v = E u`` (E_T of full column rank:
    every speed moves the tree). Without it a record with drive friction at a cut joint (the
    humanoid's screws) read δ_a 0.15 against a peer that saw none of it.
    """
    full = t.tau_full + (t.coulomb if t.coulomb is not None else 0.0)
    tau = full[:nt] + t.tree.g
    tc = full[nt:]
    if tc.size and np.any(tc):
        E = t.lifted.E
        tau = tau + np.linalg.lstsq(E[:nt].T, E[nt:].T @ tc, rcond=None)[0]
    return tau


#: Timing: every call is timed alone, the evaluators alternating call by call, ROUNDS
#: samples per state and evaluator, the fastest counting; the mean over the states is the
#: time per state. On a loaded machine a time slice is lost to another process now and then:
#: a single call of tens of µs is rarely preempted in every round, while a chunk of calls or
#: a whole batch almost always is once the load exceeds the cores — then the longer a timed
#: stretch, the more of other processes' time it holds. Each ratio compares the evaluators
#: under the same conditions.
ROUNDS = 5
#: States per timed batch call (the batch's chunks, timed like single calls).
BATCH_CHUNK = 100


def per_call(fns: dict[str, Callable[[State], object]], states: list[State],
             rounds: int = ROUNDS) -> dict[str, float]:
    """Seconds per call of each function over the states (each state's fastest of
    ``rounds``, default :data:`ROUNDS`)."""
    total = dict.fromkeys(fns, 0.0)
    clock = time.perf_counter
    for s in states:
        best = dict.fromkeys(fns, np.inf)
        for _ in range(rounds):
            for name, fn in fns.items():
                t0 = clock()
                fn(s)
                t = clock() - t0
                if t < best[name]:
                    best[name] = t
        for name in fns:
            total[name] += best[name]
    return {name: t / len(states) for name, t in total.items()}


def _batch_per_state(km, Q: np.ndarray, U: np.ndarray, Fp: np.ndarray,
                     threads: tuple[int, ...]) -> dict[int, tuple[float, float]]:
    """``(wall, cpu)`` µs per state of the parallel batch on each thread count: chunks of
    :data:`BATCH_CHUNK` states, each chunk's fastest of :data:`ROUNDS` calls per thread
    count (alternating), summed over the chunks. The CPU time (all threads of the process)
    shows the parallel work's efficiency even when a loaded machine leaves fewer free cores
    than threads: on a loaded machine the wall-clock speed-up measures the load."""
    import numba

    before = numba.get_num_threads()
    wall, cpu = dict.fromkeys(threads, 0.0), dict.fromkeys(threads, 0.0)
    try:
        for c in range(0, Q.shape[0], BATCH_CHUNK):
            q, u, f = Q[c: c + BATCH_CHUNK], U[c: c + BATCH_CHUNK], Fp[c: c + BATCH_CHUNK]
            best = {n: [np.inf, np.inf] for n in threads}
            for _ in range(ROUNDS):
                for n in threads:
                    numba.set_num_threads(n)
                    c0, t0 = time.process_time(), time.perf_counter()
                    km.forward_dynamics_batch(q, u, f)
                    t1, c1 = time.perf_counter(), time.process_time()
                    best[n] = [min(best[n][0], t1 - t0), min(best[n][1], c1 - c0)]
            for n in threads:
                wall[n] += best[n][0]
                cpu[n] += best[n][1]
    finally:
        numba.set_num_threads(before)
    return {n: (1e6 * wall[n] / Q.shape[0], 1e6 * cpu[n] / Q.shape[0]) for n in threads}


def bench_dynamics(bundle: str | Path, n_states: int = 1000, single_repeats: int = 200,
                   seed: int = DEFAULT_SEED) -> dict:
    """Time ours (kernel and reference evaluators) and Pinocchio's forward dynamics per state.

    Args:
        bundle: compiled bundle.
        n_states: number of distinct states of the batched run (≥ 1).
        single_repeats: calls on one state for the single-state time.

    Returns:
        ``{"robot", "states", "ours": {"single_us", "batched_us"} (the kernel),
        "reference": {…}, "pinocchio": {…}, "ratio": {"single", "batched"} (kernel /
        Pinocchio), "ratio_reference": {…}, "delta_a": max δ_a kernel vs Pinocchio,
        "delta_a_reference", "kernel": {"first_call_s", "threads", "batch_1_thread_us",
        "batch_parallel_us", "parallel_speedup", "batch_1_thread_cpu_us",
        "batch_parallel_cpu_us", "parallel_efficiency"}}`` (times per state in µs; the CPU
        times are the process's, all threads; efficiency = 1-thread CPU / parallel CPU).
    """
    import numba

    from rbc.kernels.evaluator import KernelModel

    kin = CompiledModel.from_bundle(bundle)
    part = kin.partitions["default"]
    dm = DynamicsModel.build(kin)
    dd = DynamicsData.of(dm)
    pm = pinocchio_model(kin, part)
    pdata = pm.tree.model.createData()
    cdatas = pm.constraint_datas()
    pin.initConstraintDynamics(pm.tree.model, pdata, pm.constraints, cdatas)
    km = KernelModel(kin, part, dm.tree)
    states = sample_states(kin, n_states, seed)
    t1 = time.perf_counter()
    km.terms(states[0].q, states[0].u, states[0].f)  # JIT compile or numba cache load
    first_call = time.perf_counter() - t1
    nt = kin.nv_tree
    # the peer's inputs (v, τ) come from the lift; prepared outside the timed loop
    inputs = []
    delta = delta_ref = 0.0
    for s in states:
        t = reduced_terms(dm, dd, part, s.q, s.u, f=s.f)
        a = tree_acceleration(t, forward_dynamics(dm, t))[:nt]
        k = km.terms(s.q, s.u, s.f)
        # the timed kernel call's u̇ (the recursion over nodes where the layout has them)
        a_k = (k.E @ km.forward_dynamics(s.q, s.u, s.f) + k.edu)[:nt]
        tau = peer_efforts(t, nt)
        inputs.append((s.q, t.v, tau))
        ap = constraint_dynamics(pm, pdata, cdatas, s.q, t.v, tau)
        scale = max(1.0, np.abs(ap).max())
        delta_ref = max(delta_ref, float(np.abs(ap - a).max() / scale))
        delta = max(delta, float(np.abs(ap - a_k).max() / scale))
    peer_in = {id(s): x for s, x in zip(states, inputs, strict=True)}

    def kernel(s: State) -> np.ndarray:
        return km.forward_dynamics(s.q, s.u, s.f)

    def reference(s: State) -> np.ndarray:
        return forward_dynamics(dm, reduced_terms(dm, dd, part, s.q, s.u, f=s.f))

    def peer(s: State) -> np.ndarray:
        return constraint_dynamics(pm, pdata, cdatas, *peer_in[id(s)])

    fns = {"ours": kernel, "reference": reference, "pinocchio": peer}
    single = per_call(fns, [states[0]] * single_repeats)
    batched = per_call(fns, states)
    res = {name: {"single_us": 1e6 * single[name], "batched_us": 1e6 * batched[name]}
           for name in fns}
    Q = np.array([s.q for s in states])
    U = np.array([s.u for s in states])
    Fp = np.array([s.f for s in states]).reshape(n_states, -1)
    threads = numba.get_num_threads()
    km.forward_dynamics_batch(Q[:2], U[:2], Fp[:2])  # compile / load the parallel kernel
    per_state = _batch_per_state(km, Q, U, Fp, tuple(sorted({1, threads})))

    def ratios(name: str) -> dict:
        return {k: res[name][f"{k}_us"] / res["pinocchio"][f"{k}_us"]
                for k in ("single", "batched")}

    return {"robot": kin.record.name, "states": n_states, **res,
            "ratio": ratios("ours"), "ratio_reference": ratios("reference"),
            "delta_a": delta, "delta_a_reference": delta_ref,
            "kernel": {"first_call_s": first_call, "threads": threads,
                       "batch_1_thread_us": per_state[1][0],
                       "batch_parallel_us": per_state[threads][0],
                       "parallel_speedup": per_state[1][0] / per_state[threads][0],
                       "batch_1_thread_cpu_us": per_state[1][1],
                       "batch_parallel_cpu_us": per_state[threads][1],
                       "parallel_efficiency": per_state[1][1] / per_state[threads][1]}}

"""``rbc bench scaling``: time per kernel evaluation against the number of loops.

The mechanisms are :func:`rbc.bench.compile.chain_record`'s serial chains of N planar
four-bar loops (loop i mounted on the rocker of loop i − 1, each crank actuated: N
independent speeds, 4N coordinates, 3N of them in the tree, 6N closure rows of rank 3N, one
dependency module per loop). Each chain is compiled (not timed), laid out for the kernels
(:class:`rbc.kernels.evaluator.KernelModel`) and evaluated at its reference configuration
with seeded random speeds and port efforts (:func:`rbc.bench.dynamics.sample_states`).

Three nested kernel calls split the evaluation: ``geometry`` (poses, closure residual and
Jacobian, the module-blocked ``R_p`` factors and the lift E — by node, nothing nv × n_u
formed, where the chain splits into nodes: always here), ``curvature`` (geometry plus the
body velocities, the velocity product and ``Ė u``) and ``forward`` (what
``KernelModel.forward_dynamics`` runs: curvature plus, where the layout chooses it — from
about 25 loops on —, the recursion over the lift's nodes, :mod:`rbc.kernels.articulated`;
else the tree terms — RNEA, CRBA —, the reduced ``M_r = E_Tᵀ M_T E_T``, the right-hand side
and the Cholesky solve). ``recursion`` in each row says which. Calls are timed one by one,
the three alternating, each state's fastest of :data:`ROUNDS` counting (as ``rbc bench
dynamics``, with more rounds). The peer is the smallest N in the same process: the ratio is
(time per loop at N) / (time per loop at the smallest N); a cost linear in the loops keeps it
near 1.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from rbc.bench.compile import chain_record, with_ratios
from rbc.bench.dynamics import State, per_call, sample_states
from rbc.verify.checks import DEFAULT_SEED

#: The three nested parts of one evaluation (module docstring), in call order.
PARTS = ("geometry", "curvature", "forward")

#: Rounds per state (each state's fastest counts). More than ``rbc bench dynamics``'s
#: :data:`~rbc.bench.dynamics.ROUNDS`: a call of milliseconds (1000 loops) outlasts a
#: time slice of a niced process on a loaded machine — at load 12 under ``nice 10`` two
#: thirds of the 2.5 ms forward calls were preempted (an involuntary context switch each,
#: 4–15 ms instead of 2.5), so the fastest of 5 was often a preempted one.
ROUNDS = 20


def bench_scaling(loops: Sequence[int], n_states: int = 5, seed: int = DEFAULT_SEED,
                  progress: Callable[[int], None] | None = None) -> list[dict]:
    """Kernel evaluation time per loop on chains of each size.

    Args:
        loops: loop counts N (≥ 1 each).
        n_states: states per chain (each timed :data:`~rbc.bench.dynamics.ROUNDS` times).
        progress: called with N after each chain.

    Returns:
        One row per N (ascending): ``{"loops", "nv", "nv_tree", "recursion", "independent",
        "compile_s", "first_call_s", "geometry_us", "curvature_us", "forward_us",
        "per_loop_us", "ratio"}`` — times per evaluation in µs, ``per_loop_us`` =
        forward / N, ``ratio`` = per_loop_us / the smallest N's.
    """
    from rbc.compiler import compile_to_file
    from rbc.kernels.evaluator import KernelModel
    from rbc.kernels.layout import S_RECURSE
    from rbc.model.compiled import CompiledModel

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in sorted(loops):
            record, bundle = Path(tmp) / f"chain{n}.yaml", Path(tmp) / f"chain{n}.h5"
            record.write_text(chain_record(n))
            t0 = time.perf_counter()
            compile_to_file(record, bundle)
            compile_s = time.perf_counter() - t0
            kin = CompiledModel.from_bundle(bundle)
            part = kin.partitions["default"]
            km = KernelModel(kin, part)
            states = sample_states(kin, n_states, seed)
            t1 = time.perf_counter()
            km.forward_dynamics(states[0].q, states[0].u, states[0].f)
            first = time.perf_counter() - t1
            t = _part_times(km, states)
            rows.append({"loops": n, "nv": kin.nv, "nv_tree": kin.nv_tree,
                         "recursion": bool(km.layout.segment("sizes")[S_RECURSE]),
                         "independent": int(part.independent.size), "compile_s": compile_s,
                         "first_call_s": first,
                         **{f"{p}_us": 1e6 * t[p] for p in PARTS},
                         "per_loop_us": 1e6 * t["forward"] / n})
            if progress:
                progress(n)
    return with_ratios(rows, "per_loop_us")


def _part_times(km, states: list[State]) -> dict[str, float]:
    """Seconds per call of the three nested kernel calls (:data:`PARTS`) over the states."""

    from rbc.kernels.layout import S_NNODE

    by_node = bool(km.layout.segment("sizes")[S_NNODE])

    def geometry(s: State) -> object:
        return km.node_lift(s.q) if by_node else km.lift(s.q)

    def curvature(s: State) -> object:
        return km.curvature(s.q, s.u)

    def forward(s: State) -> np.ndarray:
        return km.forward_dynamics(s.q, s.u, s.f)

    return per_call(dict(zip(PARTS, (geometry, curvature, forward), strict=True)), states,
                    ROUNDS)

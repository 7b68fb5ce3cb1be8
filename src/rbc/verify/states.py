"""State sets for the dynamics checks (docs/dynamics.md, "State sets").

* **Set A** — sampled feasible configurations at rest: a random walk along the closure
  manifold from ``q_ref`` (:func:`rbc.verify.kinematics.sample_configurations`: lifted steps
  by :func:`rbc.model.solve.solve`'s continuation);
  u = 0, no port efforts, no external wrenches (gravity and passive loads only).
* **Set B** — the same configurations with random independent speeds, port efforts within
  the actuators' effort limits and one external wrench at a named body point.

Randomness: one ``numpy.random.default_rng(seed)`` (default :data:`DEFAULT_SEED`). Draw
order: first the n configurations of set A (the sampler's own draws, redraws included),
then per configuration, in order: u (n_u uniforms in ``±SPEED·scale_i``), f (one uniform per
actuator within its effort limits, 0 without limits), the point (one integer over the named
points), the force (3 uniforms in ``±WRENCH_FRACTION·W``) and the moment (3 uniforms in
``±WRENCH_FRACTION·W·L``), with W the weight of the moving bodies and L the partition's length
scale.

Named points: every body's ``frames``, the record's tasks and supports, and ``<body>.com``
(the centre of mass) of every moving body, in that order.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rbc.model.compiled import CompiledModel, Partition
from rbc.model.dynamics import Wrench
from rbc.model.partition import scales
from rbc.verify.checks import DEFAULT_SEED
from rbc.verify.kinematics import sample_configurations

#: Largest independent speed of set B [rad/s, or partition length scales per second]: fast
#: enough that the velocity-product terms (∝ u²) are of the order of the gravity terms on the
#: shipped records, so the curvature omission study is done "at speed".
SPEED = 2.0
#: External force and moment amplitudes as a fraction of the weight W [N] (and W·L [N·m]):
#: a load comparable to gravity without dwarfing it.
WRENCH_FRACTION = 0.2


@dataclass(frozen=True, eq=False)
class State:
    """One state of a set.

    Attributes:
        set: ``"A"`` or ``"B"``; index: position in its set.
        q: (nq,) closed configuration; u: (n_u,) independent speeds; f: (n_act,) port
        efforts [N·m | N]; wrenches: external wrenches (world axes) at body points.
    """

    set: str
    index: int
    q: np.ndarray
    u: np.ndarray
    f: np.ndarray
    wrenches: tuple[Wrench, ...]


def named_points(model: CompiledModel) -> list[tuple[str, str, tuple[float, float, float]]]:
    """``(point name, body, xyz in body coordinates)`` of every named point."""
    rec = model.record
    out = [(f"{b.name}.{n}", b.name, tuple(p.xyz)) for b in rec.bodies for n, p in b.frames]
    out += [(t.name, t.body, tuple(t.pose.xyz)) for t in (*rec.tasks, *rec.supports)]
    out += [(f"{b.name}.com", b.name, tuple(b.com)) for b in rec.bodies if b.kind != "fixed"]
    return out


def make_states(model: CompiledModel, part: Partition, n: int, seed: int = DEFAULT_SEED
                ) -> tuple[list[State], list[State]]:
    """Sets A and B of n states each (module docstring for the draws).

    Raises:
        ClosureError: the sampler could not close enough configurations.
    """
    rng = np.random.default_rng(seed)
    return states_at(model, part, sample_configurations(model, part, n, rng).q, rng)


def states_at(model: CompiledModel, part: Partition, qs, rng: np.random.Generator
              ) -> tuple[list[State], list[State]]:
    """Sets A and B at the closed configurations ``qs`` (each (nq,)), the set-B draws from
    ``rng`` in the order of the module docstring (what :func:`make_states` does after
    sampling; a composed system draws its configurations its own way)."""
    rec = model.record
    nu = part.independent.size
    sc = scales(model, part.length_scale).cols[part.independent]
    zero_f = np.zeros(len(rec.actuators))
    set_a = [State("A", i, q, np.zeros(nu), zero_f, ()) for i, q in enumerate(qs)]
    points = named_points(model)
    weight = sum(b.mass for b in rec.bodies if b.kind != "fixed") * float(
        np.linalg.norm(rec.gravity))
    W = WRENCH_FRACTION * max(weight, 1.0)
    set_b = []
    for i, q in enumerate(qs):
        u = rng.uniform(-1.0, 1.0, nu) * SPEED * sc
        f = np.array([rng.uniform(*a.effort_limits) if a.effort_limits else 0.0
                      for a in rec.actuators])
        _, body, xyz = points[int(rng.integers(len(points)))]
        force = rng.uniform(-W, W, 3)
        moment = rng.uniform(-W, W, 3) * part.length_scale
        set_b.append(State("B", i, q, u, f,
                           (Wrench(body, xyz, (*moment.tolist(), *force.tolist())),)))
    return set_a, set_b

"""Pass ``rank``: modules → assembled reference configuration and partitions (DESIGN.md §5).

Builds the kinematic model from the IR, acquires the first feasible configuration from the
record's initial guesses (:func:`rbc.model.solve.acquire`: the assembly nearest the guesses,
then the independent coordinates continued to their guessed values), and runs the rank analysis
there: the ``default`` partition (actuated and requested joints preferred as independent)
plus one partition per ``--partition NAME=j1,j2,…`` request, all at the same reference
configuration. With ``--modes all`` / ``--mode NAME=s1,…`` it also analyses the support modes
(:mod:`rbc.model.modes`: each active support a closure to the world, anchored at the
support's pose in the reference configuration). Post-conditions: every partition and mode
has ``|independent| = nv − rank`` (of its own model) and its reference configuration closes
to the closure tolerance.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar

import numpy as np

from rbc.errors import UsageError, did_you_mean
from rbc.ir.bundle import group_name_problem
from rbc.ir.modules import Modules
from rbc.model.closure import CLOSURE_TOL
from rbc.model.compiled import CompiledModel, ModeInfo, Partition
from rbc.model.kinematics import residual
from rbc.model.modes import enumerate_modes, model_for
from rbc.model.partition import partition_at
from rbc.model.rolling import rolling_partition
from rbc.model.solve import acquire_partitioned
from rbc.passes.base import check


@dataclass(frozen=True, eq=False)
class Partitioned:
    """The modules IR, the kinematic model built from it, and the partitions computed at the
    reference configuration."""

    modules: Modules
    model: CompiledModel
    partitions: tuple[Partition, ...]
    modes: tuple[ModeInfo, ...] = ()
    mode_notes: tuple[str, ...] = ()

    def dump(self) -> str:
        """Human-readable listing (``--dump-after rank``)."""
        lines = [f"partitions: {len(self.partitions)}"]
        for p in self.partitions:
            lines.append(f"  {p.name}: rank {p.rank}, independent {list(p.joints)} "
                         f"({p.independent.size} speeds), length scale {p.length_scale:.4g} m")
        if self.modes:
            lines.append(f"modes: {len(self.modes)}")
        for m in self.modes:
            lines.append(f"  {m.name}: supports {list(m.supports)}, closure rank {m.tree_rank} "
                         f"on the tree speeds, {m.partition.independent.size} independent "
                         f"speeds, actuation rank {m.actuation_rank}")
        lines += [f"  note: {n}" for n in self.mode_notes]
        return "\n".join(lines)


def parse_partition_request(text: str) -> tuple[str, tuple[str, ...]]:
    """``"NAME=j1,j2"`` → ``("NAME", ("j1", "j2"))``.

    Raises:
        UsageError: not of the form NAME=joint[,joint…], or a NAME that cannot name a
            bundle group (:func:`rbc.ir.bundle.group_name_problem`).
    """
    name, sep, joints = text.partition("=")
    names = tuple(j.strip() for j in joints.split(",") if j.strip())
    if not sep or not name.strip() or not names:
        raise UsageError(f"--partition '{text}': expected NAME=joint1,joint2,…")
    problem = group_name_problem(name.strip())
    if problem:
        raise UsageError(f"--partition '{text}': the name {problem}; expected a plain name "
                         "(it names a bundle group: no '/', not '.' or '..')")
    return name.strip(), names


@dataclass(frozen=True)
class RankAnalysis:
    """Acquire the reference configuration and compute the named partitions.

    Attributes:
        requests: ``((name, (joint, …)), …)`` extra partitions with prescribed independent
            joints.
        length_scale: length [m] for scaling C (None: derived from the record).
    """

    name: ClassVar[str] = "rank"
    requests: tuple[tuple[str, tuple[str, ...]], ...] = ()
    length_scale: float | None = None
    mode_requests: tuple[tuple[str, tuple[str, ...]], ...] = ()
    all_modes: bool = False

    def run(self, mods: Modules) -> Partitioned:
        model = CompiledModel.from_ir(mods)
        self._check_requests(model)
        q, _, at = acquire_partitioned(model, length=self.length_scale)
        # the acquisition's own rank analysis when it was made at q (the guess closed)
        parts = [at if at is not None and np.array_equal(at.q_ref, q) else
                 partition_at(model, q, name="default", length=self.length_scale)]
        for name, joints in self.requests:
            parts.append(partition_at(model, q, name=name, independent_joints=joints,
                                      length=self.length_scale))
        for p in parts:  # the rolling layer on each partition: wheels on the ground, rank
            rolling_partition(model, p)
        modes, notes = (), ()
        if self.all_modes or self.mode_requests:
            with_parts = replace(model, partitions={p.name: p for p in parts})
            modes, notes = enumerate_modes(with_parts, self.length_scale, self.mode_requests,
                                           self.all_modes)
        return Partitioned(mods, model, tuple(parts), modes, notes)

    def _check_requests(self, model: CompiledModel) -> None:
        joints = [j.name for j in model.record.joints]
        seen = {"default"}
        for name, names in self.requests:
            if name in seen:
                raise UsageError(f"--partition {name}: the name is used twice "
                                 "('default' is reserved)")
            seen.add(name)
            twice = sorted({j for j in names if names.count(j) > 1})
            if twice:
                raise UsageError(f"--partition {name}: joint(s) {', '.join(twice)} listed twice")
            for j in names:
                if j not in joints:
                    hint = did_you_mean(j, joints)
                    raise UsageError(
                        f"--partition {name}: unknown joint '{j}'"
                        + (f" (did you mean '{hint}'?)" if hint else "")
                        + "; valid choices: " + ", ".join(joints))

    def verify(self, out: Partitioned) -> None:
        model = out.model
        for p in out.partitions:
            check(p.independent.size == model.nv - p.rank, self.name,
                  f"{p.name}: nv − rank independent speeds")
            check(np.intersect1d(p.independent, p.dependent).size == 0, self.name,
                  f"{p.name}: independent and dependent are disjoint")
            rho = residual(model, p.q_ref)
            check(np.abs(rho).max(initial=0.0) <= CLOSURE_TOL, self.name,
                  f"{p.name}: the reference configuration closes")
        for m in out.modes:
            mm, p = model_for(model, m), m.partition
            check(p.independent.size == mm.nv - p.rank, self.name,
                  f"mode {m.name}: nv − rank independent speeds")
            check(m.tree_rank == mm.nv_tree - p.independent.size, self.name,
                  f"mode {m.name}: closure rank on the tree speeds")
            check(np.abs(residual(mm, p.q_ref)).max(initial=0.0) <= CLOSURE_TOL, self.name,
                  f"mode {m.name}: the reference configuration closes")

"""Pass ``rank``: modules → assembled reference configuration and partitions (DESIGN.md §5).

Builds the kinematic model from the IR, acquires the first feasible configuration from the
record's initial guesses (:func:`rbc.model.closure.acquire`), and runs the rank analysis
there: the ``default`` partition (actuated and requested joints preferred as independent)
plus one partition per ``--partition NAME=j1,j2,…`` request, all at the same reference
configuration. Post-conditions: every partition has ``|independent| = nv − rank`` and its
reference configuration closes to the closure tolerance.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from rbc.errors import UsageError, did_you_mean
from rbc.ir.modules import Modules
from rbc.model.closure import CLOSURE_TOL, acquire
from rbc.model.compiled import CompiledModel, Partition
from rbc.model.kinematics import residual
from rbc.model.partition import partition_at
from rbc.passes.base import check


@dataclass(frozen=True, eq=False)
class Partitioned:
    """The modules IR, the kinematic model built from it, and the partitions computed at the
    reference configuration."""

    modules: Modules
    model: CompiledModel
    partitions: tuple[Partition, ...]

    def dump(self) -> str:
        """Human-readable listing (``--dump-after rank``)."""
        lines = [f"partitions: {len(self.partitions)}"]
        for p in self.partitions:
            lines.append(f"  {p.name}: rank {p.rank}, independent {list(p.joints)} "
                         f"({p.independent.size} speeds), length scale {p.length_scale:.4g} m")
        return "\n".join(lines)


def parse_partition_request(text: str) -> tuple[str, tuple[str, ...]]:
    """``"NAME=j1,j2"`` → ``("NAME", ("j1", "j2"))``.

    Raises:
        UsageError: not of the form NAME=joint[,joint…].
    """
    name, sep, joints = text.partition("=")
    names = tuple(j.strip() for j in joints.split(",") if j.strip())
    if not sep or not name.strip() or not names:
        raise UsageError(f"--partition '{text}': expected NAME=joint1,joint2,…")
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

    def run(self, mods: Modules) -> Partitioned:
        model = CompiledModel.from_ir(mods)
        self._check_requests(model)
        q, _ = acquire(model)
        parts = [partition_at(model, q, name="default", length=self.length_scale)]
        for name, joints in self.requests:
            parts.append(partition_at(model, q, name=name, independent_joints=joints,
                                      length=self.length_scale))
        return Partitioned(mods, model, tuple(parts))

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

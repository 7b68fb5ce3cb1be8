"""Per-robot models of a composed mode: each member's own dynamics on its own supports,
the links between the robots not modelled (issue #20 item 4, the "per-robot" policy and the
acceptance's per-robot allocation; docs/allocation.md "Per-robot models").

For every member k a one-member composition of the member's own bundle at its placement,
with one mode whose supports are the member's supports of the composed mode and no links,
gives the member's :class:`~rbc.compose.dynamics.MemberModel` (at the composed mode's support
anchors, so the robot stands where it stands in the formation) and its partition. A state
of the composed mode model maps onto each robot's mode model by joint name (the members'
joints keep their ``MEMBER/`` names; the link charts have no counterpart), and the robot's
port efforts map back by actuator name. What the hand links would carry is not in any
robot's model: where the formation needs link forces, the per-robot allocation shows it as
slack.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from rbc.compose.dynamics import MemberModel
from rbc.model.dynamics import DynamicsData


@dataclass(frozen=True, eq=False)
class RobotModel:
    """One member's own model inside a composed mode.

    Attributes:
        name: member name; mm: its mode's member model; part: its partition;
        data: scratch data; q_index: (nq_k,) its q entries in the composed mode model's q;
        v_index: (nv_k,) likewise for v; ports: (n_act_k,) its actuators' positions in the
        composed mode model's actuator order.
    """

    name: str
    mm: MemberModel
    part: object
    data: DynamicsData
    q_index: np.ndarray
    v_index: np.ndarray
    ports: np.ndarray

    def state(self, q: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The robot's (q_k, v_k) of a composed state (q (nq,), v (nv,)); also maps
        accelerations (any (nv,) vector) as its second part."""
        return np.asarray(q, dtype=float)[self.q_index], np.asarray(v, dtype=float)[self.v_index]


def _solo_text(comp, member, supports: Sequence[str]) -> str:
    """The one-member composition file of ``member`` with its ``supports``."""
    from rbc.ir import spatial as sp

    T = member.placement
    quat = sp.quat_from_rotation(np.asarray(T.rotation))
    xyz = ", ".join(repr(float(x)) for x in T.translation)
    qs = ", ".join(repr(float(x)) for x in quat)
    sup = ", ".join(f"{member.name}.{s.split('/', 1)[1]}" for s in supports)
    return (f"rbc_composition: 1\nname: solo_{member.name}\nmembers:\n"
            f"  - {{name: {member.name}, bundle: {member.name}.h5, "
            f"placement: {{xyz: [{xyz}], quat: [{qs}]}}, partition: {member.partition.name}}}\n"
            f"modes:\n  - {{name: own, supports: [{sup}], links: none}}\n")


def robot_models(comp, mode: str, anchors: np.ndarray | None = None
                 ) -> tuple[RobotModel, ...]:
    """Every member's own model in the composed mode ``mode`` (module docstring), its
    supports at ``anchors`` ((k, 7) in the mode's support order; default the mode's
    reference anchors — a stepping formation's anchors move with its steps).

    Raises:
        RecordError, CompileError: a member whose own mode cannot be analysed (as
            :func:`rbc.compose.system.compose`).
    """
    md = comp.modes[mode]
    big = comp.model(md)
    every = md.anchors if anchors is None else np.asarray(anchors, dtype=float)
    out = []
    for m in comp.members:
        own = tuple(s for s in md.supports if s.startswith(m.name + "/"))
        solo = _solo(comp, m, own)
        mine = np.array([every[md.supports.index(s)] for s in own]).reshape(-1, 7)
        mm = MemberModel.build(solo, "own", mine)
        kin = mm.kin
        acts = {a.name: n for n, a in enumerate(big.record.actuators)}
        ports = np.array([acts[a.name] for a in kin.record.actuators], dtype=np.int64)
        out.append(RobotModel(m.name, mm, solo.modes["own"].partition, DynamicsData.of(mm.dm),
                              _ordered(kin, big, "q"), _ordered(kin, big, "v"), ports))
    return tuple(out)


@functools.lru_cache(maxsize=64)
def _solo(comp, member, supports: tuple[str, ...]):
    """The one-member composition of ``member`` on its ``supports`` (cached: the member
    models of other anchors reuse its analysis)."""
    from rbc.compose.spec import parse_composition_text
    from rbc.compose.system import compose

    spec = parse_composition_text(_solo_text(comp, member, supports), f"<{member.name} alone>")
    return compose(spec, [member.model])


def _ordered(kin, big, which: str) -> np.ndarray:
    """(n,) for every q (or v) entry of the robot's mode model ``kin`` its index in the
    composed mode model ``big`` (by joint name)."""
    n = kin.nq if which == "q" else kin.nv
    out = np.full(n, -1, dtype=np.int64)
    for e, name in enumerate(kin.edge_names):
        sl = kin.q_slice(e) if which == "q" else kin.v_slice(e)
        if sl.stop == sl.start:
            continue
        E = big.edge(name)
        bl = big.q_slice(E) if which == "q" else big.v_slice(E)
        out[sl] = np.arange(bl.start, bl.stop)
    if np.any(out < 0):
        raise ValueError(f"{which} entries of the robot model without a counterpart in the "
                         "composed mode model")
    return out


__all__: Sequence[str] = ("RobotModel", "robot_models")

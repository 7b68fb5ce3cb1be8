"""Joint-map kernels against the joint library (Pinocchio's one-joint models)."""

from __future__ import annotations

import numpy as np
import pytest

from rbc.ir.joints import joint_kind
from rbc.ir.record import Joint
from rbc.kernels import joints as jk
from rbc.kernels.layout import CODES

JOINTS = [
    Joint(name="r", type="revolute", parent="a", child="b", axis=(0.3, -0.2, 0.9)),
    Joint(name="p", type="prismatic", parent="a", child="b", axis=(1.0, 2.0, -0.5)),
    Joint(name="h", type="helical", parent="a", child="b", axis=(0.0, 0.6, 0.8), lead=0.03),
    Joint(name="u", type="universal", parent="a", child="b",
          axes=((1.0, 0.0, 0.2), (0.1, 1.0, 0.0))),
    Joint(name="c", type="cylindrical", parent="a", child="b", axis=(0.2, 0.2, 1.0)),
    Joint(name="pl", type="planar", parent="a", child="b", axis=(0.3, 0.4, -0.8)),
    Joint(name="pz", type="planar", parent="a", child="b"),
    Joint(name="s", type="spherical", parent="a", child="b"),
    Joint(name="f", type="free", parent="a", child="b"),
]


def _params(kind):
    axis, axis2 = np.zeros(3), np.zeros(3)
    if hasattr(kind, "axis"):
        axis = np.array(kind.axis)
    if kind.type == "universal":
        axis, axis2 = np.array(kind.axes[0]), np.array(kind.axes[1])
    pitch = getattr(kind, "lead", 0.0) / (2 * np.pi)
    return CODES[kind.type], jk.parameters(axis, axis2, pitch, kind.alignment().rotation)


@pytest.mark.parametrize("joint", JOINTS, ids=lambda j: j.name)
def test_joint_kernels_match_the_joint_library(joint):
    kind = joint_kind(joint)
    code, P = _params(kind)
    rng = np.random.default_rng(5)
    for scale in (1e-6, 0.3, 2.0):
        q = kind.random(rng)
        v = scale * rng.normal(size=kind.nv)
        T = np.empty(12)
        jk.motion(code, q, 0, P, 0, T, 0)
        R, p = T[:9].reshape(3, 3), T[9:]
        Q = kind.motion(q)
        # closed forms of the same maps: a few roundings of O(1) entries
        assert np.abs(R - Q.rotation).max() <= 1e-14
        assert np.abs(p - Q.translation).max() <= 1e-14 * max(1.0, np.abs(q).max())
        S = np.empty(36)
        jk.subspace(code, q, 0, P, 0, S)
        S = S[: 6 * kind.nv].reshape(kind.nv, 6).T  # column d at S[6d:6d+6]
        assert np.abs(S - kind.motion_subspace(q)).max() <= 1e-14
        sd = np.zeros(6)
        jk.subspace_rate(code, q, 0, v, 0, P, 0, sd)
        assert np.abs(sd - kind.motion_subspace_rate(q, v)).max() <= 1e-14
        out = np.empty(kind.nq)
        jk.integrate(code, q, v, out)
        ref = kind.integrate(q, v)
        if kind.has_quat:  # q and −q are the same rotation
            s = -1.0 if np.dot(out[-4:], ref[-4:]) < 0 else 1.0
            out[-4:] *= s
        assert np.abs(out - ref).max() <= 1e-14 * max(1.0, np.abs(ref).max())

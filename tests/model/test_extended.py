"""Loop velocities in extended precision (rbc.model.extended, #12 item 7)."""

from __future__ import annotations

import numpy as np
import pytest

from rbc.ir import joints as jt
from rbc.model import extended as ext
from rbc.model import kinematics as kin
from rbc.model.partition import lift
from tests.ir.test_joints import JOINTS
from tests.model.conftest import compiled

#: longdouble carries 64 significand bits on x86-64; the double maps it is compared with are
#: rounded at 1.1e-16 per operation over a few dozen operations.
DOUBLE_ROUNDOFF = 1e-14


@pytest.mark.parametrize("name", list(JOINTS))
def test_joint_motion_and_subspace_equal_the_double_maps(name):
    """Every kind's extended-precision Q(q) and S(q) equal JointKind.motion/motion_subspace
    (which are tested against Pinocchio) to double round-off, at 20 seeded random q."""
    kind = jt.joint_kind(JOINTS[name])
    rng = np.random.default_rng(7)
    for _ in range(20):
        q = kind.random(rng)
        R, p = ext.joint_motion(kind, q)
        M = kind.motion(q)
        assert np.abs(np.asarray(R, dtype=float) - M.rotation).max() <= DOUBLE_ROUNDOFF
        assert np.abs(np.asarray(p, dtype=float) - M.translation).max() <= DOUBLE_ROUNDOFF
        S = np.asarray(ext.motion_subspace(kind, q), dtype=float)
        assert np.abs(S - kind.motion_subspace(q)).max(initial=0.0) <= DOUBLE_ROUNDOFF


@pytest.mark.parametrize("name", ["fourbar", "fivebar", "stewart", "excavator"])
def test_loop_velocities_are_the_closure_jacobian_times_the_lift(name):
    """C (double) from the extended pass equals kinematics.closure_jacobian's, and C E from
    it is round-off at closure (the lift's columns are tangent): the same rows, the same
    frames, only more digits."""
    model, part = compiled(name)
    rng = np.random.default_rng(3)
    q = part.q_ref
    _, C_ref, _ = kin.closure_jacobian(model, q)
    E = lift(model, part, q).E
    CE, C = ext.loop_velocities(model, q, E)
    scale = max(1.0, np.abs(C_ref).max())
    assert np.abs(C - C_ref).max() <= DOUBLE_ROUNDOFF * scale
    assert np.abs(np.asarray(CE, dtype=float)).max() <= DOUBLE_ROUNDOFF * scale * max(
        1.0, np.abs(E).max())
    # off the manifold (J_l⁻¹ ≠ I) any columns are transported like C @ X
    q = model.integrate(q, 0.1 * rng.normal(size=model.nv))
    _, C_ref, _ = kin.closure_jacobian(model, q)
    X = rng.standard_normal((model.nv, 3))
    CX, C = ext.loop_velocities(model, q, X)
    assert np.abs(C - C_ref).max() <= DOUBLE_ROUNDOFF * scale
    assert np.abs(np.asarray(CX, dtype=float) - C_ref @ X).max() <= 1e-13 * scale

"""Angle offsets on masses (a spoke with mass at a fixed angle to its coordinate): the
Hermitian form of §2 against finite differences of the energies, the fused hot-path terms,
and the analytic Jacobians used by the variational equations."""

import math

import numpy as np
import pytest

from rbc.walkers.control.controllers import make_controller
from rbc.walkers.evaluation.variational import fd_accel_jacobian, impact_jacobian
from rbc.walkers.hybrid.impact import point_foot_impact, relabel
from rbc.walkers.hybrid.model import (
    FusedTerms,
    centrifugal,
    gravity,
    kinetic,
    mass_matrix,
    mass_velocities,
    potential,
)
from rbc.walkers.hybrid.modelfile import model_from_dict

MODEL = {
    "name": "offsets", "coordinates": ["stance", "swing"], "relabel": ["swing", "stance"],
    "masses": [
        {"name": "hub", "mass": 3.0, "path": {"stance": 1.0}},
        {"name": "spoke", "mass": 0.7, "path": [{"link": "stance", "length": 0.6,
                                                 "offset_degrees": 30}]},
        {"name": "leg", "mass": 1.3, "path": [{"link": "stance", "length": 1.0},
                                              {"link": "swing", "length": -0.4,
                                               "offset": -0.2}]},
    ],
    "inertia": {"swing": 0.05},
    "points": {"hip": {"stance": 1.0}, "swing_foot": {"stance": 1.0, "swing": -1.0}},
    "phase": {"coefficients": {"stance": 1.0}},
}


def _jump(model, x):
    n = model.n
    rep = point_foot_impact(model, x[:n], x[n:])
    return np.concatenate(relabel(model, x[:n], rep.qd_e[:n]))


def _impact_fd(model, x, h=1e-6):
    """Central differences of the impact map: error h^2 + eps/h ~ 1e-10."""
    return np.stack([(_jump(model, x + h * e) - _jump(model, x - h * e)) / (2 * h)
                     for e in np.eye(x.size)], axis=1)


@pytest.fixture(scope="module")
def m():
    model = model_from_dict(MODEL, "offsets.yaml")
    assert model.has_offsets and np.any(model.Mi)
    return model


def test_kinetic_energy_is_the_sum_over_masses(m):
    rng = np.random.default_rng(0)
    q, qd = rng.uniform(-1, 1, 2), rng.uniform(-2, 2, 2)
    V = mass_velocities(m, q, qd)  # positions/velocities from the complex rows
    T = 0.5 * m.m @ np.sum(V * V, axis=1) + 0.5 * m.I @ (qd * qd)
    assert kinetic(m, q, qd) == pytest.approx(T, rel=1e-13)
    # and the spoke really sits 30 degrees off its coordinate
    c = 0.6 * np.array([math.sin(q[0] + math.pi / 6), math.cos(q[0] + math.pi / 6)])
    from rbc.walkers.hybrid.model import mass_positions

    np.testing.assert_allclose(mass_positions(m, q)[1], c, atol=1e-15)


def test_lagrange_terms_against_finite_differences(m):
    rng = np.random.default_rng(1)
    q, qd, a, h = rng.uniform(-1, 1, 2), rng.uniform(-2, 2, 2), 0.05, 1e-6
    E = np.eye(2)
    fdV = np.array([(potential(m, q + h * e, a) - potential(m, q - h * e, a)) / (2 * h)
                    for e in E])
    np.testing.assert_allclose(gravity(m, q, a), fdV, atol=1e-8)  # h^2 + eps/h
    dD = np.stack([(mass_matrix(m, q + h * e) - mass_matrix(m, q - h * e)) / (2 * h)
                   for e in E])
    H = np.einsum("kij,j,k->i", dD, qd, qd) - 0.5 * np.einsum("ijk,j,k->i", dD, qd, qd)
    np.testing.assert_allclose(centrifugal(m, q, qd), H, atol=1e-7)
    D = mass_matrix(m, q)
    assert np.allclose(D, D.T, atol=1e-15) and np.linalg.eigvalsh(D).min() > 0
    Df, r = FusedTerms(m, a)(q, qd)
    np.testing.assert_allclose(Df, D, atol=1e-14)
    np.testing.assert_allclose(r, -(centrifugal(m, q, qd) + gravity(m, q, a)), atol=1e-13)


def test_analytic_jacobians_against_finite_differences(m):
    rng = np.random.default_rng(2)
    q, qd = rng.uniform(-0.4, 0.4, 2), rng.uniform(-1, 1, 2)
    ctrl = make_controller("passive", m, 0.05)
    _, Jq, Jqd = ctrl.accel_jacobian(q, qd)
    Fq, Fqd = fd_accel_jacobian(ctrl.accel, q, qd)  # 4th order, ~1e-12
    np.testing.assert_allclose(Jq, Fq, atol=1e-9)
    np.testing.assert_allclose(Jqd, Fqd, atol=1e-9)
    x = np.concatenate([q, qd])
    np.testing.assert_allclose(impact_jacobian(m, x), _impact_fd(m, x), atol=1e-8)


def test_limit_model_jacobians_against_finite_differences():
    from rbc.walkers.hybrid.registry import load_model

    g = load_model("garcia")
    rng = np.random.default_rng(3)
    q, qd = rng.uniform(-0.3, 0.3, 2), rng.uniform(-0.5, 0.5, 2)
    ctrl = make_controller("passive", g, 0.009)
    _, Jq, Jqd = ctrl.accel_jacobian(q, qd)
    Fq, Fqd = fd_accel_jacobian(ctrl.accel, q, qd)
    np.testing.assert_allclose(Jq, Fq, atol=1e-9)
    np.testing.assert_allclose(Jqd, Fqd, atol=1e-9)
    x = np.concatenate([q, qd])
    np.testing.assert_allclose(impact_jacobian(g, x), _impact_fd(g, x), atol=1e-8)
    # Garcia's heelstrike in closed form (theta = -q_st): thetadot+ = cos(2 theta) thetadot-
    th = -x[0]
    c = math.cos(2 * th)
    xp = _jump(g, np.array([x[0], -x[0], x[2], x[3]]))
    assert xp[2] == pytest.approx(c * x[2], rel=1e-12)

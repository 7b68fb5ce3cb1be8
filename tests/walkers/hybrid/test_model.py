"""The dynamics built from A against an independent closed form and finite differences."""

import numpy as np
import pytest

from rbc.walkers.hybrid.model import centrifugal, gravity, mass_matrix, potential
from rbc.walkers.hybrid.registry import load_model, model_names

G0 = 9.81


def threelink_closed_form(q, qd, alpha, m=5.0, MH=15.0, MT=10.0, r=1.0, l=0.5):
    """Three-link walker (legs r, leg masses m at r/2, hip MH, torso MT at l above the hip)
    in absolute angles, derived by hand from T and V (not from A):
    stance mass (r/2) u1, hip r u1, swing mass r u1 - (r/2) u2, torso r u1 + l u3."""
    t1, t2, t3 = q
    D = np.array([
        [m * r**2 / 4 + (MH + m + MT) * r**2, -m * r**2 / 2 * np.cos(t1 - t2),
         MT * r * l * np.cos(t1 - t3)],
        [-m * r**2 / 2 * np.cos(t1 - t2), m * r**2 / 4, 0.0],
        [MT * r * l * np.cos(t1 - t3), 0.0, MT * l**2],
    ])
    H = np.array([
        -m * r**2 / 2 * np.sin(t1 - t2) * qd[1] ** 2 + MT * r * l * np.sin(t1 - t3) * qd[2] ** 2,
        -m * r**2 / 2 * np.sin(t2 - t1) * qd[0] ** 2,
        MT * r * l * np.sin(t3 - t1) * qd[0] ** 2,
    ])
    G = -G0 * np.array([
        (m * r / 2 + (MH + m + MT) * r) * np.sin(t1 + alpha),
        -m * r / 2 * np.sin(t2 + alpha),
        MT * l * np.sin(t3 + alpha),
    ])
    return D, H, G


@pytest.mark.parametrize("seed", range(5))
def test_threelink_matches_closed_form_at_roundoff(seed):
    rng = np.random.default_rng(seed)
    model = load_model("threelink")
    q, qd, alpha = rng.uniform(-1, 1, 3), rng.uniform(-3, 3, 3), rng.uniform(-0.1, 0.1)
    D, H, G = threelink_closed_form(q, qd, alpha)
    # round-off: entries are O(10..100); 1e-13 relative is a few ulps after ~10 flops
    np.testing.assert_allclose(mass_matrix(model, q), D, rtol=0, atol=1e-13 * np.abs(D).max())
    np.testing.assert_allclose(centrifugal(model, q, qd), H, rtol=0,
                               atol=1e-13 * np.abs(H).max())
    np.testing.assert_allclose(gravity(model, q, alpha), G, rtol=0, atol=1e-13 * np.abs(G).max())


def _parts(name):
    m = load_model(name)
    return (m,) if m.infinitesimal is None else (m, m.infinitesimal)


@pytest.mark.parametrize("name", model_names())
def test_gravity_is_gradient_of_potential(name):
    model = _parts(name)[-1]
    rng = np.random.default_rng(1)
    q, alpha, h = rng.uniform(-1, 1, model.n), 0.05, 1e-6
    fd = np.array([(potential(model, q + h * e, alpha) - potential(model, q - h * e, alpha))
                   / (2 * h) for e in np.eye(model.n)])
    # central difference: truncation h^2 V''' ~ 1e-11, round-off eps |V| / h ~ 1e-8
    np.testing.assert_allclose(gravity(model, q, alpha), fd, atol=1e-7)


@pytest.mark.parametrize("name", model_names())
def test_centrifugal_is_christoffel_of_D(name):
    """H_i = sum_jk (dD_ij/dq_k - 1/2 dD_jk/dq_i) qd_j qd_k, dD by central differences
    (the infinitesimal part of a limit model is checked in its place)."""
    model = _parts(name)[-1]
    rng = np.random.default_rng(2)
    n = model.n
    q, qd, h = rng.uniform(-1, 1, n), rng.uniform(-2, 2, n), 1e-6
    dD = np.stack([(mass_matrix(model, q + h * e) - mass_matrix(model, q - h * e)) / (2 * h)
                   for e in np.eye(n)])  # dD[k] = dD/dq_k
    H = np.einsum("kij,j,k->i", dD, qd, qd) - 0.5 * np.einsum("ijk,j,k->i", dD, qd, qd)
    # FD error ~ h^2 |D'''| |qd|^2 ~ 1e-11 plus round-off eps |D| / h |qd|^2 ~ 1e-8
    np.testing.assert_allclose(centrifugal(model, q, qd), H, atol=1e-6)


@pytest.mark.parametrize("name", model_names())
def test_mass_matrix_symmetric_positive_definite(name):
    model = load_model(name)
    q = np.random.default_rng(3).uniform(-1, 1, model.n)
    D = mass_matrix(model, q)
    np.testing.assert_array_equal(D, D.T)
    if model.is_limit:  # the finite part is singular by design; D + eps D_1 is regular
        D1 = mass_matrix(model.infinitesimal, q)
        assert np.linalg.eigvalsh(D).min() > -1e-14 and np.linalg.eigvalsh(D1).min() > -1e-14
        assert np.linalg.eigvalsh(D + 1e-6 * D1).min() > 0
        return
    assert np.linalg.eigvalsh(D).min() > 0

"""The two closure-geometry algorithms agree: path products (kinematics.py) and the
Pinocchio tree with a branch per cut joint (augmented.py)."""

from __future__ import annotations

import numpy as np
import pytest

from rbc.model.augmented import AugmentedTree, augmented_geometry, integrate
from rbc.model.kinematics import closure_geometry
from rbc.model.partition import lift, lift_from_jacobian
from rbc.model.tree import build_tree


def test_residual_jacobian_and_velocity_product_agree(shipped):
    name, model, part = shipped
    aug = AugmentedTree.build(model, build_tree(model))
    data = aug.model.createData()
    rng = np.random.default_rng(20260927)
    for _ in range(3):  # off the manifold: ρ, C (J_l⁻¹ and Ad(D) matter there)
        q = model.integrate(part.q_ref, 0.1 * rng.normal(size=model.nv))
        a, b = closure_geometry(model, q), augmented_geometry(aug, data, q)
        # both are exact to round-off; 1e-12 leaves three decades for O(1) entries
        assert np.abs(a.rho - b.rho).max() <= 1e-12, name
        assert np.abs(a.C - b.C).max() <= 1e-12 * max(1.0, np.abs(a.C).max()), name
    # on the manifold: the velocity product (both exact there)
    v = lift(model, part, part.q_ref).E @ rng.normal(size=part.independent.size)
    cv_a = closure_geometry(model, part.q_ref).velocity_product(model, v)
    cv_b = augmented_geometry(aug, data, part.q_ref).velocity_product(model, v)
    assert np.abs(cv_a - cv_b).max() <= 1e-11 * max(1.0, np.abs(cv_a).max()), name


def test_integrate_is_the_models_edge_by_edge_integrate(shipped):
    """One Pinocchio ``integrate`` on the augmented model equals CompiledModel.integrate
    (same joint maps; quaternion order handled by the permutations)."""
    name, model, part = shipped
    aug = AugmentedTree.build(model, build_tree(model))
    rng = np.random.default_rng(7)
    for _ in range(3):
        v = rng.normal(size=model.nv)
        # both evaluate the same closed forms; 1e-15 allows one rounding per entry
        assert np.abs(integrate(aug, part.q_ref, v)
                      - model.integrate(part.q_ref, v)).max() <= 1e-15, name


def test_lift_lu_matches_a_dense_solve_and_refuses_a_singular_block(shipped):
    """E from the stored LU factors equals a dense solve; ``Lift.solve`` is R_p⁻¹."""
    name, model, part = shipped
    L = lift(model, part, part.q_ref)
    if L.Rp is None:
        return
    dense = -np.linalg.solve(L.Rp, L.C[part.rows][:, part.independent])
    scale = max(1.0, np.abs(dense).max())
    # both are backward-stable LU solves of the same block (cond ≤ 1e3 on the shipped records)
    assert np.abs(L.E[part.dependent] - dense).max() <= 1e-12 * scale, name
    b = np.arange(1.0, part.rank + 1)
    assert np.abs(L.Rp @ L.solve(b) - b).max() <= 1e-12 * np.abs(b).max(), name
    C = L.C.copy()
    C[:, part.dependent[0]] = 0.0  # a dependent column without any closure row
    with pytest.raises(np.linalg.LinAlgError):
        lift_from_jacobian(part, C)

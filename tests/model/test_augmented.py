"""The two closure-geometry algorithms agree: path products (kinematics.py) and the
Pinocchio tree with a branch per cut joint (augmented.py)."""

from __future__ import annotations

import numpy as np

from rbc.model.augmented import AugmentedTree, augmented_geometry
from rbc.model.kinematics import closure_geometry
from rbc.model.partition import lift
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

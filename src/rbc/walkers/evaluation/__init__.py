"""Evaluation of walks: stride metrics (:mod:`.metrics`), Poincaré maps and fixed points
(:mod:`.poincare`) and their Jacobians from the variational equations
(:mod:`.variational`), the Monte Carlo batch (:mod:`.batch`) and figures (:mod:`.plots`).
See docs/walkers.md §7, §16-17."""

"""Metrics shared by the reproduction targets (beyond δ_a, δ_f of
:mod:`rbc.verify.dynamics`)."""

from __future__ import annotations

import numpy as np


def closure_residual(kin, rows, gamma: np.ndarray, q: np.ndarray, a: np.ndarray
                     ) -> tuple[float, float]:
    """``(angular [rad/s²], linear [m/s²])`` max over the cut joints of the acceleration
    closure residual: ``Pᵀ(P J_rel a_T + P(γ₆ − Ṡq̇))`` per cut joint e (the 6-vector in
    its frame Jc that its motion subspace does not absorb), from the reference's physical
    rows ``rows.J`` and drift ``gamma`` (:func:`rbc.verify.kkt50.cut_rows`, ``cut_drift``).
    """
    from rbc.verify.kkt50 import annihilator

    r = rows.J @ a + gamma
    ang = lin = 0.0
    start = 0
    for e in kin.chord_edges:
        P = annihilator(kin.kinds[e].motion_subspace(q[kin.q_slice(e)]))
        w = P.T @ r[start: start + P.shape[0]]
        start += P.shape[0]
        ang, lin = max(ang, float(np.abs(w[:3]).max())), max(lin, float(np.abs(w[3:]).max()))
    return ang, lin

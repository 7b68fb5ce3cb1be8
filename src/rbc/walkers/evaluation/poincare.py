"""Poincaré map of a walker and its fixed point by Newton's method.

The section is the post-impact surface: ``P(x)`` integrates one stride from the post-impact
(relabeled) state ``x`` (2n,) to the next one (Westervelt et al. 2007, Sec. 4.1; Goswami et
al. 1998, Sec. 4). A period-one gait is a fixed point ``P(x*) = x*``; it is found by Newton
on ``P(x) - x`` with a central finite-difference Jacobian, and its local stability is given
by the eigenvalues of ``DP(x*)`` (one of them is structurally ~0, because the image of
``P`` lies on the (2n-1)-dimensional impact surface).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rbc.walkers.errors import WalkerError


@dataclass(frozen=True)
class FixedPoint:
    """A period-one gait.

    Attributes:
        x: (2n,) post-impact state [rad, rad/s]. eigenvalues: (2n,) complex eigenvalues of
            ``DP(x)``. jacobian: (2n, 2n) ``DP(x)``. step_period: stride duration [s].
        residual: ``|P(x) - x|_inf``. iterations: Newton iterations used.
    """

    x: np.ndarray
    eigenvalues: np.ndarray
    jacobian: np.ndarray
    step_period: float
    residual: float
    iterations: int

    @property
    def spectral_radius(self) -> float:
        """``max |lambda_i|``; < 1 means a locally exponentially stable gait."""
        return float(np.max(np.abs(self.eigenvalues)))


def poincare_jacobian(pmap, x: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """Central-difference Jacobian (2n, 2n) of ``pmap`` at ``x``.

    ``eps = 1e-6``: the map is computed to ~1e-13 (RK4 plus a Brent-located event), so the
    truncation error eps^2 ~ 1e-12 and the round-off 1e-13/eps ~ 1e-7 are both small
    against the unit-order entries.
    """
    cols = []
    for i in range(x.size):
        e = np.zeros_like(x)
        e[i] = eps
        cols.append((pmap(x + e)[0] - pmap(x - e)[0]) / (2 * eps))
    return np.stack(cols, axis=1)


def find_fixed_point(pmap, x0: np.ndarray, tol: float = 1e-10, max_iter: int = 20) -> FixedPoint:
    """Newton's method on ``P(x) - x = 0``.

    Args:
        pmap: ``pmap(x) -> (x_next (2n,), duration [s])``; raises WalkerError on a fall.
        x0: (2n,) initial guess (post-impact state). tol: ``|P(x) - x|_inf`` target.

    Raises:
        WalkerError: Newton did not converge.
    """
    x = np.asarray(x0, dtype=float).copy()
    it = 0
    while it < max_iter:
        it += 1
        px, _ = pmap(x)
        r = px - x
        J = poincare_jacobian(pmap, x)
        # I - DP is singular only if DP has an eigenvalue 1; least squares is robust to the
        # structural zero eigenvalue direction as well.
        dx = np.linalg.lstsq(J - np.eye(x.size), -r, rcond=None)[0]
        x = x + dx
        if np.max(np.abs(dx)) < tol:
            break
    px, period = pmap(x)
    res = float(np.max(np.abs(px - x)))
    if res > 1e3 * tol:
        raise WalkerError(f"Newton on the Poincaré map did not converge (residual {res:.2e})")
    J = poincare_jacobian(pmap, x)
    return FixedPoint(x, np.linalg.eigvals(J), J, period, res, it)


def stride_map(model, ctrl, alpha: float, dt: float, t_max: float | None = None):
    """``P`` for a point-foot walker: ``x -> (post-impact state, stride duration)``.

    Raises (when called):
        WalkerError: the stride ends in a fall.
    """
    from rbc.walkers.hybrid.simulate import stride

    def pmap(x: np.ndarray) -> tuple[np.ndarray, float]:
        seg, rep, xp, why = stride(model, ctrl, alpha, x, dt, t_max)
        if xp is None or why is not None:
            raise WalkerError(f"stride from {np.round(x, 4).tolist()} failed: {why}")
        return xp, float(seg.t[-1])

    return pmap

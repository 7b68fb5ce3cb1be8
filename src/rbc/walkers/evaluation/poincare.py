"""Poincaré map of a walker and its fixed point by Newton's method.

The section is the post-impact surface: ``P(x)`` integrates one stride from the post-impact
(relabeled) state ``x`` (2n,) to the next one (Westervelt et al. 2007, Sec. 4.1; Goswami et
al. 1998, Sec. 4). A period-one gait is a fixed point ``P(x*) = x*``; it is found by Newton
on ``P(x) - x`` and its local stability is given by the eigenvalues of ``DP(x*)`` (one of
them is structurally ~0, because the image of ``P`` lies on the (2n-1)-dimensional impact
surface).

``DP`` comes from the variational equations along the stride with the impact-map Jacobian
(:mod:`rbc.walkers.evaluation.variational`) when the map provides ``jacobian(x)``: the
exact derivative of the simulated map, so Newton converges quadratically and the
eigenvalues are limited only by the integration error. Central differences of the whole
map (:func:`poincare_jacobian`) remain the fallback (footed walker) and the cross-check
reported with every fixed point.
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
        jacobian_method: "variational" or "finite differences".
        jacobian_fd: (2n, 2n) central-difference ``DP(x)`` (the cross-check; equal to
            ``jacobian`` when that is the method; None when not computed).
    """

    x: np.ndarray
    eigenvalues: np.ndarray
    jacobian: np.ndarray
    step_period: float
    residual: float
    iterations: int
    jacobian_method: str = "finite differences"
    jacobian_fd: np.ndarray | None = None

    @property
    def spectral_radius(self) -> float:
        """``max |lambda_i|``; < 1 means a locally exponentially stable gait."""
        return float(np.max(np.abs(self.eigenvalues)))

    @property
    def fd_difference(self) -> float:
        """``max |DP_variational - DP_fd|`` (0 when only differences were used; NaN when
        the cross-check was not computed)."""
        if self.jacobian_fd is None:
            return float("nan")
        return float(np.max(np.abs(self.jacobian - self.jacobian_fd)))


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


def find_fixed_point(pmap, x0: np.ndarray, tol: float = 1e-10, max_iter: int = 20,
                     cross_check: bool = True) -> FixedPoint:
    """Newton's method on ``P(x) - x = 0``.

    Args:
        pmap: ``pmap(x) -> (x_next (2n,), duration [s])``; raises WalkerError on a fall. If
            it has ``jacobian(x) -> (x_next, duration, DP)``, that Jacobian is used.
        x0: (2n,) initial guess (post-impact state). tol: ``|P(x) - x|_inf`` target.
        cross_check: also compute the central-difference Jacobian at the fixed point
            (``jacobian_fd``, 4n more strides); otherwise ``jacobian_fd`` is None.

    Raises:
        WalkerError: Newton did not converge.
    """
    jac = getattr(pmap, "jacobian", None)

    def step(x):
        if jac is not None:
            return jac(x)
        px, t = pmap(x)
        return px, t, poincare_jacobian(pmap, x)

    x = np.asarray(x0, dtype=float).copy()
    it = 0
    while it < max_iter:
        it += 1
        px, _, J = step(x)
        # I - DP is singular only if DP has an eigenvalue 1; least squares is robust to the
        # structural zero eigenvalue direction as well.
        dx = np.linalg.lstsq(J - np.eye(x.size), -(px - x), rcond=None)[0]
        x = x + dx
        if np.max(np.abs(dx)) < tol:
            break
    px, period, J = step(x)
    res = float(np.max(np.abs(px - x)))
    if res > 1e3 * tol:
        raise WalkerError(f"Newton on the Poincaré map did not converge (residual {res:.2e})")
    J_fd = J if jac is None else poincare_jacobian(pmap, x) if cross_check else None
    return FixedPoint(x, np.linalg.eigvals(J), J, period, res, it,
                      "variational" if jac is not None else "finite differences", J_fd)


class StrideMap:
    """``P`` for a point-foot walker under a built-in controller: ``x -> (post-impact state,
    stride duration)``, with :meth:`jacobian` from the variational equations.

    Raises (when called):
        WalkerError: the stride ends in a fall.
    """

    def __init__(self, model, ctrl, alpha: float, dt: float, t_max: float | None = None):
        self.model, self.ctrl, self.alpha, self.dt, self.t_max = model, ctrl, alpha, dt, t_max

    def _stride(self, x: np.ndarray):
        from rbc.walkers.hybrid.simulate import stride

        seg, rep, xp, why = stride(self.model, self.ctrl, self.alpha, x, self.dt, self.t_max)
        if xp is None or why is not None:
            raise WalkerError(f"stride from {np.round(x, 4).tolist()} failed: {why}")
        return seg, xp

    def __call__(self, x: np.ndarray) -> tuple[np.ndarray, float]:
        seg, xp = self._stride(x)
        return xp, float(seg.t[-1])

    def jacobian(self, x: np.ndarray) -> tuple[np.ndarray, float, np.ndarray]:
        """``(P(x), duration, DP(x) (2n, 2n))``: impact-map Jacobian times the swing's
        state-transition matrix (touchdown time included)."""
        from rbc.walkers.evaluation.variational import impact_jacobian, swing_transition

        seg, xp = self._stride(x)
        Phi = swing_transition(self.model, self.ctrl, seg.t, seg.x)
        return xp, float(seg.t[-1]), impact_jacobian(self.model, seg.x[-1]) @ Phi


def stride_map(model, ctrl, alpha: float, dt: float, t_max: float | None = None) -> StrideMap:
    """``P`` for a point-foot walker (:class:`StrideMap`)."""
    if not hasattr(ctrl, "accel"):
        raise WalkerError("the stride map needs a built-in controller (accel(q, qd))")
    return StrideMap(model, ctrl, alpha, dt, t_max)

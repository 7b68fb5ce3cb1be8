"""Controllers on the error hierarchy ``r = dy + Lambda y`` with the known decoupling matrix.

All controllers here see only the design model (:class:`rbc.walkers.control.context.ControlContext`)
and are sampled once per simulation step and held (zero-order hold); their internal states
(integrals) are integrated by explicit Euler at that step and persist across strides.

Output dynamics of the design model (:mod:`rbc.walkers.control.vc`): with ``X = D^-1 [B, H + G]``,
``ydd = A(q) u + f(q, qd)``, ``A = J X_B`` (the decoupling matrix, the known input
effectiveness), ``f = -J X_HG - h_d'' sdot^2``. On the true plant ``ydd = A u + f + d`` with
``d`` the unknown mismatch. Error hierarchy (Xian et al. 2004; Patil et al. 2022):
``e = y``, ``r = de + Lambda e``, so ``dr = A u + f + Lambda de + d``. Every controller
computes ``u = A^-1 (-f - Lambda de - w)`` and differs only in ``w`` (p,) [rad/s^2]:

* ``fl``: ``w = K r``. With ``Lambda K = kp`` and ``Lambda + K = kd`` (the roots of
  ``s^2 + kd s + kp``) this is exactly the model file's feedback linearization.
* ``adaptive`` (adaptive integral): ``w = K r + d_hat``, ``d_hat <- d_hat + gamma r dt``
  (Lyapunov ``V = r^2/2 + |d - d_hat|^2 / (2 gamma)`` gives ``dV = -K |r|^2`` for constant
  ``d``).
* ``rise`` (Xian, Dawson, de Queiroz, Chen, IEEE TAC 49(7) 2004, eq. (16)):
  ``w = mu = (k_s + 1)(r - r(0)) + nu``, ``nu <- nu + dt ((k_s + 1) alpha_2 r + beta sgn r)``
  with ``k_s + 1 = K``; ``r(0)`` is the first sample of the run and ``nu`` persists across
  strides.
* ``composite``: learning part plus RISE, both per continuous mode ``m``:
  ``w = K (r - r(0)) + d_hat_m + nu_m``, ``d_hat_m <- d_hat_m + gamma r dt`` and the leaky
  robust integral ``nu_m <- nu_m + dt (K alpha_2 r + beta sgn r - sigma nu_m)``. Inactive
  modes are frozen (transported unchanged to the next recurrence of their mode). The
  learning part is the adaptive integral (the LbDNN networks of issue 8 item 4 are not
  implemented). Without the leak (``sigma = 0``) only the sum ``d_hat + nu`` is observable
  through ``r``: impact re-excitation drives the difference ``d_hat - nu`` without bound
  (integral windup, measured in docs/walkers.md §13).
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from rbc.walkers.control.context import ControlContext
from rbc.walkers.errors import WalkerError
from rbc.walkers.hybrid.model import FusedTerms


def hierarchy_gains(kp: float, kd: float) -> tuple[float, float]:
    """``(Lambda, K)`` [1/s] with ``Lambda K = kp``, ``Lambda + K = kd`` (real roots).

    Raises:
        WalkerError: ``kd^2 < 4 kp`` (complex roots: no real error hierarchy).
    """
    disc = kd * kd - 4.0 * kp
    if disc < -1e-9 * kd * kd:  # exact squares (kp = (kd/2)^2) round to tiny negatives
        raise WalkerError(f"gains kp={kp}, kd={kd} have complex poles; the error hierarchy "
                          "r = de + Lambda e needs kd^2 >= 4 kp")
    root = np.sqrt(max(disc, 0.0))
    return 0.5 * (kd - root), 0.5 * (kd + root)


class ErrorHierarchy:
    """Evaluates ``(e, de, r, A, f)`` of the design model (module docstring).

    Args:
        ctx: control context with virtual constraints. lam: ``Lambda`` [1/s] (default from
            the context's kp, kd).
    """

    def __init__(self, ctx: ControlContext, lam: float | None = None) -> None:
        if ctx.vc is None:
            raise WalkerError(f"model '{ctx.model.name}' has no virtual constraints")
        self.ctx = ctx
        lam0, k0 = hierarchy_gains(ctx.kp, ctx.kd)
        self.lam = lam0 if lam is None else lam
        self.k = k0
        self._terms = FusedTerms(ctx.model, ctx.alpha)

    def __call__(self, q: np.ndarray, qd: np.ndarray):
        """``(e (p,) [rad], de (p,) [rad/s], r (p,) [rad/s], A (p, nu), f (p,) [rad/s^2])``."""
        Xu, x0 = self._terms.accel_affine(q, qd, self.ctx.model.B)
        y, dy, J, drift = self.ctx.vc.outputs(q, qd)
        return y, dy, dy + self.lam * y, J @ Xu, J @ x0 - drift


class HierarchyController:
    """Base: ``u = A^-1 (-f - Lambda de - w)``; subclasses define ``w`` and its update.

    Attributes:
        name: CLI name. eh: :class:`ErrorHierarchy`. mode: active continuous mode (set by
            the simulator). history: per-sample ``(t, |state|)`` norms for windup analysis.
    """

    name: ClassVar[str] = "fl"

    def __init__(self, ctx: ControlContext, modes: int = 1) -> None:
        self.ctx = ctx
        self.eh = ErrorHierarchy(ctx)
        self.modes = modes
        self.mode = 0
        self.reset()

    def reset(self) -> None:
        """Zero the internal states (start of a run)."""
        self.r0: np.ndarray | None = None

    def correction(self, r: np.ndarray) -> np.ndarray:
        """``w`` (p,) [rad/s^2] before this sample's state update."""
        return self.eh.k * r

    def update(self, r: np.ndarray, dt: float) -> None:
        """Integrate the internal states over one control period ``dt`` [s]."""

    def state_norms(self) -> dict[str, float]:
        """Norms of the internal integrals (for windup plots and tests)."""
        return {}

    def __call__(self, t: float, q: np.ndarray, qd: np.ndarray) -> np.ndarray:
        """Torque (nu,) [N m] from the design model, held over the next step."""
        e, de, r, A, f = self.eh(q, qd)
        if self.r0 is None:
            self.r0 = r.copy()
        u = np.linalg.solve(A, -f - self.eh.lam * de - self.correction(r))
        self.update(r, self.ctx.dt)
        return u


class AdaptiveIntegral(HierarchyController):
    """``w = K r + d_hat``, ``d_hat <- d_hat + gamma r dt`` (module docstring).

    Args:
        gamma: adaptation gain [1/s^2] (default ``K^2/4``: critically damped ``(r, d)`` loop).
    """

    name = "adaptive"

    def __init__(self, ctx: ControlContext, gamma: float | None = None, modes: int = 1):
        self.gamma = gamma
        super().__init__(ctx, modes)
        if self.gamma is None:
            self.gamma = 0.25 * self.eh.k ** 2

    def reset(self) -> None:
        super().reset()
        self.d_hat = np.zeros((self.modes, self.ctx.vc.H0.shape[0]))

    def correction(self, r: np.ndarray) -> np.ndarray:
        return self.eh.k * r + self.d_hat[self.mode]

    def update(self, r: np.ndarray, dt: float) -> None:
        self.d_hat[self.mode] += self.gamma * dt * r

    def state_norms(self) -> dict[str, float]:
        return {"d_hat": float(np.abs(self.d_hat).max())}


class Rise(HierarchyController):
    """RISE: ``w = K (r - r(0)) + nu``, ``nu <- nu + dt (K alpha_2 r + beta sgn r)``.

    Args:
        alpha2: integral rate of the proportional part [1/s]. beta: sign gain [rad/s^3].
    """

    name = "rise"

    def __init__(self, ctx: ControlContext, alpha2: float | None = None, beta: float = 20.0,
                 modes: int = 1):
        self.alpha2, self.beta = alpha2, beta
        super().__init__(ctx, modes)
        if self.alpha2 is None:
            self.alpha2 = 0.25 * self.eh.k  # K alpha2 = K^2/4, as the adaptive integral

    def reset(self) -> None:
        super().reset()
        self.nu = np.zeros((self.modes, self.ctx.vc.H0.shape[0]))

    def correction(self, r: np.ndarray) -> np.ndarray:
        return self.eh.k * (r - self.r0) + self.nu[self.mode]

    def robust_rate(self, r: np.ndarray) -> np.ndarray:
        """``K alpha_2 r + beta sgn(r)`` (p,) [rad/s^3]."""
        return self.eh.k * self.alpha2 * r + self.beta * np.sign(r)

    def update(self, r: np.ndarray, dt: float) -> None:
        self.nu[self.mode] += dt * self.robust_rate(r)

    def state_norms(self) -> dict[str, float]:
        return {"nu": float(np.abs(self.nu).max())}


class Composite(Rise):
    """Adaptive integral + RISE with a per-mode leaky robust integral (module docstring).

    Args:
        gamma: adaptation gain [1/s^2] (default ``K^2/4``). leak: ``sigma`` [1/s]
            (0 = the leak-free variant that winds up).
    """

    name = "composite"

    def __init__(self, ctx: ControlContext, gamma: float | None = None, leak: float = 1.0,
                 alpha2: float | None = None, beta: float = 20.0, modes: int = 1):
        self.gamma, self.leak = gamma, leak
        super().__init__(ctx, alpha2, beta, modes)
        if self.gamma is None:
            self.gamma = 0.25 * self.eh.k ** 2

    def reset(self) -> None:
        super().reset()
        self.d_hat = np.zeros_like(self.nu)

    def correction(self, r: np.ndarray) -> np.ndarray:
        return super().correction(r) + self.d_hat[self.mode]

    def update(self, r: np.ndarray, dt: float) -> None:
        m = self.mode  # only the active mode integrates; the others stay frozen
        self.d_hat[m] += self.gamma * dt * r
        self.nu[m] += dt * (self.robust_rate(r) - self.leak * self.nu[m])

    def state_norms(self) -> dict[str, float]:
        return {"nu": float(np.abs(self.nu).max()), "d_hat": float(np.abs(self.d_hat).max())}


LEARNING = {c.name: c for c in (HierarchyController, AdaptiveIntegral, Rise, Composite)}

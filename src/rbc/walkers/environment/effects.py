"""Environment effects acting on the true plant only: joint friction, stick-slip ground
contact, ice patches and Cartesian impulses (trips, pushes).

Equations (docs/walkers.md §14); conventions of :mod:`rbc.walkers.hybrid.model` (tilted frame,
absolute angles, base = stance contact ``p``):

* **Joint friction** on the relative joint rates ``omega = B^T qd`` (nu,) [rad/s]:
  ``tau_f(omega) = tau_c (1 + kappa exp(-(omega / v_s)^2)) tanh(omega / eps) + c_v omega``
  (Coulomb level ``tau_c`` with a Stribeck knee of relative height ``kappa`` and width
  ``v_s``, smoothed by ``tanh`` over ``eps``; viscous drag ``c_v``), mapped back through
  ``B`` as the generalized force ``-B tau_f`` (Olsson et al., "Friction models and friction
  compensation", Eur. J. Control 1998, Sec. 2). Its dissipated power ``tau_f . omega >= 0``.
* **Stick**: the base is a rigid pin, ``D qdd = Q - H - G``; the reaction is monitored,
  ``F = sum_k m_k cdd_k - m_tot g_t``, and the contact **slips** when ``|F_T| > mu F_N``.
* **Slip**: the base slides along the ground (``p_y = 0``). With ``W_x = w cos q``,
  ``W_y = -w sin q`` (n,) the extended Lagrange equations (the rows of ``D_e`` of
  :mod:`rbc.walkers.hybrid.impact`) and kinetic friction ``F_T = -mu F_N sigma``
  (``sigma = sign(pdot_x)``, the sliding direction) are solved together for
  ``(qdd, pdd_x, F_N)``::

      [ D     W_x^T   0        ] [ qdd   ]   [ Q - H - G                  ]
      [ W_x   m_tot   mu sigma ] [ pdd_x ] = [ m_tot g_x + (w sin q).qd^2 ]
      [ W_y   0       -1       ] [ F_N   ]   [ m_tot g_y + (w cos q).qd^2 ]

  Re-latch at a zero crossing of ``pdot_x`` if the stick force is then inside the cone;
  ``F_N <= 0`` in either mode is liftoff (a fall).
* **Ice**: the friction coefficient is rescheduled per stance from the stance base
  position (:class:`Ground`).
* **Impulses**: a Cartesian impulse ``F_hat`` (2,) [N s] at a named point with the base
  pinned changes the rates by ``D dqd = J^T F_hat`` (``J`` the point's (2, n) Jacobian),
  so the angular momentum about the base changes by the impulse's moment
  ``dH = p_y F_x - p_x F_y`` (clockwise positive).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rbc.walkers.errors import WalkerError
from rbc.walkers.hybrid.model import WalkerModel, mass_matrix


@dataclass(frozen=True)
class JointFriction:
    """Coulomb friction with a Stribeck knee and viscous drag at every actuated joint.

    Attributes:
        tau_c: Coulomb torque [N m]. kappa: Stribeck knee height relative to ``tau_c`` [-]
            (static torque ``tau_c (1 + kappa)``). v_s: Stribeck velocity [rad/s].
        eps: tanh smoothing velocity [rad/s]. c_v: viscous coefficient [N m s/rad].
    """

    tau_c: float = 3.0
    kappa: float = 0.5
    v_s: float = 0.1
    eps: float = 0.02
    c_v: float = 0.5

    def __call__(self, omega: np.ndarray) -> np.ndarray:
        """Friction torques (nu,) [N m] opposing the relative joint rates ``omega``."""
        knee = 1.0 + self.kappa * np.exp(-(omega / self.v_s) ** 2)
        return self.tau_c * knee * np.tanh(omega / self.eps) + self.c_v * omega


@dataclass(frozen=True)
class Ground:
    """Ground friction: ``mu`` everywhere except on ice patches.

    Attributes:
        mu: friction coefficient off the patches. patches: ``((x0, x1, mu_ice), ...)``
            intervals of the tilted x axis [m] and their coefficient.
        stick_slip: True: contact may slip (:func:`slip_accel`); False: the stance foot is
            a rigid pin and a cone violation is a fall (the issue-7 behaviour).
    """

    mu: float
    patches: tuple[tuple[float, float, float], ...] = ()
    stick_slip: bool = False

    def mu_at(self, x: float) -> float:
        """Friction coefficient under a stance base at tilted ``x`` [m]."""
        for x0, x1, mu in self.patches:
            if x0 <= x <= x1:
                return float(mu)
        return float(self.mu)


@dataclass(frozen=True)
class Impulse:
    """A scheduled Cartesian impulse (a trip at the swing foot, a push at the head).

    Attributes:
        stride: stride index it happens in. time: time from the stride start [s].
        point: named point of the model. impulse: (2,) ``F_hat`` [N s], tilted frame.
    """

    stride: int
    time: float
    point: str
    impulse: tuple[float, float]


def point_jacobian(model: WalkerModel, name: str, q: np.ndarray) -> np.ndarray:
    """``d(point)/dq`` (2, n) of named point ``name`` with the base pinned [m/rad]."""
    a = model.points[name]
    return np.stack([a * np.cos(q), -a * np.sin(q)])


def apply_impulse(model: WalkerModel, name: str, q: np.ndarray, qd: np.ndarray,
                  F_hat: np.ndarray) -> np.ndarray:
    """Post-impulse rates (n,) for impulse ``F_hat`` (2,) [N s] at point ``name``.

    ``D dqd = J^T F_hat`` solved with one step of iterative refinement, so the momentum
    identity ``dH_base = p x F_hat`` holds to round-off (docs/walkers.md §14).

    Raises:
        WalkerError: unknown point.
    """
    if name not in model.points:
        raise WalkerError(f"unknown point '{name}'", choices=sorted(model.points), got=name)
    D = mass_matrix(model, q)
    rhs = point_jacobian(model, name, q).T @ np.asarray(F_hat, dtype=float)
    dqd = np.linalg.solve(D, rhs)
    dqd += np.linalg.solve(D, rhs - D @ dqd)  # one refinement step (Higham, ASNA Ch. 12)
    return qd + dqd


def stance_reaction(model: WalkerModel, q: np.ndarray, qd: np.ndarray, qdd: np.ndarray,
                    alpha: float) -> np.ndarray:
    """Pinned-base ground reaction ``F = (F_T, F_N)`` (2,) [N] (docstring, Stick)."""
    s, c = np.sin(q), np.cos(q)
    w, qd2 = model.w, qd * qd
    g_t = model.g * np.array([np.sin(alpha), -np.cos(alpha)])
    return np.array([w @ (c * qdd) - (w * s) @ qd2, -(w * s) @ qdd - (w * c) @ qd2]) - (
        model.m_total * g_t)


def slip_accel(model: WalkerModel, q: np.ndarray, qd: np.ndarray, Q: np.ndarray,
               alpha: float, mu: float, sigma: float) -> tuple[np.ndarray, float, float]:
    """Sliding contact: solve the (n+2) system of the module docstring.

    Args:
        q, qd: (n,) state. Q: (n,) non-conservative generalized forces (actuators and joint
            friction) [N m]. mu: kinetic friction coefficient. sigma: sliding direction
            (+1 / -1, sign of ``pdot_x``).

    Returns:
        ``(qdd (n,) [rad/s^2], pdd_x [m/s^2], F_N [N])``.
    """
    n = model.n
    s, c = np.sin(q), np.cos(q)
    w, qd2, mt = model.w, qd * qd, model.m_total
    K = np.zeros((n + 2, n + 2))
    K[:n, :n] = mass_matrix(model, q)
    K[:n, n] = w * c
    K[n, :n] = w * c
    K[n, n] = mt
    K[n, n + 1] = mu * sigma
    K[n + 1, :n] = -w * s
    K[n + 1, n + 1] = -1.0
    H = (model.M * np.sin(q[:, None] - q)) @ qd2
    G = -model.g * w * np.sin(q + alpha)
    rhs = np.concatenate([Q - H - G, [mt * model.g * np.sin(alpha) + (w * s) @ qd2,
                                      -mt * model.g * np.cos(alpha) + (w * c) @ qd2]])
    sol = np.linalg.solve(K, rhs)
    return sol[:n], float(sol[n]), float(sol[n + 1])


def total_energy(model: WalkerModel, q: np.ndarray, qd: np.ndarray, p_x: float,
                 pd_x: float, alpha: float) -> float:
    """Mechanical energy [J] with the base at ``(p_x, 0)`` moving at ``(pd_x, 0)``.

    ``E = qd_e^T D_e qd_e / 2 + V(q) - m_tot g sin(alpha) p_x`` with ``qd_e = [qd, pd_x, 0]``.
    """
    from rbc.walkers.hybrid.impact import extended_inertia

    qe = np.concatenate([qd, [pd_x, 0.0]])
    V = model.g * model.w @ np.cos(q + alpha) - model.m_total * model.g * np.sin(alpha) * p_x
    return float(0.5 * qe @ extended_inertia(model, q) @ qe + V)

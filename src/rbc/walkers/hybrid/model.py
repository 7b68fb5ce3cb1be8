"""Planar lumped-mass walker model built from one constant matrix ``A``.

Conventions (stated once, used everywhere in :mod:`rbc.walkers`):

* Frame: the *tilted* frame of a slope of angle ``alpha`` [rad]; x points down the slope
  (walking direction), y along the slope normal. Gravity in this frame is
  ``g_t = g [sin(alpha), -cos(alpha)]`` [m/s^2].
* Coordinates: ``q`` (n,) absolute link angles [rad] measured from the slope normal,
  clockwise positive; a link of angle ``q_j`` points along ``u(q_j) = [sin q_j, cos q_j]``
  (from the foot end towards the hip end for legs, upwards for the torso).
  ``v(q_j) = du/dq_j = [cos q_j, -sin q_j]``.
* Masses: lumped mass ``k`` sits at ``c_k = p + sum_j A[k, j] u(q_j)`` where ``p`` (2,) is
  the stance contact (the base) and ``A[k, j]`` is the signed length travelled along link
  ``j`` from the base to the mass (negative when the link is traversed tip to root, i.e.
  down the swing leg). Named points (hip, swing foot...) use the same rows.

From ``A`` alone (Westervelt, Grizzle et al., "Feedback Control of Dynamic Bipedal Robot
Locomotion", 2007, Sec. 3.2 and App. B; the absolute-angle form of Goswami et al. 1998):

* ``M = A^T diag(m) A`` (n, n) constant, ``w = A^T m`` (n,) constant;
* ``D(q)_ij = M_ij cos(q_i - q_j) + I_i delta_ij``;
* ``H(q, qd)_i = sum_j M_ij sin(q_i - q_j) qd_j^2`` (centrifugal terms only — absolute angles
  have no Coriolis cross terms);
* ``V(q) = g sum_j w_j cos(q_j + alpha)`` and ``G(q)_j = -g w_j sin(q_j + alpha)``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

GRAVITY = 9.81  # [m/s^2]


def _lock(a: np.ndarray) -> np.ndarray:
    a = np.array(a, dtype=float)
    a.setflags(write=False)
    return a


@dataclass(frozen=True)
class WalkerModel:
    """A compiled planar walker (immutable).

    Attributes:
        name: registry name.
        coords: (n,) coordinate (link) names, absolute angles [rad].
        A: (K, n) signed link lengths from the base to each lumped mass [m].
        m: (K,) lumped masses [kg].
        I: (n,) rotational inertia of each link about its centre of mass [kg m^2].
        B: (n, nu) actuator map; an internal torque ``u`` between links a (parent) and b
            (child) adds ``+u`` to the generalized force of b and ``-u`` to a [N m].
        points: name -> (n,) row of ``A`` locating a named point (hip, swing_foot...).
        relabel: (n,) permutation, ``q_new = q_old[relabel]`` after a stance exchange.
        actuators: (nu,) actuator names.
        mu: Coulomb friction coefficient used by the impact checks.
        limits: (n_rel, 4) rows ``(parent, child, lo, hi)`` limits on ``q_child - q_parent``.
        params: the rest of the model file (controller data, foot geometry...).
        M: (n, n) ``A^T diag(m) A``. w: (n,) ``A^T m``. m_total: total mass [kg].
        g: gravity [m/s^2].
    """

    name: str
    coords: tuple[str, ...]
    A: np.ndarray
    m: np.ndarray
    I: np.ndarray
    B: np.ndarray
    points: dict[str, np.ndarray]
    relabel: tuple[int, ...]
    actuators: tuple[str, ...]
    mu: float
    limits: np.ndarray
    params: dict[str, Any] = field(default_factory=dict)
    g: float = GRAVITY
    M: np.ndarray = field(init=False)
    w: np.ndarray = field(init=False)
    m_total: float = field(init=False)

    def __post_init__(self) -> None:
        A, m = _lock(self.A), _lock(self.m)
        object.__setattr__(self, "A", A)
        object.__setattr__(self, "m", m)
        object.__setattr__(self, "I", _lock(self.I))
        object.__setattr__(self, "B", _lock(self.B))
        object.__setattr__(self, "limits", _lock(self.limits).reshape(-1, 4))
        object.__setattr__(self, "points", {k: _lock(v) for k, v in self.points.items()})
        M = A.T @ (m[:, None] * A)
        object.__setattr__(self, "M", _lock(0.5 * (M + M.T)))  # exactly symmetric
        object.__setattr__(self, "w", _lock(A.T @ m))
        object.__setattr__(self, "m_total", float(m.sum()))

    @property
    def n(self) -> int:
        """Number of coordinates."""
        return len(self.coords)

    def index(self, coord: str) -> int:
        """Column of coordinate ``coord``."""
        return self.coords.index(coord)

    def frozen(self, keep: int) -> WalkerModel:
        """The model with the coordinates after ``keep`` held fixed (e.g. a flat foot).

        Holding ``q_j`` constant removes row/column j from ``D`` and ``H`` and turns its
        contribution to positions into a constant offset, so the reduced model is the same
        ``A`` with columns ``keep:`` dropped. ``G`` of the kept coordinates is unchanged;
        positions and the potential of the frozen links must be evaluated with the full
        model and full ``q`` (as :mod:`rbc.walkers.control.footed` does).
        """
        sub = WalkerModel(
            name=self.name,
            coords=self.coords[:keep],
            A=self.A[:, :keep],
            m=self.m,
            I=self.I[:keep],
            B=self.B[:keep],
            points={k: v[:keep] for k, v in self.points.items()},
            relabel=tuple(range(keep)),
            actuators=self.actuators,
            mu=self.mu,
            limits=self.limits,
            params=self.params,
            g=self.g,
        )
        return sub


def mass_matrix(model: WalkerModel, q: np.ndarray) -> np.ndarray:
    """Inertia matrix ``D(q)`` (n, n) [kg m^2]: ``M_ij cos(q_i - q_j) + diag(I)``.

    Args:
        model: the walker. q: (n,) absolute angles [rad].
    """
    return model.M * np.cos(q[:, None] - q) + np.diag(model.I)


def centrifugal(model: WalkerModel, q: np.ndarray, qd: np.ndarray) -> np.ndarray:
    """Velocity terms ``H(q, qd)`` (n,) [N m]: ``sum_j M_ij sin(q_i - q_j) qd_j^2``."""
    return (model.M * np.sin(q[:, None] - q)) @ (qd * qd)


def gravity(model: WalkerModel, q: np.ndarray, alpha: float) -> np.ndarray:
    """Gravity torques ``G(q) = dV/dq`` (n,) [N m] in the frame tilted by ``alpha`` [rad]."""
    return -model.g * model.w * np.sin(q + alpha)


def potential(model: WalkerModel, q: np.ndarray, alpha: float) -> float:
    """Potential energy ``V(q) = g sum_j w_j cos(q_j + alpha)`` [J] (base at height 0)."""
    return float(model.g * model.w @ np.cos(q + alpha))


def kinetic(model: WalkerModel, q: np.ndarray, qd: np.ndarray) -> float:
    """Kinetic energy ``qd^T D(q) qd / 2`` [J] with the base at rest."""
    return float(0.5 * qd @ mass_matrix(model, q) @ qd)


def energy(model: WalkerModel, q: np.ndarray, qd: np.ndarray, alpha: float) -> float:
    """Total mechanical energy [J] with the base at rest."""
    return kinetic(model, q, qd) + potential(model, q, alpha)


def point(model: WalkerModel, name: str, q: np.ndarray) -> np.ndarray:
    """Position (2,) [m] of named point ``name`` relative to the base, tilted frame."""
    a = model.points[name]
    return np.array([a @ np.sin(q), a @ np.cos(q)])


def point_velocity(model: WalkerModel, name: str, q: np.ndarray, qd: np.ndarray) -> np.ndarray:
    """Velocity (2,) [m/s] of named point ``name`` with the base at rest, tilted frame."""
    a = model.points[name] * qd
    return np.array([a @ np.cos(q), -(a @ np.sin(q))])


def mass_positions(model: WalkerModel, q: np.ndarray) -> np.ndarray:
    """Positions (K, 2) [m] of the lumped masses relative to the base, tilted frame."""
    return np.stack([model.A @ np.sin(q), model.A @ np.cos(q)], axis=1)


def mass_velocities(model: WalkerModel, q: np.ndarray, qd: np.ndarray) -> np.ndarray:
    """Velocities (K, 2) [m/s] of the lumped masses with the base at rest, tilted frame."""
    return np.stack([model.A @ (np.cos(q) * qd), -(model.A @ (np.sin(q) * qd))], axis=1)


def angular_momentum(
    model: WalkerModel,
    q: np.ndarray,
    qd: np.ndarray,
    about: np.ndarray,
    base: np.ndarray | None = None,
    base_velocity: np.ndarray | None = None,
) -> float:
    """Angular momentum [kg m^2/s] about point ``about`` (2,), clockwise positive.

    ``L = sum_k m_k ((c_k - P)_y cdot_x - (c_k - P)_x cdot_y) + sum_j I_j qd_j`` with the
    base at ``base`` moving at ``base_velocity`` (default: at the origin, at rest). The sign
    matches the angles: a point mass at ``l u(theta)`` has ``L = m l^2 thetadot``.
    """
    p = np.zeros(2) if base is None else base
    pd = np.zeros(2) if base_velocity is None else base_velocity
    r = mass_positions(model, q) + p - about
    v = mass_velocities(model, q, qd) + pd
    return float(model.m @ (r[:, 1] * v[:, 0] - r[:, 0] * v[:, 1]) + model.I @ qd)


class FusedTerms:
    """``D(q)`` and ``-(H(q, qd) + G(q))`` from one ``sin`` call (hot paths).

    The (2, n, n+1) array ``sin(q_i - q_j + [pi/2, 0])`` holds ``cos`` and ``sin`` of all
    angle differences; the last column is ``q_n := -alpha`` so gravity rides in the same
    call (docs/walkers.md §2). Same equations as :func:`mass_matrix`, :func:`centrifugal`
    and :func:`gravity`.

    Args:
        model: the walker. alpha: slope [rad].
    """

    def __init__(self, model: WalkerModel, alpha: float) -> None:
        n = model.n
        self.n = n
        self.M, self.diagI = np.array(model.M), np.diag(model.I)
        self.off2 = np.array([np.pi / 2, 0.0])[:, None, None]
        self.qa, self.va = np.append(np.zeros(n), -alpha), np.append(np.zeros(n), 1.0)
        self.Mg = np.hstack([-np.array(model.M), (model.g * model.w)[:, None]])

    def __call__(self, q: np.ndarray, qd: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(D (n, n) [kg m^2], -(H + G) (n,) [N m])``."""
        n, qa, va = self.n, self.qa, self.va
        qa[:n] = q
        va[:n] = qd * qd
        T = np.sin((q[:, None] - qa) + self.off2)
        return self.M * T[0, :, :n] + self.diagI, (self.Mg * T[1]) @ va

    def accel_affine(self, q: np.ndarray, qd: np.ndarray, B: np.ndarray
                     ) -> tuple[np.ndarray, np.ndarray]:
        """``(X_u (n, nu), x_0 (n,))`` with ``qdd = X_u u + x_0 = D^-1 (B u - H - G)``
        (one LAPACK ``dgesv`` with both right-hand sides)."""
        from scipy.linalg.lapack import dgesv

        D, mhg = self(q, qd)
        X = dgesv(D, np.column_stack([B, mhg]))[2]
        return X[:, :-1], X[:, -1]

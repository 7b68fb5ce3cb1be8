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
* Fixed angle offsets: a term ``L u(q_j + delta)`` (a spoke of a rimless wheel at a fixed
  angle to the coordinate's spoke) is ``L cos(delta) u(q_j) + L sin(delta) v(q_j)``, so a
  second constant matrix ``Av`` holds the coefficients of ``v(q_j)``:
  ``c_k = p + sum_j A[k, j] u(q_j) + Av[k, j] v(q_j)`` (points likewise, ``points_v``).
* Infinitesimal masses (the ``m/M -> 0`` limit of Garcia's simplest walker): kept apart in
  ``infinitesimal``, a model of those masses alone (relative weights, no inertia). The
  equations are then the limit of ``(D_0 + eps D_1) qdd = r_0 + eps r_1`` as
  ``eps -> 0`` (:func:`limit_solve`), not a singular mass matrix.

From ``A`` alone (Westervelt, Grizzle et al., "Feedback Control of Dynamic Bipedal Robot
Locomotion", 2007, Sec. 3.2 and App. B; the absolute-angle form of Goswami et al. 1998):

* ``M = A^T diag(m) A`` (n, n) constant, ``w = A^T m`` (n,) constant;
* ``D(q)_ij = M_ij cos(q_i - q_j) + I_i delta_ij``;
* ``H(q, qd)_i = sum_j M_ij sin(q_i - q_j) qd_j^2`` (centrifugal terms only — absolute angles
  have no Coriolis cross terms);
* ``V(q) = g sum_j w_j cos(q_j + alpha)`` and ``G(q)_j = -g w_j sin(q_j + alpha)``.

With offsets (complex rows ``A + i Av``, so ``A^H diag(m) A`` is Hermitian): ``M`` gains the
antisymmetric ``Mi = A^T diag(m) Av - Av^T diag(m) A`` and ``w`` the companion ``wv = Av^T m``;
``D_ij = M_ij cos(q_i - q_j) + Mi_ij sin(q_i - q_j)``, ``H_i = sum_j (M_ij sin(q_i - q_j) -
Mi_ij cos(q_i - q_j)) qd_j^2``, ``V = g sum_j (w_j cos(q_j + alpha) - wv_j sin(q_j + alpha))``
(docs/walkers.md §2). All ``Av`` terms vanish identically without offsets.
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
        Av: (K, n) coefficients of ``v(q_j)`` (fixed angle offsets; zeros without).
        points_v: name -> (n,) the same for named points (missing: zeros).
        relabel_offset: (n,) added after the permutation, ``q_new = q_old[relabel] + off``.
        infinitesimal: the infinitesimal masses as a model of their own (None: none).
        Mi: (n, n) antisymmetric offset part of ``A^H diag(m) A``. wv: (n,) ``Av^T m``.
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
    Av: np.ndarray | None = None
    points_v: dict[str, np.ndarray] = field(default_factory=dict)
    relabel_offset: np.ndarray | None = None
    infinitesimal: WalkerModel | None = None
    M: np.ndarray = field(init=False)
    w: np.ndarray = field(init=False)
    m_total: float = field(init=False)
    Mi: np.ndarray = field(init=False)
    wv: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        A, m = _lock(self.A), _lock(self.m)
        Av = _lock(np.zeros_like(A) if self.Av is None else self.Av)
        object.__setattr__(self, "A", A)
        object.__setattr__(self, "Av", Av)
        object.__setattr__(self, "m", m)
        object.__setattr__(self, "I", _lock(self.I))
        object.__setattr__(self, "B", _lock(self.B))
        object.__setattr__(self, "limits", _lock(self.limits).reshape(-1, 4))
        object.__setattr__(self, "points", {k: _lock(v) for k, v in self.points.items()})
        object.__setattr__(self, "points_v", {k: _lock(v) for k, v in self.points_v.items()
                                              if np.any(v)})
        off = np.zeros(len(self.coords)) if self.relabel_offset is None else self.relabel_offset
        object.__setattr__(self, "relabel_offset", _lock(off))
        M = A.T @ (m[:, None] * A)
        Mi = np.zeros_like(M)
        if np.any(Av):
            M = M + Av.T @ (m[:, None] * Av)
            Mi = A.T @ (m[:, None] * Av)
            Mi = Mi - Mi.T  # exactly antisymmetric
        object.__setattr__(self, "M", _lock(0.5 * (M + M.T)))  # exactly symmetric
        object.__setattr__(self, "Mi", _lock(Mi))
        object.__setattr__(self, "w", _lock(A.T @ m))
        object.__setattr__(self, "wv", _lock(Av.T @ m))
        object.__setattr__(self, "m_total", float(m.sum()))

    @property
    def has_offsets(self) -> bool:
        """Whether any mass or point has a fixed angle offset (``Av`` or ``points_v``)."""
        return bool(np.any(self.Av) or self.points_v)

    @property
    def is_limit(self) -> bool:
        """Whether the model has infinitesimal masses (a limit model)."""
        return self.infinitesimal is not None

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
        if self.has_offsets or self.is_limit:
            raise ValueError("frozen(): models with angle offsets or infinitesimal masses "
                             "are not supported")
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
    """Inertia matrix ``D(q)`` (n, n) [kg m^2]: ``M_ij cos(q_i - q_j) + diag(I)`` (plus
    ``Mi_ij sin(q_i - q_j)`` with angle offsets).

    Args:
        model: the walker. q: (n,) absolute angles [rad].
    """
    d = q[:, None] - q
    D = model.M * np.cos(d) + np.diag(model.I)
    return D + model.Mi * np.sin(d) if model.has_offsets else D


def centrifugal(model: WalkerModel, q: np.ndarray, qd: np.ndarray) -> np.ndarray:
    """Velocity terms ``H(q, qd)`` (n,) [N m]: ``sum_j M_ij sin(q_i - q_j) qd_j^2`` (minus
    ``Mi_ij cos(q_i - q_j) qd_j^2`` with angle offsets)."""
    d = q[:, None] - q
    C = model.M * np.sin(d)
    if model.has_offsets:
        C = C - model.Mi * np.cos(d)
    return C @ (qd * qd)


def gravity(model: WalkerModel, q: np.ndarray, alpha: float) -> np.ndarray:
    """Gravity torques ``G(q) = dV/dq`` (n,) [N m] in the frame tilted by ``alpha`` [rad]."""
    G = -model.g * model.w * np.sin(q + alpha)
    return G - model.g * model.wv * np.cos(q + alpha) if model.has_offsets else G


def potential(model: WalkerModel, q: np.ndarray, alpha: float) -> float:
    """Potential energy ``V(q) = g sum_j w_j cos(q_j + alpha)`` [J] (base at height 0; minus
    ``g sum_j wv_j sin(q_j + alpha)`` with angle offsets)."""
    V = model.g * model.w @ np.cos(q + alpha)
    if model.has_offsets:
        V = V - model.g * model.wv @ np.sin(q + alpha)
    return float(V)


def kinetic(model: WalkerModel, q: np.ndarray, qd: np.ndarray) -> float:
    """Kinetic energy ``qd^T D(q) qd / 2`` [J] with the base at rest."""
    return float(0.5 * qd @ mass_matrix(model, q) @ qd)


def energy(model: WalkerModel, q: np.ndarray, qd: np.ndarray, alpha: float) -> float:
    """Total mechanical energy [J] with the base at rest."""
    return kinetic(model, q, qd) + potential(model, q, alpha)


def point(model: WalkerModel, name: str, q: np.ndarray) -> np.ndarray:
    """Position (2,) [m] of named point ``name`` relative to the base, tilted frame."""
    a, s, c = model.points[name], np.sin(q), np.cos(q)
    av = model.points_v.get(name)
    if av is None:
        return np.array([a @ s, a @ c])
    return np.array([a @ s + av @ c, a @ c - av @ s])


def point_velocity(model: WalkerModel, name: str, q: np.ndarray, qd: np.ndarray) -> np.ndarray:
    """Velocity (2,) [m/s] of named point ``name`` with the base at rest, tilted frame."""
    a, s, c = model.points[name] * qd, np.sin(q), np.cos(q)
    av = model.points_v.get(name)
    if av is None:
        return np.array([a @ c, -(a @ s)])
    av = av * qd
    return np.array([a @ c - av @ s, -(a @ s) - av @ c])


def point_jacobian(model: WalkerModel, name: str, q: np.ndarray) -> np.ndarray:
    """``d point / dq`` (2, n) [m/rad] of named point ``name`` (base fixed), tilted frame."""
    a, s, c = model.points[name], np.sin(q), np.cos(q)
    av = model.points_v.get(name)
    if av is None:
        return np.stack([a * c, -a * s])
    return np.stack([a * c - av * s, -a * s - av * c])


def mass_positions(model: WalkerModel, q: np.ndarray) -> np.ndarray:
    """Positions (K, 2) [m] of the lumped masses relative to the base, tilted frame."""
    s, c = np.sin(q), np.cos(q)
    P = np.stack([model.A @ s, model.A @ c], axis=1)
    return P + np.stack([model.Av @ c, -(model.Av @ s)], axis=1) if model.has_offsets else P


def mass_velocities(model: WalkerModel, q: np.ndarray, qd: np.ndarray) -> np.ndarray:
    """Velocities (K, 2) [m/s] of the lumped masses with the base at rest, tilted frame."""
    s, c = np.sin(q) * qd, np.cos(q) * qd
    V = np.stack([model.A @ c, -(model.A @ s)], axis=1)
    return V - np.stack([model.Av @ s, model.Av @ c], axis=1) if model.has_offsets else V


def _regular_solve(K: np.ndarray, b: np.ndarray) -> np.ndarray | None:
    """``K^-1 b`` by LAPACK ``dgesv``, or None when a pivot is below 1e-13 of the largest."""
    from scipy.linalg.lapack import dgesv

    lu, _, x, info = dgesv(K, b)
    d = np.abs(np.diagonal(lu))
    return x if info == 0 and d.min() > 1e-13 * d.max() else None


def limit_solve(K0: np.ndarray, K1: np.ndarray, b0: np.ndarray, b1: np.ndarray,
                what: str = "system") -> np.ndarray:
    """``lim_{eps -> 0} (K0 + eps K1)^-1 (b0 + eps b1)`` (N,), the equations of a limit model.

    Method (regular perturbation of a singular pencil): with ``K0 = U S V^T``, ``R`` and
    ``L`` the right and left null spaces of ``K0``, the limit ``z0`` solves ``K0 z0 = b0``
    and the solvability of the ``eps`` order, ``L^T (b1 - K1 z0) = 0``:
    ``z0 = z_p + R c`` with ``(L^T K1 R) c = L^T (b1 - K1 z_p)``. With ``K0`` regular this is
    ``K0^-1 b0``.

    Args:
        K0, K1: (N, N). b0, b1: (N,) or (N, m). what: named in the error.

    Raises:
        WalkerError: ``L^T K1 R`` singular (the limit does not determine the motion).
    """
    Z = ~(K0.any(axis=0) | K0.any(axis=1))  # coordinates the finite part does not touch
    if Z.any():  # structural null space (coordinate axes): block-triangular, no SVD
        a = ~Z
        za = _regular_solve(K0[np.ix_(a, a)], b0[a])
        if za is not None:
            zZ = _regular_solve(K1[np.ix_(Z, Z)], b1[Z] - K1[np.ix_(Z, a)] @ za)
            if zZ is not None:
                z = np.empty(b0.shape)
                z[a], z[Z] = za, zZ
                return z
    U, S, Vt = np.linalg.svd(K0)
    tol = S[0] * K0.shape[0] * 1e-13
    r = int(np.sum(S > tol))
    zp = Vt[:r].T @ ((U[:, :r].T @ b0) / (S[:r] if b0.ndim == 1 else S[:r, None]))
    if r == K0.shape[0]:
        return zp
    R, L = Vt[r:].T, U[:, r:]
    C = L.T @ K1 @ R
    sc = np.linalg.svd(C, compute_uv=False)
    if sc[-1] <= max(1.0, np.abs(K1).max()) * 1e-12:
        from rbc.walkers.errors import WalkerError

        raise WalkerError(f"singular {what}: the infinitesimal masses do not determine the "
                          f"{K0.shape[0] - r} degree(s) of freedom the finite masses leave free")
    return zp + R @ np.linalg.solve(C, L.T @ (b1 - K1 @ zp))


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
        # angle offsets: D += Mi sin, -(H + G) += [Mi, g wv] cos (module docstring)
        self.offsets = model.has_offsets
        self.Mi = np.array(model.Mi)
        self.Mgi = np.hstack([self.Mi, (model.g * model.wv)[:, None]])

    def __call__(self, q: np.ndarray, qd: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(D (n, n) [kg m^2], -(H + G) (n,) [N m])``."""
        n, qa, va = self.n, self.qa, self.va
        qa[:n] = q
        va[:n] = qd * qd
        T = np.sin((q[:, None] - qa) + self.off2)
        if self.offsets:
            return (self.M * T[0, :, :n] + self.Mi * T[1, :, :n] + self.diagI,
                    (self.Mg * T[1] + self.Mgi * T[0]) @ va)
        return self.M * T[0, :, :n] + self.diagI, (self.Mg * T[1]) @ va

    def accel_affine(self, q: np.ndarray, qd: np.ndarray, B: np.ndarray
                     ) -> tuple[np.ndarray, np.ndarray]:
        """``(X_u (n, nu), x_0 (n,))`` with ``qdd = X_u u + x_0 = D^-1 (B u - H - G)``
        (one LAPACK ``dgesv`` with both right-hand sides)."""
        from scipy.linalg.lapack import dgesv

        D, mhg = self(q, qd)
        X = dgesv(D, np.column_stack([B, mhg]))[2]
        return X[:, :-1], X[:, -1]


def dD_times(model: WalkerModel, q: np.ndarray, v: np.ndarray) -> np.ndarray:
    """(n, n): column k is ``∂D/∂q_k v`` [kg m^2/rad] (``D_ij`` depends on ``q_i - q_j``
    only: ``∂D_ij/∂q_k = S_ij (δ_ik - δ_jk)``, ``S = -M sin + Mi cos`` of the differences)."""
    d = q[:, None] - q
    S = -model.M * np.sin(d) + model.Mi * np.cos(d)
    return np.diag(S @ v) - S * v[None, :]


def force_jacobian(model: WalkerModel, q: np.ndarray, qd: np.ndarray, alpha: float
                   ) -> tuple[np.ndarray, np.ndarray]:
    """``(∂r/∂q, ∂r/∂qd)`` (n, n) each of ``r = -(H + G)`` [N m/rad, N m s/rad].

    ``H_i = sum_j Hc_ij qd_j^2`` with ``Hc = M sin - Mi cos`` of ``q_i - q_j``, so
    ``∂H_i/∂q_k = sum_j C_ij (δ_ik - δ_jk) qd_j^2`` (``C = M cos + Mi sin``) and
    ``∂H_i/∂qd_j = 2 Hc_ij qd_j``; ``∂G_j/∂q_j = -g (w cos(q_j + α) - wv sin(q_j + α))``.
    """
    d = q[:, None] - q
    s, c = np.sin(d), np.cos(d)
    C = model.M * c + model.Mi * s
    Hc = model.M * s - model.Mi * c
    qd2 = qd * qd
    dHq = np.diag(C @ qd2) - C * qd2[None, :]
    dG = -model.g * (model.w * np.cos(q + alpha) - model.wv * np.sin(q + alpha))
    return -dHq - np.diag(dG), -Hc * (2.0 * qd)[None, :]


def singular_mass_matrix(model: WalkerModel, q: np.ndarray):
    """The error for a mass matrix LAPACK found singular at ``q`` (names the model, the
    configuration and the coordinates spanning the null space)."""
    from rbc.walkers.errors import WalkerError

    w, V = np.linalg.eigh(mass_matrix(model, q))
    v = np.abs(V[:, 0])
    names = [c for c, a in zip(model.coords, v, strict=True) if a > 0.1 * v.max()]
    return WalkerError(f"model '{model.name}': the mass matrix is singular at q = "
                       f"{np.round(q, 4).tolist()} rad (null direction on {', '.join(names)}); "
                       "a link without mass needs an infinitesimal mass (m -> 0 limit) or an "
                       "inertia")


def solve_mass_matrix(model: WalkerModel, D: np.ndarray, rhs: np.ndarray,
                      q: np.ndarray) -> np.ndarray:
    """``D^-1 rhs`` by LAPACK ``dgesv`` on the symmetrically equilibrated ``S D S`` (``S =
    diag(D)^-1/2``: a light link, e.g. a 1e-6 foot mass, no longer costs digits: round-off
    in its acceleration stays relative to its own scale), refusing a singular ``D``:
    LAPACK's failure flag, or a pivot below ``1e-13`` of the largest (a numerically singular
    matrix, where the solution would be round-off amplified past any use).

    Raises:
        WalkerError: :func:`singular_mass_matrix`.
    """
    from scipy.linalg.lapack import dgesv

    dg = np.diagonal(D)
    if not np.all(dg > 0):
        raise singular_mass_matrix(model, q)
    s = 1.0 / np.sqrt(dg)
    sb = s if rhs.ndim == 1 else s[:, None]
    lu, _, x, info = dgesv(D * s[:, None] * s[None, :], sb * rhs)
    d = np.abs(np.diagonal(lu))
    if info != 0 or not d.min() > 1e-13 * d.max():
        raise singular_mass_matrix(model, q)
    return sb * x

"""Virtual constraints on a monotone phase variable and computed-torque feedback
linearization.

Method: Westervelt, Grizzle et al. 2007, Ch. 5-6 (hybrid zero dynamics); Grizzle, Abba,
Plestan 2001 (RABBIT-type outputs); Bezier shapes after Westervelt et al. 2003.

* Phase: ``theta(q) = c . q`` (linear, e.g. the virtual stance leg ``(q_tibia + q_femur)/2``
  — exact for equal tibia and femur lengths), normalized ``s = (theta - theta_plus) /
  (theta_minus - theta_plus)``; the controller requires ``dtheta/dt > 0`` (strictly
  monotone), otherwise the stride is a backward fall.
* Outputs (nu,): ``y = H0 q - h_d(s)`` with ``H0`` a constant (nu, n) matrix (torso angle,
  knee flexions, the *mirror* constraint ``(swing virtual leg) + (stance virtual leg)``)
  and ``h_d`` Bezier polynomials of degree M in ``s``.
* ``dy/dt = J qd`` with ``J = H0 - h_d'(s) c^T / dtheta`` and
  ``d2y/dt2 = J qdd - h_d''(s) sdot^2``.
* Computed torque: with ``X = D^-1 [B, H + G]``, the decoupling matrix is
  ``L_g L_f y = J D^-1 B`` and ``u = (L_g L_f y)^-1 (v + h_d'' sdot^2 + J D^-1 (H + G))``
  with ``v = -Kp y - Kd dy/dt`` so that ``d2y/dt2 = v`` (Isidori's input-output
  linearization, Westervelt et al. 2007 eq. (5.26)).
"""

from __future__ import annotations

from dataclasses import dataclass
from math import comb

import numpy as np
from scipy.linalg.lapack import dgesv as _gesv

from rbc.walkers.errors import WalkerError
from rbc.walkers.hybrid.model import FusedTerms, WalkerModel


def bezier_to_monomial(alpha: np.ndarray) -> np.ndarray:
    """Monomial coefficients (p, M+1) of Bezier polynomials with control points ``alpha``
    (p, M+1): ``sum_k alpha_k C(M,k) s^k (1-s)^(M-k) = sum_i P_i s^i``."""
    alpha = np.atleast_2d(np.asarray(alpha, dtype=float))
    M = alpha.shape[1] - 1
    T = np.zeros((M + 1, M + 1))  # T[k, i]: coefficient of s^i in basis k
    for k in range(M + 1):
        for j in range(M - k + 1):
            T[k, k + j] = comb(M, k) * comb(M - k, j) * (-1) ** j
    return alpha @ T


@dataclass(frozen=True)
class Bezier:
    """Vector of Bezier polynomials in ``s`` (Westervelt et al. 2007, Sec. 6.2.1).

    Attributes:
        alpha: (p, M+1) control points. P0, P1, P2: monomial coefficients of the value and
            first two derivatives, (p, M+1) each (padded with zeros).
    """

    alpha: np.ndarray

    def __post_init__(self) -> None:
        P0 = bezier_to_monomial(self.alpha)
        M = P0.shape[1] - 1
        i = np.arange(M + 1)
        P1 = np.zeros_like(P0)
        P1[:, :M] = P0[:, 1:] * i[1:]
        P2 = np.zeros_like(P0)
        P2[:, : M - 1] = P0[:, 2:] * (i[2:] * i[1:-1])
        for name, val in (("P0", P0), ("P1", P1), ("P2", P2)):
            val.setflags(write=False)
            object.__setattr__(self, name, val)
        object.__setattr__(self, "_pow", np.arange(M + 1))

    def __call__(self, s: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Value, first and second derivative w.r.t. ``s``, each (p,)."""
        pw = s ** self._pow
        return self.P0 @ pw, self.P1 @ pw, self.P2 @ pw


@dataclass(frozen=True)
class VirtualConstraints:
    """Outputs ``y = H0 q - h_d(s(q))`` on the phase ``s = (c.q - theta_plus)/dtheta``.

    Attributes:
        H0: (p, n) output rows. c: (n,) phase coefficients. theta_plus, theta_minus:
            phase at the start/end of a step [rad]. shapes: :class:`Bezier` (p outputs).
        names: (p,) output names.
    """

    H0: np.ndarray
    c: np.ndarray
    theta_plus: float
    theta_minus: float
    shapes: Bezier
    names: tuple[str, ...]

    def __post_init__(self) -> None:
        if not self.theta_minus > self.theta_plus:
            raise WalkerError(
                "phase variable is not strictly monotone over the step: theta_minus "
                f"({self.theta_minus:.4g}) must exceed theta_plus ({self.theta_plus:.4g})")
        if not np.any(self.c):
            raise WalkerError("phase variable has all-zero coefficients (not monotone)")

    @property
    def dtheta(self) -> float:
        """``theta_minus - theta_plus`` [rad]."""
        return self.theta_minus - self.theta_plus

    def phase(self, q: np.ndarray) -> float:
        """Normalized phase ``s`` (0 at the start of a step, 1 at its end)."""
        return (self.c @ q - self.theta_plus) / self.dtheta

    def outputs(self, q: np.ndarray, qd: np.ndarray):
        """``(y (p,), dy (p,), J (p, n), drift (p,))`` with ``d2y = J qdd - drift``."""
        s = (self.c @ q - self.theta_plus) / self.dtheta
        sd = (self.c @ qd) / self.dtheta
        hd, hd1, hd2 = self.shapes(s)
        J = self.H0 - np.outer(hd1, self.c / self.dtheta)
        return self.H0 @ q - hd, J @ qd, J, hd2 * (sd * sd)


@dataclass(frozen=True)
class FeedbackLinearization:
    """Computed-torque controller driving the virtual constraints to zero (see module).

    Attributes:
        model: the plant. alpha: slope [rad]. vc: :class:`VirtualConstraints` (p = nu).
        kp, kd: output PD gains [1/s^2, 1/s].
    """

    model: WalkerModel
    alpha: float
    vc: VirtualConstraints
    kp: float
    kd: float

    @classmethod
    def from_model(cls, model: WalkerModel, alpha: float) -> FeedbackLinearization:
        """Read the ``controller`` section of the model file (see docs/walkers.md).

        Raises:
            WalkerError: malformed section or a non-monotone phase.
        """
        cfg = model.params["controller"]
        c = np.zeros(model.n)
        for k, v in cfg["phase"].items():
            c[model.index(k)] = float(v)
        names, rows, alphas = [], [], []
        for out in cfg["outputs"]:
            row = np.zeros(model.n)
            for k, v in out["row"].items():
                row[model.index(k)] = float(v)
            names.append(out["name"])
            rows.append(row)
            alphas.append([float(a) for a in out["bezier"]])
        if len(rows) != model.B.shape[1]:
            raise WalkerError(f"{len(rows)} outputs for {model.B.shape[1]} actuators")
        vc = VirtualConstraints(np.array(rows), c, float(cfg["theta_plus"]),
                                float(cfg["theta_minus"]), Bezier(np.array(alphas)),
                                tuple(names))
        if cfg.get("impact_invariant", False):
            vc = impact_invariant(vc, model)
        return cls(model, alpha, vc, float(cfg["kp"]), float(cfg["kd"]))

    def __post_init__(self) -> None:
        # Constant parts precomputed once (hot path: evaluated at every RK4 stage).
        m, vc = self.model, self.vc
        n, nu = m.B.shape
        p = vc.H0.shape[0]
        K = np.zeros((n + p, n + nu))
        K[:n, n:] = -m.B
        sh = vc.shapes
        pre = {
            "K": K, "rhs": np.zeros(n + p), "n": n, "p": p,
            "terms": FusedTerms(m, self.alpha),  # D and -(H + G) from one sin call
            "P012": np.vstack([sh.P0, sh.P1, sh.P2]),  # (3p, M+1)
            "pow": sh._pow, "cd": vc.c / vc.dtheta, "th0": vc.theta_plus / vc.dtheta,
            "H0c": np.vstack([vc.H0, vc.c / vc.dtheta]),  # (p+1, n)
            "gains": np.array([-self.kp, -self.kd]),
            "cubic": sh.P0.shape[1] == 4,
        }
        object.__setattr__(self, "_pre", pre)

    def accel(self, q: np.ndarray, qd: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Closed-loop ``(qdd (n,), u (nu,))``; evaluated at every RK4 stage.

        Solves the block system ``[[D, -B], [J, 0]] [qdd; u] = [-(H + G); v + drift]``,
        which is the computed torque of the module docstring with the decoupling matrix
        eliminated by the same LU factorization (``J D^-1 B u = ...``); see
        :meth:`accel_decoupling` for the explicit two-stage form used as a test oracle.
        ``D`` and ``H`` use ``cos/sin(q_i - q_j)``, ``y`` and ``dy`` one product with the
        stacked ``[H0; c/dtheta]``: the hot path has no Python loop over masses or links.
        """
        P = self._pre
        n, p = P["n"], P["p"]
        K, rhs = P["K"], P["rhs"]
        K[:n, :n], rhs[:n] = P["terms"](q, qd)  # D, -(H + G)
        Hx = P["H0c"] @ np.array((q, qd)).T  # (p+1, 2): [H0 q, H0 qd; theta/dtheta, sdot]
        s = Hx[p, 0] - P["th0"]
        sd = Hx[p, 1]
        pw = np.array((1.0, s, s * s, s * s * s)) if P["cubic"] else s ** P["pow"]
        h = (P["P012"] @ pw).reshape(3, p)  # h_d, h_d', h_d''
        K[n:, :n] = self.vc.H0 - h[1][:, None] * P["cd"]
        # v + drift = -kp (H0 q - h_d) - kd (H0 qd - h_d' sd) + h_d'' sd^2
        rhs[n:] = np.array((self.kp, self.kd * sd, sd * sd)) @ h + Hx[:p] @ P["gains"]
        _, _, sol, info = _gesv(K, rhs)  # LAPACK dgesv directly: numpy's costs 3x more here
        if info != 0:
            raise WalkerError(f"model '{self.model.name}': the computed-torque system "
                              f"[[D, -B], [J, 0]] is singular at q = {np.round(q, 4).tolist()} "
                              "rad (singular mass matrix or decoupling matrix)")
        return sol[:n], sol[n:]

    def accel_decoupling(self, q: np.ndarray, qd: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Reference two-stage form: ``X = D^-1 [B, H+G]``, decoupling matrix ``J X_B``."""
        from rbc.walkers.hybrid.model import centrifugal, gravity, mass_matrix

        m = self.model
        D = mass_matrix(m, q)
        hg = centrifugal(m, q, qd) + gravity(m, q, self.alpha)
        X = np.linalg.solve(D, np.column_stack([m.B, hg]))
        y, dy, J, drift = self.vc.outputs(q, qd)
        JX = J @ X
        u = np.linalg.solve(JX[:, :-1], -self.kp * y - self.kd * dy + drift + JX[:, -1])
        return X[:, :-1] @ u - X[:, -1], u


def vc_initial_state(ctrl: FeedbackLinearization, theta_rate: float) -> np.ndarray:
    """Post-impact-like state (2n,) on the constraint surface at ``s = 0``.

    Solves ``y(q) = 0`` with ``c.q = theta_plus`` (linear: ``H0 q = h_d(0)``) and
    ``J qd = 0`` with ``c.qd = theta_rate`` (Westervelt et al. 2007, Sec. 5.4).

    Raises:
        WalkerError: ``theta_rate <= 0`` (a backward start) or singular outputs.
    """
    if theta_rate <= 0:
        raise WalkerError(f"initial phase rate {theta_rate} rad/s cannot start a stride "
                          "(must be > 0)")
    vc = ctrl.vc
    hd, hd1, _ = vc.shapes(0.0)
    K = np.vstack([vc.H0, vc.c])
    try:
        q = np.linalg.solve(K, np.append(hd, vc.theta_plus))
        J = vc.H0 - np.outer(hd1, vc.c / vc.dtheta)
        qd = np.linalg.solve(np.vstack([J, vc.c]), np.append(np.zeros(len(hd)), theta_rate))
    except np.linalg.LinAlgError as err:
        raise WalkerError("outputs and phase variable do not determine the posture") from err
    return np.concatenate([q, qd])


def impact_invariant(vc: VirtualConstraints, model: WalkerModel) -> VirtualConstraints:
    """Re-choose the second Bezier coefficients so the constraints are impact invariant.

    The pre-impact velocity on the constraint surface at ``s = 1`` has direction
    ``qd- = [J(1); c]^-1 [0; 1]``; the impact map is linear in velocity, so the post-impact
    velocity ``qd+ = R Delta(q-) qd-`` has a fixed direction and ``y`` stays zero across the
    impact iff ``h_d'(0) = dtheta H0 qd+ / (c . qd+)``; for a Bezier of degree M,
    ``h_d'(0) = M (alpha_1 - alpha_0)`` (Westervelt et al. 2007, Sec. 6.3.2, eq. (6.32)).
    Positions are invariant by construction when ``R q(1)`` satisfies ``y = 0`` at ``s = 0``
    (symmetric shapes, the mirror output).
    """
    from rbc.walkers.hybrid.impact import point_foot_impact, relabel

    hd, hd1, _ = vc.shapes(1.0)
    K = np.vstack([vc.H0, vc.c])
    qm = np.linalg.solve(K, np.append(hd, vc.theta_minus))
    J = vc.H0 - np.outer(hd1, vc.c / vc.dtheta)
    qdm = np.linalg.solve(np.vstack([J, vc.c]), np.append(np.zeros(len(hd)), 1.0))
    rep = point_foot_impact(model, qm, qdm)
    _, qdp = relabel(model, qm, rep.qd_e[: model.n])
    alpha = np.array(vc.shapes.alpha, dtype=float)
    M = alpha.shape[1] - 1
    alpha[:, 1] = alpha[:, 0] + vc.dtheta * (vc.H0 @ qdp) / (vc.c @ qdp) / M
    return VirtualConstraints(vc.H0, vc.c, vc.theta_plus, vc.theta_minus, Bezier(alpha),
                              vc.names)

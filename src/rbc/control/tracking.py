"""The tracking law in the active mode's independent coordinates (issue #20 item 1,
docs/allocation.md "Tracking law").

**Errors.** For every joint with independent speeds the error e and its rate ė compare the
measured configuration with the reference's, in the joint's own group:

* a vector joint (revolute, prismatic, helical, universal, cylindrical; ``q̇ = v``):
  ``e = q − q_d``, ``u_d = v̄_d``, ``ė = v − u_d``, ``u̇_d = v̄̇_d``;
* a free joint (a floating root; v the body twist ``[ω; v]`` of its child frame,
  docs/conventions.md) with ``T = Q(q)``, ``T_d = Q(q_d)``, ``Δ = T_d⁻¹ T``:

      e_b = log(Δ)∨,   X_b = Ad(Δ⁻¹) = Ad(T⁻¹ T_d),   u_d,b = X_b v̄_d,b,
      ė_b = J_l⁻¹(−e_b) (v_b − u_d,b) = J_r⁻¹(e_b) (v_b − u_d,b),
      u̇_d,b = X_b v̄̇_d,b + ad(u_d,b) v_b,

  since ``Δ̇ = Δ (v_b − u_d,b)^`` (a right perturbation: ``J_r⁻¹(ρ) = J_l⁻¹(−ρ)``, Solà,
  Deray, Atchuthan 2018, Eq. 76 and App. D) and ``d/dt Ad(Δ⁻¹) = ad(u_d,b − v_b) Ad(Δ⁻¹)``;
  u̇_d,b is the exact time derivative of u_d,b along the measured motion, so that
  ``u̇_r`` below is the derivative of ``u_r`` (the passivity argument needs it);
* a spherical joint (v the angular velocity in Jc): the same with SO(3),
  ``e = log(R_dᵀ R)``, ``u_d = Δᵀ ω̄_d``, ``ė = J_r⁻¹(e)(ω − u_d)``,
  ``u̇_d = Δᵀ ω̄̇_d + u_d × ω``.

A joint of which only some speeds are independent contributes those components (the
full joint speed enters ė). Planar independent joints are refused (their v is not q̇ and
no group error is implemented).

**Reference speed and sliding variable** (Slotine & Li, "On the adaptive control of robot
manipulators", IJRR 6(3), 1987; the form of issue #20):

    u_r = u_d − Λ e,   u̇_r = u̇_d − Λ ė,   s = u − u_r,

**Commanded generalised force** in the independent speeds u of the mode (the form used):

    Q = Γ u̇_r + C(q, u) u_r + g + D u − k_s Γ s,

with Γ, C, g, D the mode's member-wise terms (:mod:`rbc.compose.dynamics`; C acting on the
auxiliary speed u_r). Applied exactly (``Γ u̇ + C u + g + D u = Q``) it gives
``Γ ṡ + C s = −k_s Γ s``, so with the skew identity ``Γ̇ = C + Cᵀ`` the storage
``V = ½ sᵀ Γ s`` obeys ``V̇ = −2 k_s V`` (tests). Other smooth loads (springs, constant
efforts: ``terms.tau``) and Coulomb friction are not in Q: the allocation
(:mod:`rbc.control.allocation`) asks the ports for ``Q − τ``, and friction compensation
belongs to the plant's policy.

Defaults Λ = 15 I s⁻¹, k_s = 45 s⁻¹ (issue #20).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from rbc.errors import RbcError
from rbc.ir import spatial as sp
from rbc.model.compiled import CompiledModel, Partition

#: Joint types whose v is q̇ (the error is a plain difference).
VECTOR_JOINTS = ("revolute", "prismatic", "helical", "universal", "cylindrical")
#: Joint types the tracking law handles.
TRACKED_JOINTS = (*VECTOR_JOINTS, "free", "spherical")


class TrackingError(RbcError):
    """The tracking law cannot be set up on a partition (an independent joint of a type
    without a group error)."""


@dataclass(frozen=True)
class TrackingGains:
    """Gains of the tracking law.

    Attributes:
        Lambda: Λ [s⁻¹], the same on every independent coordinate (Λ = Λ I).
        k_s: the sliding-variable gain k_s [s⁻¹].
    """

    Lambda: float = 15.0
    k_s: float = 45.0


@dataclass(frozen=True)
class _Block:
    """One joint with independent speeds: its group, q/v slices in the mode model, the
    joint-local indices of its independent speeds and their positions in u."""

    name: str
    group: str  # vector | se3 | so3
    q: slice
    v: slice
    local: np.ndarray
    pos: np.ndarray


@dataclass(frozen=True, eq=False)
class IndependentCoordinates:
    """The independent coordinates of a partition grouped by joint (immutable).

    Attributes:
        model: the mode model; partition: its partition (u = v[partition.independent]).
        blocks: per joint with independent speeds its group and index data.
    """

    model: CompiledModel
    partition: Partition
    blocks: tuple[_Block, ...]

    @property
    def n_u(self) -> int:
        return int(self.partition.independent.size)

    @classmethod
    def of(cls, model: CompiledModel, partition: Partition) -> IndependentCoordinates:
        """Group ``partition.independent`` by joint.

        Raises:
            TrackingError: an independent joint of a type without a group error (planar).
        """
        ind = np.asarray(partition.independent, dtype=np.int64)
        pos = {int(j): n for n, j in enumerate(ind)}
        blocks = []
        for e in dict.fromkeys(int(model.v_edge[j]) for j in ind):
            kind, name = model.edge_types[e], model.edge_names[e]
            if kind not in TRACKED_JOINTS:
                raise TrackingError(
                    f"partition '{partition.name}': independent joint '{name}' is {kind}; the "
                    f"tracking law handles {', '.join(TRACKED_JOINTS)} joints")
            vs = model.v_slice(e)
            local = np.array([j - vs.start for j in range(vs.start, vs.stop) if j in pos],
                             dtype=np.int64)
            group = "se3" if kind == "free" else "so3" if kind == "spherical" else "vector"
            blocks.append(_Block(name, group, model.q_slice(e), vs, local,
                                 np.array([pos[vs.start + int(i)] for i in local], np.int64)))
        return cls(model, partition, tuple(blocks))


@dataclass(frozen=True, eq=False)
class TrackingState:
    """The tracking law's quantities at one instant, (n_u,) each, in u's order.

    Attributes:
        e: error; e_dot: its rate; u: measured independent speeds; u_d, udot_d: the
        reference speeds and accelerations transported to the measured frames (module
        docstring); u_r, udot_r: reference speed and its rate; s: sliding variable u − u_r.
        Units per coordinate: rad or m; rad/s or m/s; rad/s² or m/s².
    """

    e: np.ndarray
    e_dot: np.ndarray
    u: np.ndarray
    u_d: np.ndarray
    udot_d: np.ndarray
    u_r: np.ndarray
    udot_r: np.ndarray
    s: np.ndarray


def _se3(q: np.ndarray) -> pin.SE3:
    """A free joint's Q from its q ``[x y z qw qx qy qz]``."""
    return pin.SE3(sp.rotation_from_quat(q[3:7]), np.array(q[:3], dtype=float))


def se3_error(T: pin.SE3, T_d: pin.SE3, v_b: np.ndarray, vbar_d: np.ndarray,
              vbar_dot_d: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The floating-root error of the module docstring (angular-first, body frame).

    Args:
        T, T_d: measured and reference poses ``T_parent_child`` of the free joint.
        v_b: (6,) measured body twist ``[ω; v]`` [rad/s; m/s] (axes of T's child frame).
        vbar_d, vbar_dot_d: (6,) the reference body twist and its rate (axes of T_d's frame).

    Returns:
        ``(e_b, ė_b, u_d,b, u̇_d,b)``, (6,) each: ``log(T_d⁻¹ T)``, its rate, the reference
        twist transported to the measured frame and its rate.
    """
    delta = T_d.inverse() * T
    e = sp.log6(delta)
    X = sp.adjoint(delta.inverse())
    u_d = X @ vbar_d
    e_dot = sp.jlog6(delta) @ (v_b - u_d)
    udot_d = X @ vbar_dot_d + sp.ad(u_d) @ v_b
    return e, e_dot, u_d, udot_d


def so3_error(R: np.ndarray, R_d: np.ndarray, w: np.ndarray, wbar_d: np.ndarray,
              wbar_dot_d: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The spherical joint's error (module docstring): R, R_d (3, 3); w, wbar_d, wbar_dot_d
    (3,) angular velocities [rad/s] in the measured and the reference frames. Returns
    ``(e, ė, u_d, u̇_d)``, (3,) each."""
    delta = R_d.T @ R
    e = sp.log3(delta)
    u_d = delta.T @ wbar_d
    e_dot = np.asarray(pin.Jlog3(delta)) @ (w - u_d)
    return e, e_dot, u_d, delta.T @ wbar_dot_d + np.cross(u_d, w)


def tracking_state(coords: IndependentCoordinates, q: np.ndarray, v: np.ndarray,
                   q_d: np.ndarray, v_d: np.ndarray, a_d: np.ndarray,
                   gains: TrackingGains = TrackingGains()) -> TrackingState:
    """e, ė, u_r, u̇_r and s at the measured state (module docstring).

    Args:
        coords: the mode's independent coordinates.
        q: (nq,) measured configuration; v: (nv,) measured speeds (all of them: a free
            joint's ė needs its whole twist).
        q_d, v_d, a_d: (nq,), (nv,), (nv,) the reference configuration, speeds and
            accelerations of the same mode model (only the independent joints' entries
            are read).
        gains: Λ and k_s.
    """
    n = coords.n_u
    e, ed, ud, udd = (np.zeros(n) for _ in range(4))
    for b in coords.blocks:
        qa, qb = q[b.q], q_d[b.q]
        va, vb, ab = v[b.v], v_d[b.v], a_d[b.v]
        if b.group == "se3":
            x = se3_error(_se3(qa), _se3(qb), va, vb, ab)
        elif b.group == "so3":
            x = so3_error(sp.rotation_from_quat(qa), sp.rotation_from_quat(qb), va, vb, ab)
        else:
            x = (qa - qb, va - vb, vb, ab)
        for out, val in zip((e, ed, ud, udd), x, strict=True):
            out[b.pos] = np.asarray(val)[b.local]
    u = np.asarray(v, dtype=float)[coords.partition.independent]
    lam = gains.Lambda
    u_r = ud - lam * e
    return TrackingState(e, ed, u, ud, udd, u_r, udd - lam * ed, u - u_r)


def commanded_force(terms, state: TrackingState, gains: TrackingGains = TrackingGains()
                    ) -> np.ndarray:
    """``Q = Γ u̇_r + C u_r + g + D u − k_s Γ s`` (n_u,) [N or N·m per independent speed].

    Args:
        terms: the mode's member-wise terms at the measured (q, u)
            (:func:`rbc.compose.dynamics.composed_terms`; anything with ``Gamma``, ``C``,
            ``g``, ``D`` of matching shapes).
        state: :func:`tracking_state` at the same instant.
    """
    G = terms.Gamma
    return (G @ state.udot_r + terms.C @ state.u_r + terms.g + terms.D @ state.u
            - gains.k_s * (G @ state.s))


__all__: Sequence[str] = ("IndependentCoordinates", "TrackingError", "TrackingGains",
                          "TrackingState", "commanded_force", "se3_error", "so3_error",
                          "tracking_state")

"""The composer lift at run time: ``v = E₁ w``, ``w = G u``, ``E = E₁ G``, their rates, and
the rate operator ``Ė(v)`` on any vector (docs/composition.md, "Composer lift").

One Pinocchio pass over the mode model's augmented tree (:mod:`rbc.model.augmented`: the
flat tree plus one branch per chord — the members' loops, the links and the supports) gives
the closure Jacobian C at q. From it:

* level 1, per member k: ``E_k`` on its rows and columns (``E_k[dep] = −R_p,k⁻¹ R_a,k``, LU
  per member), stacked with the mode's own chord coordinates as ``E₁``;
* level 2: ``C̄ = C_L E₁`` on the selected link and support rows, ``G[dep] = −R̄_p⁻¹ R̄_a``.

**Rates.** Differentiating ``C E₁ = 0`` and ``C̄ G = 0`` along the motion v = E u gives the
curvature (the acceleration-level term)

    (Ė₁ w)_dep,k = −R_p,k⁻¹ (Ċ v)_rows k,      (Ġ u)_dep = −R̄_p⁻¹ S̄ (Ċ v + C Ė₁ w),
    Ė u = Ė₁ w + E₁ Ġ u,

with ``Ċ v`` the augmented tree's velocity product (frame accelerations at zero joint
acceleration). The nested rule is the chain rule of ``E = E₁ G``: ``J_i = J¹_i G`` and
``J̇_i = J̇¹_i G + J¹_i Ġ`` for any Jacobian ``J¹_i = J_i E₁`` of level-1 speeds.

**The rate operator** ``Ė(v) x`` for an arbitrary x (n_u,) (what ``C(q, u) u_r`` needs, with
an auxiliary speed u_r ≠ u) follows the same two solves with ``Ċ(v) z`` for the admissible
``z = E x`` in place of ``Ċ v``. For a chord e = (b, c) with world Jacobians J_t (its frame
through the tree) and J_c (through the cut joint), ``C_e = P₁(J_t − J_b) − P₂(J_c − J_b)``
(augmented.py); on the manifold ``P₁ = P₂ = Ad(T_b_w)`` (J_l⁻¹ = I), ``Ṗ₂ = Ṗ₁`` for an
admissible motion, and ``(J_t − J_c) z = 0`` for admissible z, so

    Ċ(v) z = P₁ (J̇_t − J̇_c) z,

with J̇ Pinocchio's ``computeJointJacobiansTimeVariation`` (the time derivative of the world
joint Jacobians along v). For z = v this is the velocity product. Checked against finite
differences of C along closed motions (tests/compose/test_lift.py).
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pinocchio as pin
from scipy.linalg import lu_factor, lu_solve

from rbc.compose.analysis import Level2
from rbc.compose.flat import MemberMap
from rbc.model.augmented import AugmentedGeometry, augmented_geometry
from rbc.model.compiled import CompiledModel
from rbc.model.dynamics import DynamicsData, DynamicsModel

_SWAP = np.array([3, 4, 5, 0, 1, 2])


@dataclass(frozen=True, eq=False)
class ComposerStructure:
    """The index data the run-time lift needs (immutable; built once per mode model).

    Attributes:
        model: the mode model; level2: the composer's structure.
        member_rows, member_dep, member_ind: per member its selected rows, dependent and
            independent v-indices in the mode model; member_cols: its slice of w.
    """

    model: CompiledModel
    level2: Level2
    member_rows: tuple[np.ndarray, ...]
    member_dep: tuple[np.ndarray, ...]
    member_ind: tuple[np.ndarray, ...]

    @classmethod
    def build(cls, model: CompiledModel, members: Sequence[MemberMap], level2: Level2
              ) -> ComposerStructure:
        return cls(model, level2, tuple(m.rows(model) for m in members),
                   tuple(m.dependent for m in members), tuple(m.independent for m in members))

    @property
    def n_u(self) -> int:
        return int(self.level2.independent.size)


@dataclass(frozen=True, eq=False)
class ComposerLift:
    """The composer lift at one configuration (module docstring).

    Attributes:
        structure: the index data; geometry: the augmented closure geometry at q.
        E1: (nv, n_w) level-1 lift; G: (n_w, n_u) composer lift; E: (nv, n_u) ``E₁ G``.
        lu_members: per member the LU factors of its R_p,k (None: no rows); lu2: R̄_p's.
    """

    structure: ComposerStructure
    geometry: AugmentedGeometry
    E1: np.ndarray
    G: np.ndarray
    E: np.ndarray
    lu_members: tuple
    lu2: tuple | None

    @property
    def q(self) -> np.ndarray:
        return self.geometry.q

    def _level1_rate(self, cdot: np.ndarray) -> np.ndarray:
        """``Ė₁ y`` (nv, k) from ``Ċ(v)(E₁ y)`` (m, k): −R_p,k⁻¹ on each member's rows."""
        s = self.structure
        out = np.zeros((s.model.nv, cdot.shape[1]))
        for rows, dep, lu in zip(s.member_rows, s.member_dep, self.lu_members, strict=True):
            if lu is not None:
                out[dep] = -lu_solve(lu, cdot[rows])
        return out

    def _compose_rate(self, cdot: np.ndarray) -> np.ndarray:
        """``Ė x`` (nv, k) from ``Ċ(v) (E x)`` (m, k) (module docstring)."""
        l2 = self.structure.level2
        e1 = self._level1_rate(cdot)
        gdot = np.zeros((l2.w.size, cdot.shape[1]))
        if self.lu2 is not None:
            C = self.geometry.C
            gdot[l2.dependent] = -lu_solve(self.lu2, cdot[l2.rows] + C[l2.rows] @ e1)
        return e1 + self.E1 @ gdot

    def curvature(self, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(v, Ė u)`` (nv,), (nv,) at speed u (n_u,)."""
        v = self.E @ u
        cv = self.geometry.velocity_product(self.structure.model, v)
        return v, self._compose_rate(cv[:, None])[:, 0]

    def g_rate(self, u: np.ndarray) -> np.ndarray:
        """``Ġ u`` (n_w,) (the composer lift's own rate)."""
        s, l2 = self.structure, self.structure.level2
        v = self.E @ u
        cv = self.geometry.velocity_product(s.model, v)[:, None]
        out = np.zeros(l2.w.size)
        if self.lu2 is not None:
            e1 = self._level1_rate(cv)
            out[l2.dependent] = -lu_solve(self.lu2, cv[l2.rows] + self.geometry.C[l2.rows] @ e1
                                          )[:, 0]
        return out

    def rate(self, dm: DynamicsModel, data: DynamicsData, v: np.ndarray, X: np.ndarray
             ) -> np.ndarray:
        """``Ė(v) X`` (nv, k) for X (n_u, k) (module docstring), v = E u the motion."""
        Z = self.E @ X
        return self._compose_rate(rate_product(dm, data, self.geometry, v, Z))


def rate_product(dm: DynamicsModel, data: DynamicsData, geo: AugmentedGeometry, v: np.ndarray,
                 Z: np.ndarray) -> np.ndarray:
    """``Ċ(v) Z`` (m, k) for admissible columns Z (nv, k) (``C Z = 0``; module docstring):
    per chord ``P₁ (J̇_t − J̇_c) Z`` from Pinocchio's Jacobian time variation; coupling rows
    are constant (0)."""
    aug = dm.augmented
    pm, pd = aug.model, data.augmented_data
    pin.computeJointJacobiansTimeVariation(pm, pd, geo.q[aug.q_perm], v[aug.v_perm])
    n = len(aug.tree_frame)
    out = np.zeros((geo.rho.size, Z.shape[1]))
    if n:
        # J̇_t − J̇_c = J̇ ∘ (mask_tb − mask_cb): only each chord's path columns (the masks'
        # non-zeros, gathered once per model) enter the product
        idx, sign = _path_columns(aug)
        Zp = np.asarray(Z, dtype=float)[aug.v_perm]
        diff = np.asarray(pd.dJ)[:, idx].transpose(1, 0, 2) * sign[:, None, :]  # (n, 6, w)
        out[: 6 * n] = (geo.left @ (diff @ Zp[idx])).reshape(6 * n, -1)
    return out


def _path_columns(aug) -> tuple[np.ndarray, np.ndarray]:
    """``(idx, sign)`` (n_chords, w): per chord the Pinocchio v-columns where
    ``mask_tb − mask_cb`` is non-zero and its value there (±1; padded with column 0 and
    sign 0 to the longest path's w), cached per augmented tree."""
    hit = _PATH_COLUMNS.get(aug)
    if hit is None:
        D = (aug.mask_tb - aug.mask_cb)[:, 0, :]
        w = max(int(np.count_nonzero(D, axis=1).max(initial=0)), 1)
        idx = np.argsort(D == 0.0, axis=1, kind="stable")[:, :w]
        sign = np.take_along_axis(D, idx, axis=1)
        idx = np.where(sign != 0.0, idx, 0)
        hit = _PATH_COLUMNS[aug] = (idx, sign)
    return hit


_PATH_COLUMNS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def composer_lift(structure: ComposerStructure, dm: DynamicsModel, data: DynamicsData,
                  q: np.ndarray) -> ComposerLift:
    """E₁, G and E at q (module docstring).

    Raises:
        numpy.linalg.LinAlgError: a dependent block is exactly singular.
    """
    s, l2 = structure, structure.level2
    geo = augmented_geometry(dm.augmented, data.augmented_data, q)
    C = geo.C
    E1 = np.zeros((s.model.nv, l2.w.size))
    E1[l2.w, np.arange(l2.w.size)] = 1.0
    lus = []
    for rows, dep, ind, cols in zip(s.member_rows, s.member_dep, s.member_ind,
                                    l2.member_cols, strict=True):
        if rows.size == 0:
            lus.append(None)
            continue
        lu = lu_factor(C[np.ix_(rows, dep)], check_finite=False)
        E1[dep, cols] = -lu_solve(lu, C[np.ix_(rows, ind)])
        lus.append(lu)
    G = np.zeros((l2.w.size, l2.independent.size))
    G[l2.independent, np.arange(l2.independent.size)] = 1.0
    lu2 = None
    if l2.rows.size:
        Cbar = C[l2.rows] @ E1
        lu2 = lu_factor(Cbar[:, l2.dependent], check_finite=False)
        G[l2.dependent] = -lu_solve(lu2, Cbar[:, l2.independent])
    return ComposerLift(s, geo, E1, G, E1 @ G, tuple(lus), lu2)

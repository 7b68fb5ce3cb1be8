"""Contact-wrench cones K_b of loaded supports as linear inequalities, and the unloading
ramps of stepping (issue #20 item 2, docs/allocation.md "Contact-wrench cones").

**The wrench.** ``w = [n; f]`` (6,) is what the ground exerts on the sole, world axes, about
the support frame's origin (:mod:`rbc.compose.wrenches`). In the support frame S (rotation
R = R_world_S, contact normal +z of S) it is ``w_S = [Rᵀ n; Rᵀ f]``. For a force f at the
point p of the sole plane (p_z = 0) ``n = p × f``, so the centre of pressure is
``p_x = −n_y / f_z``, ``p_y = n_x / f_z``.

**K_b of a loaded surface support** (a sole with half-extents X, Y; Coulomb μ), with the
margins of issue #20 — CoP within ``c = 0.75`` of each half-extent, the friction pyramid
inscribed in the cone of ``μ' = 0.75 μ``, at least ``f_min = 15 N`` of normal force — and
a load factor σ ∈ [0, 1] (1: fully loaded; the ramps below):

    σ f_min ≤ f_z ≤ σ F_max,
    |f_x| ≤ σ (μ'/√2) f_z,          |f_y| ≤ σ (μ'/√2) f_z,         (pyramid in the cone)
    |n_y| ≤ σ c X f_z,              |n_x| ≤ σ c Y f_z,             (centre of pressure)

ten rows ``lower ≤ A w ≤ upper`` (F_max = ∞ drops one). A point support (a foot) keeps the
normal and friction rows on its force (its moment is zero by construction). At σ = 0 the
support carries nothing: ``w = 0`` (six equalities). No bound on the yaw moment n_z is
imposed (the issue's cone has none; a torsional-friction bound would be one more pair of
rows). The pyramid and CoP rows are those of Caron, Pham, Nakamura, "Stability of surface
contacts for humanoid robots: closed-form formulae of the contact wrench cone for
rectangular support areas", ICRA 2015, without the yaw rows.

**Unloading ramps** (stepping): the load factor of a sole that lifts off at t_off falls
linearly from 1 to 0 over the ``fall = 0.35 s`` before t_off; after landing at t_land it
stays 0 for ``delay = 0.04 s`` and rises linearly to 1 over ``rise = 0.30 s``. With the
factor the normal-force cap σ F_max (F_max: the ramp's full-load cap, by default the whole
system's weight) falls to zero, and the friction, pressure and minimum-normal limits shrink
with it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from rbc.errors import RbcError
from rbc.ir.record import Support


class ConeError(RbcError):
    """A support whose cone cannot be formed (unknown kind, normal other than +z of a
    surface support's frame, a missing half-extent)."""


@dataclass(frozen=True)
class ContactLimits:
    """The margins of the contact-wrench cones.

    Attributes:
        cop_fraction: c, the CoP's allowed fraction of each half-extent.
        friction_fraction: μ'/μ, the pyramid is inscribed in the cone of μ' = fraction·μ.
        min_normal: f_min [N], the least normal force of a loaded support.
    """

    cop_fraction: float = 0.75
    friction_fraction: float = 0.75
    min_normal: float = 15.0


@dataclass(frozen=True, eq=False)
class WrenchCone:
    """K_b as ``lower ≤ A w ≤ upper`` on the support wrench w (6,) ``[n; f]`` [N·m; N],
    world axes, about the support origin (module docstring).

    Attributes:
        support: support name; R: (3, 3) ``R_world_S``; load: the factor σ.
        A: (m, 6); lower, upper: (m,) (±inf where open); rows: (m,) row names;
        equality: (m,) rows with lower == upper.
    """

    support: str
    R: np.ndarray
    load: float
    A: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    rows: tuple[str, ...]

    @property
    def equality(self) -> np.ndarray:
        return self.lower == self.upper

    def violation(self, w: np.ndarray) -> float:
        """Largest violation (≥ 0) of the rows by the wrench w (6,) [N or N·m]."""
        y = self.A @ np.asarray(w, dtype=float)
        return float(max(0.0, np.max(self.lower - y, initial=0.0), np.max(y - self.upper,
                                                                          initial=0.0)))

    def local(self, w: np.ndarray) -> np.ndarray:
        """w (…, 6) in the support frame's axes."""
        w = np.asarray(w, dtype=float)
        return np.concatenate([w[..., :3] @ self.R, w[..., 3:] @ self.R], axis=-1)


def wrench_cone(support: Support, R: np.ndarray, limits: ContactLimits = ContactLimits(),
                load: float = 1.0, max_normal: float = np.inf) -> WrenchCone:
    """K_b of a support at the world rotation R (3, 3) of its frame (module docstring).

    Args:
        support: the record's support (kind, half_extents, friction, normal).
        limits: the margins; load: σ ∈ [0, 1]; max_normal: F_max [N] (∞: no cap).

    Raises:
        ConeError: an unknown kind, a surface support whose normal is not +z of its frame.
        ValueError: σ outside [0, 1].
    """
    if not 0.0 <= load <= 1.0:
        raise ValueError(f"load factor {load} outside [0, 1]")
    R = np.asarray(R, dtype=float)
    if support.kind not in ("surface", "point"):
        raise ConeError(f"support '{support.name}': kind '{support.kind}' has no wrench "
                        "cone; valid: surface, point")
    n = np.asarray(support.normal, dtype=float)
    if support.kind == "surface" and np.abs(n - (0.0, 0.0, 1.0)).max() > 1e-12:
        raise ConeError(f"support '{support.name}': a surface support's contact normal must "
                        f"be +z of its frame for a CoP cone (got {tuple(n)})")
    Rc = R @ _align_z(n)
    if load == 0.0:
        return WrenchCone(support.name, Rc, 0.0, np.eye(6), np.zeros(6), np.zeros(6),
                          ("n_x", "n_y", "n_z", "f_x", "f_y", "f_z"))
    # local rows on w_S = [Rᵀ n; Rᵀ f]: index 0..2 moments, 3..5 forces
    k = load * limits.friction_fraction * support.friction / np.sqrt(2.0)
    rows = [("normal", _e(5), load * limits.min_normal, load * max_normal),
            ("friction +x", _e(3) - k * _e(5), -np.inf, 0.0),
            ("friction -x", -_e(3) - k * _e(5), -np.inf, 0.0),
            ("friction +y", _e(4) - k * _e(5), -np.inf, 0.0),
            ("friction -y", -_e(4) - k * _e(5), -np.inf, 0.0)]
    if support.kind == "surface":
        if len(support.half_extents) != 2:
            raise ConeError(f"support '{support.name}': a surface support needs two "
                            "half_extents for its CoP rows")
        cx, cy = (load * limits.cop_fraction * h for h in support.half_extents)
        rows += [("cop +x", -_e(1) - cx * _e(5), -np.inf, 0.0),   # p_x = −n_y/f_z ≤ c X
                 ("cop -x", _e(1) - cx * _e(5), -np.inf, 0.0),
                 ("cop +y", _e(0) - cy * _e(5), -np.inf, 0.0),    # p_y = n_x/f_z ≤ c Y
                 ("cop -y", -_e(0) - cy * _e(5), -np.inf, 0.0)]
    A_local = np.array([r[1] for r in rows])
    A = A_local @ np.kron(np.eye(2), Rc.T)
    return WrenchCone(support.name, Rc, float(load), A, np.array([r[2] for r in rows]),
                      np.array([r[3] for r in rows]), tuple(r[0] for r in rows))


def _e(i: int) -> np.ndarray:
    out = np.zeros(6)
    out[i] = 1.0
    return out


def _align_z(n: np.ndarray) -> np.ndarray:
    """(3, 3) the minimal rotation taking +z to the unit normal n (half turn about x for −z)."""
    n = n / np.linalg.norm(n)
    z = np.array([0.0, 0.0, 1.0])
    c = float(z @ n)
    if c > 1.0 - 1e-15:
        return np.eye(3)
    if c < -1.0 + 1e-15:
        return np.diag([1.0, -1.0, -1.0])
    a = np.cross(z, n)
    K = np.array([[0, -a[2], a[1]], [a[2], 0, -a[0]], [-a[1], a[0], 0]])
    return np.eye(3) + K + K @ K / (1.0 + c)


@dataclass(frozen=True)
class UnloadingRamp:
    """The load factor of a stepping sole (module docstring).

    Attributes:
        fall: [s] before lift-off over which σ falls 1 → 0; delay: [s] after landing with
        σ = 0; rise: [s] over which σ then rises 0 → 1.
    """

    fall: float = 0.35
    delay: float = 0.04
    rise: float = 0.30

    def factor(self, t: float, lift_offs: Sequence[float] = (),
               landings: Sequence[float] = ()) -> float:
        """σ(t) ∈ [0, 1] for a sole with the given lift-off and landing times [s] (the
        smallest factor any of them imposes; 1 far from all)."""
        s = 1.0
        for t_off in lift_offs:
            if t_off - self.fall <= t <= t_off:
                s = min(s, (t_off - t) / self.fall)
        for t_on in landings:
            if t_on <= t <= t_on + self.delay + self.rise:
                s = min(s, max(0.0, (t - t_on - self.delay) / self.rise))
        return float(s)


__all__: Sequence[str] = ("ConeError", "ContactLimits", "UnloadingRamp", "WrenchCone",
                          "wrench_cone")

"""SE(3) and Lie-group helpers, and THE ordering conventions of rbc (DESIGN.md §2).

Conventions — each stated here once and implemented only here:

* **Transforms.** ``T_a_b`` maps coordinates in frame b to coordinates in frame a
  (Pinocchio's ``aMb``): ``p_a = T_a_b · p_b``. Composition chains frames:
  ``T_a_c = T_a_b · T_b_c``.
* **Twists.** ``log(T_a_b)`` is a twist in frame a: ``T_a_b = exp(ξ)``. (ξ is the screw
  that carries a onto b; because ``Ad(exp ξ)·ξ = ξ`` its coordinates are also the same in
  b.) The adjoint ``Ad(T_a_b)`` maps a twist written in b to the same twist written in a.
* **Spatial vector order.** rbc is **angular-first**: motions ``[ω; v]`` [rad/s; m/s],
  forces ``[n; f]`` [N·m; N]. Pinocchio is **linear-first** ``[v; ω]``, ``[f; n]``. The
  permutation between the two lives only in :func:`to_pinocchio_motion`,
  :func:`from_pinocchio_motion` (and the force / 6×6-operator variants built on them);
  never permute inline elsewhere.
* **Quaternions.** rbc (records, bundles, public API) uses ``(w, x, y, z)`` (MuJoCo order);
  Pinocchio configuration vectors and ``pin.Quaternion.coeffs()`` use ``(x, y, z, w)``.
  The conversion lives only in :func:`quat_wxyz_to_xyzw` / :func:`quat_xyzw_to_wxyz`
  (and the index tuples :data:`QUAT_XYZW_FROM_WXYZ`, :data:`QUAT_WXYZ_FROM_XYZW` used by
  :mod:`rbc.ir.joints` to reorder configuration vectors).
* **RPY.** URDF convention ``R = Rz(yaw)·Ry(pitch)·Rx(roll)`` (scipy ``'xyz'`` extrinsic).

Jacobians of log (Solà, Deray, Atchuthan, "A micro Lie theory for state estimation in
robotics", 2018, §IV and App. D): for ``ρ = log(Δ)``

* right Jacobian inverse ``J_r(ρ)⁻¹``: ``log(Δ·exp(δ)) = ρ + J_r(ρ)⁻¹ δ + O(|δ|²)``, δ a
  twist in the frame on the right of Δ (local). Pinocchio's ``Jlog6(Δ)`` is exactly this
  matrix (re-ordered by :func:`jlog6`).
* left Jacobian inverse ``J_l(ρ)⁻¹``: ``log(exp(δ)·Δ) = ρ + J_l(ρ)⁻¹ δ + O(|δ|²)``, δ a
  twist in the frame on the left of Δ. Since ``exp(δ)·Δ = Δ·exp(Ad(Δ⁻¹) δ)``,
  ``J_l(ρ)⁻¹ = Jlog6(Δ)·Ad(Δ⁻¹)`` (DESIGN.md §5); confirmed by finite differences in
  ``tests/ir/test_spatial.py``.

The same rules hold in either spatial-vector order as long as every matrix is re-ordered
consistently (``P A P`` with the involutive permutation P).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pinocchio as pin

if TYPE_CHECKING:
    from rbc.ir.record import Pose

#: ``x_pin = x_rbc[PIN_MOTION_ORDER]`` and, since the swap of halves is an involution,
#: also ``x_rbc = x_pin[PIN_MOTION_ORDER]``.
PIN_MOTION_ORDER: tuple[int, ...] = (3, 4, 5, 0, 1, 2)
#: ``q_xyzw = q_wxyz[QUAT_XYZW_FROM_WXYZ]``.
QUAT_XYZW_FROM_WXYZ: tuple[int, ...] = (1, 2, 3, 0)
#: ``q_wxyz = q_xyzw[QUAT_WXYZ_FROM_XYZW]``.
QUAT_WXYZ_FROM_XYZW: tuple[int, ...] = (3, 0, 1, 2)


# ----------------------------------------------------------------------------------------
# Spatial-vector order (the only place the permutation lives)
# ----------------------------------------------------------------------------------------


_PERM = np.array(PIN_MOTION_ORDER)


def _swap_rows(x: np.ndarray) -> np.ndarray:
    """Swap the two 3-row halves of a (6,) vector or (6, n) matrix (an involution)."""
    x = np.asarray(x, dtype=float)
    if x.ndim not in (1, 2) or x.shape[0] != 6:
        raise ValueError(f"expected a (6,) vector or (6, n) matrix, got shape {x.shape}")
    return x[_PERM]  # fancy indexing copies


def to_pinocchio_motion(x: np.ndarray) -> np.ndarray:
    """Angular-first ``[ω; v]`` → Pinocchio's linear-first ``[v; ω]``.

    Args:
        x: (6,) twist or (6, n) matrix whose columns are twists (e.g. a Jacobian); any
            frame (the frame is unchanged).

    Returns:
        Same shape, rows permuted. A new array.

    Raises:
        ValueError: if the leading dimension is not 6 or ``x`` has more than 2 dims.
    """
    return _swap_rows(x)


def from_pinocchio_motion(x: np.ndarray) -> np.ndarray:
    """Pinocchio's linear-first ``[v; ω]`` → angular-first ``[ω; v]``.

    Args/returns/raises as :func:`to_pinocchio_motion` (the permutation is its own inverse).
    """
    return _swap_rows(x)


def to_pinocchio_force(f: np.ndarray) -> np.ndarray:
    """Angular-first wrench ``[n; f]`` (or (6, n) of them) → Pinocchio's ``[f; n]``."""
    return _swap_rows(f)


def from_pinocchio_force(f: np.ndarray) -> np.ndarray:
    """Pinocchio wrench ``[f; n]`` (or (6, n) of them) → angular-first ``[n; f]``."""
    return _swap_rows(f)


def _swap_operator(a: np.ndarray) -> np.ndarray:
    a = np.asarray(a, dtype=float)
    if a.shape != (6, 6):
        raise ValueError(f"expected a (6, 6) operator, got shape {a.shape}")
    return a[_PERM][:, _PERM]


def to_pinocchio_operator(a: np.ndarray) -> np.ndarray:
    """Re-order a (6, 6) operator on motions (or forces) to Pinocchio order: ``P A P``.

    If ``y = A x`` in rbc order then ``P y = (P A P)(P x)`` in Pinocchio order (P = P⁻¹).

    Raises:
        ValueError: if ``a`` is not (6, 6).
    """
    return _swap_operator(a)


def from_pinocchio_operator(a: np.ndarray) -> np.ndarray:
    """Re-order a (6, 6) Pinocchio operator (e.g. ``M.action``, ``Jlog6``) to rbc order.

    Raises:
        ValueError: if ``a`` is not (6, 6).
    """
    return _swap_operator(a)


# ----------------------------------------------------------------------------------------
# Quaternions and rotations (the only place the quaternion order conversion lives)
# ----------------------------------------------------------------------------------------


def _quat4(q: np.ndarray) -> np.ndarray:
    q = np.asarray(q, dtype=float)
    if q.shape != (4,):
        raise ValueError(f"expected a quaternion of shape (4,), got shape {q.shape}")
    return q


def quat_wxyz_to_xyzw(q: np.ndarray) -> np.ndarray:
    """rbc ``(w, x, y, z)`` → Pinocchio ``(x, y, z, w)``; (4,) → (4,), not normalised."""
    return _quat4(q)[list(QUAT_XYZW_FROM_WXYZ)].copy()


def quat_xyzw_to_wxyz(q: np.ndarray) -> np.ndarray:
    """Pinocchio ``(x, y, z, w)`` → rbc ``(w, x, y, z)``; (4,) → (4,), not normalised."""
    return _quat4(q)[list(QUAT_WXYZ_FROM_XYZW)].copy()


def normalize_quat(q_wxyz: np.ndarray) -> np.ndarray:
    """Unit quaternion along ``q_wxyz`` (either order works; the order is kept).

    Raises:
        ValueError: if the norm is below 1e-12 (no direction to normalise to).
    """
    q = _quat4(q_wxyz)
    n = float(np.linalg.norm(q))
    if n < 1e-12:  # a zero quaternion has no rotation; 1e-12 ≫ float64 rounding of zeros
        raise ValueError(f"quaternion {q.tolist()} has (near-)zero norm")
    return q / n


def rotation_from_quat(q_wxyz: np.ndarray) -> np.ndarray:
    """Rotation matrix (3, 3) of a quaternion ``(w, x, y, z)`` (normalised first).

    q and −q give the same matrix (double cover). Raises ValueError on a zero quaternion.
    """
    w, x, y, z = normalize_quat(q_wxyz)
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
            [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
            [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
        ]
    )


def quat_from_rotation(rot: np.ndarray) -> np.ndarray:
    """Unit quaternion ``(w, x, y, z)`` of a rotation matrix, canonical ``w ≥ 0``.

    Args:
        rot: (3, 3) rotation matrix (orthonormal, det +1).

    Returns:
        (4,) quaternion; when ``w == 0`` exactly (180° turns) the sign is left as Eigen
        returns it.
    """
    rot = np.asarray(rot, dtype=float)
    if rot.shape != (3, 3):
        raise ValueError(f"expected a (3, 3) rotation, got shape {rot.shape}")
    q = quat_xyzw_to_wxyz(pin.Quaternion(rot).coeffs())
    q = q / np.linalg.norm(q)
    lead = q[np.flatnonzero(q)[0]]  # first non-zero coefficient decides ties at w == 0
    return -q if (q[0] < 0.0 or (q[0] == 0.0 and lead < 0.0)) else q


def rotation_from_rpy(rpy: np.ndarray) -> np.ndarray:
    """URDF roll–pitch–yaw [rad] → (3, 3) ``R = Rz(yaw)·Ry(pitch)·Rx(roll)``.

    Same as scipy ``Rotation.from_euler('xyz', rpy)`` (extrinsic x, then y, then z).
    """
    r = np.asarray(rpy, dtype=float)
    if r.shape != (3,):
        raise ValueError(f"expected rpy of shape (3,), got shape {r.shape}")
    return np.asarray(pin.rpy.rpyToMatrix(float(r[0]), float(r[1]), float(r[2])))


def rpy_from_rotation(rot: np.ndarray) -> np.ndarray:
    """Inverse of :func:`rotation_from_rpy`: (3, 3) → (3,) [rad].

    Pitch in [−π/2, π/2], roll and yaw in [−π, π]; at pitch = ±π/2 (gimbal lock) one of
    the equivalent triples is returned.
    """
    return np.asarray(pin.rpy.matrixToRpy(np.asarray(rot, dtype=float)), dtype=float)


# ----------------------------------------------------------------------------------------
# Poses and SE(3)
# ----------------------------------------------------------------------------------------


def as_se3(T: pin.SE3 | np.ndarray) -> pin.SE3:
    """Accept a ``pin.SE3`` or a (4, 4) homogeneous matrix; return a ``pin.SE3``."""
    if isinstance(T, pin.SE3):
        return T
    h = np.asarray(T, dtype=float)
    if h.shape != (4, 4):
        raise ValueError(f"expected pin.SE3 or a (4, 4) matrix, got shape {h.shape}")
    return pin.SE3(h[:3, :3].copy(), h[:3, 3].copy())


def se3_from_pose(pose: Pose) -> pin.SE3:
    """``T_a_f`` as a ``pin.SE3`` from a record :class:`~rbc.ir.record.Pose` (xyz [m], wxyz)."""
    return pin.SE3(rotation_from_quat(np.asarray(pose.quat)), np.asarray(pose.xyz, dtype=float))


def pose_from_se3(T: pin.SE3 | np.ndarray) -> Pose:
    """Record :class:`~rbc.ir.record.Pose` of a transform (quaternion canonical ``w ≥ 0``)."""
    from rbc.ir.record import Pose

    M = as_se3(T)
    xyz = tuple(float(v) for v in M.translation)
    quat = tuple(float(v) for v in quat_from_rotation(M.rotation))
    return Pose(xyz=xyz, quat=quat)  # type: ignore[arg-type]


def homogeneous(pose: Pose) -> np.ndarray:
    """(4, 4) homogeneous matrix of a record pose ``T_a_f`` (maps f-coordinates to a)."""
    h = np.eye(4)
    h[:3, :3] = rotation_from_quat(np.asarray(pose.quat))
    h[:3, 3] = pose.xyz
    return h


def log6(T: pin.SE3 | np.ndarray) -> np.ndarray:
    """SE(3) logarithm as an angular-first twist.

    Args:
        T: ``T_a_b`` (``pin.SE3`` or (4, 4)).

    Returns:
        (6,) ``[ω; v]`` [rad; m] in frame a with ``exp6(ξ) = T_a_b``; rotation angle
        ``|ω| ∈ [0, π]`` (the principal branch; discontinuous at π).
    """
    return from_pinocchio_motion(pin.log6(as_se3(T)).vector)


def exp6(xi: np.ndarray) -> pin.SE3:
    """SE(3) exponential of an angular-first twist ``[ω; v]`` (6,) [rad; m] → ``pin.SE3``."""
    return pin.exp6(pin.Motion(to_pinocchio_motion(xi)))


def adjoint(T: pin.SE3 | np.ndarray) -> np.ndarray:
    """Adjoint (6, 6), angular-first: ``Ad(T_a_b)`` maps a twist in b to the twist in a.

    ``Ad = [[R, 0], [p̂R, R]]`` in ``[ω; v]`` order (Featherstone 2008, §2.8, with the
    angular-first layout). For wrenches use ``Ad(T_a_b)⁻ᵀ = Ad(T_b_a)ᵀ``.
    """
    M = as_se3(T)
    R = M.rotation
    out = np.zeros((6, 6))
    out[:3, :3] = R
    out[3:, 3:] = R
    out[3:, :3] = skew(M.translation) @ R
    return out


def jlog6(T: pin.SE3 | np.ndarray) -> np.ndarray:
    """Pinocchio's ``Jlog6`` re-ordered angular-first: the right Jacobian inverse ``J_r⁻¹``.

    ``log(T·exp(δ)) = log(T) + jlog6(T) δ + O(|δ|²)``, δ (6,) a twist in the local
    (right-hand) frame of T. Shape (6, 6). Singular at rotation angle π.
    """
    return from_pinocchio_operator(pin.Jlog6(as_se3(T)))


def left_jacobian_inverse(delta: pin.SE3 | np.ndarray) -> np.ndarray:
    """``J_l(ρ)⁻¹`` (6, 6) angular-first at ``ρ = log(Δ)``: ``Jlog6(Δ)·Ad(Δ⁻¹)``.

    ``log(exp(δ)·Δ) = ρ + J_l(ρ)⁻¹ δ + O(|δ|²)``, δ a twist in the left-hand frame of Δ
    (frame a for ``Δ = T_a_b``). This is the factor in the closure Jacobian
    ``C = J_l(ρ)⁻¹ Σ Ad(Z_i) Ξ_i`` (DESIGN.md §5; Solà et al. 2018, Eq. 41–44 and App. D).
    """
    M = as_se3(delta)
    return from_pinocchio_operator(pin.Jlog6(M) @ M.inverse().action)


def jl_inv(rho: np.ndarray) -> np.ndarray:
    """``J_l(ρ)⁻¹`` from the twist ρ (6,) itself (valid for rotation angle |ω| < π)."""
    return left_jacobian_inverse(exp6(rho))


def up_direction(gravity: np.ndarray) -> np.ndarray:
    """(3,) unit vector opposite ``gravity`` (3,) [m/s², world axes]: the direction a floor's
    normal points; +z when gravity is zero (no up is defined; the exporter's floor then
    lies in the world's xy plane)."""
    g = np.asarray(gravity, dtype=float)
    n = float(np.linalg.norm(g))
    return -g / n if n > 0 else np.array([0.0, 0.0, 1.0])


def rotation_between(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """(3, 3) the smallest rotation R with ``R a ∥ b`` for directions a, b (3,) (Eigen's
    ``setFromTwoVectors`` through ``pin.Quaternion.FromTwoVectors``; for opposite vectors a
    half turn about an axis perpendicular to a)."""
    q = pin.Quaternion.FromTwoVectors(np.asarray(a, dtype=float), np.asarray(b, dtype=float))
    return np.asarray(q.matrix())


def skew(w: np.ndarray) -> np.ndarray:
    """(3, 3) cross-product matrix ``ŵ`` with ``ŵ x = w × x``."""
    return np.asarray(pin.skew(np.asarray(w, dtype=float)))


def log3(rot: np.ndarray) -> np.ndarray:
    """SO(3) logarithm: rotation vector (3,) [rad], ``|φ| ∈ [0, π]``."""
    return np.asarray(pin.log3(np.asarray(rot, dtype=float)), dtype=float)


def exp3(phi: np.ndarray) -> np.ndarray:
    """SO(3) exponential: rotation vector (3,) [rad] → (3, 3) rotation."""
    return np.asarray(pin.exp3(np.asarray(phi, dtype=float)))


def left_jacobian_inverse3(rot: np.ndarray) -> np.ndarray:
    """SO(3) ``J_l(φ)⁻¹`` (3, 3) at ``φ = log(R)``: ``log(exp(δ)·R) = φ + J_l⁻¹ δ + O(|δ|²)``,
    δ (3,) a rotation in the left-hand (world) frame of R.

    Pinocchio's ``Jlog3`` is the right Jacobian inverse ``J_r(φ)⁻¹``; ``J_l(φ) = J_r(φ)ᵀ``
    (Solà, Deray, Atchuthan 2018, Eq. 145–146), so ``J_l⁻¹ = Jlog3(R)ᵀ``. Singular at angle π.
    """
    return np.asarray(pin.Jlog3(np.asarray(rot, dtype=float))).T.copy()


def ad(xi: np.ndarray) -> np.ndarray:
    """Spatial cross-product matrix (6, 6) of a twist ``ξ = [ω; v]`` (angular-first).

    ``ad(ξ) = [[ω̂, 0], [v̂, ω̂]]`` so that ``ad(ξ) η = ξ ×ₘ η`` (Featherstone 2008, Eq. 2.31,
    angular-first); ``d/dt Ad(T) = ad(Ṫ T⁻¹) Ad(T)``.
    """
    xi = np.asarray(xi, dtype=float)
    w, v = skew(xi[:3]), skew(xi[3:])
    out = np.zeros((6, 6))
    out[:3, :3] = w
    out[3:, :3] = v
    out[3:, 3:] = w
    return out

"""The joint library: one :class:`JointKind` per record joint type, on Pinocchio's models.

A joint j = (b, c) places its child: ``X_j = A_j · Q_j(q) · B_j⁻¹ = T_b_c`` with
``A_j = T_b_Jb`` (record ``parent_frame``), ``B_j = T_c_Jc`` (record ``child_frame``) and the
motion map ``Q_j(q) = T_Jb_Jc`` (DESIGN.md §2; Featherstone, "Rigid Body Dynamics
Algorithms", 2008, ch. 4). Each kind provides ``Q``, the motion subspace ``S(q)`` (6, nv)
angular-first **in the child joint frame Jc** (Pinocchio's ``S``: the twist of Jc relative
to Jb, written in Jc, is ``S(q) v``), ``N(q)`` with ``q̇ = N(q) v``, and ``q ⊕ v`` /
``q1 ⊖ q0`` via ``pinocchio.integrate`` / ``pinocchio.difference`` on a cached one-joint
``pinocchio.Model`` (so ``q ⊕ v = q·exp(v)`` in the joint's own group, with v local).

Coordinate layouts in rbc (the parser and the bundle use the same):

===========  ==  ==  ====================================  ===============================
type         nq  nv  q (rbc layout)                        v (rbc layout)
===========  ==  ==  ====================================  ===============================
fixed        0   0   —                                     —
revolute     1   1   [θ] rad about axis                    [θ̇]
prismatic    1   1   [d] m along axis                      [ḋ]
helical      1   1   [θ]; translation lead/(2π)·θ          [θ̇]
universal    2   2   [θ1, θ2]; Q = Rot(a1,θ1)·Rot(a2,θ2)    [θ̇1, θ̇2]
cylindrical  2   2   [d, θ] along / about one axis         [ḋ, θ̇]
planar       4   3   [x, y, cosθ, sinθ]                    [vx, vy, ω], (vx, vy) in Jc
spherical    4   3   quaternion [w, x, y, z] of Q          ω in Jc [rad/s]
free         7   6   [x, y, z (m, Jc origin in Jb), w, x,  [ω; v] in Jc, angular-first
                     y, z]                                 [rad/s; m/s]
===========  ==  ==  ====================================  ===============================

Pinocchio models (q, v order identical to rbc unless stated): fixed — none (merge the
bodies or add a frame); revolute ``RevoluteUnaligned(axis)``; prismatic
``PrismaticUnaligned(axis)``; helical ``HelicalUnaligned(axis, pitch)`` with
``pitch = lead/(2π)`` [m/rad]; universal ``Universal(a1, a2)`` (same convention);
cylindrical ``Composite(PrismaticUnaligned(axis), RevoluteUnaligned(axis))``; planar
``Planar``; spherical ``Spherical`` with q stored ``[x, y, z, w]``; free ``FreeFlyer`` with
q ``[p, x, y, z, w]`` and v ``[v; ω]`` (linear-first). Re-ordering goes through
:meth:`JointKind.to_pinocchio_q` / :meth:`JointKind.to_pinocchio_v` (built on the index
tuples of :mod:`rbc.ir.spatial`).

Planar: Pinocchio's ``JointModelPlanar`` moves in the xy plane of the joint frame and turns
about its z axis; its v is ``[vx, vy, ω]`` with ``(vx, vy)`` in the moving frame Jc and
``q ⊕ v`` is the SE(2) exponential. A record ``axis`` (the plane normal) other than +z is
handled by an *alignment* rotation ``R0`` (the minimal rotation taking +z to the normal;
a half-turn about x for −z): ``Q(q) = R0·Q_pin(q)·R0ᵀ``, so x and y are measured along
``R0·e_x`` and ``R0·e_y``. A Pinocchio tree then uses joint placement ``A·R0`` and child
placement ``B·R0`` (:func:`pinocchio_placements`). Every other kind has ``R0 = I``.

Limits and record ``initial`` values use the *limited coordinates* of a kind (one scalar
per entry of ``lower``/``upper``): the q entries for revolute, prismatic, helical,
universal, cylindrical; ``[x, y, θ]`` for planar; ``[x, y, z]`` for free; none for
spherical. A record ``initial`` is the limited coordinates followed by the ``[w, x, y, z]``
quaternion for spherical/free (planar also accepts the full ``[x, y, cosθ, sinθ]``).

Charts (cut joints): :meth:`JointKind.chart` ``(q_ref, q) = q ⊖ q_ref`` and
:meth:`JointKind.from_chart` ``(q_ref, φ) = q_ref ⊕ φ`` give local coordinates around a
reference. For a spherical joint ``chart = log(R(q_ref)ᵀ R(q))`` (:func:`spherical_chart`),
a rotation vector in Jc of the reference; it is a diffeomorphism only for ``|φ| < π``
(at ``|φ| = π`` the log jumps between antipodal vectors, and ``q`` and ``−q`` map to the
same φ).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pinocchio as pin

from rbc.errors import RbcError
from rbc.ir import spatial as sp
from rbc.ir.record import JOINT_TYPES, Joint

#: Range [m] used by :meth:`JointKind.random` for an unbounded translation coordinate.
UNBOUNDED_LENGTH_RANGE = 1.0


class JointSpecError(RbcError, ValueError):
    """A joint's parameters or coordinate values are invalid (bad axis, wrong length, …)."""


# ----------------------------------------------------------------------------------------
# Small shared helpers
# ----------------------------------------------------------------------------------------


def _unit(v: Sequence[float] | None, what: str) -> tuple[float, float, float]:
    if v is None:
        raise JointSpecError(f"{what}: an axis is required")
    a = np.asarray(v, dtype=float)
    n = float(np.linalg.norm(a)) if a.shape == (3,) else 0.0
    if n < 1e-12:  # a zero (or malformed) vector has no direction
        raise JointSpecError(f"{what}: expected a non-zero 3-vector, got {list(np.ravel(a))}")
    return tuple(float(x) for x in a / n)  # type: ignore[return-value]


def _inverse_perm(idx: Sequence[int]) -> tuple[int, ...]:
    inv = [0] * len(idx)
    for i, k in enumerate(idx):
        inv[k] = i
    return tuple(inv)


def _sampling_interval(lo: float, hi: float, half: float) -> tuple[float, float]:
    """Finite interval to sample a limited coordinate: the limits, or a window of width
    ``2·half`` next to the finite limit, or ``[−half, half]`` when unbounded."""
    if math.isfinite(lo) and math.isfinite(hi):
        return lo, hi
    if math.isfinite(lo):
        return lo, lo + 2.0 * half
    if math.isfinite(hi):
        return hi - 2.0 * half, hi
    return -half, half


def _quat_rate(q_wxyz: np.ndarray) -> np.ndarray:
    """(4, 3) map from body angular velocity ω (local) to ``q̇ = ½ q ⊗ (0, ω)`` (wxyz)."""
    w, x, y, z = q_wxyz
    return 0.5 * np.array([[-x, -y, -z], [w, -z, y], [z, w, -x], [-y, x, w]])


def _min_rotation_from_z(n: tuple[float, float, float]) -> np.ndarray:
    """The minimal rotation taking +z to the unit vector n (half-turn about x if n = −z)."""
    z = np.array([0.0, 0.0, 1.0])
    c = float(np.dot(z, n))
    if c > 1.0 - 1e-12:  # already +z (to rounding)
        return np.eye(3)
    if c < -1.0 + 1e-12:  # antiparallel: the cross product vanishes, pick the x axis
        return sp.exp3(np.array([math.pi, 0.0, 0.0]))
    k = np.cross(z, n)
    return sp.exp3(k / np.linalg.norm(k) * math.acos(c))


# ----------------------------------------------------------------------------------------
# The base kind (generic over a one-joint pinocchio model)
# ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class JointKind:
    """A joint type with its parameters; methods are pure functions of (q, v).

    Class attributes (per kind):
        type: record type name; nq, nv: sizes of q and v.
        limited: kinds (``"angle"`` | ``"length"``) of the limited coordinates.
        has_quat: whether the record layout ends with a ``[w, x, y, z]`` quaternion.
    """

    type: ClassVar[str]
    nq: ClassVar[int]
    nv: ClassVar[int]
    limited: ClassVar[tuple[str, ...]] = ()
    has_quat: ClassVar[bool] = False
    #: ``q_pin = q[_q_pin]`` (a permutation: only quaternion orders differ).
    _q_pin: ClassVar[tuple[int, ...] | None] = None
    #: ``v_pin = v[_v_pin]`` (a permutation: only the free joint differs).
    _v_pin: ClassVar[tuple[int, ...] | None] = None
    #: Whether S (in Jc) is independent of q; then it is computed once and cached, and
    #: ``Ṡ v = 0``. Checked against finite differences for every kind in the tests.
    constant_S: ClassVar[bool] = True

    # --------------------------------------------------------------- construction
    @classmethod
    def from_joint(cls, joint: Joint) -> JointKind:
        """Build the kind from a record joint (override when parameters are needed)."""
        return cls()

    def pinocchio_model(self) -> pin.JointModel | None:
        """The Pinocchio joint model (``None`` for fixed joints), aligned as :meth:`alignment`."""
        raise NotImplementedError

    def alignment(self) -> pin.SE3:
        """Rotation ``R0`` with ``Q(q) = R0·Q_pin(q)·R0ᵀ`` (identity except planar)."""
        return pin.SE3.Identity()

    # --------------------------------------------------------------- layout conversions
    def to_pinocchio_q(self, q: np.ndarray) -> np.ndarray:
        """rbc q (nq,) → Pinocchio q (nq,) (reorders quaternions to xyzw)."""
        q = self._check(q, self.nq, "q")
        return q[list(self._q_pin)] if self._q_pin else q.copy()

    def from_pinocchio_q(self, q_pin: np.ndarray) -> np.ndarray:
        """Pinocchio q (nq,) → rbc q (nq,)."""
        q_pin = self._check(q_pin, self.nq, "q")
        return q_pin[list(_inverse_perm(self._q_pin))] if self._q_pin else q_pin.copy()

    def to_pinocchio_v(self, v: np.ndarray) -> np.ndarray:
        """rbc v (nv,) → Pinocchio v (nv,) (free: angular-first → linear-first)."""
        v = self._check(v, self.nv, "v")
        return v[list(self._v_pin)] if self._v_pin else v.copy()

    def from_pinocchio_v(self, v_pin: np.ndarray) -> np.ndarray:
        """Pinocchio v (nv,) → rbc v (nv,)."""
        v_pin = self._check(v_pin, self.nv, "v")
        return v_pin[list(_inverse_perm(self._v_pin))] if self._v_pin else v_pin.copy()

    def _check(self, x: np.ndarray, n: int, what: str) -> np.ndarray:
        x = np.asarray(x, dtype=float)
        if x.shape != (n,):
            raise JointSpecError(f"{self.type} joint: {what} must have shape ({n},), got {x.shape}")
        return x

    # --------------------------------------------------------------- kinematics
    def neutral(self) -> np.ndarray:
        """The neutral configuration (nq,): ``Q(neutral) = I``."""
        return self.from_pinocchio_q(pin.neutral(_one_joint_model(self)))

    def motion(self, q: np.ndarray) -> pin.SE3:
        """Motion map ``Q(q) = T_Jb_Jc`` (placement of the child joint frame in Jb)."""
        model = _one_joint_model(self)
        data = model.createData()
        pin.forwardKinematics(model, data, self.to_pinocchio_q(q))
        return data.oMi[1] * self.alignment().inverse()

    def motion_subspace(self, q: np.ndarray) -> np.ndarray:
        """``S(q)`` (6, nv), angular-first, in the child joint frame Jc.

        The twist of Jc relative to Jb, written in Jc, is ``S(q) v`` [rad/s; m/s]. Computed
        as Pinocchio's LOCAL joint Jacobian of the one-joint model, re-ordered; for kinds with
        :attr:`constant_S` once, then returned from a read-only cache.
        """
        if self.constant_S:
            return self._constant_S
        return self._pinocchio_S(q)

    @functools.cached_property
    def _constant_S(self) -> np.ndarray:
        S = self._pinocchio_S(self.neutral())
        S.setflags(write=False)
        return S

    def _pinocchio_S(self, q: np.ndarray) -> np.ndarray:
        model = _one_joint_model(self)
        data = model.createData()
        pin.computeJointJacobians(model, data, self.to_pinocchio_q(q))
        J = pin.getJointJacobian(model, data, 1, pin.ReferenceFrame.LOCAL)
        J = np.asarray(J).reshape(6, self.nv)  # (6, nv) pin order (nv = 1 comes back as (6,))
        if self._v_pin:
            J = J[:, list(_inverse_perm(self._v_pin))]  # columns to rbc v order
        return sp.adjoint(self.alignment()) @ sp.from_pinocchio_motion(J)

    def motion_subspace_rate(self, q: np.ndarray, v: np.ndarray) -> np.ndarray:
        """``Ṡ(q)·v`` (6,), angular-first, in Jc: the joint's velocity-product acceleration.

        It is Pinocchio's joint bias ``c`` (Featherstone 2008, §4.4, ``c_J = Ṡ q̇``), read as
        the spatial acceleration of the one-joint model at zero ``a``: with a static parent,
        ``a_1 = S·a + c + v_1 × v_J = c``. Zero for every kind with constant S; nonzero for
        the universal joint, whose first axis turns in Jc with θ2.
        """
        if self.nv == 0 or self.constant_S:
            return np.zeros(6)
        model = _one_joint_model(self)
        data = model.createData()
        zero = np.zeros(self.nv)
        pin.forwardKinematics(model, data, self.to_pinocchio_q(q), self.to_pinocchio_v(v), zero)
        c = sp.from_pinocchio_motion(np.asarray(data.a[1].vector))
        return sp.adjoint(self.alignment()) @ c

    def N(self, q: np.ndarray) -> np.ndarray:
        """``N(q)`` (nq, nv) with ``q̇ = N(q) v`` (identity for vector-space kinds)."""
        self._check(q, self.nq, "q")
        return np.eye(self.nq, self.nv)

    def value_rates(self, q: np.ndarray, v: np.ndarray) -> np.ndarray:
        """Time derivatives (len(limited),) of :meth:`limited_coordinates` at (q, v): v itself
        for the kinds whose speeds are the rates of their values (revolute, prismatic,
        helical, universal, cylindrical); planar overrides (body-frame speeds)."""
        return np.asarray(v, dtype=float)

    def integrate(self, q: np.ndarray, v: np.ndarray) -> np.ndarray:
        """``q ⊕ v`` (nq,): ``Q(q ⊕ v) = Q(q)·exp(S v)`` for constant-S kinds (pin.integrate)."""
        qp = pin.integrate(_one_joint_model(self), self.to_pinocchio_q(q), self.to_pinocchio_v(v))
        return self.from_pinocchio_q(qp)

    def difference(self, q0: np.ndarray, q1: np.ndarray) -> np.ndarray:
        """``q1 ⊖ q0`` (nv,) with ``integrate(q0, difference(q0, q1)) = q1`` (pin.difference)."""
        v = pin.difference(_one_joint_model(self), self.to_pinocchio_q(q0), self.to_pinocchio_q(q1))
        return self.from_pinocchio_v(v)

    def chart(self, q_ref: np.ndarray, q: np.ndarray) -> np.ndarray:
        """Local chart coordinates (nv,) of q around ``q_ref``: ``q ⊖ q_ref``."""
        return self.difference(q_ref, q)

    def from_chart(self, q_ref: np.ndarray, phi: np.ndarray) -> np.ndarray:
        """Inverse of :meth:`chart`: ``q_ref ⊕ φ`` (nq,)."""
        return self.integrate(q_ref, phi)

    # --------------------------------------------------------------- record values
    def compose(self, limited: np.ndarray, quat_wxyz: np.ndarray | None = None) -> np.ndarray:
        """q (nq,) from the limited coordinates (and the wxyz quaternion if :attr:`has_quat`)."""
        return np.asarray(limited, dtype=float).copy()

    def limited_coordinates(self, q: np.ndarray) -> np.ndarray:
        """The limited coordinates (len(limited),) of q (what ``lower``/``upper`` bound)."""
        return self._check(q, self.nq, "q").copy()

    def from_record_initial(self, values: float | Sequence[float] | None) -> np.ndarray:
        """q (nq,) from a record ``initial`` (None → :meth:`neutral`).

        Raises:
            JointSpecError: wrong number of values or a zero quaternion.
        """
        if values is None:
            return self.neutral()
        vals = np.atleast_1d(np.asarray(values, dtype=float))
        nl = len(self.limited)
        expected = nl + 4 * self.has_quat
        if vals.shape != (expected,):
            raise JointSpecError(
                f"{self.type} joint: initial must have {expected} values, got {vals.size}"
            )
        quat = self._unit_quat(vals[nl:]) if self.has_quat else None
        return self.compose(vals[:nl], quat)

    def _unit_quat(self, q: np.ndarray) -> np.ndarray:
        try:
            return sp.normalize_quat(q)
        except ValueError as exc:
            raise JointSpecError(f"{self.type} joint: {exc}") from exc

    def random(
        self,
        rng: np.random.Generator,
        lower: Sequence[float] | None = None,
        upper: Sequence[float] | None = None,
    ) -> np.ndarray:
        """A random q (nq,) (seeded through ``rng``).

        Limited coordinates are uniform in ``[lower, upper]`` where finite; an unbounded
        angle is uniform in [−π, π], an unbounded length in ±:data:`UNBOUNDED_LENGTH_RANGE`
        m. Quaternions are uniform on SO(3) (normalised Gaussian 4-vectors).
        """
        nl = len(self.limited)
        lo = np.full(nl, -np.inf) if lower is None or len(lower) == 0 else np.asarray(lower)
        hi = np.full(nl, np.inf) if upper is None or len(upper) == 0 else np.asarray(upper)
        if lo.shape != (nl,) or hi.shape != (nl,):
            raise JointSpecError(f"{self.type} joint: limits must have {nl} entries")
        half = [math.pi if k == "angle" else UNBOUNDED_LENGTH_RANGE for k in self.limited]
        box = [_sampling_interval(a, b, h) for a, b, h in zip(lo, hi, half, strict=True)]
        lo, hi = np.array([b[0] for b in box]), np.array([b[1] for b in box])
        vals = rng.uniform(lo, hi) if nl else np.zeros(0)
        quat = sp.normalize_quat(rng.normal(size=4)) if self.has_quat else None
        return self.compose(vals, quat)


@functools.lru_cache(maxsize=256)
def _one_joint_model(kind: JointKind) -> pin.Model:
    """A pinocchio Model with the single joint of ``kind`` placed at ``R0`` (built once)."""
    model = pin.Model()
    jm = kind.pinocchio_model()
    if jm is not None:
        model.addJoint(0, jm, kind.alignment(), kind.type)
    return model


# ----------------------------------------------------------------------------------------
# The kinds
# ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Fixed(JointKind):
    """Rigid weld: ``Q = I``, nq = nv = 0. Pinocchio has no joint model (merge or frame)."""

    type: ClassVar[str] = "fixed"
    nq: ClassVar[int] = 0
    nv: ClassVar[int] = 0

    def pinocchio_model(self) -> None:
        return None

    def neutral(self) -> np.ndarray:
        return np.zeros(0)

    def motion(self, q: np.ndarray) -> pin.SE3:
        self._check(q, 0, "q")
        return pin.SE3.Identity()

    def motion_subspace(self, q: np.ndarray) -> np.ndarray:
        self._check(q, 0, "q")
        return np.zeros((6, 0))

    def integrate(self, q: np.ndarray, v: np.ndarray) -> np.ndarray:
        self._check(v, 0, "v")
        return self._check(q, 0, "q").copy()

    def difference(self, q0: np.ndarray, q1: np.ndarray) -> np.ndarray:
        self._check(q0, 0, "q")
        self._check(q1, 0, "q")
        return np.zeros(0)


@dataclass(frozen=True)
class _AxisKind(JointKind):
    """A kind parameterised by one unit axis in the joint frame."""

    axis: tuple[float, float, float] = (0.0, 0.0, 1.0)

    @classmethod
    def from_joint(cls, joint: Joint) -> JointKind:
        return cls(axis=_unit(joint.axis, f"joint '{joint.name}' ({cls.type}) axis"))

    def _a(self) -> np.ndarray:
        return np.asarray(self.axis, dtype=float)


@dataclass(frozen=True)
class Revolute(_AxisKind):
    """Rotation θ [rad] about ``axis``: ``Q = Rot(axis, θ)``."""

    type: ClassVar[str] = "revolute"
    nq: ClassVar[int] = 1
    nv: ClassVar[int] = 1
    limited: ClassVar[tuple[str, ...]] = ("angle",)

    def pinocchio_model(self) -> pin.JointModel:
        return pin.JointModelRevoluteUnaligned(self._a())

    def motion(self, q: np.ndarray) -> pin.SE3:
        """``Rot(axis, θ)`` in closed form (exp3), equal to Pinocchio's (tested)."""
        return pin.SE3(sp.exp3(self._a() * float(q[0])), np.zeros(3))


@dataclass(frozen=True)
class Prismatic(_AxisKind):
    """Translation d [m] along ``axis``: ``Q = Trans(d·axis)``."""

    type: ClassVar[str] = "prismatic"
    nq: ClassVar[int] = 1
    nv: ClassVar[int] = 1
    limited: ClassVar[tuple[str, ...]] = ("length",)

    def pinocchio_model(self) -> pin.JointModel:
        return pin.JointModelPrismaticUnaligned(self._a())

    def motion(self, q: np.ndarray) -> pin.SE3:
        """``Trans(d·axis)`` in closed form, equal to Pinocchio's (tested)."""
        return pin.SE3(np.eye(3), self._a() * float(q[0]))


@dataclass(frozen=True)
class Helical(_AxisKind):
    """Screw: rotation θ [rad] about ``axis`` with translation ``lead/(2π)·θ`` [m] along it.

    Pinocchio's ``HelicalUnaligned(axis, pitch)`` translates ``pitch·θ`` (pitch in m/rad,
    checked in tests), so ``pitch = lead/(2π)`` with lead in m/rev.
    """

    type: ClassVar[str] = "helical"
    nq: ClassVar[int] = 1
    nv: ClassVar[int] = 1
    limited: ClassVar[tuple[str, ...]] = ("angle",)
    lead: float = 0.0

    @classmethod
    def from_joint(cls, joint: Joint) -> JointKind:
        if joint.lead is None or not math.isfinite(joint.lead):
            raise JointSpecError(
                f"joint '{joint.name}' (helical): a finite lead [m/rev] is required"
            )
        axis = _unit(joint.axis, f"joint '{joint.name}' (helical) axis")
        return cls(axis=axis, lead=float(joint.lead))

    def pinocchio_model(self) -> pin.JointModel:
        return pin.JointModelHelicalUnaligned(self._a(), self.lead / (2.0 * math.pi))


@dataclass(frozen=True)
class Cylindrical(_AxisKind):
    """q = [d, θ]: translation d [m] along and rotation θ [rad] about the same ``axis``.

    Pinocchio: ``JointModelComposite(PrismaticUnaligned(axis), RevoluteUnaligned(axis))``
    (the two commute, so the order only fixes the layout).
    """

    type: ClassVar[str] = "cylindrical"
    nq: ClassVar[int] = 2
    nv: ClassVar[int] = 2
    limited: ClassVar[tuple[str, ...]] = ("length", "angle")

    def pinocchio_model(self) -> pin.JointModel:
        jm = pin.JointModelComposite(pin.JointModelPrismaticUnaligned(self._a()))
        jm.addJoint(pin.JointModelRevoluteUnaligned(self._a()))
        return jm


@dataclass(frozen=True)
class Universal(JointKind):
    """q = [θ1, θ2] [rad], ``Q = Rot(a1, θ1)·Rot(a2, θ2)`` (Pinocchio ``Universal(a1, a2)``).

    Pinocchio's convention was checked to match, also for non-orthogonal axes (tests).
    """

    type: ClassVar[str] = "universal"
    nq: ClassVar[int] = 2
    nv: ClassVar[int] = 2
    constant_S: ClassVar[bool] = False  # the first axis turns in Jc with θ2
    limited: ClassVar[tuple[str, ...]] = ("angle", "angle")
    axes: tuple[tuple[float, float, float], tuple[float, float, float]] = (
        (1.0, 0.0, 0.0),
        (0.0, 1.0, 0.0),
    )

    @classmethod
    def from_joint(cls, joint: Joint) -> JointKind:
        what = f"joint '{joint.name}' (universal) axes"
        if joint.axes is None or len(joint.axes) != 2:
            raise JointSpecError(f"{what}: two axes [a1, a2] are required")
        a1, a2 = (_unit(a, what) for a in joint.axes)
        if np.linalg.norm(np.cross(a1, a2)) < 1e-9:  # parallel axes lose a freedom
            raise JointSpecError(f"{what}: a1 and a2 must not be parallel")
        return cls(axes=(a1, a2))

    def pinocchio_model(self) -> pin.JointModel:
        return pin.JointModelUniversal(np.asarray(self.axes[0]), np.asarray(self.axes[1]))

    def motion(self, q: np.ndarray) -> pin.SE3:
        """``Rot(a1, θ1)·Rot(a2, θ2)`` in closed form, equal to Pinocchio's (tested)."""
        a1, a2 = np.asarray(self.axes[0]), np.asarray(self.axes[1])
        return pin.SE3(sp.exp3(a1 * float(q[0])) @ sp.exp3(a2 * float(q[1])), np.zeros(3))

    def motion_subspace(self, q: np.ndarray) -> np.ndarray:
        """``S = [[R2ᵀ a1, a2]; 0]`` with ``R2 = Rot(a2, θ2)``: ω in Jc (tested vs Pinocchio)."""
        a1, a2 = np.asarray(self.axes[0]), np.asarray(self.axes[1])
        S = np.zeros((6, 2))
        S[:3, 0] = sp.exp3(a2 * float(q[1])).T @ a1
        S[:3, 1] = a2
        return S

    def motion_subspace_rate(self, q: np.ndarray, v: np.ndarray) -> np.ndarray:
        """``Ṡ v = [−θ̇2 a2 × (R2ᵀ a1) θ̇1; 0]`` (since ``d/dt R2ᵀ = −θ̇2 â2 R2ᵀ``)."""
        a1, a2 = np.asarray(self.axes[0]), np.asarray(self.axes[1])
        out = np.zeros(6)
        out[:3] = -float(v[1]) * float(v[0]) * (sp.skew(a2) @ (sp.exp3(a2 * float(q[1])).T @ a1))
        return out


@dataclass(frozen=True)
class Planar(JointKind):
    """q = [x, y, cosθ, sinθ], v = [vx, vy, ω] (Pinocchio ``JointModelPlanar`` layout).

    Motion in the plane with unit normal ``normal`` (record ``axis``, default +z): x, y
    [m] along ``R0·e_x``, ``R0·e_y`` and θ [rad] about the normal; (vx, vy) in Jc.
    """

    type: ClassVar[str] = "planar"
    nq: ClassVar[int] = 4
    nv: ClassVar[int] = 3
    limited: ClassVar[tuple[str, ...]] = ("length", "length", "angle")
    normal: tuple[float, float, float] = (0.0, 0.0, 1.0)

    @classmethod
    def from_joint(cls, joint: Joint) -> JointKind:
        if joint.axis is None:
            return cls()
        return cls(normal=_unit(joint.axis, f"joint '{joint.name}' (planar) axis"))

    def pinocchio_model(self) -> pin.JointModel:
        return pin.JointModelPlanar()

    def alignment(self) -> pin.SE3:
        return pin.SE3(_min_rotation_from_z(self.normal), np.zeros(3))

    def N(self, q: np.ndarray) -> np.ndarray:
        _, _, c, s = self._check(q, 4, "q")
        return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, -s], [0.0, 0.0, c]])

    def value_rates(self, q: np.ndarray, v: np.ndarray) -> np.ndarray:
        """``(ẋ, ẏ, θ̇) = (R(θ) [vx, vy], ω)``: the body-frame speeds rotated into the plane."""
        _, _, c, s = self._check(q, 4, "q")
        vx, vy, w = np.asarray(v, dtype=float)
        return np.array([c * vx - s * vy, s * vx + c * vy, w])

    def compose(self, limited: np.ndarray, quat_wxyz: np.ndarray | None = None) -> np.ndarray:
        x, y, th = limited
        return np.array([x, y, math.cos(th), math.sin(th)])

    def limited_coordinates(self, q: np.ndarray) -> np.ndarray:
        x, y, c, s = self._check(q, 4, "q")
        return np.array([x, y, math.atan2(s, c)])

    def from_record_initial(self, values: float | Sequence[float] | None) -> np.ndarray:
        """Accepts ``[x, y, θ]`` or ``[x, y, cosθ, sinθ]`` (the latter is normalised)."""
        if values is not None and np.size(values) == 4:
            x, y, c, s = np.asarray(values, dtype=float)
            return self.compose(np.array([x, y, math.atan2(s, c)]))
        return super().from_record_initial(values)


@dataclass(frozen=True)
class Spherical(JointKind):
    """q = unit quaternion [w, x, y, z] of ``Q``'s rotation; v = ω (3,) in Jc [rad/s].

    Pinocchio ``JointModelSpherical`` stores [x, y, z, w]; ``q ⊕ ω = q ⊗ exp(ω)`` (local).
    """

    type: ClassVar[str] = "spherical"
    nq: ClassVar[int] = 4
    nv: ClassVar[int] = 3
    has_quat: ClassVar[bool] = True
    _q_pin: ClassVar[tuple[int, ...]] = sp.QUAT_XYZW_FROM_WXYZ

    def pinocchio_model(self) -> pin.JointModel:
        return pin.JointModelSpherical()

    def motion(self, q: np.ndarray) -> pin.SE3:
        """The rotation of the (normalized) quaternion, equal to Pinocchio's (tested)."""
        return pin.SE3(sp.rotation_from_quat(q), np.zeros(3))

    def N(self, q: np.ndarray) -> np.ndarray:
        return _quat_rate(self._check(q, 4, "q"))

    def compose(self, limited: np.ndarray, quat_wxyz: np.ndarray | None = None) -> np.ndarray:
        assert quat_wxyz is not None
        return np.asarray(quat_wxyz, dtype=float).copy()

    def limited_coordinates(self, q: np.ndarray) -> np.ndarray:
        self._check(q, 4, "q")
        return np.zeros(0)


@dataclass(frozen=True)
class Free(JointKind):
    """q = [p (3) m, quaternion wxyz (4)] of ``Q = T_Jb_Jc``; v = [ω; v] in Jc (angular-first).

    Pinocchio ``JointModelFreeFlyer``: q = [p, xyzw], v = [v; ω] in the LOCAL frame, and
    ``q ⊕ v = Q(q)·exp6(v)`` (coupled SE(3) exponential).
    """

    type: ClassVar[str] = "free"
    nq: ClassVar[int] = 7
    nv: ClassVar[int] = 6
    limited: ClassVar[tuple[str, ...]] = ("length", "length", "length")
    has_quat: ClassVar[bool] = True
    _q_pin: ClassVar[tuple[int, ...]] = (0, 1, 2) + tuple(3 + i for i in sp.QUAT_XYZW_FROM_WXYZ)
    _v_pin: ClassVar[tuple[int, ...]] = sp.PIN_MOTION_ORDER

    def pinocchio_model(self) -> pin.JointModel:
        return pin.JointModelFreeFlyer()

    def N(self, q: np.ndarray) -> np.ndarray:
        q = self._check(q, 7, "q")
        out = np.zeros((7, 6))
        out[:3, 3:] = sp.rotation_from_quat(q[3:])  # ṗ = R·v_local
        out[3:, :3] = _quat_rate(q[3:])
        return out

    def compose(self, limited: np.ndarray, quat_wxyz: np.ndarray | None = None) -> np.ndarray:
        assert quat_wxyz is not None
        return np.concatenate([np.asarray(limited, dtype=float), quat_wxyz])

    def limited_coordinates(self, q: np.ndarray) -> np.ndarray:
        return self._check(q, 7, "q")[:3].copy()


#: The registry: record joint type → kind class (every name in ``record.JOINT_TYPES``).
JOINT_KINDS: dict[str, type[JointKind]] = {
    k.type: k
    for k in (Fixed, Revolute, Prismatic, Spherical, Universal, Cylindrical, Helical, Planar, Free)
}
assert tuple(sorted(JOINT_KINDS)) == tuple(sorted(JOINT_TYPES))


# ----------------------------------------------------------------------------------------
# Public functions on record joints
# ----------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=4096)
def joint_kind(joint: Joint) -> JointKind:
    """The :class:`JointKind` of a record joint (cached; joints are immutable).

    Raises:
        JointSpecError: unknown type, missing/zero axis, missing lead, parallel axes.
    """
    cls = JOINT_KINDS.get(joint.type)
    if cls is None:
        raise JointSpecError(
            f"joint '{joint.name}': unknown type '{joint.type}'; valid: {', '.join(JOINT_TYPES)}"
        )
    return cls.from_joint(joint)


def transform(joint: Joint, q: np.ndarray) -> pin.SE3:
    """``X_j = A_j·Q_j(q)·B_j⁻¹ = T_parent_child`` for record joint ``joint`` at q (nq,)."""
    A = sp.se3_from_pose(joint.parent_frame)
    B = sp.se3_from_pose(joint.child_frame)
    return A * joint_kind(joint).motion(q) * B.inverse()


def pinocchio_placements(joint: Joint) -> tuple[pin.SE3, pin.SE3]:
    """``(A·R0, B·R0)``: joint placement in the parent and joint frame in the child body
    to use with :meth:`JointKind.pinocchio_model` in a Pinocchio tree, so that
    ``(A·R0)·Q_pin(q)·(B·R0)⁻¹ = X_j``."""
    R0 = joint_kind(joint).alignment()
    return sp.se3_from_pose(joint.parent_frame) * R0, sp.se3_from_pose(joint.child_frame) * R0


def spherical_chart(q_ref: np.ndarray, q: np.ndarray) -> np.ndarray:
    """``φ = log(R(q_ref)ᵀ R(q))`` (3,) [rad], in Jc of the reference; valid for |φ| < π."""
    return sp.log3(sp.rotation_from_quat(q_ref).T @ sp.rotation_from_quat(q))


def spherical_from_chart(q_ref: np.ndarray, phi: np.ndarray) -> np.ndarray:
    """Inverse of :func:`spherical_chart`: the wxyz quaternion of ``R(q_ref)·exp(φ)``.

    The sign of the result follows ``q_ref`` (``q_ref ⊗ exp(φ/2)``), not the w ≥ 0 rule.
    """
    return Spherical().from_chart(np.asarray(q_ref, dtype=float), np.asarray(phi, dtype=float))

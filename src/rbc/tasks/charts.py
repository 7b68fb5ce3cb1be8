"""Task charts: a task's value, its error against a desired motion, and its Jacobian.

A chart maps a configuration q to a task value x = f_x(q) and, against a desired motion
``(x_d(t), ẋ_d(t))``, to an error ``e_x`` (m,) whose rate along a motion ``v = E u`` is

    ė_x = J_x u − φ_d,        J_x = D_e · Df_x N E   (m, n_u),

with ``Df_x N`` the world-aligned frame Jacobian ``[ω; ṗ]`` of the task frame
(:func:`rbc.model.kinematics.frame_jacobian`), E the lift, ``D_e`` the chart's derivative of
the error with respect to the task velocity, and φ_d the feedforward (``−∂e_x/∂t``: the
desired motion's rate in the chart). The velocity problem asks ``J_x u = φ_d − K_x e_x``,
so under exact execution ``ė_x = −K_x e_x`` (:mod:`rbc.tasks.qp`).

==========  ======  ===========================  ==============================  =======
chart       rows    value x (representation)     error e_x                       D_e
==========  ======  ===========================  ==============================  =======
position    3       p (3,) [m], world            p − p_d                         I
planar      2       P p (2,) [m], two world      P (p − p_d)                     P
                    axes P (``NAME:xz``)
pose        6       [p; w x y z] (7,)            [log(R R_dᵀ); p − p_d]           diag(J_l⁻¹, I)
                                                 (angular-first, world axes)
coordinate  1       a joint coordinate [rad|m]   x − x_d                         E row
stack       Σ       concatenation                concatenation                   —
==========  ======  ===========================  ==============================  =======

**Pose.** With ``R_e = R R_dᵀ`` and φ = log(R_e) (world axes), ``Ṙ_e = [ω − R_e ω_d]× R_e``,
hence ``φ̇ = J_l(φ)⁻¹ (ω − R_e ω_d)`` (:func:`rbc.ir.spatial.left_jacobian_inverse3`); the
feedforward is ``[J_l⁻¹ R_e ω_d; ṗ_d]``. The desired rate of a pose is ``[ω_d; ṗ_d]`` (world
angular velocity, then linear velocity). A pose target on the command line is
``x,y,z,rx,ry,rz``: position [m] and a rotation vector [rad] in world axes (axis × angle).

**Specifications** (``rbc plan --task``): ``NAME`` (a record task in its kind), ``NAME:position``
(the position of a pose task), ``NAME:xy`` / ``NAME:xz`` / ``NAME:yz`` (planar position on two
world axes), ``joint:COORD`` (one independent-capable joint coordinate, a name of
:attr:`~rbc.model.compiled.CompiledModel.v_names`); several specifications form a stack.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from rbc.errors import RbcError, did_you_mean
from rbc.ir import spatial as sp
from rbc.model.compiled import CompiledModel
from rbc.model.kinematics import frame_jacobian
from rbc.model.solve import coordinate_value, rate_is_speed

PLANES = {"xy": (0, 1), "xz": (0, 2), "yz": (1, 2)}


class TaskError(RbcError):
    """A task specification or target that cannot be used (names the task and the choices)."""


@dataclass(frozen=True, eq=False)
class Desired:
    """A sample of the desired task motion.

    Attributes:
        value: (size,) the desired value in the chart's representation (table above).
        rate: (m,) its rate: ẋ_d for position, planar and coordinate charts, ``[ω_d; ṗ_d]``
            (world axes) for a pose.
    """

    value: np.ndarray
    rate: np.ndarray


@dataclass(frozen=True, eq=False)
class TaskState:
    """A task at one configuration against one desired sample.

    Attributes:
        e: (m,) error e_x in the chart; J: (m, n_u) chart Jacobian (``ė_x = J u − φ_d``);
        feedforward: (m,) φ_d; value: (size,) the task value at q.
    """

    e: np.ndarray
    J: np.ndarray
    feedforward: np.ndarray
    value: np.ndarray

    def command(self, gains: np.ndarray) -> np.ndarray:
        """The task-velocity command ``w = φ_d − K_x e_x`` (m,) for gains (m,) [1/s]."""
        return self.feedforward - np.asarray(gains, dtype=float) * self.e


class Chart(ABC):
    """A task chart (module docstring).

    Attributes:
        label: the specification it was made from; dim: m (rows); size: length of the
        value representation; target_size: numbers of a command-line target.
    """

    label: str
    dim: int
    size: int
    target_size: int

    @abstractmethod
    def value(self, model: CompiledModel, q: np.ndarray) -> np.ndarray:
        """The task value x (size,) at q."""

    @abstractmethod
    def state(self, model: CompiledModel, q: np.ndarray, E: np.ndarray, desired: Desired
              ) -> TaskState:
        """Error, chart Jacobian and feedforward at q (lift E (nv, n_u)) against ``desired``."""

    def row_names(self) -> tuple[str, ...]:
        """(m,) names of the rows (``tip.x``, ``tool.rz``, …)."""
        return tuple(f"{self.label}.{i}" for i in range(self.dim))

    def interpolate(self, x0: np.ndarray, x1: np.ndarray, s: float, sdot: float
                    ) -> Desired:
        """The value and rate at path parameter s ∈ [0, 1] (rate ṡ [1/s]) of the shortest
        path from x0 to x1 (straight line; geodesic for orientations)."""
        x0, x1 = np.asarray(x0, dtype=float), np.asarray(x1, dtype=float)
        return Desired(x0 + s * (x1 - x0), sdot * (x1 - x0))

    def from_target(self, numbers: Sequence[float]) -> np.ndarray:
        """The value (size,) of a command-line target (``target_size`` numbers)."""
        return np.asarray(numbers, dtype=float)

    def distance(self, x0: np.ndarray, x1: np.ndarray) -> np.ndarray:
        """(m,) componentwise chart distance between two values (the error of x1 at x0)."""
        return np.asarray(x1, dtype=float) - np.asarray(x0, dtype=float)


@dataclass(frozen=True, eq=False)
class _Frame:
    """A record task's frame: body index and ``T_body_task``."""

    body: int
    frame: pin.SE3

    def jacobian(self, model: CompiledModel, q: np.ndarray, E: np.ndarray
                 ) -> tuple[pin.SE3, np.ndarray]:
        """``(T_world_task, J (6, n_u) = [ω; ṗ] per independent speed)``."""
        T, J = frame_jacobian(model, q, self.body, self.frame)
        return T, J @ E


class PositionChart(Chart):
    """Position of a task point (3 rows, world axes)."""

    def __init__(self, label: str, frame: _Frame) -> None:
        self.label, self._f = label, frame
        self.dim = self.size = self.target_size = 3

    def row_names(self) -> tuple[str, ...]:
        return tuple(f"{self.label}.{a}" for a in "xyz")

    def value(self, model, q):
        T, _ = frame_jacobian(model, q, self._f.body, self._f.frame)
        return np.array(T.translation)

    def state(self, model, q, E, desired):
        T, J = self._f.jacobian(model, q, E)
        p = np.array(T.translation)
        return TaskState(p - desired.value, J[3:], np.asarray(desired.rate, dtype=float), p)


class PlanarChart(Chart):
    """Position of a task point on two world axes (2 rows)."""

    def __init__(self, label: str, frame: _Frame, plane: str) -> None:
        self.label, self._f, self._plane = label, frame, plane
        self._axes = np.array(PLANES[plane])
        self.dim = self.size = self.target_size = 2

    def row_names(self) -> tuple[str, ...]:
        return tuple(f"{self.label}.{a}" for a in self._plane)

    def value(self, model, q):
        T, _ = frame_jacobian(model, q, self._f.body, self._f.frame)
        return np.array(T.translation)[self._axes]

    def state(self, model, q, E, desired):
        T, J = self._f.jacobian(model, q, E)
        p = np.array(T.translation)[self._axes]
        return TaskState(p - desired.value, J[3:][self._axes], np.asarray(desired.rate, float), p)


class PoseChart(Chart):
    """Pose of a task frame (6 rows, angular-first, log-map orientation error)."""

    def __init__(self, label: str, frame: _Frame) -> None:
        self.label, self._f = label, frame
        self.dim, self.size, self.target_size = 6, 7, 6

    def row_names(self) -> tuple[str, ...]:
        return tuple(f"{self.label}.{a}" for a in ("rx", "ry", "rz", "x", "y", "z"))

    def value(self, model, q):
        T, _ = frame_jacobian(model, q, self._f.body, self._f.frame)
        return np.concatenate([T.translation, sp.quat_from_rotation(T.rotation)])

    def state(self, model, q, E, desired):
        T, J = self._f.jacobian(model, q, E)
        Rd = sp.rotation_from_quat(desired.value[3:])
        Re = T.rotation @ Rd.T
        Jl = sp.left_jacobian_inverse3(Re)
        e = np.concatenate([sp.log3(Re), T.translation - desired.value[:3]])
        rate = np.asarray(desired.rate, dtype=float)
        ff = np.concatenate([Jl @ (Re @ rate[:3]), rate[3:]])
        value = np.concatenate([T.translation, sp.quat_from_rotation(T.rotation)])
        return TaskState(e, np.vstack([Jl @ J[:3], J[3:]]), ff, value)

    def interpolate(self, x0, x1, s, sdot):
        x0, x1 = np.asarray(x0, dtype=float), np.asarray(x1, dtype=float)
        R0, R1 = sp.rotation_from_quat(x0[3:]), sp.rotation_from_quat(x1[3:])
        phi = sp.log3(R1 @ R0.T)  # world-axes rotation from R0 to R1 (geodesic)
        R = sp.exp3(s * phi) @ R0
        value = np.concatenate([x0[:3] + s * (x1[:3] - x0[:3]), sp.quat_from_rotation(R)])
        return Desired(value, np.concatenate([sdot * phi, sdot * (x1[:3] - x0[:3])]))

    def from_target(self, numbers):
        n = np.asarray(numbers, dtype=float)
        return np.concatenate([n[:3], sp.quat_from_rotation(sp.exp3(n[3:]))])

    def distance(self, x0, x1):
        R0 = sp.rotation_from_quat(np.asarray(x0, dtype=float)[3:])
        R1 = sp.rotation_from_quat(np.asarray(x1, dtype=float)[3:])
        return np.concatenate([sp.log3(R1 @ R0.T), np.asarray(x1[:3]) - np.asarray(x0[:3])])


class CoordinateChart(Chart):
    """One joint coordinate (1 row): ``J_x = E[j]``."""

    def __init__(self, label: str, column: int) -> None:
        self.label, self._j = label, column
        self.dim = self.size = self.target_size = 1

    def row_names(self) -> tuple[str, ...]:
        return (self.label,)

    def value(self, model, q):
        return np.array([coordinate_value(model, q, self._j)])

    def state(self, model, q, E, desired):
        x = self.value(model, q)
        return TaskState(x - desired.value, E[self._j: self._j + 1],
                         np.asarray(desired.rate, dtype=float), x)


class Stack(Chart):
    """Several charts stacked (rows in order)."""

    def __init__(self, charts: Sequence[Chart]) -> None:
        self.charts = tuple(charts)
        self.label = "+".join(c.label for c in self.charts)
        self.dim = sum(c.dim for c in self.charts)
        self.size = sum(c.size for c in self.charts)
        self.target_size = sum(c.target_size for c in self.charts)

    def _split(self, x: np.ndarray, attr: str) -> list[np.ndarray]:
        cuts = np.cumsum([getattr(c, attr) for c in self.charts])[:-1]
        return np.split(np.asarray(x, dtype=float), cuts)

    def row_names(self):
        return tuple(n for c in self.charts for n in c.row_names())

    def value(self, model, q):
        return np.concatenate([c.value(model, q) for c in self.charts])

    def state(self, model, q, E, desired):
        parts = [c.state(model, q, E, Desired(x, r)) for c, x, r in zip(
            self.charts, self._split(desired.value, "size"), self._split(desired.rate, "dim"),
            strict=True)]
        return TaskState(np.concatenate([p.e for p in parts]), np.vstack([p.J for p in parts]),
                         np.concatenate([p.feedforward for p in parts]),
                         np.concatenate([p.value for p in parts]))

    def interpolate(self, x0, x1, s, sdot):
        parts = [c.interpolate(a, b, s, sdot) for c, a, b in zip(
            self.charts, self._split(x0, "size"), self._split(x1, "size"), strict=True)]
        return Desired(np.concatenate([p.value for p in parts]),
                       np.concatenate([p.rate for p in parts]))

    def from_target(self, numbers):
        return np.concatenate([c.from_target(n) for c, n in zip(
            self.charts, self._split(numbers, "target_size"), strict=True)])

    def distance(self, x0, x1):
        return np.concatenate([c.distance(a, b) for c, a, b in zip(
            self.charts, self._split(x0, "size"), self._split(x1, "size"), strict=True)])


def chart(model: CompiledModel, spec: str) -> Chart:
    """The chart of one specification (module docstring).

    Raises:
        TaskError: unknown task or coordinate (lists the valid ones, with a close spelling),
            an unknown plane, a ``:position`` of a position task, or a coordinate without a
            scalar value.
    """
    name, _, part = spec.partition(":")
    if name == "joint":
        return _coordinate(model, spec, part)
    tasks = {t.name: t for t in model.record.tasks}
    if name not in tasks:
        close = did_you_mean(name, tasks)
        hint = f" (did you mean '{close}'?)" if close else ""
        valid = ", ".join(tasks) or "none (add `tasks:` to the record)"
        raise TaskError(f"--task {spec}: no task '{name}'{hint}; the record's tasks: {valid}; "
                        "or joint:COORDINATE for one joint coordinate")
    task = tasks[name]
    frame = _Frame(model.record.body_index()[task.body], sp.se3_from_pose(task.pose))
    if not part:
        return (PoseChart if task.kind == "pose" else PositionChart)(name, frame)
    if part == "position":
        return PositionChart(spec, frame)
    if part in PLANES:
        return PlanarChart(spec, frame, part)
    valid = ", ".join([f"{name} ({task.kind})", f"{name}:position",
                       *(f"{name}:{p}" for p in PLANES)])
    raise TaskError(f"--task {spec}: unknown chart '{part}'; valid: {valid}")


def _coordinate(model: CompiledModel, spec: str, coord: str) -> CoordinateChart:
    names = {n: j for j, n in enumerate(model.v_names)}
    if coord not in names:
        close = did_you_mean(coord, names)
        hint = f" (did you mean 'joint:{close}'?)" if close else ""
        raise TaskError(f"--task {spec}: no coordinate '{coord}'{hint}; coordinates: "
                        f"{', '.join(model.v_names)}")
    j = names[coord]
    if not rate_is_speed(model, j):
        raise TaskError(f"--task {spec}: '{coord}' has no scalar value whose rate is its speed "
                        "(spherical, free or planar joint coordinates cannot be a task)")
    return CoordinateChart(coord, j)


def stack(model: CompiledModel, specs: Sequence[str]) -> Chart:
    """One chart, or the stack of several (in order).

    Raises:
        TaskError: no specification, or one is invalid (:func:`chart`).
    """
    if not specs:
        raise TaskError("give a task: --task NAME (a record task) or --task joint:COORDINATE")
    charts = [chart(model, s) for s in specs]
    return charts[0] if len(charts) == 1 else Stack(charts)

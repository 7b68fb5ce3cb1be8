"""Actuator and task interfaces of a compiled mechanism (DESIGN.md §6).

**Actuators.** An actuator drives a port: the coordinate of a 1-coordinate joint, or a fixed
tendon, the linear combination ``ℓ_a = Σ_k c_k q_k`` of 1-coordinate joints (MuJoCo's
``<tendon><fixed>``). Its displacement at the port is ℓ_a (cylinder extension [m] or angle
[rad]); the motor displacement is ``N·ℓ_a`` through the transmission (N: gear ratio, or
2π/lead for a screw). The port Jacobian ``J_ℓ`` (n_act, nv) holds the coefficients in the
ports' velocity columns (constant: 1-coordinate joints have ``q̇ = v``), so ``ℓ̇ = J_ℓ v``
and, on the manifold, ``ℓ̇ = L u`` with ``L = J_ℓ E`` (n_act, n_u). Port efforts f enter the
generalized efforts as ``τ_a = J_ℓᵀ f`` — a tendon pulls on each of its joints with
``c_k f`` — which makes the virtual power ``uᵀ Eᵀ τ_a = fᵀ ℓ̇`` hold by construction.

**Tasks.** A task is a point (``position``, 3 rows) or a frame (``pose``, 6 rows,
angular-first) fixed in a body; ``x = f_x(q)`` is its world position (and orientation) and
``J_x = D f_x · N · E`` (rows, n_u) maps independent speeds to the task velocity in world
axes (angular velocity; velocity of the point). The task charts built on these maps are in
:mod:`rbc.tasks.charts`.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from rbc.ir import spatial as sp
from rbc.model.compiled import CompiledModel
from rbc.model.kinematics import frame_jacobian


@dataclass(frozen=True, eq=False)
class PortMap:
    """Actuator ports of a model.

    Attributes:
        names: (n_act,) actuator names.
        jacobian: (n_act, nv) ``J_ℓ`` (coefficients in the ports' velocity columns).
        q_matrix: (n_act, nq) the same coefficients in the q columns: ``ℓ = q_matrix @ q``.
        reduction: (n_act,) transmission ratio N (motor speed per port speed).
        single: (n_act,) whether each port is one joint's coordinate (coefficient 1).
        edges: per port, the edges of its joints.
    """

    names: tuple[str, ...]
    jacobian: np.ndarray
    q_matrix: np.ndarray
    reduction: np.ndarray
    single: np.ndarray
    edges: tuple[tuple[int, ...], ...]

    @property
    def columns(self) -> np.ndarray:
        """(n_act,) v-index of each port coordinate — joint ports only.

        Raises:
            ValueError: a port is a tendon (use :attr:`jacobian`).
        """
        self._joint_ports("columns")
        return np.argmax(self.jacobian, axis=1) if self.names else np.zeros(0, np.int64)

    @property
    def q_index(self) -> np.ndarray:
        """(n_act,) q-index of each port coordinate — joint ports only (else ValueError)."""
        self._joint_ports("q_index")
        return np.argmax(self.q_matrix, axis=1) if self.names else np.zeros(0, np.int64)

    def _joint_ports(self, what: str) -> None:
        if not np.all(self.single):
            tendons = [n for n, s in zip(self.names, self.single, strict=True) if not s]
            raise ValueError(f"PortMap.{what}: the ports of {', '.join(tendons)} are tendons "
                             "(linear combinations of joints); use PortMap.jacobian")


@functools.lru_cache(maxsize=64)
def ports(model: CompiledModel) -> PortMap:
    """The port map from the record's actuators (cached per model; models are immutable)."""
    acts = model.record.actuators
    J = np.zeros((len(acts), model.nv))
    Q = np.zeros((len(acts), model.nq))
    edges = []
    for i, a in enumerate(acts):
        ks = []
        for name, coef in a.port_terms:
            k = model.edge(name)
            J[i, int(model.v_offset[k])] += coef
            Q[i, int(model.q_offset[k])] += coef
            ks.append(k)
        edges.append(tuple(ks))
    for arr in (J, Q):
        arr.flags.writeable = False
    return PortMap(
        names=tuple(a.name for a in acts),
        jacobian=J,
        q_matrix=Q,
        reduction=np.array([a.transmission.reduction for a in acts], dtype=float),
        single=np.array([not a.terms for a in acts], dtype=bool),
        edges=tuple(edges),
    )


def actuator_displacement(model: CompiledModel, q: np.ndarray) -> np.ndarray:
    """``ℓ = f_ℓ(q)`` (n_act,): port displacements [m or rad]."""
    return ports(model).q_matrix @ np.asarray(q, dtype=float)


def port_jacobian(model: CompiledModel) -> np.ndarray:
    """``J_ℓ`` (n_act, nv): the ports' coefficients in their velocity columns (constant)."""
    return ports(model).jacobian


def actuator_map(model: CompiledModel, E: np.ndarray) -> np.ndarray:
    """``L = J_ℓ E`` (n_act, n_u): port speeds from independent speeds."""
    return ports(model).jacobian @ E


def port_unit(model: CompiledModel, i: int) -> tuple[str, str]:
    """``(displacement unit, effort unit)`` of actuator i: m and N for a prismatic port (a
    tendon over prismatic joints), rad and N·m for a revolute or helical one."""
    k = ports(model).edges[i][0]
    return ("m", "N") if model.kinds[k].type == "prismatic" else ("rad", "N·m")


def task_frame(model: CompiledModel, name: str) -> tuple[int, pin.SE3, str]:
    """``(body index, T_body_task, kind)`` of a record task.

    Raises:
        KeyError: no task of that name.
    """
    task = {t.name: t for t in model.record.tasks}[name]
    return model.record.body_index()[task.body], sp.se3_from_pose(task.pose), task.kind


def task_map(model: CompiledModel, name: str, q: np.ndarray, E: np.ndarray
             ) -> tuple[np.ndarray, np.ndarray]:
    """Task value and ``J_x = D f_x N E``.

    Returns:
        ``(x, J_x)``: for ``position`` x (3,) [m] world position and J_x (3, n_u); for
        ``pose`` x (7,) ``[p; w x y z]`` and J_x (6, n_u) ``[ω; ṗ]`` in world axes.
    """
    body, frame, kind = task_frame(model, name)
    T, J = frame_jacobian(model, q, body, frame)
    if kind == "position":
        return np.array(T.translation), J[3:] @ E
    return np.concatenate([T.translation, sp.quat_from_rotation(T.rotation)]), J @ E

"""Actuator and task interfaces of a compiled mechanism (DESIGN.md §6).

**Actuators.** Each actuator drives the port coordinate of a 1-coordinate joint. Its
displacement at the port is ``ℓ_a = q_port`` (cylinder extension [m] or joint angle [rad]);
the motor displacement is ``N·ℓ_a`` through the transmission (N: gear ratio, or 2π/lead
for a screw). The port Jacobian ``J_ℓ`` (n_act, nv) selects the port velocity coordinates,
so ``ℓ̇ = J_ℓ v`` and, on the manifold, ``ℓ̇ = L u`` with ``L = J_ℓ E`` (n_act, n_u).
Port efforts f enter the generalized efforts as ``τ_a = J_ℓᵀ f``, which is what makes the
virtual power ``uᵀ Eᵀ τ_a = fᵀ ℓ̇`` hold by construction.

**Tasks.** A task is a point (``position``, 3 rows) or a frame (``pose``, 6 rows,
angular-first) fixed in a body; ``x = f_x(q)`` is its world position (and orientation) and
``J_x = D f_x · N · E`` (rows, n_u) maps independent speeds to the task velocity in world
axes (angular velocity; velocity of the point).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from rbc.ir import spatial as sp
from rbc.model.compiled import CompiledModel
from rbc.model.kinematics import frame_jacobian


@dataclass(frozen=True)
class PortMap:
    """Actuator ports of a model.

    Attributes:
        names: (n_act,) actuator names.
        columns: (n_act,) v-index of each port coordinate (= its q-index offset in v).
        q_index: (n_act,) q-index of each port coordinate.
        reduction: (n_act,) transmission ratio N (motor speed per port speed).
    """

    names: tuple[str, ...]
    columns: np.ndarray
    q_index: np.ndarray
    reduction: np.ndarray


@functools.lru_cache(maxsize=64)
def ports(model: CompiledModel) -> PortMap:
    """The port map from the record's actuators (cached per model; models are immutable)."""
    acts = model.record.actuators
    edges = [model.edge(a.joint) for a in acts]
    return PortMap(
        names=tuple(a.name for a in acts),
        columns=np.array([int(model.v_offset[k]) for k in edges], dtype=np.int64),
        q_index=np.array([int(model.q_offset[k]) for k in edges], dtype=np.int64),
        reduction=np.array([a.transmission.reduction for a in acts], dtype=float),
    )


def actuator_displacement(model: CompiledModel, q: np.ndarray) -> np.ndarray:
    """``ℓ = f_ℓ(q)`` (n_act,): port displacements [m or rad]."""
    return np.asarray(q, dtype=float)[ports(model).q_index]


def port_jacobian(model: CompiledModel) -> np.ndarray:
    """``J_ℓ`` (n_act, nv): selects the port velocity coordinates (constant)."""
    p = ports(model)
    J = np.zeros((len(p.names), model.nv))
    J[np.arange(len(p.names)), p.columns] = 1.0
    return J


def actuator_map(model: CompiledModel, E: np.ndarray) -> np.ndarray:
    """``L = J_ℓ E`` (n_act, n_u): port speeds from independent speeds."""
    return E[ports(model).columns]


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

"""Actuator and task interfaces of a compiled mechanism (DESIGN.md §6).

**Actuators.** An actuator drives a port of displacement ``ℓ = f_ℓ(q)`` (cylinder extension
[m] or angle [rad]); the motor displacement is ``N·ℓ`` through the transmission (N: gear
ratio, or 2π/lead for a screw). The port kinds (:attr:`rbc.ir.record.Actuator.kind`):

* ``joint`` and ``tendon``: ``ℓ = Σ_k c_k q_k`` over 1-coordinate joints (a joint port: one
  term, c = 1; a tendon: MuJoCo's ``<tendon><fixed>``). ``J_ℓ`` holds the coefficients in
  the joints' velocity columns and is constant (``q̇ = v`` on those joints).
* ``distance``: ``ℓ = |p_b − p_a|`` between attachment points on two bodies, with
  ``J_ℓ = nᵀ (J_b − J_a)`` (n the unit vector from a to b, ``J_a``, ``J_b`` the world-axes
  point Jacobians of :func:`rbc.model.kinematics.frame_jacobian`, already ``D p · N``).
* ``profile``: ``ℓ = h(q_j)`` (:mod:`rbc.model.profiles`), ``J_ℓ = h'(q_j)`` on the joint.
* ``velocity``: no displacement map (ℓ is NaN); ``ℓ̇ = Σ_k c_k v_k`` with constant
  coefficients on named velocity coordinates.

So ``ℓ̇ = J_ℓ(q) v`` with ``J_ℓ = D f_ℓ · N``, on the manifold ``ℓ̇ = L u`` with
``L = J_ℓ E`` (n_act, n_u). Port efforts f enter the generalized efforts as
``τ_a = J_ℓᵀ f`` (a distance port pushes its two points apart with ``±f n``; a tendon pulls
on each joint with ``c_k f``), which makes the virtual power ``uᵀ Eᵀ τ_a = fᵀ ℓ̇`` hold by
construction for every kind. The per-kind formulas are small pure functions
(:func:`distance_port`, :func:`profile_port`) of the attachment data and the state.

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
from rbc.ir.record import Actuator, is_linear_speed
from rbc.model.compiled import CompiledModel
from rbc.model.kinematics import frame_jacobian
from rbc.model.profiles import profile_terms


class PortGeometryError(ValueError):
    """A port's displacement is singular at this configuration (a distance port whose two
    points coincide: the direction of the line, and so ``J_ℓ``, is undefined)."""


@dataclass(frozen=True, eq=False)
class PortMap:
    """Actuator ports of a model (the constant part and what the q-dependent ports need).

    Attributes:
        names: (n_act,) actuator names.
        kinds: (n_act,) port kinds (:data:`rbc.ir.record.PORT_KINDS`).
        linear_jacobian: (n_act, nv) the constant rows of ``J_ℓ`` (joint, tendon and velocity
            ports; zero rows for distance and profile ports).
        linear_q: (n_act, nq) the coefficients of the linear ports in the q columns
            (``ℓ = linear_q @ q`` for joint and tendon ports).
        single: (n_act,) whether each port is one joint's coordinate (coefficient 1).
        edges: per port, the edges of the joints it reads (none for a distance port).
        varying: indices of the ports whose ``J_ℓ`` depends on q (distance, profile).
        holonomic: (n_act,) whether the port has a displacement map (all but velocity).
    """

    names: tuple[str, ...]
    kinds: tuple[str, ...]
    linear_jacobian: np.ndarray
    linear_q: np.ndarray
    single: np.ndarray
    edges: tuple[tuple[int, ...], ...]
    varying: tuple[int, ...]
    holonomic: np.ndarray

    @property
    def jacobian(self) -> np.ndarray:
        """(n_act, nv) ``J_ℓ`` when it is constant (joint, tendon and velocity ports).

        Raises:
            ValueError: a port's Jacobian depends on q (use :func:`port_jacobian`).
        """
        if self.varying:
            raise ValueError(f"PortMap.jacobian: the ports of {self._varying_names()} depend "
                             "on the configuration; use port_jacobian(model, q)")
        return self.linear_jacobian

    @property
    def columns(self) -> np.ndarray:
        """(n_act,) v-index of each port coordinate — joint ports only.

        Raises:
            ValueError: a port is not a joint port (use :func:`port_jacobian`).
        """
        self._joint_ports("columns")
        return (np.argmax(self.linear_jacobian, axis=1) if self.names
                else np.zeros(0, np.int64))

    def _varying_names(self) -> str:
        return ", ".join(self.names[i] for i in sorted(self.varying))

    def _joint_ports(self, what: str) -> None:
        if not np.all(self.single):
            others = [f"{n} ({k})" for n, k, s in zip(self.names, self.kinds, self.single,
                                                     strict=True) if not s]
            raise ValueError(f"PortMap.{what}: the ports of {', '.join(others)} are not joint "
                             "ports; use port_jacobian(model, q)")


@functools.lru_cache(maxsize=64)
def ports(model: CompiledModel) -> PortMap:
    """The port map from the record's actuators (cached per model; models are immutable)."""
    acts = model.record.actuators
    J = np.zeros((len(acts), model.nv))
    Q = np.zeros((len(acts), model.nq))
    edges = []
    for i, a in enumerate(acts):
        for name, coef in a.port_terms:
            k = model.edge(name)
            J[i, int(model.v_offset[k])] += coef
            Q[i, int(model.q_offset[k])] += coef
        for name, c_k, coef in a.velocity:
            J[i, int(model.v_offset[model.edge(name)]) + c_k] += coef
        edges.append(tuple(model.edge(n) for n in a.port_joints))
    for arr in (J, Q):
        arr.flags.writeable = False
    return PortMap(
        names=tuple(a.name for a in acts),
        kinds=tuple(a.kind for a in acts),
        linear_jacobian=J,
        linear_q=Q,
        single=np.array([a.joint is not None for a in acts], dtype=bool),
        edges=tuple(edges),
        varying=tuple(i for i, a in enumerate(acts) if a.kind in ("distance", "profile")),
        holonomic=np.array([a.kind != "velocity" for a in acts], dtype=bool),
    )


def distance_port(pa: np.ndarray, pb: np.ndarray, Ja: np.ndarray, Jb: np.ndarray
                  ) -> tuple[float, np.ndarray]:
    """``(ℓ, J_ℓ)`` of a distance port from its end points and their Jacobians.

    Args:
        pa, pb: (3,) world positions of the attachment points a and b [m].
        Ja, Jb: (3, nv) world-axes velocity Jacobians of those points.

    Returns:
        ``ℓ = |pb − pa|`` [m] and ``J_ℓ = nᵀ (Jb − Ja)`` (nv,), n = (pb − pa)/ℓ.

    Raises:
        PortGeometryError: the points coincide (ℓ < 1e-12 m: n is undefined).
    """
    d = pb - pa
    ell = float(np.linalg.norm(d))
    if ell < 1e-12:
        raise PortGeometryError("a distance port's attachment points coincide (its "
                                "direction is undefined)")
    return ell, (d / ell) @ (Jb - Ja)


def profile_port(profile, x: float) -> tuple[float, float]:
    """``(ℓ, dℓ/dq_j)`` of a profile port ``ℓ = h(q_j)`` at ``q_j = x``."""
    h, dh, _ = profile_terms(profile, x)
    return h, dh


def _attachment(model: CompiledModel, q: np.ndarray, body: str, xyz
                ) -> tuple[np.ndarray, np.ndarray]:
    b = model.record.body_index()[body]
    T, J = frame_jacobian(model, q, b, pin.SE3(np.eye(3), np.array(xyz, dtype=float)))
    return np.array(T.translation), J[3:]


def _varying_port(model: CompiledModel, a: Actuator, q: np.ndarray
                  ) -> tuple[float, np.ndarray]:
    """``(ℓ, J_ℓ (nv,))`` of a distance or profile port at q."""
    if a.distance is not None:
        (pa, Ja), (pb, Jb) = (_attachment(model, q, e.body, e.xyz) for e in a.distance)
        try:
            return distance_port(pa, pb, Ja, Jb)
        except PortGeometryError as err:
            raise PortGeometryError(f"actuator {a.name}: {err}") from None
    name, prof = a.profile
    k = model.edge(name)
    ell, slope = profile_port(prof, float(q[model.q_slice(k)][0]))
    row = np.zeros(model.nv)
    row[int(model.v_offset[k])] = slope
    return ell, row


def port_state(model: CompiledModel, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(ℓ (n_act,), J_ℓ (n_act, nv))`` at q in one pass (ℓ is NaN for velocity ports)."""
    pm = ports(model)
    q = np.asarray(q, dtype=float)
    ell = pm.linear_q @ q
    ell[~pm.holonomic] = np.nan
    if not pm.varying:
        return ell, pm.linear_jacobian
    J = np.array(pm.linear_jacobian)
    acts = model.record.actuators
    for i in pm.varying:
        ell[i], J[i] = _varying_port(model, acts[i], q)
    return ell, J


def port_values(model: CompiledModel, q: np.ndarray) -> np.ndarray:
    """``ℓ = f_ℓ(q)`` (n_act,): port displacements [m or rad]; NaN for velocity ports."""
    return port_state(model, q)[0]


def port_jacobian(model: CompiledModel, q: np.ndarray | None = None) -> np.ndarray:
    """``J_ℓ = D f_ℓ · N`` (n_act, nv) at q.

    Raises:
        ValueError: q is None but a port's Jacobian depends on q.
    """
    if q is None:
        return ports(model).jacobian
    return port_state(model, q)[1]


def actuator_map(model: CompiledModel, E: np.ndarray, q: np.ndarray | None = None
                 ) -> np.ndarray:
    """``L = J_ℓ E`` (n_act, n_u): port speeds from independent speeds.

    Args:
        E: (nv, n_u) the lift at q; q: (nq,) the configuration (required when a port's
            Jacobian depends on q: distance and profile ports).

    Raises:
        ValueError: q is None but a port's Jacobian depends on q.
    """
    return port_jacobian(model, q) @ E


def port_unit(model: CompiledModel, i: int) -> tuple[str, str]:
    """``(displacement unit, effort unit)`` of actuator i: m and N for a linear port (a
    prismatic joint, a tendon over prismatic joints, a distance port, a profile or velocity
    port declared ``unit: m``), rad and N·m otherwise."""
    a = model.record.actuators[i]
    if a.kind == "distance":
        return ("m", "N")
    if a.unit:
        return ("m", "N") if a.unit == "m" else ("rad", "N·m")
    if a.kind == "velocity":
        name, c_k, _ = a.velocity[0]
        linear = is_linear_speed(model.kinds[model.edge(name)].type, c_k)
        return ("m", "N") if linear else ("rad", "N·m")
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

"""Simulation backends: one interface, three engines, a registry (docs/simulate.md).

A backend is the *plant*: it is built from a (possibly mismatched) compiled model, a
partition and a closed initial state ``(q0, v0)`` in rbc coordinates, advances with port
efforts held constant (zero-order hold), and reports what a controller and the summary need
(:class:`Measurement`). It also keeps the energy ledger's work terms:
``work_actuators = Σ fᵀ Δℓ`` per physics step (exact for efforts held over the step; a
velocity port, which has no displacement, by the trapezoid of ``f ℓ̇``, :func:`port_work`) and
``work_passive`` (damping, springs, drive friction).

The registry maps each name to ``module:class`` (resolved on use, so ``reduced`` does not
import MuJoCo).
"""

from __future__ import annotations

import importlib
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from rbc.errors import RbcError, did_you_mean
from rbc.model.compiled import CompiledModel, Partition

#: name → ``module:class``
BACKENDS: dict[str, str] = {
    "reduced": "rbc.sim.backends.reduced:ReducedBackend",
    "mujoco": "rbc.sim.backends.mujoco:MujocoBackend",
    "pinocchio": "rbc.sim.backends.pinocchio:PinocchioBackend",
}


class BackendError(RbcError):
    """Unknown backend, or a model/option the backend cannot run."""


@dataclass(frozen=True, eq=False)
class Measurement:
    """What a backend reports after a control step.

    Attributes:
        ports, port_rates: (n_act,) ℓ [m or rad], ℓ̇ [m/s or rad/s].
        tasks: {task name: (3,) world position [m]}.
        loop_gaps: (n_gaps,) world-frame distances [m] between the two anchors of each
            loop closure (see :attr:`Backend.gap_names`).
        kinetic, potential: kinetic and gravitational potential energy [J].
        q, v: the engine's own state vectors (its coordinate layout).
        efforts: (n_act,) the actual port efforts of the drives (record ``drive`` data,
            :mod:`rbc.sim.drives`) at this state, or None when they are the commands.
    """

    ports: np.ndarray
    port_rates: np.ndarray
    tasks: dict[str, np.ndarray]
    loop_gaps: np.ndarray
    kinetic: float
    potential: float
    q: np.ndarray
    v: np.ndarray
    efforts: np.ndarray | None = None


class Backend(ABC):
    """Base class of the plants (module docstring).

    Args:
        plant: compiled model of the plant (mass/inertia mismatch already applied).
        part: the partition (independent coordinates, length scale).
        q0, v0: (nq,), (nv,) closed initial state in rbc coordinates.
        dt: physics step [s].
    """

    name: ClassVar[str]
    #: names of the loop-gap entries (cut joints or their equality constraints)
    gap_names: tuple[str, ...]

    def __init__(self, plant: CompiledModel, part: Partition, q0: np.ndarray, v0: np.ndarray,
                 dt: float, **options) -> None:
        self.plant, self.part, self.dt = plant, part, dt
        self.work_actuators = 0.0
        self.work_passive = 0.0
        self.work_drive_losses = 0.0
        self.steps = 0

    @classmethod
    def check(cls, plant: CompiledModel, part: Partition) -> None:
        """Raise :class:`BackendError` if this backend cannot run the model (before a run).

        The default refuses drive dynamics (only the reduced backend integrates them, with
        its own check); the exports raise their own errors on build.
        """
        refuse_drives(cls.name, plant)

    @abstractmethod
    def advance(self, f: np.ndarray, steps: int) -> None:
        """Advance ``steps`` physics steps with port efforts f (n_act,) held."""

    @abstractmethod
    def measure(self) -> Measurement:
        """The current measurement."""

    # ---------------------------------------------------- support modes (docs/supports.md)
    #: True for plants with native unilateral contact (a floor): one model for a whole
    #: mode schedule; False: the plant is rebuilt on each mode's model.
    native_contact: ClassVar[bool] = False
    #: True for rebuilt plants whose welds close a gap on their own (a constraint
    #: corrector): a touchdown's new anchor is put on the floor plane below (or above) the
    #: foot (:mod:`rbc.sim.switching`, "Touchdown on the floor"); False: at the measured
    #: support pose (a plant that integrates on the closure manifold cannot start off it).
    floor_anchors: ClassVar[bool] = False

    def base_state(self) -> tuple[np.ndarray, np.ndarray]:
        """``(q, v)`` in the base model's coordinates (rbc order; the tree and the record's
        cut joints; a mode model's support cut coordinates left out)."""
        raise NotImplementedError(f"the {self.name} backend does not report its state")

    def kinetic(self) -> float:
        """Kinetic energy [J]."""
        return self.measure().kinetic

    def support_wrenches(self, names: tuple[str, ...]) -> dict[str, np.ndarray]:
        """``{support: (6,) [n; f]}``: the wrench the ground exerts on each named active
        support, world axes, about the support point [N·m; N]."""
        raise NotImplementedError(f"the {self.name} backend does not report support wrenches")

    def drive_state(self):
        """The state of the drives (record ``drive`` data) to carry into the plant of the
        next mode segment (:mod:`rbc.sim.switching`), or None: a plant without drive
        dynamics, or one that does not carry them (the drives then settle anew)."""
        return None

    def set_drive_state(self, state) -> None:
        """Continue the drives from another plant's :meth:`drive_state` (default: nothing
        to continue)."""
        return None

    #: True for plants that take external forces (:meth:`apply_force`, ``--push``)
    pushable: ClassVar[bool] = False

    def apply_force(self, body: int, force: np.ndarray) -> None:
        """Hold the force (3,) [N] (world axes) at the centre of mass of body ``body``
        (record index) over the following steps, until changed (:mod:`rbc.sim.push`)."""
        raise NotImplementedError(f"the {self.name} backend does not apply external forces")


def refuse_drives(backend: str, plant: CompiledModel) -> None:
    """Raise :class:`BackendError` when the record has drive data (``drive`` on an
    actuator): a plant that ignored them would apply the commands as efforts."""
    names = [a.name for a in plant.record.actuators if a.drive is not None]
    if names:
        raise BackendError(f"the {backend} backend does not integrate drive dynamics "
                           f"({', '.join(names)} have 'drive' data); use the reduced backend")


def port_work(f: np.ndarray, ell0: np.ndarray, ell1: np.ndarray, rate0: np.ndarray,
              rate1: np.ndarray, duration: float) -> float:
    """Work [J] of port efforts f held over an interval: ``f·Δℓ`` at ports with a
    displacement, the trapezoid ``f·(ℓ̇₀ + ℓ̇₁)/2·Δt`` at velocity ports (ℓ NaN)."""
    d = ell1 - ell0
    held = np.isfinite(d)
    out = float(f[held] @ d[held])
    if not np.all(held):
        out += float(f[~held] @ (0.5 * (rate0[~held] + rate1[~held]))) * duration
    return out


def backend_class(name: str) -> type[Backend]:
    """Resolve a registered backend.

    Raises:
        BackendError: unknown name (lists the valid ones and a close spelling).
    """
    if name not in BACKENDS:
        close = did_you_mean(name, BACKENDS)
        hint = f" (did you mean '{close}'?)" if close else ""
        raise BackendError(f"unknown backend '{name}'{hint}; valid: {', '.join(BACKENDS)}")
    module, cls = BACKENDS[name].split(":")
    return getattr(importlib.import_module(module), cls)

"""rbc's public Python API: compile a record, load a bundle, evaluate it in a control loop.

    >>> import rbc
    >>> model = rbc.load("artifacts/stewart.h5")            # doctest: +SKIP
    >>> state = model.close({"P1": 1.1})                     # doctest: +SKIP
    >>> udot = model.forward_dynamics(state, efforts=f)      # doctest: +SKIP

Everything here is a thin layer over the run-time modules (:mod:`rbc.model`,
:mod:`rbc.kernels`, :mod:`rbc.tasks`, :mod:`rbc.sim`): names are resolved and arrays checked
once per call, the numerics are the ones the command line uses (the CLI's ``solve`` and
``forces`` call this module), and nothing is re-parsed per call — a :class:`Model` holds the
compiled model, its Pinocchio trees and (on first use) the numba kernel layout.

Conventions (docs/conventions.md): SI units (m, kg, s, N, N·m, rad); spatial vectors
angular-first ``[ω; v]``, ``[n; f]``; world axes unless stated; ``q`` (nq,) the full
configuration (quaternions ``w, x, y, z`` for spherical and free joints), ``v`` (nv,) all
speeds, ``u`` (n_u,) the independent speeds of the model's partition (``v = E u``),
port efforts ``f`` (n_act,) in actuator order. A :class:`Model` is not thread-safe (it
owns per-state scratch, as a Pinocchio ``Data``); use one per thread.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from rbc.errors import BundleError, RbcError, did_you_mean
from rbc.model.closure import project, unclosed_report
from rbc.model.compiled import CompiledModel, Partition
from rbc.model.dynamics import (
    DynamicsData,
    DynamicsModel,
    Wrench,
    forward_dynamics,
    lift_at,
    reduced_terms,
)
from rbc.model.interfaces import actuator_map, port_unit, port_values
from rbc.model.kinematics import residual
from rbc.model.modes import model_for
from rbc.model.partition import curvature
from rbc.model.reactions import forces_report, port_efforts, solve_loads
from rbc.model.solve import (
    SolveResult,
    configuration_by_joint,
    get_partition,
    resolve_targets,
    solve,
    solve_named,
)

__all__ = ["ApiError", "Bundle", "Lift", "Model", "Ports", "State", "TaskJacobian",
           "Wrench", "compile", "load"]


# The finiteness checks square a vector in one dot product (the cheapest test that every
# entry is finite); entries beyond ~1e154 overflow it, and the exact check that follows then
# accepts them: that overflow is expected here and not worth a warning.
warnings.filterwarnings("ignore", "overflow encountered in dot", RuntimeWarning, r"rbc\.api")

#: Validated wrenches a model remembers (by identity) before it forgets them all.
MAX_CHECKED = 256


class ApiError(RbcError):
    """An API call with arguments that do not fit the model: a wrong shape, an unknown name
    (the valid ones listed), a state of another model, an open configuration."""


# ---------------------------------------------------------------------------- results
@dataclass(frozen=True, eq=False)
class State:
    """A closed state of one model's partition: what every evaluation takes.

    Made by :meth:`Model.close` or :meth:`Model.state`; immutable (the lift is evaluated
    once, on first use, and kept).

    Attributes:
        q: (nq,) configuration on the closure manifold [rad, m; quaternions w, x, y, z].
        u: (n_u,) independent speeds [rad/s, m/s], in :attr:`Model.independent` order.
        residual: ‖ρ(q)‖∞ [rad, m], the closure residual over every loop row.
        partition: name of the partition the state belongs to.
        solve: how :meth:`Model.close` reached it (:class:`rbc.model.solve.SolveResult`:
            ``iterations``, ``steps``, ``notes`` on an adjusted guess, ``events`` of
            re-partitions on the way and the ``partition`` that ended it); None from
            :meth:`Model.state`.
    """

    q: np.ndarray
    u: np.ndarray
    residual: float
    partition: str
    _owner: Partition = field(repr=False)
    solve: SolveResult | None = field(default=None, repr=False)
    _cache: dict = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        for name in ("q", "u"):
            a = np.array(getattr(self, name), dtype=float)
            a.setflags(write=False)
            object.__setattr__(self, name, a)


@dataclass(frozen=True, eq=False)
class Lift:
    """The motion lift at a state (DESIGN.md §5).

    Attributes:
        E: (nv, n_u) ``v = E u``: all speeds from the independent ones.
        Edu: (nv,) ``Ė u`` [rad/s², m/s²]: all accelerations are ``v̇ = E u̇ + Ė u``.
        v: (nv,) all speeds ``E u`` [rad/s, m/s].
    """

    E: np.ndarray
    Edu: np.ndarray
    v: np.ndarray


@dataclass(frozen=True, eq=False)
class TaskJacobian:
    """A task at a state (:mod:`rbc.tasks.charts`).

    Attributes:
        task: the task specification (a record task ``NAME``, ``NAME:position``,
            ``NAME:xy``/``xz``/``yz`` or ``joint:COORDINATE``).
        value: the task value: a position (3,) [m] in world axes; a pose (7,) ``[p; w x y
            z]``; a planar position (2,); a joint coordinate (1,) [rad or m].
        J: (m, n_u) the task Jacobian: task velocity from independent speeds — a pose's rows
            are ``[ω; ṗ]`` (world angular velocity, then the frame origin's velocity), a
            position's ``ṗ`` [m/s per unit u].
        rows: (m,) row names (``tip.x``, ``tool.rz``, …).
    """

    task: str
    value: np.ndarray
    J: np.ndarray
    rows: tuple[str, ...]


@dataclass(frozen=True, eq=False)
class Ports:
    """The actuator ports at a state (DESIGN.md §6).

    Attributes:
        names: (n_act,) actuator names.
        values: (n_act,) port displacements ℓ [m or rad] (cylinder length, joint angle, or a
            tendon's ``Σ c_k q_k``).
        rates: (n_act,) port speeds ``ℓ̇ = L u`` [m/s or rad/s].
        L: (n_act, n_u) the actuator map ``L = J_ℓ E``; virtual power ``fᵀ ℓ̇ = uᵀ Lᵀ f``.
        units: (n_act,) ``(displacement unit, effort unit)`` per port: ``("m", "N")`` or
            ``("rad", "N·m")``.
    """

    names: tuple[str, ...]
    values: np.ndarray
    rates: np.ndarray
    L: np.ndarray
    units: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class Bundle:
    """A compiled bundle on disk (what :func:`compile` returns).

    Attributes:
        path: the bundle file (HDF5, docs/bundle.md).
        timings: ``((pass name, seconds), …)`` wall time per pass and for the write.
        notes: notes of the parse pass (adjustments a user should know about), one line each.
        dumps: ``((pass name, text), …)`` IR dumps asked for with ``dump_after``.
    """

    path: Path
    timings: tuple[tuple[str, float], ...] = ()
    notes: tuple[str, ...] = ()
    dumps: tuple[tuple[str, str], ...] = ()

    def load(self, partition: str | None = None) -> Model:
        """The bundle as a :class:`Model` (:func:`load`)."""
        return load(self.path, partition)


# ---------------------------------------------------------------------------- entry points
def compile(record: str | Path, output: str | Path, *,  # noqa: A001 - the API's verb
            partitions: Mapping[str, Sequence[str]] | Sequence[tuple[str, Sequence[str]]] = (),
            modes: Mapping[str, Sequence[str]] | Sequence[tuple[str, Sequence[str]]] = (),
            all_modes: bool = False, length_scale: float | None = None,
            verify: bool = True, dump_after: Sequence[str] = ()) -> Bundle:
    """Compile a physical record into a bundle file (what ``rbc compile`` does).

    Args:
        record: the record (YAML, schema v1; docs/records.md).
        output: the bundle to write (atomically; never the record itself).
        partitions: extra named partitions ``{name: (joint, …)}`` whose joints are
            independent; the ``default`` partition is always computed.
        modes: named support modes ``{name: (support, …)}`` (docs/supports.md).
        all_modes: also compile ``free`` and every support set with a valid partition.
        length_scale: length [m] scaling the rank analysis (default: from the record).
        verify: check each pass's post-conditions.
        dump_after: pass names whose IR dump is kept in :attr:`Bundle.dumps`.

    Returns:
        The :class:`Bundle` (``.load()`` gives the :class:`Model`).

    Raises:
        RecordError: the record is malformed or physically inconsistent (names the field).
        CompileError, ClosureError: the record cannot be compiled or closed.
        UsageError: an unknown pass, joint or support name; ``output`` is the record.
    """
    from rbc.compiler import compile_to_file
    from rbc.safeio import check_outputs

    record, output = Path(record), Path(output)
    check_outputs({"record": record}, {"output": output})
    report = compile_to_file(record, output, verify=verify, dump_after=tuple(dump_after),
                             partitions=_pairs(partitions), length_scale=length_scale,
                             modes=_pairs(modes), all_modes=all_modes)
    return Bundle(output, tuple(report.timings), tuple(report.stages["parse"].notes),
                  tuple(report.dumps))


def load(path: str | Path | Bundle, partition: str | None = None) -> Model:
    """Load a bundle written by ``rbc compile`` or :func:`compile` (trusting nothing in it).

    Args:
        path: the bundle file (or a :class:`Bundle`).
        partition: the stored partition whose independent coordinates ``u`` are used
            (default: ``default``).

    Raises:
        BundleError: missing, not a bundle, another schema version, corrupted or tampered.
        SolveError: no such partition (the stored ones listed).
    """

    if isinstance(path, Bundle):
        path = path.path
    if not isinstance(path, (str, Path)):
        raise ApiError(f"load: expected a bundle path, got {type(path).__name__}")
    if partition is not None:
        _name(partition, "partition")
    kin = CompiledModel.from_bundle(path)
    try:
        part = get_partition(kin, partition)
    except BundleError as err:  # name the file (the partition check knows only the model)
        if str(path) in str(err):
            raise
        raise BundleError(f"{path}: {err}") from None
    return Model(kin, part, source=Path(path))


def _pairs(x) -> tuple[tuple[str, tuple[str, ...]], ...]:
    items = x.items() if isinstance(x, Mapping) else x
    return tuple((str(n), tuple(str(j) for j in js)) for n, js in items)


# ---------------------------------------------------------------------------- the model
class Model:
    """A compiled robot and one of its partitions, ready for evaluation (:func:`load`).

    Attributes:
        compiled: the immutable :class:`rbc.model.compiled.CompiledModel` (the internals).
        source: the bundle it was loaded from.
    """

    def __init__(self, compiled: CompiledModel, partition: Partition, *,
                 source: Path | None = None, _dynamics: Any = None,
                 _start: np.ndarray | None = None) -> None:
        self.compiled, self.source = compiled, source
        self._part = partition
        self._dynamics = _dynamics  # the Pinocchio trees, built on first use (:attr:`_dm`)
        self._scratch: DynamicsData | None = None
        self._checked: dict[int, Wrench] = {}  # wrenches validated (by identity)
        self._kernel: Any = None  # built on first use; False when the kernels cannot run it
        self._start = partition.q_ref if _start is None else np.array(_start, dtype=float)
        k = compiled
        self._independent = tuple(k.v_names[int(j)] for j in partition.independent)
        self._actuators = tuple(a.name for a in k.record.actuators)
        self._nu, self._nact = len(self._independent), len(self._actuators)
        self._bodies = k.record.body_index()

    @property
    def _dm(self) -> DynamicsModel:
        if self._dynamics is None:
            self._dynamics = DynamicsModel.build(self.compiled)
        return self._dynamics

    @property
    def _data(self) -> DynamicsData:
        if self._scratch is None:
            self._scratch = DynamicsData.of(self._dm)
        return self._scratch

    def __repr__(self) -> str:
        return (f"<rbc.Model {self.name!r}: partition {self.partition!r}, nq={self.nq} "
                f"nv={self.nv} n_u={self.nu} n_act={len(self.actuators)}>")

    # ------------------------------------------------------------------ names and sizes
    @property
    def name(self) -> str:
        """The robot's name (the record's ``name``)."""
        return self.compiled.record.name

    @property
    def partition(self) -> str:
        """Name of the partition in use."""
        return self._part.name

    @property
    def partitions(self) -> tuple[str, ...]:
        """Names of the stored partitions (:meth:`with_partition`)."""
        return tuple(self.compiled.partitions)

    @property
    def modes(self) -> tuple[str, ...]:
        """Names of the compiled support modes (:meth:`with_mode`; docs/supports.md)."""
        return tuple(self.compiled.modes)

    @property
    def nq(self) -> int:
        """Length of q."""
        return self.compiled.nq

    @property
    def nv(self) -> int:
        """Length of v (all speeds)."""
        return self.compiled.nv

    @property
    def nu(self) -> int:
        """Length of u (independent speeds of the partition)."""
        return self._nu

    @property
    def coordinates(self) -> tuple[str, ...]:
        """(nv,) names of the velocity coordinates (``joint`` or ``joint.suffix``)."""
        return self.compiled.v_names

    @property
    def independent(self) -> tuple[str, ...]:
        """(n_u,) names of the independent coordinates, the order of u."""
        return self._independent

    @property
    def actuators(self) -> tuple[str, ...]:
        """(n_act,) actuator names, the order of port efforts f."""
        return self._actuators

    @property
    def tasks(self) -> tuple[str, ...]:
        """Names of the record's tasks (:meth:`task_jacobian`)."""
        return tuple(t.name for t in self.compiled.record.tasks)

    @property
    def bodies(self) -> tuple[str, ...]:
        """Body names (for :class:`Wrench`)."""
        return tuple(self._bodies)

    # ------------------------------------------------------------------ other views
    def with_partition(self, name: str) -> Model:
        """The same robot with another stored partition's independent coordinates.

        Raises:
            SolveError: no such partition (the stored ones listed).
        """

        return Model(self.compiled, get_partition(self.compiled, _name(name, "partition")),
                     source=self.source,
                     _dynamics=self._dynamics)

    def with_mode(self, name: str, anchors: np.ndarray | None = None) -> Model:
        """The robot in a compiled support mode: the base model plus one closure to the
        world per active support (docs/supports.md), with the mode's partition.

        Args:
            name: a mode of :attr:`modes`.
            anchors: (k, 7) world poses ``[x y z qw qx qy qz]`` of the k active supports'
                anchors, in the mode's support order (default: their poses at the reference
                configuration). Other anchors start :meth:`close` from the reference
                configuration projected onto their closure manifold.

        Raises:
            ApiError: unknown mode (the compiled ones listed) or anchors of a wrong shape.
            ClosureError: the anchors cannot be reached.
        """

        if self.compiled.supports:
            raise ApiError("with_mode: this model is already a support mode; call it on the "
                           "model rbc.load returned")
        info = self.compiled.modes.get(_name(name, "mode"))
        if info is None:
            raise ApiError(_unknown("a compiled support mode", name, self.modes,
                                    "compile with rbc.compile(…, all_modes=True) or "
                                    "modes={NAME: supports}; rbc compile --modes all"))
        if anchors is not None:
            anchors = _array(anchors, (len(info.supports), 7), "anchors")
        kin = model_for(self.compiled, info, anchors)
        start = None
        if anchors is not None:
            start = project(kin, np.array(info.partition.q_ref),
                            length=info.partition.length_scale)
        return Model(kin, kin.partitions[info.partition.name], source=self.source,
                     _start=start)

    # ------------------------------------------------------------------ states
    def close(self, independent: Mapping[str, float] | Sequence[float] | np.ndarray | None
              = None, *, speeds: Mapping[str, float] | Sequence[float] | np.ndarray | None
              = None, guess: State | Mapping[str, Sequence[float] | float] | None = None
              ) -> State:
        """Close the loops with independent coordinates prescribed (``rbc solve``).

        The mechanism is continued from a closed start to the prescribed values on one
        assembly branch (docs/kinematics.md, "solve"): from the partition's reference
        configuration, or from ``guess``.

        Args:
            independent: values [rad or m] of independent coordinates: a mapping
                ``{name: value}`` (the others keep their start values) or an (n_u,) array in
                :attr:`independent` order. None: the start configuration itself.
            speeds: the independent speeds u [rad/s or m/s] of the state: (n_u,) or
                ``{name: value}`` (default 0).
            guess: a previous :class:`State` of this model (the continuation starts there,
                on its branch: the cheap choice in a control loop), or ``{name: value(s)}``
                of any coordinates (a joint's record ``initial`` layout), projected onto the
                closure manifold first (``rbc solve --guess``).

        Returns:
            The closed :class:`State` (‖ρ‖∞ ≤ 1e-13 rad or m).

        Raises:
            SolveError: an unknown or dependent coordinate, a value outside the joint limits
                (the valid names listed).
            ClosureError: the loops cannot be closed there (a singular configuration or the
                edge of the workspace lies between; names the open chords).
            ApiError: an array of a wrong shape; a state of another model.
        """

        k, part = self.compiled, self._part
        u = self._vector(speeds, self._independent, "speeds", "an independent coordinate")
        if independent is None:
            values: Mapping[str, float] = {}
        elif isinstance(independent, Mapping):
            values = _values(independent, "independent")
        else:
            x = _array(independent, (self._nu,), "independent")
            values = dict(zip(self._independent, x.tolist(), strict=True))
        if isinstance(guess, State):
            r = solve(k, part, resolve_targets(k, part, values), self._own(guess, "guess").q)
        elif self._start is part.q_ref:  # what `rbc solve` runs
            r = solve_named(k, part.name, values,
                            None if guess is None else _guesses(guess, "guess"))
        elif guess is None:  # a mode at other anchors: from the projected reference
            r = solve(k, part, resolve_targets(k, part, values), self._start)
        else:
            raise ApiError("guess: at anchors other than the reference, give a State of this "
                           "model (a closed start) rather than coordinate values")
        return State(r.q, u, r.residual, part.name, part, r)

    def state(self, q: np.ndarray, u: Mapping[str, float] | np.ndarray | None = None, *,
              tol: float = 1e-9) -> State:
        """A :class:`State` from a configuration obtained elsewhere (a log, an estimator).

        Args:
            q: (nq,) configuration; it must close to ``tol``.
            u: (n_u,) independent speeds or ``{name: value}`` (default 0).
            tol: largest accepted closure residual ‖ρ(q)‖∞ [rad, m] (default 1e-9: the
                residual of a stored, exported and re-read configuration is ~1e-15).

        Raises:
            ApiError: a wrong shape, or q does not close (the open chords named; use
                :meth:`close` to close it).
        """

        q = _array(q, (self.nq,), "q")
        tol = _finite(tol, "tol")
        rho = residual(self.compiled, q)
        res = float(np.abs(rho).max(initial=0.0))
        if not res <= tol:
            raise ApiError(f"state: q does not close (‖ρ‖∞ = {res:.3g} > tol {tol:g}); open: "
                           f"{unclosed_report(self.compiled, rho, tol)}; Model.close projects "
                           "and closes a configuration")
        u = self._vector(u, self._independent, "u", "an independent coordinate")
        return State(q, u, res, self._part.name, self._part)

    def with_speeds(self, state: State, speeds: Mapping[str, float] | np.ndarray) -> State:
        """The same configuration with other independent speeds (the lift is kept)."""
        s = self._own(state, "state")
        u = self._vector(speeds, self._independent, "speeds", "an independent coordinate")
        out = State(s.q, u, s.residual, s.partition, s._owner, s.solve)
        if "lift" in s._cache:
            out._cache["lift"] = s._cache["lift"]
        return out

    def joint_values(self, state: State) -> dict[str, float | list[float]]:
        """``{joint: value}`` of every record joint at the state [rad or m]; multi-coordinate
        joints give a list in their q layout (a spherical joint's quaternion w, x, y, z)."""

        return configuration_by_joint(self.compiled, self._own(state, "state").q)

    # ------------------------------------------------------------------ kinematics
    def lift(self, state: State) -> Lift:
        """The lift at the state: ``E`` (nv, n_u), ``Ė u`` (nv,) and ``v = E u`` (nv,).

        Raises:
            ApiError: a state of another model.
        """

        s = self._own(state, "state")
        L = self._lift_of(s)
        v, edu = curvature(self.compiled, self._part, s.q, s.u, L)
        return Lift(L.E, edu, v)

    def port_map(self, state: State) -> Ports:
        """The actuator ports at the state: displacements ℓ, speeds ℓ̇ and ``L = J_ℓ E``."""

        s = self._own(state, "state")
        L = actuator_map(self.compiled, self._lift_of(s).E, s.q)
        return Ports(self._actuators, port_values(self.compiled, s.q), L @ s.u, L,
                     tuple(port_unit(self.compiled, i) for i in range(self._nact)))

    def task_jacobian(self, state: State, task: str) -> TaskJacobian:
        """A task's value and Jacobian ``J_x = D f_x N E`` (m, n_u) at the state
        (docs/tasks.md).

        Args:
            task: ``NAME`` (a record task of :attr:`tasks`, in its kind: ``position`` 3 rows,
                ``pose`` 6 rows angular-first), ``NAME:position``, ``NAME:xy``/``xz``/``yz``
                (two world axes) or ``joint:COORDINATE`` (one coordinate).

        Raises:
            TaskError: an unknown task or coordinate (the valid ones listed).
        """
        from rbc.tasks.charts import Desired, chart

        s = self._own(state, "state")
        c = chart(self.compiled, _name(task, "task"))
        x = c.value(self.compiled, s.q)
        ts = c.state(self.compiled, s.q, self._lift_of(s).E, Desired(x, np.zeros(c.dim)))
        return TaskJacobian(task, x, ts.J, c.row_names())

    # ------------------------------------------------------------------ dynamics
    def forward_dynamics(self, state: State, efforts: Mapping[str, float] | np.ndarray
                         | None = None, wrenches: Sequence[Wrench] = ()) -> np.ndarray:
        """Independent accelerations ``u̇ = M_r⁻¹ (τ_r − h_r)`` (n_u,) [rad/s², m/s²].

        The reduced dynamics ``M_r u̇ + h_r = Eᵀ τ`` on the closure manifold with gravity,
        the record's passive elements (damping, springs, drive friction, Coulomb friction),
        the port efforts and external wrenches (docs/dynamics.md). Evaluated by the numba
        kernel (:mod:`rbc.kernels`) when there are no wrenches and the kernels support the
        model, else by the reference path (:func:`rbc.model.dynamics.reduced_terms`); the
        two agree to 1e-13 (tests/kernels).

        Args:
            efforts: port efforts f [N or N·m]: (n_act,) in :attr:`actuators` order or
                ``{actuator: value}`` (default 0).
            wrenches: external wrenches (:class:`Wrench`: body, point in body coordinates
                [m], ``[n; f]`` in world axes [N·m; N]).

        Raises:
            SingularInertiaError: ``M_r`` is not positive definite (the coordinates lacking
                inertia named).
            ApiError: a wrong shape or name; a state of another model.
        """
        s = self._own(state, "state")
        f = self._vector(efforts, self._actuators, "efforts", "an actuator")
        if type(wrenches) in (tuple, list) and not wrenches:
            km = self._kernel if self._kernel is not None else self._build_kernel()
            if km:
                try:
                    return km.forward_dynamics(s.q, s.u, f)
                except self._kernel_error:
                    pass  # the reference path raises the user-facing error
        t = reduced_terms(self._dm, self._data, self._part, s.q, s.u, f,
                          self._wrenches(wrenches), lifted=self._lift_of(s))
        return forward_dynamics(self._dm, t)

    def inverse_dynamics(self, state: State, udot: Mapping[str, float] | np.ndarray
                         | None = None, wrenches: Sequence[Wrench] = ()) -> np.ndarray:
        """Port efforts f (n_act,) [N or N·m] that produce the independent accelerations
        ``udot`` at the state with the loads of :meth:`forward_dynamics` (gravity, passive
        elements, wrenches): ``Lᵀ f = M_r u̇ + h_r − τ_r``, minimum-norm when over-actuated.

        Args:
            udot: (n_u,) or ``{name: value}`` [rad/s², m/s²] (default 0: statics or
                steady motion).

        Raises:
            ForcesError: the actuators cannot produce ``udot`` (an under-actuated
                direction; names its independent coordinates).
            ApiError: a wrong shape or name; a state of another model.
        """
        s = self._own(state, "state")
        a = self._vector(udot, self._independent, "udot", "an independent coordinate")
        bare = reduced_terms(self._dm, self._data, self._part, s.q, s.u, None,
                             self._wrenches(wrenches), lifted=self._lift_of(s))
        return port_efforts(self._dm, bare, a)[0]

    def reactions(self, state: State, *, udot: Mapping[str, float] | np.ndarray | None = None,
                  efforts: Mapping[str, float] | np.ndarray | None = None,
                  wrenches: Sequence[Wrench] = ()):
        """Every joint's reaction wrench, tree and cut, at the state (``rbc forces``;
        docs/dynamics.md, "Joint reactions").

        Give ``efforts`` for forward dynamics (the accelerations follow) or ``udot`` for
        inverse dynamics (the efforts follow; default: statics or steady motion).

        Returns:
            :class:`rbc.model.reactions.LoadSolution`: ``mode``, ``udot`` (n_u,),
            ``efforts`` (n_act,), ``a`` (nv,) all accelerations and ``reactions.joints``:
            per record joint the wrench ``[n; f]`` (6,) the parent exerts on the child, in
            world axes about the joint origin ``point`` (3,) [m], its ``along`` and
            ``across`` parts and whether it is ``indeterminate`` (minimum-norm then).

        Raises:
            ApiError: both ``udot`` and ``efforts``; a wrong shape or name.
            ForcesError: the actuators cannot produce ``udot``.
        """
        s = self._own(state, "state")
        if udot is not None and efforts is not None:
            raise ApiError("reactions: udot and efforts exclude each other (rbc forces: "
                           "--acceleration and --effort): accelerations ask for the efforts "
                           "that produce them (inverse dynamics), efforts for the "
                           "accelerations they produce (forward dynamics)")
        a = (None if udot is None else
             self._vector(udot, self._independent, "udot", "an independent coordinate"))
        f = (None if efforts is None else
             self._vector(efforts, self._actuators, "efforts", "an actuator"))
        return solve_loads(self._dm, self._data, self._part, s.q, s.u, udot=a, efforts=f,
                           wrenches=self._wrenches(wrenches))

    def forces_report(self, solution) -> dict:
        """The ``rbc forces --json`` document of a :meth:`reactions` result (docs/cli.md)."""

        return forces_report(self.compiled, self._part, solution)

    # ------------------------------------------------------------------ plants
    def plant(self, state: State, backend: str = "mujoco", dt: float = 1e-3, **options):
        """A simulation plant started at the state (docs/simulate.md, "Backends").

        Args:
            backend: ``mujoco`` (the exported MJCF stepped by MuJoCo), ``pinocchio`` (the
                tree with the loops as constraints) or ``reduced`` (this model).
            dt: physics step [s] (> 0).
            options: backend options (e.g. ``integrator="rk4"`` for ``reduced``).

        Returns:
            The :class:`rbc.sim.backends.Backend`: ``advance(f, steps)`` holds port efforts
            f (n_act,) for ``steps`` physics steps; ``measure()`` returns ports ℓ, ℓ̇, task
            positions, loop gaps and energies (:class:`rbc.sim.backends.Measurement`).

        Raises:
            BackendError: unknown backend (the valid ones listed) or a model it cannot run.
        """
        from rbc.safeio import check_number
        from rbc.sim.backends import backend_class

        s = self._own(state, "state")
        check_number("dt", _finite(dt, "dt"), gt=0)
        cls = backend_class(_name(backend, "backend"))
        cls.check(self.compiled, self._part)
        return cls(self.compiled, self._part, s.q, self.lift(s).v, float(dt), **options)

    # ------------------------------------------------------------------ helpers
    def vector(self, values: Mapping[str, float] | Sequence[float] | np.ndarray | None,
               over: str, label: str | None = None) -> np.ndarray:
        """An array over the independent coordinates (``over="independent"``, (n_u,)) or
        the actuators (``over="actuators"``, (n_act,)) from ``{name: value}`` (zeros
        elsewhere) or an array of that shape; ``label`` names the argument in errors.

        Raises:
            ApiError: an unknown name (the valid ones listed), a wrong shape, a non-finite
                value, or an unknown ``over``.
        """
        over = _name(over, "vector: over")
        if over == "independent":
            return self._vector(values, self._independent, label or "independent",
                                f"an independent coordinate of partition '{self.partition}'")
        if over == "actuators":
            return self._vector(values, self._actuators, label or "efforts", "an actuator")
        raise ApiError(f"vector: over='{over}': valid choices: independent, actuators")

    def _vector(self, values, names: tuple[str, ...], label: str, what: str) -> np.ndarray:
        if (type(values) is np.ndarray and values.dtype == np.float64  # a control loop's
                and values.shape == (len(names),)  # case first: no conversions, no ABCs
                and math.isfinite(values.dot(values))):
            return values
        if values is None:
            return np.zeros(len(names))
        if isinstance(values, Mapping):
            out = np.zeros(len(names))
            index = {n: i for i, n in enumerate(names)}
            for name, x in values.items():
                i = index.get(_name(name, f"{label} key"))
                if i is None:
                    raise ApiError(_unknown(what, name, names, label=label))
                out[i] = _finite(x, f"{label} {name}")
            return out
        return _array(values, (len(names),), label)

    def _wrenches(self, wrenches: Sequence[Wrench]) -> tuple[Wrench, ...]:
        if not isinstance(wrenches, (list, tuple)):
            raise ApiError(f"wrenches: expected a list of rbc.Wrench(body, point, wrench), got "
                           f"{type(wrenches).__name__}")
        out = []
        for w in wrenches:
            if self._checked.get(id(w), self) is w:  # validated before (immutable): a loop's
                out.append(w)
                continue
            if not isinstance(w, Wrench):
                raise ApiError(f"wrenches: expected rbc.Wrench(body, point, wrench), got "
                               f"{type(w).__name__}")
            b = self._bodies.get(_name(w.body, "wrench: body"))
            if b is None:
                close = did_you_mean(w.body, self.bodies)
                raise ApiError(f"wrench on '{w.body}': unknown body"
                               + (f" (did you mean '{close}'?)" if close else "")
                               + f"; bodies: {', '.join(self.bodies)}")
            if self.compiled.record.bodies[b].kind == "fixed":
                raise ApiError(f"wrench on '{w.body}': it is welded to the world; a wrench on "
                               "it loads no joint of the mechanism")
            _array(w.point, (3,), f"wrench on '{w.body}': point")
            _array(w.wrench, (6,), f"wrench on '{w.body}': wrench")
            if len(self._checked) >= MAX_CHECKED:
                self._checked.clear()
            if isinstance(w.point, tuple) and isinstance(w.wrench, tuple):  # immutable only:
                self._checked[id(w)] = w  # an array field can change in place; kept alive
            out.append(w)
        return tuple(out)

    def _own(self, state: State, label: str) -> State:
        if not isinstance(state, State):
            raise ApiError(f"{label}: expected an rbc.State (from Model.close or Model.state), "
                           f"got {type(state).__name__}")
        if state._owner is not self._part:
            raise ApiError(f"{label}: the state belongs to partition '{state.partition}' of "
                           "another model; make states with this model's close() or state()")
        return state

    def _lift_of(self, s: State):
        L = s._cache.get("lift")
        if L is None:
            L = s._cache["lift"] = lift_at(self._dm, self._data, self._part, s.q)
        return L

    def _build_kernel(self):
        """The numba evaluator of this partition, or False where the kernels do not cover
        the model (the reference path evaluates it then)."""
        from rbc.kernels.evaluator import KernelError, KernelModel
        from rbc.kernels.layout import LayoutError

        self._kernel_error = KernelError
        try:
            self._kernel = KernelModel(self.compiled, self._part, self._dm.tree)
        except LayoutError:
            self._kernel = False
        return self._kernel


# ---------------------------------------------------------------------------- checks
def _array(x, shape: tuple[int, ...], label: str) -> np.ndarray:
    """``x`` as a float64 array of ``shape``, every entry finite (else ApiError)."""
    try:
        a = np.asarray(x, dtype=float)
    except (TypeError, ValueError):
        raise ApiError(f"{label}: expected numbers of shape {shape}, got "
                       f"{type(x).__name__}") from None
    if a.shape != shape:
        raise ApiError(f"{label}: expected shape {shape}, got {a.shape}")
    # one dot product is finite iff every entry is (short of overflow beyond ~1e154, which
    # the exact check below then clears): ~10x cheaper than np.isfinite on tiny arrays
    if not math.isfinite(a.ravel().dot(a.ravel())) and not np.all(np.isfinite(a)):
        raise ApiError(f"{label}: every entry must be finite, got {a.tolist()}")
    return a


def _name(x, label: str) -> str:
    """``x`` if it is a string (a name), else ApiError."""
    if not isinstance(x, str):
        raise ApiError(f"{label}: expected a name (a string), got {type(x).__name__} {x!r}")
    return x


def _values(x: Mapping, label: str) -> dict[str, float]:
    """``{name: finite number}`` from a mapping (names and values checked)."""
    return {_name(k, f"{label} key"): _finite(v, f"{label} {k}") for k, v in x.items()}


def _guesses(x, label: str) -> dict[str, tuple[float, ...]]:
    """``{name: (value, …)}`` from ``{name: number or numbers}``."""
    if not isinstance(x, Mapping):
        raise ApiError(f"{label}: expected a State of this model or {{name: value(s)}}, got "
                       f"{type(x).__name__}")
    out = {}
    for k, v in x.items():
        k = _name(k, f"{label} key")
        seq = v if isinstance(v, (list, tuple, np.ndarray)) else [v]
        out[k] = tuple(_finite(e, f"{label} {k}") for e in np.ravel(np.asarray(seq, object)))
    return out


def _finite(x, label: str) -> float:
    try:
        v = float(x)
    except (TypeError, ValueError):
        v = math.nan
    if not math.isfinite(v):
        raise ApiError(f"{label}: expected a finite number, got {x!r}")
    return v


def _unknown(what: str, name: str, names: Sequence[str], hint: str = "", *,
             label: str | None = None) -> str:
    """``LABEL NAME: not WHAT (did you mean …?); valid: …`` (one message shape)."""
    close = did_you_mean(name, names)
    return (f"{label + ' ' if label else ''}{name}: not {what}"
            + (f" (did you mean '{close}'?)" if close else "")
            + f"; valid: {', '.join(names) or 'none'}" + (f" ({hint})" if hint else ""))

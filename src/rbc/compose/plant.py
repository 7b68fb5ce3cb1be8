"""Engine plants of a composed mode: the Pinocchio plant and the ideal and realistic MuJoCo
plants (issue #20 item 3; docs/composition.md, "Plants").

A composed mode runs on an engine through the single-robot backends
(:mod:`rbc.sim.backends.pinocchio`, :mod:`rbc.sim.backends.mujoco`), given the model the
engine integrates:

* **Pinocchio**: the mode model itself — every member at its placement in one
  ``pinocchio.Model`` (the flat model's spanning forest), the members' internal cut joints,
  the hand links (a ``CONTACT_3D`` between the two palm points per ball link) and the sole
  welds (``CONTACT_6D`` to the anchors) as rigid constraints, Baumgarte 400 s⁻², 40 s⁻¹.
* **MuJoCo**: the flat model plus the mode's **link** chords only (one MJCF: the members'
  trees under one world, the members' loops and the hand links as regularised equalities);
  the supports are the exporter's contact geoms on a floor — unilateral frictional contact,
  rubber on wood (the record's μ 0.8), torsional friction (``condim 4``), elliptic cones,
  5 ms contact time constant (:data:`rbc.backends.mjcf_export.CONTACT_SOLREF`).

**Ideal and realistic.** The ideal plants have no Coulomb friction (the record's drive and
joint Coulomb friction is removed; viscous damping, regularised constraints and frictional
contacts are kept). The realistic MuJoCo plant (:class:`Realism`) adds, as plant-side
effects only (the controller's model is unchanged): Coulomb friction in every drive (the
record's ``coulomb``) and in every passive bearing (:attr:`Realism.bearing_rotary` /
``bearing_linear`` per MuJoCo joint coordinate: MuJoCo's ``frictionloss``); a first-order
lag of :attr:`Realism.lag` on every applied effort and the motor torque–speed limit — full
effort up to :attr:`Realism.knee` of the no-load speed (the actuator's ``speed_limit``),
falling linearly to zero at it — both as drive data (:class:`rbc.ir.record.Drive`:
``stall = peak / (1 − knee)``, the line ``stall (1 − |ℓ̇|/ℓ̇₀)`` clipped to the peak by the
motors' ctrlrange) stepped with the physics (:class:`rbc.sim.drives.SteppedDrives`); and
zero-mean Gaussian noise on the measured state (:class:`Noise`), drawn independently at
every control update from a generator with a fixed seed.

**Measurement** (what a controller reads; the same coordinates as on the reduced plant): the
engine's tree state (:meth:`tree_state`) — with noise on the realistic plant: every rotary
coordinate, every screw (prismatic) coordinate, the base pose through the SE(3) exponential
(``Model.integrate``) and the base twist — then the cut-joint chart coordinates
reconstructed from the measured body poses (:func:`rbc.model.modes.cut_coordinates`: the
members' loops and the link charts; support charts by :func:`rbc.sim.schedule.mode_state`),
and every speed from the compiled lift of the measured independent speeds,
``v = E(q) v[independent]``; port displacements and rates from that state. The pose pass,
the noise's integration and the lift run on the run-time kernels where their layout takes
the model (:func:`measurement_kernel`). Energies, task
positions and loop gaps are the engine's (true) values.

**Wrenches** (``links/<l>/wrench``, ``supports/<s>/wrench``, :class:`PlantWrenchLog`): the
plant's own — Pinocchio's constraint forces of the last step, MuJoCo's contact forces summed
per sole geom and the ``connect`` forces of the hand links at the measured instant.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from rbc.compose.flat import mode_model
from rbc.compose.runlog import WrenchLog
from rbc.ir.record import Drive
from rbc.model.compiled import CompiledModel
from rbc.model.interfaces import port_state
from rbc.model.modes import cut_coordinates
from rbc.sim.backends import Backend, BackendError, Measurement

#: Plant variants of ``rbc simulate --plant`` on a composed bundle.
PLANTS = ("ideal", "realistic")


@dataclass(frozen=True)
class Noise:
    """Standard deviations of the measurement noise (issue #20 item 3), SI units.

    Attributes:
        rotary, rotary_rate: revolute, universal and ball coordinates [rad, rad/s].
        screw, screw_rate: prismatic (screw) coordinates [m, m/s].
        base_position, base_rotation: the floating base pose, through the SE(3)
            exponential [m, rad]; base_linear, base_angular: its twist [m/s, rad/s].
    """

    rotary: float = 1e-4
    rotary_rate: float = 1e-2
    screw: float = 5e-6
    screw_rate: float = 1e-3
    base_position: float = 2.5e-4
    base_rotation: float = 2.5e-4
    base_linear: float = 5e-3
    base_angular: float = 5e-3

    def sigmas(self, k: CompiledModel) -> tuple[np.ndarray, np.ndarray]:
        """``(σ_q, σ_v)`` (nv_tree,) per tree velocity coordinate: a free root's tangent is
        ``[ω; v]`` (angular first, rbc's order), other joints rotary or screw."""
        sq, sv = np.zeros(k.nv_tree), np.zeros(k.nv_tree)
        for e in range(len(k.kinds)):
            sl = k.v_slice(e)
            if sl.start >= k.nv_tree or sl.stop == sl.start:
                continue
            t = k.edge_types[e]
            if t == "free":
                sq[sl] = [self.base_rotation] * 3 + [self.base_position] * 3
                sv[sl] = [self.base_angular] * 3 + [self.base_linear] * 3
            elif t == "prismatic":
                sq[sl], sv[sl] = self.screw, self.screw_rate
            else:  # revolute, universal, spherical: rotary coordinates
                sq[sl], sv[sl] = self.rotary, self.rotary_rate
        return sq, sv


@dataclass(frozen=True)
class Realism:
    """The realistic plant's effects (module docstring).

    Attributes:
        lag: first-order lag time constant of every applied effort [s].
        knee: fraction of the no-load speed up to which the full effort is available.
        bearing_rotary, bearing_linear: Coulomb friction of every passive bearing
            [N·m per rotary coordinate, N per sliding coordinate] (the issue gives no
            figure: about 0.1 % of the humanoid's smallest peak torque, a greased
            rolling-element bearing under the robot's weight).
        noise: the measurement noise; seed: its generator's seed.
    """

    lag: float = 0.002
    knee: float = 0.5
    bearing_rotary: float = 0.05
    bearing_linear: float = 1.0
    noise: Noise = field(default_factory=Noise)
    seed: int = 0


def ideal_record_model(k: CompiledModel) -> CompiledModel:
    """``k`` without Coulomb friction (drives' ``coulomb`` and joints' ``friction`` zero)."""
    rec = k.record
    return replace(k, record=replace(
        rec, joints=tuple(replace(j, friction=0.0) for j in rec.joints),
        actuators=tuple(replace(a, coulomb=0.0) for a in rec.actuators)))


def realistic_record_model(k: CompiledModel, r: Realism) -> CompiledModel:
    """``k`` with the realistic plant's friction and drives (module docstring): passive
    bearings (joints that no actuator drives) get :attr:`Realism.bearing_rotary` /
    ``bearing_linear`` unless the record gives their friction; every actuator a drive with
    the lag and the torque–speed line (none where the record has no effort or speed limit).

    Raises:
        BackendError: an actuator that already has drive data (the realistic plant would
            replace it).
    """
    rec = k.record
    driven = {n for a in rec.actuators for n in a.port_joints}
    joints = []
    for j in rec.joints:
        if j.name not in driven and not j.friction and j.type != "fixed":
            j = replace(j, friction=r.bearing_linear if j.type == "prismatic"
                        else r.bearing_rotary)
        joints.append(j)
    acts = []
    for a in rec.actuators:
        if a.drive is not None:
            raise BackendError(f"--plant realistic: actuator {a.name} has its own 'drive' "
                               "data; the realistic plant adds its lag and torque-speed limit "
                               "to drives without it")
        peak = (max(abs(a.effort_limits[0]), abs(a.effort_limits[1]))
                if a.effort_limits is not None else np.inf)
        speed = a.speed_limit if a.speed_limit else np.inf
        stall = peak / (1.0 - r.knee) if np.isfinite(peak) and np.isfinite(speed) else np.inf
        acts.append(replace(a, drive=Drive(lag=r.lag, stall=float(stall),
                                           no_load_speed=float(speed))))
    return replace(k, record=replace(rec, joints=tuple(joints), actuators=tuple(acts)))


def chart_coordinates(k: CompiledModel, q: np.ndarray, rotations: np.ndarray | None = None
                      ) -> np.ndarray:
    """q (nq,) with every cut joint's coordinates (the members' loops, the links, the
    supports) taken from the body poses of its tree configuration: one forward-kinematics
    pass, then per chord the relative rotation ``Q = A⁻¹ T_parent⁻¹ T_child B`` of its two
    joint frames read in the joint's chart — a ball joint's quaternion of Q's rotation, a
    revolute's angle about its axis a, ``θ = atan2(a·w, tr R − aᵀRa)`` with w the axial
    vector of ``R − Rᵀ`` (the rotation about a closest to R in the Frobenius norm: exact
    on a closed loop, the best fit on an open one). Other cut types go through
    :func:`rbc.model.modes.cut_coordinates` (Gauss–Newton on the chord's columns).

    Args:
        rotations: (n_bodies + 1, 3, 3) the world rotations of the bodies at q, the world
            last (a caller's own pose pass, e.g. the kernels'); default
            :func:`rbc.model.kinematics.body_poses`.
    """
    from rbc.ir import spatial as sp

    q = np.array(q, dtype=float)
    if rotations is None:
        from rbc.model.kinematics import body_poses

        rotations = np.array([T.rotation for T in body_poses(k, q)] + [np.eye(3)])
    other = False
    for e in k.chord_edges:
        kind = k.kinds[e]
        if not kind.nq:
            continue
        Rp, Rc = rotations[int(k.parent[e])], rotations[int(k.child[e])]
        R = k.A[e].rotation.T @ (Rp.T @ Rc) @ k.B[e].rotation
        if kind.type == "spherical":
            q[k.q_slice(e)] = sp.quat_from_rotation(R)
        elif kind.type == "revolute":
            a = np.asarray(kind.axis, dtype=float)
            w = np.array([R[2, 1] - R[1, 2], R[0, 2] - R[2, 0], R[1, 0] - R[0, 1]])
            q[k.q_slice(e)] = np.arctan2(a @ w, np.trace(R) - a @ R @ a)
        else:
            other = True
    return cut_coordinates(k, q) if other else q


def lifted_speeds(k: CompiledModel, part, q: np.ndarray, u: np.ndarray) -> np.ndarray:
    """All speeds ``v = E(q) u`` (nv,) of independent speeds u at q without forming E:
    ``v_dep = −R_p⁻¹ R_a u`` with one sparse LU (SuperLU) of the selected closure rows'
    dependent block R_p — the closure Jacobian is sparse (each chord's rows touch only its
    path's columns) — the same algebra as :func:`rbc.model.partition.lift`.

    Raises:
        numpy.linalg.LinAlgError: R_p is singular at q.
    """
    from scipy.sparse import csc_matrix
    from scipy.sparse.linalg import splu

    from rbc.model.kinematics import closure_geometry

    v = np.zeros(k.nv)
    v[part.independent] = u
    if part.rank == 0:
        return v
    C = closure_geometry(k, q).C
    SC = C if part.rows.size == C.shape[0] else C[part.rows]
    try:
        lu = splu(csc_matrix(SC[:, part.dependent]))
    except RuntimeError as err:  # SuperLU: "Factor is exactly singular"
        raise np.linalg.LinAlgError(str(err)) from None
    v[part.dependent] = -lu.solve(SC[:, part.independent] @ np.asarray(u, dtype=float))
    return v


def measurement_kernel(k: CompiledModel, part):
    """The run-time kernels (:class:`rbc.kernels.evaluator.KernelModel`) of the mode model
    for the measurement's pose pass, noise integration and lift — the same algebra as
    :func:`rbc.model.kinematics.body_poses`, ``CompiledModel.integrate`` and
    :func:`lifted_speeds`, tested equal to round-off (tests/compose/test_fast_paths.py) at
    a hundredth of their cost on the ring of five — or None where the kernels' layout does
    not take the model (then those reference paths run)."""
    from rbc.kernels.evaluator import KernelModel
    from rbc.kernels.layout import LayoutError

    try:
        return KernelModel(k, part)
    except LayoutError:
        return None


class ComposedPlant(Backend):
    """An engine backend on a composed mode, measured in the mode model's coordinates
    (module docstring).

    Args:
        plant: the mode model (inertial mismatch applied); part: the mode's partition;
        q0, v0: closed initial state of the mode model; dt: physics step [s];
        composed: ``(Composition, ComposedMode)``; realism: :class:`Realism` for the
            realistic plant, None for the ideal one.
    """

    def __init__(self, plant, part, q0, v0, dt, composed=None, realism: Realism | None = None,
                 **options) -> None:
        super().__init__(plant, part, q0, v0, dt)
        if composed is None:
            raise BackendError(f"the composed {self.name} plant needs the composition")
        self.comp, self.md = composed
        self.realism = realism
        self.mode = plant
        k = self.engine_model(plant, self.comp, self.md)
        k = ideal_record_model(k) if realism is None else realistic_record_model(k, realism)
        self.inner = self.engine(k, replace(part, q_ref=np.asarray(q0, float)[: k.nq]),
                                 np.asarray(q0, float)[: k.nq], np.asarray(v0, float)[: k.nv],
                                 dt, **self.engine_options())
        self.gap_names = self.inner.gap_names
        self.ind = part.independent
        if np.any(self.ind >= plant.nv_tree):
            raise BackendError("a composed mode whose independent speeds include cut "
                               "coordinates cannot be measured from an engine's tree state")
        self._q = np.asarray(q0, dtype=float).copy()  # warm start of the chart solves
        self.kernel = measurement_kernel(plant, part)
        self.rng = None
        if realism is not None:
            self.rng = np.random.default_rng(realism.seed)
            self.sigma_q, self.sigma_v = realism.noise.sigmas(plant)

    @classmethod
    def check(cls, plant, part) -> None:
        """Nothing beyond the engine's own checks, done when it is built."""

    @property
    def engine(self) -> type[Backend]:
        """The engine backend class (subclasses)."""
        raise NotImplementedError

    @staticmethod
    def engine_model(mode: CompiledModel, comp, md) -> CompiledModel:
        """The model the engine integrates (default: the mode model)."""
        return mode

    def engine_options(self) -> dict:
        return {}

    def advance(self, f: np.ndarray, steps: int) -> None:
        inner = self.inner
        inner.advance(f, steps)
        self.work_actuators, self.work_passive = inner.work_actuators, inner.work_passive
        self.work_drive_losses = inner.work_drive_losses
        self.steps = inner.steps

    def state(self) -> tuple[np.ndarray, np.ndarray]:
        """The measured ``(q (nq,), v (nv,))`` of the mode model (module docstring)."""
        k = self.mode
        qt, vt = self.inner.tree_state()
        q = self._q.copy()
        q[: k.nq_tree] = qt[: k.nq_tree]
        v = np.zeros(k.nv)
        v[: k.nv_tree] = vt[: k.nv_tree]
        km = self.kernel
        if self.rng is not None:
            dq = np.zeros(k.nv)
            dq[: k.nv_tree] = self.sigma_q * self.rng.standard_normal(k.nv_tree)
            q = k.integrate(q, dq) if km is None else km.integrate(q, dq)
            v[: k.nv_tree] += self.sigma_v * self.rng.standard_normal(k.nv_tree)
        if km is None:
            q = self._q = chart_coordinates(k, q)
            return q, lifted_speeds(k, self.part, q, v[self.ind])
        q = self._q = chart_coordinates(k, q, km.body_poses(q)[:, :, :3])
        E = km.lift(q)
        if E is None:  # singular R_p: the reference path says so
            return q, lifted_speeds(k, self.part, q, v[self.ind])
        return q, E @ v[self.ind]

    def base_state(self) -> tuple[np.ndarray, np.ndarray]:
        return self.state()

    def measure(self) -> Measurement:
        m = self.inner.measure()
        q, v = self.state()
        ell, J = port_state(self.mode, q)
        return Measurement(ell, J @ v, m.tasks, m.loop_gaps, m.kinetic, m.potential, q, v,
                           m.efforts)

    def support_wrenches(self, names: tuple[str, ...]) -> dict[str, np.ndarray]:
        return self.inner.support_wrenches(names)

    def wrenches(self, f: np.ndarray) -> tuple[dict, dict]:
        """``({support: (6,)}, {link: (6,)})``: the engine's support wrenches (the ground on
        the sole) and link wrenches (palm a on palm b), world axes ``[n; f]``, at the current
        state with port efforts f (n_act,) — the reactions an interval starts from."""
        self.react(f)
        return (self.inner.support_wrenches(self.md.supports),
                self.inner.cut_wrenches(self.md.links))

    def react(self, f: np.ndarray) -> None:
        """Evaluate the engine's constraint forces at the current state with efforts f."""
        raise NotImplementedError


class ComposedPinocchio(ComposedPlant):
    """The Pinocchio plant of a composed mode (module docstring)."""

    name = "pinocchio"

    @classmethod
    def check(cls, plant, part) -> None:
        from rbc.sim.backends.pinocchio import PinocchioBackend

        PinocchioBackend.check(ideal_record_model(plant), part)

    @property
    def engine(self):
        from rbc.sim.backends.pinocchio import PinocchioBackend

        return PinocchioBackend

    def react(self, f: np.ndarray) -> None:
        self.inner.evaluate(f)


class ComposedMujoco(ComposedPlant):
    """The MuJoCo plant of a composed mode: the links as equalities, the supports as contact
    geoms on a floor (module docstring)."""

    name = "mujoco"
    #: MuJoCo ``condim`` of the soles and the floor: sliding and torsional friction
    CONDIM = 4

    @property
    def engine(self):
        from rbc.sim.backends.mujoco import MujocoBackend

        return MujocoBackend

    @staticmethod
    def engine_model(mode: CompiledModel, comp, md) -> CompiledModel:
        return links_model(mode, comp, md)

    def engine_options(self) -> dict:
        """The contact's condim. A mode whose soles are not on one floor (refused by
        ``rbc simulate``, :func:`check_plant`) gets a warning here (``warnings``, the run
        summary's): the members above the floor would drop onto it."""
        problem = floor_problem(self.comp, self.md)
        self.warnings = [f"the composed MuJoCo plant: {problem}"] if problem else []
        return {"contact_condim": self.CONDIM}

    def react(self, f: np.ndarray) -> None:
        """``mj_forward`` with ctrl = f (with drives: the drives' actual efforts, as
        applied over the last step)."""
        from rbc.backends.mujoco_log import mujoco

        inner = self.inner
        if inner.drive is None:
            inner.d.ctrl[:] = f
        mujoco.mj_forward(inner.m, inner.d)

    @classmethod
    def check(cls, plant, part) -> None:
        """The MuJoCo export of the links model must load (checked when it is built)."""


def links_model(mode: CompiledModel, comp, md) -> CompiledModel:
    """The mode model without its support chords: the composition's flat model (with the
    mode model's record, so a plant's inertial mismatch is kept) plus the mode's link
    chords — the mode model's coordinates without the supports' (which come last)."""
    flat = replace(comp.flat, record=mode.record)
    return mode_model(flat, [comp.links[n] for n in md.links], (), ())


#: Largest spread [m] of the supports' contact heights the MuJoCo plant's one floor takes.
FLOOR_SPREAD = 1e-3


def composed_backend(name: str) -> type[ComposedPlant]:
    """The composed plant class of an engine backend name (``mujoco`` | ``pinocchio``)."""
    return {"mujoco": ComposedMujoco, "pinocchio": ComposedPinocchio}[name]


def check_plant(bundle: str, comp, md, backend: str, plant: str | None, seed: int | None
                ) -> None:
    """Refuse the engine-plant requests that do not apply (before anything runs).

    Raises:
        UsageError: an unknown ``--plant`` (lists :data:`PLANTS`), ``realistic`` on the
            Pinocchio plant (rigid and ideal by definition), a negative ``--seed`` or one
            without the realistic plant (it seeds its noise), or — on MuJoCo, which has one
            floor — a mode whose supports do not lie at one height (within
            :data:`FLOOR_SPREAD`).
    """
    from rbc.errors import UsageError, did_you_mean

    if plant is not None and plant not in PLANTS:
        hint = did_you_mean(plant, PLANTS)
        raise UsageError(f"--plant {plant}: unknown" + (f" (did you mean '{hint}'?)" if hint
                                                         else "") + f"; valid: {', '.join(PLANTS)}")
    if plant == "realistic" and backend != "mujoco":
        raise UsageError(f"--plant realistic is the MuJoCo plant with drive friction, lag, "
                         f"torque-speed limit and sensor noise; the {backend} plant is ideal "
                         "(use --backend mujoco, or drop --plant)")
    if seed is not None and not 0 <= seed < 2**63:
        raise UsageError(f"--seed {seed}: must be an integer in [0, 2^63)")
    if seed is not None and plant != "realistic":
        raise UsageError("--seed seeds the realistic plant's measurement noise: give "
                         "--backend mujoco --plant realistic, or drop --seed")
    if backend == "mujoco":
        problem = floor_problem(comp, md)
        if problem:
            raise UsageError(f"--backend mujoco: {bundle}: {problem}")


def floor_problem(comp, md) -> str | None:
    """Why the MuJoCo plant's one floor cannot carry mode ``md`` (its supports' contact
    heights spread over more than :data:`FLOOR_SPREAD`), or None."""
    from rbc.backends.mjcf_export import contact_depth
    from rbc.ir import spatial as sp

    if not md.supports:
        return None
    up = sp.up_direction(comp.flat.record.gravity)
    by_name = {s.name: s for s in comp.flat.record.supports}
    h = np.array([float(up @ md.anchors[i, :3]) - contact_depth(by_name[n])
                  for i, n in enumerate(md.supports)])
    if h.max() - h.min() <= FLOOR_SPREAD:
        return None
    low, high = md.supports[int(h.argmin())], md.supports[int(h.argmax())]
    return (f"mode '{md.name}' has its supports at heights {h.min():.4g} m ({low}) to "
            f"{h.max():.4g} m ({high}); the MuJoCo plant has one floor (spread ≤ "
            f"{FLOOR_SPREAD:g} m): place the members so that their soles touch one ground "
            "(docs/composition.md), or use --backend pinocchio|reduced")


def plant_options(composed: tuple, plant: str | None, seed: int | None) -> dict:
    """The keyword options of a :class:`ComposedPlant` for ``--plant`` and ``--seed``."""
    realism = None
    if plant == "realistic":
        realism = Realism() if seed is None else Realism(seed=seed)
    return {"composed": composed, "realism": realism}


class PlantWrenchLog(WrenchLog):
    """:class:`rbc.compose.runlog.WrenchLog` fed by the engine's own wrenches (module
    docstring); the summary's ``unbalanced`` is None (no recovery equations)."""

    def __init__(self, comp, md, plant: CompiledModel, engine: ComposedPlant) -> None:
        self._rows_of(md, plant)  # no member model or scratch data: the engine's wrenches
        self.engine = engine
        self.unbalanced = None

    def wrenches(self, q: np.ndarray, v: np.ndarray, f: np.ndarray) -> tuple[dict, dict]:
        """The engine's wrenches at its current state with efforts f (q and v, the measured
        state, are not needed): a link the engine does not report (a weld link on MuJoCo)
        NaN, a support without contact zero."""
        sup, links = self.engine.wrenches(f)
        return ({s: sup.get(s, np.zeros(6)) for s in self.mode.supports},
                {n: links.get(n, np.full(6, np.nan)) for n in self.mode.links})


__all__ = ["PLANTS", "ComposedMujoco", "ComposedPinocchio", "ComposedPlant", "Noise",
           "PlantWrenchLog", "Realism", "links_model"]

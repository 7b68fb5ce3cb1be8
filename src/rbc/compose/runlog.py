"""``rbc simulate`` on a composed bundle: the run's checks and the hand-link and support
wrenches along the run (docs/composition.md, "Simulation").

A composed bundle simulates as its mode's model (the flat model plus the mode's link and
support chords, :meth:`rbc.compose.system.Composition.model`) with the mode's partition,
whose independent speeds are the composer's u: the reduced plant integrates
``M_r u̇ + h_r = τ_r`` in them (E₁G equals the one-level lift with the same independent set,
and the member-wise terms equal the projected ones — both checked by ``rbc verify``), so
every controller, reference and ledger of ``rbc simulate`` applies unchanged.

**Wrenches.** At the start of every control interval (and at the end of the run) the state
(q, v) and the port efforts f held over the interval give, by the composed path —
member-wise terms (:func:`rbc.compose.dynamics.composed_terms`), forward dynamics and the
wrench recovery (:func:`rbc.compose.wrenches.chord_wrenches`) — every active link's wrench
(palm a on palm b) and every support's (the ground on the sole), world axes, about the
link's second frame or the support frame ``[n; f]`` [N·m; N]. These are the reactions the
plant's next step starts from (the same state and efforts; Coulomb friction in the
direction of the current speeds, the one the plant holds over that step).
"""

from __future__ import annotations

import numpy as np

from rbc.compose.dynamics import MemberModel, composed_terms, forward_dynamics
from rbc.compose.system import ComposedMode, Composition
from rbc.compose.wrenches import chord_wrenches
from rbc.errors import UsageError
from rbc.ir import spatial as sp
from rbc.model.compiled import CompiledModel
from rbc.model.dynamics import DynamicsData

#: Backends a composed mode runs on (the engines through :mod:`rbc.compose.plant`).
COMPOSED_BACKENDS = ("reduced", "mujoco", "pinocchio")


def check_run(bundle: str, md: ComposedMode, backend: str, fix_root: bool,
              schedule: bool) -> None:
    """Refuse the ``rbc simulate`` options that do not apply to a composed mode.

    Raises:
        UsageError: a backend that is not one of :data:`COMPOSED_BACKENDS`, ``--fix-root``
            (the supports and links hold the floating bases; compose a fixed-base member
            instead), or a
            reference with a support-mode schedule (the composition's modes are chosen by
            ``--mode``).
    """
    if backend not in COMPOSED_BACKENDS:
        raise UsageError(f"--backend {backend}: {bundle} is a composed bundle, which runs on "
                         f"the {', '.join(COMPOSED_BACKENDS)} plants (valid: "
                         f"{', '.join(COMPOSED_BACKENDS)})")
    if fix_root:
        raise UsageError(f"--fix-root: {bundle} is a composed bundle; its mode "
                         f"'{md.name}' holds the floating bases by its supports and links")
    if schedule:
        raise UsageError(f"--reference: {bundle} is a composed bundle; a support-mode "
                         "schedule does not apply (choose the composed mode with --mode)")


# ------------------------------------------------------------------------ memory

#: ``(a, b)`` of the bytes of one Pinocchio 4.1 ``Data`` of a model with nv speeds,
#: ``a nv³ + b nv²`` (its dense nv × nv × 6 derivative tensors; measured with
#: ``createData`` on revolute chains: 33.6 nv³ at nv 330, 34.4 nv³ at nv 200 — the nv²
#: part is ≈ 530 nv² there).
PIN_DATA_BYTES = (32.0, 600.0)


def pinocchio_data_bytes(nv: int) -> float:
    """Bytes of one Pinocchio Data of a model with nv speeds (:data:`PIN_DATA_BYTES`)."""
    a, b = PIN_DATA_BYTES
    return a * nv ** 3 + b * nv ** 2


def run_memory(kin: CompiledModel, backend: str, controller: str) -> dict[str, float]:
    """The Pinocchio scratch a composed ``rbc simulate`` run holds at its peak, by owner
    [bytes], and ``total``. One :class:`~rbc.model.dynamics.DynamicsData` (``dd``: the
    tree's and the augmented tree's Data, nv_tree and nv speeds of the mode model ``kin``)
    is held by the ``allocation`` controller — and shared by the reduced plant — or built
    for a while by ``pd``/``pd+ff`` to set their gains (``setup``, freed before the plant
    is built); the reduced plant otherwise holds its own (shared by its tree probe and the
    wrench log), the Pinocchio plant its tree's Data (shared by its probe); MuJoCo's own
    data is sparse and not counted."""
    tree = pinocchio_data_bytes(kin.nv_tree)
    dd = tree + pinocchio_data_bytes(kin.nv)
    alloc = controller == "allocation"
    out = {"controller": dd if alloc else 0.0,
           "plant": {"reduced": 0.0 if alloc else dd, "pinocchio": tree}.get(backend, 0.0),
           "setup": dd if controller in ("pd", "pd+ff") else 0.0}
    out["total"] = max(out["controller"] + out["plant"], out["setup"])
    return out


def available_memory() -> float:
    """Bytes a run may use: ``$RBC_MEMORY_LIMIT`` (GB) when set, else the kernel's
    ``MemAvailable`` (``/proc/meminfo``); infinity when neither can be read."""
    import os

    env = os.environ.get("RBC_MEMORY_LIMIT")
    if env:
        try:
            return float(env) * 1e9
        except ValueError:
            raise UsageError(f"RBC_MEMORY_LIMIT={env!r}: must be a number of GB") from None
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return float(line.split()[1]) * 1024.0
    except OSError:
        pass
    return float("inf")


def check_memory(bundle: str, kin: CompiledModel, md: ComposedMode, backend: str,
                 controller: str) -> dict[str, float]:
    """Refuse a composed run whose Pinocchio scratch (:func:`run_memory`) would not fit in
    :func:`available_memory`, before anything is built; returns the estimate.

    Raises:
        UsageError: the estimate exceeds the available memory (the message gives both and
            the model's sizes).
    """
    est = run_memory(kin, backend, controller)
    avail = available_memory()
    if est["total"] > avail:
        parts = ", ".join(f"{k} {v / 1e9:.2f} GB" for k, v in est.items()
                          if k != "total" and v)
        raise UsageError(
            f"{bundle}: mode '{md.name}' (nv {kin.nv}, tree nv {kin.nv_tree}) on the "
            f"{backend} plant with --controller {controller} needs about "
            f"{est['total'] / 1e9:.2f} GB of Pinocchio scratch ({parts}; a Data takes "
            f"≈ 32 nv³ bytes) but {avail / 1e9:.2f} GB are available "
            "(RBC_MEMORY_LIMIT or MemAvailable): free memory, or run a smaller mode or "
            "formation")
    return est


class WrenchLog:
    """The ``links/<name>/wrench`` and ``supports/<s>/wrench`` log entries of a composed
    run (module docstring).

    Args:
        comp: the composition; md: the simulated mode; plant: the plant's mode model
            (mismatched inertias included, so the wrenches are the plant's);
        data: scratch data of a model of the same structure to share (the reduced
            plant's: every evaluation recomputes what it reads, so one scratch serves
            both); None builds its own (≈ 32 (nv_tree³ + nv³) bytes, 1.6 GB on the ring).
    """

    def __init__(self, comp: Composition, md: ComposedMode, plant: CompiledModel,
                 data: DynamicsData | None = None) -> None:
        self._rows_of(md, plant)
        self.mm = MemberModel.of(plant, comp.members, md.level2)
        self.data = DynamicsData.of(self.mm.dm) if data is None else data
        self.unbalanced = 0.0

    def _rows_of(self, md: ComposedMode, plant: CompiledModel) -> None:
        """The log's rows and the supports' data (no dynamics: shared with the engine
        plants' log, which reads the engine's own wrenches)."""
        self.mode = md
        self.gravity = np.asarray(plant.record.gravity, dtype=float)
        self.friction = {s.name: s.friction for s in plant.record.supports}
        self.chords = {**{n: n for n in md.links},
                       **{s: s + ".support" for s in md.supports}}
        self.rows: dict[str, list] = {self._key(n): [] for n in self.chords}

    def _key(self, name: str) -> str:
        return f"{'links' if name in self.mode.links else 'supports'}/{name}/wrench"

    def record(self, q: np.ndarray, v: np.ndarray, f: np.ndarray) -> None:
        """Log the wrenches at the closed state (q (nq,), v (nv,)) of the mode model with
        port efforts f (n_act,)."""
        sup, links = self.wrenches(q, v, f)
        for n in self.mode.links:
            self.rows[self._key(n)].append(links[n])
        for s in self.mode.supports:
            self.rows[self._key(s)].append(sup[s])

    def wrenches(self, q: np.ndarray, v: np.ndarray, f: np.ndarray
                 ) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
        """``({support: (6,)}, {link: (6,)})`` at the closed state (q (nq,), v (nv,)) with
        port efforts f (n_act,): the ground on the sole and palm a on palm b, world axes
        ``[n; f]`` [N·m; N] (module docstring; the plant's recovery)."""
        u = np.asarray(v, dtype=float)[self.mode.partition.independent]
        terms = composed_terms(self.mm, self.data, q, u)
        udot = forward_dynamics(terms, u, f)
        found = chord_wrenches(self.mm, self.data, terms, udot, f)
        w = found.by_name()
        self.unbalanced = max(self.unbalanced, found.unbalanced)
        return ({s: w[self.chords[s]] for s in self.mode.supports},
                {n: w[self.chords[n]] for n in self.mode.links})

    def arrays(self) -> dict[str, np.ndarray]:
        return {k: np.asarray(v, dtype=float).reshape(-1, 6) for k, v in self.rows.items()}

    def summary(self, log: dict[str, np.ndarray]) -> dict:
        """The summary's ``composition`` key: the mode, per link the largest force and
        moment, per support the smallest normal force, the samples without contact (exactly
        0 N: a MuJoCo sole at t = 0, before the contact engages) and the smallest normal
        force over the others, the number of samples where it pulls (f_n < 0: the sole
        would lift) and the largest friction ratio ``|f_t| / f_n``
        over the others with its μ, and the largest residual of the recovery's equations
        ``‖Aᵀ x − rhs‖∞`` [N, N·m] (round-off at a consistent state; docs/composition.md)."""
        up = sp.up_direction(self.gravity)
        out: dict = {"mode": self.mode.name, "links": {}, "supports": {},
                     "unbalanced": self.unbalanced}
        for n in self.mode.links:
            w = log[self._key(n)]
            out["links"][n] = {
                "max_force": float(np.linalg.norm(w[:, 3:], axis=1).max(initial=0.0)),
                "max_moment": float(np.linalg.norm(w[:, :3], axis=1).max(initial=0.0))}
        for s in self.mode.supports:
            f = log[self._key(s)][:, 3:]
            fn = f @ up
            ft = np.linalg.norm(f - np.outer(fn, up), axis=1)
            pressed = fn > 0  # only a pressing sample has a friction ratio
            touching = fn != 0.0  # exactly 0 N: no contact (an engine plant before it engages)
            out["supports"][s] = {
                "min_normal_force": float(fn.min()),
                "contactless_samples": int((~touching).sum()),
                "min_contact_normal_force": float(fn[touching].min()) if touching.any()
                else None,
                "tensile_samples": int((fn < 0).sum()),  # pulling; 0 N (no contact) is not
                "max_friction_ratio": float((ft[pressed] / fn[pressed]).max())
                if pressed.any() else None,
                "friction": self.friction[s]}
        return out

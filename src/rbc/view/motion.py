"""What ``rbc view`` plays: the bundle's reference configuration, or a ``rbc simulate`` log.

A log written by ``rbc simulate --out DIR`` (``DIR/log.h5``, :mod:`rbc.sim.outputs`) is
played from its ``bodies/pose`` dataset (world body poses, any backend) when it has one,
else from its ``q``, the engine's own state read back into rbc coordinates: as is for the
``reduced`` backend; Pinocchio's tree ``q`` through the tree's coordinate permutation
(:func:`rbc.model.tree.build_tree`); MuJoCo's ``qpos`` through the bundle's MJCF export
(:func:`rbc.backends.mjcf_state.tree_configuration`, each frame seeded with the previous).
Only the tree coordinates are read back (the body poses depend on nothing else; cut
joints keep the reference's values). Logs of another bundle are refused by comparing the
coordinate count.
"""

from __future__ import annotations

from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rbc.errors import BundleError, UsageError
from rbc.ir.bundle import open_hdf5
from rbc.model.compiled import CompiledModel


@dataclass(frozen=True)
class Motion:
    """Frames to draw: ``times`` (F,) [s] and either ``qs`` (F, nq) rbc configurations or
    ``poses`` (F, B, 7) world body poses ``[x, y, z, w, qx, qy, qz]``."""

    times: np.ndarray
    qs: np.ndarray | None = None
    poses: np.ndarray | None = None


def reference_motion(model: CompiledModel) -> Motion:
    """The assembled reference configuration of the default partition (one frame)."""
    part = model.partitions.get("default") or next(iter(model.partitions.values()))
    return Motion(np.zeros(1), qs=np.asarray(part.q_ref, dtype=float)[None, :])


def log_motion(model: CompiledModel, path: str | Path) -> Motion:
    """The motion stored in a simulation log.

    Raises:
        UsageError: the file is not a readable HDF5 log, has no playable data, or belongs
            to another mechanism (each message names the file and the dataset).
    """
    p = Path(path)
    if p.is_dir():
        p = p / "log.h5"
    with ExitStack() as stack:
        try:  # untrusted: a regular file, hard links only, no data outside the file
            h5 = stack.enter_context(open_hdf5(p, "log"))
        except BundleError as exc:
            raise UsageError(f"not a readable simulation log: {exc}") from None
        if "time" not in h5:
            raise UsageError(f"{p}: no 'time' dataset; expected a log written by "
                             "`rbc simulate --out DIR`")
        times = np.asarray(h5["time"][()], dtype=float)
        B = len(model.record.bodies)
        if "bodies/pose" in h5:
            poses = np.asarray(h5["bodies/pose"][()], dtype=float)
            if poses.shape != (len(times), B, 7):
                raise UsageError(f"{p}: 'bodies/pose' has shape {poses.shape}, expected "
                                 f"({len(times)}, {B}, 7) for this bundle's {B} bodies")
            motion = Motion(times, poses=poses)
        else:
            backend = str(h5.attrs.get("backend", ""))
            if backend not in READBACK:
                raise UsageError(f"{p}: the log has no 'bodies/pose' dataset and its backend "
                                 f"'{backend}' is not one rbc reads back; valid: "
                                 f"{', '.join(sorted(READBACK))}")
            raw = np.asarray(h5["q"][()], dtype=float) if "q" in h5 else np.zeros((0, 0))
            motion = Motion(times, qs=READBACK[backend](model, p, raw, len(times)))
    data = motion.poses if motion.poses is not None else motion.qs
    if not (np.all(np.isfinite(times)) and np.all(np.isfinite(data))):
        raise UsageError(f"{p}: the log holds non-finite times or states")
    if times.size == 0:
        raise UsageError(f"{p}: the log holds no samples")
    return motion


def _shape(p: Path, raw: np.ndarray, frames: int, width: int, what: str) -> None:
    if raw.ndim != 2 or raw.shape != (frames, width):
        raise UsageError(f"{p}: 'q' has shape {raw.shape}, expected ({frames}, {width}) — "
                         f"{what} of this bundle; is the log of another mechanism?")


def _reduced(model: CompiledModel, p: Path, raw: np.ndarray, frames: int) -> np.ndarray:
    """(F, nq) rbc configurations: the reduced backend logs them as they are."""
    _shape(p, raw, frames, model.nq, "rbc's configuration")
    return raw


def _pinocchio(model: CompiledModel, p: Path, raw: np.ndarray, frames: int) -> np.ndarray:
    """(F, nq) from Pinocchio tree configurations (F, nq_tree): ``q_pin = q_tree[q_perm]``
    inverted, the rest the reference's."""
    from rbc.model.tree import build_tree

    perm = build_tree(model).q_perm
    _shape(p, raw, frames, perm.size, "Pinocchio's tree configuration")
    qs = np.tile(_q_ref(model), (frames, 1))
    qs[:, perm] = raw
    return qs


def _mujoco(model: CompiledModel, p: Path, raw: np.ndarray, frames: int) -> np.ndarray:
    """(F, nq) from MuJoCo ``qpos`` (F, m.nq) of the bundle's export."""
    from rbc.backends.mjcf_export import export_mjcf
    from rbc.backends.mjcf_state import tree_configuration

    part = model.partitions.get("default") or next(iter(model.partitions.values()))
    exp = export_mjcf(model, part)
    _shape(p, raw, frames, exp.qpos.size, "MuJoCo's qpos of the export")
    qs, seed = np.empty((frames, model.nq)), _q_ref(model)
    for k in range(frames):
        try:
            qs[k] = seed = tree_configuration(model, exp, raw[k], seed)
        except ValueError as exc:
            raise UsageError(f"{p}: 'q' frame {k} does not read back: {exc}") from None
    return qs


def _q_ref(model: CompiledModel) -> np.ndarray:
    return np.asarray(reference_motion(model).qs[0], dtype=float)


#: backend name (the log's ``backend`` attribute) → its ``q`` read back into rbc coordinates
READBACK = {"reduced": _reduced, "pinocchio": _pinocchio, "mujoco": _mujoco}

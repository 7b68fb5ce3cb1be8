"""What ``rbc view`` plays: the bundle's reference configuration, or a ``rbc simulate`` log.

A log written by ``rbc simulate --out DIR`` (``DIR/log.h5``, :mod:`rbc.sim.outputs`) is
played from its ``bodies/pose`` dataset (world body poses, any backend) when it has one,
else from its ``q`` when the log's backend is ``reduced`` (rbc's own coordinates). Logs of
another bundle are refused by comparing the record's body names and coordinate count.
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
            if backend != "reduced":
                raise UsageError(f"{p}: the log has no 'bodies/pose' dataset and its backend "
                                 f"is '{backend}', whose 'q' is not in rbc coordinates; "
                                 "re-run `rbc simulate` with this version of rbc")
            qs = np.asarray(h5["q"][()], dtype=float)
            if qs.ndim != 2 or qs.shape != (len(times), model.nq):
                raise UsageError(f"{p}: 'q' has shape {qs.shape}, expected "
                                 f"({len(times)}, {model.nq}) for this bundle")
            motion = Motion(times, qs=qs)
    data = motion.poses if motion.poses is not None else motion.qs
    if not (np.all(np.isfinite(times)) and np.all(np.isfinite(data))):
        raise UsageError(f"{p}: the log holds non-finite times or states")
    if times.size == 0:
        raise UsageError(f"{p}: the log holds no samples")
    return motion

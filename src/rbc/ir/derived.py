"""The bundle datasets that are functions of the record alone (docs/bundle.md).

The codegen pass writes them from the parsed record; the run-time reader recomputes them
from the stored ``/record/text`` and refuses a bundle whose stored copies differ
(:func:`rbc.model.compiled.check_against_record`) — a forged ``/bodies/mass`` with a
recomputed content SHA-256 is refused as tampered, never used.
"""

from __future__ import annotations

import numpy as np

from rbc.ir.record import Pose, Record


def pose7(p: Pose) -> list[float]:
    """A pose as ``[x y z w qx qy qz]``."""
    return [*p.xyz, *p.quat]


def csr(groups: list[tuple[int, ...]]) -> tuple[np.ndarray, np.ndarray]:
    """Groups of integers as a CSR pair: pointer (n + 1,) and flat values, both int64."""
    ptr = np.concatenate([[0], np.cumsum([len(g) for g in groups], dtype=np.int64)])
    flat = np.array([x for g in groups for x in g], dtype=np.int64)
    return ptr.astype(np.int64), flat


def edge_geometry(record: Record, n_edges: int) -> dict[str, np.ndarray]:
    """Per-edge attachment frames and axes; root edges get identity frames.

    Returns arrays: ``parent_frame``, ``child_frame`` (E, 7) ``[x y z w qx qy qz]``,
    ``axis`` (E, 3), ``axes`` (E, 2, 3) (NaN where not applicable), ``lead`` (E,) m/rev.
    """
    identity = pose7(Pose())
    pf = np.array([identity] * n_edges)
    cf = pf.copy()
    axis = np.full((n_edges, 3), np.nan)
    axes = np.full((n_edges, 2, 3), np.nan)
    lead = np.full(n_edges, np.nan)
    for k, j in enumerate(record.joints):
        pf[k], cf[k] = pose7(j.parent_frame), pose7(j.child_frame)
        if j.axis is not None:
            axis[k] = j.axis
        if j.axes is not None:
            axes[k] = j.axes
        if j.lead is not None:
            lead[k] = j.lead
    return {"parent_frame": pf, "child_frame": cf, "axis": axis, "axes": axes, "lead": lead}


def record_datasets(rec: Record, n_edges: int) -> dict[str, object]:
    """``"/group/dataset"`` → value of every dataset that depends on the record alone: the
    bodies' physical data, the edges' geometry and the interfaces (actuators, tasks,
    couplings, supports). Arrays as written (float64 / int64), strings as lists."""
    out: dict[str, object] = {
        "/bodies/kind": [b.kind for b in rec.bodies],
        "/bodies/mass": np.array([b.mass for b in rec.bodies], dtype=float),
        "/bodies/com": np.array([b.com for b in rec.bodies], dtype=float).reshape(-1, 3),
        "/bodies/inertia": np.array([b.inertia for b in rec.bodies],
                                    dtype=float).reshape(-1, 6),
    }
    for name, arr in edge_geometry(rec, n_edges).items():
        out[f"/graph/{name}"] = arr
    edges = rec.joint_index()
    bodies = rec.body_index()
    act = rec.actuators
    ptr, flat = csr([tuple(edges[n] for n, _ in a.port_terms) for a in act])
    sup = rec.supports
    out.update({
        "/interfaces/actuators/name": [a.name for a in act],
        "/interfaces/actuators/edge": np.array(
            [edges[a.joint] if a.joint is not None else -1 for a in act], dtype=np.int64),
        "/interfaces/actuators/terms_ptr": ptr,
        "/interfaces/actuators/terms_edge": flat,
        "/interfaces/actuators/terms_coef": np.array(
            [c for a in act for _, c in a.port_terms], dtype=float),
        "/interfaces/actuators/kind": [a.kind for a in act],
        "/interfaces/actuators/port": [a.describe() for a in act],
        "/interfaces/actuators/transmission": [a.transmission.type for a in act],
        "/interfaces/actuators/reduction": np.array(
            [a.transmission.reduction for a in act], dtype=float),
        "/interfaces/actuators/rotor_inertia": np.array([a.rotor_inertia for a in act],
                                                        dtype=float),
        "/interfaces/actuators/effort_limits": np.array(
            [a.effort_limits or (-np.inf, np.inf) for a in act], dtype=float).reshape(-1, 2),
        "/interfaces/tasks/name": [t.name for t in rec.tasks],
        "/interfaces/tasks/kind": [t.kind for t in rec.tasks],
        "/interfaces/tasks/body": np.array([bodies[t.body] for t in rec.tasks],
                                           dtype=np.int64),
        "/interfaces/tasks/frame": np.array([pose7(t.pose) for t in rec.tasks],
                                            dtype=float).reshape(-1, 7),
        "/interfaces/couplings/name": [c.name for c in rec.couplings],
        "/interfaces/supports/name": [x.name for x in sup],
        "/interfaces/supports/kind": [x.kind for x in sup],
        "/interfaces/supports/body": np.array([bodies[x.body] for x in sup], dtype=np.int64),
        "/interfaces/supports/frame": np.array([pose7(x.pose) for x in sup],
                                               dtype=float).reshape(-1, 7),
        "/interfaces/supports/friction": np.array([x.friction for x in sup], dtype=float),
        "/interfaces/supports/normal": np.array([x.normal for x in sup],
                                                dtype=float).reshape(-1, 3),
        "/interfaces/supports/half_extents": np.array(
            [x.half_extents or (0.0, 0.0) for x in sup], dtype=float).reshape(-1, 2),
        "/interfaces/supports/radius": np.array([x.radius for x in sup], dtype=float),
    })
    return out

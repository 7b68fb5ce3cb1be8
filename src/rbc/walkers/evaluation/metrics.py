"""Stride metrics of a simulated walk (one dict per completed stride).

Length is the base shift along the slope (tilted x) between consecutive stance contacts:
the swing-foot point at touchdown. For the footed walker the base is the stance *toe*,
so the length is toe-to-toe; because both feet are flat at touchdown and the ankle sits a
fixed 0.12 m behind the toe of a flat foot, this equals the ankle-to-ankle advance of
consecutive flat stance feet (the 12 cm ankle-to-toe shift cancels; the ankle of a
rotated (toe-roll) foot is not used as a reference).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rbc.walkers.hybrid.simulate import WalkResult


def stride_metrics(res: WalkResult) -> list[dict[str, Any]]:
    """Per-stride metrics: ``index``, ``length`` [m], ``duration`` [s], ``speed`` [m/s],
    ``impulse_normal``/``impulse_tangential`` [N s], ``cone_utilization`` (``|F_T|/(mu
    F_N)``), ``liftoff_velocity`` [m/s], ``checks_ok``; true-plant walks
    (:mod:`rbc.walkers.environment.plant_sim`) add ``slip`` (base slide in the stance [m]),
    ``friction_work`` (joint + sliding friction [J]), ``actuator_work`` [J], ``mu``; footed
    walkers add ``cop`` [m from
    the toe], ``cop_ok``, ``slap_moment`` [N m s], ``heel_rise_energy_jump`` [J]."""
    out = []
    for i, s in enumerate(res.strides):
        d = {
            "index": i,
            "length": float(s.length),
            "duration": float(s.duration),
            "speed": float(s.speed),
            "impulse_normal": float(s.impulse[1]),
            "impulse_tangential": float(s.impulse[0]),
            "cone_utilization": float(s.impact.cone_utilization),
            "liftoff_velocity": float(s.impact.liftoff_velocity),
            "checks_ok": bool(s.impact.ok and s.extra.get("cop_ok", True)),
        }
        if "slip" in s.extra:
            d.update(slip=float(s.extra["slip"]), friction_work=float(s.extra["friction_work"]),
                     actuator_work=float(s.extra["actuator_work"]), mu=float(s.extra["mu"]))
        if "cop" in s.extra:
            e0, e1 = s.extra["heel_rise_energy"]
            d.update(cop=float(s.extra["cop"]), cop_ok=bool(s.extra["cop_ok"]),
                     slap_moment=float(s.extra["slap_moment"]),
                     heel_rise_energy_jump=float(e1 - e0))
        out.append(d)
    return out


def summary(res: WalkResult) -> dict[str, Any]:
    """Run summary: ``strides_completed``, ``fell``, ``fall_reason``, ``strides``; true-plant
    walks add ``tracking_ema`` (final EMA of ``|y|^2`` [rad^2]) and ``contraction``."""
    out = {"strides_completed": len(res.strides), "fell": bool(res.fell),
           "fall_reason": res.fall_reason, "strides": stride_metrics(res)}
    ema = getattr(res, "ema", None)
    if ema is not None and len(ema):
        out["tracking_ema"] = float(ema[-1])
        out["contraction"] = contraction_estimate(res.poincare)
    return out


def contraction_terms(samples: np.ndarray, skip: int = 1) -> tuple[float, float]:
    """Least-squares terms of ``|x_{k+1} - x*| ~ rho |x_k - x*|`` over post-impact samples.

    ``x*`` is the last sample (the gait the run settled on); pairs whose successor is the
    last sample itself are excluded (their residual is 0 by construction), as are the first
    ``skip`` samples (the start transient from the design-model initial state).

    Args:
        samples: (K, 2n) post-impact states.

    Returns:
        ``(sum a_k b_k, sum a_k^2)`` with ``a_k = |x_k - x*|``, ``b_k = |x_{k+1} - x*|``;
        pooled over runs, ``rho = sum ab / sum aa``.
    """
    samples = np.asarray(samples, dtype=float)
    if len(samples) < skip + 3:
        return 0.0, 0.0
    d = np.linalg.norm(samples[skip:-1] - samples[-1], axis=1)
    a, b = d[:-1], d[1:]
    return float(a @ b), float(a @ a)


def contraction_estimate(samples: np.ndarray, skip: int = 1) -> float | None:
    """``rho`` of :func:`contraction_terms` for one run (None with fewer than skip+3
    samples or a run already at its fixed point)."""
    ab, aa = contraction_terms(samples, skip)
    return ab / aa if aa > 0 else None


def write_log(res: WalkResult, path) -> str:
    """Write the trajectory log; HDF5 (h5py) when installed, else ``.npz``. Returns the
    path written. Datasets: ``t`` (N,) [s], ``x`` (N, 2n), ``u`` (N, nu) [N m],
    ``stride_index`` (N,), ``base`` (N, 2) [m], ``phase`` (N,), ``poincare`` (strides, 2n)
    and per-stride metric arrays under ``stride_*``; attributes ``model``, ``coords``."""
    from pathlib import Path

    met = stride_metrics(res)
    arrays = {"t": res.t, "x": res.x, "u": res.u, "stride_index": res.stride_index,
              "base": res.base, "poincare": res.poincare.reshape(len(res.strides), -1),
              "phase": res.phase if res.phase is not None else np.zeros(len(res.t), int)}
    for k in ("length", "duration", "speed", "impulse_normal", "cone_utilization"):
        arrays[f"stride_{k}"] = np.array([m[k] for m in met])
    path = Path(path)
    try:
        import h5py
    except ImportError:  # pragma: no cover - h5py is a declared dependency
        h5py = None
    if h5py is not None:
        p = path.with_suffix(".h5")
        with h5py.File(p, "w") as f:
            for k, v in arrays.items():
                f.create_dataset(k, data=v)
            f.attrs["model"] = res.model.name
            f.attrs["coords"] = list(res.model.coords)
            f.attrs["slope"] = res.alpha
            f.attrs["fall_reason"] = res.fall_reason or ""
        return str(p)
    p = path.with_suffix(".npz")
    np.savez_compressed(p, model=res.model.name, coords=np.array(res.model.coords), **arrays)
    return str(p)

"""Force-prediction errors: what a policy's allocation predicts the supports and the hand
links carry against what the plant produced (issue #20 item 6; docs/allocation.md
"Force prediction").

**Predicted** (:func:`predicted_wrenches`): the allocation's own wrenches at the measured
state — per loaded sole ``λ_b(f)`` of the support-wrench map the QP constrained, per hand
link ``λ_l(f)`` of the same solve (:func:`rbc.compose.wrenches.support_wrench_map`), both
at the allocated efforts f of the policy's nominal model (the accelerations those efforts
induce). The per-robot policy's robots model no links: its soles are each robot's own
``λ_b(f)`` and its link forces zero. A policy without an allocation (actuator PD) predicts
nothing (None).

**Produced**: the plant's own wrenches at the same instant with the efforts it applies
(:meth:`rbc.compose.runlog.WrenchLog.wrenches`: MuJoCo's contact forces per sole geom and
the links' ``connect`` forces, Pinocchio's constraint forces, the reduced plant's recovered
wrenches).

**Metrics** (:func:`prediction_errors`), over the samples at ``t ≥ after``:

* sole normal force: ``e_n = sqrt(mean_{k,b} (f̂_n,kb − f_n,kb)²)`` [N], the RMS over the
  samples k and the loaded soles b of the difference of the normal forces ``f_n = up · f``;
  relative: ``e_n / mean_{k,b} f_n,kb`` (the mean produced normal force);
* hand-link force: ``e_h = sqrt(mean_{k,l} ‖f̂_kl − f_kl‖²)`` [N], the RMS over the samples
  and the links of the norm of the force difference (3 components, world axes); relative:
  ``e_h / sqrt(mean_{k,l} ‖f_kl‖²)`` (the RMS produced link force).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, eq=False)
class ForcePrediction:
    """A policy step's predicted wrenches (module docstring).

    Attributes:
        supports: {support: (6,) ``[n; f]``} the ground on the sole [N·m; N], world axes.
        links: {link: (6,)} palm a on palm b, world axes.
    """

    supports: dict[str, np.ndarray]
    links: dict[str, np.ndarray]


def predicted_wrenches(step, links: Sequence[str]) -> ForcePrediction | None:
    """The wrenches a policy step's allocation predicts (module docstring); ``links``: the
    mode's link names (the per-robot policy's are zero). None without an allocation.

    Args:
        step: a :class:`rbc.control.policies.PolicyStep`.
    """
    al = step.allocation
    if al is not None:
        lw = dict(zip(al.links, al.link_wrenches, strict=True))
        return ForcePrediction(dict(zip(al.supports, al.wrenches, strict=True)),
                               {n: lw[n] for n in links})
    if step.robots:
        sup = {n: w for a in step.robots for n, w in zip(a.supports, a.wrenches, strict=True)}
        return ForcePrediction(sup, {n: np.zeros(6) for n in links})
    return None


def normal_forces(wrenches: np.ndarray, up: np.ndarray) -> np.ndarray:
    """(…,) the normal force ``up · f`` [N] of wrenches (…, 6) ``[n; f]``; ``up`` (3,) the
    unit normal (:func:`rbc.ir.spatial.up_direction`)."""
    return np.asarray(wrenches, dtype=float)[..., 3:] @ np.asarray(up, dtype=float)


def prediction_errors(t: np.ndarray, normal_predicted: np.ndarray,
                      normal_produced: np.ndarray, link_predicted: np.ndarray,
                      link_produced: np.ndarray, after: float) -> dict:
    """The sole-normal-force and hand-link-force prediction errors (module docstring).

    Args:
        t: (n,) sample times [s]; normal_predicted, normal_produced: (n, k) sole normal
            forces [N]; link_predicted, link_produced: (n, l, 3) link forces [N];
        after: the first time counted [s].

    Returns:
        ``samples`` (counted), ``sole_rms`` [N], ``sole_mean`` (the mean produced normal
        force) [N], ``sole_relative`` [-], ``link_rms`` [N], ``link_force_rms`` (the RMS
        produced link force) [N], ``link_relative`` [-]; None where nothing is counted (no
        sample, no sole, no link) or the reference magnitude is zero.
    """
    t = np.asarray(t, dtype=float)
    keep = t >= after
    n = int(keep.sum())
    out: dict = {"samples": n, "after": float(after), "sole_rms": None, "sole_mean": None,
                 "sole_relative": None, "link_rms": None, "link_force_rms": None,
                 "link_relative": None}
    fp = np.asarray(normal_predicted, dtype=float)[keep]
    fa = np.asarray(normal_produced, dtype=float)[keep]
    if fa.size:
        out["sole_rms"] = float(np.sqrt(np.mean((fp - fa) ** 2)))
        out["sole_mean"] = float(fa.mean())
        out["sole_relative"] = _ratio(out["sole_rms"], out["sole_mean"])
    hp = np.asarray(link_predicted, dtype=float)[keep]
    ha = np.asarray(link_produced, dtype=float)[keep]
    if ha.size:
        out["link_rms"] = float(np.sqrt(np.mean(np.sum((hp - ha) ** 2, axis=-1))))
        out["link_force_rms"] = float(np.sqrt(np.mean(np.sum(ha ** 2, axis=-1))))
        out["link_relative"] = _ratio(out["link_rms"], out["link_force_rms"])
    return out


def _ratio(a: float, b: float) -> float | None:
    return float(a / b) if b > 0 else None


__all__: Sequence[str] = ("ForcePrediction", "normal_forces", "predicted_wrenches",
                          "prediction_errors")

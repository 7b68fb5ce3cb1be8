"""Checks of the rolling layer (:mod:`rbc.model.rolling`) behind ``rbc verify``.

* ``rolling.rows.fd`` — each wheel's rows ``A v`` against the central difference of the
  world position of the wheel's material point at the contact point, carried with its body
  along ``q ⊕ t v`` (any v: the rows are defined off the constraint too);
* ``rolling.drift.fd`` — ``Ȧ v`` against the central difference of ``A(q ⊕ t v) v``;
* ``dynamics.delta_a.rolling_kkt50`` (with ``--dynamics``) — tree accelerations of the
  rolling-reduced dynamics against the 50-digit KKT solve with the rolling rows appended to
  the cut-joint rows (:func:`rbc.verify.kkt50.with_rows`), δ_a as DESIGN.md §6, at closed
  configurations with random rolling-independent speeds and port efforts.
"""

from __future__ import annotations

import numpy as np

from rbc.model import rolling as ro
from rbc.model.compiled import CompiledModel, Partition
from rbc.model.kinematics import body_poses
from rbc.verify.checks import DEFAULT_SEED, Check, make_check

#: Central-difference step [s of motion at unit speeds]: truncation ~ h² |v|³ L, round-off
#: ~ 1e-16 L / h; 1e-6 balances both near 1e-10 relative.
FD_STEP = 1e-6
#: Relative limit of both FD checks (FD_STEP's error with a factor 100 of headroom).
FD_LIMIT = 1e-7
#: δ_a limit against the 50-digit reference: the double-precision rows and projection
#: (condition of the rolling block ~ 10-100) against exact arithmetic.
KKT_LIMIT = 1e-10
SAMPLES = 4


def _states(model: CompiledModel, part: Partition, n: int, rng: np.random.Generator
            ) -> list[np.ndarray]:
    """n configurations: the reference one, then tangent moves from it projected onto the
    closure manifold when the model has loops."""
    from rbc.model.closure import project

    out = [np.array(part.q_ref)]
    while len(out) < n:
        q = model.integrate(part.q_ref, 0.3 * rng.normal(size=model.nv))
        out.append(project(model, q) if model.n_rows else q)
    return out


def _relative(err: float, scale: float) -> float:
    return err / max(1.0, scale)


def rows_fd(model: CompiledModel, q: np.ndarray, v: np.ndarray, h: float = FD_STEP
            ) -> tuple[float, float]:
    """``(max |A v − FD|, max |FD|)`` over the wheels at (q, v) [m/s]."""
    cps, A = ro.rolling_rows(model, q)
    err, scale = 0.0, 0.0
    poses = body_poses(model, q)
    for i, cp in enumerate(cps):
        local = poses[cp.body].actInv(cp.point)

        def point(t, b=cp.body, local=local):
            return body_poses(model, model.integrate(q, t * v))[b].act(local)

        fd = (point(h) - point(-h)) / (2 * h)
        err = max(err, float(np.abs(A[3 * i: 3 * i + 3] @ v - fd).max()))
        scale = max(scale, float(np.abs(fd).max()))
    return err, scale


def drift_fd(dm, data, q: np.ndarray, v: np.ndarray, h: float = FD_STEP
             ) -> tuple[float, float]:
    """``(max |Ȧ v − FD|, max |FD|)`` at (q, v) [m/s²]."""
    model = dm.kin

    def value(t):
        return ro.rolling_rows(model, model.integrate(q, t * v))[1] @ v

    fd = (value(h) - value(-h)) / (2 * h)
    return float(np.abs(ro.rolling_drift(dm, data, q, v) - fd).max()), float(np.abs(fd).max())


def delta_a_kkt50(dm, data, part: Partition, rp: ro.RollingPartition, q: np.ndarray,
                  w: np.ndarray, f: np.ndarray | None = None) -> float:
    """δ_a of the rolling-reduced tree accelerations against the 50-digit KKT reference."""
    from rbc.verify import kkt50

    terms = ro.rolling_terms(dm, data, part, rp, q, w, f)
    a = ro.tree_acceleration(terms, ro.forward_dynamics(terms))
    p = kkt50.problem(dm, data, q, terms.u, part.independent, f)
    _, A = ro.rolling_rows(dm.kin, q)
    pr = kkt50.with_rows(dm, p, A, ro.rolling_drift(dm, data, q, p.v))
    if pr.ns.Z.cols != rp.independent.size:
        return float("nan")
    a_ref = kkt50.accelerations(pr)
    return float(np.abs(a - a_ref).max() / max(1.0, np.abs(a_ref).max()))


def run_rolling_checks(model: CompiledModel, part: Partition, *, dynamics: bool = False,
                       samples: int = SAMPLES, seed: int = DEFAULT_SEED) -> list[Check]:
    """The rolling checks of one partition (module docstring); [] without rolling wheels."""
    from rbc.model.dynamics import DynamicsData, DynamicsModel

    if not model.record.rolling:
        return []
    rng = np.random.default_rng(seed)
    qs = _states(model, part, samples, rng)
    dm = DynamicsModel.build(model)
    data = DynamicsData.of(dm)
    rows = drift = 0.0
    for q in qs:
        v = rng.normal(size=model.nv)
        rows = max(rows, _relative(*rows_fd(model, q, v)))
        drift = max(drift, _relative(*drift_fd(dm, data, q, v)))
    out = [make_check("rolling.rows.fd", rows, FD_LIMIT, "1",
                      f"contact-point material velocity vs central differences, {len(qs)} "
                      "configurations"),
           make_check("rolling.drift.fd", drift, FD_LIMIT, "1",
                      f"rate of the rolling rows vs central differences, {len(qs)} "
                      "configurations")]
    if dynamics:
        rp = ro.rolling_partition(model, part)
        n_act = len(model.record.actuators)
        worst = max(delta_a_kkt50(dm, data, part, rp, q, rng.normal(size=rp.independent.size),
                                  rng.normal(size=n_act) if n_act else None) for q in qs)
        out.append(make_check("dynamics.delta_a.rolling_kkt50", worst, KKT_LIMIT, "1",
                              f"rolling-reduced dynamics vs 50-digit KKT with the rolling rows "
                              f"({rp.rank} of {3 * len(model.record.rolling)} rows "
                              f"independent), {len(qs)} states"))
    return out

"""A whole Runge–Kutta step in one kernel call (:func:`rbc.kernels.step.rk_step`) equals the
same step taken stage by stage through :meth:`KernelStage.stage` and
:func:`rbc.sim.integrators.rk_step` (the same stages, summed in another order), and its
effort gain is the exact derivative of u̇ in the port efforts (u̇ is affine in them)."""

from __future__ import annotations

import numpy as np
import pytest

from rbc.kernels.evaluator import KernelModel, KernelStage
from rbc.kernels.layout import LayoutError
from rbc.model.dynamics import DynamicsData, DynamicsModel, lift_at
from rbc.sim.integrators import DOPRI5, RK4, fused_weights, rk_step


def _stage_at_rest(kin, part):
    dm = DynamicsModel.build(kin)
    q = np.array(part.q_ref)
    ref = lift_at(dm, DynamicsData.of(dm), part, q)
    try:
        km = KernelModel(kin, part, dm.tree)
        return km, lambda: KernelStage(km, q, ref.E, ref.geometry.rho)
    except LayoutError:
        pytest.skip("not on the kernel layout (tendon ports or an independent planar angle)")


@pytest.mark.parametrize("tab", [RK4, DOPRI5], ids=lambda t: t.name)
def test_fused_step_equals_the_stage_by_stage_step(any_record, tab):
    name, kin, part = any_record
    km, fresh = _stage_at_rest(kin, part)
    n = part.independent.size
    rng = np.random.default_rng(8)
    a, b = fresh(), fresh()
    keep = km.layout.segment("keep_u")
    x = np.zeros(n)
    x[keep] = a.x0
    y = np.concatenate([x, 0.3 * rng.normal(size=n), [0.0, 0.0]])
    f = 5.0 * rng.normal(size=km.n_act)
    h = 1e-3
    k1 = a.stage(y, f)
    assert k1 is not None and np.array_equal(k1, b.stage(y, f)), name
    done, out = a.rk_step(fused_weights(tab), y, k1, f, h)
    assert out is not None and done == (4 if tab is RK4 else 6), name

    def rhs(z):
        d = b.stage(z, f)
        assert d is not None
        return d

    y1, e, k_last = rk_step(rhs, tab, y, h, k1)
    if not tab.fsal:  # RK4's estimate from ẏ at y1 (rbc.sim.integrators docstring)
        k4, k_last = k_last, rhs(y1)
        e = h / 6.0 * (k4 - k_last)
    # the same stage evaluations, the weighted sums in another order: a few roundings of
    # the state (y1), of the stages' values (k_end, through the corrector's 1e-13 closure:
    # the stages close from the same configurations to the same bits or within it); the
    # error vector is h × a difference of stages: its scale is h·max|k|
    kscale = max(1.0, float(np.abs(k_last).max()))
    scale = max(1.0, float(np.abs(y1).max()), h * kscale)
    assert np.abs(out.y1 - y1).max() <= 1e-13 * scale, name
    assert np.abs(out.k_end - k_last).max() <= 1e-11 * kscale, name
    assert np.abs(out.err - e).max() <= 1e-11 * h * kscale, name
    # the closed state moved to y1 on both
    assert np.abs(a.q - b.q).max() <= 1e-13 * max(1.0, float(np.abs(b.q).max())), name


def test_effort_gain_is_the_derivative_of_the_speeds_rates(any_record):
    """u̇(f + Δf) − u̇(f) = G Δf and P_act(f + Δf) = (f + Δf) · ℓ̇_ports at the step's end, by
    two more stage evaluations there (u̇ is affine in f: the difference is exact up to
    the roundings of two solves with M_r, ~ε cond(M_r) of u̇)."""
    name, kin, part = any_record
    km, fresh = _stage_at_rest(kin, part)
    if km.n_act == 0:
        pytest.skip("no actuators")
    a = fresh()
    n = part.independent.size
    rng = np.random.default_rng(9)
    x = np.zeros(n)
    x[km.layout.segment("keep_u")] = a.x0
    y = np.concatenate([x, 0.3 * rng.normal(size=n), [0.0, 0.0]])
    f = 5.0 * rng.normal(size=km.n_act)
    k1 = a.stage(y, f)
    _, out = a.rk_step(fused_weights(RK4), y, k1, f, 1e-3)
    df = 5.0 * rng.normal(size=km.n_act)
    k_f = a.stage(out.y1, f)
    k_g = a.stage(out.y1, f + df)
    assert np.array_equal(k_f, out.k_end), name  # the same stage at the same state
    du = k_g[n: 2 * n] - k_f[n: 2 * n]
    gdf = out.gain @ df
    cond = np.linalg.cond(out.gain.T @ out.gain) ** 0.5 if out.gain.size else 1.0
    tol = 1e-12 * max(1.0, float(np.abs(k_g[n: 2 * n]).max())) * max(1.0, min(cond, 1e3))
    assert np.abs(du - gdf).max() <= tol, (name, np.abs(du - gdf).max(), tol)
    p_act = float((f + df) @ out.port_speeds)
    assert abs(k_g[2 * n] - p_act) <= 1e-13 * max(1.0, float(np.abs((f + df) * out.port_speeds)
                                                              .max())), name

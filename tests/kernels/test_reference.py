"""The kernel path equals the NumPy/Pinocchio reference path (≤ 1e-13 relative) on every
shipped and imported record, on and off the closure manifold: residual, closure Jacobian,
lift, curvature and reduced forward dynamics; the reduced backend's stage (powers, the
partition check's condition number)."""

from __future__ import annotations

import numpy as np
import pytest

from rbc.kernels.evaluator import KernelModel, KernelStage
from rbc.kernels.layout import LayoutError
from rbc.model.augmented import augmented_geometry
from rbc.model.dynamics import (
    DynamicsData,
    DynamicsModel,
    forward_dynamics,
    lift_at,
    reduced_terms,
)
from rbc.model.interfaces import ports
from rbc.model.partition import curvature, lift_from_jacobian, scaled_cond

#: The acceptance bound of issue #16: both paths evaluate the same quantities by different
#: algorithms in float64; 1e-13 of the largest entry (or of 1) leaves a few hundred roundings.
RTOL = 1e-13


def _close(a: np.ndarray, b: np.ndarray) -> float:
    """Largest difference relative to max(1, ‖b‖∞)."""
    return float(np.abs(a - b).max(initial=0.0) / max(1.0, np.abs(b).max(initial=0.0)))


def _states(kin, part, rng):
    yield "on", np.array(part.q_ref)
    for _ in range(2):  # off the manifold: J_l⁻¹ and Ad(D) matter there
        yield "off", kin.integrate(part.q_ref, 0.05 * rng.normal(size=kin.nv))


def test_kernels_equal_the_reference_path(any_record):
    _assert_equal_paths(*any_record)


@pytest.mark.parametrize("name", ["rocker_fourbar", "fast_crank", "rssr", "bricard"])
def test_kernels_equal_the_reference_path_in_every_chart(name):
    """The hard records (records/hard) in their default and alternative charts — with an
    actuated coordinate dependent (the rocker four-bar's crank chart), armature and rotor
    inertia enter M_T Ė_T u, which the default charts never exercise."""
    from rbc.compiler import compile_record
    from rbc.passes.rank import parse_partition_request
    from tests.conftest import RECORDS

    extra = {"rocker_fourbar": ("crank=A",)}.get(name, ())
    _, report = compile_record(RECORDS / "hard" / f"{name}.yaml", partitions=tuple(
        parse_partition_request(p) for p in extra))
    parted = report.stages["rank"]
    for part in parted.partitions:
        _assert_equal_paths(f"{name}/{part.name}", parted.model, part)


def _assert_equal_paths(name, kin, part):
    dm = DynamicsModel.build(kin)
    dd = DynamicsData.of(dm)
    km = KernelModel(kin, part, dm.tree)  # point chords where the partition allows them
    km6 = KernelModel(kin, part, dm.tree, point=False)  # every chord with the bundle's rows
    rng = np.random.default_rng(20260927)
    for where, q in _states(kin, part, rng):
        geo = augmented_geometry(dm.augmented, dd.augmented_data, q)
        rho, C, E6 = km6.geometry(q)
        assert _close(rho, geo.rho) <= RTOL, (name, where, "rho")
        assert _close(C, geo.C) <= RTOL, (name, where, "C")
        ref = lift_from_jacobian(part, geo.C, geo)
        E = km.lift(q)
        assert E is not None and E6 is not None
        # E, v and Ė u are solves with R_p: two backward-stable solves differ by up to
        # ~κ(R_p) ε relative (digit_like: κ ≈ 1e3); below κ = 100 that is inside RTOL
        tol = max(RTOL, 4.0 * np.finfo(float).eps * ref.cond)
        assert _close(E6, ref.E) <= tol, (name, where, "E (six rows)")
        assert _close(E, ref.E) <= tol, (name, where, "E")
        u = rng.normal(size=part.independent.size)
        v, edu = km.curvature(q, u)
        v_ref, edu_ref = curvature(kin, part, q, u, ref)
        assert _close(v, v_ref) <= tol, (name, where, "v")
        assert _close(edu, edu_ref) <= tol, (name, where, "Ė u")
        f = 10.0 * rng.normal(size=len(kin.record.actuators))
        terms = reduced_terms(dm, dd, part, q, u, f, lifted=ref)
        ud_ref = forward_dynamics(dm, terms)
        kt = km.terms(q, u, f)
        rhs_ref = terms.tau - terms.h + terms.tau_coulomb
        assert _close(kt.M, terms.M) <= RTOL, (name, where, "M_r")
        assert _close(kt.rhs, rhs_ref) <= RTOL, (name, where, "rhs")
        # u̇ solves the reference's system to RTOL backward error (the forward difference
        # of two backward-stable solves also carries κ(M_r): Cassie's κ ≈ 1e5)
        back = np.abs(terms.M @ kt.udot - rhs_ref).max() / (
            np.abs(terms.M).max() * np.abs(ud_ref).max() + np.abs(rhs_ref).max())
        assert back <= RTOL, (name, where, "u̇ backward")
        if np.linalg.cond(terms.M) < 100:  # well conditioned (κ ε < 3e-14): forward error too
            assert _close(kt.udot, ud_ref) <= RTOL, (name, where, "u̇")


def test_integrate_equals_the_models(any_record):
    name, kin, part = any_record
    km = KernelModel(kin, part)
    rng = np.random.default_rng(3)
    v = 0.3 * rng.normal(size=kin.nv)
    out, ref = km.integrate(part.q_ref, v), kin.integrate(part.q_ref, v)
    # the same closed forms; quaternions renormalised by both (1e-15 relative)
    assert _close(out, ref) <= 1e-14, name


def test_batch_equals_single_states(any_record):
    name, kin, part = any_record
    km = KernelModel(kin, part)
    rng = np.random.default_rng(4)
    Q = np.tile(part.q_ref, (3, 1))
    U = rng.normal(size=(3, part.independent.size))
    F = rng.normal(size=(3, len(kin.record.actuators)))
    UD = km.forward_dynamics_batch(Q, U, F)
    for s in range(3):
        # the same kernel per state: bitwise equal
        assert np.array_equal(UD[s], km.forward_dynamics(Q[s], U[s], F[s])), name


def test_stage_powers_and_condition_equal_the_reference(any_record):
    """One reduced-backend stage at a closed state (no corrector move): ẏ = (u, u̇, P_act,
    P_passive) and the partition check's scaled cond(R_p) as the reference computes them."""
    name, kin, part = any_record
    dm = DynamicsModel.build(kin)
    dd = DynamicsData.of(dm)
    try:
        km = KernelModel(kin, part, dm.tree)
    except LayoutError:  # tendon ports: the reference evaluator runs those
        pytest.skip("tendon ports")
    q = np.array(part.q_ref)
    ref = lift_at(dm, dd, part, q)
    try:
        ks = KernelStage(km, q, ref.E, ref.geometry.rho)
    except LayoutError:  # an independent planar angle: the reference evaluator runs those
        pytest.skip("independent coordinate set through its joint's maps")
    rng = np.random.default_rng(5)
    n = part.independent.size
    u = rng.normal(size=n)
    f = 10.0 * rng.normal(size=len(kin.record.actuators))
    x = np.full(n, np.nan)
    x[km.layout.segment("keep_u")] = q[km.layout.segment("keep_q")]
    ydot = ks.stage(np.concatenate([x, u, [0.0, 0.0]]), f)
    assert ydot is not None, name
    terms = reduced_terms(dm, dd, part, q, u, f, lifted=ref)
    ud_ref = forward_dynamics(dm, terms)
    assert np.array_equal(ydot[:n], u), name
    if np.linalg.cond(terms.M) < 100:  # see above: the forward error carries κ(M_r)
        assert _close(ydot[n: 2 * n], ud_ref) <= RTOL, (name, "u̇")
    p_act = float(f @ (ports(kin).jacobian @ terms.v)) if f.size else 0.0
    p_pass = float(terms.passive @ terms.v)
    # two dot products of O(1) terms: RTOL of the largest term's magnitude
    scale = max(1.0, float(np.abs(terms.passive * terms.v).max(initial=0.0)),
                float(np.abs(f).max(initial=0.0) * np.abs(terms.v).max()))
    assert abs(ydot[2 * n] - p_act) <= RTOL * scale, (name, "P_act")
    assert abs(ydot[2 * n + 1] - p_pass) <= RTOL * scale, (name, "P_passive")
    # the kernel takes σ_min, σ_max from the eigenvalues of the Gram matrix (lift.
    # GRAM_FLOOR): relative error ~ε cond²; the reference's SVD ~ε cond
    c_ref = scaled_cond(kin, part, ref)
    c = ks.scaled_cond()
    eps = np.finfo(float).eps
    assert abs(c - c_ref) <= max(RTOL, 4 * eps * c_ref, eps * c_ref**2) * c_ref, name


def _ring_record(n: int) -> str:
    """A closed planar ring of n bodies on n + 1 revolutes about z (a regular polygon at
    zero angles): one chord whose closure rows span every one of its n + 1 columns."""
    import math

    a = 2 * math.pi / (n + 1)
    turn = f"quat: [{math.cos(a / 2)!r}, 0, 0, {math.sin(a / 2)!r}]"
    lines = ["rbc: 1", f"name: ring{n}", "gravity: [0, 0, -9.81]", "bodies:",
             "  - {name: ground, fixed: true}"]
    lines += [f"  - {{name: b{i}, mass: 0.1, com: [0.05, 0, 0], "
              "inertia: [1e-5, 1e-4, 1e-4, 0, 0, 0]}" for i in range(1, n + 1)]
    lines.append("joints:")
    lines.append("  - {name: J0, type: revolute, axis: [0, 0, 1], parent: ground, child: b1}")
    lines += [f"  - {{name: J{i}, type: revolute, axis: [0, 0, 1], parent: b{i}, "
              f"child: b{i + 1}, parent_frame: {{xyz: [0.1, 0, 0], {turn}}}}}"
              for i in range(1, n)]
    lines.append(f"  - {{name: J{n}, type: revolute, axis: [0, 0, 1], parent: ground, "
                 f"child: b{n}, child_frame: {{xyz: [0.1, 0, 0], {turn}}}}}")
    return "\n".join(lines) + "\n"


def test_a_chord_with_more_columns_than_any_fixed_buffer(tmp_path):
    """A 70-body ring: its one chord has 71 columns, more than the 64-entry scratch rows
    the kernels once started with (numba does not check bounds: rows were written past
    them before being grown). The blocks are now gathered through the layout's static maps
    (no row scratch at all)."""
    from rbc.compiler import compile_record

    src = tmp_path / "ring70.yaml"
    src.write_text(_ring_record(70))
    parted = compile_record(src)[1].stages["rank"]
    kin, part = parted.model, parted.partitions[0]
    lay = KernelModel(kin, part).layout
    # the chord's rows touch every coordinate: 70 tree revolutes and the cut one
    assert lay.segment("ch_col_ptr")[-1] == kin.nv == 71
    _assert_equal_paths("ring70", kin, part)


def test_recursion_over_nodes_equals_the_dense_path(any_record):
    """forward_dynamics (the recursion over the lift's nodes, where the layout has them)
    against the kernels' own dense M_r and Cholesky (KernelModel.terms), on and off the
    manifold: the same system solved by two algorithms. Every shipped and imported record
    splits into nodes (Cassie: 11, the Kangaroo: 21)."""
    from rbc.kernels.layout import S_NNODE, S_RECURSE

    name, kin, part = any_record
    try:
        km = KernelModel(kin, part, recursion=True)
    except LayoutError:  # tendon ports: the reference evaluator runs those
        pytest.skip("tendon ports")
    assert km.layout.segment("sizes")[S_NNODE] >= 1, name
    assert km.layout.segment("sizes")[S_RECURSE] == 1, name
    rng = np.random.default_rng(6)
    for where, q in _states(kin, part, rng):
        u = rng.normal(size=km.nu)
        f = 10.0 * rng.normal(size=km.n_act)
        kt = km.terms(q, u, f)
        ud = km.forward_dynamics(q, u, f)
        v, edu = km.curvature(q, u)
        # the curvature by node sums the same nonzeros in the same order as the dense E
        assert np.array_equal(v, kt.v) and np.array_equal(edu, kt.edu), (name, where)
        back = np.abs(kt.M @ ud - kt.rhs).max() / (
            np.abs(kt.M).max() * np.abs(ud).max() + np.abs(kt.rhs).max())
        assert back <= RTOL, (name, where, "u̇ backward")
        if np.linalg.cond(kt.M) < 100:  # the forward error carries κ(M_r) (see above)
            assert _close(ud, kt.udot) <= RTOL, (name, where, "u̇")


def test_a_node_on_two_bases_keeps_the_dense_path():
    """The tracked excavator's track couplings tie the idler (on the recoil yoke) to the
    sprocket and rollers (on the chassis): that group hangs from two bodies, so no nodes
    are laid out and forward_dynamics is the dense path's u̇, bit for bit."""
    from rbc.compiler import compile_record
    from rbc.kernels.layout import S_NNODE
    from tests.conftest import RECORDS

    parted = compile_record(RECORDS / "excavator_tracked.yaml")[1].stages["rank"]
    kin, part = parted.model, parted.partitions[0]
    km = KernelModel(kin, part, recursion=True)
    assert km.layout.segment("sizes")[S_NNODE] == 0
    assert km.layout.segment("nd_base").size == 0
    rng = np.random.default_rng(7)
    q, u = np.array(part.q_ref), rng.normal(size=km.nu)
    f = rng.normal(size=km.n_act)
    assert np.array_equal(km.forward_dynamics(q, u, f), km.terms(q, u, f).udot)


def test_cache_is_cold_follows_the_stage_kernel(tmp_path, monkeypatch):
    """rbc.kernels.cache_is_cold looks for the compiled stage kernel's cache index (what
    rbc simulate's first-use note keys on)."""
    import rbc.kernels as k

    fake = tmp_path / "kernels"
    (fake / "__pycache__").mkdir(parents=True)
    monkeypatch.setattr(k, "__file__", str(fake / "__init__.py"))
    assert k.cache_is_cold()
    (fake / "__pycache__" / "step.stage-306.py311.nbi").write_bytes(b"")
    assert not k.cache_is_cold()

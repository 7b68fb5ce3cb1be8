"""Hard mechanisms (records/hard/): closure, branches and partitions against closed-form
geometry written independently of rbc's kinematics (records/hard/make_hard.py)."""

from __future__ import annotations

import functools
import math

import numpy as np
import pinocchio as pin
import pytest

from rbc.compiler import compile_record
from rbc.model.kinematics import frame_jacobian, residual
from rbc.model.partition import curvature, lift, partition_at
from rbc.model.solve import MAX_STEP, coordinate_value, solve
from tests.conftest import HARD, hard_generator

NAMES = ("jansen", "stewart66", "bricard", "rssr", "rocker_fourbar", "parallelogram",
         "fast_crank")


@functools.cache
def hard(name: str):
    """(model, default partition) of a hard record, through the real pipeline."""
    _, report = compile_record(HARD / f"{name}.yaml")
    parted = report.stages["rank"]
    return parted.model, parted.partitions[0]


def point(model, q, body: str, xyz) -> np.ndarray:
    """World position (3,) of a body point at q (rbc's forward kinematics)."""
    b = model.record.body_index()[body]
    T, _ = frame_jacobian(model, q, b, pin.SE3(np.eye(3), np.asarray(xyz, dtype=float)))
    return np.array(T.translation)


def test_generator_reproduces_the_records():
    """The committed YAML files are exactly what make_hard.py writes (deterministic)."""
    gen = hard_generator()
    for build in gen.BUILDERS:
        name, text = build()
        assert (HARD / f"{name}.yaml").read_text(encoding="utf-8") == text, name
    assert sorted(b()[0] for b in gen.BUILDERS) == sorted(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_initial_guesses_close(name):
    """Each record's `initial` values close every loop to the 12-digit rounding of the
    generator (and the compiled reference to the solve tolerance)."""
    model, part = hard(name)
    # 12 significant digits of O(1) lengths/angles through ≤ 12-joint paths
    assert np.abs(residual(model, model.initial_configuration())).max() < 5e-11
    assert np.abs(residual(model, part.q_ref)).max() <= 1e-13


def test_bricard_is_overconstrained_with_mobility_one():
    """Orthogonal Bricard: 6 rows, rank 5 (not 6) everywhere along its motion; the solved
    configurations are threefold symmetric and close the DH loop of the generator (an
    independent product of 4×4 matrices) to round-off."""
    gen = hard_generator()
    model, part = hard("bricard")
    assert (model.n_rows, model.nv, part.rank, part.independent.size) == (6, 6, 5, 1)
    j1 = model.v_names.index("J1")
    for phi in (-1.9, -1.0, 0.0, 0.7, 1.5, 2.0):
        q = solve(model, part, {j1: phi}).q
        theta = np.array([coordinate_value(model, q, model.v_names.index(f"J{i}"))
                          for i in range(1, 7)])
        # measured 1.3e-14: the solve closes to round-off and the generator's loop product is
        # a few hundred flops of O(1) numbers; 1e-12 leaves two decades of margin
        assert np.abs(gen.bricard_loop(theta) - np.eye(4)).max() < 1e-12
        # measured 4.4e-14: equal alternate angles up to round-off of the rank-5 solve; 1e-10
        # also covers the angles' worse conditioning near the mode's branch points
        assert np.ptp(theta[0::2]) < 1e-10 and np.ptp(theta[1::2]) < 1e-10
        assert theta[1] == pytest.approx(gen.bricard_even(phi), abs=1e-10)
        assert partition_at(model, q).rank == 5


def test_bricard_independent_coordinate_has_a_turning_point():
    """J1 turns back at 2π/3 (ψ = 0): its R_p becomes singular at unchanged rank, and no
    configuration with J1 beyond 2π/3 exists."""
    model, part = hard("bricard")
    j1 = model.v_names.index("J1")
    conds = []
    for phi in (1.0, 2.0, 2.0943):
        q = solve(model, part, {j1: phi}).q
        conds.append(lift(model, part, q).cond)
        assert partition_at(model, q).rank == 5
    assert conds[2] > 100 * conds[0]  # cond ∝ 1/ψ → ∞ at the turning point
    from rbc.model.closure import ClosureError

    with pytest.raises(ClosureError):
        solve(model, part, {j1: 2.2})


def jansen_foot(model, q) -> np.ndarray:
    foot = model.record.bodies[model.record.body_index()["foot"]]
    return point(model, q, "foot", dict(foot.frames)["toe"].xyz)[:2]


def test_jansen_sixteen_crank_angles_stay_on_the_reference_branch():
    """Acceptance (#12): `solve` from the compiled reference to 16 crank angles over a full
    turn lands on the branch continuous with the reference — the foot equals the
    closed-form circle-intersection geometry of that branch (1e-9 m: the solve tolerance
    through 1 m of linkage) and the chained 2π/128 small-step solves — and no accepted
    continuation step exceeds the cap."""
    gen = hard_generator()
    model, part = hard("jansen")
    j = model.v_names.index("O")
    theta0 = coordinate_value(model, part.q_ref, j)
    q_chain = part.q_ref
    chained = {}
    for k in range(1, 129):
        q_chain = solve(model, part, {j: theta0 + 2 * math.pi * k / 128}, q_chain).q
        if k % 8 == 0:
            chained[k // 8] = jansen_foot(model, q_chain)
    largest = 0.0
    for k in range(1, 17):
        theta = theta0 + 2 * math.pi * k / 16
        r = solve(model, part, {j: theta})
        largest = max(largest, r.stats.largest_step)
        foot = jansen_foot(model, r.q)
        # a wrong branch moves the foot by centimetres; 1e-9 m is the solve tolerance times
        # the linkage's lever ratios (~10) with margin (measured 2.2e-13 m)
        assert np.abs(foot - gen.jansen_points(theta)["G"]).max() < 1e-9, k
        assert np.abs(foot - chained[k]).max() < 1e-9, k
    assert 0.4 < largest <= MAX_STEP * (1 + 1e-12)


def test_jansen_branch_guards_are_each_needed(monkeypatch):
    """Defence in depth against branch jumps, on the solve to 11/16 of a crank turn: with
    the step cap removed the corrector's contraction test still rejects the long steps (the
    right branch is kept); with the cap, the jump test and the contraction test all removed,
    the continuation converges onto another assembly (the foot decimetres away)."""
    import rbc.model.closure as closure_module
    import rbc.model.solve as solve_module

    gen = hard_generator()
    model, part = hard("jansen")
    j = model.v_names.index("O")
    theta = coordinate_value(model, part.q_ref, j) + 2 * math.pi * 11 / 16
    expected = gen.jansen_points(theta)["G"]
    monkeypatch.setattr(solve_module, "MAX_STEP", 100.0)
    assert np.abs(jansen_foot(model, solve(model, part, {j: theta}).q) - expected).max() < 1e-9
    monkeypatch.setattr(solve_module, "JUMP_RATIO", np.inf)
    monkeypatch.setattr(closure_module, "CONTRACTION", np.inf)
    foot = jansen_foot(model, solve(model, part, {j: theta}).q)
    assert np.abs(foot - expected).max() > 0.1


def test_rssr_rocker_turning_point_and_idle_spin():
    """Spatial RSSR: the default partition keeps the actuated rocker R2 and the coupler's
    idle spin independent; solves of R2 land on the closed-form crank angle of the
    record's branch, and R2's R_p degrades towards its turning point."""
    gen = hard_generator()
    model, part = hard("rssr")
    names = [model.v_names[j] for j in part.independent]
    assert part.rank == 6 and names[-1] == "R2" and names[0].startswith("S")
    r2, r1 = model.v_names.index("R2"), model.v_names.index("R1")
    thetas = np.linspace(-math.pi, math.pi, 721)
    psis = np.array([gen.rssr_points(t)[2] for t in thetas])
    psi0 = coordinate_value(model, part.q_ref, r2)
    for dpsi in (-0.2, 0.1, 0.25):
        q = solve(model, part, {r2: psi0 + dpsi}).q
        theta = coordinate_value(model, q, r1)
        assert gen.rssr_points(theta)[2] == pytest.approx(psi0 + dpsi, abs=1e-10)
        # the coupler joins the two tips (closed form) at the solved crank angle
        P, Q, _ = gen.rssr_points(theta)
        assert np.linalg.norm(Q - P) == pytest.approx(gen.RSSR["c"], abs=1e-12)
    top = float(np.max(np.unwrap(psis)))  # the rocker's extreme on this branch
    q_near = solve(model, part, {r2: top - 1e-3}).q
    assert lift(model, part, q_near).cond > 10 * lift(model, part, part.q_ref).cond


def test_parallelogram_has_a_constant_lift():
    """Parallelogram: E is the same at every configuration and Ė u = 0 (exactly the case
    where `curvature.without_term` measures nothing)."""
    model, part = hard("parallelogram")
    a = model.v_names.index("A")
    E0 = lift(model, part, part.q_ref).E
    for x in (0.5, 1.6, 2.6):
        q = solve(model, part, {a: x}).q
        L = lift(model, part, q)
        # a parallelogram's lift is constant in exact arithmetic: only round-off of O(1)
        # entries through a 6-row solve remains
        assert np.abs(L.E - E0).max() < 1e-12
        _, edu = curvature(model, part, q, np.array([3.0]), L)
        assert np.abs(edu).max() < 1e-12
    assert coordinate_value(model, part.q_ref, model.v_names.index("D")) == pytest.approx(
        coordinate_value(model, part.q_ref, a), abs=1e-12)


def test_rocker_fourbar_and_fast_crank_partitions():
    """The rocker-driven four-bar keeps its rocker independent; the fast crank its crank."""
    model, part = hard("rocker_fourbar")
    assert part.joints == ("D",)
    model, part = hard("fast_crank")
    assert part.joints == ("A",)


# ------------------------------------------------------------------ general 6-6 platform

def platform_residual(g: dict, legs: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Leg-length residuals (6,) of a platform pose x = (t, rotation vector) [m, rad]."""
    from scipy.spatial.transform import Rotation

    R = Rotation.from_rotvec(x[3:]).as_matrix()
    return np.linalg.norm(g["p"] @ R.T + x[:3] - g["b"], axis=1) - legs


@functools.cache
def stewart66_modes(seeds: int = 160) -> tuple[np.ndarray, list[tuple[np.ndarray, np.ndarray]]]:
    """Leg lengths of the home pose and the distinct assembly modes at those lengths, found
    by an independent solver: scipy least_squares on the pose (position and rotation
    vector; no rbc code) from ``seeds`` random starts, solutions equal to 1e-6 merged.

    Returns ``(legs (6,), [(t (3,), R (3, 3)), …])``.
    """
    from scipy.optimize import least_squares
    from scipy.spatial.transform import Rotation

    g = hard_generator().stewart66_geometry()
    legs = np.linalg.norm(g["p"] @ g["R"].T + g["t"] - g["b"], axis=1)
    rng = np.random.default_rng(20260927)
    modes: list[tuple[np.ndarray, np.ndarray]] = []
    for _ in range(seeds):
        x0 = np.concatenate([rng.uniform(-0.8, 0.8, 3),
                             Rotation.random(random_state=int(rng.integers(2**31))).as_rotvec()])
        r = least_squares(lambda x: platform_residual(g, legs, x), x0, xtol=1e-15,
                          ftol=1e-15, gtol=1e-15)
        if np.abs(r.fun).max() > 1e-12:
            continue  # a local minimum that is not an assembly
        R = Rotation.from_rotvec(r.x[3:]).as_matrix()
        if all(np.abs(t - r.x[:3]).max() > 1e-6 or np.abs(Rm - R).max() > 1e-6
               for t, Rm in modes):
            modes.append((r.x[:3].copy(), R))
    return legs, modes


def test_stewart66_has_several_assembly_modes():
    """The independent solver finds at least five distinct real assembly modes at the home
    leg lengths, the compiled reference configuration being one of them."""
    model, part = hard("stewart66")
    legs, modes = stewart66_modes()
    assert len(modes) >= 5
    T = frame_jacobian(model, part.q_ref, model.record.body_index()["platform"],
                       pin.SE3.Identity())[0]
    home = [k for k, (t, R) in enumerate(modes)
            if np.abs(t - T.translation).max() < 1e-9 and np.abs(R - T.rotation).max() < 1e-9]
    assert len(home) == 1
    ell = np.array([coordinate_value(model, part.q_ref, model.v_names.index(f"P{i}"))
                    for i in range(1, 7)])
    # the reference is closed to 1e-13 and the legs are its own coordinates (m, O(1))
    assert np.abs(ell - legs).max() < 1e-12


def mode_guess(mode: tuple[np.ndarray, np.ndarray], rng: np.random.Generator,
               eps: float) -> dict[str, list[float] | float]:
    """Joint values of an assembly mode, each perturbed uniformly by up to ``eps`` [rad, m]
    (U angles, leg lengths; the S quaternions by a random rotation vector of up to ``eps``
    per axis), as record ``initial`` values by joint name."""
    from scipy.spatial.transform import Rotation

    gen = hard_generator()
    out: dict[str, list[float] | float] = {}
    for i, v in enumerate(gen.stewart66_legs(gen.stewart66_geometry(), mode[1], mode[0]), 1):
        out[f"U{i}"] = [float(x + rng.uniform(-eps, eps)) for x in v["U"]]
        out[f"P{i}"] = float(v["P"] + rng.uniform(-eps, eps))
        dR = Rotation.from_rotvec(rng.uniform(-eps, eps, 3)).as_matrix()
        out[f"S{i}"] = gen.quat_wxyz(v["S"] @ dR)
    return out


def platform_pose_error(model, q, mode) -> float:
    """max(|t − t*| / |t*|, |R − R*|) of the platform pose at q against a mode."""
    T = frame_jacobian(model, q, model.record.body_index()["platform"], pin.SE3.Identity())[0]
    t, R = mode
    return max(float(np.abs(T.translation - t).max() / np.linalg.norm(t)),
               float(np.abs(T.rotation - R).max()))


def test_stewart66_compile_and_solve_land_on_the_guessed_mode(tmp_path):
    """Acceptance (#12): from guesses within 0.02 (rad and m, legs included) of each
    assembly mode, compile + `solve` of the six leg lengths land on that mode (pose error
    ≤ 1e-9 relative; measured ≤ 4e-12: the solve tolerance through cond(R_p))."""
    import yaml

    from rbc.model.compiled import CompiledModel
    from rbc.model.solve import solve_named

    legs, modes = stewart66_modes()
    rng = np.random.default_rng(7)
    base = yaml.safe_load((HARD / "stewart66.yaml").read_text(encoding="utf-8"))
    from rbc.compiler import compile_to_file

    for k, mode in enumerate(modes):
        guess = mode_guess(mode, rng, 0.02)
        for j in base["joints"]:
            j["initial"] = guess[j["name"]]
        src = tmp_path / f"mode{k}.yaml"
        src.write_text(yaml.safe_dump(base, sort_keys=False), encoding="utf-8")
        compile_to_file(src, tmp_path / f"mode{k}.h5")
        model = CompiledModel.from_bundle(tmp_path / f"mode{k}.h5")
        r = solve_named(model, None, {f"P{i}": float(legs[i - 1]) for i in range(1, 7)})
        assert platform_pose_error(model, r.q, mode) <= 1e-9, k


def test_stewart66_solve_from_a_guess_lands_on_the_guessed_mode(tmp_path):
    """`solve --guess`: one bundle (compiled at home), a guess near each mode given as
    joint values (quaternions with 4 decimals: normalised with a note), the legs set to the
    mode's lengths — the solve lands on the guessed mode, not on home's."""
    from rbc.compiler import compile_to_file
    from rbc.model.compiled import CompiledModel
    from rbc.model.solve import solve_named

    compile_to_file(HARD / "stewart66.yaml", tmp_path / "s66.h5")
    model = CompiledModel.from_bundle(tmp_path / "s66.h5")
    legs, modes = stewart66_modes()
    rng = np.random.default_rng(11)
    for k, mode in enumerate(modes[:4]):
        guess = {n: np.round(v, 4).tolist() if n.startswith("S") else np.atleast_1d(v).tolist()
                 for n, v in mode_guess(mode, rng, 0.02).items()}
        r = solve_named(model, None, {f"P{i}": float(legs[i - 1]) for i in range(1, 7)}, guess)
        assert platform_pose_error(model, r.q, mode) <= 1e-9, k
        # 4-decimal quaternions are off unit norm by ~1e-5: normalised, each with a note
        assert len(r.notes) >= 3 and all("normalised" in n for n in r.notes)


def test_solve_repartitions_at_a_coordinate_singularity_of_the_held_legs():
    """General 6-6 platform, P1 alone to 1.0 m with the other legs held: a fifth of the way
    the held set's R_p becomes singular (cond ~1e3); `solve` re-selects the unprescribed
    independent coordinates there (logged, releasing some legs) and closes at P1 = 1.0;
    the legs still held keep their values."""
    model, part = hard("stewart66")
    r = solve(model, part, {model.v_names.index("P1"): 1.0})
    assert r.residual <= 1e-12 and len(r.events) >= 1
    e = r.events[0]
    assert e["kind"] == "reconfiguration" and e["cond_after"] * 4 <= e["cond_before"]
    assert e["released"] and "P1" in e["new"] and "P1" not in e["released"]
    assert coordinate_value(model, r.q, model.v_names.index("P1")) == 1.0
    for name in e["new"]:
        if name.startswith("P") and name != "P1":
            j = model.v_names.index(name)
            assert coordinate_value(model, r.q, j) == pytest.approx(
                coordinate_value(model, part.q_ref, j), abs=1e-12), name

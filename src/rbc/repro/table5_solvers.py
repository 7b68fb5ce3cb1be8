"""``table5-solvers``: forward-dynamics solvers on Stewart and the excavator against the
50-digit reference (issue 15; DESIGN.md §6 metrics).

**States.** Set A: states along the shipped reference motions
(:func:`rbc.repro.models.reference_states`: closed configurations, the reference's speeds,
the feedforward port efforts). Set B: :func:`rbc.verify.states.make_states` (sampled
closed configurations, random speeds and port efforts, one external wrench; seed
20260927). 48 states per set and robot (quick: 2).

**Solvers**, each given the same state (q, v = E u, port efforts f, wrenches):

* ``rbc reduced`` — :func:`rbc.model.dynamics.reduced_terms` + ``forward_dynamics``;
* ``Pinocchio constraintDynamics`` — :func:`rbc.backends.pinocchio.constraint_dynamics`
  (proximal settings :data:`rbc.backends.pinocchio.PROXIMAL`: accuracy 1e-13, μ = 1e-9,
  ≤ 50 iterations);
* ``Pinocchio lcaba μ=1e-6`` / ``μ=1e-2`` — ``pin.lcaba`` (loop-constrained ABA, after
  ``pin.computeJointMinimalOrdering``) with ``pin.ProximalSettings(1e-13, μ, 50)`` on the
  same constraint models;
* ``MuJoCo default solref`` / ``stiffest solref`` — ``qacc`` of ``mj_forward`` on the
  exported MJCF (timestep 1 ms): the loop equalities at MuJoCo's defaults
  (solref (0.02, 1), solimp (0.9, 0.95, 0.001, 0.5, 2)), or as exported (solref
  (2·timestep, 1) — MuJoCo clamps smaller time constants — and solimp (0.99, 0.999, 0.001)).
  Port efforts as ``ctrl``; the wrench as ``xfrc_applied`` at the body's centre of mass;
  ``qacc`` mapped to rbc's tree accelerations through the joints' velocity maps.

**Metrics** against the 50-digit reference a* (:mod:`rbc.verify.kkt50`): δ_a and δ_f
(DESIGN.md §6) and the acceleration closure residual r_c of each cut joint — the part of
``J_rel a_T + γ₆ − Ṡ q̇`` its motion subspace does not absorb, angular [rad/s²] and linear
[m/s²] rows apart (from the reference's own rows, not from rbc's lift); time per call
(median over repeated calls at the state, in the worker process).

**Reference sensitivity**: the same KKT solve in float64 (LAPACK SVD) against the 50-digit
one, and the 50-digit solve on two alternative independent row subsets (column-pivoted QR
of Jᵀ over the rows in their order and in reverse order) against all rows.
"""

from __future__ import annotations

import functools
import time
from dataclasses import replace

import numpy as np

from rbc.batch import task_rng
from rbc.repro import models
from rbc.repro.metrics import closure_residual
from rbc.repro.outcome import Outcome, Table
from rbc.repro.plots import pyplot, save
from rbc.repro.report import fmt
from rbc.verify.checks import make_check

TITLE = "Table 5: forward-dynamics solvers vs the 50-digit reference (Stewart, excavator)"
ROBOTS = ("stewart", "excavator")
SOLVERS = ("rbc reduced", "Pinocchio constraintDynamics", "Pinocchio lcaba μ=1e-6",
           "Pinocchio lcaba μ=1e-2", "MuJoCo default solref", "MuJoCo stiffest solref")
#: States per set and robot (full, quick).
STATES = {False: 48, True: 2}
#: Calls per solver and state for the time per call (full, quick).
REPEATS = {False: 20, True: 3}
#: Acceptance: rbc's δ_a against the 50-digit reference on every state (DESIGN.md §6).
DELTA_A_LIMIT = 1e-11
#: MuJoCo's timestep of the export [s] (the rbc simulate default); sets the stiffest solref.
MJ_TIMESTEP = 1e-3
MJ_DEFAULT_SOLREF = (0.02, 1.0)
MJ_DEFAULT_SOLIMP = (0.9, 0.95, 0.001, 0.5, 2.0)
LCABA_MU = (1e-6, 1e-2)


# ------------------------------------------------------------------ solvers at one state

@functools.cache
def _engines(robot: str):
    """Per-process solver objects of one robot: Pinocchio datas, MuJoCo models."""
    import pinocchio as pin

    from rbc.backends.mjcf_export import export_mjcf
    from rbc.backends.mujoco_log import mujoco
    from rbc.backends.pinocchio import pinocchio_model

    kin, part, dm, dd = models.dynamics(robot)
    pm = pinocchio_model(kin, part)
    cd_data, cd_cdata = pm.tree.model.createData(), pm.constraint_datas()
    pin.initConstraintDynamics(pm.tree.model, cd_data, pm.constraints, cd_cdata)
    lc_data, lc_cdata = pm.tree.model.createData(), pm.constraint_datas()
    pin.computeJointMinimalOrdering(pm.tree.model, lc_data, pm.constraints)
    xml = export_mjcf(kin, part, timestep=MJ_TIMESTEP).to_string()
    stiff = mujoco.MjModel.from_xml_string(xml)
    default = mujoco.MjModel.from_xml_string(xml)
    default.eq_solref[:] = MJ_DEFAULT_SOLREF
    default.eq_solimp[:] = MJ_DEFAULT_SOLIMP
    return {"pm": pm, "cd": (cd_data, cd_cdata), "lc": (lc_data, lc_cdata),
            "mj": {"MuJoCo default solref": (default, mujoco.MjData(default)),
                   "MuJoCo stiffest solref": (stiff, mujoco.MjData(stiff))}}


def _velocity_map(kin, m, q: np.ndarray) -> np.ndarray:
    """P (m.nv, nv_T) with ``qvel = P v_T`` at q (and ``qacc = P a_T``: the blocks are
    constant for hinge, slide and ball joints, the only kinds on these robots' trees)."""
    from rbc.backends.mjcf_export import mj_joints, velocity_block
    from rbc.backends.mujoco_log import mujoco
    from rbc.ir import spatial as sp
    from rbc.model.tree import tree_joint

    P = np.zeros((m.nv, kin.nv_tree))
    for k in kin.tree_edges:
        if not kin.kinds[k].nv:
            continue
        if kin.edge_types[k] in ("free", "planar"):
            raise ValueError(f"{kin.edge_names[k]}: the qacc map assumes constant velocity "
                             "blocks (no free or planar tree joints)")
        j = tree_joint(kin, k)
        first = mj_joints(kin, k, j)[0].name
        dof = int(m.jnt_dofadr[mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, first)])
        P[dof: dof + kin.kinds[k].nv, kin.v_slice(k)] = velocity_block(
            j, q[kin.q_slice(k)], sp.se3_from_pose(j.child_frame))
    return P


def _mujoco_state(kin, part, m, d, state, v: np.ndarray) -> np.ndarray:
    """Set qpos/qvel/ctrl/xfrc_applied of the state; returns P of :func:`_velocity_map`."""
    from rbc.backends.mjcf_export import export_mjcf
    from rbc.backends.mujoco_log import mujoco

    P = _velocity_map(kin, m, state.q)
    d.qpos[:] = export_mjcf(kin, replace(part, q_ref=state.q), timestep=MJ_TIMESTEP).qpos
    d.qvel[:] = P @ v[: kin.nv_tree]
    d.ctrl[:] = state.f
    d.xfrc_applied[:] = 0.0
    mujoco.mj_kinematics(m, d)
    for w in state.wrenches:  # [n; f] in world axes at a body point → force and torque at the COM
        b = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, w.body)
        x = d.xpos[b] + d.xmat[b].reshape(3, 3) @ np.asarray(w.point, dtype=float)
        n, f = np.asarray(w.wrench[:3], dtype=float), np.asarray(w.wrench[3:], dtype=float)
        d.xfrc_applied[b, :3] += f
        d.xfrc_applied[b, 3:] += n + np.cross(x - d.xipos[b], f)
    return P


def _timed(fn, repeats: int):
    """``(last result, median seconds per call)`` of ``repeats`` calls of fn()."""
    times, out = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return out, float(np.median(times))


def row_bases(kin, J: np.ndarray, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Two other ways of writing the same constraint ``J a_T = −γ`` (k × m bases B):

    * ``recombined`` — each cut joint's rows mixed by a random orthogonal matrix (Haar, from
      the QR of a Gaussian matrix): the same row space, and where a joint's rows include
      identically zero ones (the out-of-plane rows of a planar loop) the mixed rows are all
      nonzero and linearly dependent, which the truncated SVD must sort out;
    * ``independent subset`` — rank rows of the recombined ones chosen by column-pivoted QR
      of ``(B J)ᵀ`` over the rows in a random order.
    """
    import scipy.linalg

    from rbc.verify.kkt50 import SVD_RTOL

    m = J.shape[0]
    B = np.eye(m)
    start = 0
    for e in kin.chord_edges:
        n = 6 - kin.kinds[e].nv
        Q, R = np.linalg.qr(rng.normal(size=(n, n)))
        B[start: start + n, start: start + n] = Q * np.sign(np.diag(R))
        start += n
    order = rng.permutation(m)
    _, R, piv = scipy.linalg.qr((B @ J)[order].T, pivoting=True, mode="economic")
    d = np.abs(np.diag(R))
    r = int(np.sum(d > SVD_RTOL * d[0])) if d.size and d[0] > 0 else 0
    keep = np.sort(order[piv[:r]])
    return {"recombined": B, "independent subset": B[keep]}


def solve_state(case: tuple) -> dict:
    """Every solver at one state: ``case = (robot, set, index, State, repeats, seed)``
    (the seed draws the row bases of :func:`row_bases`).

    Returns:
        ``{"robot", "set", "index", "solvers": {name: {"delta_a", "delta_f", "rc_ang",
        "rc_lin", "us", "iterations"}}, "sensitivity": {name: δ}, "rows", "rank",
        "subset_size"}``.
    """
    import pinocchio as pin

    from rbc.backends.mujoco_log import mujoco
    from rbc.backends.pinocchio import constraint_dynamics
    from rbc.model.dynamics import (
        forward_dynamics,
        passive_efforts,
        reduced_terms,
        tree_acceleration,
    )
    from rbc.verify import kkt50
    from rbc.verify.dynamics import delta, delta_f

    robot, set_name, index, s, repeats, seed = case
    kin, part, dm, dd = models.dynamics(robot)
    eng = _engines(robot)
    nt = kin.nv_tree
    p = kkt50.problem(dm, dd, s.q, s.u, part.independent, s.f, s.wrenches)
    ref = kkt50.accelerations(p)
    rows = kkt50.cut_rows(dm, dd, s.q)
    out: dict[str, dict] = {}

    def record(name: str, a: np.ndarray, us: float, iterations: int | None = None) -> None:
        ang, lin = closure_residual(kin, rows, gamma, s.q, a)
        out[name] = {"delta_a": delta(a, ref), "delta_f": delta_f(p.M, p.h, a, ref),
                     "rc_ang": ang, "rc_lin": lin, "us": 1e6 * us, "iterations": iterations}

    def ours():
        t = reduced_terms(dm, dd, part, s.q, s.u, s.f, s.wrenches)
        return t, forward_dynamics(dm, t)

    (terms, udot), sec = _timed(ours, repeats)
    v = terms.v
    gamma, _ = kkt50.cut_drift(dm, dd, s.q, v)
    record("rbc reduced", tree_acceleration(terms, udot)[:nt], sec)
    tau = terms.tau_full + passive_efforts(dm, s.q, v)[1]
    tau[:nt] += terms.tree.g  # Pinocchio adds gravity itself
    pm, tm = eng["pm"], eng["pm"].tree
    a, sec = _timed(lambda: constraint_dynamics(pm, *eng["cd"], s.q, v, tau[:nt]), repeats)
    record("Pinocchio constraintDynamics", a, sec)
    qp, vp, taup = tm.q_pin(s.q[: kin.nq_tree]), tm.v_pin(v[:nt]), tm.v_pin(tau[:nt])
    for mu in LCABA_MU:
        prox = pin.ProximalSettings(1e-13, mu, 50)
        a, sec = _timed(lambda prox=prox: pin.lcaba(tm.model, eng["lc"][0], qp, vp, taup,
                                                    pm.constraints, eng["lc"][1], prox),
                        repeats)
        record(f"Pinocchio lcaba μ={mu:.0e}".replace("e-0", "e-"), tm.v_rbc(a), sec,
               int(prox.iter))
    for name, (m, d) in eng["mj"].items():
        P = _mujoco_state(kin, part, m, d, s, v)
        _, sec = _timed(lambda m=m, d=d: mujoco.mj_forward(m, d), repeats)
        record(name, np.linalg.lstsq(P, d.qacc, rcond=None)[0], sec, int(d.solver_niter[0]))
    bases = row_bases(kin, p.J, task_rng(seed, index + (0 if set_name == "A" else 10**6)))
    sens = {"float64 solve": delta(kkt50.accelerations_double(p), ref)}
    for name, B in bases.items():
        sens[f"rows {name}"] = delta(kkt50.accelerations(p, B), ref)
    return {"robot": robot, "set": set_name, "index": index, "solvers": out,
            "sensitivity": sens, "rows": int(p.J.shape[0]), "rank": int(p.ns.rank),
            "subset_size": int(bases["independent subset"].shape[0])}


def make_states(case: tuple) -> list:
    """The states of one robot and set: ``case = (robot, set, n, seed)``."""
    from rbc.verify.states import make_states as sampled

    robot, set_name, n, seed = case
    if set_name == "A":
        return models.reference_states(robot, n)
    kin, part, _, _ = models.dynamics(robot)
    return sampled(kin, part, n, seed)[1]


# ------------------------------------------------------------------ the target

def _stats(rows: list[dict], robot: str, set_name: str | None, solver: str, key: str
           ) -> tuple[float, float]:
    vals = [r["solvers"][solver][key] for r in rows
            if r["robot"] == robot and (set_name is None or r["set"] == set_name)]
    return (float(np.max(vals)), float(np.median(vals))) if vals else (np.nan, np.nan)


def run(ctx) -> Outcome:
    """Solve every state with every solver (module docstring)."""
    n, repeats = STATES[ctx.quick], REPEATS[ctx.quick]
    sets = ctx.bag(make_states, [(r, s, n, ctx.seed) for r in ROBOTS for s in "AB"],
                   "state sets")
    cases = [(r, s, st.index, st, repeats, ctx.seed)
             for (r, s), states in zip([(r, s) for r in ROBOTS for s in "AB"], sets,
                                       strict=True)
             for st in (states or [])]
    rows = [r for r in ctx.bag(solve_state, cases, "states") if r is not None]
    main = []
    for robot in ROBOTS:
        for set_name in "AB":
            for solver in SOLVERS:
                da, df = (_stats(rows, robot, set_name, solver, k) for k in ("delta_a",
                                                                             "delta_f"))
                ra, rl = (_stats(rows, robot, set_name, solver, k) for k in ("rc_ang",
                                                                             "rc_lin"))
                us = _stats(rows, robot, set_name, solver, "us")[1]
                it = [r["solvers"][solver]["iterations"] for r in rows
                      if r["robot"] == robot and r["set"] == set_name]
                its = "—" if not it or it[0] is None else f"{int(np.median(it))}"
                main.append((robot, set_name, solver, fmt(da[0], 2), fmt(da[1], 2),
                             fmt(df[0], 2), fmt(df[1], 2), fmt(rl[0], 2), fmt(rl[1], 2),
                             fmt(ra[0], 2), fmt(ra[1], 2), fmt(us, 3), its))
    sens_names = ("float64 solve", "rows recombined", "rows independent subset")
    sens = []
    for robot in ROBOTS:
        for set_name in "AB":
            sel = [r for r in rows if r["robot"] == robot and r["set"] == set_name]
            if not sel:
                continue
            cells = []
            for name in sens_names:
                v = [r["sensitivity"][name] for r in sel]
                cells += [fmt(max(v), 2), fmt(float(np.median(v)), 2)]
            sens.append((robot, set_name,
                         f"{sel[0]['rows']} / {sel[0]['rank']} / {sel[0]['subset_size']}",
                         *cells))
    figures = {}
    for robot in ROBOTS:
        for solver, key in zip(SOLVERS, ("rbc", "pinocchio_cd", "lcaba_1e-6", "lcaba_1e-2",
                                         "mujoco_default", "mujoco_stiff"), strict=True):
            figures[f"{robot}.{key}.delta_a_max"] = _stats(rows, robot, None, solver,
                                                           "delta_a")[0]
            figures[f"{robot}.{key}.us"] = _stats(rows, robot, None, solver, "us")[1]
    all_rbc = [r["solvers"]["rbc reduced"]["delta_a"] for r in rows]
    figures["rbc.delta_a_max"] = max(all_rbc) if all_rbc else None
    expected = len(ROBOTS) * 2 * n
    checks = [make_check("table5.rbc.delta_a", max(all_rbc) if all_rbc else np.nan,
                         DELTA_A_LIMIT, "1", f"rbc reduced vs 50-digit KKT, max over "
                         f"{len(all_rbc)} states (Stewart and excavator, sets A and B)"),
              make_check("table5.states", len(rows), expected, "states",
                         f"states solved by every solver ({expected} expected)",
                         lower_bound=True)]
    plots = [_plot_deltas(ctx, rows), _plot_times(ctx, rows), _plot_sensitivity(ctx, rows)]
    mj = {r: _stats(rows, r, None, "MuJoCo stiffest solref", "delta_a")[0] for r in ROBOTS}
    key = (f"rbc δ_a ≤ {fmt(figures['rbc.delta_a_max'], 2)} on all {len(all_rbc)} states "
           f"(limit 1e-11); Pinocchio cD ≤ "
           f"{fmt(max(figures[f'{r}.pinocchio_cd.delta_a_max'] for r in ROBOTS), 2)}; "
           f"MuJoCo stiffest δ_a max {fmt(mj['stewart'], 2)} (Stewart), "
           f"{fmt(mj['excavator'], 2)} (excavator)")
    setup = (
        "The paper's solver table is not reproduced from its own robots: we run Stewart and "
        "the excavator of records/, with set A taken along the shipped reference motions "
        "(feedforward efforts, no wrench) and set B sampled (seed 20260927, random speeds, "
        "efforts and one external wrench). Every solver gets the same state with v = E u "
        "from rbc's lift; the 50-digit reference uses its own null-space speeds v* (equal "
        "to ~1e-15). Pinocchio's constraint models are those of rbc's Pinocchio export "
        "(revolute cuts as two CONTACT_3D, one redundant row each); MuJoCo runs the "
        "exported MJCF with the loop equalities soft, at a 1 ms timestep for the stiffest "
        "solref. Times are per call from Python in a Dask worker process, the median over "
        f"{repeats} calls per state, on a shared 2-core machine: compare ratios, not "
        "absolute values. The only published figure given to us is the paper's δ_a on its "
        "own robot (Go2, issue 17); nothing else of its table is stated in the issues or "
        "DESIGN.md, so those rows say 'not published'.")
    head = ("robot", "set", "solver", "δ_a max", "δ_a median", "δ_f max", "δ_f median",
            "r_c lin max [m/s²]", "r_c lin median", "r_c ang max [rad/s²]", "r_c ang median",
            "time per call [µs]", "iterations (median)")
    return Outcome(
        figures=figures, key_figures=key, setup=setup,
        tables=[Table("Solvers against the 50-digit reference", head, tuple(main),
                      "δ_a, δ_f relative (DESIGN.md §6); r_c over the cut joints' rows; "
                      "iterations: Pinocchio proximal iterations (lcaba), MuJoCo solver "
                      "iterations."),
                Table("Reference sensitivity (δ_a of the variant against the 50-digit "
                      "solve on all rows)",
                      ("robot", "set", "rows / rank / subset", "float64 max",
                       "float64 median", "recombined max", "recombined median",
                       "subset max", "subset median"), tuple(sens),
                      "float64: the same null-space solve in double precision (LAPACK SVD). "
                      "Recombined: every cut joint's rows mixed by a random orthogonal "
                      "matrix (planar loops then have dependent nonzero rows). Subset: rank "
                      "rows of the recombined ones by pivoted QR in a random order. Both in "
                      "50 digits with their own null space; seeds from the root seed and "
                      "the state index.")],
        checks=checks, plots=plots,
        data={"states": rows, "solvers": SOLVERS, "mujoco_timestep": MJ_TIMESTEP,
              "lcaba_mu": LCABA_MU, "repeats": repeats},
        seeds={"set B (rbc.verify.states.make_states)": ctx.seed})


def _state_axis(rows: list[dict], robot: str) -> tuple[list[dict], np.ndarray]:
    sel = sorted((r for r in rows if r["robot"] == robot), key=lambda r: (r["set"], r["index"]))
    return sel, np.arange(len(sel))


def _plot_deltas(ctx, rows: list[dict]) -> str:
    plt = pyplot()
    fig, axes = plt.subplots(1, len(ROBOTS), figsize=(12, 4.2), sharey=True)
    for ax, robot in zip(np.atleast_1d(axes), ROBOTS, strict=True):
        sel, x = _state_axis(rows, robot)
        for solver in SOLVERS:
            ax.semilogy(x, [max(r["solvers"][solver]["delta_a"], 1e-17) for r in sel], ".",
                        ms=4, label=solver)
        ax.axhline(DELTA_A_LIMIT, color="k", lw=0.8, ls="--", label="limit 1e-11 (rbc)")
        ax.set_title(f"{robot}: set A then set B")
        ax.set_xlabel("state index [1]")
        ax.set_ylabel("δ_a vs 50-digit reference [1]")
    np.atleast_1d(axes)[0].legend(fontsize=7)
    return save(fig, ctx.file("delta_a.png"))


def _plot_times(ctx, rows: list[dict]) -> str:
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(8, 4))
    y = np.arange(len(SOLVERS))
    for k, robot in enumerate(ROBOTS):
        us = [_stats(rows, robot, None, s, "us")[1] for s in SOLVERS]
        ax.barh(y + 0.4 * k, us, height=0.4, label=robot)
    ax.set_yticks(y + 0.2, SOLVERS)
    ax.set_xscale("log")
    ax.set_xlabel("time per call, median [µs]")
    ax.set_ylabel("solver [-]")
    ax.legend()
    return save(fig, ctx.file("time_per_call.png"))


def _plot_sensitivity(ctx, rows: list[dict]) -> str:
    plt = pyplot()
    fig, axes = plt.subplots(1, len(ROBOTS), figsize=(12, 4), sharey=True)
    for ax, robot in zip(np.atleast_1d(axes), ROBOTS, strict=True):
        sel, x = _state_axis(rows, robot)
        for name in sel[0]["sensitivity"] if sel else ():
            ax.semilogy(x, [max(r["sensitivity"][name], 1e-18) for r in sel], ".", ms=4,
                        label=name)
        ax.set_title(f"{robot}: reference variants vs 50-digit, all rows")
        ax.set_xlabel("state index (set A then B) [1]")
        ax.set_ylabel("δ_a of the variant [1]")
        ax.legend(fontsize=7)
    return save(fig, ctx.file("reference_sensitivity.png"))

"""``table6-compute``: what the compiled structure saves at run time (issue 15) — corrector
evaluations per motion step, module-local against global updates, and the run-time
(compiled tree) against the path-product evaluator inside a rollout.

* **Corrector evaluations** (:func:`rbc.bench.corrector.bench_corrector`): from the same
  closed configuration and lift predictor every 1 ms step (independent speeds
  ``s_i cos(2π·0.5 Hz·t + iπ/n)``), the analytic per-module Gauss–Newton against
  ``scipy.optimize.least_squares`` with a dense and a coloured (sparsity-pattern) 2-point
  finite-difference Jacobian; evaluations of the residual per step (the analytic count is
  residual + Jacobian evaluations). 200 steps (quick: 10) on Stewart and the excavator.
* **Module-local vs global updates**: the same benchmark's per-module Newton (only the
  modules whose inputs moved) against one Newton over every row and dependent column, on
  the excavator with all its independent speeds moving, only the bucket cylinder (one of
  its three modules) and the bucket and arm cylinders (two); Stewart has one module.
* **Evaluators inside a rollout**: a reduced-backend PD+FF run along the shipped reference
  (2 s; quick 0.1 s) is logged; along its states, in order, one evaluation — close at the
  independent values, lift, reduced terms, forward dynamics — by the run-time evaluator
  (:class:`rbc.sim.manifold.LiftedCloser` on the augmented Pinocchio tree,
  :mod:`rbc.model.augmented`) and by the path-product evaluator
  (:class:`rbc.sim.manifold.Closer` and :func:`rbc.model.partition.lift`,
  :mod:`rbc.model.kinematics`); time per evaluation and the largest difference of u̇.
"""

from __future__ import annotations

import time

import numpy as np

from rbc.repro import models
from rbc.repro.outcome import Outcome, Table
from rbc.repro.plots import pyplot, save
from rbc.repro.report import fmt
from rbc.verify.checks import make_check

TITLE = "Table 6: corrector evaluations, module-local updates, evaluators in a rollout"
ROBOTS = ("stewart", "excavator")
STEPS = {False: 200, True: 10}
#: Excavator local edits: the independent coordinates that move (the others held).
EDITS = {"all independent speeds": None, "bucket cylinder (1 module)": ("bucket_cyl",),
         "bucket and arm cylinders (2 modules)": ("bucket_cyl", "arm_cyl")}
ROLLOUT = {False: (2.0, 2), True: (0.1, 5)}  # (duration [s], evaluate every k-th sample)
#: The two evaluators compute the same quantity by different algorithms: their u̇ must
#: agree to round-off amplified by the closure solve (tolerance 1e-13) — 1e-8 relative.
AGREEMENT_LIMIT = 1e-8


def corrector(case: tuple) -> dict:
    """``case = (robot, steps, moving names or None)`` → the corrector benchmark."""
    from rbc.bench.corrector import bench_corrector

    robot, steps, moving = case
    kin = models.compiled(robot)
    part = kin.partitions["default"]
    names = [kin.v_names[int(j)] for j in part.independent]
    pos = None if moving is None else [names.index(n) for n in moving]
    res = bench_corrector(kin, part, steps=steps, moving=pos)
    res["modules"] = len(kin.blocks)
    return res


def evaluators(case: tuple) -> dict:
    """``case = (robot, duration, every)`` → time per evaluation and agreement of the
    run-time and path-product evaluators along a logged reduced-backend rollout."""
    from rbc.model.dynamics import forward_dynamics, reduced_terms
    from rbc.model.partition import lift
    from rbc.model.solve import independent_values
    from rbc.sim.manifold import Closer, LiftedCloser
    from rbc.sim.run import SimOptions, prepare, simulate

    robot, duration, every = case
    kin, part, dm, dd = models.dynamics(robot)
    opts = SimOptions(backend="reduced", controller="pd+ff", duration=duration,
                      reference=models.reference_file(robot))
    run = simulate(prepare(models.bundle(robot), opts))
    q_log, v_log = run.log["q"], run.log["v"]
    f_log = run.log["control/effort"]
    samples = range(0, len(f_log), every)
    fast = LiftedCloser(dm, dd, part, q_log[0])
    slow = Closer(kin, part, q_log[0])

    def runtime(x, u, f):
        q = fast(x)
        return forward_dynamics(dm, reduced_terms(dm, dd, part, q, u, f, lifted=fast.lifted))

    def path_products(x, u, f):
        q = slow(x)
        return forward_dynamics(dm, reduced_terms(dm, dd, part, q, u, f,
                                                  lifted=lift(kin, part, q)))

    times = {"run-time (augmented tree)": [], "path products": []}
    worst = 0.0
    for k in samples:
        x = independent_values(kin, part, q_log[k])
        u, f = v_log[k][part.independent], f_log[k]
        out = []
        for name, fn in (("run-time (augmented tree)", runtime), ("path products",
                                                                 path_products)):
            t0 = time.perf_counter()
            out.append(fn(x, u, f))
            times[name].append(time.perf_counter() - t0)
        worst = max(worst, float(np.abs(out[0] - out[1]).max()
                                 / max(1.0, np.abs(out[0]).max())))
    s = run.summary
    return {"robot": robot, "duration": duration, "evaluations": len(times["path products"]),
            "us": {n: 1e6 * float(np.median(t)) for n, t in times.items()},
            "max_rel_difference": worst,
            "newton_evals": {"run-time (augmented tree)": fast.stats.jacobian_evals,
                             "path products": slow.stats.jacobian_evals},
            "rollout_us_per_step": 1e6 * s["wall_time"] / max(s["physics_steps"], 1),
            "rollout_rtf": s["real_time_factor"]}


def run(ctx) -> Outcome:
    """The three measurements (module docstring)."""
    steps = STEPS[ctx.quick]
    cases = [(r, steps, None) for r in ROBOTS]
    cases += [("excavator", steps, m) for m in EDITS.values() if m is not None]
    bench = ctx.bag(corrector, cases, "corrector benchmark")
    duration, every = ROLLOUT[ctx.quick]
    rolls = [r for r in ctx.bag(evaluators, [(r, duration, every) for r in ROBOTS],
                                "evaluators in a rollout") if r is not None]
    evals, figures = [], {}
    for robot, res in zip(ROBOTS, bench[:2], strict=True):
        if res is None:
            continue
        m = res["methods"]
        evals.append((robot, *(f"{m[k]['evals_median']:g} / {m[k]['evals_max']}"
                               for k in ("analytic", "fd-dense", "fd-coloured")),
                      f"{m['fd-dense']['ratio']:.2f}", f"{m['fd-coloured']['ratio']:.2f}"))
        for k, key in (("analytic", "analytic"), ("fd-dense", "dense"),
                       ("fd-coloured", "coloured")):
            figures[f"{robot}.{key}_evals"] = m[k]["evals_median"]
    updates = []
    exc = dict(zip([c[2] for c in cases[2:]], bench[2:], strict=True))
    local = {"stewart": {"all independent speeds": bench[0]},
             "excavator": {"all independent speeds": bench[1],
                           **{name: exc.get(mv) for name, mv in EDITS.items() if mv}}}
    for robot, edits in local.items():
        for name, res in edits.items():
            if res is None:
                continue
            u = res["update"]
            lower = 100.0 * (1.0 - u["module"] / u["global"]) if u["global"] > 0 else np.nan
            updates.append((robot, name, str(res["modules"]), fmt(1e3 * u["module"] / steps, 3),
                            fmt(1e3 * u["global"] / steps, 3), f"{lower:.1f} %"))
            tag = {"all independent speeds": "all", "bucket cylinder (1 module)": "one_module",
                   "bucket and arm cylinders (2 modules)": "two_modules"}[name]
            figures[f"{robot}.{tag}_lower_pct"] = lower
    rows = []
    for r in rolls:
        for name, us in r["us"].items():
            rows.append((r["robot"], name, fmt(us, 3), f"{r['newton_evals'][name]}",
                         fmt(r["max_rel_difference"], 2), f"{r['evaluations']}"))
        figures[f"{r['robot']}.path_over_runtime"] = (r["us"]["path products"]
                                                      / r["us"]["run-time (augmented tree)"])
    checks = []
    for robot in ROBOTS:
        a, c = figures.get(f"{robot}.analytic_evals"), figures.get(f"{robot}.coloured_evals")
        checks.append(make_check(f"table6.{robot}.fewer_evaluations",
                                 np.nan if a is None or c is None else c / a, 1.0, "1",
                                 "coloured-FD over analytic corrector evaluations per step "
                                 "(median)", lower_bound=True))
    worst = max((r["max_rel_difference"] for r in rolls), default=np.nan)
    checks.append(make_check("table6.evaluators_agree", worst, AGREEMENT_LIMIT, "1",
                             "max |u̇_run-time − u̇_path| / max(1, |u̇|) along the rollouts"))
    checks.append(make_check("table6.rollouts", len(rolls), len(ROBOTS), "runs",
                             "rollouts evaluated", lower_bound=True))
    plots = [_plot(ctx, bench[:2], rolls)]
    st = figures
    key = (f"corrector evaluations per step, analytic / coloured FD: Stewart "
           f"{fmt(st.get('stewart.analytic_evals'))} / {fmt(st.get('stewart.coloured_evals'))}, "
           f"excavator {fmt(st.get('excavator.analytic_evals'))} / "
           f"{fmt(st.get('excavator.coloured_evals'))}; excavator one-module edit "
           f"{fmt(st.get('excavator.one_module_lower_pct'), 3)} % below global; path products "
           f"{fmt(st.get('stewart.path_over_runtime'), 3)}× the run-time evaluator (Stewart)")
    setup = (
        "The paper's counts and update times are for Go2 (issue 17: 3 analytic vs 21 "
        "coloured-FD evaluations per step; one-foot and two-foot edits 61.8 % and 28.1 % "
        "below a global update, median time). Ours are Stewart (one module of five loops: "
        "module-local is global) and the excavator (three one-loop or two-loop modules), so "
        "our 'one module' and 'two modules' edits stand in for one foot and two feet. "
        "Update times are totals over the steps, not medians, measured in a Dask worker on "
        "a shared 2-core machine (compare ratios). The analytic count includes the lift's "
        "Jacobian evaluation. The modules here are small (3–6 dependent columns), so a "
        "module-local update pays Python's per-call overhead once per moved module: it wins "
        "when one module of three moves and loses its edge when all do. 'Compiled' here is "
        "the run-time evaluator on Pinocchio's C++ tree with a branch per cut joint; the "
        "numba kernels of issue 16 are not on main yet, so they are not in this table.")
    return Outcome(
        figures=figures, key_figures=key, setup=setup,
        tables=[Table("Corrector evaluations per step (median / max)",
                      ("robot", "analytic", "FD dense", "FD coloured",
                       "time dense / analytic", "time coloured / analytic"), tuple(evals),
                      f"{steps} steps of 1 ms; the same predictor for every method."),
                Table("Module-local against global updates",
                      ("robot", "moving", "modules", "module-local [ms/step]",
                       "global [ms/step]", "module-local below global"), tuple(updates)),
                Table("Evaluators inside a rollout (close, lift, reduced terms, u̇)",
                      ("robot", "evaluator", "time per evaluation [µs]",
                       "corrector Jacobian evaluations", "max relative difference of u̇",
                       "evaluations"), tuple(rows),
                      f"Along a {duration:g} s reduced-backend PD+FF rollout, every "
                      f"{every}{'nd' if every == 2 else 'th'} control sample.")],
        checks=checks, plots=plots,
        data={"corrector": bench, "cases": cases, "rollouts": rolls})


def _plot(ctx, bench, rolls) -> str:
    plt = pyplot()
    fig, ax = plt.subplots(1, 2, figsize=(11, 4))
    methods = ("analytic", "fd-dense", "fd-coloured")
    x = np.arange(len(methods))
    for k, (robot, res) in enumerate(zip(ROBOTS, bench, strict=True)):
        if res is not None:
            ax[0].bar(x + 0.4 * k, [res["methods"][m]["evals_median"] for m in methods],
                      width=0.4, label=robot)
    ax[0].set_xticks(x + 0.2, methods)
    ax[0].set_xlabel("corrector [-]")
    ax[0].set_ylabel("residual evaluations per step, median [1]")
    ax[0].legend()
    for k, r in enumerate(rolls):
        names = list(r["us"])
        ax[1].bar(np.arange(len(names)) + 0.4 * k, [r["us"][n] for n in names], width=0.4,
                  label=r["robot"])
        ax[1].set_xticks(np.arange(len(names)) + 0.2, names)
    ax[1].set_xlabel("evaluator [-]")
    ax[1].set_ylabel("time per evaluation, median [µs]")
    ax[1].set_yscale("log")
    ax[1].legend()
    return save(fig, ctx.file("compute.png"))

"""``walkers``: the planar-biped figures (issue 15; docs/walkers.md), from the walkers
package's public functions.

* **Gaits and Poincaré maps** — period-one gaits by Newton on the Poincaré map
  (:func:`rbc.walkers.api.find_gait`): the passive compass gait on a 3° slope and RABBIT
  under feedback linearisation on flat ground (quick: the compass only); fixed point,
  eigenvalues of ``DP(x*)``, spectral radius, step period. Walks from each model's
  prescribed start (:func:`rbc.walkers.api.run_walk`, 20 strides; quick 6) give the phase
  portraits (:func:`rbc.walkers.evaluation.plots.phase_portrait`) and the distance of the
  Poincaré samples to x* per stride, against the spectral radius' rate.
* **Controllers under mismatch** — RABBIT on its true plant
  (:func:`rbc.walkers.api.run_plant`) with a 4 kg torso payload, actuator effectiveness 0.9,
  biases (5, −5, 5, −5) N·m and Coulomb joint friction 3 N·m (docs/walkers.md §18), 8
  strides: final tracking EMA of ``|y|²`` for ``fl``, ``adaptive``, ``rise``, ``composite``.
* **Monte Carlo robustness** — the batch of :mod:`rbc.walkers.evaluation.batch` (random
  plant mismatch, ice patches and trips per sample, common random numbers across the
  controllers) on the shared cluster: 24 samples × 10 strides × 4 controllers (quick:
  2 × 3 × 2); fall rate, EMA, pooled contraction per controller.
"""

from __future__ import annotations

import numpy as np

from rbc.repro.outcome import Outcome, Table
from rbc.repro.plots import pyplot, save
from rbc.repro.report import fmt
from rbc.verify.checks import make_check

TITLE = "Planar bipeds: gaits, Poincaré maps, controllers under mismatch, Monte Carlo"
COMPASS_SLOPE = 0.05236  # rad (3°), the model file's suggested slope
GAITS = {False: (("compass", "passive", COMPASS_SLOPE), ("rabbit", "fl", 0.0)),
         True: (("compass", "passive", COMPASS_SLOPE),)}
WALK_STRIDES = {False: 20, True: 6}
MISMATCH = {"payload": 4.0, "effectiveness": "0.9", "bias": "5:-5:5:-5", "friction": 3.0}
MISMATCH_STRIDES = 8
CONTROLLERS = ("fl", "adaptive", "rise", "composite")
MONTE_CARLO = {False: (24, 10, CONTROLLERS), True: (2, 3, ("fl", "adaptive"))}
#: docs/walkers.md §18 (test_learning.py): each integral controller tracks at least 3×
#: better than plain FL under this mismatch.
EMA_FACTOR = 3.0


def gait(case: tuple) -> dict:
    """``case = (model, controller, slope)`` → the fixed point and its eigenvalues."""
    from rbc.walkers.api import find_gait

    name, controller, slope = case
    fp = find_gait(name, controller, slope)
    return {"model": name, "controller": controller, "slope": slope, "x": fp.x.tolist(),
            "eigenvalues": [[float(z.real), float(z.imag)] for z in fp.eigenvalues],
            "spectral_radius": fp.spectral_radius, "step_period": fp.step_period,
            "residual": fp.residual, "iterations": fp.iterations}


def walk(case: tuple):
    """``case = (model, controller, slope, strides)`` → the WalkResult."""
    from rbc.walkers.api import run_walk

    return run_walk(*case)


def plant_walk(case: tuple) -> dict:
    """``case = (controller, strides)`` → RABBIT on the mismatched true plant."""
    from rbc.walkers.api import make_scenario, run_plant

    controller, strides = case
    res = run_plant("rabbit", controller, 0.0, strides, make_scenario(**MISMATCH))
    return {"controller": controller, "fell": bool(res.fell), "fall_reason": res.fall_reason,
            "strides": len(res.strides), "ema_final": float(res.ema[-1]),
            "t": res.t[:: max(1, len(res.t) // 500)].tolist(),
            "ema": res.ema[:: max(1, len(res.t) // 500)].tolist()}


def run(ctx) -> Outcome:
    """Gaits, walks, the mismatch comparison and the Monte Carlo batch."""
    from rbc.walkers.evaluation.batch import BatchConfig, jobs_of, run_job, summarize

    gaits = [g for g in ctx.bag(gait, GAITS[ctx.quick], "gaits") if g is not None]
    n = WALK_STRIDES[ctx.quick]
    walks = ctx.bag(walk, [(m, c, s, n) for m, c, s in GAITS[False]], "walks")
    plant = [p for p in ctx.bag(plant_walk, [(c, MISMATCH_STRIDES) for c in CONTROLLERS],
                                "controllers under mismatch") if p is not None]
    samples, strides, mc_ctrl = MONTE_CARLO[ctx.quick]
    cfg = BatchConfig(samples=samples, strides=strides, seed=ctx.seed, controllers=mc_ctrl)
    jobs = jobs_of(cfg)
    mc_rows = ctx.bag(run_job, jobs, "Monte Carlo")
    failures = [{"sample": j[1], "controller": j[2], "error": "see the failed cases"}
                for j, r in zip(jobs, mc_rows, strict=True) if r is None]
    mc = summarize(cfg, [r for r in mc_rows if r is not None],
                   sum(r["wall_time"] for r in mc_rows if r is not None), failures)
    figures: dict[str, float | None] = {}
    gait_rows = []
    for g in gaits:
        figures[f"{g['model']}.spectral_radius"] = g["spectral_radius"]
        figures[f"{g['model']}.step_period"] = g["step_period"]
        eig = sorted(g["eigenvalues"], key=lambda z: -np.hypot(*z))
        gait_rows.append((g["model"], g["controller"], f"{g['slope']:.5f}",
                          f"{g['spectral_radius']:.4f}", f"{g['step_period']:.4f}",
                          ", ".join(f"{a:.4f}{b:+.4f}j" if abs(b) > 1e-9 else f"{a:.4f}"
                                    for a, b in eig[:4]), fmt(g["residual"], 2)))
    fl = next((p for p in plant if p["controller"] == "fl"), None)
    ctrl_rows = []
    for p in plant:
        rel = p["ema_final"] / fl["ema_final"] if fl and fl["ema_final"] > 0 else np.nan
        figures[f"mismatch.{p['controller']}.ema"] = p["ema_final"]
        ctrl_rows.append((p["controller"], fmt(p["ema_final"], 3), f"{rel:.3f}",
                          "yes" if p["fell"] else "no", str(p["strides"])))
    mc_table = []
    for c, d in mc["controllers"].items():
        figures[f"montecarlo.{c}.fall_rate"] = d["fall_rate"]
        mc_table.append((c, str(d["runs"]), fmt(d["fall_rate"], 3), fmt(d["ema_mean"], 3),
                         fmt(d["ema_median"], 3), fmt(d["contraction"], 3),
                         fmt(1e3 * d["mean_slip"] if d["mean_slip"] is not None else None, 3),
                         fmt(d["mean_friction_work"], 4)))
    checks = [make_check(f"walkers.{g['model']}.stable", g["spectral_radius"], 1.0, "1",
                         f"spectral radius of DP(x*), {g['model']} + {g['controller']}")
              for g in gaits]
    checks.append(make_check("walkers.gaits", len(gaits), len(GAITS[ctx.quick]), "gaits",
                             "fixed points found", lower_bound=True))
    for p in plant:
        if p["controller"] != "fl" and fl is not None:
            checks.append(make_check(f"walkers.mismatch.{p['controller']}",
                                     fl["ema_final"] / max(p["ema_final"], 1e-300),
                                     EMA_FACTOR, "1", "FL's final EMA over this controller's",
                                     lower_bound=True))
    checks.append(make_check("walkers.montecarlo.runs", len(mc["runs"]), len(jobs), "walks",
                             "Monte Carlo walks completed", lower_bound=True))
    plots = _phase_portraits(ctx, walks) + [_plot_poincare(ctx, gaits, walks),
                                            _plot_mismatch(ctx, plant), _plot_mc(ctx, mc)]
    comp = next((g for g in gaits if g["model"] == "compass"), None)
    rab = next((g for g in gaits if g["model"] == "rabbit"), None)
    key = (f"compass ρ {fmt(comp['spectral_radius'] if comp else None, 4)}"
           + (f", RABBIT+FL ρ {rab['spectral_radius']:.4f}" if rab else "")
           + "; EMA under mismatch vs FL: " + ", ".join(f"{r[0]} {r[2]}" for r in ctrl_rows
                                                        if r[0] != "fl")
           + f"; Monte Carlo {samples}×{strides}: fall rates "
           + ", ".join(f"{c} {d['fall_rate']:.2f}" for c, d in mc["controllers"].items()))
    setup = (
        "No number of the walker papers is given in issue 15 or DESIGN.md, so every row is "
        "'not published'; the compass gait is the stable period-one gait Goswami et al. "
        "(1998) describe (m = 5 kg legs, m_H = 10 kg, a = b = 0.5 m, 3° slope), RABBIT uses "
        "the Chevallereau et al. (2003) parameters without rotor inertia, and the "
        "controllers, mismatch and disturbances are this repository's (docs/walkers.md "
        f"§12–§17). The Monte Carlo batch is smaller than docs/walkers.md's 100 × 20 "
        f"({samples} samples × {strides} strides) to fit the 60-minute budget of make "
        f"repro, with seed {ctx.seed}.")
    return Outcome(
        figures=figures, key_figures=key, setup=setup,
        tables=[Table("Period-one gaits (Newton on the Poincaré map)",
                      ("model", "controller", "slope [rad]", "spectral radius",
                       "step period [s]", "largest eigenvalues", "|P(x*) − x*|"),
                      tuple(gait_rows)),
                Table(f"RABBIT under mismatch ({MISMATCH_STRIDES} strides)",
                      ("controller", "final EMA of |y|² [rad²]", "vs FL", "fell", "strides"),
                      tuple(ctrl_rows), "Payload 4 kg on the torso, effectiveness 0.9, biases "
                      "(5, −5, 5, −5) N·m, joint friction τ_c = 3 N·m; the controllers see "
                      "the design model only."),
                Table(f"Monte Carlo ({samples} samples × {strides} strides, seed {ctx.seed})",
                      ("controller", "walks", "fall rate", "EMA mean [rad²]", "EMA median",
                       "ρ pooled", "mean slip [mm]", "friction work [J]"), tuple(mc_table))],
        checks=checks, plots=plots,
        data={"gaits": gaits, "mismatch": [{k: v for k, v in p.items() if k not in ("t",
                                                                                 "ema")}
                                           for p in plant],
              "montecarlo": mc},
        seeds={"Monte Carlo (rbc.batch.task_rng per sample)": ctx.seed})


def _phase_portraits(ctx, walks) -> list[str]:
    from rbc.walkers.evaluation.plots import phase_portrait

    out = []
    for res in walks:
        if res is not None:
            name = f"phase_{res.model.name}.png"
            phase_portrait(res, ctx.file(name))
            out.append(name)
    return out


def _plot_poincare(ctx, gaits, walks) -> str:
    plt = pyplot()
    fig, ax = plt.subplots(1, 2, figsize=(11, 4.2))
    for g in gaits:
        res = next((w for w in walks if w is not None and w.model.name == g["model"]), None)
        if res is None or not len(res.strides):
            continue
        d = np.linalg.norm(res.poincare - np.asarray(g["x"]), axis=1)
        k = np.arange(1, len(d) + 1)
        line = ax[0].semilogy(k, np.maximum(d, 1e-16), "o-", ms=3,
                              label=f"{g['model']}: |x_k − x*|")[0]
        ax[0].semilogy(k, np.maximum(d[0], 1e-16) * g["spectral_radius"] ** (k - 1), ":",
                       color=line.get_color(), label=f"ρ^k, ρ = {g['spectral_radius']:.3f}")
        z = np.array(g["eigenvalues"])
        ax[1].plot(z[:, 0], z[:, 1], "o", label=g["model"])
    ax[0].set_xlabel("stride k [1]")
    ax[0].set_ylabel("distance of the Poincaré sample to x* [rad, rad/s]")
    ax[0].legend(fontsize=7)
    t = np.linspace(0, 2 * np.pi, 200)
    ax[1].plot(np.cos(t), np.sin(t), "k-", lw=0.6)
    ax[1].set_aspect("equal")
    ax[1].set_xlabel("Re λ of DP(x*) [1]")
    ax[1].set_ylabel("Im λ [1]")
    ax[1].legend()
    return save(fig, ctx.file("poincare.png"))


def _plot_mismatch(ctx, plant) -> str:
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    for p in plant:
        ax.semilogy(p["t"], np.maximum(p["ema"], 1e-12), label=p["controller"])
    ax.set_xlabel("time [s]")
    ax.set_ylabel("tracking EMA of |y|² [rad²]")
    ax.set_title("RABBIT on the mismatched true plant")
    ax.legend()
    return save(fig, ctx.file("mismatch.png"))


def _plot_mc(ctx, mc) -> str:
    plt = pyplot()
    per = mc["controllers"]
    names = list(per)
    fig, ax = plt.subplots(1, 2, figsize=(11, 4))
    ax[0].bar(names, [per[c]["fall_rate"] or 0.0 for c in names], color="tab:red")
    ax[0].set_xlabel("controller [-]")
    ax[0].set_ylabel("fall rate [1]")
    ax[0].set_ylim(0, 1)
    emas = [[r["tracking_ema"] for r in mc["runs"] if r["controller"] == c and not r["fell"]]
            or [np.nan] for c in names]
    ax[1].boxplot(emas)
    ax[1].set_xticks(range(1, len(names) + 1), names)
    ax[1].set_yscale("log")
    ax[1].set_xlabel("controller [-]")
    ax[1].set_ylabel("final tracking EMA of |y|² [rad²]")
    return save(fig, ctx.file("montecarlo.png"))

"""``ff-ablation``: PD against PD + reduced-dynamics feedforward at the ports (issue 15;
docs/simulate.md).

* **Stewart**, the shipped 22 s reference (quick: its first 0.5 s), on the three backends
  (``reduced``, ``mujoco``, ``pinocchio``) with both controllers, on the nominal plant and
  with the plant's platform raised from 8 to 14 kg (a 6 kg payload at its centre of mass,
  ``--payload platform=6``; the controller keeps the nominal model). Platform position RMS
  (task ``platform``), peak leg force, clipped steps, largest loop gap, energy-ledger
  residual. 12 runs.
* **Cassie**, imported from the vendored MJCF with the documented ``independent`` request
  for its leg springs, pelvis welded (``fix_root``), the shipped 4 s leg reference
  (quick: 0.5 s) on MuJoCo: port RMS over the ten ports, PD against PD + FF.

Every run is :func:`rbc.sim.run.prepare` + :func:`~rbc.sim.run.simulate` with the default
options (1 ms physics and control, 5 Hz / ζ = 1 gains, 10 ms reference grid): exactly what
``rbc simulate`` does.
"""

from __future__ import annotations

import numpy as np

from rbc.repro import models
from rbc.repro.outcome import Outcome, Table
from rbc.repro.plots import pyplot, save
from rbc.repro.report import fmt
from rbc.verify.checks import make_check

TITLE = "Feedforward ablation: Stewart PD vs PD+FF on three backends, with payload; Cassie"
BACKENDS = ("reduced", "mujoco", "pinocchio")
CONTROLLERS = ("pd", "pd+ff")
#: Plant payload [kg] on the platform: 8 → 14 kg (issue 15).
PAYLOAD = 6.0
DURATION = {False: None, True: 0.5}  # Stewart: None = the whole reference (22 s)
CASSIE_DURATION = {False: 4.0, True: 0.5}
#: Acceptance of issue 6 kept here: the feedforward cuts Stewart's platform RMS on MuJoCo at
#: least 3× (the paper: 3.3×) and Cassie's port RMS at least 10×.
STEWART_MIN_RATIO = 3.0
CASSIE_MIN_RATIO = 10.0


def simulate_case(case: tuple) -> dict:
    """One run: ``case = (robot, backend, controller, payload kg, duration or None)``."""
    from rbc.sim.run import SimOptions, prepare, simulate

    robot, backend, controller, payload, duration = case
    if robot == "cassie":
        bundle, extra = models.cassie_bundle(), {"fix_root": True}
    else:
        bundle, extra = models.bundle(robot), {}
        if payload:
            extra["payload"] = (("platform", payload),)
    opts = SimOptions(backend=backend, controller=controller, duration=duration,
                      reference=models.reference_file(robot), **extra)
    res = simulate(prepare(bundle, opts))
    s = res.summary
    port = np.array(list(s["port_rms"].values()))
    err = res.log["port_reference"] - res.log["ports"]
    return {"robot": robot, "backend": backend, "controller": controller, "payload": payload,
            "duration": s["duration"], "tracking_rms": s["tracking_rms"],
            "port_rms_all": float(np.sqrt(np.mean(np.square(port)))),
            "peak_effort": max(s["peak_effort"].values()),
            "clipped_steps": s["clipped_steps"], "max_loop_gap": s["max_loop_gap"],
            "energy_ledger_residual": s["energy_ledger_residual"],
            "wall_time": s["wall_time"], "prepare_time": s["prepare_time"],
            "time": res.log["time"][:: max(1, len(err) // 400)].tolist(),
            "port_error_norm": np.linalg.norm(err, axis=1)[:: max(1, len(err) // 400)].tolist()}


def _find(rows, **kw) -> dict | None:
    return next((r for r in rows if all(r[k] == v for k, v in kw.items())), None)


def run(ctx) -> Outcome:
    """Every run (module docstring)."""
    dur, cdur = DURATION[ctx.quick], CASSIE_DURATION[ctx.quick]
    cases = [("stewart", b, c, p, dur) for p in (0.0, PAYLOAD) for b in BACKENDS
             for c in CONTROLLERS]
    cases += [("cassie", "mujoco", c, 0.0, cdur) for c in CONTROLLERS]
    rows = [r for r in ctx.bag(simulate_case, cases, "simulations") if r is not None]
    table, figures = [], {}
    for p in (0.0, PAYLOAD):
        for b in BACKENDS:
            pd, ff = (_find(rows, robot="stewart", backend=b, controller=c, payload=p)
                      for c in CONTROLLERS)
            for c, r in zip(CONTROLLERS, (pd, ff), strict=True):
                if r is None:
                    continue
                mm = 1e3 * r["tracking_rms"]["platform"]
                ratio = (1e3 * pd["tracking_rms"]["platform"] / mm
                         if c == "pd+ff" and pd is not None and mm > 0 else None)
                table.append((f"{8 + p:g} kg", b, c, fmt(mm, 4),
                              "—" if ratio is None else f"{ratio:.3g}×",
                              fmt(r["peak_effort"], 4), str(r["clipped_steps"]),
                              fmt(r["max_loop_gap"], 2), fmt(r["energy_ledger_residual"], 2),
                              f"{r['wall_time']:.1f}"))
                tag = "nominal" if p == 0 else "payload"
                figures[f"stewart.{b}.{tag}.{c}.platform_rms_mm"] = mm
                if ratio is not None:
                    figures[f"stewart.{b}.{tag}.ratio"] = ratio
    cassie = []
    cpd, cff = (_find(rows, robot="cassie", controller=c) for c in CONTROLLERS)
    for c, r in zip(CONTROLLERS, (cpd, cff), strict=True):
        if r is not None:
            cassie.append((c, fmt(r["port_rms_all"], 3), fmt(r["peak_effort"], 4),
                           str(r["clipped_steps"]), fmt(r["max_loop_gap"], 2),
                           f"{r['wall_time']:.1f}"))
    c_ratio = (cpd["port_rms_all"] / cff["port_rms_all"]
               if cpd and cff and cff["port_rms_all"] > 0 else np.nan)
    figures["cassie.pd.port_rms"] = cpd["port_rms_all"] if cpd else None
    figures["cassie.pd+ff.port_rms"] = cff["port_rms_all"] if cff else None
    figures["cassie.ratio"] = c_ratio
    mj = figures.get("stewart.mujoco.nominal.ratio", np.nan)
    checks = [make_check("ff.stewart.mujoco.ratio", mj, STEWART_MIN_RATIO, "1",
                         "PD over PD+FF platform RMS, MuJoCo, nominal plant",
                         lower_bound=True),
              make_check("ff.cassie.ratio", c_ratio, CASSIE_MIN_RATIO, "1",
                         "PD over PD+FF port RMS, Cassie pelvis fixed, MuJoCo",
                         lower_bound=True),
              make_check("ff.no_clipping", float(sum(r["clipped_steps"] for r in rows)), 0.0,
                         "steps", "control steps with a clipped port, all runs"),
              make_check("ff.runs", len(rows), len(cases), "runs", "runs completed",
                         lower_bound=True)]
    plots = [_plot(ctx, rows)]
    span = "the whole 22 s reference" if dur is None else f"the first {dur:g} s"
    nom = "stewart.mujoco.nominal"
    key = (f"Stewart MuJoCo platform RMS PD {fmt(figures.get(f'{nom}.pd.platform_rms_mm'), 3)}"
           f" mm → PD+FF {fmt(figures.get(f'{nom}.pd+ff.platform_rms_mm'), 3)} "
           f"mm ({fmt(mj, 3)}×; paper 3.3×), with payload "
           f"{fmt(figures.get('stewart.mujoco.payload.ratio'), 3)}×; Cassie port RMS "
           f"{fmt(c_ratio, 3)}× lower")
    setup = (
        "The paper's 2.375 → 0.717 mm (3.3×) is a hardware Stewart platform (issue 6); ours "
        f"is records/stewart.yaml over {span} on simulated plants that have no unmodelled "
        "dynamics (no motor current loop, friction, sensor noise or delay), with the "
        "feedforward from the exact nominal model, so the nominal reduction is far larger "
        "than the paper's; the 6 kg payload the controller does not know (platform 8 → 14 kg) "
        "is the closest stand-in for a real plant's model error. MuJoCo's residual error is "
        "its soft loop closure and first-order integration, Pinocchio's its Baumgarte "
        "stabilisation, the reduced model's the 1 kHz zero-order hold. The paper's "
        "fixed-pelvis ablation is on a Kangaroo-like biped (issue 21: 1.653 mm → 0.647 µm "
        "motor position RMS, 4e4 N/m and 600 N·s/m gains, 100 µs step); ours is Cassie (the "
        "only imported closed-chain biped with a shipped reference) with rbc's default 5 Hz "
        f"gains at 1 ms over {cdur:g} s, so only the reduction factor is comparable.")
    head = ("platform mass", "backend", "controller", "platform RMS [mm]", "PD / PD+FF",
            "peak leg force [N]", "clipped steps", "max loop gap [m]", "ledger residual [J]",
            "loop wall time [s]")
    return Outcome(
        figures=figures, key_figures=key, setup=setup,
        tables=[Table(f"Stewart over {span}", head, tuple(table),
                      "The controller's model is always the nominal one (8 kg platform)."),
                Table(f"Cassie, pelvis fixed, MuJoCo, {cdur:g} s",
                      ("controller", "port RMS over the ten ports [rad]", "peak effort [N·m]",
                       "clipped steps", "max loop gap [m]", "loop wall time [s]"),
                      tuple(cassie),
                      f"PD / PD+FF port RMS: {fmt(c_ratio, 3)}×.")],
        checks=checks, plots=plots, data={"runs": rows, "payload_kg": PAYLOAD})


def _plot(ctx, rows) -> str:
    plt = pyplot()
    fig, ax = plt.subplots(1, 2, figsize=(12, 4.2))
    for r in rows:
        if r["robot"] != "stewart" or r["payload"]:
            continue
        ax[0].semilogy(r["time"], np.maximum(r["port_error_norm"], 1e-12),
                       lw=0.8, ls="-" if r["controller"] == "pd" else "--",
                       label=f"{r['backend']} {r['controller']}")
    ax[0].set_xlabel("time [s]")
    ax[0].set_ylabel("‖leg length error‖ [m]")
    ax[0].set_title("Stewart, nominal plant")
    ax[0].legend(fontsize=7, ncol=2)
    for r in rows:
        if r["robot"] == "cassie":
            ax[1].semilogy(r["time"], np.maximum(r["port_error_norm"], 1e-12), lw=0.8,
                           label=r["controller"])
    ax[1].set_xlabel("time [s]")
    ax[1].set_ylabel("‖port error‖ over the ten ports [rad]")
    ax[1].set_title("Cassie, pelvis fixed, MuJoCo")
    ax[1].legend()
    return save(fig, ctx.file("tracking.png"))

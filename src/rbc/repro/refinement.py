"""``refinement``: consecutive step halvings on the Pinocchio and MuJoCo plants, showing the
order of convergence (issue 24 item 4).

Two robots, each run what ``rbc simulate`` does with ``--dt`` set, PD + feedforward:

* **Stewart** (``records/stewart.yaml``) along its shipped reference (quick: its first
  0.25 s), the default gains (5 Hz, ζ = 1);
* the **Kangaroo-like biped** (``records/kangaroo_locked.yaml`` with its support modes, the
  setup of :mod:`rbc.repro.kangaroo_landing`):

  - on **MuJoCo** the landing sequence itself (``records/references/kangaroo_landing.yaml``:
    5 cm drop, touchdown on native soft contact, crouch, sway, yaw; quick: its first
    0.12 s, the touchdown at 0.101 s included) with the landing's gains
    (:func:`~rbc.repro.kangaroo_landing.gains`, 1 ms control period);
  - on **Pinocchio** its double-support part (:func:`stance_reference`: the knots from
    1 s on, shifted to t = 0, in ``double`` throughout: 9 s; quick: its first 0.25 s of
    the crouch). The halving ladder needs a
    4 ms control period (the coarse run's physics step), and under it neither the landing's
    gains (capped for the 1 ms flight phase, its ankles too weak to hold the stance: the
    pelvis drifts 0.34 m in 2 s) nor its uncapped stance rule (twelve ports stiffening six
    double-support freedoms: divergent at a 2 ms control period, measured) are stable; the
    stance rule at a quarter of its bandwidth (:data:`KANGAROO_GAIN_SCALE`) is — at half of
    it the 4 ms run diverges (measured). The flight phase is left out because no gain that
    holds the stance at 4 ms is stable for the light feet in flight (the caps of
    :mod:`rbc.repro.kangaroo_landing` at 4 ms are 16× below the 1 ms ones).

Steps and control periods (:data:`LADDERS`):

* **Pinocchio** (``constraintDynamics`` + Baumgarte, semi-implicit Euler): physics steps
  4, 2 and 1 ms with a 4 ms control period for all three, so every run sees the same
  control instants and the halvings pair up;
* **MuJoCo** (semi-implicit Euler, soft loop equalities with ``solref = 2·dt``): physics
  steps 50, 25 and 12.5 µs with a 1 ms control period (the paper's pair is 25/12.5 µs; the
  50 µs run gives a second difference, so the order can be estimated).

Per halving: the largest paired difference of the tracked position (Stewart: task
``platform``; Kangaroo: the pelvis, ``base/position``; world frame) over the common control
instants (also from :data:`LATE` on, after the Kangaroo's touchdown transient), and each
run's energy-ledger residual (the work balance ``ΔE − W_act − W_passive
− W_impacts``, :mod:`rbc.sim.run`; on MuJoCo it also holds the soft contact's dissipation,
which does not refine). The observed order is ``log₂(d₁/d₂)`` of two consecutive paired
differences: 1 for a first-order scheme.
"""

from __future__ import annotations

import functools

import numpy as np

from rbc.repro import kangaroo_landing, models
from rbc.repro.outcome import Outcome, Table
from rbc.repro.plots import pyplot, save
from rbc.repro.report import fmt
from rbc.verify.checks import make_check

TITLE = ("Step refinement: paired differences and energy ledgers under step halving "
         "(Stewart, Kangaroo-like biped)")
ROBOTS = ("stewart", "kangaroo")
#: (robot, backend) → (physics steps [s], control period [s]) (module docstring).
LADDERS: dict[tuple[str, str], tuple[tuple[float, ...], float]] = {
    (r, "pinocchio"): ((4e-3, 2e-3, 1e-3), 4e-3) for r in ROBOTS} | {
    (r, "mujoco"): ((5e-5, 2.5e-5, 1.25e-5), 1e-3) for r in ROBOTS}
#: Simulated span [s] per (quick, robot, backend); None: the whole reference (Stewart 22 s,
#: Kangaroo 10 s).
DURATION = {False: {}, True: {("stewart", "pinocchio"): 0.25, ("stewart", "mujoco"): 0.25,
                              ("kangaroo", "pinocchio"): 0.25, ("kangaroo", "mujoco"): 0.12}}
#: The position each robot's runs are paired on (a log column, world frame [m]).
TRACKED = {"stewart": "tasks/platform/position", "kangaroo": "base/position"}
TRACKED_NAME = {"stewart": "platform", "kangaroo": "pelvis"}
#: The Kangaroo landing's nominal release height [m] (kangaroo_landing.CONDITIONS nominal)
#: and the knot [s] by which it has settled in double support (the stance sequence's start).
RELEASE, SETTLED = 0.05, 1.0
#: Bandwidth factor of the Kangaroo's stance gains on Pinocchio at the 4 ms control period
#: (module docstring): K_p scales with its square, K_d with it. 0.5 diverges, 0.25 tracks
#: the pelvis within 0.18 mm (measured, 10 s at 4 ms).
KANGAROO_GAIN_SCALE = 0.25
#: Both plants integrate by semi-implicit Euler: first order. An observed order within 0.4
#: of 1 says the halvings are in the asymptotic range; a much smaller one would say the
#: difference is dominated by something that does not refine (a defect, or a discontinuity
#: such as clipping), a larger one that the measure is not the integration error.
ORDER_TOL = 0.4
#: Paired differences are also taken from this time [s] on: after the Kangaroo's touchdown
#: transient (kangaroo_landing.SETTLED), where MuJoCo's largest difference otherwise sits.
LATE = kangaroo_landing.SETTLED


@functools.cache
def stance_reference() -> str:
    """Path (text) of the Kangaroo's double-support sequence: the landing reference's knots
    from the end of its settling (1 s) on — crouch, sway, yaw, quiet stance —, shifted to
    start at t = 0, the schedule ``double`` throughout (9 s; written into the scratch
    directory).

    Raises:
        ValueError: the landing reference does not settle at its stance pose by 1 s.
    """
    import yaml

    with open(kangaroo_landing.reference(RELEASE), encoding="utf-8") as fh:
        doc = yaml.safe_load(fh)
    times = list(doc["time"])
    first = times.index(SETTLED)  # the settled knot: the stance sequence starts there
    rows = {k: v[first:] for k, v in doc["base"].items()}
    if any(v[first - 1] != v[first] for v in doc["base"].values()):
        raise ValueError("the landing reference moves before its settled knot")
    stance = {"time": [round(t - SETTLED, 12) for t in times[first:]],
              "modes": [{"time": 0.0, "mode": kangaroo_landing.MODES[0][0]}],
              "base": rows,
              "supports": {s: {k: v[first:] for k, v in c.items()}
                           for s, c in doc["supports"].items()},
              "joints": doc.get("joints") or {}}
    path = models._scratch() / "kangaroo_stance.yaml"
    path.write_text("# The Kangaroo-like landing sequence's double-support part "
                    "(rbc.repro.refinement.stance_reference)\n"
                    + yaml.safe_dump(stance, sort_keys=False, default_flow_style=None),
                    encoding="utf-8")
    return str(path)


def options(robot: str, backend: str, dt: float, control_dt: float, duration: float | None):
    """``(bundle, SimOptions)`` of one run (module docstring)."""
    from rbc.sim.run import SimOptions

    if robot == "stewart":
        return models.bundle(robot), SimOptions(
            backend=backend, dt=dt, control_dt=control_dt, duration=duration,
            reference=models.reference_file(robot))
    if backend == "mujoco":
        g, ref = kangaroo_landing.gains(), kangaroo_landing.reference(RELEASE)
    else:
        g0, ref = kangaroo_landing.gains(capped=False), stance_reference()
        s = KANGAROO_GAIN_SCALE
        g = {"kp": {k: s * s * v for k, v in g0["kp"].items()},
             "kd": {k: s * v for k, v in g0["kd"].items()}}
    return kangaroo_landing.bundle(), SimOptions(
        backend=backend, controller="pd+ff", dt=dt, control_dt=control_dt,
        duration=duration, reference=ref, kp=g["kp"], kd=g["kd"])


_PREPARED: dict = {}


def prepared(robot: str, backend: str, dt: float, control_dt: float, duration: float | None):
    """The prepared run (:func:`rbc.sim.run.prepare`). The reference lift and feedforward
    do not depend on the steps, so they are computed once per worker, robot, backend and
    span, and each step takes them (:func:`rbc.sim.run.with_plant`)."""
    from rbc.sim.run import prepare, with_plant

    bundle, opts = options(robot, backend, dt, control_dt, duration)
    key = (robot, backend, duration)
    if key not in _PREPARED:
        _PREPARED[key] = prepare(bundle, opts)
    return with_plant(_PREPARED[key], opts)


def simulate_case(case: tuple) -> dict:
    """One run: ``case = (robot, backend, dt, control_dt, duration or None)``."""
    from rbc.sim.run import simulate

    robot, backend, dt, cdt, duration = case
    res = simulate(prepared(robot, backend, dt, cdt, duration))
    s = res.summary
    return {"robot": robot, "backend": backend, "dt": dt, "time": res.log["time"].tolist(),
            "position": res.log[TRACKED[robot]].tolist(),
            "duration": float(res.log["time"][-1]),
            "ledger": float(s["energy_ledger_residual"]),
            "ledger_relative": float(s.get("energy_ledger_relative", np.nan)),
            "clipped_steps": int(s["clipped_steps"]),
            "wall_time": float(s["wall_time"])}


def paired_difference(a: dict, b: dict, after: float = 0.0) -> float:
    """Largest tracked-position difference [m] of two runs at their common control instants
    t ≥ after (NaN when there are none).

    Raises:
        ValueError: the runs do not log the same instants (they would not pair up).
    """
    ta, tb = np.asarray(a["time"]), np.asarray(b["time"])
    if ta.shape != tb.shape or not np.allclose(ta, tb, rtol=0, atol=1e-9):
        raise ValueError("the runs do not share their control instants")
    d = np.linalg.norm(np.asarray(a["position"]) - np.asarray(b["position"]), axis=1)
    d = d[ta >= after - 1e-12]
    return float(d.max()) if d.size else float("nan")


def run(ctx) -> Outcome:
    """Every ladder (module docstring)."""
    spans = DURATION[ctx.quick]
    cases = [(r, b, dt, cdt, spans.get((r, b))) for (r, b), (steps, cdt) in LADDERS.items()
             for dt in steps]
    rows = [r for r in ctx.bag(simulate_case, cases, "simulations") if r is not None]
    table, figures, checks, ladders = [], {}, [], {}
    for (robot, backend), (steps, _) in LADDERS.items():
        runs = sorted((r for r in rows if (r["robot"], r["backend"]) == (robot, backend)),
                      key=lambda r: -r["dt"])
        if len(runs) != len(steps):
            continue
        diffs = [paired_difference(a, b) for a, b in zip(runs[:-1], runs[1:], strict=True)]
        order = float(np.log2(diffs[0] / diffs[1])) if diffs[1] > 0 else np.nan
        late = [paired_difference(a, b, LATE) for a, b in zip(runs[:-1], runs[1:], strict=True)]
        order_late = float(np.log2(late[0] / late[1])) if late[1] > 0 else np.nan
        ladders[f"{robot}.{backend}"] = {
            "dt": [r["dt"] for r in runs], "differences": diffs, "order": order,
            "differences_late": late, "order_late": order_late,
            "ledgers": [r["ledger"] for r in runs], "duration": runs[0]["duration"]}
        for a, b, dd, dl in zip(runs[:-1], runs[1:], diffs, late, strict=True):
            table.append((robot, backend, f"{runs[0]['duration']:g}",
                          f"{_us(a['dt'])} / {_us(b['dt'])}", fmt(dd, 3), fmt(dl, 3),
                          fmt(a["ledger"], 3), fmt(b["ledger"], 3),
                          fmt(b["ledger_relative"], 3)))
            figures[f"{robot}.{backend}.{_us(a['dt'])}-{_us(b['dt'])}.paired_difference_m"] = dd
            figures[f"{robot}.{backend}.{_us(b['dt'])}.ledger_J"] = b["ledger"]
        figures[f"{robot}.{backend}.order"] = order
        figures[f"{robot}.{backend}.order_late"] = order_late
        checks.append(make_check(f"refinement.{robot}.{backend}.order", abs(order - 1.0),
                                 ORDER_TOL, "1",
                                 f"|observed order − 1| (observed {order:.3g})"))
    checks.append(make_check("refinement.runs", len(rows), len(cases), "runs",
                             "runs completed", lower_bound=True))
    checks.append(make_check("refinement.no_clipping",
                             float(sum(r["clipped_steps"] for r in rows)), 0.0, "steps",
                             "control steps with a clipped port (a clip does not refine)"))
    key = "; ".join(f"{n} order {fmt(v['order'], 3)} (differences "
                    f"{', '.join(fmt(x, 2) for x in v['differences'])} m)"
                    for n, v in ladders.items())
    span = ("the whole references (Stewart 22 s, Kangaroo MuJoCo 10 s, Pinocchio 9 s)"
            if not spans else "the quick spans (Stewart 0.25 s, Kangaroo MuJoCo 0.12 s, "
            "Pinocchio 0.25 s)")
    return Outcome(
        figures=figures, key_figures=key or "no complete ladder",
        setup=("The paper refines 4/2 and 2/1 ms on Pinocchio and 25/12.5 µs on MuJoCo for "
               "its Stewart platform and a Kangaroo-like biped and does not quote the "
               "numbers in the issue; ours are records/stewart.yaml along its reference "
               "(PD + feedforward, 5 Hz, ζ = 1) and records/kangaroo_locked.yaml: on MuJoCo "
               "the kangaroo-landing sequence with its gains (1 ms control), on Pinocchio "
               "its double-support part only at a quarter of the stance gains' bandwidth — "
               "the 4 ms control period the ladder needs is unstable with the landing's "
               "gains and in the flight phase (module docstring). A 50 µs MuJoCo run is "
               f"added for a second difference. Spans: {span}. Kangaroo MuJoCo ledgers "
               "hold the soft contact's dissipation at the touchdown, which does not refine."),
        tables=[Table("Paired differences per halving",
                      ("robot", "backend", "span [s]", "steps",
                       "max paired position difference [m]",
                       f"the same for t ≥ {LATE:g} s [m]", "ledger residual, coarse [J]",
                       "ledger residual, fine [J]", "fine ledger / largest energy term"),
                      tuple(table),
                      "Tracked position: Stewart the platform, Kangaroo the pelvis. Observed "
                      f"orders for t ≥ {LATE:g} s: " + ", ".join(
                          f"{n} {fmt(v['order_late'], 3)}" for n, v in ladders.items()))],
        checks=checks, plots=[_plot(ctx, ladders)], data={"ladders": ladders, "runs": [
            {k: v for k, v in r.items() if k not in ("time", "position")} for r in rows]})


def _us(dt: float) -> str:
    """A step as text: ``4 ms`` or ``12.5 µs``."""
    return f"{dt * 1e3:g} ms" if dt >= 1e-3 else f"{dt * 1e6:g} µs"


def _plot(ctx, ladders) -> str:
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    for name, v in ladders.items():
        fine = np.asarray(v["dt"][1:])
        ax.loglog(fine, v["differences"], marker="o", label=f"{name} (order "
                  f"{v['order']:.2f})")
        ax.loglog(fine, v["differences"][-1] * fine / fine[-1], ls=":", color="grey")
    ax.set_xlabel("finer step of the halving [s]")
    ax.set_ylabel("max paired position difference [m]")
    ax.set_title("Step halving: Stewart platform, Kangaroo pelvis (dotted: first order)")
    ax.legend(fontsize=8)
    return save(fig, ctx.file("refinement.png"))

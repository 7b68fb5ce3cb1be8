"""``kangaroo-landing``: the Kangaroo-like biped's 10 s floating-base sequence on MuJoCo and
Pinocchio (issue 21 item 2b; docs/supports.md, "Kangaroo-like biped").

``records/kangaroo_locked.yaml`` compiled with its support modes (``--modes all --mode
double=left_sole,right_sole``) along ``records/references/kangaroo_landing.yaml``: released
at rest with the soles 5 cm above the floor (mode ``free``), touchdown at the free-fall time
(``double`` from then on), a 12 cm crouch and back, a ±3 cm lateral shift, a ±0.15 rad yaw,
quiet stance. Port PD + feedforward (the modes' inverse dynamics; collocated in free
flight, :func:`rbc.model.dynamics.collocated_efforts`), 1 ms control period, on

* **MuJoCo** — one model with a floor and native unilateral contact (soft, elliptic cones);
* **Pinocchio** — ``constraintDynamics`` with one ideal weld per active sole (``CONTACT_6D``,
  Baumgarte), rebuilt at touchdown with the plastic impact map.

**Torso push** (:data:`PUSH`, ``rbc simulate --push``, :mod:`rbc.sim.push`): every 10 s
run is pushed laterally, 60 N on the upper body for 0.1 s at 8.5 s (quiet stance);
unmodelled (the controller neither knows nor compensates it).

**Conditions** (:data:`CONDITIONS`): ``nominal`` (1 ms physics step, μ = 1, release 5 cm),
``low_friction`` (μ 0.5 on both soles), ``high_release_push`` (the issue's "higher release
and stronger push": 10 cm, its own reference from the same generator, and the push 25 %
stronger), ``halved_step`` (0.5 ms physics step, the control period kept so the runs pair
up), ``delay`` (a 2 ms first-order lag on every actuator, ``drive: {lag: 0.002}``, on both
plants: :class:`rbc.sim.drives.SteppedDrives` per physics step).

**Gains** (:func:`gains`): in double support the leg-length port's reflected inertia is
m_ℓ = 12.3 kg (mean of the legs); the paper's 4e4 N/m there gives ω = √(4e4/m_ℓ) = 56.9
rad/s. The leg-length ports get the paper's 4e4 N/m, every other port ``K_p = m_i ω²``, and
every port ``K_d = 2 m_i ω`` (ζ = 1), m_i its double-support reflected inertia; each gain
is capped by the flight phase: with the 1 ms zero-order hold a port of flight inertia m_f
is stable with ``K_p ≤ 0.5 m_f/T²``, ``K_d ≤ 0.5 m_f/T`` (the flight loop's discrete poles
inside |z| ≤ 0.71). The caps bind at the ankles (feet of 4e-3 and 1.6e-3 kg·m² in flight,
8.5 and 7.0 kg·m² in stance: 2.0e3 and 790 N·m/rad) and on the leg-length damping.

Reported per run: the pelvis (``base_link`` origin) position against the reference (RMS,
largest), sole slip and smallest normal force (MuJoCo), impact loss (Pinocchio), peak port
effort, the energy-ledger residual; per condition the **paired pelvis-position difference**
between the two plants at the common control instants (largest and RMS, over the whole run
and after the landing transient, t ≥ 0.5 s); and the ledger under step halving (nominal vs
``halved_step``, per plant).
"""

from __future__ import annotations

import functools
import importlib.util

import numpy as np

from rbc.repro import models
from rbc.repro.outcome import Outcome, Table
from rbc.repro.plots import pyplot, save
from rbc.repro.report import fmt
from rbc.sim.push import Push
from rbc.verify.checks import make_check

TITLE = "Kangaroo-like biped: 10 s drop landing, crouch, sway and yaw on MuJoCo and Pinocchio"
RECORD = "kangaroo_locked"
MODES = (("double", ("left_sole", "right_sole")),)
BACKENDS = ("mujoco", "pinocchio")
CONTROL_DT = 1e-3  # s
#: The torso push of the sequence (module docstring): lateral (+y) on the upper body
#: (``pelvis_2_link``, which carries the locked arms) for 0.1 s in the quiet stance — an
#: impulse of 6 N·s, ≈ 0.11 m/s on the 55.7 kg robot.
PUSH = Push("pelvis_2_link", (0.0, 60.0, 0.0), 8.5, 0.1)
#: The stronger push of the ``high_release_push`` condition (as the Go2 course's: +25 %).
STRONGER = 1.25
#: condition → changes (module docstring): physics step [s], sole μ, release [m], lag [s],
#: push factor.
CONDITIONS: dict[str, dict] = {
    "nominal": {},
    "low_friction": {"friction": 0.5},
    "high_release_push": {"release": 0.10, "push": STRONGER},
    "halved_step": {"dt": 5e-4},
    "delay": {"lag": 0.002},
}
#: Conditions the Pinocchio plant cannot run (none since it integrates drive dynamics).
MUJOCO_ONLY: tuple[str, ...] = ()
DURATION = {False: 10.0, True: 0.2}
QUICK_CONDITIONS = ("nominal", "halved_step")
#: Paired differences are also taken after the landing transient.
SETTLED = 0.5  # s
#: The paper's leg-length gain [N/m] (issue 21), and the flight-phase caps (docstring).
KP_LINEAR = 4e4
CAP = 0.5
#: Acceptance of this target's own runs: the robot stays up — the pelvis within 5 cm of its
#: reference on every run (a fall or a slide is metres), soles slipping less than 2 cm.
MAX_BASE_ERROR = 0.05
MAX_SLIP = 0.02


def _generator():
    path = models.REFERENCES / "make_kangaroo_references.py"
    spec = importlib.util.spec_from_file_location("make_kangaroo_references", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@functools.cache
def reference(release: float) -> str:
    """Path (text) of the landing reference for a release height [m]: the shipped file for
    5 cm, else the generator's text written into the scratch directory."""
    gen = _generator()
    if release == gen.RELEASE:
        return str(gen.LANDING)
    path = models._scratch() / f"kangaroo_landing_{round(1000 * release)}mm.yaml"
    path.write_text(gen.landing_text(release), encoding="utf-8")
    return str(path)


def record_text(friction: float | None = None, lag: float | None = None) -> str | None:
    """The locked record's text with every support's μ set, or a first-order lag [s] on
    every actuator (``drive: {lag: …}``); None: the shipped record unchanged."""
    if friction is None and lag is None:
        return None
    import yaml

    doc = yaml.safe_load(models.record_path(RECORD).read_text(encoding="utf-8"))
    for s in doc["supports"] if friction is not None else ():
        s["friction"] = float(friction)
    for a in doc["actuators"] if lag is not None else ():
        a["drive"] = {"lag": float(lag)}
    return yaml.safe_dump(doc, sort_keys=False)


def bundle(friction: float | None = None, lag: float | None = None):
    """The compiled bundle (with its modes) of :func:`record_text`."""
    return models.modes_bundle(RECORD, record_text(friction, lag), MODES)


@functools.cache
def gains(capped: bool = True) -> dict:
    """``{kp, kd, inertia_stance, inertia_flight}`` by actuator name (module docstring);
    ``capped=False``: the stance rule without the flight-phase caps (for runs that never
    leave double support, e.g. :mod:`rbc.repro.refinement`'s 4 ms control period)."""
    from rbc.model.compiled import CompiledModel
    from rbc.model.dynamics import DynamicsModel
    from rbc.model.modes import anchors_array, model_for, support_poses
    from rbc.sim.controllers import port_inertia
    from rbc.sim.schedule import mode_state

    kin = CompiledModel.from_bundle(bundle())
    q = kin.partitions["default"].q_ref
    info = kin.modes["double"]
    mm = model_for(kin, info, anchors_array(support_poses(kin, q, info.supports)))
    m_st = port_inertia(DynamicsModel.build(mm), next(iter(mm.partitions.values())),
                        mode_state(mm, q)[0])
    m_fl = port_inertia(DynamicsModel.build(kin), kin.partitions["default"], q)
    names = [a.name for a in kin.record.actuators]
    kinds = {j.name: j.type for j in kin.record.joints}
    linear = [i for i, a in enumerate(kin.record.actuators) if kinds[a.joint] == "prismatic"]
    w = np.sqrt(KP_LINEAR / float(np.mean(m_st[linear])))
    kp, kd = m_st * w * w, 2.0 * m_st * w
    if capped:
        kp = np.minimum(kp, CAP * m_fl / CONTROL_DT ** 2)
        kd = np.minimum(kd, CAP * m_fl / CONTROL_DT)
    kp[linear] = KP_LINEAR  # exactly the paper's (the two legs' m_ℓ differ by 0.03 %)
    return {k: dict(zip(names, v.tolist(), strict=True)) for k, v in (
        ("kp", kp), ("kd", kd), ("inertia_stance", m_st), ("inertia_flight", m_fl))}


def simulate_case(case: tuple) -> dict:
    """One run: ``case = (condition, backend, duration [s])``."""
    from rbc.sim.run import SimOptions, prepare, simulate

    condition, backend, duration = case
    c = CONDITIONS[condition]
    g = gains()
    prep = prepare(bundle(c.get("friction"), c.get("lag")), SimOptions(
        backend=backend, controller="pd+ff", duration=duration, dt=c.get("dt", CONTROL_DT),
        control_dt=CONTROL_DT, reference=reference(c.get("release", 0.05)),
        kp=g["kp"], kd=g["kd"], push=pushes(condition, duration)))
    res = simulate(prep)
    s, log = res.summary, res.log
    sm = s["support_modes"]
    sup = sm["supports"]
    return {"condition": condition, "backend": backend, "duration": s["duration"],
            "dt": s["dt"], "time": log["time"].tolist(),
            "base": log["base/position"].tolist(), "base_reference": log["base/reference"].tolist(),
            "base_rms": sm["base_position_rms"], "base_max_error": sm["base_position_max_error"],
            "max_slip": max(v["max_slip"] for v in sup.values()),
            "min_normal_force": min(v["min_normal_force"] for v in sup.values()),
            "impact_losses": sm["impact_losses"], "switches": sm["switches"],
            "peak_effort": max(s["peak_effort"].values()),
            "clipped_steps": s["clipped_steps"], "max_loop_gap": s["max_loop_gap"],
            "ledger": s["energy_ledger_residual"], "ledger_relative": s["energy_ledger_relative"],
            "wall_time": s["wall_time"]}


def pushes(condition: str, duration: float) -> tuple[str, ...]:
    """The ``--push`` texts of a condition's run: :data:`PUSH` (scaled by the condition's
    ``push`` factor) when the run reaches it (a quick run ends before it)."""
    if duration <= PUSH.start:
        return ()
    return (PUSH.scaled(CONDITIONS[condition].get("push", 1.0)).text(),)


def paired(a: dict, b: dict, after: float = 0.0) -> tuple[float, float]:
    """``(largest, RMS)`` [m] of the pelvis-position difference of two runs at their common
    control instants t ≥ after.

    Raises:
        ValueError: the runs do not log the same instants.
    """
    ta, tb = np.asarray(a["time"]), np.asarray(b["time"])
    if ta.shape != tb.shape or not np.allclose(ta, tb, rtol=0, atol=1e-9):
        raise ValueError("the runs do not share their control instants")
    d = np.linalg.norm(np.asarray(a["base"]) - np.asarray(b["base"]), axis=1)[ta >= after]
    return float(d.max(initial=0.0)), float(np.sqrt(np.mean(d * d))) if d.size else np.nan


def _find(rows, **kw) -> dict | None:
    return next((r for r in rows if all(r[k] == v for k, v in kw.items())), None)


def run(ctx) -> Outcome:
    """Every run (module docstring)."""
    dur = DURATION[ctx.quick]
    conds = QUICK_CONDITIONS if ctx.quick else tuple(CONDITIONS)
    cases = [(c, b, dur) for c in conds for b in BACKENDS
             if not (b == "pinocchio" and c in MUJOCO_ONLY)]
    rows = [r for r in ctx.bag(simulate_case, cases, "simulations") if r is not None]
    figures, runs_t, pair_t, checks = {}, [], [], []
    for r in rows:
        runs_t.append((r["condition"], r["backend"], fmt(1e3 * r["base_rms"], 3),
                       fmt(1e3 * r["base_max_error"], 3), fmt(1e3 * r["max_slip"], 3),
                       fmt(r["min_normal_force"], 3),
                       "—" if r["impact_losses"] is None else fmt(r["impact_losses"], 3),
                       fmt(r["peak_effort"], 4), fmt(r["max_loop_gap"], 2),
                       fmt(r["ledger"], 3), fmt(r["ledger_relative"], 2),
                       f"{r['wall_time']:.0f}"))
        figures[f"{r['condition']}.{r['backend']}.base_rms_mm"] = 1e3 * r["base_rms"]
        checks.append(make_check(f"landing.{r['condition']}.{r['backend']}.base_error",
                                 r["base_max_error"], MAX_BASE_ERROR, "m",
                                 "largest pelvis-position error against the reference"))
        if r["backend"] == "mujoco":
            checks.append(make_check(f"landing.{r['condition']}.mujoco.slip", r["max_slip"],
                                     MAX_SLIP, "m", "largest sole slip on MuJoCo"))
    for c in conds:
        mj, pn = _find(rows, condition=c, backend="mujoco"), _find(rows, condition=c,
                                                                    backend="pinocchio")
        if mj is None or pn is None:
            continue
        big, rms = paired(mj, pn)
        big_s, rms_s = paired(mj, pn, SETTLED) if dur > SETTLED else (np.nan, np.nan)
        figures[f"{c}.paired_max_mm"], figures[f"{c}.paired_rms_mm"] = 1e3 * big, 1e3 * rms
        pair_t.append((c, fmt(1e3 * big, 3), fmt(1e3 * rms, 3), fmt(1e3 * big_s, 3),
                       fmt(1e3 * rms_s, 3)))
    halving = []
    for b in BACKENDS:
        a, h = _find(rows, condition="nominal", backend=b), _find(rows, condition="halved_step",
                                                                    backend=b)
        if a is None or h is None:
            continue
        figures[f"halving.{b}.ledger_coarse"], figures[f"halving.{b}.ledger_fine"] = (
            a["ledger"], h["ledger"])
        big, _ = paired(a, h)
        figures[f"halving.{b}.paired_max_mm"] = 1e3 * big
        halving.append((b, fmt(a["ledger"], 3), fmt(h["ledger"], 3),
                        fmt(a["ledger"] / h["ledger"], 3) if h["ledger"] else "—",
                        fmt(1e3 * big, 3)))
    checks.append(make_check("landing.runs", len(rows), len(cases), "runs", "runs completed",
                             lower_bound=True))
    nom = "nominal"
    key = (f"paired MuJoCo–Pinocchio pelvis difference (nominal) max "
           f"{fmt(figures.get(f'{nom}.paired_max_mm'), 3)} mm, RMS "
           f"{fmt(figures.get(f'{nom}.paired_rms_mm'), 3)} mm; ledger under step halving "
           f"MuJoCo {fmt(figures.get('halving.mujoco.ledger_coarse'), 3)} → "
           f"{fmt(figures.get('halving.mujoco.ledger_fine'), 3)} J, Pinocchio "
           f"{fmt(figures.get('halving.pinocchio.ledger_coarse'), 3)} → "
           f"{fmt(figures.get('halving.pinocchio.ledger_fine'), 3)} J")
    g = gains()
    setup = (
        "The paper's sequence is PAL's Kangaroo (its own model, references and controller); "
        "ours is the kangaroo-like records/kangaroo_locked.yaml (arms and pelvis joints "
        "locked, 12 leg drives) along records/references/kangaroo_landing.yaml with port "
        f"PD + feedforward (leg-length K_p {fmt(g['kp']['left_leg_length'], 3)} N/m, ankle "
        f"pitch {fmt(g['kp']['left_ankle_pitch'], 3)} N·m/rad; module docstring). The "
        f"torso push: {PUSH.force[1]:g} N lateral on {PUSH.body} for {PUSH.duration:g} s at "
        f"{PUSH.start:g} s ({STRONGER:g}× in high_release_push; ours, the issue gives no "
        "magnitude). The paper's figures for this sequence are not quoted in the issue, so "
        "the comparison rows are ours only. MuJoCo's soles are soft boxes with friction; "
        "Pinocchio's are ideal welds that can pull, so the paired difference measures the "
        "contact models as much as the integrators.")
    head = ("condition", "plant", "pelvis RMS [mm]", "pelvis max error [mm]", "max slip [mm]",
            "min normal force [N]", "impact loss [J]", "peak effort [N or N·m]",
            "max loop gap [m]", "ledger residual [J]", "ledger / largest term", "wall [s]")
    return Outcome(
        figures=figures, key_figures=key, setup=setup,
        tables=[Table(f"Runs over {dur:g} s", head, tuple(runs_t),
                      "Ledger residuals on MuJoCo contain its contact and solver dissipation."),
                Table("Paired pelvis-position differences, MuJoCo − Pinocchio",
                      ("condition", "max [mm]", "RMS [mm]", f"max, t ≥ {SETTLED:g} s [mm]",
                       f"RMS, t ≥ {SETTLED:g} s [mm]"), tuple(pair_t)),
                Table("Step halving (physics 1 → 0.5 ms, control 1 ms)",
                      ("plant", "ledger residual, 1 ms [J]", "ledger residual, 0.5 ms [J]",
                       "ratio", "max paired pelvis difference [mm]"), tuple(halving))],
        checks=checks, plots=[_plot(ctx, rows)],
        data={"runs": [{k: v for k, v in r.items() if k not in ("time", "base",
                                                                "base_reference")}
                       for r in rows], "gains": g, "duration": dur})


def _plot(ctx, rows) -> str:
    plt = pyplot()
    fig, ax = plt.subplots(3, 1, figsize=(10, 8.5), sharex=True)
    for r in rows:
        if r["condition"] not in ("nominal", "high_release_push"):
            continue
        t, p = np.asarray(r["time"]), 1e3 * np.asarray(r["base"])
        ls = "-" if r["backend"] == "mujoco" else "--"
        for i, a in enumerate(ax):
            a.plot(t, p[:, i], lw=0.9, ls=ls, label=f"{r['condition']} {r['backend']}")
    ref = _find(rows, condition="nominal", backend="mujoco") or (rows[0] if rows else None)
    if ref is not None:
        pr = 1e3 * np.asarray(ref["base_reference"])
        for i, a in enumerate(ax):
            a.plot(ref["time"], pr[:, i], lw=0.6, color="grey", label="reference (nominal)")
    for a, axis in zip(ax, "xyz", strict=True):
        a.set_ylabel(f"pelvis {axis} [mm]")
        a.set_xlabel("time [s]")
    ax[0].legend(fontsize=7, ncol=3)
    ax[0].set_title("Kangaroo-like landing sequence: pelvis position per plant")
    return save(fig, ctx.file("pelvis.png"))

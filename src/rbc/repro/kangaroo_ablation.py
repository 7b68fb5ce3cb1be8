"""``kangaroo-ablation``: the Kangaroo-like biped's fixed-pelvis feedforward ablation (issue 21
item 2a; docs/supports.md, "Kangaroo-like biped").

``records/kangaroo_locked.yaml`` (PAL's Kangaroo MJCF with the documented overlay, its
unactuated pelvis and arm joints locked: ``records/make_kangaroo_locked.py``) with the
pelvis welded to the world (``fix_root``), along ``records/references/kangaroo_legs.yaml``
(4 s, both legs: leg-length stroke, hip and ankle motions; quick: its first 0.5 s), port PD
with and without the reduced-dynamics feedforward, at a 100 µs physics step and control
period (the paper's step), on MuJoCo (the paper's plant) and, as a second engine, on
Pinocchio (``constraintDynamics`` with Baumgarte).

**Gains.** The paper's 4e4 N/m and 600 N·s/m on the two leg-length (linear) ports. With the
leg-length port's reflected inertia m_ℓ at the initial posture (nominal model,
``rbc.sim.controllers.port_inertia``) they are a closed-loop natural frequency
ω = √(K_p/m_ℓ) and damping ratio ζ = K_d / (2√(K_p m_ℓ)); the ten rotary ports get the same
ω and ζ on their own reflected inertia m_i (K_p = m_i ω², K_d = 2ζ m_i ω: rbc's gain rule
at that bandwidth), so every port responds alike.

Per run: the port position RMS over the linear ports [m] (the paper's "motor position RMS")
and over the rotary ports [rad], the peak linear actuator force [N] and rotary torque
[N·m], the largest loop gap, the energy-ledger residual. The linear-port RMS is also
computed independently of rbc's reference pipeline — the logged ports against the knots'
clamped cubic spline evaluated with SciPy (:func:`spline_rms`) — and must agree.
"""

from __future__ import annotations

import functools

import numpy as np

from rbc.repro import models
from rbc.repro.outcome import Outcome, Table
from rbc.repro.plots import pyplot, save
from rbc.repro.report import fmt
from rbc.verify.checks import make_check

TITLE = "Kangaroo-like biped, pelvis fixed: PD vs PD + feedforward at a 100 µs step"
RECORD = "kangaroo_locked"
REFERENCE = models.REFERENCES / "kangaroo_legs.yaml"
BACKENDS = ("mujoco", "pinocchio")
CONTROLLERS = ("pd", "pd+ff")
DT = 1e-4  # s: physics step and control period (the paper's 100 µs)
DURATION = {False: 4.0, True: 0.25}
#: The paper's gains on the linear ports [N/m, N·s/m] (issue 21).
KP_LINEAR, KD_LINEAR = 4e4, 600.0
#: Acceptance (issue 21): the feedforward lowers the motor RMS at least 100×.
MIN_RATIO = 100.0
#: The independent spline RMS and rbc's agree to 1 %: rbc's port reference between its
#: 10 ms lift samples is a cubic Hermite interpolant of the spline (error O(h⁴), about 1e-9 m
#: here), small against the smallest RMS measured (≈ 4e-7 m).
SPLINE_RTOL = 1e-2


@functools.cache
def gains() -> dict:
    """The ablation's gain request (module docstring): ``{bandwidth [Hz], zeta, kp, kd,
    inertia}`` with ``kp``/``kd`` the linear ports' overrides by actuator name and
    ``inertia`` the reflected inertias by actuator name [kg or kg·m²]."""
    from rbc.model.compiled import CompiledModel
    from rbc.model.dynamics import DynamicsModel
    from rbc.sim.controllers import port_inertia
    from rbc.sim.run import welded

    kin = welded(CompiledModel.from_bundle(models.bundle(RECORD)))
    part = kin.partitions["default"]
    m = port_inertia(DynamicsModel.build(kin), part, part.q_ref)
    names = [a.name for a in kin.record.actuators]
    linear = linear_ports(kin)
    m_l = float(np.mean([m[names.index(n)] for n in linear]))
    w = np.sqrt(KP_LINEAR / m_l)
    return {"bandwidth": float(w / (2 * np.pi)), "zeta": float(KD_LINEAR / (2 * np.sqrt(
        KP_LINEAR * m_l))), "kp": dict.fromkeys(linear, KP_LINEAR),
        "kd": dict.fromkeys(linear, KD_LINEAR), "inertia": dict(zip(names, m.tolist(),
                                                                     strict=True))}


def linear_ports(kin) -> list[str]:
    """Names of the actuators on prismatic joints (the leg-length actuators)."""
    kinds = {j.name: j.type for j in kin.record.joints}
    return [a.name for a in kin.record.actuators if kinds[a.joint] == "prismatic"]


def spline_rms(log_time: np.ndarray, ports: np.ndarray, columns: list[int], joints: list[str],
               ) -> float:
    """RMS [m or rad] over ``columns`` of ``ports`` (N, n_act) against the reference file's
    knots splined independently (``scipy.interpolate.CubicSpline``, clamped, held after the
    last knot — docs/simulate.md), ``joints[i]`` the coordinate of column ``columns[i]``."""
    from scipy.interpolate import CubicSpline

    from rbc.safeio import load_yaml

    doc = load_yaml(REFERENCE.read_text(encoding="utf-8"), REFERENCE)
    t = np.asarray(doc["time"], dtype=float)
    tt = np.clip(log_time, t[0], t[-1])
    err = [ports[:, c] - CubicSpline(t, np.asarray(doc["joints"][j], float),
                                     bc_type="clamped")(tt)
           for c, j in zip(columns, joints, strict=True)]
    return float(np.sqrt(np.mean(np.square(err))))


def simulate_case(case: tuple) -> dict:
    """One run: ``case = (backend, controller, duration [s])``."""
    from rbc.sim.run import SimOptions, prepare, simulate

    backend, controller, duration = case
    g = gains()
    prep = prepare(models.bundle(RECORD), SimOptions(
        backend=backend, controller=controller, duration=duration, dt=DT, fix_root=True,
        reference=REFERENCE, bandwidth=g["bandwidth"], zeta=g["zeta"], kp=g["kp"],
        kd=g["kd"]))
    res = simulate(prep)
    s, log = res.summary, res.log
    acts = prep.kin.record.actuators
    names = [a.name for a in acts]
    lin = [names.index(n) for n in linear_ports(prep.kin)]
    rot = [i for i in range(len(names)) if i not in lin]
    err = log["port_reference"] - log["ports"]
    effort = np.abs(log["control/effort"])
    every = max(1, len(err) // 800)

    def rms(cols):
        return float(np.sqrt(np.mean(np.square(err[:, cols]))))

    return {"backend": backend, "controller": controller, "duration": s["duration"],
            "linear_rms": rms(lin), "rotary_rms": rms(rot),
            "linear_rms_spline": spline_rms(log["time"], log["ports"], lin,
                                            [acts[i].joint for i in lin]),
            "peak_linear_force": float(effort[:, lin].max()),
            "peak_rotary_torque": float(effort[:, rot].max()),
            "peak_effort": dict(s["peak_effort"]), "port_rms": dict(s["port_rms"]),
            "clipped_steps": s["clipped_steps"], "max_loop_gap": s["max_loop_gap"],
            "energy_ledger_residual": s["energy_ledger_residual"],
            "energy_ledger_relative": s["energy_ledger_relative"],
            "physics_steps": s["physics_steps"], "wall_time": s["wall_time"],
            "time": log["time"][::every].tolist(),
            "linear_error": np.linalg.norm(err[::every, lin], axis=1).tolist(),
            "rotary_error": np.linalg.norm(err[::every, rot], axis=1).tolist()}


def _find(rows, **kw) -> dict | None:
    return next((r for r in rows if all(r[k] == v for k, v in kw.items())), None)


def run(ctx) -> Outcome:
    """Every run (module docstring)."""
    dur = DURATION[ctx.quick]
    cases = [(b, c, dur) for b in BACKENDS for c in CONTROLLERS]
    rows = [r for r in ctx.bag(simulate_case, cases, "simulations") if r is not None]
    figures, table, checks = {}, [], []
    for b in BACKENDS:
        pd, ff = (_find(rows, backend=b, controller=c) for c in CONTROLLERS)
        for r in (pd, ff):
            if r is None:
                continue
            c = r["controller"]
            figures[f"{b}.{c}.linear_rms_mm"] = 1e3 * r["linear_rms"]
            figures[f"{b}.{c}.linear_rms_um"] = 1e6 * r["linear_rms"]
            figures[f"{b}.{c}.peak_linear_force"] = r["peak_linear_force"]
            figures[f"{b}.{c}.rotary_rms"] = r["rotary_rms"]
            table.append((b, c, fmt(1e3 * r["linear_rms"], 4), fmt(r["rotary_rms"], 3),
                          fmt(r["peak_linear_force"], 5), fmt(r["peak_rotary_torque"], 4),
                          fmt(r["max_loop_gap"], 2), fmt(r["energy_ledger_relative"], 2),
                          str(r["clipped_steps"]), f"{r['wall_time']:.1f}"))
            checks.append(make_check(
                f"kangaroo.{b}.{c}.spline_rms", abs(r["linear_rms_spline"] / r["linear_rms"]
                                                    - 1.0), SPLINE_RTOL, "1",
                "linear-port RMS: SciPy spline of the knots vs rbc's lifted reference"))
        if pd and ff:
            lin = pd["linear_rms"] / ff["linear_rms"]
            rot = pd["rotary_rms"] / ff["rotary_rms"]
            figures[f"{b}.linear_ratio"], figures[f"{b}.rotary_ratio"] = lin, rot
            figures[f"{b}.linear_ratio_spline"] = (pd["linear_rms_spline"]
                                                   / ff["linear_rms_spline"])
            for what, v in (("linear", lin), ("rotary", rot)):
                checks.append(make_check(f"kangaroo.{b}.{what}_ratio", v, MIN_RATIO, "1",
                                         f"PD over PD + FF {what}-port RMS", lower_bound=True))
    checks.append(make_check("kangaroo.no_clipping",
                             float(sum(r["clipped_steps"] for r in rows)), 0.0, "steps",
                             "control steps with a clipped port (the record has no limits)"))
    checks.append(make_check("kangaroo.runs", len(rows), len(cases), "runs",
                             "runs completed", lower_bound=True))
    g = gains()
    span = f"{dur:g} s"
    key = (f"MuJoCo leg-length RMS PD {fmt(figures.get('mujoco.pd.linear_rms_mm'), 4)} mm → "
           f"PD+FF {fmt(figures.get('mujoco.pd+ff.linear_rms_um'), 4)} µm "
           f"({fmt(figures.get('mujoco.linear_ratio'), 4)}×; paper 1.653 mm → 0.647 µm), "
           f"rotary {fmt(figures.get('mujoco.rotary_ratio'), 3)}×; peak force "
           f"{fmt(figures.get('mujoco.pd.peak_linear_force'), 4)} → "
           f"{fmt(figures.get('mujoco.pd+ff.peak_linear_force'), 4)} N (paper 250.70 → "
           "239.84 N)")
    setup = (
        "The paper's figures are for PAL's Kangaroo with its linkage-driven legs (12 linear "
        "actuators) and its own reference; ours is the kangaroo-like records/kangaroo_locked."
        "yaml: the vendored Kangaroo MJCF with two knee loops, one linear actuator per leg "
        "(the leg length) and five direct drives per leg at the hip and ankle joints (the "
        "file has no actuator linkages), the unactuated pelvis and arm joints locked at 0 "
        "(the record is generated from the same overlay; a stated simplification), the "
        "pelvis welded, along a 4 s reference of both legs made for this study "
        "(records/references/make_kangaroo_references.py: ±40 mm stroke, hip and ankle "
        "swings up to 0.3 rad at 0.37–1.31 Hz). The paper's 4e4 N/m, 600 N·s/m act on the "
        f"leg-length ports; the rotary ports get the same ω = 2π·{g['bandwidth']:.3g} Hz and "
        f"ζ = {g['zeta']:.4g} on their reflected inertias. Our legs carry no body weight with "
        "the pelvis fixed and the reference is gentler, so the peak force is lower than the "
        "paper's; the RMS reduction compares. Pinocchio is a second engine, not in the paper.")
    head = ("backend", "controller", "leg-length RMS [mm]", "rotary RMS [rad]",
            "peak leg-length force [N]", "peak rotary torque [N·m]", "max loop gap [m]",
            "ledger / largest energy term", "clipped steps", "loop wall time [s]")
    inertia = tuple((n, fmt(m, 4), fmt(m * (2 * np.pi * g["bandwidth"]) ** 2, 4),
                     fmt(2 * g["zeta"] * m * 2 * np.pi * g["bandwidth"], 4))
                    for n, m in g["inertia"].items())
    return Outcome(
        figures=figures, key_figures=key, setup=setup,
        tables=[Table(f"Pelvis fixed, {span} at a 100 µs step", head, tuple(table),
                      "Linear ports: the two leg-length actuators; rotary: the ten hip and "
                      "ankle drives."),
                Table("Gains", ("actuator", "reflected inertia [kg or kg·m²]",
                                "K_p [N/m or N·m/rad]", "K_d [N·s/m or N·m·s/rad]"), inertia,
                      "The leg-length ports carry the paper's 4e4 N/m and 600 N·s/m exactly "
                      "(the rule reproduces them to round-off).")],
        checks=checks, plots=[_plot(ctx, rows)],
        data={"runs": rows, "gains": g, "dt": DT, "duration": dur})


def _plot(ctx, rows) -> str:
    plt = pyplot()
    fig, ax = plt.subplots(1, 2, figsize=(12, 4.2))
    for r in rows:
        ls = "-" if r["controller"] == "pd" else "--"
        for a, key in zip(ax, ("linear_error", "rotary_error"), strict=True):
            a.semilogy(r["time"], np.maximum(r[key], 1e-12), lw=0.8, ls=ls,
                       label=f"{r['backend']} {r['controller']}")
    ax[0].set_ylabel("‖leg-length port error‖ [m]")
    ax[1].set_ylabel("‖hip and ankle port error‖ [rad]")
    for a, title in zip(ax, ("leg-length ports", "rotary ports"), strict=True):
        a.set_xlabel("time [s]")
        a.set_title(f"Kangaroo-like, pelvis fixed: {title}")
        a.legend(fontsize=7)
    return save(fig, ctx.file("port_errors.png"))

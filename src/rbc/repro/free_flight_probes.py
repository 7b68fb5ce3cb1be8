"""``free-flight-probes``: Go2 and Cassie released in free flight in MuJoCo, their
accelerations and link poses against rbc's prediction (issue 24 item 3).

Two sets of six states (quick: two):

* **random** (Go2 and Cassie): set B of :func:`rbc.verify.states.make_states` without its
  external wrench: a closed configuration reached by a random walk on the closure manifold
  (a free base drawn by closed tangent steps), random independent speeds, random port
  efforts within the effort limits;
* **course** (Go2, the paper's states): six instants spread evenly over the nominal Go2
  course (``records/references/go2_course.yaml`` lifted on its 0.02 s grid as
  :mod:`rbc.repro.go2_course` runs it, :func:`rbc.sim.schedule.lift_support_reference`;
  quick: its first :data:`QUICK_COURSE` s): the course's configuration and speeds, the
  course's feedforward port efforts there (:func:`rbc.sim.schedule.modal_feedforward`).

Each is written into the exported MJCF (contacts disabled: free flight; ``qpos`` by the
export's :meth:`~rbc.backends.mjcf_export.MjcfExport.qpos_of`, ``qvel = P(q) v`` with
v = E u from rbc's lift) and, with ``ctrl = f``:

* **acceleration**: MuJoCo's ``qacc`` after ``mj_forward`` against rbc's reduced forward
  dynamics mapped to MuJoCo's coordinates, ``P a + Ṗ v`` (a = E u̇ + Ė u; Ṗ v by a central
  difference of P along ``q ⊕ ±εv``), as the normalised 2-norm ``‖qacc − (P a + Ṗ v)‖ /
  ‖P a + Ṗ v‖``; and the same with the acceleration *measured* as the paper does, from one
  MuJoCo step ``(qvel' − qvel)/h`` at h = 0.1 and 0.05 ms;
* **poses**: MuJoCo is stepped 50 ms in free flight at each h under the same efforts; at
  every 5 ms its ``qpos`` is read back into rbc coordinates
  (:func:`rbc.backends.mjcf_state.tree_configuration`, projected onto the closure manifold)
  and rbc's forward kinematics of every body origin and support frame (the feet) is compared
  with MuJoCo's ``xpos`` (largest distance).

**Along the course** (the paper's pose check): at every point of the lifted course's grid
(1301 configurations over 26 s; quick: the first :data:`QUICK_COURSE` s) the configuration
is written into the export (``qpos_of``, ``mj_kinematics``) and rbc's forward kinematics of
every body origin and of the four feet (support frames) is compared with MuJoCo's native
poses (largest distance, feet and links apart). These are static: the step size does not
enter.

The one-step accelerations include MuJoCo's integrator: its implicit damping (Go2's 2 N·m·s/rad
on 0.01 kg·m² of armature: Euler's ``(M + h D) v' = M v + h f``) changes one step by
O(h·D·M⁻¹), so that figure halves with h (first order: 1.35e-2 at 0.1 ms, 6.8e-3 at 0.05 ms in
the quick run), while ``qacc`` measures the equations themselves (3.1e-15). The same step with
the damping explicit (MuJoCo's ``mjDSBL_EULERDAMP``: ``v' = v + h·qacc``) confirms that this is
the whole difference: it agrees with rbc to round-off.

Joint dry friction (Go2's ``friction: 0.2`` N·m) is left out on both sides: MuJoCo models it
as a soft ``frictionloss`` constraint, rbc as −μ·sign(v); damping and armature stay.

Cassie's loops are MuJoCo equality constraints (soft, ``solref = 2·h``): its constraint
forces are those of a stiff spring on the loop gap, not of a rigid joint, so its
acceleration discrepancy measures MuJoCo's constraint softness.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from rbc.repro import models
from rbc.repro.outcome import Outcome, Table
from rbc.repro.plots import pyplot, save
from rbc.repro.report import fmt
from rbc.verify.checks import make_check

TITLE = "Free-flight probes: MuJoCo accelerations and link poses vs rbc (Go2, Cassie)"
ROBOTS = ("go2", "cassie")
STATES = {False: 6, True: 2}
#: (robot, state set) in the report's order (module docstring).
GROUPS = (("go2", "random"), ("cassie", "random"), ("go2", "course"))
#: Span [s] of the course in the quick run (full: the whole 26 s course).
QUICK_COURSE = 0.6
STEPS = (1e-4, 5e-5)  # [s], the paper's 0.1 and 0.05 ms
FLIGHT, SAMPLE = 0.05, 0.005  # free-flight span and pose sampling [s]
#: ε of the central difference of P along the motion: the map is smooth (rotations), so the
#: O(ε²) truncation and the O(1e-16/ε) round-off balance near 1e-5 relative.
EPS = 1e-6
#: Go2 is a tree: MuJoCo's qacc and rbc's forward dynamics solve the same equations (the
#: export's inertias, armature and no damping), so they agree to the conditioning of M
#: times round-off; 1e-8 leaves margin over the ~1e-12 measured and is 1000× below the
#: paper's 1.25e-5.
GO2_ACCEL_LIMIT = 1e-8
#: Forward kinematics at the same configuration is exact up to round-off of a few SE(3)
#: products on metre-scale links: body poses need the tree coordinates only, which are read
#: back from qpos exactly (Cassie's soft loops do not enter). Measured ≤ 1e-15 m (Go2) and
#: 2.3e-15 m (Cassie); 1e-12 m leaves three decades.
POSE_LIMIT = {"go2": 1e-12, "cassie": 1e-12}
#: The one-step acceleration with explicit damping is ``qacc`` itself up to the round-off of
#: one Euler step, (v + h a − v)/h: |v|·ε/h ≈ 10 rad/s · 2.2e-16 / 5e-5 s ≈ 4e-11 of
#: accelerations of order 1e2 — 1e-8 relative leaves margin (the implicit step is ~1e-2).
EXPLICIT_LIMIT = 1e-8


def probe(case: tuple) -> dict:
    """One state of one robot: ``case = (robot, set, state index, seed, state)``; ``state``
    is None for the random set (drawn here from the seed), else the course's ``(q, v, f)``
    lists (:func:`course`)."""
    from rbc.backends.mjcf_export import export_mjcf
    from rbc.backends.mujoco_log import mujoco
    from rbc.model.dynamics import forward_dynamics, reduced_terms, tree_acceleration
    from rbc.model.partition import lift
    from rbc.verify.states import make_states

    robot, kind, index, seed, state = case
    kin, part, dm, dd = _dynamics(robot, kind)
    if state is None:
        s = make_states(kin, part, index + 1, seed)[1][index]
        q, u, f = s.q, s.u, s.f
    else:
        q, v, f = (np.asarray(x, dtype=float) for x in state)
        u = np.linalg.lstsq(lift(kin, part, q).E, v, rcond=None)[0]  # v = E u (a tree)
    t = reduced_terms(dm, dd, part, q, u, f)
    a = tree_acceleration(t, forward_dynamics(dm, t, coulomb=False))  # no dry friction
    out = {"robot": robot, "set": kind, "index": index}
    exp = export_mjcf(kin, replace(part, q_ref=np.asarray(q, dtype=float)))
    P = exp.velocity_map(kin, q)
    Pdot_v = (exp.velocity_map(kin, kin.integrate(q, EPS * t.v))
              - exp.velocity_map(kin, kin.integrate(q, -EPS * t.v))) @ t.v / (2 * EPS)
    pred = P @ a + Pdot_v
    norm = max(float(np.linalg.norm(pred)), 1e-300)
    for h in STEPS:
        tag = f"{h * 1e3:g}ms"
        for explicit in (True, False):
            exp, m, d = _mujoco(kin, part, h, q, t.v, f, explicit)
            if h == STEPS[0] and not explicit:
                out["accel_qacc"] = float(np.linalg.norm(d.qacc - pred)) / norm
            v0 = d.qvel.copy()
            mujoco.mj_step(m, d)
            key = f"accel_step_{'explicit_' if explicit else ''}{tag}"
            out[key] = float(np.linalg.norm((d.qvel - v0) / h - pred)) / norm
        out[f"pose_{tag}"] = _pose_error(kin, exp, m, d, h, q)
    return out


def course(case: tuple) -> dict:
    """The Go2 course lifted on its grid (module docstring): ``case = (span [s] or None,
    number of states)``. Returns the grid's largest foot and link distances between
    MuJoCo's native poses and rbc's forward kinematics (per grid point, for the plot), and
    the states ``(time, q, v, f)`` at evenly spread instants."""
    from rbc.backends.mjcf_export import export_mjcf
    from rbc.backends.mujoco_log import mujoco
    from rbc.repro import go2_course
    from rbc.sim.schedule import lift_support_reference, load_support_knots, modal_feedforward

    span, n = case
    kin, part, _, _ = _dynamics("go2", "course")
    knots = load_support_knots(models.REFERENCES / go2_course.REFERENCE, kin)
    T = float(knots.time[-1] - knots.time[0]) if span is None else span
    sref = lift_support_reference(kin, knots, go2_course.REFERENCE_DT, T)
    ff = modal_feedforward(kin, sref)
    ref = sref.ref
    exp = export_mjcf(kin, part)
    m = mujoco.MjModel.from_xml_string(exp.to_string())
    d = mujoco.MjData(m)
    feet, links = [], []
    for q in ref.q:
        d.qpos[:] = exp.qpos_of(kin, q)
        mujoco.mj_kinematics(m, d)
        b, f = _pose_distances(kin, exp, m, d, q)
        links.append(b)
        feet.append(f)
    K = ref.time.size
    pick = [int(round((i + 0.5) * (K - 1) / n)) for i in range(n)]  # interior: moving
    return {"time": ref.time.tolist(), "feet": feet, "links": links, "duration": T,
            "states": [(float(ref.time[k]), ref.q[k].tolist(), ref.v[k].tolist(),
                        ff[k].tolist()) for k in pick]}


def _dynamics(robot: str, kind: str = "random"):
    """``(kin, part, DynamicsModel, DynamicsData)``: Cassie imported with its pelvis free;
    Go2's course states in the model of its support modes (the course's coordinates)."""
    if kind == "course":
        from rbc.model.dynamics import DynamicsData, DynamicsModel

        kin = models.compiled_modes(robot)
        dm = DynamicsModel.build(kin)
        return kin, kin.partitions["default"], dm, DynamicsData.of(dm)
    if robot == "cassie":
        from rbc.model.compiled import CompiledModel
        from rbc.model.dynamics import DynamicsData, DynamicsModel

        kin = CompiledModel.from_bundle(models.cassie_bundle())
        dm = DynamicsModel.build(kin)
        return kin, kin.partitions["default"], dm, DynamicsData.of(dm)
    return models.dynamics(robot)


def _mujoco(kin, part, h: float, q: np.ndarray, v: np.ndarray, f: np.ndarray,
            explicit: bool = False):
    """The export at step h (its loop equalities' ``solref = 2·h``) in free flight (contacts
    off) at rbc state (q, v) with ``ctrl = f``, after ``mj_forward``: ``(exp, m, d)``;
    ``explicit``: joint damping integrated explicitly (``mjDSBL_EULERDAMP``)."""
    from rbc.backends.mjcf_export import export_mjcf
    from rbc.backends.mujoco_log import mujoco

    exp = export_mjcf(kin, replace(part, q_ref=np.asarray(q, dtype=float)), timestep=h)
    m = mujoco.MjModel.from_xml_string(exp.to_string())
    m.opt.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_CONTACT)
    if explicit:
        m.opt.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_EULERDAMP)
    m.dof_frictionloss[:] = 0.0  # dry friction is a soft constraint in MuJoCo: both sides drop it
    d = mujoco.MjData(m)
    d.qpos[:] = exp.qpos
    d.qvel[:] = exp.velocity_map(kin, q) @ v
    d.ctrl[:] = f
    mujoco.mj_forward(m, d)
    return exp, m, d


def _pose_error(kin, exp, m, d, h: float, q_seed: np.ndarray) -> float:
    """Largest distance [m] between MuJoCo's body origins / support frames and rbc's
    forward kinematics at MuJoCo's configuration, over the free flight (module docstring)."""
    from rbc.backends.mjcf_state import tree_configuration
    from rbc.backends.mujoco_log import mujoco

    every = int(round(SAMPLE / h))
    worst, q = 0.0, np.asarray(q_seed, dtype=float)
    for k in range(int(round(FLIGHT / h))):
        mujoco.mj_step(m, d)
        if (k + 1) % every:
            continue
        mujoco.mj_kinematics(m, d)
        q = tree_configuration(kin, exp, d.qpos, q)  # body poses need the tree part only
        worst = max(worst, *_pose_distances(kin, exp, m, d, q))
    return worst


def _pose_distances(kin, exp, m, d, q: np.ndarray) -> tuple[float, float]:
    """``(links, feet)``: the largest distance [m] between rbc's forward kinematics at q of
    every exported body origin, and of every support frame origin (the feet), and MuJoCo's
    ``xpos`` / ``xpos + xmat p`` after ``mj_kinematics``."""
    from rbc.backends.mujoco_log import mujoco
    from rbc.ir import spatial as sp
    from rbc.model.kinematics import body_poses

    poses = body_poses(kin, q)
    bodies = kin.record.body_index()
    links = feet = 0.0
    for v, name in exp.body_names.items():
        b = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, name)
        links = max(links, float(np.linalg.norm(poses[v].translation - d.xpos[b])))
    for s in kin.record.supports:
        v, p = bodies[s.body], sp.se3_from_pose(s.pose).translation
        if v in exp.body_names:
            b = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, exp.body_names[v])
            R = d.xmat[b].reshape(3, 3)
            feet = max(feet, float(np.linalg.norm(poses[v].act(p) - (d.xpos[b] + R @ p))))
    return links, feet


def run(ctx) -> Outcome:
    """Every probe and the course's pose check (module docstring)."""
    n = STATES[ctx.quick]
    span = QUICK_COURSE if ctx.quick else None
    walk = next(iter(ctx.bag(course, [(span, n)], "course")), None)
    cases = [(r, "random", i, ctx.seed, None) for r in ROBOTS for i in range(n)]
    cases += [("go2", "course", i, ctx.seed, st[1:])
              for i, st in enumerate(walk["states"] if walk else ())]
    rows = [r for r in ctx.bag(probe, cases, "probes") if r is not None]
    keys = ["accel_qacc", *(f"accel_step_{h * 1e3:g}ms" for h in STEPS),
            *(f"accel_step_explicit_{h * 1e3:g}ms" for h in STEPS),
            *(f"pose_{h * 1e3:g}ms" for h in STEPS)]
    figures, table, checks = {}, [], []
    for robot, kind in GROUPS:
        rs = [r for r in rows if (r["robot"], r["set"]) == (robot, kind)]
        if not rs:
            continue
        name = robot if kind == "random" else f"{robot}.{kind}"
        worst = {k: max(r[k] for r in rs) for k in keys}
        for k, v in worst.items():
            figures[f"{name}.{k}"] = v
        table.append((robot, kind, str(len(rs)), *(fmt(worst[k], 3) for k in keys)))
        checks.append(make_check(f"free_flight.{name}.pose", max(worst[k] for k in keys
                                                                  if k.startswith("pose")),
                                 POSE_LIMIT[robot], "m",
                                 "rbc forward kinematics vs MuJoCo body origins and feet"))
        if robot == "go2":  # Cassie's step differs by its soft loops, as its qacc does
            checks.append(make_check(f"free_flight.{name}.explicit_step", max(
                worst[k] for k in keys if k.startswith("accel_step_explicit")),
                EXPLICIT_LIMIT, "1", "one Euler step with explicit damping vs rbc (the "
                "implicit damping is the whole one-step difference)"))
    for name in ("go2", "go2.course"):
        checks.append(make_check(f"free_flight.{name}.accel", figures.get(
            f"{name}.accel_qacc", np.nan), GO2_ACCEL_LIMIT, "1",
            f"‖qacc − (P a + Ṗ v)‖ / ‖P a + Ṗ v‖, {name}"))
    course_t = []
    if walk is not None:
        feet, links = max(walk["feet"]), max(walk["links"])
        figures["go2.course.feet_m"], figures["go2.course.links_m"] = feet, links
        course_t.append((f"{walk['duration']:g}", str(len(walk["time"])), fmt(feet, 3),
                         fmt(links, 3)))
        checks.append(make_check("free_flight.go2.course.poses", max(feet, links),
                                 POSE_LIMIT["go2"], "m",
                                 "rbc forward kinematics vs MuJoCo along the course"))
    checks.append(make_check("free_flight.probes", len(rows), len(cases), "probes",
                             "probes completed", lower_bound=True))
    checks.append(make_check("free_flight.course", 0.0 if walk else 1.0, 0.0, "1",
                             "the course was lifted and checked"))
    key = (f"Go2 course states: acceleration {fmt(figures.get('go2.course.accel_qacc'), 2)} "
           f"(qacc) / {fmt(figures.get('go2.course.accel_step_0.1ms'), 2)} (one 0.1 ms "
           f"step, implicit damping; explicit "
           f"{fmt(figures.get('go2.course.accel_step_explicit_0.1ms'), 2)}; paper 1.25e-5); "
           f"feet along the course ≤ {fmt(figures.get('go2.course.feet_m'), 2)} m (paper "
           f"0.783 µm); random states: Go2 {fmt(figures.get('go2.accel_qacc'), 2)}, Cassie "
           f"{fmt(figures.get('cassie.accel_qacc'), 2)} (qacc)")
    cspan = "the whole 26 s course" if span is None else f"its first {span:g} s"
    return Outcome(
        figures=figures, key_figures=key,
        setup=("The paper probes its Go2 and Cassie models released in free flight in "
               "MuJoCo from six states along its nominal course; ours are records/go2.yaml "
               "and Cassie imported from the vendored MJCF (pelvis free), each exported by "
               "rbc, at six states sampled on the closure manifold with random speeds and "
               "efforts, and (Go2) at six states of the nominal course "
               f"(records/references/go2_course.yaml, {cspan}) with its speeds and "
               "feedforward efforts. The paper's one-step accelerations are 1.25e-5; ours "
               "with MuJoCo's default Euler integrator are ~1e-2 because MuJoCo integrates "
               "the record's joint damping (2 N·m·s/rad on 0.01 kg·m² armature) implicitly, "
               "(M + hD) v' = M v + h f, an O(hD/M) ≈ 2e-2 change of one step that halves "
               "with h; with the damping explicit (mjDSBL_EULERDAMP) the same step agrees "
               "with rbc to round-off, and MuJoCo's qacc does at every state — a setup "
               "difference (the paper does not give its integrator or damping), not a "
               "defect. Cassie's loops are MuJoCo's soft equality constraints (solref = "
               "2·h), so its qacc (≈ 2e-3) measures their softness, explicit damping or "
               "not; the paper gives no Cassie figure. Poses: rbc's forward kinematics at "
               "MuJoCo's own configuration over "
               "50 ms of free flight from each state, and at every point of the course's "
               "0.02 s grid written into the export; the paper's 0.783 µm does not say how "
               "the configuration is carried over."),
        tables=[Table("Worst over the states (normalised 2-norms; poses in m)",
                      ("robot", "states", "n", "accel (qacc)", "accel (0.1 ms step)",
                       "accel (0.05 ms step)", "accel (0.1 ms, explicit damping)",
                       "accel (0.05 ms, explicit damping)", "poses (0.1 ms flight)",
                       "poses (0.05 ms flight)"), tuple(table)),
                Table("Along the nominal Go2 course: MuJoCo's native poses vs rbc forward "
                      "kinematics", ("span [s]", "configurations", "feet [m]", "links [m]"),
                      tuple(course_t))],
        checks=checks, plots=[_plot(ctx, rows, keys, walk)],
        data={"probes": rows, "course": None if walk is None else {
            k: walk[k] for k in ("time", "feet", "links", "duration")},
            "course_times": [st[0] for st in walk["states"]] if walk else []})


def _plot(ctx, rows, keys, walk) -> str:
    plt = pyplot()
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(12, 4.2))
    x = np.arange(len(keys))
    for j, (robot, kind) in enumerate(GROUPS):
        for r in (r for r in rows if (r["robot"], r["set"]) == (robot, kind)):
            ax.semilogy(x + 0.12 * (j - 1), [max(r[k], 1e-17) for k in keys], ls="",
                        marker="o^s"[j], color=f"C{j}",
                        label=f"{robot} ({kind})" if r["index"] == 0 else None)
    ax.set_xticks(x, ["qacc", "0.1 ms", "0.05 ms", "0.1 ms expl.", "0.05 ms expl.",
                      "pose 0.1 ms", "pose 0.05 ms"], rotation=30)
    ax.set_xlabel("compared quantity and MuJoCo step [-]")
    ax.set_ylabel("normalised acceleration error [1] / pose error [m]")
    ax.set_title("Free flight in MuJoCo vs rbc, per state")
    ax.legend(fontsize=8)
    if walk is not None:
        bx.semilogy(walk["time"], np.maximum(walk["feet"], 1e-18), lw=0.8, label="feet")
        bx.semilogy(walk["time"], np.maximum(walk["links"], 1e-18), lw=0.8, label="links")
        bx.axhline(7.83e-7, color="grey", ls=":", label="paper (feet)")
        bx.legend(fontsize=8)
    bx.set_xlabel("course time [s]")
    bx.set_ylabel("largest distance, MuJoCo vs rbc FK [m]")
    bx.set_title("Along the nominal Go2 course")
    return save(fig, ctx.file("free_flight.png"))

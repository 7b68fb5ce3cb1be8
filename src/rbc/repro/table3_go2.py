"""The Go2 part of ``table3-variants``: support sets and foot-task plans under edited records
(issue 24 item 1).

Twelve variants of ``records/go2.yaml`` (:data:`GO2_VARIANTS`: the record, hip and calf
geometry edits, two trunk payloads, turned inertias, the trunk's and a calf's body frame
re-expressed — the same physics in another frame —, two record orders and a reversed
actuator order; a ``trunk`` position task on the base is added to every variant) are compiled
with ``--modes all``: ``free`` and the eleven support sets of two, three and four feet, each
with its own rank analysis (144 modes). In every support set whose independent speeds the
actuators can all drive — the four three-foot sets and the four-foot stance — a task plan is
generated with ``rbc``'s planner (:func:`rbc.tasks.plan.plan`) on the mode's model, in a
joint-space partition of the mode (the planner integrates scalar coordinates; the stored
mode partitions keep the floating base independent): a three-foot stance lifts its swing foot
by 3 cm in 0.3 s, the four-foot stance lowers the trunk by 2 cm. Along each plan five
configurations are checked (t = 0, T/4, T/2, 3T/4, T): the mode's closure residual, every
stance foot at its anchor in the world (forward kinematics of the base model, an
independent measure of the support closure), the task error, and a lift that still exists
(full rank). The two-foot sets and ``free`` leave a base direction no actuator drives (the roll
about the line through two feet; the whole base in flight): they are rank-analysed but not
planned.
"""

from __future__ import annotations

import copy

import numpy as np
import yaml

from rbc.repro import models
from rbc.repro.record_edits import (
    actuators_reversed,
    added_mass,
    edit_bodies,
    reexpress,
    shift_joint_frames,
    shuffled,
    turned_inertia,
)
from rbc.repro.report import fmt
from rbc.verify.checks import make_check

ROBOT = "go2"
HIPS = ("FL_hip_joint", "FR_hip_joint", "RL_hip_joint", "RR_hip_joint")
CALVES = ("FL_calf_joint", "FR_calf_joint", "RL_calf_joint", "RR_calf_joint")
FEET = ("FL", "FR", "RL", "RR")
JOINTS = tuple(f"{f}_{p}_joint" for f in FEET for p in ("hip", "thigh", "calf"))
#: Variants that write the same mechanism differently: their plans must be the same motion.
#: (The trunk's re-expressed frame is the same robot, but its floating root — placed at the
#: world origin in the new frame — stands tilted, so "lift the foot along world z" is another
#: motion: measured 2.4e-2 rad; it is compared through its closure and task checks only.)
SAME_PHYSICS = ("body frame: FL calf moved and turned", "record order: reversed",
                "record order: shuffled", "actuator order: reversed")
#: Same-physics plans: the same ODE integrated with the same steps, its data in another
#: order or frame — round-off through 30 RK4 steps of a 9-coordinate resolution (measured
#: ≤ 5.6e-12 rad).
PAIR_LIMIT = 1e-9
LIFT, LOWER, DURATION, DT = 0.03, 0.02, 0.3, 0.01  # [m], [m], [s], [s]
SAMPLES = 5
#: Stance feet: the planner closes every configuration to the corrector's tolerance (1e-12
#: on ρ); a foot's world position follows with the lever arm of the leg (< 1 m): 1e-9 m is
#: three decades above what the closure leaves.
GAP_LIMIT = 1e-9
#: Task error of the resolved motion: the task law's feedback (K_x = 2/s) on an RK4 step of
#: 10 ms keeps it at the integration error, ~1e-8 m measured; 1e-6 m leaves margin.
TASK_LIMIT = 1e-6
#: The end of the plan reaches the waypoint within the same margin.
REACH_LIMIT = 1e-6


def _with_trunk_task(doc: dict) -> dict:
    out = copy.deepcopy(doc)
    out.setdefault("tasks", []).append({"name": "trunk", "body": "base", "kind": "position"})
    return out


def _thighs(factor: float, rpy):
    return lambda b: turned_inertia(b, b["name"], factor, rpy) if b["name"].endswith(
        "_thigh") else None


def variants() -> dict:
    """name → edit of the Go2 record document (module docstring)."""
    return {
        "record": lambda d: copy.deepcopy(d),
        "geometry: hip mounts ±2 mm": lambda d: shift_joint_frames(d, HIPS, 3, 2e-3),
        "geometry: knees ±3 mm": lambda d: shift_joint_frames(d, CALVES, 5, 3e-3),
        "payload: trunk +1.5 kg": lambda d: edit_bodies(d, added_mass("base", 1.5)),
        "payload: trunk +3 kg, COM moved": lambda d: edit_bodies(
            d, added_mass("base", 3.0, [0.05, 0.01, -0.01])),
        "inertia: trunk ×1.2, axes turned": lambda d: edit_bodies(
            d, lambda b: turned_inertia(b, "base", 1.2, [0.1, -0.05, 0.2])),
        "inertia: thighs ×0.9, axes turned": lambda d: edit_bodies(
            d, _thighs(0.9, [0.0, 0.2, -0.1])),
        "body frame: trunk moved and turned": lambda d: reexpress(
            d, "base", [0.03, 0.01, -0.02], [0.1, -0.2, 0.15]),
        "body frame: FL calf moved and turned": lambda d: reexpress(
            d, "FL_calf", [0.0, 0.01, -0.05], [0.2, 0.1, -0.1]),
        "record order: reversed": lambda d: shuffled(d, None),
        "record order: shuffled": lambda d: shuffled(d, 17),
        "actuator order: reversed": actuators_reversed,
    }


def _plan_of(supports: tuple[str, ...]) -> tuple[str, np.ndarray] | None:
    """The task spec and its displacement for a support set, or None (not planned)."""
    if len(supports) == 4:
        return "trunk:position", np.array([0.0, 0.0, -LOWER])
    if len(supports) == 3:
        swing = next(f for f in FEET if f not in supports)
        return f"{swing}_foot:position", np.array([0.0, 0.0, LIFT])
    return None


def evaluate(case: tuple) -> dict:
    """One variant: ``case = (variant, record text, seed)``; every mode compiled, the
    actuated support sets planned and checked (module docstring)."""
    from rbc.model.dynamics import DynamicsModel
    from rbc.model.kinematics import residual
    from rbc.model.modes import (
        _tiers,
        anchors_se3,
        extend_configuration,
        mode_model,
        reference_q,
        support_poses,
    )
    from rbc.model.partition import lift, partition_at
    from rbc.model.solve import coordinate_value
    from rbc.tasks.plan import plan
    from rbc.tasks.request import TaskRequest, build

    variant, text, seed = case
    kin = models.compiled_text(f"go2_v{seed}", text, all_modes=True)
    out = {"variant": variant, "modes": len(kin.modes), "plans": 0, "planned": 0,
           "configurations": 0, "passed": 0, "gap": 0.0, "residual": 0.0, "task": 0.0,
           "reach": 0.0, "failures": [], "angles": {}}
    q_base = reference_q(kin)
    for name, mode in sorted(kin.modes.items()):
        job = _plan_of(mode.supports)
        if job is None:
            continue
        out["planned"] += 1
        spec, step = job
        mm = mode_model(kin, mode.supports, anchors_se3(mode.anchors), root_inputs=False)
        q0 = extend_configuration(kin, mm, q_base)
        preferred, _ = _tiers(mm)
        try:
            part = partition_at(mm, q0, name=f"{name}.joints", preferred=preferred, last=())
            chart, _, _ = build(mm, q0, TaskRequest((spec,), (), DURATION))
            target = chart.value(mm, q0) + step
            _, law, path = build(mm, q0, TaskRequest((spec,), (tuple(target),), DURATION))
            res = plan(DynamicsModel.build(mm), part, law, path, q0, dt=DT)
        except Exception as err:  # noqa: BLE001 - a failed plan is a reported row, not a crash
            out["failures"].append(f"{name}: {type(err).__name__}: {err}")
            continue
        out["plans"] += 1
        out["reach"] = max(out["reach"], float(np.abs(res.value[-1] - target).max()))
        anchors = anchors_se3(mode.anchors)
        joints = [mm.v_names.index(j) for j in JOINTS]
        out["angles"][name] = []
        for k in np.linspace(0, len(res.time) - 1, SAMPLES).round().astype(int):
            q = res.q[k]
            out["angles"][name].append([coordinate_value(mm, q, j) for j in joints])
            rho = float(np.abs(residual(mm, q)).max())
            poses = support_poses(kin, q[: kin.nq], mode.supports)
            gap = max(float(np.linalg.norm(T.translation - A.translation))
                      for T, A in zip(poses, anchors, strict=True))
            err = float(np.abs(res.e[k]).max())
            try:
                E = lift(mm, part, q).E
                full = bool(np.all(np.isfinite(E)))
            except Exception:  # noqa: BLE001 - a singular lift fails this check
                full = False
            out["configurations"] += 1
            out["passed"] += int(full and gap <= GAP_LIMIT and err <= TASK_LIMIT
                                 and rho <= GAP_LIMIT)
            out["gap"] = max(out["gap"], gap)
            out["residual"] = max(out["residual"], rho)
            out["task"] = max(out["task"], err)
    return out


def sweep(ctx) -> tuple[list[dict], int]:
    """The Go2 rows and the number of variants run (quick: the record only)."""
    doc = _with_trunk_task(yaml.safe_load(models.record_path(ROBOT).read_text(encoding="utf-8")))
    edits = variants()
    names = ("record",) if ctx.quick else tuple(edits)
    cases = [(v, yaml.safe_dump(edits[v](doc), sort_keys=False), ctx.seed + 2000 + i)
             for i, v in enumerate(names)]
    return [r for r in ctx.bag(evaluate, cases, "go2") if r is not None], len(cases)


def checks(rows: list[dict], n: int) -> list:
    """The Go2 checks: every mode compiled, every actuated set planned, every sampled
    configuration passing, the stance gaps and the plans' reach."""
    total = {k: sum(r[k] for r in rows) for k in ("modes", "plans", "planned", "passed",
                                                  "configurations")}
    worst = {k: max((r[k] for r in rows), default=np.nan) for k in ("gap", "reach")}
    return [make_check("table3.go2.modes", total["modes"], 12 * n, "modes",
                       "support modes compiled (free + 11 support sets per variant)",
                       lower_bound=True),
            make_check("table3.go2.plans", total["plans"], 5 * n, "plans",
                       "task plans generated in the actuated support sets",
                       lower_bound=True),
            make_check("table3.go2.configurations", total["passed"], SAMPLES * 5 * n,
                       "configurations", "sampled plan configurations passing every check",
                       lower_bound=True),
            make_check("table3.go2.stance_gap", worst["gap"], GAP_LIMIT, "m",
                       "largest stance-foot distance from its anchor along the plans"),
            make_check("table3.go2.reach", worst["reach"], REACH_LIMIT, "m",
                       "plan end vs its waypoint"),
            make_check("table3.go2.same_physics", same_physics(rows), PAIR_LIMIT, "rad",
                       "re-expressed and re-ordered records vs the record: joint angles "
                       "along the same plans")]


def same_physics(rows: list[dict]) -> float:
    """Largest joint-angle difference [rad] between the record's plans and those of the
    :data:`SAME_PHYSICS` variants at the sampled configurations (NaN without the record)."""
    by = {r["variant"]: r for r in rows}
    if "record" not in by:
        return float("nan")
    ref, worst = by["record"]["angles"], 0.0
    for v in (v for v in SAME_PHYSICS if v in by):
        for mode, angles in by[v]["angles"].items():
            if mode in ref:
                worst = max(worst, float(np.abs(np.subtract(angles, ref[mode])).max()))
    return worst


def table_rows(rows: list[dict]) -> tuple:
    return tuple((r["variant"], str(r["modes"]), f"{r['plans']}/{r['planned']}",
                  f"{r['passed']}/{r['configurations']}", fmt(r["gap"], 2),
                  fmt(r["residual"], 2), fmt(r["task"], 2), fmt(r["reach"], 2))
                 for r in rows)


TABLE_HEADER = ("variant", "modes compiled", "plans", "configurations passed",
                "stance gap [m]", "closure residual", "task error [m]", "reach [m]")

"""The record edits of the representation sweeps (rbc.repro.record_edits): a re-expressed body
frame is the same physics — every frame on the body lands where it was."""

from __future__ import annotations

import numpy as np
import yaml

from rbc.ir import spatial as sp
from rbc.model.kinematics import frame_jacobian
from rbc.model.modes import reference_q, support_poses
from rbc.repro import models
from rbc.repro.record_edits import frame_pose, reexpress
from tests.conftest import RECORDS


def test_reexpressed_calf_keeps_its_support_task_and_joints_in_place():
    """Go2's FL calf written in a moved and turned frame: at the same joint values the foot
    support and task sit at the same world poses (to round-off of a few SE(3) products on
    metre-scale links), and its geometry is rewritten in the new frame."""
    doc = yaml.safe_load((RECORDS / "go2.yaml").read_text(encoding="utf-8"))
    moved = reexpress(doc, "FL_calf", [0.0, 0.01, -0.05], [0.2, 0.1, -0.1])
    a = models.compiled_text("edits_a", yaml.safe_dump(doc, sort_keys=False))
    b = models.compiled_text("edits_b", yaml.safe_dump(moved, sort_keys=False))
    qa, qb = reference_q(a), reference_q(b)
    assert np.array_equal(qa, qb)  # joint initial values are unchanged by the edit
    for Ta, Tb in zip(support_poses(a, qa, ("FL", "FR")), support_poses(b, qb, ("FL", "FR")),
                      strict=True):
        assert np.abs(Ta.homogeneous - Tb.homogeneous).max() <= 1e-14
    task = next(t for t in b.record.tasks if t.name == "FL_foot")
    body = b.record.body_index()["FL_calf"]
    Tb = frame_jacobian(b, qb, body, sp.se3_from_pose(task.pose))[0]
    ta = next(t for t in a.record.tasks if t.name == "FL_foot")
    Ta = frame_jacobian(a, qa, a.record.body_index()["FL_calf"], sp.se3_from_pose(ta.pose))[0]
    assert np.abs(Ta.translation - Tb.translation).max() <= 1e-14
    calf = next(x for x in moved["bodies"] if x["name"] == "FL_calf")
    geo = calf.get("geometry", [])
    assert all("xyz" in g or "quat" in g for g in geo)  # geometry moved with the frame
    assert frame_pose(None).isIdentity()

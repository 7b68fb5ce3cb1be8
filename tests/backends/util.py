"""Helpers of the importer tests: run the CLI, find external models, walk record kinematics."""

from __future__ import annotations

from importlib import metadata
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest
import yaml

from rbc.cli.main import main
from rbc.ir import spatial
from rbc.ir.summary import summarize


def run_import(capsys, *argv: str) -> tuple[int, str, str]:
    """``rbc import ARGV`` through ``rbc.cli.main.main``; (status, stdout, stderr)."""
    code = main(["import", *argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def import_and_compile(capsys, tmp_path: Path, kind: str, *args: str) -> tuple[dict, dict]:
    """Import to ``tmp_path/rec.yaml``, compile it, return (record dict, bundle summary)."""
    rec = tmp_path / "rec.yaml"
    code, _, err = run_import(capsys, kind, *args, "-o", str(rec))
    assert code == 0, err
    h5 = tmp_path / "rec.h5"
    code = main(["compile", str(rec), "-o", str(h5)])
    assert code == 0, capsys.readouterr().err
    capsys.readouterr()
    return yaml.safe_load(rec.read_text()), summarize(h5)


def erd_urdf(name: str) -> Path:
    """Path of a URDF shipped by the example-robot-data package (skip if absent)."""
    try:
        dist = metadata.distribution("example-robot-data")
    except metadata.PackageNotFoundError:
        pytest.skip("example-robot-data is not installed (pip install example-robot-data)")
    for f in dist.files or ():
        if str(f).endswith(f"/urdf/{name}"):
            return Path(dist.locate_file(f))
    pytest.skip(f"{name} not shipped by this example-robot-data")


def pose(entry: dict | None) -> pin.SE3:
    """``pin.SE3`` of a record pose dict (xyz, quat wxyz; identity when absent)."""
    entry = entry or {}
    return pin.SE3(spatial.rotation_from_quat(np.array(entry.get("quat", [1.0, 0, 0, 0]))),
                   np.array(entry.get("xyz", [0.0, 0, 0]), dtype=float))


def motion(joint: dict, q) -> pin.SE3:
    """``Q_j(q)`` of a record joint (fixed, revolute, prismatic, spherical)."""
    kind = joint["type"]
    if kind == "fixed":
        return pin.SE3.Identity()
    if kind == "spherical":
        return pin.SE3(spatial.rotation_from_quat(np.array(q)), np.zeros(3))
    axis = np.array(joint["axis"], dtype=float)
    if kind == "revolute":
        return pin.SE3(spatial.exp3(axis * q), np.zeros(3))
    return pin.SE3(np.eye(3), axis * q)


def tree_poses(record: dict, q: dict, roots: dict[str, pin.SE3], skip: set[str]) -> dict:
    """World poses of all bodies from root poses, walking joints not in ``skip``.

    ``X_j = A_j · Q_j(q_j) · B_j⁻¹ = T_parent_child`` (docs/conventions.md).
    """
    poses = dict(roots)
    pending = [j for j in record["joints"] if j["name"] not in skip]
    while pending:
        rest = []
        for j in pending:
            if j["parent"] in poses:
                X = pose(j.get("parent_frame")) * motion(j, q.get(j["name"], 0.0)) \
                    * pose(j.get("child_frame")).inverse()
                poses[j["child"]] = poses[j["parent"]] * X
            else:
                rest.append(j)
        assert len(rest) < len(pending), "joints do not form a tree from the roots"
        pending = rest
    return poses


def dense_efc_jacobian(m, d) -> np.ndarray:
    """MuJoCo's constraint Jacobian ``efc_J`` (nefc, nv) as a dense array (it may be sparse)."""
    import mujoco

    if d.efc_J.size == d.nefc * m.nv and not mujoco.mj_isSparse(m):
        return np.array(d.efc_J[: d.nefc * m.nv]).reshape(d.nefc, m.nv)
    J = np.zeros((d.nefc, m.nv))
    for r in range(d.nefc):
        a, n = d.efc_J_rowadr[r], d.efc_J_rownnz[r]
        J[r, d.efc_J_colind[a: a + n]] = d.efc_J[a: a + n]
    return J

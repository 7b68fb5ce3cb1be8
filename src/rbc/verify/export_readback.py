"""Readback checks of the exports: ``export.mjcf.readback`` and ``export.pinocchio.readback``.

The MJCF file is loaded with MuJoCo (``mujoco.MjModel.from_xml_path``) and compared with
the bundle: body masses, COMs and inertia tensors (MuJoCo stores principal moments and
``body_iquat``; the tensor is rebuilt as ``R diag(I) Rᵀ``), joint axes, armature, the
closure gap at the ``assembled`` keyframe (``mj_forward``, then ``max |efc_pos|`` over the
equality rows) and MuJoCo's tree mass matrix (``mj_fullM``) against ``M_T``
(:func:`rbc.model.dynamics.tree_terms`) through the velocity map of
:func:`rbc.backends.mjcf_export.velocity_block` (``M_T = Pᵀ M_mj P``).

The Pinocchio URDF is loaded with ``pin.buildModelFromUrdf`` and its mass matrix and
gravity effort at the neutral configuration are compared with the tree model of
:func:`rbc.model.tree.build_tree` (without rotor inertia: URDF has no armature); the
constraints are checked by their closure gap at the assembled configuration.

Each function returns :class:`rbc.verify.checks.Check` records (the verify engineer hooks
:func:`readback_checks` into ``rbc verify``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pinocchio as pin

from rbc.errors import UsageError
from rbc.ir import spatial as sp
from rbc.model.compiled import CompiledModel, Partition
from rbc.model.tree import build_tree, inertia_tensor, joint_space_inertia, tree_joint
from rbc.verify.checks import Check, make_check

#: Readback of masses, COMs, inertias, axes and armature: the XML holds repr-precision
#: floats, so the only error is MuJoCo's eigen-decomposition of fullinertia and the
#: normalisation of axes/quaternions (a few ulps of the largest entry).
READBACK_RTOL = 1e-12
#: Closure gap at the keyframe [m, rad]: anchors are exact sites, so only the forward
#: kinematics round-off along the loop remains.
GAP_LIMIT = 1e-9
#: mj_fullM vs M_T relative to max|M_T|: both are sums of the same inertias along the tree
#: (different algorithms, float64 round-off).
MASS_MATRIX_RTOL = 1e-10


def _rel(a: np.ndarray, b: np.ndarray) -> float:
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.size == 0:
        return 0.0
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-300))


def _default_partition(model: CompiledModel) -> Partition:
    return model.partitions.get("default") or next(iter(model.partitions.values()))


def mjcf_readback(model: CompiledModel, mjcf_path: str | Path,
                  partition: Partition | None = None) -> list[Check]:
    """Checks ``export.mjcf.{inertia,axes,armature,closure_gap,mass_matrix}`` of an MJCF file.

    Raises:
        ValueError: MuJoCo cannot load the file (its message).
    """
    import mujoco

    from rbc.backends.mjcf_export import mj_joints, mjcf_body, velocity_block
    from rbc.model.dynamics import DynamicsData, DynamicsModel, tree_terms

    part = partition or _default_partition(model)
    m = mujoco.MjModel.from_xml_path(str(mjcf_path))
    d = mujoco.MjData(m)
    rec = model.record
    # ---- inertia: mass, COM, tensor per body (relative to the largest of each kind)
    errs = {"mass": 0.0, "com": 0.0, "inertia": 0.0}
    worst = ""
    for b in rec.bodies:
        i = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, mjcf_body(b.name))
        R = sp.rotation_from_quat(m.body_iquat[i])
        tensor = R @ np.diag(m.body_inertia[i]) @ R.T
        e = {"mass": _rel([m.body_mass[i]], [max(b.mass, 1e-300)]) if b.mass else
             abs(m.body_mass[i]),
             "com": _rel(m.body_ipos[i], b.com) if b.mass else 0.0,
             "inertia": _rel(tensor, inertia_tensor(b.inertia)) if b.mass else 0.0}
        for key, val in e.items():
            if val > errs[key]:
                errs[key], worst = val, f"{key} of {b.name}"
    inertia_err = max(errs.values())
    # ---- joints: axes and armature against the tree model
    tm = build_tree(model)
    axis_err, arm_err = 0.0, 0.0
    rows: list[int] = []  # MuJoCo dof per rbc tree v-index
    P = np.zeros((m.nv, model.nv_tree))
    q_ref = np.asarray(part.q_ref, dtype=float)
    for k in model.tree_edges:
        kind = model.kinds[k]
        if not kind.nv:
            continue
        j = tree_joint(model, k)
        B = sp.se3_from_pose(j.child_frame)
        mjs = mj_joints(model, k, j)
        dof0 = int(m.jnt_dofadr[mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, mjs[0].name)])
        for mj in mjs:
            jid = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, mj.name)
            if mj.axis is not None:
                d_axis = m.jnt_axis[jid] - B.rotation @ mj.axis
                axis_err = max(axis_err, float(np.abs(d_axis).max()))
        vs = model.v_slice(k)
        P[dof0: dof0 + kind.nv, vs] = velocity_block(j, q_ref[model.q_slice(k)], B)
        pin_idx = tm.model.joints[int(tm.edge_joint[k])].idx_v
        arm = tm.model.armature[pin_idx: pin_idx + kind.nv]
        arm_err = max(arm_err, _rel(m.dof_armature[dof0: dof0 + kind.nv], arm)
                      if np.any(arm) else float(np.abs(m.dof_armature[dof0: dof0 + kind.nv]).max()))
        rows.extend(range(dof0, dof0 + kind.nv))
    # ---- keyframe: closure gap and the mass matrix
    key = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_KEY, "assembled")
    mujoco.mj_resetDataKeyframe(m, d, key)
    mujoco.mj_forward(m, d)
    eq = d.efc_type[: d.nefc] == mujoco.mjtConstraint.mjCNSTR_EQUALITY
    gap = float(np.abs(d.efc_pos[: d.nefc][eq]).max()) if np.any(eq) else 0.0
    M_mj = np.zeros((m.nv, m.nv))
    mujoco.mj_fullM(m, d, M_mj)  # MuJoCo 4 signature (m, d, dst)
    dm = DynamicsModel.build(model)
    MT = tree_terms(dm, DynamicsData.of(dm), q_ref, np.zeros(model.nv)).M
    M_err = _rel(P.T @ M_mj @ P, MT)
    return [
        make_check("export.mjcf.readback.inertia", inertia_err, READBACK_RTOL, "1",
                   f"max relative error of body mass/COM/inertia (worst: {worst or '—'})"),
        make_check("export.mjcf.readback.axes", axis_err, READBACK_RTOL, "1",
                   "max |jnt_axis − R_B·a| over hinge/slide joints"),
        make_check("export.mjcf.readback.armature", arm_err, READBACK_RTOL, "1",
                   "dof_armature vs joint armature + I_m·N² of the tree model"),
        make_check("export.mjcf.readback.closure_gap", gap, GAP_LIMIT, "m|rad",
                   "max |efc_pos| of the equality rows at keyframe 'assembled'"),
        make_check("export.mjcf.readback.mass_matrix", M_err, MASS_MATRIX_RTOL, "1",
                   "max |Pᵀ·mj_fullM·P − M_T| / max|M_T| at the keyframe"),
    ]


def pinocchio_readback(model: CompiledModel, pinocchio_dir: str | Path,
                       partition: Partition | None = None) -> list[Check]:
    """Checks ``export.pinocchio.{urdf,closure_gap}`` of a ``--pinocchio`` directory.

    The URDF model's M and gravity effort at the neutral configuration are compared with
    ``build_tree`` without armature or rotor inertia (URDF has no field for them) after
    matching coordinates by joint name (chains of a
    universal/cylindrical/spherical joint are named ``<joint>.<n>``; at the neutral
    configuration the spherical x-y-z chain has the same velocity basis as ω).
    """
    import yaml

    from rbc.backends.pinocchio import pinocchio_model

    part = partition or _default_partition(model)
    d = Path(pinocchio_dir)
    um = pin.buildModelFromUrdf(str(d / f"{model.record.name}.urdf"))
    um.gravity = pin.Motion(np.array(model.record.gravity, dtype=float), np.zeros(3))
    tm = build_tree(model, rotor=False)
    tm.model.armature[:] = 0.0  # URDF carries no armature; compare the rigid-body M only
    perm = []
    for k in model.tree_edges:
        if model.kinds[k].nv == 0:
            continue
        n = model.edge_names[k]
        if um.existJointName(n):
            idx = um.joints[um.getJointId(n)].idx_v
            # Pinocchio's velocity order of this joint for each rbc coordinate (a free
            # joint is [v; ω] in Pinocchio, [ω; v] in rbc)
            vp = model.kinds[k]._v_pin
            order = np.argsort(vp) if vp else np.arange(model.kinds[k].nv)
            perm += [idx + int(o) for o in order]
        else:
            perm += [um.joints[um.getJointId(f"{n}.{i}")].idx_v for i in range(model.kinds[k].nv)]
    q0u, q0t = pin.neutral(um), pin.neutral(tm.model)
    Mu = joint_space_inertia(um, um.createData(), q0u)
    Mt = tm.matrix_rbc(joint_space_inertia(tm.model, tm.model.createData(), q0t))
    gu = pin.computeGeneralizedGravity(um, um.createData(), q0u)[perm]
    gt = tm.v_rbc(pin.computeGeneralizedGravity(tm.model, tm.model.createData(), q0t))
    urdf_err = max(_rel(Mu[np.ix_(perm, perm)], Mt), _rel(gu, gt) if np.any(gt) else 0.0)
    mass_err = _rel([sum(i.mass for i in um.inertias)], [sum(b.mass for b in model.record.bodies)])
    # constraints: the gap of every constrained frame pair at the assembled configuration
    pmod = pinocchio_model(model, part)
    doc = yaml.safe_load((d / "constraints.yaml").read_text())
    data = tm.model.createData()
    pin.forwardKinematics(pmod.tree.model, data, pmod.tree.q_pin(part.q_ref[: model.nq_tree]))
    gap = 0.0
    for s in pmod.specs:
        T1 = data.oMi[s.joint1] * s.placement1
        T2 = data.oMi[s.joint2] * s.placement2
        err = sp.log6(T1.inverse() * T2)
        gap = max(gap, float(np.abs(err[3:] if s.type == "CONTACT_3D" else err).max()))
    names_ok = [c["name"] for c in doc["constraints"]] == [s.name for s in pmod.specs]
    return [
        make_check("export.pinocchio.readback.urdf", max(urdf_err, mass_err), READBACK_RTOL,
                   "1", "URDF model vs build_tree: M and gravity effort at neutral, total mass"),
        make_check("export.pinocchio.readback.closure_gap", gap if names_ok else np.nan,
                   GAP_LIMIT, "m|rad",
                   "constraint frame pairs at q_ref" + ("" if names_ok else
                                                         "; constraints.yaml does not match")),
    ]


def readback_checks(bundle_path: str | Path, mjcf_path: str | Path | None = None,
                    pinocchio_dir: str | Path | None = None) -> list[Check]:
    """All readback checks of the given exports of a bundle (empty if none is given).

    A file MuJoCo or Pinocchio cannot load, or one that does not match the bundle's model
    (other joints, other bodies), is a failed check named ``export.mjcf.readback`` /
    ``export.pinocchio.readback`` whose detail carries the loader's message — never a
    traceback.

    Raises:
        UsageError: the MJCF file or the Pinocchio directory (or its URDF) does not exist.
    """
    model = CompiledModel.from_bundle(bundle_path)
    check_inputs(model, mjcf_path, pinocchio_dir)
    out: list[Check] = []
    if mjcf_path is not None:
        out += _guarded("export.mjcf.readback", mjcf_path, mjcf_readback, model)
    if pinocchio_dir is not None:
        out += _guarded("export.pinocchio.readback", pinocchio_dir, pinocchio_readback, model)
    return out


def check_inputs(model: CompiledModel, mjcf_path: str | Path | None,
                 pinocchio_dir: str | Path | None) -> None:
    """Raise :class:`UsageError` (exit 2) when a named export does not exist (called before
    any check runs)."""
    if mjcf_path is not None and not Path(mjcf_path).is_file():
        raise UsageError(f"--mjcf {mjcf_path}: no such file")
    if pinocchio_dir is not None:
        urdf = Path(pinocchio_dir) / f"{model.record.name}.urdf"
        if not Path(pinocchio_dir).is_dir() or not urdf.is_file():
            raise UsageError(f"--pinocchio {pinocchio_dir}: expected a directory written by "
                             f"`rbc compile --pinocchio` holding {urdf.name}")


def _guarded(name: str, path: str | Path, readback, model: CompiledModel) -> list[Check]:
    """``readback(model, path)``, or one failed check ``name`` when the export cannot be
    loaded or compared (the files are untrusted input: any loader error is a finding)."""
    try:
        return readback(model, path)
    except Exception as err:  # noqa: BLE001 — MuJoCo/Pinocchio/lxml raise many types
        return [Check(name, float("nan"), 0.0, "1", False,
                      f"cannot read back {path} against {model.record.name}: "
                      f"{type(err).__name__}: {err}")]

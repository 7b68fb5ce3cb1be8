"""Readback checks of the exports: ``export.mjcf.readback`` and ``export.pinocchio.readback``.

The MJCF file is read as XML and compiled by MuJoCo from its file-free copy
(:func:`rbc.backends.mjcf_import.file_free_copy`: no path written in it is opened; a load
failure is the failed check ``load`` with MuJoCo's message, a file of another model fails
``structure``; a file that is not a regular file or is over its size limit exits 2) and
compared with the bundle: body masses, COMs and inertia tensors against what the export
writes (MuJoCo stores principal moments and ``body_iquat``; the tensor is rebuilt as
``R diag(I) Rᵀ``), joint anchors and axes in their MuJoCo bodies, armature, the closure gap
at the ``assembled`` keyframe (``mj_forward``, then ``max |efc_pos|`` over the equality rows),
MuJoCo's mass matrix (``mj_fullM``) against ``M_T`` (:func:`rbc.model.dynamics.tree_terms`,
with the export's inertia floor) through the velocity map of
:func:`rbc.backends.mjcf_export.velocity_block` (``M_T = Pᵀ M_mj P``; with split-body cuts the
reduced inertias ``Eᵀ Pᵀ M_mj P E`` and ``E_Tᵀ M_T E_T``), the floor's effect on M_T
(``added_inertia``), and the world pose of every body at random tree configurations against
Pinocchio (``kinematics``: merged massless bodies change the joint frames).

The Pinocchio URDF is read as XML and built with ``pin.buildModelFromXML``; its mass matrix and
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
from rbc.model.tree import build_tree, inertia_tensor, joint_space_inertia
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
#: The inertia floor's effect on M_T: the floor is 1e-9 of the total mass (×L²), so on any
#: model whose own inertia is not itself at the floor the effect is ≲ 1e-8; 1e-6 flags a
#: model the export had to change visibly (its dynamics in MuJoCo then differ).
ADDED_INERTIA_LIMIT = 1e-6
#: Body poses MuJoCo vs Pinocchio at random configurations: two forward-kinematics
#: algorithms over the same repr-precision frames (round-off over the tree depth).
KINEMATICS_RTOL = 1e-10


def _rel(a: np.ndarray, b: np.ndarray) -> float:
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.size == 0:
        return 0.0
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-300))


def _default_partition(model: CompiledModel) -> Partition:
    return model.partitions.get("default") or next(iter(model.partitions.values()))


def mjcf_readback(model: CompiledModel, mjcf_path: str | Path,
                  partition: Partition | None = None) -> list[Check]:
    """Checks ``export.mjcf.readback.*`` of an MJCF file (module docstring).

    The expected names, merged bodies, inertia floor and split shares come from a fresh
    :func:`rbc.backends.mjcf_export.export_mjcf` of the bundle (pure); the physics is
    compared with the bundle's own tree model. A file MuJoCo cannot load (malformed XML, a
    model it refuses) fails ``export.mjcf.readback.load`` with MuJoCo's message; a file that
    loads but is not this bundle's export fails ``export.mjcf.readback.structure`` naming
    what is missing; the other checks are then not evaluated (NaN, failed).
    """
    from lxml import etree

    from rbc.backends.mjcf_export import export_mjcf
    from rbc.backends.mjcf_import import file_free_copy
    from rbc.backends.mujoco_log import mujoco
    from rbc.backends.record_writer import ModelImportError, read_xml
    from rbc.safeio import check_regular

    part = partition or _default_partition(model)
    exp = export_mjcf(model, part)
    # not a regular file, over the size limit: InputError (exit 2, naming the file)
    check_regular(mjcf_path, "model")
    try:  # malformed XML (ModelImportError) and a model MuJoCo refuses (ValueError) alike
        text = etree.tostring(file_free_copy(read_xml(mjcf_path, "mujoco")), encoding="unicode")
        m = mujoco.MjModel.from_xml_string(text)
    except (ModelImportError, ValueError) as err:
        return [make_check("export.mjcf.readback.load", np.nan, 0.0, "1",
                           f"MuJoCo cannot load {mjcf_path}: {' '.join(str(err).split())}"),
                *_not_evaluated("the file does not load")]
    missing = _missing_names(m, exp)
    if missing:
        return [make_check("export.mjcf.readback.load", 0.0, 0.0, "1", "MuJoCo loads it"),
                make_check("export.mjcf.readback.structure", float(len(missing)), 0.0, "1",
                           f"not the export of this bundle: missing {', '.join(missing[:8])}"
                           + (" …" if len(missing) > 8 else "")),
                *_not_evaluated("the file is not this bundle's export")[1:]]
    d = mujoco.MjData(m)
    checks = [make_check("export.mjcf.readback.load", 0.0, 0.0, "1",
                         f"MuJoCo loads it ({m.nbody - 1} bodies, {m.njnt} joints, "
                         f"{len(exp.merged)} massless bodies merged)"),
              make_check("export.mjcf.readback.structure", 0.0, 0.0, "1",
                         "every body, joint and equality of the export is present")]
    checks.append(_inertia_check(m, exp))
    checks += _joint_checks(model, m, exp)
    checks.append(_gap_check(m, d))
    checks += _mass_checks(model, part, m, d, exp)
    checks.append(_kinematics_check(model, part, m, d, exp))
    return checks


def _not_evaluated(why: str) -> list[Check]:
    """Failed placeholders (NaN) for the checks after ``load``, with their limits."""
    specs = (("structure", 0.0, "1"), ("inertia", READBACK_RTOL, "1"),
             ("axes", READBACK_RTOL, "1"), ("armature", READBACK_RTOL, "1"),
             ("closure_gap", GAP_LIMIT, "m|rad"), ("mass_matrix", MASS_MATRIX_RTOL, "1"),
             ("added_inertia", ADDED_INERTIA_LIMIT, "1"), ("kinematics", KINEMATICS_RTOL, "1"))
    return [Check(f"export.mjcf.readback.{n}", float("nan"), lim, unit, False,
                  f"not evaluated: {why}") for n, lim, unit in specs]


def _missing_names(m, exp) -> list[str]:
    from rbc.backends.mujoco_log import mujoco

    want = [("body", n) for n in (*exp.body_names.values(), *exp.split.values())]
    want += [("joint", mj.name) for mj in exp.order]
    obj = {"body": mujoco.mjtObj.mjOBJ_BODY, "joint": mujoco.mjtObj.mjOBJ_JOINT}
    out = [f"{kind} '{n}'" for kind, n in want if mujoco.mj_name2id(m, obj[kind], n) < 0]
    if mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_KEY, "assembled") < 0:
        out.append("keyframe 'assembled'")
    return out


def _inertia_check(m, exp) -> Check:
    """Mass, COM and tensor of every MuJoCo body against what the export wrote for it."""
    from rbc.backends.mujoco_log import mujoco

    errs = {"mass": 0.0, "com": 0.0, "inertia": 0.0}
    worst = ""
    for name, ref in exp.inertials.items():
        i = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, name)
        R = sp.rotation_from_quat(m.body_iquat[i])
        tensor = R @ np.diag(m.body_inertia[i]) @ R.T
        mass = float(ref.mass)
        scale = max(float(np.abs(ref.inertia).max()), 1e-300)
        e = {"mass": abs(m.body_mass[i] - mass) / max(mass, 1e-300) if mass else
             abs(m.body_mass[i]),
             "com": _rel(m.body_ipos[i], ref.lever) if mass else 0.0,
             "inertia": float(np.abs(tensor - ref.inertia).max()) / scale
             if np.any(ref.inertia) else float(np.abs(tensor).max())}
        for key, val in e.items():
            if val > errs[key]:
                errs[key], worst = val, f"{key} of {name}"
    return make_check("export.mjcf.readback.inertia", max(errs.values()), READBACK_RTOL, "1",
                      f"max relative error of body mass/COM/inertia vs the export (worst: "
                      f"{worst or '—'})")


def _joint_checks(model: CompiledModel, m, exp) -> list[Check]:
    """Joint anchors and axes in their MuJoCo body, and armature against the tree model (a
    gimbal ball replaces plain revolutes: armature 0)."""
    from rbc.backends.mujoco_log import mujoco

    tm = build_tree(model)
    geo_err, arm_err = 0.0, 0.0
    for mj in exp.tree_joints:
        jid = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, mj.name)
        if mj.axis is not None:
            geo_err = max(geo_err, float(np.abs(m.jnt_axis[jid] - mj.frame.rotation @ mj.axis)
                                         .max()))
        if mj.type != "free":
            geo_err = max(geo_err, float(np.abs(m.jnt_pos[jid] - mj.frame.translation).max())
                          / max(exp.length, 1e-300))
        dof = int(m.jnt_dofadr[jid])
        if mj.group:
            arm_err = max(arm_err, float(np.abs(m.dof_armature[dof: dof + 3]).max()))
            continue
        pin_idx = tm.model.joints[int(tm.edge_joint[mj.edge])].idx_v
        n = 3 if mj.type == "ball" else 6 if mj.type == "free" else 1
        k = 0 if mj.coord < 0 else mj.coord
        arm = tm.model.armature[pin_idx + k: pin_idx + k + n]
        got = m.dof_armature[dof: dof + n]
        arm_err = max(arm_err, _rel(got, arm) if np.any(arm) else float(np.abs(got).max()))
    return [make_check("export.mjcf.readback.axes", geo_err, READBACK_RTOL, "1",
                       "max |jnt_axis − R_C·a| and |jnt_pos − p_C|/L over the joints"),
            make_check("export.mjcf.readback.armature", arm_err, READBACK_RTOL, "1",
                       "dof_armature vs joint armature + I_m·N² of the tree model")]


def _gap_check(m, d) -> Check:
    from rbc.backends.mujoco_log import mujoco

    key = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_KEY, "assembled")
    mujoco.mj_resetDataKeyframe(m, d, key)
    mujoco.mj_forward(m, d)
    eq = d.efc_type[: d.nefc] == mujoco.mjtConstraint.mjCNSTR_EQUALITY
    gap = float(np.abs(d.efc_pos[: d.nefc][eq]).max()) if np.any(eq) else 0.0
    return make_check("export.mjcf.readback.closure_gap", gap, GAP_LIMIT, "m|rad",
                      "max |efc_pos| of the equality rows at keyframe 'assembled'")


def with_added_inertia(model: CompiledModel, added: dict[int, pin.Inertia]) -> CompiledModel:
    """The model with ``added`` (per body, body frame) added to its bodies' inertias."""
    from dataclasses import replace

    from rbc.backends.record_writer import six_from_tensor

    bodies = list(model.record.bodies)
    for v, a in added.items():
        b = bodies[v]
        total = pin.Inertia(b.mass, np.asarray(b.com, float), inertia_tensor(b.inertia)) + a
        bodies[v] = replace(b, mass=float(total.mass), com=tuple(map(float, total.lever)),
                            inertia=tuple(six_from_tensor(np.array(total.inertia))))
    return replace(model, record=replace(model.record, bodies=tuple(bodies)))


def _mass_checks(model: CompiledModel, part: Partition, m, d, exp) -> list[Check]:
    """MuJoCo's mass matrix against M_T with the export's inertia floor (the tree block;
    with split-body cuts the reduced inertia ``Eᵀ M E``, equal only on the closure
    manifold), and the floor's own effect on M_T."""
    from rbc.backends.mujoco_log import mujoco
    from rbc.model.dynamics import DynamicsData, DynamicsModel, tree_terms
    from rbc.model.partition import lift

    q_ref = np.asarray(part.q_ref, dtype=float)
    M_mj = np.zeros((m.nv, m.nv))
    mujoco.mj_fullM(m, d, M_mj)  # MuJoCo 4 signature (m, d, dst); d at the keyframe
    P = exp.velocity_map(model, q_ref)

    def tree_M(mod: CompiledModel) -> np.ndarray:
        dm = DynamicsModel.build(mod)
        return tree_terms(dm, DynamicsData.of(dm), q_ref, np.zeros(mod.nv)).M

    MT = tree_M(model)
    MT_added = tree_M(with_added_inertia(model, exp.added)) if exp.added else MT
    nt = model.nv_tree
    if exp.split:
        E = lift(model, part, q_ref).E
        ours = E[:nt].T @ MT_added @ E[:nt]
        err, what = _rel(E.T @ P.T @ M_mj @ P @ E, ours), "reduced inertia Eᵀ(Pᵀ·mj_fullM·P)E"
    else:
        err, what = _rel(P[:, :nt].T @ M_mj @ P[:, :nt], MT_added), "Pᵀ·mj_fullM·P"
    effect = _rel(MT_added, MT) if exp.added else 0.0
    names = model.record.bodies
    listed = "; ".join(f"{names[v].name} +{a.mass:.3g} kg, +{np.trace(a.inertia):.3g} kg·m² "
                       "(trace)" for v, a in sorted(exp.added.items())[:6])
    return [
        make_check("export.mjcf.readback.mass_matrix", err, MASS_MATRIX_RTOL, "1",
                   f"max |{what} − ours| / max|ours| at the keyframe (ours with the inertia "
                   "floor)"),
        make_check("export.mjcf.readback.added_inertia", effect, ADDED_INERTIA_LIMIT, "1",
                   "max |M_T(floor) − M_T| / max|M_T|: "
                   + (f"{len(exp.added)} bodies below MuJoCo's mass/inertia floor: {listed}"
                      if exp.added else "nothing added")),
    ]


def _kinematics_check(model: CompiledModel, part: Partition, m, d, exp,
                      samples: int = 4, seed: int = 20260927) -> Check:
    """World poses of every exported body at random tree configurations: MuJoCo
    (``mj_kinematics``) against Pinocchio's forward kinematics of the tree model."""
    from rbc.backends.mujoco_log import mujoco

    tm = build_tree(model)
    data = tm.model.createData()
    rng = np.random.default_rng(seed)
    L = max(exp.length, 1e-300)
    err = 0.0
    for _ in range(samples):
        dv = rng.uniform(-1.0, 1.0, model.nv) * np.where(_angular(model), 1.0, L)
        q = model.integrate(np.asarray(part.q_ref, dtype=float), dv)
        qpos = exp.qpos_of(model, q)
        d.qpos[:] = qpos
        mujoco.mj_kinematics(m, d)
        pin.framesForwardKinematics(tm.model, data, tm.q_pin(q[: model.nq_tree]))
        for v, name in exp.body_names.items():
            i = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, name)
            T = data.oMf[int(tm.body_frame[v])]
            err = max(err, float(np.abs(d.xpos[i] - T.translation).max()) / L,
                      float(np.abs(d.xmat[i].reshape(3, 3) - T.rotation).max()))
    return make_check("export.mjcf.readback.kinematics", err, KINEMATICS_RTOL, "1",
                      f"body poses, MuJoCo vs Pinocchio tree, {samples} random configurations "
                      "(position / L, rotation entries)")


def _angular(model: CompiledModel) -> np.ndarray:
    """(nv,) whether each velocity coordinate is a rotation (scaled by 1) or a translation."""
    out = np.ones(model.nv, dtype=bool)
    for k, kind in enumerate(model.kinds):
        S = kind.motion_subspace(np.asarray(kind.from_record_initial(None))) if kind.nv else None
        if S is not None:
            out[model.v_slice(k)] = np.abs(S[:3]).sum(axis=0) > 0
    return out


def pinocchio_readback(model: CompiledModel, pinocchio_dir: str | Path,
                       partition: Partition | None = None) -> list[Check]:
    """Checks ``export.pinocchio.{urdf,closure_gap}`` of a ``--pinocchio`` directory.

    The URDF model's M and gravity effort at the neutral configuration are compared with
    ``build_tree`` without armature or rotor inertia (URDF has no field for them) after
    matching coordinates by joint name (chains of a
    universal/cylindrical/spherical joint are named ``<joint>.<n>``; at the neutral
    configuration the spherical x-y-z chain has the same velocity basis as ω).
    """
    from lxml import etree

    from rbc.backends.pinocchio import pinocchio_model, urdf_name
    from rbc.backends.record_writer import read_xml
    from rbc.safeio import load_yaml, read_text

    part = partition or _default_partition(model)
    d = Path(pinocchio_dir)
    urdf = d / urdf_name(model)
    um = pin.buildModelFromXML(etree.tostring(read_xml(urdf, "robot"), encoding="unicode"))
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
    doc = load_yaml(read_text(d / "constraints.yaml", "sidecar"), d / "constraints.yaml")
    data = tm.model.createData()
    pin.forwardKinematics(pmod.tree.model, data, pmod.tree.q_pin(part.q_ref[: model.nq_tree]))
    gap = 0.0
    for s in pmod.specs:
        T1 = data.oMi[s.joint1] * s.placement1
        T2 = data.oMi[s.joint2] * s.placement2
        err = sp.log6(T1.inverse() * T2)
        gap = max(gap, float(np.abs(err[3:] if s.type == "CONTACT_3D" else err).max()))
    listed = doc.get("constraints") if isinstance(doc, dict) else None
    names = [c.get("name") for c in listed if isinstance(c, dict)] \
        if isinstance(listed, list) else None
    names_ok = names == [s.name for s in pmod.specs]
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
        from rbc.backends.pinocchio import urdf_name

        urdf = Path(pinocchio_dir) / urdf_name(model)
        if not Path(pinocchio_dir).is_dir() or not urdf.is_file():
            raise UsageError(f"--pinocchio {pinocchio_dir}: expected a directory written by "
                             f"`rbc compile --pinocchio` holding {urdf.name}")


def _guarded(name: str, path: str | Path, readback, model: CompiledModel) -> list[Check]:
    """``readback(model, path)``, or one failed check ``name`` when the export cannot be
    loaded or compared (the files are untrusted input: any loader error is a finding).

    A file that cannot be read safely at all (not a regular file, over a size limit, a YAML
    alias bomb: :class:`rbc.errors.InputError` from :mod:`rbc.safeio`) is a user error and
    propagates (exit 2, naming the file)."""
    from rbc.errors import InputError

    try:
        return readback(model, path)
    except InputError:
        raise
    except Exception as err:  # noqa: BLE001 — MuJoCo/Pinocchio/lxml raise many types
        return [Check(name, float("nan"), 0.0, "1", False,
                      f"cannot read back {path} against {model.record.name}: "
                      f"{type(err).__name__}: {err}")]

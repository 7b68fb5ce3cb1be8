"""Pinocchio export: a URDF of the spanning tree, a constraints file, and :func:`load`.

``rbc compile … --pinocchio DIR`` writes ``DIR/<name>.urdf`` (the tree, for users) and
``DIR/constraints.yaml`` (one entry per cut joint). :func:`load` rebuilds the model from
the bundle with :func:`rbc.model.tree.build_tree` — so its q/v layout is rbc's tree layout
through :class:`~rbc.model.tree.TreeModel`'s maps — and returns one
``pin.RigidConstraintModel`` per constraint, ready for ``pin.initConstraintDynamics`` /
``pin.constraintDynamics`` (Pinocchio docs: https://stack-of-tasks.github.io/pinocchio/,
"Contact dynamics"; Carpentier et al., "Proximal and sparse resolution of constrained
dynamic equations", RSS 2021).

**Constraint mapping** (frames: ``Jb`` = ``A_e`` in body b, ``Jc`` = ``B_e`` in body c):

=========  ==================================================================  ====  ====
cut type   constraint models                                                    rows  rank
=========  ==================================================================  ====  ====
spherical  ``CONTACT_3D`` Jb ↔ Jc (origins coincide)                             3     3
fixed      ``CONTACT_6D`` Jb ↔ Jc (frames coincide)                              6     6
revolute   two ``CONTACT_3D``: Jb ↔ Jc origins, and ``Jb·Trans(L a)`` ↔             6     5
           ``Jc·Trans(L a)`` (L = the partition's length scale)
other      not supported (:class:`PinocchioExportError`)                        —     —
=========  ==================================================================  ====  ====

Pinocchio 4.1's ``RigidConstraintModel`` has no row selection (``ConstraintSelectionType``
only chooses CURRENT/MAXIMAL Jacobian sparsity; ``FrameAnchorConstraintModel`` and
``PointAnchorConstraintModel`` are full 6-/3-row anchors and are not accepted by
``constraintDynamics``). The revolute pair carries one redundant row along the axis;
``constraintDynamics`` with a proximal parameter ``mu > 0`` (:data:`PROXIMAL`) solves the
rank-deficient KKT system by proximal iterations (docs/export.md lists the measured accuracy).
Prismatic, universal, cylindrical, planar, helical and free cuts would need a split body
(the cut joint's coordinates as a massless tree joint welded with CONTACT_6D), which makes
Pinocchio's tree inertia singular; they are rejected.

**URDF**: one link per body whose frame is the child joint frame ``B·R0`` (Pinocchio's
placement, :func:`rbc.ir.joints.pinocchio_placements`); the inertial block is the COM
frame with body axes, so the inertia tensor is written unrotated. Universal and cylindrical
joints become two joints with a massless intermediate link (same coordinates); spherical
joints become three revolute joints x, y, z (a different chart — URDF has no ball joint);
free roots become ``floating``; helical joints are written as ``revolute`` with an XML
comment giving the lead (URDF has no screw joint).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pinocchio as pin
import yaml
from lxml import etree

from rbc.errors import CompileError
from rbc.ir import spatial as sp
from rbc.ir.joints import joint_kind, pinocchio_placements
from rbc.ir.record import Joint
from rbc.model.compiled import CompiledModel, Partition
from rbc.model.tree import TreeModel, build_tree, tree_joint
from rbc.safeio import atomic_directory, safe_basename

#: Proximal settings for ``constraintDynamics``: absolute accuracy 1e-13 (well below the
#: 1e-9 acceptance of δ_a), proximal parameter mu = 1e-9 (makes the redundant revolute row
#: solvable; its bias vanishes as the iterations converge), at most 50 iterations.
PROXIMAL = (1e-13, 1e-9, 50)

SUPPORTED_CUTS = ("spherical", "fixed", "revolute")


class PinocchioExportError(CompileError):
    """A cut joint type that has no exact Pinocchio constraint mapping (names the joint)."""


@dataclass(frozen=True)
class ConstraintSpec:
    """One Pinocchio constraint of a cut joint.

    Attributes:
        name: constraint name (``<cut>`` or ``<cut>.<n>``); cut: the cut joint's name.
        type: ``CONTACT_3D | CONTACT_6D``.
        joint1, joint2: Pinocchio joint ids (0 = universe) of bodies b and c.
        placement1, placement2: the constrained frames in those joints' frames.
        body1, body2: record body names (``world`` for the world).
    """

    name: str
    cut: str
    type: str
    joint1: int
    placement1: pin.SE3
    joint2: int
    placement2: pin.SE3
    body1: str
    body2: str


@dataclass(frozen=True, eq=False)
class PinocchioModel:
    """The tree model, its coordinate maps and the constraints.

    Attributes:
        kin: the compiled model; tree: :class:`~rbc.model.tree.TreeModel` (q/v maps);
        specs: per constraint; constraints: ``pin.StdVec_RigidConstraintModel``.
    """

    kin: CompiledModel
    tree: TreeModel
    specs: tuple[ConstraintSpec, ...]
    constraints: object

    def constraint_datas(self) -> object:
        """Fresh ``pin.StdVec_RigidConstraintData`` for :attr:`constraints`."""
        return pin.StdVec_RigidConstraintData([c.createData() for c in self.constraints])


def _body_frame(kin: CompiledModel, tm: TreeModel, v: int) -> tuple[int, pin.SE3, str]:
    """(joint id, T_joint_body, name) of vertex v (the world is joint 0, identity)."""
    if v == kin.n_bodies:
        return 0, pin.SE3.Identity(), "world"
    f = tm.model.frames[int(tm.body_frame[v])]
    return int(f.parentJoint), f.placement, kin.record.bodies[v].name


def constraint_specs(kin: CompiledModel, tm: TreeModel, partition: Partition
                     ) -> tuple[ConstraintSpec, ...]:
    """The constraints of every cut joint (module docstring table).

    Raises:
        PinocchioExportError: a cut joint type other than spherical, fixed, revolute.
    """
    out = []
    for k in kin.chord_edges:
        name, t = kin.edge_names[k], kin.edge_types[k]
        if t not in SUPPORTED_CUTS:
            raise PinocchioExportError(
                f"{kin.record.source}: Pinocchio export: cut joint '{name}' is {t}; exact "
                f"constraint mappings exist for {', '.join(SUPPORTED_CUTS)} cuts only "
                "(docs/export.md)")
        j1, T1, n1 = _body_frame(kin, tm, int(kin.parent[k]))
        j2, T2, n2 = _body_frame(kin, tm, int(kin.child[k]))
        A, B = kin.A[k], kin.B[k]
        if t == "revolute":
            off = pin.SE3(np.eye(3), float(partition.length_scale) * np.asarray(kin.kinds[k].axis))
            for n, (Pa, Pb) in enumerate(((A, B), (A * off, B * off))):
                out.append(ConstraintSpec(f"{name}.{n}", name, "CONTACT_3D", j1, T1 * Pa,
                                          j2, T2 * Pb, n1, n2))
        else:
            ctype = "CONTACT_3D" if t == "spherical" else "CONTACT_6D"
            out.append(ConstraintSpec(name, name, ctype, j1, T1 * A, j2, T2 * B, n1, n2))
    return tuple(out)


def rigid_constraints(tm: TreeModel, specs: tuple[ConstraintSpec, ...]) -> object:
    """``pin.StdVec_RigidConstraintModel`` of the specs (LOCAL reference frame, no Baumgarte)."""
    models = []
    for s in specs:
        c = pin.RigidConstraintModel(getattr(pin.ContactType, s.type), tm.model, s.joint1,
                                     s.placement1, s.joint2, s.placement2,
                                     pin.ReferenceFrame.LOCAL)
        c.name = s.name
        models.append(c)
    return pin.StdVec_RigidConstraintModel(models)


def pinocchio_model(kin: CompiledModel, partition: Partition | None = None) -> PinocchioModel:
    """Tree model (``build_tree``, rotor inertia included) and constraints of a compiled model.

    Args:
        partition: supplies the revolute anchor spacing (default: ``default`` or the first).
    """
    part = partition or kin.partitions.get("default") or next(iter(kin.partitions.values()))
    tm = build_tree(kin)
    specs = constraint_specs(kin, tm, part)
    return PinocchioModel(kin, tm, specs, rigid_constraints(tm, specs))


def load(bundle: str | Path) -> tuple[pin.Model, object]:
    """``(model, constraint_models)`` of a bundle, ready for ``pin.constraintDynamics``.

    The model's q/v are rbc's tree coordinates re-ordered by
    :class:`~rbc.model.tree.TreeModel` (use :func:`pinocchio_model` to get the maps).
    Efforts on cut coordinates (joint damping/springs of a cut joint) have no place in this
    model.

    Raises:
        BundleError: unreadable bundle; PinocchioExportError: unsupported cut joint type.
    """
    pmod = pinocchio_model(CompiledModel.from_bundle(bundle))
    return pmod.tree.model, pmod.constraints


def constraint_dynamics(pmod: PinocchioModel, data: pin.Data, cdatas: object, q: np.ndarray,
                        v: np.ndarray, tau: np.ndarray) -> np.ndarray:
    """Tree accelerations (nv_tree,) in rbc order from ``pin.constraintDynamics``.

    Args:
        q, v: rbc (nq,), (nv,) (or their tree parts); tau: (nv_tree,) tree efforts in rbc
            order, gravity excluded (Pinocchio adds ``model.gravity``).
    """
    t = pmod.tree
    prox = pin.ProximalSettings(*PROXIMAL)
    a = pin.constraintDynamics(t.model, data, t.q_pin(q[: pmod.kin.nq_tree]),
                               t.v_pin(v[: pmod.kin.nv_tree]), t.v_pin(tau),
                               pmod.constraints, cdatas, prox)
    return t.v_rbc(a)


# ------------------------------------------------------------------------------ files


def _origin(parent: etree._Element, T: pin.SE3) -> None:
    etree.SubElement(parent, "origin", xyz=_vec(T.translation),
                     rpy=_vec(sp.rpy_from_rotation(T.rotation)))


def _vec(xs) -> str:
    return " ".join(repr(float(x)) for x in np.ravel(xs))


def _link(robot: etree._Element, name: str, body=None, T_link_body: pin.SE3 | None = None
          ) -> None:
    link = etree.SubElement(robot, "link", name=name)
    if body is None or body.mass <= 0:
        return
    inertial = etree.SubElement(link, "inertial")
    T = T_link_body * pin.SE3(np.eye(3), np.asarray(body.com, dtype=float))
    _origin(inertial, T)
    etree.SubElement(inertial, "mass", value=repr(float(body.mass)))
    ixx, iyy, izz, ixy, ixz, iyz = (repr(float(x)) for x in body.inertia)
    etree.SubElement(inertial, "inertia", ixx=ixx, iyy=iyy, izz=izz, ixy=ixy, ixz=ixz, iyz=iyz)


def _urdf_joint(robot: etree._Element, name: str, jtype: str, parent: str, child: str,
                T: pin.SE3, axis=None, limits: tuple[float, float] | None = None) -> None:
    el = etree.SubElement(robot, "joint", name=name, type=jtype)
    _origin(el, T)
    etree.SubElement(el, "parent", link=parent)
    etree.SubElement(el, "child", link=child)
    if axis is not None:
        etree.SubElement(el, "axis", xyz=_vec(axis))
    if jtype in ("revolute", "prismatic"):
        lo, hi = limits if limits else (-math.pi, math.pi)
        etree.SubElement(el, "limit", lower=repr(float(lo)), upper=repr(float(hi)),
                         effort="0", velocity="0")


def urdf_tree(kin: CompiledModel) -> etree._ElementTree:
    """The URDF document of the spanning tree (module docstring)."""
    rec = kin.record
    robot = etree.Element("robot", name=rec.name)
    robot.append(etree.Comment(" generated by rbc: the spanning tree; cut joints are in "
                               "constraints.yaml "))
    _link(robot, "world")
    # per vertex: (URDF link name, T_body_link) — the link frame in the body frame
    frame = {kin.n_bodies: ("world", pin.SE3.Identity())}
    for k in kin.tree_edges:
        j = tree_joint(kin, k)
        up, down = ((int(kin.parent[k]), int(kin.child[k])) if kin.sign[k] > 0
                    else (int(kin.child[k]), int(kin.parent[k])))
        plink, T_up_link = frame[up]
        placement, in_child = pinocchio_placements(j)
        body = rec.bodies[down]
        frame[down] = (body.name, in_child)
        T = T_up_link.inverse() * placement  # joint frame in the parent link frame
        _link(robot, body.name, body, in_child.inverse())
        _tree_urdf_joint(robot, kin, j, plink, body.name, T)
    return etree.ElementTree(robot)


def _tree_urdf_joint(robot: etree._Element, kin: CompiledModel, j: Joint, parent: str,
                     child: str, T: pin.SE3) -> None:
    kind = joint_kind(j)
    lim = (j.lower[0], j.upper[0]) if j.lower and all(
        math.isfinite(x) for x in (j.lower[0], j.upper[0])) else None
    if j.type in ("revolute", "prismatic", "helical"):
        if j.type == "helical":
            name = j.name.replace("-", "_")  # "--" may not appear in an XML comment
            robot.append(etree.Comment(f" {name}: helical, lead {kind.lead!r} m/rev "
                                       "(URDF has no screw joint) "))
        jt = "prismatic" if j.type == "prismatic" else ("revolute" if lim else "continuous")
        _urdf_joint(robot, j.name, jt, parent, child, T, kind.axis, lim)
    elif j.type == "fixed":
        _urdf_joint(robot, j.name, "fixed", parent, child, T)
    elif j.type == "free":
        _urdf_joint(robot, j.name, "floating", parent, child, T)
    elif j.type == "planar":
        _urdf_joint(robot, j.name, "planar", parent, child, T, (0.0, 0.0, 1.0))
    else:  # universal, cylindrical, spherical: chains through massless links
        if j.type == "universal":
            steps = [("revolute", kind.axes[0]), ("revolute", kind.axes[1])]
        elif j.type == "cylindrical":
            steps = [("prismatic", kind.axis), ("revolute", kind.axis)]
        else:
            steps = [("revolute", e) for e in np.eye(3)]
        links = [f"{j.name}.link{n}" for n in range(len(steps) - 1)] + [child]
        prev = parent
        for n, ((jt, axis), link) in enumerate(zip(steps, links, strict=True)):
            if link != child:
                _link(robot, link)
            jt = "continuous" if jt == "revolute" else jt
            _urdf_joint(robot, f"{j.name}.{n}", jt, prev, link,
                        T if n == 0 else pin.SE3.Identity(), axis,
                        (-1e3, 1e3) if jt == "prismatic" else None)
            prev = link


def constraints_document(kin: CompiledModel, specs: tuple[ConstraintSpec, ...]) -> dict:
    """The constraints file content (see docs/export.md)."""
    def pose(T: pin.SE3) -> dict:
        p = sp.pose_from_se3(T)
        return {"xyz": list(p.xyz), "quat": list(p.quat)}

    return {
        "rbc_constraints": 1,
        "robot": kin.record.name,
        "conventions": "T_a_b maps b to a; quat (w, x, y, z); placement1/2: the "
                       "constrained frame in the frame of Pinocchio joint joint1/joint2 "
                       "(the model of rbc.backends.pinocchio.load; 0 = universe)",
        "constraints": [
            {"name": s.name, "cut_joint": s.cut, "cut_type": kin.edge_types[kin.edge(s.cut)],
             "type": s.type, "body1": s.body1, "body2": s.body2,
             "placement1": pose(s.placement1), "placement2": pose(s.placement2),
             "joint1": s.joint1, "joint2": s.joint2}
            for s in specs
        ],
    }


def urdf_name(kin: CompiledModel) -> str:
    """File name of the exported URDF: the robot name as a safe basename
    (:func:`rbc.safeio.safe_basename`; a record named ``../../x`` gives ``x.urdf``)."""
    return safe_basename(kin.record.name, "robot") + ".urdf"


def write_pinocchio(kin: CompiledModel, partition: Partition, out_dir: str | Path) -> Path:
    """Write ``<name>.urdf`` and ``constraints.yaml`` into ``out_dir`` all-or-nothing.

    The directory is written as a temporary sibling and renamed into place
    (:func:`rbc.safeio.atomic_directory`): an interrupt leaves the previous export intact,
    never a mix of two. ``<name>`` is :func:`urdf_name` (never a path from the record).
    Placements in the constraints file are in the *joint* frames of the Pinocchio model
    (``joint1``/``joint2`` ids of :func:`load`'s model).

    Raises:
        PinocchioExportError: an unsupported cut joint type or rolling wheels; nothing is
            written then.
        UsageError: ``out_dir`` exists and is not an rbc output directory.
    """
    from rbc.model.rolling import refuse_rolling

    refuse_rolling(kin, "the Pinocchio export", PinocchioExportError)
    pmod = pinocchio_model(kin, partition)
    urdf = etree.tostring(urdf_tree(kin), pretty_print=True, encoding="unicode")
    constraints = yaml.safe_dump(constraints_document(kin, pmod.specs), sort_keys=False)
    out = Path(out_dir)
    with atomic_directory(out, "--pinocchio") as tmp:
        (tmp / urdf_name(kin)).write_text(urdf, encoding="utf-8")
        (tmp / "constraints.yaml").write_text(constraints, encoding="utf-8")
    return out


def write_pinocchio_from_bundle(bundle: str | Path, out_dir: str | Path) -> Path:
    """``rbc compile --pinocchio``: :func:`write_pinocchio` for a bundle's ``default`` partition.

    Raises:
        BundleError: unreadable bundle; PinocchioExportError: unsupported cut joint type.
    """
    kin = CompiledModel.from_bundle(bundle)
    part = kin.partitions.get("default") or next(iter(kin.partitions.values()))
    return write_pinocchio(kin, part, out_dir)

"""MJCF export of a compiled model: the spanning tree as nested bodies, the cut joints as
equality constraints, and a keyframe ``assembled`` at the partition's reference
configuration (DESIGN.md §1, §8; docs/export.md).

Mapping (sources: MuJoCo XML reference, https://mujoco.readthedocs.io/en/stable/XMLreference.html):

* **Bodies** keep the record's body frame: a tree edge k = (up, down) (reversed edges use
  :func:`rbc.model.tree.tree_joint`: swapped frames, negated axis) gives body ``down``
  ``pos/quat = A·B⁻¹`` in its parent (the pose at q = 0) and the joints sit at ``B``'s
  origin with axes ``R_B·a`` in the body frame, so ``T_up_down(q) = A·Q(q)·B⁻¹`` exactly.
  Bodies are nested in the forest's depth-first order. ``<inertial pos=COM mass
  fullinertia>`` with ``<compiler inertiafromgeom="false">`` (geoms add no mass).
* **Joints**: revolute → hinge; prismatic → slide; universal → two hinges (MuJoCo composes
  the joints of one body in order, each axis in the already-moved frame, which is
  ``Rot(a1, θ1)·Rot(a2, θ2)``); cylindrical → slide + hinge on the axis; planar → slide,
  slide, hinge; spherical → ball (qpos ``= R_B Q R_Bᵀ`` as a quaternion); free (root
  edges only, A = B = I) → free. Fixed → no joint. Helical has no MuJoCo joint and is
  rejected. Per 1-dof MuJoCo joint: ``armature`` (joint armature + reflected rotor inertia,
  read from the tree model of :func:`rbc.model.tree.build_tree`), ``damping`` (joint +
  actuator viscous), ``frictionloss`` (joint friction + actuator Coulomb), ``range`` (both
  limits finite), ``stiffness``/``springref`` (1-coordinate joints).
* **Motors** at the actuator ports with ``gear=1`` (ctrl is the port effort [N·m | N]),
  ``ctrlrange`` from ``effort_limits``; a tendon port becomes a ``<tendon><fixed>`` with its
  coefficients and the motor acts on the tendon.
* **Couplings** → ``<equality><joint>`` (two joints at most; ``polycoef`` linear).
* **Cut joints** → equality constraints between *sites* placed at the chord's joint frames
  ``Jb`` (``A_e`` in body b) and ``Jc`` (``B_e`` in body c), so the anchors in both bodies
  are exact and independent of ``qpos0``:

  ==============================  ==============================================  ====  ====
  cut type                        equality                                         rows  rank
  ==============================  ==============================================  ====  ====
  spherical                       ``connect`` site Jb ↔ site Jc                    3     3
  fixed                           ``weld`` site Jb ↔ site Jc                       6     6
  revolute                        two ``connect``: Jb ↔ Jc origins, and the         6     5
                                  points ``L·a`` along the axis in Jb and Jc
  prismatic, universal,           auxiliary body ``<cut>.cut`` in b at ``A_e``     6     6
  cylindrical, planar             with the cut joint's own MuJoCo joints (massless,
                                  armature ε), ``weld`` of its frame to site Jc
  ==============================  ==============================================  ====  ====

  The revolute pair has one redundant row (along the axis); MuJoCo's regularized
  constraint solver handles it. ``L`` is the partition's length scale.
  The auxiliary-body mapping is exact in kinematics; the auxiliary body carries the mass
  ``AUX_MASS_RATIO × total mass`` (MuJoCo needs mass on moving bodies) and its dofs the
  armature ``ε = AUX_ARMATURE_RATIO × mean diagonal of M_T``, so the mass matrix differs by
  O(1e-9) relative. **Known limitation:** MuJoCo scales a constraint's regularization with
  the inverse weight of the bodies it touches, so the near-massless split body's weld is
  enforced only weakly and such a loop drifts open when stepped (0.24 m in 0.5 s on a
  slider-crank cut at its prismatic joint); ``rbc simulate --backend mujoco`` refuses these
  cuts. Splitting the child body's own inertia between it and the auxiliary body would fix
  it (not done).
* **solref** = ``(2·timestep, 1)``: MuJoCo's stiffest stable time constant (it clamps
  timeconst below 2·timestep) and critical damping. MuJoCo's reference acceleration is
  divided by the constraint's effective mass, so the rule is mass-scale free;
  ``solimp = (0.99, 0.999, 0.001)`` keeps the impedance near 1 (a stiff loop).
* **Keyframe** ``assembled``: qpos = the partition's ``q_ref`` in MuJoCo order.
* **Geometry**: supports → boxes (``half_extents``, 1 mm thick) that collide; record
  geometry → geoms in group 1 with ``contype = conaffinity = 0`` (closed chains overlap at
  their joints); meshes are skipped.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pinocchio as pin
from lxml import etree

from rbc.errors import CompileError
from rbc.ir import spatial as sp
from rbc.ir.atomic import atomic_write_text
from rbc.ir.joints import joint_kind
from rbc.ir.record import Joint, coordinate_names
from rbc.model.compiled import CompiledModel, Partition, root_joint
from rbc.model.tree import build_tree, tree_joint

#: Default integration step [s] written to ``<option timestep>``.
DEFAULT_TIMESTEP = 1e-3
#: Auxiliary (split-body) cut dofs get this fraction of the mean tree-joint diagonal of
#: M_T as armature: small enough to leave the dynamics unchanged to ~1e-9, large enough
#: to keep MuJoCo's mass matrix positive definite.
AUX_ARMATURE_RATIO = 1e-9
#: Thickness [m] of a support box (records give a 2-D patch).
SUPPORT_HALF_THICKNESS = 5e-4
#: Auxiliary cut bodies must carry mass (MuJoCo rejects moving bodies lighter than
#: mjMINVAL = 1e-15): this fraction of the record's total mass, with inertia m·L², changes
#: the tree's M by ~1e-12 relative — below the 1e-10 readback limit.
AUX_MASS_RATIO = 1e-12
SOLIMP = (0.99, 0.999, 0.001)
#: Cut-joint types exported as equality constraints between the two bodies themselves;
#: every other cut type goes through an auxiliary split body (module docstring).
DIRECT_CUT_TYPES = ("spherical", "fixed", "revolute")


def fmt(x: float) -> str:
    """A float at full precision (``repr``; DESIGN.md §2)."""
    return repr(float(x))


def vec(xs) -> str:
    """Space-separated full-precision floats."""
    return " ".join(fmt(x) for x in np.ravel(xs))


@dataclass(frozen=True)
class MjJoint:
    """One MuJoCo joint emitted for an rbc edge.

    Attributes:
        name: MuJoCo joint name (the rbc coordinate name; ball/free: the edge name).
        type: ``hinge | slide | ball | free``.
        axis: (3,) unit axis in the joint frame Jc (hinge/slide), else None.
        edge: rbc edge index; coord: index within the edge's limited coordinates (or −1).
    """

    name: str
    type: str
    axis: np.ndarray | None
    edge: int
    coord: int


def mj_joints(model: CompiledModel, k: int, joint: Joint) -> list[MjJoint]:
    """The MuJoCo joints of edge k (record joint ``joint``, possibly reversed).

    Raises:
        CompileError: helical joints (no MuJoCo equivalent) or non-root free joints.
    """
    kind = joint_kind(joint)
    t = joint.type
    names = coordinate_names(t, model.edge_names[k])[1]
    if t in ("revolute", "prismatic"):
        return [MjJoint(names[0], "hinge" if t == "revolute" else "slide",
                        np.asarray(kind.axis), k, 0)]
    if t == "universal":
        return [MjJoint(names[i], "hinge", np.asarray(kind.axes[i]), k, i) for i in range(2)]
    if t == "cylindrical":
        a = np.asarray(kind.axis)
        return [MjJoint(names[0], "slide", a, k, 0), MjJoint(names[1], "hinge", a, k, 1)]
    if t == "planar":
        R0 = kind.alignment().rotation
        return [MjJoint(names[0], "slide", R0[:, 0], k, 0),
                MjJoint(names[1], "slide", R0[:, 1], k, 1),
                MjJoint(names[2], "hinge", R0[:, 2], k, 2)]
    if t == "spherical":
        return [MjJoint(model.edge_names[k], "ball", None, k, -1)]
    if t == "free":
        if joint.parent != "world":
            raise CompileError(f"{model.record.source}: MJCF export: free joint "
                               f"'{joint.name}' is not a root joint (MuJoCo allows free "
                               "joints only on children of the world body)")
        return [MjJoint(model.edge_names[k], "free", None, k, -1)]
    if t == "fixed":
        return []
    raise CompileError(f"{model.record.source}: MJCF export: joint '{joint.name}' is "
                       f"{t}; MuJoCo has no {t} joint (valid: revolute, prismatic, universal,"
                       " cylindrical, planar, spherical, free, fixed)")


def mj_qpos(joint: Joint, q: np.ndarray, B: pin.SE3) -> np.ndarray:
    """MuJoCo qpos of one rbc joint at its rbc coordinates q (nq,) [rad, m].

    Ball joints rotate the *body* frame: ``quat = R_B·Q·R_Bᵀ`` (wxyz); free roots (A = B = I)
    are the rbc layout itself; planar is ``[x, y, θ]``.
    """
    kind = joint_kind(joint)
    if joint.type == "spherical":
        R = B.rotation @ sp.rotation_from_quat(q) @ B.rotation.T
        return sp.quat_from_rotation(R)
    if joint.type == "planar":
        return kind.limited_coordinates(q)
    return np.asarray(q, dtype=float).copy()


def velocity_block(joint: Joint, q: np.ndarray, B: pin.SE3) -> np.ndarray:
    """``v_mj = P v_rbc`` for one joint (square, nv × nv) at rbc coordinates q.

    Hinge/slide speeds are rbc's; ball ω is in the body frame (``R_B ω_Jc``); a free joint's
    MuJoCo velocity is ``[ṗ (world); ω (local)]`` versus rbc ``[ω; v]`` in Jc; planar
    ``(ẋ, ẏ) = R(θ)(vx, vy)``.
    """
    kind = joint_kind(joint)
    n = kind.nv
    P = np.eye(n)
    if joint.type == "spherical":
        P = B.rotation.copy()
    elif joint.type == "free":
        P = np.zeros((6, 6))
        P[:3, 3:] = sp.rotation_from_quat(q[3:])
        P[3:, :3] = np.eye(3)
    elif joint.type == "planar":
        P[:2, :2] = kind.N(q)[:2, :2]
    return P


@dataclass(frozen=True, eq=False)
class MjcfExport:
    """The exported document and the coordinate maps needed to read it back.

    Attributes:
        tree: the MJCF document.
        tree_joints: MuJoCo joints of the tree edges, in MuJoCo order.
        aux_joints: MuJoCo joints of split-body cut joints, in MuJoCo order.
        qpos: keyframe qpos (MuJoCo order).
        length: the revolute-cut anchor spacing L [m].
    """

    tree: etree._ElementTree
    tree_joints: tuple[MjJoint, ...]
    aux_joints: tuple[MjJoint, ...]
    qpos: np.ndarray
    length: float

    def to_string(self) -> str:
        """The XML text."""
        return etree.tostring(self.tree, pretty_print=True, encoding="unicode")


def _body_name(model: CompiledModel, v: int) -> str:
    return "world" if v == model.n_bodies else model.record.bodies[v].name


def _pose_attrs(el: etree._Element, T: pin.SE3) -> None:
    el.set("pos", vec(T.translation))
    el.set("quat", vec(sp.quat_from_rotation(T.rotation)))


def _set_limits(el: etree._Element, joint: Joint, coord: int) -> None:
    if coord < 0 or len(joint.lower) <= coord:
        return
    lo, hi = joint.lower[coord], joint.upper[coord]
    if np.isfinite(lo) and np.isfinite(hi):  # MuJoCo ranges are two-sided
        el.set("limited", "true")
        el.set("range", f"{fmt(lo)} {fmt(hi)}")


def export_mjcf(model: CompiledModel, partition: Partition,
                timestep: float = DEFAULT_TIMESTEP) -> MjcfExport:
    """Build the MJCF document of a compiled model (pure; see the module docstring).

    Args:
        model: compiled model (from a bundle).
        partition: the partition whose ``q_ref`` (assembled) becomes the keyframe and whose
            ``length_scale`` spaces the revolute-cut anchors.
        timestep: ``<option timestep>`` [s]; also sets solref (2·timestep, 1).

    Returns:
        :class:`MjcfExport`.

    Raises:
        CompileError: a joint with no MuJoCo counterpart (helical; free not at a root), an
            actuator whose port is not a tree joint, or a helical cut joint.
    """
    rec = model.record
    tm = build_tree(model)
    pm = tm.model
    q_ref = np.asarray(partition.q_ref, dtype=float)
    root = etree.Element("mujoco", model=rec.name)
    etree.SubElement(root, "compiler", angle="radian", inertiafromgeom="false",
                     autolimits="true", boundmass="0", boundinertia="0")
    etree.SubElement(root, "option", timestep=fmt(timestep), gravity=vec(rec.gravity))
    dflt = etree.SubElement(etree.SubElement(root, "default"), "equality")
    dflt.set("solref", f"{fmt(2.0 * timestep)} 1")
    dflt.set("solimp", vec(SOLIMP))
    world = etree.SubElement(root, "worldbody")
    B_n = model.n_bodies
    elements: dict[int, etree._Element] = {B_n: world}
    tree_joints: list[MjJoint] = []
    qpos: dict[str, np.ndarray] = {}
    damping = {j.name: j.damping for j in rec.joints}
    friction = {j.name: j.friction for j in rec.joints}
    for a in rec.actuators:  # drive friction: joint ports only (schema)
        if a.joint is not None:
            damping[a.joint] = damping.get(a.joint, 0.0) + a.viscous
            friction[a.joint] = friction.get(a.joint, 0.0) + a.coulomb
    for k in model.tree_edges:
        j = tree_joint(model, k)
        up, down = ((int(model.parent[k]), int(model.child[k])) if model.sign[k] > 0
                    else (int(model.child[k]), int(model.parent[k])))
        A, B = sp.se3_from_pose(j.parent_frame), sp.se3_from_pose(j.child_frame)
        body = rec.bodies[down]
        el = etree.SubElement(elements[up], "body", name=mjcf_body(body.name))
        _pose_attrs(el, A * B.inverse())
        elements[down] = el
        if body.mass > 0:
            I = body.inertia  # ixx iyy izz ixy ixz iyz (tensor entries, as MJCF fullinertia)
            etree.SubElement(el, "inertial", pos=vec(body.com), mass=fmt(body.mass),
                             fullinertia=vec(I))
        qs = model.q_slice(k)
        arm = (pm.armature[pm.joints[int(tm.edge_joint[k])].idx_v:
                           pm.joints[int(tm.edge_joint[k])].idx_v + model.kinds[k].nv]
               if tm.edge_joint[k] >= 0 else np.zeros(0))
        for n, mj in enumerate(mj_joints(model, k, j)):
            jel = etree.SubElement(el, "joint", name=mj.name, type=mj.type)
            if mj.type != "free":
                jel.set("pos", vec(B.translation))
            if mj.axis is not None:
                jel.set("axis", vec(B.rotation @ mj.axis))
                jel.set("armature", fmt(arm[n]))
            elif mj.type == "ball":
                jel.set("armature", fmt(arm[0]))
            if damping.get(j.name):
                jel.set("damping", fmt(damping[j.name]))
            if friction.get(j.name):
                jel.set("frictionloss", fmt(friction[j.name]))
            if j.spring.stiffness and model.kinds[k].nv == 1:
                jel.set("stiffness", fmt(j.spring.stiffness))
                jel.set("springref", fmt(j.spring.rest))
            _set_limits(jel, j, mj.coord)
            tree_joints.append(mj)
        _record_qpos(qpos, model, k, j, q_ref[qs], B)
        _geoms(model, down, el)
    for v in range(B_n):
        if v not in elements:
            raise CompileError(f"{rec.source}: MJCF export: body '{rec.bodies[v].name}' is "
                               "not in the spanning tree")
    aux_joints, length = _cuts(model, partition, root, elements, world, qpos, pm, timestep)
    _couplings(model, root, tree_joints)
    _motors(model, root, tree_joints)
    key = etree.SubElement(etree.SubElement(root, "keyframe"), "key", name="assembled")
    # MuJoCo numbers joints in document (pre-)order, auxiliary cut bodies included
    order = [qpos[el.get("name")] for el in world.iter("joint")]
    qv = np.concatenate(order) if order else np.zeros(0)
    key.set("qpos", vec(qv))
    return MjcfExport(etree.ElementTree(root), tuple(tree_joints), tuple(aux_joints), qv, length)


def _record_qpos(qpos: dict[str, np.ndarray], model: CompiledModel, k: int, joint: Joint,
                 q: np.ndarray, B: pin.SE3) -> None:
    """Store the MuJoCo qpos of each MuJoCo joint of edge k by joint name."""
    mjs = mj_joints(model, k, joint)
    values = mj_qpos(joint, q, B)
    if len(mjs) == 1 and mjs[0].type in ("ball", "free"):
        qpos[mjs[0].name] = values
    else:
        for n, mj in enumerate(mjs):
            qpos[mj.name] = values[n: n + 1]


def _geoms(model: CompiledModel, v: int, el: etree._Element) -> None:
    """Record geometry (visual, group 1, no contacts) and support boxes (contacts) of body v."""
    body = model.record.bodies[v]
    for n, g in enumerate(body.geometry):
        params = dict(g.params)
        if g.type == "mesh":
            continue  # mesh files are not resolved by the exporter (docs/export.md)
        gel = etree.SubElement(el, "geom", name=f"{body.name}.geom{n}", type=g.type,
                               group="1", contype="0", conaffinity="0", mass="0")
        if g.type == "box":
            gel.set("size", vec(params["half_extents"]))
        elif g.type == "sphere":
            gel.set("size", fmt(params["radius"]))
        elif "fromto" in params:
            gel.set("size", fmt(params["radius"]))
            from_to = np.asarray(params["fromto"], dtype=float)
            T = sp.se3_from_pose(g.pose)
            gel.set("fromto", vec(np.concatenate([T.act(from_to[:3]), T.act(from_to[3:])])))
            continue
        else:  # capsule / cylinder with a length along the geometry's z axis
            gel.set("size", f"{fmt(params['radius'])} {fmt(0.5 * params['length'])}")
        _pose_attrs(gel, sp.se3_from_pose(g.pose))
    for s in model.record.supports:
        if s.body != body.name:
            continue
        hx, hy = (tuple(s.half_extents) + (0.0, 0.0))[:2]
        gel = etree.SubElement(el, "geom", name=f"{s.name}", type="box",
                               size=vec([hx, hy, SUPPORT_HALF_THICKNESS]), mass="0")
        # the box top face is the support plane: shift it down by its half thickness
        T = sp.se3_from_pose(s.pose) * pin.SE3(np.eye(3), np.array(
            [0.0, 0.0, -SUPPORT_HALF_THICKNESS]))
        _pose_attrs(gel, T)


def _site(parent: etree._Element, name: str, T: pin.SE3) -> None:
    el = etree.SubElement(parent, "site", name=name)
    _pose_attrs(el, T)


def _cuts(model: CompiledModel, partition: Partition, root: etree._Element,
          elements: dict[int, etree._Element], world: etree._Element,
          qpos: dict[str, np.ndarray], pm: pin.Model, timestep: float
          ) -> tuple[list[MjJoint], float]:
    """Equality constraints (and auxiliary bodies) for the cut joints (module docstring)."""
    eq = etree.SubElement(root, "equality")
    length = float(partition.length_scale)
    diag = np.asarray(pin.crba(pm, pm.createData(), pin.neutral(pm))).diagonal() if pm.nv else [1.0]
    eps = AUX_ARMATURE_RATIO * float(np.mean(diag))
    aux: list[MjJoint] = []
    for k in model.chord_edges:
        name = model.edge_names[k]
        j = next((x for x in model.record.joints if x.name == name), None)
        if j is None:  # a cut root edge (two fixed bodies in one component): a weld
            j = root_joint(name, model.edge_types[k])
        b, c = int(model.parent[k]), int(model.child[k])
        A, B = model.A[k], model.B[k]
        eb, ec = elements[b], elements[c]
        t = j.type
        if t == "spherical":
            _site(eb, f"{name}.b", A)
            _site(ec, f"{name}.c", B)
            etree.SubElement(eq, "connect", name=name, site1=f"{name}.b", site2=f"{name}.c")
        elif t == "fixed":
            _site(eb, f"{name}.b", A)
            _site(ec, f"{name}.c", B)
            etree.SubElement(eq, "weld", name=name, site1=f"{name}.b", site2=f"{name}.c")
        elif t == "revolute":
            off = pin.SE3(np.eye(3), length * np.asarray(model.kinds[k].axis))
            for n, (Tb, Tc) in enumerate(((A, B), (A * off, B * off))):
                _site(eb, f"{name}.b{n}", Tb)
                _site(ec, f"{name}.c{n}", Tc)
                etree.SubElement(eq, "connect", name=f"{name}.{n}", site1=f"{name}.b{n}",
                                 site2=f"{name}.c{n}")
        else:
            mjs = mj_joints(model, k, j)  # raises for helical
            body = etree.SubElement(eb, "body", name=f"{name}.cut")
            _pose_attrs(body, A)
            m_aux = AUX_MASS_RATIO * max(sum(x.mass for x in model.record.bodies), 1.0)
            i_aux = m_aux * max(length, 1e-3) ** 2
            etree.SubElement(body, "inertial", pos="0 0 0", mass=fmt(m_aux),
                             diaginertia=vec([i_aux] * 3))
            for mj in mjs:
                jel = etree.SubElement(body, "joint", name=mj.name, type=mj.type,
                                       armature=fmt(eps))
                if mj.axis is not None:
                    jel.set("axis", vec(mj.axis))
                aux.append(mj)
            _record_qpos(qpos, model, k, j, np.asarray(partition.q_ref)[model.q_slice(k)],
                         pin.SE3.Identity())
            _site(body, f"{name}.b", pin.SE3.Identity())
            _site(ec, f"{name}.c", B)
            etree.SubElement(eq, "weld", name=name, site1=f"{name}.b", site2=f"{name}.c")
    return aux, length


def mjcf_body(name: str) -> str:
    """The MJCF name of a record body: its own, except ``world`` (MuJoCo reserves it for its
    world body; an imported record may hold a fixed body of that name), which is written as
    ``world.record``."""
    return "world.record" if name == "world" else name


def _couplings(model: CompiledModel, root: etree._Element, tree_joints: list[MjJoint]) -> None:
    """Linear couplings → ``<equality><joint>``: ``c₁q₁ + c₂q₂ + offset = 0`` is
    ``q₁ = −offset/c₁ − (c₂/c₁) q₂`` (``polycoef``; the exported joints have ``ref`` 0, so
    qpos0 = 0); a one-term coupling holds q₁ at ``−offset/c₁``.

    Raises:
        CompileError: a coupling of more than two joints (a MuJoCo joint equality relates
            two), or one on a joint that is not a 1-dof tree joint.
    """
    if not model.record.couplings:
        return
    names = {mj.name for mj in tree_joints if mj.type in ("hinge", "slide")}
    eq = etree.SubElement(root, "equality")
    for c in model.record.couplings:
        if len(c.terms) > 2:
            raise CompileError(f"{model.record.source}: MJCF export: coupling '{c.name}' "
                               f"relates {len(c.terms)} joints; a MuJoCo joint equality "
                               "relates at most two")
        for n, _ in c.terms:
            if n not in names:
                raise CompileError(f"{model.record.source}: MJCF export: coupling '{c.name}' "
                                   f"involves '{n}', which is not a 1-dof tree joint")
        (j1, c1), *rest = c.terms
        poly = [-c.offset / c1, 0.0, 0.0, 0.0, 0.0]
        el = etree.SubElement(eq, "joint", name=c.name, joint1=j1)
        if rest:
            (j2, c2), = rest
            el.set("joint2", j2)
            poly[1] = -c2 / c1
        el.set("polycoef", vec(poly))


def _motors(model: CompiledModel, root: etree._Element, tree_joints: list[MjJoint]) -> None:
    """One ``motor`` per actuator at its port, gear 1 (ctrl = port effort); a tendon port
    is a ``<tendon><fixed>`` with the port's coefficients, driven by a motor on the tendon."""
    if not model.record.actuators:
        return
    names = {mj.name for mj in tree_joints}
    tendons = [a for a in model.record.actuators if a.terms]
    if tendons:
        ten = etree.SubElement(root, "tendon")
        for a in tendons:
            fixed = etree.SubElement(ten, "fixed", name=a.name)
            for n, coef in a.terms:
                etree.SubElement(fixed, "joint", joint=n, coef=fmt(coef))
    act = etree.SubElement(root, "actuator")
    for a in model.record.actuators:
        for n, _ in a.port_terms:
            if n not in names:
                raise CompileError(f"{model.record.source}: MJCF export: actuator '{a.name}' "
                                   f"drives '{n}', which is not a 1-dof tree joint")
        port = {"tendon": a.name} if a.terms else {"joint": str(a.joint)}
        el = etree.SubElement(act, "motor", name=a.name, **port, gear="1")
        if a.effort_limits is not None:
            el.set("ctrllimited", "true")
            el.set("ctrlrange", vec(a.effort_limits))


def write_mjcf(model: CompiledModel, partition: Partition, path: str | Path,
               timestep: float = DEFAULT_TIMESTEP) -> MjcfExport:
    """Export and write atomically (temporary file in the target directory, then rename).

    Raises:
        CompileError: as :func:`export_mjcf`; nothing is written then.
    """
    out = export_mjcf(model, partition, timestep)
    path = Path(path)
    atomic_write_text(path, out.to_string())
    return out


def write_mjcf_from_bundle(bundle: str | Path, path: str | Path,
                           timestep: float = DEFAULT_TIMESTEP) -> MjcfExport:
    """``rbc compile --mjcf``: export the ``default`` partition of a bundle (atomically).

    Raises:
        BundleError: unreadable bundle; CompileError: as :func:`export_mjcf`.
    """
    model = CompiledModel.from_bundle(bundle)
    part = model.partitions.get("default") or next(iter(model.partitions.values()))
    return write_mjcf(model, part, path, timestep)

"""MJCF export of a compiled model: the spanning tree as nested bodies, the cut joints as
equality constraints, and a keyframe ``assembled`` at the partition's reference
configuration (DESIGN.md §1, §8; docs/export.md).

Mapping (sources: MuJoCo XML reference, https://mujoco.readthedocs.io/en/stable/XMLreference.html):

* **Bodies** keep the record's body frame: a tree edge k = (up, down) (reversed edges use
  :func:`rbc.model.tree.tree_joint`: swapped frames, negated axis) gives body ``down``
  ``pos/quat = A·B⁻¹`` in its parent (the pose at q = 0) and the joints sit at ``B``'s
  origin with axes ``R_B·a`` in the body frame, so ``T_up_down(q) = A·Q(q)·B⁻¹`` exactly.
  Bodies are nested in the forest's depth-first order. ``<inertial pos=COM quat mass
  diaginertia>`` in principal axes (so semi-definite tensors — slender rods, point masses —
  are written exactly) with ``<compiler inertiafromgeom="false">`` (geoms add no mass).
* **Massless intermediate bodies** (mass and inertia zero, one tree child, 1-dof-type joints
  on both sides, nothing attached: no cut joint, site, task, support, spring or geometry)
  are merged into their child: the child's MuJoCo body carries the joints of the whole chain,
  each at its own pose in the child's frame (MuJoCo composes a body's joints in order, each
  about its own anchor and axis in the moving frame:
  ``A₁Q₁B₁⁻¹A₂Q₂B₂⁻¹ = (A₁B₁⁻¹A₂B₂⁻¹)·(C₁Q₁C₁⁻¹)·(B₂Q₂B₂⁻¹)`` with ``C₁ = B₂A₂⁻¹B₁``). Exact:
  same coordinates, same mass matrix. Two revolute axes through a massless cross become a
  universal pair in one body. Three plain concurrent revolutes (a gimbal) become one
  ``ball`` joint about their common point, and a massless leaf chain closed by a cut joint
  into a ball becomes one ``connect`` (:mod:`rbc.backends.mjcf_equivalents`): no gimbal
  lock in MuJoCo. :meth:`MjcfExport.qpos_of` and :meth:`MjcfExport.velocity_map` map rbc
  configurations and speeds to MuJoCo's.
* **Inertia floor.** MuJoCo refuses a moving body (a body with joints, together with the
  jointless bodies welded to it) whose mass or a principal moment is below its mjMINVAL.
  Such a composite gets the smallest addition that passes with margin: mass up to
  ``m_min = INERTIA_FLOOR_RATIO × max(total mass, 1 kg)`` and principal moments up to
  ``m_min·L²`` (L: the partition's length scale), added to the jointed body;
  :attr:`MjcfExport.added` lists it and the readback reports its effect on M_T.
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
* **Couplings** → ``<equality><joint>`` (two joints at most; ``polycoef`` linear, or a
  polynomial ``q₁ = h(q₂)`` of degree ≤ 4; table profiles are refused).
* **Distance ports** → ``<tendon><spatial>`` through two sites at the attachment points.
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
  cylindrical, planar; any        with the cut joint's own MuJoCo joints, ``weld``
  driven cut (:func:`direct_cut`)  of its frame to site Jc (a motor acts there)
  ==============================  ==============================================  ====  ====

  The revolute pair has one redundant row (along the axis); MuJoCo's regularized
  constraint solver handles it. ``L`` is the partition's length scale.
  **Split body.** The auxiliary body's frame is Jc when the loop is closed, so it is rigidly
  attached to c there: c's own inertia is split between c and its auxiliary bodies
  (``SPLIT_SHARE`` each), which is exact on the closure manifold (same reduced inertia) and
  gives the weld two comparable bodies — MuJoCo scales a constraint's regularization with
  the inverse weight of the bodies it touches, so a near-massless auxiliary body let such a
  loop drift open. A cut joint whose child is welded to the world (or massless) gets the
  inertia floor instead.
* **Deep trees.** MuJoCo's XML parser refuses elements nested deeper than its limit
  (496 bodies with MuJoCo 4.0), libxml2 (rbc's own readers) deeper than 256 elements, and
  MJCF nests each body in its parent. When a body would
  nest :data:`REROOT_DEPTH` deep or more and its tree joint can be written as an equality
  exactly — revolute, spherical or fixed; no port, coupling, armature, damping, friction,
  spring or finite limit (those live on MuJoCo joints); no merged massless body or gimbal
  on it — the body is **re-rooted**: written under the world body with a ``free`` joint
  (``<body>.root``), and its tree joint becomes the equality of a cut joint of that type
  (sites at the joint frames; a revolute is two ``connect``, a spherical one, a fixed a
  ``weld``), named after the joint. Its subtree nests below it again, so depth restarts.
  The re-rooted coordinates are the body's world pose: :meth:`MjcfExport.qpos_of` and
  :meth:`MjcfExport.velocity_map` evaluate them by forward kinematics and the body Jacobian
  of the tree model (``qvel = [ṗ world; ω body]``), so ``Pᵀ M_mj P = M_T`` still holds and
  the readback checks apply unchanged. The re-rooted joint's coordinate has no MuJoCo
  joint; its equality's gap is reported with the loop gaps. When no eligible joint is found
  before MuJoCo's limit the export is refused with MuJoCo's message (a long chain of ports).
* **Names** are unique per MuJoCo namespace (bodies, joints, sites, equalities, geoms,
  actuators; the world body is ``world``): a clash — a record body called ``world``, a
  coordinate name equal to another joint's, a generated ``<cut>.cut`` equal to a record
  body — gets ``~1``, ``~2``, … appended; :class:`MjcfExport` holds the maps.
* **solref** = ``(2·timestep, 1)``: MuJoCo's stiffest stable time constant (it clamps
  timeconst below 2·timestep) and critical damping. MuJoCo's reference acceleration is
  divided by the constraint's effective mass, so the rule is mass-scale free.
  ``solimp = (0.9999, 0.9999, 0.001)``: the impedance at MuJoCo's maximum, so the
  regularization ``R = (1 − d)/d · Â`` is 1e-4 of the constraint's inverse weight Â; light
  links between heavy bodies (a 6 g rod of a leg) otherwise let loops open under load
  (digit_like, passive under gravity, 1000 steps: 5.5e-4 m with (0.99, 0.999), 6.2e-5 m).
* **Keyframe** ``assembled``: qpos = the partition's ``q_ref`` in MuJoCo order.
* **Geometry**: record geometry → geoms in group 1 with ``contype = conaffinity = 0``
  (closed chains overlap at their joints); meshes are skipped.
* **Supports and floor** (docs/supports.md, "Plants"): one contact geom per support: a
  point → a sphere of its ``radius`` (:data:`POINT_CONTACT_RADIUS` if 0) centred on the
  support point, a surface → a box of its ``half_extents`` and 1 mm thickness under the sole
  plane. Support geoms collide with the floor only (``contype 1, conaffinity 0`` against
  the floor's ``0, 1``), carry ``priority 1`` so their friction ``μ`` (sliding;
  torsional/rolling at MuJoCo's defaults) is the pair's, ``condim 3``, and the support's
  ``solref`` or :data:`CONTACT_SOLREF`; ``solimp`` :data:`CONTACT_SOLIMP`. With a ``floor``
  height (by default when the record has a floating body and supports: the lowest contact
  point of the supports at the keyframe) a ground plane ``floor`` (normal opposite to
  gravity) and ``<option cone="elliptic" impratio=IMPRATIO>``.

Cost: one pass over bodies, joints and cut joints (no Pinocchio data, whose dense matrices
grow with the square of the joint count).
"""

from __future__ import annotations

import math
import weakref
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pinocchio as pin
from lxml import etree

from rbc.backends.mjcf_equivalents import cut_balls, driven, gimbal_axes, merged_bodies
from rbc.errors import CompileError
from rbc.ir import spatial as sp
from rbc.ir.atomic import atomic_write_text
from rbc.ir.joints import joint_kind
from rbc.ir.record import Joint, coordinate_names
from rbc.model.compiled import CompiledModel, Partition
from rbc.model.kinematics import body_poses, frame_jacobian
from rbc.model.tree import build_tree, inertia_tensor, tree_joint

#: Default integration step [s] written to ``<option timestep>``.
DEFAULT_TIMESTEP = 1e-3
#: Thickness [m] of a support box (records give a 2-D patch).
SUPPORT_HALF_THICKNESS = 5e-4
#: The inertia floor (module docstring) as a fraction of the total mass: MuJoCo's absolute
#: threshold is mjMINVAL = 1e-15 (kg, kg·m²); 1e-9 of the mass (times L² for moments) is
#: above it for any robot from grams up and changes M_T by ~1e-9 relative.
INERTIA_FLOOR_RATIO = 1e-9
#: Absolute lower bound of the floor: 1000 × mjMINVAL.
INERTIA_FLOOR_MIN = 1e-12
#: Share of a cut joint's child inertia given to each of its auxiliary (split) bodies.
SPLIT_SHARE = 0.5
SOLIMP = (0.9999, 0.9999, 0.001)
#: Support contact defaults (module docstring): solref (time constant 5 ms — 5 steps at
#: 1 kHz, above MuJoCo's 2·timestep floor — critically damped) keeps a 15 kg quadruped's
#: static penetration at about a millimetre; solimp as MuJoCo's stiff end.
CONTACT_SOLREF = (0.005, 1.0)
CONTACT_SOLIMP = (0.99, 0.999, 0.001)
CONTACT_CONDIM = 3
#: Ratio of frictional to normal impedance for elliptic cones: > 1 makes sticking stiffer
#: (MuJoCo XML reference, ``option/impratio``); Menagerie's Go2 uses 100.
IMPRATIO = 10.0
#: Sphere radius [m] of a point support with ``radius: 0``.
POINT_CONTACT_RADIUS = 0.005
#: Cut-joint types exported as equality constraints between the two bodies themselves;
#: every other cut type goes through an auxiliary split body (module docstring).
DIRECT_CUT_TYPES = ("spherical", "fixed", "revolute")
#: A body at this nesting depth or deeper is re-rooted when its tree joint allows it
#: (module docstring, "Deep trees"): MuJoCo 4.0's XML parser refuses more than 496 nested
#: bodies, and libxml2 (rbc's own MJCF readers: readback, import) elements nested deeper
#: than 256 (≈ 253 bodies); 200 leaves ~50 levels to find an eligible joint.
REROOT_DEPTH = 200
_NAMESPACES = ("body", "joint", "site", "equality", "geom", "actuator", "tendon")


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
        name: MuJoCo joint name (the rbc coordinate name, ball/free: the edge name; made
            unique by the export, see :attr:`MjcfExport.joint_name`).
        type: ``hinge | slide | ball | free``.
        axis: (3,) unit axis in the joint frame Jc (hinge/slide), else None.
        edge: rbc edge index; coord: index within the edge's limited coordinates (or −1).
        frame: the pose of the joint frame Jc in the MuJoCo body that carries the joint
            (``B`` for a body's own joint; ``C`` for a joint merged from a massless body; a
            gimbal ball: its centre).
        group: for a ball that replaces a gimbal of three revolute tree edges: those edges
            (root side first) and ``axes`` (3, 3), their unit axes as rows in the body frame
            at q = 0 (``R = Rot(u₁, θ₁)·Rot(u₂, θ₂)·Rot(u₃, θ₃)``); else ``()`` and None.
        root: the free joint of a re-rooted body (module docstring, "Deep trees"); ``edge``
            is then the re-rooted tree edge, whose coordinates it does not hold.
    """

    name: str
    type: str
    axis: np.ndarray | None
    edge: int
    coord: int
    frame: pin.SE3 = field(default_factory=pin.SE3.Identity, compare=False)
    group: tuple[int, ...] = ()
    axes: np.ndarray | None = field(default=None, compare=False)
    root: bool = False


def mj_joints(model: CompiledModel, k: int, joint: Joint) -> list[MjJoint]:
    """The MuJoCo joints of edge k (record joint ``joint``, possibly reversed), with the
    names rbc wants (coordinate names) and identity frames.

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


def gimbal_angles(model: CompiledModel, mj: MjJoint, q: np.ndarray) -> np.ndarray:
    """(3,) the angles [rad] of the three revolutes a gimbal ball ``mj`` replaced, from q."""
    return np.array([float(q[model.q_slice(e)][0]) for e in mj.group])


def gimbal_map(mj: MjJoint, th: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(R, J)`` of a gimbal ball at angles th (3,): its rotation ``R = exp(u₁θ₁) exp(u₂θ₂)
    exp(u₃θ₃)`` (3, 3) and the body-frame angular-velocity columns
    ``J = [R₃ᵀR₂ᵀu₁, R₃ᵀu₂, u₃]`` (3, 3), ``ω = J θ̇``."""
    Rs = [sp.exp3(u * float(t)) for u, t in zip(mj.axes, th, strict=True)]
    J = np.column_stack([Rs[2].T @ Rs[1].T @ mj.axes[0], Rs[2].T @ mj.axes[1], mj.axes[2]])
    return Rs[0] @ Rs[1] @ Rs[2], J


@dataclass(frozen=True, eq=False)
class MjcfExport:
    """The exported document and the maps needed to read it back.

    Attributes:
        tree: the MJCF document.
        tree_joints: MuJoCo joints of the tree edges, in MuJoCo order (final names).
        aux_joints: MuJoCo joints of split-body cut joints, in MuJoCo order.
        qpos: keyframe qpos (MuJoCo order).
        length: the revolute-cut anchor spacing L [m].
        body_names: record body index → MuJoCo body name (merged bodies absent).
        merged: record body indices merged into their child's MuJoCo body.
        added: record body index → ``pin.Inertia`` (body frame) the export added to it (the
            inertia floor; for an auxiliary body, its floor moved to the cut joint's child,
            where it sits when the loop is closed).
        inertials: MuJoCo body name → the ``pin.Inertia`` written for it (its own frame).
        split: cut joint name → auxiliary body name, for split-body cuts.
        renamed: ``(namespace, wanted, written)`` for every name made unique.
        order: every MuJoCo joint in MuJoCo's order (document order; qpos and dof order).
        dropped: record bodies left out (massless leaf chains replaced by a ``connect``).
        balls: cut joint names exported as one ``connect`` at a concurrency point.
        roots: the free joints of re-rooted bodies (module docstring, "Deep trees").
        support_geoms: support name → the MuJoCo name of its contact geom.
        floor: height [m] of the ground plane along −gravity (None: no floor).
    """

    tree: etree._ElementTree
    tree_joints: tuple[MjJoint, ...]
    aux_joints: tuple[MjJoint, ...]
    qpos: np.ndarray
    length: float
    body_names: dict[int, str] = field(default_factory=dict)
    merged: frozenset[int] = frozenset()
    added: dict[int, pin.Inertia] = field(default_factory=dict)
    inertials: dict[str, pin.Inertia] = field(default_factory=dict)
    split: dict[str, str] = field(default_factory=dict)
    renamed: tuple[tuple[str, str, str], ...] = ()
    order: tuple[MjJoint, ...] = ()
    dropped: frozenset[int] = frozenset()
    balls: tuple[str, ...] = ()
    roots: tuple[MjJoint, ...] = ()
    support_geoms: dict[str, str] = field(default_factory=dict)
    floor: float | None = None

    def qpos_of(self, model: CompiledModel, q: np.ndarray) -> np.ndarray:
        """MuJoCo qpos (m.nq,) of an rbc configuration q (nq,), joint by joint in
        :attr:`order` (dropped joints have none)."""
        out, done = [], set()
        poses = _RootPoses(model, q) if self.roots else None
        for mj in self.order:
            if mj.root:  # the world pose of the re-rooted body
                T = poses.pose(mj.edge)
                out.append(np.concatenate([T.translation, sp.quat_from_rotation(T.rotation)]))
            elif mj.group:
                out.append(sp.quat_from_rotation(gimbal_map(mj, gimbal_angles(model, mj, q))[0]))
            elif mj.edge not in done:
                done.add(mj.edge)
                j, B = edge_joint(model, mj.edge)
                out.append(mj_qpos(j, np.asarray(q)[model.q_slice(mj.edge)], B))
        return np.concatenate(out) if out else np.zeros(0)

    def velocity_map(self, model: CompiledModel, q: np.ndarray) -> np.ndarray:
        """``P`` (m.nv, nv) with ``qvel = P v`` at rbc configuration q: per joint
        :func:`velocity_block`; a gimbal ball's local angular velocity is
        ``R₃ᵀR₂ᵀu₁ θ̇₁ + R₃ᵀu₂ θ̇₂ + u₃ θ̇₃``."""
        blocks, done = [], set()
        poses = _RootPoses(model, q) if self.roots else None
        for mj in self.order:
            if mj.root:  # [ṗ world; ω body] of the re-rooted body
                blocks.append([(0, poses.velocity(mj.edge))])
            elif mj.group:
                cols = gimbal_map(mj, gimbal_angles(model, mj, q))[1]
                blocks.append([(model.v_slice(e).start, cols[:, [n]])
                               for n, e in enumerate(mj.group)])
            elif mj.edge not in done:
                done.add(mj.edge)
                j, B = edge_joint(model, mj.edge)
                blocks.append([(model.v_slice(mj.edge).start,
                                velocity_block(j, np.asarray(q)[model.q_slice(mj.edge)], B))])
        rows = sum(b[0][1].shape[0] for b in blocks)
        P = np.zeros((rows, model.nv))
        r = 0
        for parts in blocks:
            n = parts[0][1].shape[0]
            for c, block in parts:
                P[r: r + n, c: c + block.shape[1]] = block
            r += n
        return P

    def to_string(self) -> str:
        """The XML text."""
        return etree.tostring(self.tree, pretty_print=True, encoding="unicode")

    def notes(self) -> list[str]:
        """One line per change the export made for MuJoCo (merged bodies, the inertia
        floor, renamed names), for the user."""
        out = []
        if self.merged:
            out.append(f"{len(self.merged)} massless intermediate bodies merged into their "
                       "child (exact: the child carries their joints)")
        gimbals = [mj.name for mj in self.order if mj.group]
        if gimbals:
            out.append(f"{len(gimbals)} gimbals of three concurrent revolutes exported as ball "
                       f"joints: {', '.join(gimbals)}")
        if self.balls:
            out.append(f"{len(self.balls)} cut joints closing massless revolute chains "
                       f"exported as one ball (connect): {', '.join(self.balls)}")
        if self.added:
            mass = sum(float(a.mass) for a in self.added.values())
            out.append(f"inertia floor added to {len(self.added)} bodies below MuJoCo's "
                       f"mass/inertia minimum (total {mass:.3g} kg; `rbc verify --mjcf` "
                       "reports the effect on M_T)")
        if self.roots:
            names = [mj.name.removesuffix(".root") for mj in self.roots]
            out.append(f"{len(names)} bodies nested deeper than MuJoCo's XML parser allows "
                       "re-rooted on the world (free joint; their tree joint written as an "
                       "equality): " + ", ".join(names[:6]) + (" …" if len(names) > 6 else ""))
        out += [f"{ns} '{a}' written as '{b}' (name taken)" for ns, a, b in self.renamed]
        return out

    def joint_name(self, edge: int, coord: int = 0) -> str:
        """The MuJoCo name of coordinate ``coord`` of edge ``edge`` (tree or auxiliary)."""
        for mj in (*self.tree_joints, *self.aux_joints):
            if mj.edge == edge and (mj.coord == coord or mj.coord < 0):
                return mj.name
        raise KeyError(f"edge {edge} has no MuJoCo joint")


def mjcf_body(name: str) -> str:
    """The MJCF name a record body asks for: its own, except ``world`` (MuJoCo reserves it
    for its world body; an imported record may hold a fixed body of that name), asked for as
    ``world.record``. The export then makes every name unique (:attr:`MjcfExport.body_names`
    holds what was written)."""
    return "world.record" if name == "world" else name


#: :func:`edge_joint` per model and edge (a pure function of both; the readback of a
#: MuJoCo plant calls it for every joint of every map, 51 000 times in 40 control steps of
#: the ring of five — a third of its measurement's time).
_EDGE_JOINTS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def edge_joint(model: CompiledModel, k: int) -> tuple[Joint, pin.SE3]:
    """The joint of edge k as exported, and the frame ``B`` its ball/planar/free maps use:
    the tree joint and its child frame, or a split cut's own joint on its auxiliary body
    (cached per model; the SE3 is shared: do not modify it)."""
    cache = _EDGE_JOINTS.get(model)
    if cache is None:
        cache = _EDGE_JOINTS[model] = {}
    hit = cache.get(k)
    if hit is None:
        if k in model.chord_edges:
            hit = (model.edge_joints[k], pin.SE3.Identity())
        else:
            j = tree_joint(model, k)
            hit = (j, sp.se3_from_pose(j.child_frame))
        cache[k] = hit
    return hit


class _Names:
    """Unique names per MuJoCo namespace (module docstring, "Names")."""

    def __init__(self) -> None:
        self.used: dict[str, set[str]] = {ns: set() for ns in _NAMESPACES}
        self.used["body"].add("world")
        self.renamed: list[tuple[str, str, str]] = []

    def take(self, ns: str, wanted: str) -> str:
        name, n = wanted, 0
        while name in self.used[ns]:
            n += 1
            name = f"{wanted}~{n}"
        self.used[ns].add(name)
        if name != wanted:
            self.renamed.append((ns, wanted, name))
        return name


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


def _up_down(model: CompiledModel, k: int) -> tuple[int, int]:
    return ((int(model.parent[k]), int(model.child[k])) if model.sign[k] > 0
            else (int(model.child[k]), int(model.parent[k])))


def _zero_pose(j: Joint) -> pin.SE3:
    """``A·B⁻¹``: the child's pose in the parent at q = 0."""
    return sp.se3_from_pose(j.parent_frame) * sp.se3_from_pose(j.child_frame).inverse()


def _record_inertia(model: CompiledModel, v: int) -> pin.Inertia:
    b = model.record.bodies[v]
    return pin.Inertia(b.mass, np.asarray(b.com, dtype=float), inertia_tensor(b.inertia))


# ------------------------------------------------------------------ planning
def _chain(model: CompiledModel, k: int, merged: frozenset[int]) -> list[int]:
    """Tree edges whose joints the MuJoCo body of edge k's down vertex carries: k and the
    parent edges of its merged ancestors, root side first."""
    chain = [k]
    up = _up_down(model, k)[0]
    while up in merged:
        e = int(model.parent_edge[up])
        chain.insert(0, e)
        up = _up_down(model, e)[0]
    return chain


def _chain_frames(joints: list[Joint]) -> tuple[pin.SE3, list[pin.SE3]]:
    """Offset of the chain's last body in the first parent at q = 0, and per joint the pose
    ``C_i = (X_{i+1}(0)⋯X_n(0))⁻¹·B_i`` of its frame Jc in that body (module docstring)."""
    after = pin.SE3.Identity()
    frames: list[pin.SE3] = []
    for j in reversed(joints):
        frames.insert(0, after.inverse() * sp.se3_from_pose(j.child_frame))
        after = _zero_pose(j) * after
    return after, frames


def _floor(model: CompiledModel, length: float) -> tuple[float, float]:
    """(m_min [kg], i_min [kg·m²]) of the inertia floor."""
    total = sum(b.mass for b in model.record.bodies if b.kind != "fixed")
    m_min = max(INERTIA_FLOOR_RATIO * max(total, 1.0), INERTIA_FLOOR_MIN)
    return m_min, max(m_min * length ** 2, INERTIA_FLOOR_MIN)


def floor_addition(composite: pin.Inertia, m_min: float, i_min: float) -> pin.Inertia:
    """The smallest addition (in the composite's frame) that brings a composite's mass to
    ``m_min`` and each principal moment about its COM to ``i_min``: mass at the COM, then
    rotational inertia along the deficient principal axes. Zero when nothing is missing."""
    c = np.array(composite.lever)
    dm = max(0.0, m_min - composite.mass)
    total = composite + pin.Inertia(dm, c, np.zeros((3, 3)))
    lam, V = np.linalg.eigh(np.array(total.inertia))
    dI = V @ np.diag(np.maximum(0.0, i_min - lam)) @ V.T
    return pin.Inertia(dm, c, 0.5 * (dI + dI.T))


# ------------------------------------------------------------------ writer
@dataclass
class _Writer:
    """Per-export state: the document's bodies, the name registry and the maps being built.

    ``own``: the inertia each record body's MuJoCo body carries (a split-body cut's child
    keeps ``1/(n+1)`` of its own, n its auxiliary bodies); ``aux``: per split cut edge its
    auxiliary body (name, element, inertia in its frame)."""

    model: CompiledModel
    partition: Partition
    timestep: float
    merged: frozenset[int]
    own: dict[int, pin.Inertia]
    balls: dict  # chord edge → rbc.backends.mjcf_equivalents.CutBall
    dropped: frozenset[int]
    names: _Names = field(default_factory=_Names)
    elements: dict[int, etree._Element] = field(default_factory=dict)
    body_names: dict[int, str] = field(default_factory=dict)
    aux: dict[int, tuple[str, etree._Element, pin.Inertia]] = field(default_factory=dict)
    tree_joints: list[MjJoint] = field(default_factory=list)
    aux_joints: list[MjJoint] = field(default_factory=list)
    jointed: set[int] = field(default_factory=set)  # record bodies whose MuJoCo body has joints
    added: dict[int, pin.Inertia] = field(default_factory=dict)
    inertials: dict[str, pin.Inertia] = field(default_factory=dict)
    one_dof: dict[int, str] = field(default_factory=dict)  # edge → its MuJoCo hinge/slide
    depth: dict[int, int] = field(default_factory=dict)  # vertex → body nesting (world 0)
    roots: list[MjJoint] = field(default_factory=list)
    condim: int = CONTACT_CONDIM  # of the support geoms and the floor
    support_geoms: dict[str, str] = field(default_factory=dict)  # support → its geom


def direct_cut(model: CompiledModel, k: int) -> bool:
    """Cut edge k is exported as equalities between its two bodies (spherical, fixed or
    revolute, not driven); a driven cut joint (an actuator's port reads it: a loop of only
    actuated joints, or ``cut: required``) goes through an auxiliary body carrying its own
    MuJoCo joint, where the motor acts — the joint's effort as the equivalent wrench pair."""
    return model.edge_types[k] in DIRECT_CUT_TYPES and not driven(model, k)


def split_counts(model: CompiledModel) -> dict[int, int]:
    """Per body: the number of split-body cut joints whose child it is (moving, massive)."""
    out: dict[int, int] = {}
    for k in model.chord_edges:
        c = int(model.child[k])
        if (not direct_cut(model, k) and c < model.n_bodies
                and model.record.bodies[c].kind != "fixed" and model.record.bodies[c].mass > 0):
            out[c] = out.get(c, 0) + 1
    return out


def _scaled(inertia: pin.Inertia, s: float) -> pin.Inertia:
    return pin.Inertia(s * inertia.mass, np.array(inertia.lever), s * np.array(inertia.inertia))


def export_mjcf(model: CompiledModel, partition: Partition,
                timestep: float = DEFAULT_TIMESTEP, floor: float | str | None = "auto",
                contact_condim: int = CONTACT_CONDIM) -> MjcfExport:
    """Build the MJCF document of a compiled model (pure; see the module docstring).

    Args:
        model: compiled model (from a bundle).
        partition: the partition whose ``q_ref`` (assembled) becomes the keyframe and whose
            ``length_scale`` spaces the revolute-cut anchors and scales the inertia floor.
        timestep: ``<option timestep>`` [s]; also sets solref (2·timestep, 1).
        floor: height [m] of the ground plane along −gravity, None for none, ``"auto"``:
            the lowest support contact at the keyframe when the record has a floating body
            and supports (:func:`support_contact_level`), else none.
        contact_condim: MuJoCo ``condim`` of the support geoms and the floor: 3 (sliding
            friction, the default), 4 (and torsional), 6 (and rolling).

    Returns:
        :class:`MjcfExport`.

    Raises:
        CompileError: a joint with no MuJoCo counterpart (helical; free not at a root), an
            actuator whose port is not a tree joint, a helical cut joint, or rolling wheels
            (MuJoCo's contacts slip).
    """
    from rbc.model.rolling import refuse_rolling

    refuse_rolling(model, "the MJCF export")
    rec = model.record
    counts = split_counts(model)
    own = {v: _scaled(_record_inertia(model, v), 1.0 / (counts.get(v, 0) + 1))
           for v in range(model.n_bodies)}
    length = float(partition.length_scale)
    balls = cut_balls(model, np.asarray(partition.q_ref, dtype=float), length)
    dropped = frozenset(v for b in balls.values() for v in b.bodies)
    if contact_condim not in (1, 3, 4, 6):
        raise CompileError(f"MJCF export: contact condim {contact_condim} is not one of MuJoCo's "
                           "1, 3, 4, 6")
    w = _Writer(model, partition, timestep, merged_bodies(model, dropped), own, balls, dropped,
                condim=contact_condim)
    root = etree.Element("mujoco", model=rec.name)
    etree.SubElement(root, "compiler", angle="radian", inertiafromgeom="false",
                     autolimits="true", boundmass="0", boundinertia="0")
    opt = etree.SubElement(root, "option", timestep=fmt(timestep), gravity=vec(rec.gravity))
    if floor == "auto":
        floating = any(b.kind == "floating" for b in rec.bodies)
        floor = (support_contact_level(model, np.asarray(partition.q_ref, dtype=float))
                 if floating and rec.supports else None)
    dflt = etree.SubElement(etree.SubElement(root, "default"), "equality")
    dflt.set("solref", f"{fmt(2.0 * timestep)} 1")
    dflt.set("solimp", vec(SOLIMP))
    world = etree.SubElement(root, "worldbody")
    w.elements[model.n_bodies] = world
    _tree_bodies(w)
    if floor is not None:
        _ground(w, opt, world, np.asarray(rec.gravity, dtype=float), float(floor))
    for v in range(model.n_bodies):
        if v not in w.elements and v not in w.merged and v not in dropped:
            raise CompileError(f"{rec.source}: MJCF export: body '{rec.bodies[v].name}' is "
                               "not in the spanning tree")
    eq = etree.SubElement(root, "equality")
    _cuts(w, eq, counts)
    _couplings(w, eq)
    _root_equalities(w, eq)
    _inertials(w)
    _motors(w, root)
    # MuJoCo numbers joints in document (pre-)order, auxiliary cut bodies included
    by_name = {mj.name: mj for mj in (*w.tree_joints, *w.aux_joints, *w.roots)}
    order = tuple(by_name[el.get("name")] for el in world.iter("joint"))
    exp = MjcfExport(etree.ElementTree(root), tuple(w.tree_joints), tuple(w.aux_joints),
                     np.zeros(0), length, dict(w.body_names), w.merged, dict(w.added),
                     dict(w.inertials), {model.edge_names[k]: a[0] for k, a in w.aux.items()},
                     tuple(w.names.renamed), order, dropped,
                     tuple(model.edge_names[k] for k in balls), tuple(w.roots),
                     dict(w.support_geoms), None if floor is None else float(floor))
    qv = exp.qpos_of(model, np.asarray(partition.q_ref, dtype=float))
    key = etree.SubElement(etree.SubElement(root, "keyframe"), "key", name="assembled")
    key.set("qpos", vec(qv))
    object.__setattr__(exp, "qpos", qv)  # frozen: the keyframe is known only now
    return exp


def _tree_bodies(w: _Writer) -> None:
    """Nested bodies with their joints, geometry and keyframe values (tree edges in
    depth-first order; merged massless bodies contribute joints to their child's body)."""
    m, rec = w.model, w.model.record
    tm = build_tree(m)
    pm = tm.model
    damping = {j.name: j.damping for j in rec.joints}
    friction = {j.name: j.friction for j in rec.joints}
    for a in rec.actuators:  # drive friction: joint ports only (schema)
        if a.joint is not None:
            damping[a.joint] = damping.get(a.joint, 0.0) + a.viscous
            friction[a.joint] = friction.get(a.joint, 0.0) + a.coulomb
    w.depth[m.n_bodies] = 0
    for k in m.tree_edges:
        down = _up_down(m, k)[1]
        if down in w.merged or down in w.dropped:
            continue
        chain = _chain(m, k, w.merged)
        joints = [tree_joint(m, e) for e in chain]
        offset, frames = _chain_frames(joints)
        host = _up_down(m, chain[0])[0]
        reroot = w.depth[host] + 1 >= REROOT_DEPTH and _reroots(w, chain)
        name = w.names.take("body", mjcf_body(rec.bodies[down].name))
        if mjcf_body(rec.bodies[down].name) != rec.bodies[down].name and name == "world.record":
            w.names.renamed.append(("body", "world", name))
        el = etree.SubElement(w.elements[m.n_bodies if reroot else host], "body", name=name)
        _pose_attrs(el, offset)  # (a re-rooted body's pose comes from its free joint)
        w.elements[down], w.body_names[down] = el, name
        w.depth[down] = 1 if reroot else w.depth[host] + 1
        if reroot:  # module docstring, "Deep trees"
            mj = MjJoint(w.names.take("joint", f"{name}.root"), "free", None, k, -1, root=True)
            etree.SubElement(el, "joint", name=mj.name, type="free")
            w.roots.append(mj)
            w.jointed.add(down)
            _geoms(w, down, el)
            continue
        gimbal = gimbal_axes(m, chain, joints, frames, float(w.partition.length_scale))
        if gimbal is not None:  # three plain concurrent revolutes: one ball about the centre
            mj = MjJoint(w.names.take("joint", f"{m.edge_names[chain[0]]}.ball"), "ball",
                         None, chain[0], -1, pin.SE3(np.eye(3), gimbal[0]), tuple(chain),
                         gimbal[1])
            _joint_element(el, mj, joints[0], 3, {}, {})
            w.tree_joints.append(mj)
            w.jointed.add(down)
        else:
            for e, j, C in zip(chain, joints, frames, strict=True):
                idx = pm.joints[int(tm.edge_joint[e])].idx_v if tm.edge_joint[e] >= 0 else 0
                arm = pm.armature[idx: idx + m.kinds[e].nv]
                mjs = [MjJoint(w.names.take("joint", mj.name), mj.type, mj.axis, e, mj.coord, C)
                       for mj in mj_joints(m, e, j)]
                for n, mj in enumerate(mjs):
                    jel = _joint_element(el, mj, j, m.kinds[e].nv, damping, friction)
                    if mj.type != "free":
                        jel.set("armature", fmt(arm[n] if mj.axis is not None else arm[0]))
                    w.jointed.add(down)
                w.tree_joints += mjs
        _geoms(w, down, el)
        _support_geoms(w, down, el)


def _joint_element(body: etree._Element, mj: MjJoint, j: Joint, nv: int, damping: dict,
                   friction: dict) -> etree._Element:
    """A ``<joint>`` at its frame in the body, with the joint's passive data."""
    jel = etree.SubElement(body, "joint", name=mj.name, type=mj.type)
    if mj.type != "free":
        jel.set("pos", vec(mj.frame.translation))
    if mj.axis is not None:
        jel.set("axis", vec(mj.frame.rotation @ mj.axis))
    if damping.get(j.name):
        jel.set("damping", fmt(damping[j.name]))
    if friction.get(j.name):
        jel.set("frictionloss", fmt(friction[j.name]))
    if j.spring.stiffness and nv == 1:
        jel.set("stiffness", fmt(j.spring.stiffness))
        jel.set("springref", fmt(j.spring.rest))
    _set_limits(jel, j, mj.coord)
    return jel


def _reroots(w: _Writer, chain: list[int]) -> bool:
    """Whether the body of tree edge ``chain`` (one edge: no merged massless body) can be
    re-rooted: its joint is written exactly as an equality (module docstring, "Deep
    trees")."""
    m = w.model
    if len(chain) != 1:
        return False
    k = chain[0]
    j = m.edge_joints[k]
    ports = {n for a in m.record.actuators for n, _ in a.port_terms}
    coupled = {n for c in m.record.couplings for n, _ in c.terms}
    passive = (j.armature or j.damping or j.friction or j.spring.stiffness
               or any(np.isfinite(x) for x in (*j.lower, *j.upper)))
    return (j.type in DIRECT_CUT_TYPES and j.name not in ports and j.name not in coupled
            and not passive and _up_down(m, k)[1] not in w.merged)


def _root_equalities(w: _Writer, eq: etree._Element) -> None:
    """The equality of each re-rooted body's tree joint, as for a cut joint of its type."""
    for mj in w.roots:
        _joint_equality(w, eq, mj.edge)


class _RootPoses:
    """World poses and free-joint velocity maps of re-rooted bodies at one rbc configuration:
    the poses from one pass of :func:`rbc.model.kinematics.body_poses` (O(bodies)), each
    velocity map from :func:`~rbc.model.kinematics.frame_jacobian` (O(depth)); no dense
    per-model data."""

    def __init__(self, model: CompiledModel, q: np.ndarray) -> None:
        self.model, self.q = model, np.asarray(q, dtype=float)
        self._poses: list[pin.SE3] | None = None

    def _body(self, k: int) -> int:
        return _up_down(self.model, k)[1]

    def pose(self, k: int) -> pin.SE3:
        """World pose of the down body of tree edge k."""
        if self._poses is None:
            self._poses = body_poses(self.model, self.q)
        return self._poses[self._body(k)]

    def velocity(self, k: int) -> np.ndarray:
        """(6, nv): MuJoCo's free-joint velocity ``[ṗ (world); ω (body axes)]`` of the down
        body of tree edge k."""
        T, J = frame_jacobian(self.model, self.q, self._body(k), pin.SE3.Identity())
        return np.vstack([J[3:], T.rotation.T @ J[:3]])  # J v = [ω; ṗ] in world axes


def _geoms(w: _Writer, v: int, el: etree._Element) -> None:
    """Record geometry of body v (visual, group 1, no contacts)."""
    body = w.model.record.bodies[v]
    for n, g in enumerate(body.geometry):
        params = dict(g.params)
        if g.type == "mesh":
            continue  # mesh files are not resolved by the exporter (docs/export.md)
        gel = etree.SubElement(el, "geom", name=w.names.take("geom", f"{body.name}.geom{n}"),
                               type=g.type, group="1", contype="0", conaffinity="0", mass="0")
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


def contact_depth(support) -> float:
    """Distance [m] from a support's frame origin down to its contact geom's lowest point
    along the support normal (a point: its sphere's radius; a surface: its box thickness)."""
    if support.kind == "surface":
        return 2.0 * SUPPORT_HALF_THICKNESS
    return support.radius or POINT_CONTACT_RADIUS


def support_contact_level(model: CompiledModel, q: np.ndarray,
                          names: tuple[str, ...] | None = None) -> float:
    """Height [m] (along −gravity) of the lowest contact point of the named supports (all
    by default) at q: where a floor touches them."""
    from rbc.model.kinematics import body_poses

    rec = model.record
    up = sp.up_direction(rec.gravity)
    T = body_poses(model, q)
    index = rec.body_index()
    levels = [float(up @ (T[index[s.body]] * sp.se3_from_pose(s.pose)).translation)
              - contact_depth(s) for s in rec.supports if names is None or s.name in names]
    return min(levels) if levels else 0.0


def _support_geoms(w: _Writer, v: int, el: etree._Element) -> None:
    """The contact geoms of the supports on body v (module docstring, "Supports and
    floor")."""
    for s in w.model.record.supports:
        if s.body != w.model.record.bodies[v].name:
            continue
        w.support_geoms[s.name] = w.names.take("geom", s.name)
        common = {"name": w.support_geoms[s.name], "mass": "0", "contype": "1",
                  "conaffinity": "0", "priority": "1", "condim": str(w.condim),
                  "friction": f"{fmt(s.friction)} 0.005 0.0001",
                  "solref": vec(s.solref or CONTACT_SOLREF), "solimp": vec(CONTACT_SOLIMP)}
        T = sp.se3_from_pose(s.pose)
        if s.kind == "point":
            gel = etree.SubElement(el, "geom", type="sphere", size=fmt(contact_depth(s)),
                                   **common)
        else:  # the box's top face is the sole plane
            gel = etree.SubElement(el, "geom", type="box", size=vec(
                [*s.half_extents, SUPPORT_HALF_THICKNESS]), **common)
            T = T * pin.SE3(np.eye(3), np.array([0.0, 0.0, -SUPPORT_HALF_THICKNESS]))
        _pose_attrs(gel, T)


def _ground(w: _Writer, opt: etree._Element, world: etree._Element, gravity: np.ndarray,
            height: float) -> None:
    """The ground plane at ``height`` along −gravity, and elliptic friction cones."""
    opt.set("cone", "elliptic")
    opt.set("impratio", fmt(IMPRATIO))
    up = sp.up_direction(gravity)
    R = sp.rotation_between(np.array([0.0, 0.0, 1.0]), up)  # the plane's normal is its z
    gel = etree.Element("geom", name=w.names.take("geom", "floor"), type="plane",
                        size="0 0 1", contype="0", conaffinity="1",
                        condim=str(w.condim))
    _pose_attrs(gel, pin.SE3(R, height * up))
    world.insert(0, gel)


def _site(w: _Writer, parent: etree._Element, name: str, T: pin.SE3) -> str:
    name = w.names.take("site", name)
    el = etree.SubElement(parent, "site", name=name)
    _pose_attrs(el, T)
    return name


def _equality(w: _Writer, eq: etree._Element, tag: str, name: str, s1: str, s2: str) -> None:
    etree.SubElement(eq, tag, name=w.names.take("equality", name), site1=s1, site2=s2)


def _cuts(w: _Writer, eq: etree._Element, counts: dict[int, int]) -> None:
    """Equality constraints (and auxiliary bodies) for the cut joints (module docstring)."""
    m = w.model
    for k in m.chord_edges:
        name = m.edge_names[k]
        j = m.edge_joints[k]
        b, c = int(m.parent[k]), int(m.child[k])
        A, B = m.A[k], m.B[k]
        if k in w.balls:  # a massless leaf chain and its cut: one ball (mjcf_equivalents)
            ball = w.balls[k]
            s1 = _site(w, w.elements[ball.base], f"{name}.b", ball.at_base)
            s2 = _site(w, w.elements[ball.other], f"{name}.c", ball.at_other)
            _equality(w, eq, "connect", name, s1, s2)
            continue
        eb, ec = w.elements[b], w.elements[c]
        if direct_cut(m, k):  # spherical, fixed or revolute, not driven
            _joint_equality(w, eq, k)
        else:
            mjs = [MjJoint(w.names.take("joint", mj.name), mj.type, mj.axis, k, mj.coord)
                   for mj in mj_joints(m, k, j)]  # raises for helical
            bname = w.names.take("body", f"{name}.cut")
            body = etree.SubElement(eb, "body", name=bname)
            _pose_attrs(body, A)
            # the auxiliary frame is Jc at closure: a share of c's inertia, in that frame
            share = (B.actInv(_scaled(_record_inertia(m, c), 1.0 / (counts[c] + 1)))
                     if c in counts else pin.Inertia.Zero())
            w.aux[k] = (bname, body, share)
            for mj in mjs:
                _joint_element(body, mj, j, m.kinds[k].nv, {}, {})
            w.aux_joints += mjs
            s1 = _site(w, body, f"{name}.b", pin.SE3.Identity())
            s2 = _site(w, ec, f"{name}.c", B)
            _equality(w, eq, "weld", name, s1, s2)


def _inertials(w: _Writer) -> None:
    """``<inertial>`` of every MuJoCo body, with the inertia floor where a moving composite
    (a jointed body and the jointless bodies welded to it) falls below it."""
    m = w.model
    m_min, i_min = _floor(m, float(w.partition.length_scale))
    composite = {v: w.own[v] for v in w.jointed}
    for v in w.body_names:  # jointless bodies count with the nearest jointed ancestor
        if v not in w.jointed:
            host, T = _jointed_ancestor(w, v)
            if host is not None:
                composite[host] = composite[host] + T.act(w.own[v])
    for v, name in w.body_names.items():
        inertia = w.own[v]
        if v in w.jointed:
            add = floor_addition(composite[v], m_min, i_min)
            if add.mass or np.any(add.inertia):
                inertia = inertia + add
                w.added[v] = add
        w.inertials[name] = inertia
        _inertial_element(w.elements[v], inertia)
    for k, (name, el, share) in w.aux.items():
        add = floor_addition(share, m_min, i_min)
        if add.mass or np.any(add.inertia):  # at closure the auxiliary frame is c's Jc
            c = int(m.child[k])
            w.added[c] = w.added.get(c, pin.Inertia.Zero()) + m.B[k].act(add)
        w.inertials[name] = share + add
        _inertial_element(el, share + add)


def _jointed_ancestor(w: _Writer, v: int) -> tuple[int | None, pin.SE3]:
    """The nearest body at or above v whose MuJoCo body has joints, and v's pose in it."""
    m = w.model
    T = pin.SE3.Identity()
    while v != m.n_bodies:
        if v in w.jointed:
            return v, T
        k = int(m.parent_edge[v])
        T = _zero_pose(tree_joint(m, k)) * T
        v = _up_down(m, k)[0]
    return None, T


def _inertial_element(el: etree._Element, inertia: pin.Inertia) -> None:
    """``<inertial pos quat mass diaginertia>`` in principal axes (exact for semi-definite
    tensors; MuJoCo refuses a ``fullinertia`` that is not positive definite). Nothing for
    a body with neither mass nor inertia."""
    mass = float(inertia.mass)
    tensor = np.array(inertia.inertia)
    if mass == 0.0 and not np.any(tensor):
        return
    lam, V = np.linalg.eigh(0.5 * (tensor + tensor.T))
    lam = np.maximum(lam, 0.0)
    lam[2] = min(lam[2], lam[0] + lam[1])  # round-off of the triangle equality (thin disc)
    if np.linalg.det(V) < 0:
        V[:, 0] = -V[:, 0]
    inertial = etree.Element("inertial", pos=vec(inertia.lever),
                             quat=vec(sp.quat_from_rotation(V)), mass=fmt(mass),
                             diaginertia=vec(lam))
    el.insert(0, inertial)


def _joint_equality(w: _Writer, eq: etree._Element, k: int) -> None:
    """Edge k's joint (spherical, fixed or revolute) as equalities between sites at its
    frames Jb (``A_k`` in the record parent) and Jc (``B_k`` in the record child)."""
    m = w.model
    name, t, A, B = m.edge_names[k], m.edge_joints[k].type, m.A[k], m.B[k]
    eb, ec = w.elements[int(m.parent[k])], w.elements[int(m.child[k])]
    if t in ("spherical", "fixed"):
        s1, s2 = _site(w, eb, f"{name}.b", A), _site(w, ec, f"{name}.c", B)
        _equality(w, eq, "connect" if t == "spherical" else "weld", name, s1, s2)
    else:  # revolute: the two connects of module docstring, "Cut joints"
        off = pin.SE3(np.eye(3), float(w.partition.length_scale) * np.asarray(m.kinds[k].axis))
        for n, (Tb, Tc) in enumerate(((A, B), (A * off, B * off))):
            s1 = _site(w, eb, f"{name}.b{n}", Tb)
            s2 = _site(w, ec, f"{name}.c{n}", Tc)
            _equality(w, eq, "connect", f"{name}.{n}", s1, s2)


def _joint_of(w: _Writer, joint: str) -> str | None:
    """The MuJoCo name of a record joint's one hinge/slide (None if it has no such joint)."""
    if not w.one_dof:  # tree joints, and driven cut joints' auxiliary joints (_cuts)
        w.one_dof.update({mj.edge: mj.name for mj in (*w.tree_joints, *w.aux_joints)
                          if not mj.group and mj.type in ("hinge", "slide")
                          and w.model.kinds[mj.edge].nv == 1})
    return w.one_dof.get(w.model.edge(joint))


def polynomial_about_zero(coefficients: tuple[float, ...], center: float) -> list[float]:
    """Coefficients ``a_i`` of ``Σ c_i (x − center)^i = Σ a_i x^i`` (binomial expansion)."""
    out = [0.0] * len(coefficients)
    for i, c in enumerate(coefficients):
        for k in range(i + 1):
            out[k] += c * math.comb(i, k) * (-center) ** (i - k)
    return out


#: Highest polynomial degree of a MuJoCo joint equality (``polycoef`` has five entries).
MJ_POLY_DEGREE = 4


def _couplings(w: _Writer, eq: etree._Element) -> None:
    """Couplings → ``<equality><joint>`` (``polycoef``; the exported joints have ``ref`` 0,
    so qpos0 = 0 and MuJoCo's ``q₁ − q₁₀ = Σ a_i (q₂ − q₂₀)^i`` is ``q₁ = Σ a_i q₂^i``).
    A linear ``c₁q₁ + c₂q₂ + offset = 0`` is ``q₁ = −offset/c₁ − (c₂/c₁) q₂`` (a one-term
    coupling holds q₁ at ``−offset/c₁``); a polynomial ``q₁ = h(q₂)`` of degree ≤ 4 writes
    h's coefficients about 0.

    Raises:
        CompileError: a coupling of more than two joints (a MuJoCo joint equality relates
            two), a table coupling or a polynomial above degree 4 (MuJoCo's joint equality
            is a quartic), or one on a joint that is not a 1-dof tree joint.
    """
    m = w.model
    for c in m.record.couplings:
        if c.profile is not None:
            _profile_coupling(w, eq, c)
            continue
        if len(c.terms) > 2:
            raise CompileError(f"{m.record.source}: MJCF export: coupling '{c.name}' "
                               f"relates {len(c.terms)} joints; a MuJoCo joint equality "
                               "relates at most two")
        joints = [_joint_of(w, n) for n, _ in c.terms]
        for (n, _), j in zip(c.terms, joints, strict=True):
            if j is None:
                raise CompileError(f"{m.record.source}: MJCF export: coupling '{c.name}' "
                                   f"involves '{n}', which is not a 1-dof tree joint")
        (_, c1), *rest = c.terms
        poly = [-c.offset / c1, 0.0, 0.0, 0.0, 0.0]
        el = etree.SubElement(eq, "joint", name=w.names.take("equality", c.name),
                              joint1=joints[0])
        if rest:
            el.set("joint2", joints[1])
            poly[1] = -rest[0][1] / c1
        el.set("polycoef", vec(poly))


def _profile_coupling(w: _Writer, eq: etree._Element, c) -> None:
    """``q_joint = h(q_input)`` with a polynomial h of degree ≤ 4 → one joint equality."""
    src = w.model.record.source
    prof = c.profile
    if prof.type != "polynomial" or len(prof.coefficients) > MJ_POLY_DEGREE + 1:
        what = ("a table (cam) profile" if prof.type == "table"
                else f"a polynomial of degree {len(prof.coefficients) - 1}")
        raise CompileError(f"{src}: MJCF export: coupling '{c.name}' is {what}; a MuJoCo "
                           f"joint equality is a polynomial of degree ≤ {MJ_POLY_DEGREE}")
    joints = [_joint_of(w, n) for n in (c.joint, c.input)]
    for n, j in zip((c.joint, c.input), joints, strict=True):
        if j is None:
            raise CompileError(f"{src}: MJCF export: coupling '{c.name}' involves '{n}', "
                               "which is not a 1-dof tree joint")
    poly = polynomial_about_zero(prof.coefficients, prof.center)
    poly += [0.0] * (MJ_POLY_DEGREE + 1 - len(poly))
    etree.SubElement(eq, "joint", name=w.names.take("equality", c.name), joint1=joints[0],
                     joint2=joints[1], polycoef=vec(poly))


def _motors(w: _Writer, root: etree._Element) -> None:
    """One ``motor`` per actuator at its port, gear 1 (ctrl = port effort); a tendon port
    is a ``<tendon><fixed>`` with the port's coefficients, a distance port a
    ``<tendon><spatial>`` through sites ``NAME.a`` and ``NAME.b`` at its attachment points
    (its length is ℓ; a positive motor force pushes the points apart, as ``J_ℓᵀ f``), each
    driven by a motor on the tendon.

    Raises:
        CompileError: a port on a joint that is not a 1-dof tree joint, or a profile or
            velocity port (MuJoCo's transmissions are linear in a joint, a tendon or a site
            pair; ``ℓ = h(q)`` and velocity-level maps have no counterpart).
    """
    m = w.model
    if not m.record.actuators:
        return
    src = m.record.source
    for a in m.record.actuators:
        if a.kind in ("profile", "velocity"):
            raise CompileError(f"{src}: MJCF export: actuator '{a.name}' is a {a.kind} port, "
                               "which no MuJoCo transmission represents (joint, fixed tendon "
                               "and site-to-site spatial tendon are linear in a joint or a "
                               "length); use the reduced or pinocchio backend")
    ports: list[tuple[str, list[tuple[str, float]]]] = []
    for a in m.record.actuators:
        joints = [(_joint_of(w, n), coef) for n, coef in a.port_terms]
        for (n, _), (j, _) in zip(a.port_terms, joints, strict=True):
            if j is None:
                raise CompileError(f"{m.record.source}: MJCF export: actuator '{a.name}' "
                                   f"drives '{n}', which is not a 1-dof tree joint")
        ports.append((a.name, joints))
    tendons = {}
    if any(a.kind in ("tendon", "distance") for a in m.record.actuators):
        ten = etree.SubElement(root, "tendon")
        bodies = m.record.body_index()
        for a, (_, joints) in zip(m.record.actuators, ports, strict=True):
            if a.kind == "tendon":
                tendons[a.name] = w.names.take("tendon", a.name)
                fixed = etree.SubElement(ten, "fixed", name=tendons[a.name])
                for j, coef in joints:
                    etree.SubElement(fixed, "joint", joint=j, coef=fmt(coef))
            elif a.kind == "distance":  # attachment bodies are never merged (attached())
                tendons[a.name] = w.names.take("tendon", a.name)
                spatial = etree.SubElement(ten, "spatial", name=tendons[a.name])
                for end, att in zip("ab", a.distance, strict=True):
                    site = _site(w, w.elements[bodies[att.body]], f"{a.name}.{end}",
                                 pin.SE3(np.eye(3), np.array(att.xyz, dtype=float)))
                    etree.SubElement(spatial, "site", site=site)
    act = etree.SubElement(root, "actuator")
    for a, (_, joints) in zip(m.record.actuators, ports, strict=True):
        port = {"tendon": tendons[a.name]} if a.name in tendons else {"joint": joints[0][0]}
        el = etree.SubElement(act, "motor", name=w.names.take("actuator", a.name), **port,
                              gear="1")
        if a.effort_limits is not None:
            el.set("ctrllimited", "true")
            el.set("ctrlrange", vec(a.effort_limits))


def check_loads(xml: str, source: str) -> None:
    """Raise :class:`CompileError` with MuJoCo's message if MuJoCo cannot load ``xml``."""
    from rbc.backends.mujoco_log import mujoco

    try:
        mujoco.MjModel.from_xml_string(xml)
    except ValueError as err:
        msg = " ".join(str(err).split())
        hint = (" (MuJoCo's XML parser limits how deeply elements nest, and MJCF nests each "
                "body in its parent: this spanning tree is too deep for MJCF)"
                if "nesting is too deep" in msg else "")
        raise CompileError(f"{source}: MuJoCo refuses the exported MJCF: {msg}{hint}; "
                           "nothing was written") from None


def write_mjcf(model: CompiledModel, partition: Partition, path: str | Path,
               timestep: float = DEFAULT_TIMESTEP) -> MjcfExport:
    """Export, check that MuJoCo loads it, and write atomically (temporary file in the
    target directory, then rename).

    Raises:
        CompileError: as :func:`export_mjcf`, or MuJoCo refuses the document; nothing is
            written then.
    """
    out = export_mjcf(model, partition, timestep)
    text = out.to_string()
    check_loads(text, str(model.record.source))
    atomic_write_text(Path(path), text)
    return out


def write_mjcf_from_bundle(bundle: str | Path, path: str | Path,
                           timestep: float = DEFAULT_TIMESTEP) -> MjcfExport:
    """``rbc compile --mjcf``: export the ``default`` partition of a bundle (atomically).

    Raises:
        BundleError: unreadable bundle; CompileError: as :func:`write_mjcf`.
    """
    model = CompiledModel.from_bundle(bundle)
    part = model.partitions.get("default") or next(iter(model.partitions.values()))
    return write_mjcf(model, part, path, timestep)

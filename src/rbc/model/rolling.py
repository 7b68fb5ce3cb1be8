"""Rolling constraints: a nonholonomic motion layer on top of the holonomic reduction.

A rolling wheel (:class:`rbc.ir.record.Rolling`: a disk of radius r about the unit axis
``a`` through the centre ``c`` of a body, on the ground plane ``n·x = height``) touches the
plane at the disk point nearest it,

    d = n − (n·a) a,   s = d / |d|,   p_c = c − r s,

and rolls without slip when the wheel's material point at ``p_c`` has zero velocity
(world axes). These are three velocity rows ``A(q) v = 0`` per wheel, ``A = J_p(q; p_c(q))``
the linear Jacobian of the body point at ``p_c``: the two tangential rows are nonholonomic
(no slip, no lateral motion); the normal row is the rate of the contact gap, identically
zero when the joints hold the wheel on the plane (a planar chassis, a disk parametrised by
its contact point), and kept otherwise (a disk on a free joint), so one rank analysis
covers both.

**Layer.** On top of the holonomic lift ``v = E u`` (:mod:`rbc.model.partition`) the rows
act on the independent speeds as ``D = A E`` (3k × n_u). A rank-revealing split of D's
scaled columns (:func:`rolling_partition`, the holonomic partition's rules: passive
speeds dependent first, actuated and requested ones kept) gives the rolling-independent
speeds w (n_w = n_u − rank D) and

    u = N w,   N[ind] = I,   N[dep] = −(S D)_p⁻¹ (S D)_a,
    u̇ = N ẇ + β,   β[dep] = −(S D)_p⁻¹ S Ḋu,   Ḋu = Ȧ v + A Ė u,

with ``Ȧ v = a⁰(p_c) + ω × (ṗ_c − v(p_c))`` (:func:`rolling_drift`: the classical drift
acceleration of the material point at p_c, plus the motion of the contact point over the
wheel). The dynamics use the same projected form as the holonomic reduction (Maggi's
equations; Jain, *Robot and Multibody Dynamics*, 2011, ch. 9; Bloch, *Nonholonomic
Mechanics and Control*, 2003, §5.2):

    M_w = Nᵀ M_r N,   h_w = Nᵀ (h_r + M_r β),   τ_w = Nᵀ τ_r,   M_w ẇ + h_w = τ_w,

and configurations integrate with ``v = E N w`` (:func:`step`). The contact forces on the
selected rows follow from the dependent equations ``(S D)_pᵀ λ = (M_r u̇ + h_r − τ_r)_p``.

References checked in tests/model/test_rolling.py: the rows against finite differences of
the contact point's material velocity, the drift against finite differences of ``A v`` along
the motion, the projected dynamics against the 50-digit KKT solve with the rolling rows
appended (:func:`rbc.verify.kkt50.with_rows`), the upright rolling disk's tilt frequency
and stability threshold, and the differential-drive vehicle's closed-form dynamics.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from rbc.errors import CompileError, RbcError
from rbc.model.compiled import CompiledModel, Partition
from rbc.model.kinematics import LINEAR, body_poses, frame_jacobian
from rbc.model.partition import (
    Lift,
    lift,
    linear_columns,
    preferred_independent,
    select_dependent,
    select_rows,
)

LWA = pin.ReferenceFrame.LOCAL_WORLD_ALIGNED

#: |n × a| below which the wheel lies flat on the plane and its contact point is undefined
#: (every rim point touches): a tilt of 1e-6 rad from flat.
FLAT_TOL = 1e-6
#: Largest contact gap |n·p_c − height| [m] accepted at the reference configuration, relative
#: to the wheel radius: the closure tolerance's order (1e-10) with room for the acquisition's
#: round-off on long chains.
GAP_RTOL = 1e-8


class RollingError(RbcError):
    """A rolling contact cannot be evaluated or reduced at a configuration (the wheel lies
    flat, or the rolling partition's dependent block became singular)."""


@dataclass(frozen=True, eq=False)
class ContactPoint:
    """One wheel's contact geometry at q (world axes).

    Attributes:
        body: wheel body index; point: (3,) p_c [m]; center: (3,) c [m]; axis: (3,) a;
        s: (3,) unit vector from p_c to c; origin: (3,) the wheel body frame's origin [m];
        gap: ``n·p_c − height`` [m].
    """

    body: int
    point: np.ndarray
    center: np.ndarray
    axis: np.ndarray
    s: np.ndarray
    origin: np.ndarray
    gap: float


def contacts(model: CompiledModel, q: np.ndarray) -> list[ContactPoint]:
    """The contact geometry of every rolling wheel at q (record order).

    Raises:
        RollingError: a wheel's axis is parallel to its ground normal (the disk lies flat).
    """
    rec = model.record
    if not rec.rolling:
        return []
    poses = body_poses(model, q)
    index = rec.body_index()
    out = []
    for w in rec.rolling:
        b = index[w.wheel]
        T = poses[b]
        R = np.asarray(T.rotation)
        n = np.asarray(w.normal, dtype=float)
        a = R @ np.asarray(w.axis, dtype=float)
        c = T.act(np.asarray(w.center, dtype=float))
        d = n - (n @ a) * a
        nd = float(np.linalg.norm(d))
        if nd < FLAT_TOL:
            raise RollingError(f"{rec.source}: rolling '{w.name}': the wheel lies flat on the "
                               "ground (its axis is parallel to the plane normal); the contact "
                               "point is undefined")
        s = d / nd
        p = c - w.radius * s
        out.append(ContactPoint(b, p, c, a, s, np.array(T.translation), float(n @ p - w.height)))
    return out


def rolling_rows(model: CompiledModel, q: np.ndarray) -> tuple[list[ContactPoint], np.ndarray]:
    """The rolling rows at q: ``(contacts, A (3k, nv))`` with ``A v`` the world velocity of
    each wheel's material point at its contact point [m/s] (rows ``3i..3i+2`` for wheel i).

    Raises:
        RollingError: see :func:`contacts`.
    """
    cps = contacts(model, q)
    A = np.zeros((3 * len(cps), model.nv))
    poses = body_poses(model, q) if cps else []
    for i, cp in enumerate(cps):
        local = poses[cp.body].actInv(cp.point)
        _, J = frame_jacobian(model, q, cp.body, pin.SE3(np.eye(3), local))
        A[3 * i: 3 * i + 3] = J[LINEAR]
    return cps, A


def rolling_drift(dm, data, q: np.ndarray, v: np.ndarray) -> np.ndarray:
    """``Ȧ v`` (3k,) [m/s²] at (q, v): the rate of the rolling rows' value along the motion
    with ``v̇ = 0`` (module docstring), from Pinocchio's frame velocities and classical
    accelerations on the tree model.

    Args:
        dm: a :class:`rbc.model.dynamics.DynamicsModel`; data: its
            :class:`~rbc.model.dynamics.DynamicsData`; q: (nq,); v: (nv,) (tree part used).
    """
    k, t = dm.kin, dm.tree
    cps = contacts(k, q)
    if not cps:
        return np.zeros(0)
    qp, vp = t.q_pin(q[: k.nq_tree]), t.v_pin(v[: k.nv_tree])
    pd = data.pin_data
    pin.forwardKinematics(t.model, pd, qp, vp, np.zeros(t.model.nv))
    pin.updateFramePlacements(t.model, pd)
    out = np.zeros(3 * len(cps))
    for i, (cp, w) in enumerate(zip(cps, k.record.rolling, strict=True)):
        fid = int(t.body_frame[cp.body])
        V = pin.getFrameVelocity(t.model, pd, fid, LWA)
        Acc = pin.getFrameClassicalAcceleration(t.model, pd, fid, LWA)
        om, vo = np.array(V.angular), np.array(V.linear)
        al, ao = np.array(Acc.angular), np.array(Acc.linear)
        r = cp.point - cp.origin
        a0 = ao + np.cross(al, r) + np.cross(om, np.cross(om, r))
        v_mat = vo + np.cross(om, r)
        n = np.asarray(w.normal, dtype=float)
        a = cp.axis
        adot = np.cross(om, a)
        d = n - (n @ a) * a
        ddot = -(n @ adot) * a - (n @ a) * adot
        sdot = (ddot - cp.s * (cp.s @ ddot)) / float(np.linalg.norm(d))
        cdot = vo + np.cross(om, cp.center - cp.origin)
        pdot = cdot - w.radius * sdot
        out[3 * i: 3 * i + 3] = a0 + np.cross(om, pdot - v_mat)
    return out


# --------------------------------------------------------------------------- the reduction


@dataclass(frozen=True, eq=False)
class RollingPartition:
    """The split of the holonomic independent speeds u by the rolling rows.

    Attributes:
        independent: (n_w,) positions in u of the rolling-independent speeds w.
        dependent: (r,) positions in u solved from the rolling rows.
        rows: (r,) the selected rolling rows S (indices into the 3k rows).
        rank: r = rank(A E) at the reference configuration.
        names: (n_w,) velocity-coordinate names of w.
    """

    independent: np.ndarray
    dependent: np.ndarray
    rows: np.ndarray
    rank: int
    names: tuple[str, ...]


def _scaled(model: CompiledModel, part: Partition, D: np.ndarray) -> np.ndarray:
    """D with rows divided by the partition's length scale and linear columns multiplied by
    it (unit-free: the holonomic rank analysis's scaling of translational rows)."""
    L = part.length_scale
    cols = np.where(linear_columns(model)[part.independent], L, 1.0)
    return D / L * cols[None, :]


def rolling_partition(model: CompiledModel, part: Partition) -> RollingPartition:
    """The rolling partition of ``part`` at its reference configuration (a pure function of
    the bundle; callers compute it once and pass it on). Without rolling wheels: every
    independent speed stays, nothing is evaluated.

    Raises:
        CompileError: a wheel does not touch its plane at the reference configuration.
        RollingError: a wheel lies flat there.
    """
    if not model.record.rolling:
        ind = np.arange(part.independent.size, dtype=np.int64)
        return RollingPartition(ind, np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64),
                                0, tuple(model.v_names[int(j)] for j in part.independent))
    q = part.q_ref
    cps, A = rolling_rows(model, q)
    for cp, w in zip(cps, model.record.rolling, strict=True):
        if abs(cp.gap) > GAP_RTOL * w.radius:
            raise CompileError(
                f"{model.record.source}: rolling '{w.name}': the wheel does not touch the "
                f"ground at the reference configuration (gap {cp.gap:.6g} m between the "
                f"plane {w.normal}·x = {w.height} and the disk of radius {w.radius} m): "
                "check the radius, the centre and the wheel's initial pose")
    D = A @ lift(model, part, q).E
    Ds = _scaled(model, part, D)
    sel, r = select_rows(Ds)
    pos = {int(j): n for n, j in enumerate(part.independent)}
    pref = {pos[j] for j in preferred_independent(model) if j in pos}
    dep = select_dependent(Ds[sel], r, pref) if r else np.zeros(0, dtype=np.int64)
    ind = np.array(sorted(set(range(part.independent.size)) - set(dep.tolist())),
                   dtype=np.int64)
    names = tuple(model.v_names[int(part.independent[j])] for j in ind)
    return RollingPartition(ind, np.asarray(dep, dtype=np.int64), sel, r, names)


@dataclass(frozen=True, eq=False)
class RollingLift:
    """The rolling layer at one configuration.

    Attributes:
        N: (n_u, n_w) ``u = N w``; D: (3k, n_u) ``A E``; A: (3k, nv) the rows;
        contacts: the contact geometry; lifted: the holonomic lift; Dp: (r, r) the
        dependent block ``(S D)_p``.
    """

    N: np.ndarray
    D: np.ndarray
    A: np.ndarray
    contacts: list[ContactPoint]
    lifted: Lift
    Dp: np.ndarray

    def solve(self, rhs: np.ndarray, transpose: bool = False) -> np.ndarray:
        """``(S D)_p⁻¹ rhs`` (``transpose``: ``(S D)_p⁻ᵀ rhs``). numpy's solver, not
        LAPACK getrs through scipy: on these tiny blocks OpenBLAS's threaded triangular
        solves took milliseconds on a loaded machine (measured 2–3 ms against 9 µs)."""
        return np.linalg.solve(self.Dp.T if transpose else self.Dp, rhs)


def rolling_lift(model: CompiledModel, part: Partition, rp: RollingPartition, q: np.ndarray,
                 lifted: Lift | None = None) -> RollingLift:
    """N(q) for the rolling partition (solve on the selected rows).

    Raises:
        RollingError: ``(S D)_p`` is singular at q (the rolling partition's chart ends).
    """
    L = lifted if lifted is not None else lift(model, part, q)
    cps, A = rolling_rows(model, q)
    D = A @ L.E
    N = np.zeros((D.shape[1], rp.independent.size))
    N[rp.independent, np.arange(rp.independent.size)] = 1.0
    SD = D[rp.rows]
    rl = RollingLift(N, D, A, cps, L, SD[:, rp.dependent])
    if rp.rank:
        try:
            N[rp.dependent] = -rl.solve(SD[:, rp.independent])
        except np.linalg.LinAlgError:
            raise RollingError(
                f"{model.record.source}: the rolling rows' dependent block is singular at this "
                "configuration (speeds " + ", ".join(model.v_names[int(part.independent[j])]
                                                     for j in rp.dependent) + ")") from None
    return rl


@dataclass(frozen=True, eq=False)
class RollingTerms:
    """Rolling-reduced dynamics at (q, w).

    Attributes:
        M: (n_w, n_w) M_w; h: (n_w,) h_w; tau: (n_w,) τ_w; tau_coulomb: (n_w,);
        u: (n_u,) ``N w``; beta: (n_u,) β; base: the holonomic
        :class:`~rbc.model.dynamics.ReducedTerms` at (q, u); lift: the rolling lift.
    """

    M: np.ndarray
    h: np.ndarray
    tau: np.ndarray
    tau_coulomb: np.ndarray
    u: np.ndarray
    beta: np.ndarray
    base: object
    lift: RollingLift


def rolling_terms(dm, data, part: Partition, rp: RollingPartition, q: np.ndarray,
                  w: np.ndarray, f: np.ndarray | None = None, wrenches: tuple = ()
                  ) -> RollingTerms:
    """``M_w, h_w, τ_w`` at (q, w) with port efforts f and external wrenches (module
    docstring). Arguments as :func:`rbc.model.dynamics.reduced_terms`; w: (n_w,)."""
    from rbc.model.dynamics import lift_at, reduced_terms

    k = dm.kin
    L = lift_at(dm, data, part, q)
    rl = rolling_lift(k, part, rp, q, L)
    u = rl.N @ np.asarray(w, dtype=float)
    base = reduced_terms(dm, data, part, q, u, f, wrenches, lifted=L)
    beta = np.zeros(u.size)
    if rp.rank:
        ddu = rl.A @ base.edu + rolling_drift(dm, data, q, base.v)
        beta[rp.dependent] = -rl.solve(ddu[rp.rows])
    N = rl.N
    return RollingTerms(N.T @ base.M @ N, N.T @ (base.h + base.M @ beta), N.T @ base.tau,
                        N.T @ base.tau_coulomb, u, beta, base, rl)


def forward_dynamics(terms: RollingTerms, coulomb: bool = True) -> np.ndarray:
    """``ẇ = M_w⁻¹ (τ_w − h_w)`` (n_w,) by Cholesky.

    Raises:
        RollingError: M_w is not positive definite (a rolling-independent speed moves no mass).
    """
    rhs = terms.tau - terms.h + (terms.tau_coulomb if coulomb else 0.0)
    if rhs.size == 0:
        return rhs
    try:
        factor = np.linalg.cholesky(terms.M)
    except np.linalg.LinAlgError:
        raise RollingError("the rolling-reduced inertia M_w is not positive definite (a "
                           "rolling-independent speed moves no mass)") from None
    y = np.linalg.solve(factor, rhs)
    return np.linalg.solve(factor.T, y)


def speeds_rates(terms: RollingTerms, wdot: np.ndarray) -> np.ndarray:
    """``u̇ = N ẇ + β`` (n_u,)."""
    return terms.lift.N @ wdot + terms.beta


def tree_acceleration(terms: RollingTerms, wdot: np.ndarray) -> np.ndarray:
    """Tree accelerations ``a = E_T u̇ + Ė_T u`` (nv_tree,)."""
    b = terms.base
    nt = b.tree.M.shape[0]
    return b.lifted.E[:nt] @ speeds_rates(terms, wdot) + b.edu[:nt]


def contact_forces(rp: RollingPartition, terms: RollingTerms, wdot: np.ndarray,
                   coulomb: bool = True) -> np.ndarray:
    """Rolling contact forces (k, 3) [N] on each wheel at its contact point (world axes),
    the ideal constraint forces on the selected rows (``Aᵀ F`` is their generalized effort;
    a row the rank analysis dropped carries none: with redundant rows, such as two coaxial
    wheels' lateral rows, the split between them is the selected one, not unique)."""
    b = terms.base
    k = len(terms.lift.contacts)
    F = np.zeros(3 * k)
    if rp.rank:
        resid = b.M @ speeds_rates(terms, wdot) + b.h - b.tau - (
            b.tau_coulomb if coulomb else 0.0)
        F[rp.rows] = terms.lift.solve(resid[rp.dependent], transpose=True)
    return F.reshape(k, 3)


def refuse_rolling(model: CompiledModel, where: str, error: type[Exception] = CompileError
                   ) -> None:
    """Raise ``error`` when the model has rolling wheels and ``where`` (an exporter, a
    plant) cannot represent them — rather than dropping the rows and moving the wheels with
    slip. MuJoCo's contacts are soft friction cones, Pinocchio's constraint models are
    holonomic, and the reduced plant integrates u without the rolling layer."""
    if model.record.rolling:
        names = ", ".join(w.name for w in model.record.rolling)
        raise error(f"{model.record.source}: {where} cannot represent the rolling constraints "
                    f"({names}) and would let the wheels slip; the rolling motion is "
                    "integrated by rbc.model.rolling.step (docs/dynamics.md, 'Rolling')")


# --------------------------------------------------------------------------- motion


def _rates(dm, data, part, rp, q, w, f):
    terms = rolling_terms(dm, data, part, rp, q, w, f)
    return terms.base.v, forward_dynamics(terms)


def step(dm, data, part: Partition, rp: RollingPartition, q: np.ndarray, w: np.ndarray,
         h: float, f: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """One step of the rolling-reduced motion by the commutator-free Lie-group Runge–Kutta
    method of order 4 (Celledoni, Marthinsen & Owren, *FGCS* 19, 2003, "CF4"), written for
    rbc's right action ``q ⊕ v`` (body-frame speeds; classical RK4 on vector-space joints
    and on w): configurations move with ``v = E N w``; a model with loops or couplings is
    projected back onto its closure manifold after the step
    (:func:`rbc.model.closure.project`). f: (n_act,) port efforts held over the step.

    Plain ``q ⊕ h Σ b_i v_i`` is only second-order on free and spherical joints (the stage
    velocities live in different tangent spaces); CF4 composes two exponentials instead.

    Returns:
        (q1 (nq,), w1 (n_w,)).
    """
    from rbc.model.closure import project

    k = dm.kin
    v1, a1 = _rates(dm, data, part, rp, q, w, f)
    q2 = k.integrate(q, 0.5 * h * v1)
    v2, a2 = _rates(dm, data, part, rp, q2, w + 0.5 * h * a1, f)
    v3, a3 = _rates(dm, data, part, rp, k.integrate(q, 0.5 * h * v2), w + 0.5 * h * a2, f)
    v4, a4 = _rates(dm, data, part, rp, k.integrate(q2, h * (v3 - 0.5 * v1)), w + h * a3, f)
    q1 = k.integrate(k.integrate(q, h / 12.0 * (3.0 * v1 + 2.0 * v2 + 2.0 * v3 - v4)),
                     h / 12.0 * (-v1 + 2.0 * v2 + 2.0 * v3 + 3.0 * v4))
    if k.n_rows:
        q1 = project(k, q1)
    return q1, w + h / 6.0 * (a1 + 2.0 * a2 + 2.0 * a3 + a4)


def rolling_report(model: CompiledModel) -> dict:
    """``rolling`` of ``inspect --json`` (docs/cli.md): the wheels, their rows and, per stored
    partition, the rank of the rolling rows at its reference configuration and the
    rolling-independent speeds (names and number); empty lists without rolling wheels."""
    wheels = [w.name for w in model.record.rolling]
    parts = []
    for name, part in (model.partitions.items() if wheels else ()):
        rp = rolling_partition(model, part)
        parts.append({"name": name, "rank": rp.rank, "independent_speeds": list(rp.names),
                      "n_independent": int(rp.independent.size)})
    return {"wheels": wheels, "rows": 3 * len(wheels), "partitions": parts}


__all__ = ["ContactPoint", "RollingError", "RollingLift", "RollingPartition", "RollingTerms",
           "contact_forces", "contacts", "forward_dynamics", "refuse_rolling", "rolling_drift",
           "rolling_lift", "rolling_partition", "rolling_report", "rolling_rows",
           "rolling_terms", "speeds_rates", "step", "tree_acceleration"]

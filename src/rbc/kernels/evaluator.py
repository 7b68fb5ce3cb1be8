"""The Python face of the kernels: :class:`KernelModel` (one layout, many evaluations).

Every method is one kernel call over the four layout arrays; results are NumPy arrays in
rbc's orders (v as the compiled model, rows as the closure residual). What the kernels do
not evaluate (external wrenches, the user-facing error messages of a singular lift or a
non-positive-definite ``M_r``) stays on the reference path of :mod:`rbc.model.dynamics`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rbc.kernels import kinematics as kk
from rbc.kernels import lift, step
from rbc.kernels.layout import S_NMOD, Layout, layout
from rbc.model.compiled import CompiledModel, Partition
from rbc.model.tree import TreeModel, build_tree


class KernelError(RuntimeError):
    """A kernel evaluation failed (status code in ``status``); callers fall back to the
    reference path, which raises the user-facing error."""

    def __init__(self, what: str, status: int) -> None:
        super().__init__(f"{what}: kernel status {status}")
        self.status = status


@dataclass(frozen=True)
class KernelTerms:
    """Reduced forward dynamics at one state (arrays owned by the caller).

    Attributes:
        udot: (n_u,) u̇; v: (nv,) ``E u``; edu: (nv,) ``Ė u``; E: (nv, n_u) the lift;
        M: (n_u, n_u) the reduced inertia M_r; rhs: (n_u,)
        ``Eᵀ(τ + τ_c) − E_Tᵀ RNEA(q, v, Ė_T u)``.
    """

    udot: np.ndarray
    v: np.ndarray
    edu: np.ndarray
    E: np.ndarray
    M: np.ndarray
    rhs: np.ndarray


class KernelModel:
    """A compiled model and partition laid out for the kernels.

    Args:
        kin: the compiled model; part: the partition; tree: its Pinocchio tree (built when
            not given; only read for the armature); recursion: :meth:`forward_dynamics` by
            the recursion over the lift's nodes — True where the model splits into nodes,
            False never, None when it pays (:func:`rbc.kernels.layout.layout`); point: lay
            out the chords with a spherical cut joint as point chords where the partition
            allows (:func:`rbc.kernels.layout.point_chords`: three rows instead of six, the
            same lift and dynamics) — :meth:`geometry` then returns their rows, not the
            bundle's.
    """

    def __init__(self, kin: CompiledModel, part: Partition, tree: TreeModel | None = None,
                 recursion: bool | None = None, point: bool = True):
        self.tree = tree if tree is not None else build_tree(kin)
        self.recursion = recursion
        self.layout: Layout = layout(kin, part, self.tree, recursion, point)
        lay = self.layout
        self._args = (lay.I, lay.IO, lay.F, lay.FO, lay.lu_size)
        self.kin, self.part = kin, part
        self.nu = int(part.independent.size)
        self.n_act = len(kin.record.actuators)

    # ------------------------------------------------------------------ evaluations
    def terms(self, q: np.ndarray, u: np.ndarray, f: np.ndarray | None = None) -> KernelTerms:
        """Reduced forward dynamics at (q, u) with port efforts f (n_act,) (zero if None).

        Raises:
            KernelError: singular R_p (status 1) or M_r not positive definite (status 2).
        """
        kin, nu = self.kin, self.nu
        out = KernelTerms(np.empty(nu), np.empty(kin.nv), np.empty(kin.nv),
                          np.empty((kin.nv, nu)), np.empty((nu, nu)), np.empty(nu))
        s = step.evaluate(*self._args, _f64(q), _f64(u), self._efforts(f), out.udot, out.v,
                          out.edu, out.E, out.M, out.rhs)
        if s != step.OK:
            raise KernelError("forward dynamics", s)
        return out

    def forward_dynamics(self, q: np.ndarray, u: np.ndarray, f: np.ndarray | None = None
                         ) -> np.ndarray:
        """``u̇`` (n_u,) at (q, u, f). Raises KernelError as :meth:`terms`."""
        udot = np.empty(self.nu)
        s = step.forward(*self._args, _f64(q), _f64(u), self._efforts(f), udot)
        if s != step.OK:
            raise KernelError("forward dynamics", s)
        return udot

    def geometry(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """``(ρ (n_rows,), C (n_rows, nv) dense, E (nv, n_u) or None if R_p is singular)``;
        a point chord's rows are the layout's (``ρ = [0; p_c − p_b]``, C's rows 0–2 the
        cut coordinates' speeds, :mod:`rbc.kernels.layout`)."""
        lay, kin = self.layout, self.kin
        rho = np.empty(lay.n_rows)
        Cc = np.empty(6 * int(lay.segment("ch_col_ptr")[-1]))
        E = np.empty((kin.nv, self.nu))
        ok = step.geometry(*self._args, _f64(q), rho, Cc, E)
        C = np.empty((lay.n_rows, kin.nv))
        kk.dense_jacobian(lay.I, lay.IO, lay.F, lay.FO, Cc, C)
        return rho, C, (E if ok else None)

    def lift(self, q: np.ndarray) -> np.ndarray | None:
        """The lift ``E`` (nv, n_u) at q (geometry, ``R_p`` factors, E: one kernel call,
        nothing dense beyond E), or None if R_p is singular."""
        lay = self.layout
        E = np.empty((self.kin.nv, self.nu))
        ok = step.geometry(*self._args, _f64(q), np.empty(lay.n_rows),
                           np.empty(6 * int(lay.segment("ch_col_ptr")[-1])), E)
        return E if ok else None

    def node_lift(self, q: np.ndarray) -> np.ndarray | None:
        """The lift by node (``nd_e_ptr[-1]``,) at q — node n's block of E (its coordinates
        × its speeds, :func:`rbc.kernels.articulated.node_lift`) — with nothing of size
        nv × n_u formed; None if R_p is singular.

        Raises:
            LayoutError: the model does not split into nodes (``n_nodes`` 0).
        """
        from rbc.kernels.layout import S_NNODE, LayoutError

        lay = self.layout
        if not lay.segment("sizes")[S_NNODE]:
            raise LayoutError("the lift does not split into nodes")
        En = np.empty(int(lay.segment("nd_e_ptr")[-1]))
        return En if step.node_geometry(*self._args, _f64(q), En) else None

    def curvature(self, q: np.ndarray, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(v, Ė u)`` (nv,), (nv,) at (q, u). Raises KernelError on a singular R_p."""
        v, edu = np.empty(self.kin.nv), np.empty(self.kin.nv)
        if not step.curvature(*self._args, _f64(q), _f64(u), v, edu):
            raise KernelError("curvature", step.SINGULAR_LIFT)
        return v, edu

    def body_poses(self, q: np.ndarray) -> np.ndarray:
        """World poses ``[R | p]`` (n_bodies + 1, 3, 4) of every body at q, the world last
        (identity): the kernels' pose pass (``rbc.model.kinematics.body_poses``)."""
        from rbc.kernels.layout import S_NE

        lay, kin = self.layout, self.kin
        Tw = np.empty(12 * (kin.n_bodies + 1))
        kk.poses(lay.I, lay.IO, lay.F, lay.FO, _f64(q), Tw,
                 np.empty(12 * int(lay.segment("sizes")[S_NE])), np.empty(6 * kin.nv))
        T = Tw.reshape(-1, 12)
        return np.concatenate([T[:, :9].reshape(-1, 3, 3), T[:, 9:, None]], axis=2)

    def integrate(self, q: np.ndarray, v: np.ndarray) -> np.ndarray:
        """``q ⊕ v`` (nq,)."""
        out = np.empty(self.kin.nq)
        kk.integrate(self.layout.I, self.layout.IO, _f64(q), _f64(v), out)
        return out

    def forward_dynamics_batch(self, Q: np.ndarray, U: np.ndarray,
                               Fp: np.ndarray | None = None) -> np.ndarray:
        """u̇ (N, n_u) for N states Q (N, nq), U (N, n_u), Fp (N, n_act), in parallel over
        the cores numba is allowed (``numba.set_num_threads``).

        Raises:
            KernelError: a state with a singular lift or M_r (the first failing status).
        """
        Q, U = np.ascontiguousarray(Q, dtype=float), np.ascontiguousarray(U, dtype=float)
        n = Q.shape[0]
        Fp = (np.zeros((n, self.n_act)) if Fp is None
              else np.ascontiguousarray(Fp, dtype=float))
        UD = np.empty((n, self.nu))
        status = np.empty(n, dtype=np.int64)
        import numba

        step.evaluate_batch(*self._args, Q, U, Fp, UD, status,
                            max(1, min(n, numba.get_num_threads())))
        bad = np.flatnonzero(status != step.OK)
        if bad.size:
            raise KernelError(f"batch state {int(bad[0])}", int(status[bad[0]]))
        return UD

    def _efforts(self, f: np.ndarray | None) -> np.ndarray:
        return np.zeros(self.n_act) if f is None else _f64(f)


def _f64(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(x, dtype=np.float64)


@dataclass(frozen=True, eq=False)
class FusedStep:
    """A Runge–Kutta step evaluated in one kernel call (:meth:`KernelStage.rk_step`).

    Attributes:
        y1: (N,) the new state; err: (N,) the error vector; k_end: (N,) ẏ at y1 with the
        step's efforts; gain: (n_u, n_act) ``∂u̇/∂f`` at y1 (``M_r⁻¹ E[ports]ᵀ``);
        port_speeds: (n_act,) the port coordinates' speeds at y1 (``P_act = f · port_speeds``).
    """

    y1: np.ndarray
    err: np.ndarray
    k_end: np.ndarray
    gain: np.ndarray
    port_speeds: np.ndarray


class KernelStage:
    """The reduced backend's per-stage evaluation (one kernel call each; DESIGN.md §13).

    Holds the closed state: q (nq,), its lift E (nv, n_u), the prescribed independent values
    there x0 (n_kept,), the residual ρ (n_rows,) and the compact closure Jacobian.
    :meth:`stage` closes at a state's values and returns ẏ; :meth:`project` only closes. Both
    return None when the kernel hands the case back (singular R_p, M_r not positive definite,
    corrector not converged): the caller then runs the reference path and reseeds the state
    (:meth:`reseed`).

    Args:
        km: the kernel model; q, E, rho: a closed configuration, its lift and residual.
            The stage runs every chord with six rows (the bundle's residual, compact C and
            scaled cond(R_p), which the reference closer and the partition check share; the
            corrector does not set a point chord's cut coordinates): a model laid out with
            point chords is laid out again without them.

    Raises:
        LayoutError: an independent coordinate is prescribed through its joint's maps (a
            planar angle): the kernels set values by q index only.
    """

    def __init__(self, km: KernelModel, q: np.ndarray, E: np.ndarray, rho: np.ndarray):
        from rbc.kernels.layout import LayoutError
        from rbc.model.closure import CLOSURE_TOL
        from rbc.model.partition import scales
        from rbc.model.solve import MAX_CORRECTOR, prescribable

        if km.layout.point:
            km = KernelModel(km.kin, km.part, km.tree, km.recursion, point=False)
        self.km = km
        lay, part = km.layout, km.part
        if sum(prescribable(km.kin, int(j)) for j in part.independent) != \
                lay.segment("keep_u").size:
            raise LayoutError("an independent coordinate is set through its joint's maps")
        self.tol, self.max_iter = float(CLOSURE_TOL), int(MAX_CORRECTOR)
        self.q, self.E, self.rho = _f64(q).copy(), _f64(E).copy(), _f64(rho).copy()
        self.x0 = self.q[np.array(lay.segment("keep_q"))].copy()
        self.Cc = np.empty(6 * int(lay.segment("ch_col_ptr")[-1]))
        self.v = np.empty(km.kin.nv)
        self.n = km.nu
        sc = scales(km.kin, part.length_scale)
        self._row_scale = _f64(sc.rows)
        self._col_scale = _f64(sc.cols)
        self._fresh_c = False  # Cc belongs to q (set by the kernels, not by reseed)
        lay = km.layout
        self._blocks = np.empty(lift.blocks_size(lay.I, lay.IO))  # the cond bound's anchor
        self._sv = np.zeros((int(lay.segment("sizes")[S_NMOD]), 2))
        self._anchored = False
        self._ports = np.array(lay.segment("ports"))
        self._keep_u = np.array(lay.segment("keep_u"))

    def stage(self, y: np.ndarray, f: np.ndarray) -> np.ndarray | None:
        """ẏ (2 n_u + 2,) = (u, u̇, P_act, P_passive) at the state y = (x, u, W_act,
        W_passive) with port efforts f (n_act,); None when handed back (class docstring).
        ẋ is u: the caller replaces the value rates that are not speeds (planar x, y)."""
        out = np.empty(2 * self.n + 2)
        s = step.stage(*self.km._args, self.q, self.E, self.x0, self.rho, self.Cc, _f64(y),
                       _f64(f),
                       self.tol, self.max_iter, out, self.v)
        if s != step.OK:
            return None
        self._fresh_c = True
        return out

    def rk_step(self, weights: tuple[np.ndarray, np.ndarray, np.ndarray], y: np.ndarray,
                k1: np.ndarray, f: np.ndarray, h: float) -> tuple[int, FusedStep | None]:
        """One Runge–Kutta step from y in one kernel call (:func:`rbc.kernels.step.rk_step`).

        Args:
            weights: ``(A, b, e)`` (:func:`rbc.sim.integrators.fused_weights`); y: (N,) the
                state; k1: (N,) ẏ at y with port efforts f (n_act,); h: the step [s].

        Returns:
            ``(stages evaluated, the step or None when a stage was handed back)`` — then the
            closed state is the last successful stage's (class docstring).
        """
        A, b, e = weights
        n = y.size
        y1, k_end, err = np.empty(n), np.empty(n), np.empty(n)
        gain = np.empty((self.n, self.km.n_act))
        status, done = step.rk_step(*self.km._args, self.q, self.E, self.x0, self.rho, self.Cc,
                                    A, b, e, _f64(y), _f64(k1), _f64(f), float(h), self.tol,
                                    self.max_iter, y1, k_end, err, gain, self.v)
        if done:
            self._fresh_c = True
        if status != step.OK:
            return done, None
        return done, FusedStep(y1, err, k_end, gain, self.v[self._ports])

    def project(self, y: np.ndarray) -> np.ndarray | None:
        """The closed configuration (nq,) at the values of state y, or None when handed
        back. Where the last stage closed at those values already (the end point of a
        step), that configuration — the kernel would recompute the same bits."""
        if self._fresh_c and np.array_equal(_f64(y)[self._keep_u], self.x0):
            return self.q
        s = step.project(*self.km._args, self.q, self.E, self.x0, self.rho, self.Cc, _f64(y),
                         self.tol, self.max_iter)
        if s != step.OK:
            return None
        self._fresh_c = True
        return self.q

    def scaled_cond(self) -> float | None:
        """Scaled cond(R_p) at q (:func:`rbc.model.partition.scaled_cond`), None when the
        closure Jacobian at q is not held (after a reseed). Anchors
        :meth:`scaled_cond_bound` at q."""
        if not self._fresh_c:
            return None
        lay = self.km.layout
        self._anchored = True
        return float(lift.scaled_cond_anchor(lay.I, lay.IO, lay.F, lay.FO, self.Cc,
                                             self._row_scale, self._col_scale,
                                             self._blocks, self._sv))

    def scaled_cond_bound(self) -> float | None:
        """An upper bound of :meth:`scaled_cond` at q from the last configuration it was
        evaluated at (:func:`rbc.kernels.lift.scaled_cond_bound`, a few µs against its tens);
        None when the Jacobian at q is not held or :meth:`scaled_cond` never ran."""
        if not self._fresh_c or not self._anchored:
            return None
        lay = self.km.layout
        return float(lift.scaled_cond_bound(lay.I, lay.IO, lay.F, lay.FO, self.Cc,
                                            self._row_scale, self._col_scale, self._blocks,
                                            self._sv))

    def warm(self) -> float:
        """Load (or compile) every kernel a run calls, on scratch copies of the state, so the
        first step does not pay it; returns the wall time taken [s] (numba's cache load:
        about a second per process, much longer on a fresh install that compiles)."""
        import time

        t0 = time.perf_counter()
        y = np.zeros(2 * self.n + 2)
        y[np.array(self.km.layout.segment("keep_u"))] = self.x0
        f = np.zeros(self.km.n_act)
        args = (self.q.copy(), self.E.copy(), self.x0.copy(), self.rho.copy(), self.Cc.copy())
        step.stage(*self.km._args, *args, y, f, self.tol, self.max_iter,
                   np.empty(y.size), np.empty(self.v.size))
        step.project(*self.km._args, *args, y, self.tol, self.max_iter)
        lay = self.km.layout
        blocks, sv = self._blocks.copy(), self._sv.copy()
        lift.scaled_cond_anchor(lay.I, lay.IO, lay.F, lay.FO, args[4], self._row_scale,
                                self._col_scale, blocks, sv)
        lift.scaled_cond_bound(lay.I, lay.IO, lay.F, lay.FO, args[4], self._row_scale,
                               self._col_scale, blocks, sv)
        # a one-stage tableau at h = 0: the step's types, no move
        step.rk_step(*self.km._args, *args, np.zeros((1, 1)), np.ones(1), np.zeros(2), y,
                     np.zeros(y.size), f, 0.0, self.tol, self.max_iter, np.empty(y.size),
                     np.empty(y.size), np.empty(y.size), np.empty((self.n, f.size)),
                     np.empty(self.v.size))
        return time.perf_counter() - t0

    def reseed(self, q: np.ndarray, E: np.ndarray, rho: np.ndarray) -> None:
        """Restart from a configuration closed elsewhere (the reference path)."""
        self.q[:], self.E[:], self.rho[:] = q, E, rho
        self.x0[:] = self.q[np.array(self.km.layout.segment("keep_q"))]
        self._fresh_c = False

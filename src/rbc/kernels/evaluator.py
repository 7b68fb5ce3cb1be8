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
from rbc.kernels import step
from rbc.kernels.layout import Layout, layout
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
            not given; only read for the armature).
    """

    def __init__(self, kin: CompiledModel, part: Partition, tree: TreeModel | None = None):
        self.layout: Layout = layout(kin, part, tree if tree is not None else build_tree(kin))
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
        return self.terms(q, u, f).udot

    def geometry(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """``(ρ (n_rows,), C (n_rows, nv) dense, E (nv, n_u) or None if R_p is singular)``."""
        lay, kin = self.layout, self.kin
        rho = np.empty(lay.n_rows)
        Cc = np.empty(6 * int(lay.segment("ch_col_ptr")[-1]))
        E = np.empty((kin.nv, self.nu))
        ok = step.geometry(*self._args, _f64(q), rho, Cc, E)
        C = np.empty((lay.n_rows, kin.nv))
        kk.dense_jacobian(lay.I, lay.IO, lay.F, lay.FO, Cc, C)
        return rho, C, (E if ok else None)

    def curvature(self, q: np.ndarray, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(v, Ė u)`` (nv,), (nv,) at (q, u). Raises KernelError on a singular R_p."""
        v, edu = np.empty(self.kin.nv), np.empty(self.kin.nv)
        if not step.curvature(*self._args, _f64(q), _f64(u), v, edu):
            raise KernelError("curvature", step.SINGULAR_LIFT)
        return v, edu

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
        step.evaluate_batch(*self._args, Q, U, Fp, UD, status)
        bad = np.flatnonzero(status != step.OK)
        if bad.size:
            raise KernelError(f"batch state {int(bad[0])}", int(status[bad[0]]))
        return UD

    def _efforts(self, f: np.ndarray | None) -> np.ndarray:
        return np.zeros(self.n_act) if f is None else _f64(f)


def _f64(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(x, dtype=np.float64)

"""Controllers in actuator space, run at a control rate with zero-order hold (docs/simulate.md).

* ``pd``: ``f = K_p (ℓ_ref − ℓ) + K_d (ℓ̇_ref − ℓ̇)`` at the ports (displacement ℓ [m or rad],
  rate ℓ̇), per port (diagonal gains); a velocity port (no displacement map) is servoed on
  its rate alone.
* ``pd+ff``: the same plus the feedforward ``f_ff`` = the port efforts that produce the
  reference acceleration on the *nominal* reduced model, ``Lᵀ f_ff = M_r u̇_ref + h_r − τ_r``
  (:func:`rbc.model.dynamics.actuator_efforts` at the reference state; minimum norm when
  over-actuated). It is tabulated on the reference grid and interpolated linearly in time.
* ``passive``: ``f = 0``.
* ``task``: the resolved-rate task law of ``rbc plan`` run online, with these PD gains at the
  ports (:mod:`rbc.sim.task_control`).

Commands are clipped to the record's ``effort_limits``; the number of control steps with
any port clipped is counted.

**Default gains** (the rule): the reflected inertia at port i is
``m_i = [(L M_r⁻¹ Lᵀ)⁻¹]_ii`` at the initial configuration (the port-space inertia of the
nominal reduced model, rotor inertia included; ``L = J_ℓ E``), and
``K_p = m ω_n²``, ``K_d = 2 ζ m ω_n`` with ω_n = 2π·5 Hz and ζ = 1 — a critically damped
5 Hz loop per port when the others are held. ``--bandwidth``, ``--zeta``, ``--kp PORT=…``,
``--kd PORT=…`` override.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from rbc.errors import RbcError
from rbc.model.compiled import Partition
from rbc.model.dynamics import DynamicsData, DynamicsModel, actuator_efforts, reduced_terms
from rbc.model.interfaces import actuator_map
from rbc.sim.reference import LiftedReference

CONTROLLERS = ("pd", "pd+ff", "passive", "task", "allocation")
DEFAULT_BANDWIDTH = 5.0  # Hz
DEFAULT_ZETA = 1.0


class ControllerError(RbcError):
    """A controller cannot run on this bundle (no actuators, unknown port in a gain)."""


@dataclass(frozen=True, eq=False)
class Gains:
    """Per-port PD gains.

    Attributes:
        kp: (n_act,) [N/m or N·m/rad]; kd: (n_act,) [N·s/m or N·m·s/rad];
        inertia: (n_act,) reflected inertia m_i [kg or kg·m²] the defaults derive from;
        bandwidth: ω_n / 2π [Hz]; zeta: ζ.
    """

    kp: np.ndarray
    kd: np.ndarray
    inertia: np.ndarray
    bandwidth: float
    zeta: float


def port_inertia(dm: DynamicsModel, part: Partition, q: np.ndarray) -> np.ndarray:
    """Reflected inertia (n_act,) ``diag((L M_r⁻¹ Lᵀ)⁻¹)`` at q (nominal model, at rest)."""
    data = DynamicsData.of(dm)
    t = reduced_terms(dm, data, part, q, np.zeros(part.independent.size))
    L = actuator_map(dm.kin, t.lifted.E, q)
    return np.diag(np.linalg.pinv(L @ np.linalg.solve(t.M, L.T)))


def default_gains(dm: DynamicsModel, part: Partition, q: np.ndarray, *,
                  bandwidth: float = DEFAULT_BANDWIDTH, zeta: float = DEFAULT_ZETA,
                  kp: Mapping[str, float] | None = None, kd: Mapping[str, float] | None = None
                  ) -> Gains:
    """The gain rule of the module docstring, with per-port overrides by actuator name.

    Raises:
        ControllerError: an override names no actuator (lists the actuators).
    """
    names = [a.name for a in dm.kin.record.actuators]
    m = port_inertia(dm, part, q)
    w = 2.0 * np.pi * bandwidth
    p, d = m * w * w, 2.0 * zeta * m * w
    for gains, over, what in ((p, kp, "--kp"), (d, kd, "--kd")):
        for name, value in (over or {}).items():
            if name not in names:
                raise ControllerError(f"{what} {name}: no such actuator; actuators: "
                                      f"{', '.join(names)}")
            gains[names.index(name)] = value
    return Gains(p, d, m, bandwidth, zeta)


def feedforward_table(dm: DynamicsModel, part: Partition, ref: LiftedReference,
                      progress=None) -> np.ndarray:
    """(K, n_act) port efforts reproducing the reference on the nominal model, per grid point."""
    data = DynamicsData.of(dm)
    out = np.empty((ref.time.size, len(dm.kin.record.actuators)))
    for k in range(ref.time.size):
        t = reduced_terms(dm, data, part, ref.q[k], ref.u[k])
        out[k] = actuator_efforts(dm, t, ref.udot[k])
        if progress is not None:
            progress((k + 1) / ref.time.size)
    return out


@dataclass(frozen=True, eq=False)
class Controller:
    """A port-space controller (module docstring).

    Attributes:
        kind: ``pd``, ``pd+ff`` or ``passive``; gains: PD gains (None for passive);
        reference: the lifted reference (None for passive); feedforward: (K, n_act) or None;
        lower, upper: (n_act,) effort limits (±inf where the record gives none).
    """

    kind: str
    gains: Gains | None
    reference: LiftedReference | None
    feedforward: np.ndarray | None
    lower: np.ndarray
    upper: np.ndarray

    def command(self, t: float, ell: np.ndarray, ell_dot: np.ndarray) -> np.ndarray:
        """Unclipped port efforts (n_act,) [N or N·m] at time t from measured ℓ, ℓ̇."""
        if self.kind == "passive":
            return np.zeros_like(self.lower)
        return self.tabulate(np.array([float(t)])).command(0, ell, ell_dot)

    def tabulate(self, times: np.ndarray) -> CommandTable:
        """The reference terms at the control instants (T,) [s] — the reference's ℓ, ℓ̇
        (cubic Hermite) and the feedforward (linear) — evaluated in one pass; its
        :meth:`CommandTable.command` at instant i is :meth:`command` at ``times[i]``, the
        same bits."""
        if self.kind == "passive":
            return CommandTable(self.gains, None, None, None, np.zeros_like(self.lower))
        r, rd = self.reference.port_references(times)
        ff = (None if self.feedforward is None
              else _linear(self.reference.time, self.feedforward, np.asarray(times, float)))
        return CommandTable(self.gains, r, rd, ff, np.zeros_like(self.lower))

    def clip(self, f: np.ndarray) -> tuple[np.ndarray, bool]:
        """``(applied, clipped)``: efforts within the limits and whether any was clipped."""
        return clip_efforts(f, self.lower, self.upper)


@dataclass(frozen=True, eq=False)
class CommandTable:
    """A port-space controller's reference terms at the control instants
    (:meth:`Controller.tabulate`): ref, rate (T, n_act) the reference ℓ, ℓ̇ (None: passive),
    ff (T, n_act) the feedforward or None; zero (n_act,) the passive command."""

    gains: Gains | None
    ref: np.ndarray | None
    rate: np.ndarray | None
    ff: np.ndarray | None
    zero: np.ndarray

    def command(self, i: int, ell: np.ndarray, ell_dot: np.ndarray) -> np.ndarray:
        """Unclipped port efforts (n_act,) at instant i from measured ℓ, ℓ̇ (module
        docstring)."""
        if self.ref is None:
            return self.zero.copy()
        e = self.ref[i] - ell
        e[~np.isfinite(e)] = 0.0  # a velocity port has no displacement: rate servo only
        f = self.gains.kp * e + self.gains.kd * (self.rate[i] - ell_dot)
        if self.ff is not None:
            f = f + self.ff[i]
        return f


def clip_efforts(f: np.ndarray, lower: np.ndarray, upper: np.ndarray
                 ) -> tuple[np.ndarray, bool]:
    """``(applied, clipped)``: f (n_act,) clipped to [lower, upper], and whether any was."""
    g = np.minimum(np.maximum(f, lower), upper)  # np.clip's values, without its overhead
    return g, bool((g != f).any())


def _linear(tg: np.ndarray, y: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Row-wise linear interpolation of samples y (K, n) at the times t (T,), held at both
    ends (as ``numpy.interp``, one search for all columns): (T, n)."""
    if tg.size == 1:
        return np.repeat(y[-1:], t.size, axis=0)
    k = np.minimum(np.maximum(np.searchsorted(tg, t, side="right") - 1, 0), tg.size - 2)
    s = ((t - tg[k]) / (tg[k + 1] - tg[k]))[:, None]
    out = (1.0 - s) * y[k] + s * y[k + 1]
    out[t >= tg[-1]] = y[-1]
    out[t <= tg[0]] = y[0]
    return out


def effort_limits(dm: DynamicsModel) -> tuple[np.ndarray, np.ndarray]:
    """(n_act,) lower and upper effort limits (±inf where none are given)."""
    lims = [a.effort_limits or (-np.inf, np.inf) for a in dm.kin.record.actuators]
    arr = np.array(lims, dtype=float).reshape(-1, 2)
    return arr[:, 0], arr[:, 1]

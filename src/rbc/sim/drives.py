"""Drive dynamics and losses between a controller's commands and the actual port efforts
(issue 23 item 3; the record's ``drive`` of an actuator, :class:`rbc.ir.record.Drive`).

Per actuator i with command c_i (the controller's effort command divided by the torque
constant K_i: a current for a current loop) the drive has a state z_i when it has a lag
``T_i > 0`` (``ż = (c − z)/T``; the exact response to a held command is
``z(t) = c + (z₀ − c) e^{−t/T}``), else ``z_i = c_i``. The motor effort ``m = K z`` is
limited by the torque–speed line while motoring (``m ℓ̇ > 0``:
``|m| ≤ stall·max(0, 1 − |ℓ̇|/no_load_speed)``; braking: ``|m| ≤ stall``) and passes the
transmission with efficiency η depending on the sign of the power:
``f = η m`` when ``m ℓ̇ ≥ 0`` (the drive delivers power), ``f = m/η`` when it absorbs it.
The drive loss ``P_loss = (m − f) ℓ̇ ≥ 0`` in both cases; the drives draw ``m ℓ̇`` =
``f ℓ̇ + P_loss``. The mechanism's energy ledger holds with the actual efforts f; the drive
losses are a separate term.

The efficiency makes f discontinuous where ``m ℓ̇`` changes sign. The plants therefore hold
the power quadrant over each control period (reduced backend) or physics step (MuJoCo),
decided from the state at its start — a sampled drive, as a digital drive controller is —
so the reduced backend's adaptive integrator sees a continuous right-hand side (with the
sign decided at every stage, Stewart with η = 0.9 ran over 10× slower). Where the sign
flips inside a period, the loss of that period may be slightly negative; the energy ledger
is unaffected (it uses the efforts applied).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rbc.ir.record import Drive, Record


@dataclass(frozen=True, eq=False)
class Drives:
    """The drives of a record's actuators as arrays (n_act,) (module docstring).

    Attributes:
        lag, gain, stall, no_load_speed, efficiency: per actuator (no drive: 0, 1, inf, inf,
            1 — the command is the effort).
        lagged: (n_z,) indices of the actuators with a lag (the drive states z).
    """

    lag: np.ndarray
    gain: np.ndarray
    stall: np.ndarray
    no_load_speed: np.ndarray
    efficiency: np.ndarray
    lagged: np.ndarray

    @classmethod
    def of(cls, record: Record) -> Drives | None:
        """The drives of a record, or None when no actuator has drive data."""
        ds = [a.drive for a in record.actuators]
        if all(d is None for d in ds):
            return None
        d0 = Drive()
        ds = [d0 if d is None else d for d in ds]

        def col(key: str) -> np.ndarray:
            return np.array([getattr(d, key) for d in ds], dtype=float)

        lag = col("lag")
        return cls(lag, col("torque_constant"), col("stall"), col("no_load_speed"),
                   col("efficiency"), np.flatnonzero(lag > 0.0))

    @property
    def n_states(self) -> int:
        return int(self.lagged.size)

    def command(self, effort: np.ndarray) -> np.ndarray:
        """Drive commands c (n_act,) for the controller's effort commands (``c = f/K``)."""
        return np.asarray(effort, dtype=float) / self.gain

    def initial(self, c: np.ndarray) -> np.ndarray:
        """Drive states (n_z,) settled at command c (``z = c``)."""
        return np.asarray(c, dtype=float)[self.lagged].copy()

    def rates(self, z: np.ndarray, c: np.ndarray) -> np.ndarray:
        """``ż = (c − z)/T`` (n_z,)."""
        return (c[self.lagged] - z) / self.lag[self.lagged]

    def efforts(self, z: np.ndarray, c: np.ndarray, rate: np.ndarray,
                delivering: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """``(f, m)`` (n_act,): actual port efforts and limited motor efforts at drive states z,
        commands c and port rates ℓ̇ [rad/s | m/s] (module docstring). ``delivering``
        (n_act,) bool fixes the efficiency's power quadrant (True: ``f = η m``) instead of
        the sign of ``m ℓ̇`` — a plant holds it over a control period (:meth:`quadrant`), so
        the right-hand side an adaptive integrator sees is continuous within the period."""
        s = np.array(c, dtype=float)
        s[self.lagged] = z
        m = self.gain * s
        rate = np.nan_to_num(np.asarray(rate, dtype=float))
        motoring = m * rate > 0.0
        with np.errstate(invalid="ignore"):  # inf · 0 for drives without a limit
            line = np.where(np.isfinite(self.no_load_speed),
                            self.stall * np.maximum(0.0, 1.0 - np.abs(rate) / self.no_load_speed),
                            self.stall)
        limit = np.where(motoring, line, self.stall)
        m = np.clip(m, -limit, limit)
        if delivering is None:
            delivering = m * rate >= 0.0
        f = np.where(delivering, self.efficiency * m, m / self.efficiency)
        return f, m

    def quadrant(self, z: np.ndarray, c: np.ndarray, rate: np.ndarray) -> np.ndarray:
        """(n_act,) bool: the drive delivers power (``m ℓ̇ ≥ 0``) at this state."""
        f, m = self.efforts(z, c, rate)
        return m * np.nan_to_num(np.asarray(rate, dtype=float)) >= 0.0


class SteppedDrives:
    """Drive states advanced at a fixed physics step h, for engines stepped one step at a
    time (MuJoCo): per step the efforts are evaluated at the step's start (state z, port
    rates), held over the step, and z is updated by the exact response to the held command,
    ``z ← c + (z − c) e^{−h/T}``; the loss of the step is ``(m − f)·Δℓ``.

    Attributes:
        work_losses: the drive losses so far [J].
    """

    def __init__(self, drives: Drives, h: float) -> None:
        self.drives = drives
        self.decay = np.exp(-h / drives.lag[drives.lagged])
        self.z: np.ndarray | None = None
        self.c = np.zeros(drives.lag.size)
        self.work_losses = 0.0

    def hold(self, effort: np.ndarray) -> None:
        """Hold the controller's effort commands (the first settles the drive states)."""
        self.c = self.drives.command(effort)
        if self.z is None:
            self.z = self.drives.initial(self.c)

    def efforts(self, rate: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(f, m)`` at the current drive states and port rates ℓ̇ (n_act,)."""
        z = self.drives.initial(self.c) if self.z is None else self.z
        return self.drives.efforts(z, self.c, rate)

    def step(self, m: np.ndarray, f: np.ndarray, dl: np.ndarray) -> None:
        """Book the loss of a step with port displacement increments dl and advance z."""
        self.work_losses += float((m - f) @ np.nan_to_num(dl))
        c = self.c[self.drives.lagged]
        self.z = c + (self.z - c) * self.decay

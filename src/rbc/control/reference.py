"""Reference motions on a mode's closure manifold for the tracking law (docs/allocation.md
"References").

:class:`OffsetReference` moves the independent coordinates of a mode from a closed
configuration q₀ by ``d(t) = a · s(t)`` with the smooth profile ``s(t) = sin²(π t / T)``
(starts at rest, period T): a vector joint's coordinates by ``x₀ + d``, a floating root's
pose by ``T₀ exp(d_b)`` — a fixed twist direction, so its body twist is exactly ``ḋ_b`` and
its rate ``d̈_b`` (``ad(d_b) ḋ_b = 0``). The dependent coordinates follow on the manifold: each
sample is one predictor–corrector step (:class:`rbc.model.closure.ClosureState`) from the
last one (from q₀ for the first or an earlier time), which moves the independent
coordinates exactly and closes the others to the closure tolerance. Speeds and
accelerations of all coordinates through the composer lift: ``v_d = E u_d``,
``a_d = E u̇_d + Ė u_d``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from rbc.compose.lift import composer_lift
from rbc.model.closure import ClosureState
from rbc.model.kinematics import residual


class ReferenceFailure(RuntimeError):
    """A sample of the reference left the partition (a computational reconfiguration)."""


@dataclass(frozen=True, eq=False)
class ReferenceSample:
    """The reference at one time: q (nq,), v (nv,), a (nv,) of the mode model, and
    u, udot (n_u,) its independent speeds and accelerations; residual: ‖ρ(q)‖∞ [rad, m]."""

    t: float
    q: np.ndarray
    v: np.ndarray
    a: np.ndarray
    u: np.ndarray
    udot: np.ndarray
    residual: float


@dataclass(eq=False)
class OffsetReference:
    """Offsets ``a · sin²(π t / T)`` of the independent coordinates (module docstring).

    Attributes:
        mm: the mode's :class:`~rbc.compose.dynamics.MemberModel`; data: its scratch data;
        part: the mode's partition; q0: (nq,) closed start configuration;
        amplitude: (n_u,) a [rad or m per coordinate; a floating root's six entries a
        body-frame twist ``[ω; v]``]; period: T [s].
    """

    mm: object
    data: object
    part: object
    q0: np.ndarray
    amplitude: np.ndarray
    period: float
    _last: tuple[float, np.ndarray] | None = field(default=None, repr=False)

    def profile(self, t: float) -> tuple[float, float, float]:
        """``(s, ṡ, s̈)`` at t: ``s = sin²(π t/T) = (1 − cos(2π t/T))/2``."""
        w = 2.0 * np.pi / self.period
        return (0.5 * (1.0 - np.cos(w * t)), 0.5 * w * np.sin(w * t),
                0.5 * w * w * np.cos(w * t))

    def __call__(self, t: float) -> ReferenceSample:
        """The sample at t [s].

        Raises:
            ClosureError: the corrector does not converge; ReferenceFailure: the step
                re-partitioned (the amplitude reaches a singular configuration).
        """
        kin, part = self.mm.kin, self.part
        s, sd, sdd = self.profile(t)
        a = np.asarray(self.amplitude, dtype=float)
        if self._last is not None and t >= self._last[0]:
            t0, q0 = self._last
            step = a * (s - self.profile(t0)[0])
        else:
            q0, step = self.q0, a * s
        st = ClosureState(kin, part, np.array(q0, dtype=float))
        q = st.step(step, 1.0) if np.any(step) else np.array(q0, dtype=float)
        if st.partition is not part:
            raise ReferenceFailure(f"the reference re-partitioned at t = {t:.4f} s: "
                                   f"{'; '.join(st.events)}")
        self._last = (float(t), q)
        u, udot = a * sd, a * sdd
        lifted = composer_lift(self.mm.structure, self.mm.dm, self.data, q)
        v, edu = lifted.curvature(u)
        return ReferenceSample(float(t), q, v, lifted.E @ udot + edu, u, udot,
                               float(np.abs(residual(kin, q)).max(initial=0.0)))


__all__: Sequence[str] = ("OffsetReference", "ReferenceFailure", "ReferenceSample")

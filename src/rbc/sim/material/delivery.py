"""The delivered-mass metric: a state machine over each particle's sampled track
(docs/excavation.md, "Delivered mass").

A particle counts as **delivered** only after it was *lifted in the bucket*, *released* and
*settled inside the receiving region*. Per particle and per sample, in this order:

1. **carried** — it is inside the bucket's volume (:meth:`rbc.sim.material.scene.Bucket.
   inside`, bucket frame) *and* its centre is more than ``clearance`` above the bed's top
   (lifted out of the bed, not merely scooped along). Any state goes to ``carried``.
2. a carried particle outside the bucket's volume is **released**;
3. a released particle inside the region whose speed has stayed below ``settle_speed`` for
   ``settle_time`` (consecutive samples) is **delivered**;
4. a delivered particle that leaves the region is released again (it may settle back).

Everything else keeps its state; every particle starts in the **bed**. A particle pushed
off the bed, or lifted and dropped outside the region, or resting in the bucket over the
bin, is never delivered. The delivered mass is the particle mass times the number of
particles delivered at the last sample.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: particle states
BED, CARRIED, RELEASED, DELIVERED = 0, 1, 2, 3
STATE_NAMES = ("bed", "carried", "released", "delivered")


@dataclass(frozen=True)
class DeliveryRule:
    """Thresholds of the state machine (module docstring).

    Attributes:
        bed_top: height of the bed's top above the floor [m].
        clearance: how far above ``bed_top`` a carried particle's centre must be [m].
        settle_speed: speed below which a particle is at rest [m/s].
        settle_time: how long it must stay below it [s].
    """

    bed_top: float
    clearance: float
    settle_speed: float = 0.05
    settle_time: float = 0.2


@dataclass(frozen=True)
class Delivery:
    """The metric's result.

    Attributes:
        states: (T, N) int8 state of each particle at each sample.
        delivered: (N,) bool, delivered at the last sample; mass [kg] of those.
        ever_carried: (N,) bool, carried at some sample.
        counts: ``{state name: particles in it at the last sample}``.
        first_delivery: time [s] of the first delivery (None: none).
    """

    states: np.ndarray
    delivered: np.ndarray
    mass: float
    ever_carried: np.ndarray
    counts: dict[str, int]
    first_delivery: float | None

    def summary(self) -> dict:
        """JSON-ready figures: delivered mass and count, carried count, final counts."""
        return {"delivered_mass": self.mass, "delivered": int(self.delivered.sum()),
                "ever_carried": int(self.ever_carried.sum()), "final_counts": self.counts,
                "first_delivery": self.first_delivery}


def delivery(time: np.ndarray, heights: np.ndarray, speeds: np.ndarray,
             in_bucket: np.ndarray, in_region: np.ndarray, rule: DeliveryRule,
             particle_mass: float) -> Delivery:
    """Run the state machine over sampled tracks (module docstring).

    Args:
        time: (T,) sample times [s], increasing.
        heights: (T, N) particle centre heights above the floor [m].
        speeds: (T, N) particle speeds [m/s].
        in_bucket: (T, N) bool, inside the bucket's volume.
        in_region: (T, N) bool, inside the receiving region.
        rule: the thresholds; particle_mass: mass of one particle [kg].

    Returns:
        :class:`Delivery`.

    Raises:
        ValueError: arrays of mismatched shapes or non-increasing times.
    """
    time = np.asarray(time, dtype=float)
    arrays = [np.asarray(a) for a in (heights, speeds, in_bucket, in_region)]
    shape = arrays[0].shape
    if len(shape) != 2 or shape[0] != time.size or any(a.shape != shape for a in arrays):
        raise ValueError(f"delivery: tracks must all be (T, N) with T = {time.size} samples; "
                         f"got {[a.shape for a in arrays]}")
    if time.size > 1 and np.any(np.diff(time) <= 0):
        raise ValueError("delivery: sample times must increase")
    z, v, bucket, region = arrays
    n_t, n = shape
    states = np.zeros(shape, dtype=np.int8)
    state = np.full(n, BED, dtype=np.int8)
    rest_since = np.full(n, np.nan)  # time since when each particle has been at rest
    ever = np.zeros(n, dtype=bool)
    first = None
    for k in range(n_t):
        t = time[k]
        carried = bucket[k] & (z[k] > rule.bed_top + rule.clearance)
        state[carried] = CARRIED
        ever |= carried
        state[(state == CARRIED) & ~bucket[k]] = RELEASED
        still = v[k] < rule.settle_speed
        rest_since = np.where(still, np.where(np.isnan(rest_since), t, rest_since), np.nan)
        settled = still & (t - rest_since >= rule.settle_time - 1e-12)
        new = (state == RELEASED) & region[k] & settled
        if first is None and new.any():
            first = float(t)
        state[new] = DELIVERED
        state[(state == DELIVERED) & ~region[k]] = RELEASED
        states[k] = state
    done = state == DELIVERED
    counts = {name: int(np.sum(state == i)) for i, name in enumerate(STATE_NAMES)}
    return Delivery(states, done, float(done.sum()) * particle_mass, ever, counts, first)

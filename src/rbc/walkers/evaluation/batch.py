"""Monte Carlo batch evaluation: controllers under random reality gaps, in parallel.

Each sample ``i`` draws a true plant (mass/inertia scale, payload, actuator effectiveness
and bias, joint friction) and scheduled disturbances (an ice patch, a trip) from its own
generator ``default_rng(SeedSequence(seed).spawn(i + 1)[i])`` — child ``i`` of the seed's
sequence, independent of how many samples there are and of which process runs it — so the
results depend only on ``(seed, i)``, never on the scheduling. Every controller meets the
same draws (common random numbers). One job = one (sample, controller) walk
(:func:`rbc.walkers.environment.plant_sim.walk_plant`); the jobs are a bag of
:func:`rbc.batch.run_bag`: in this process (one worker), on a local Dask cluster, or on an
existing one (``--scheduler ADDRESS`` / ``RBC_DASK_SCHEDULER``). A job that raises is
listed under ``failures`` with its sample and controller; the other jobs still count.

Per controller: fall rate, tracking EMA (final EMA of ``|y|^2``; mean and median over the
runs that did not fall), and the contraction estimate ``rho`` pooled over the non-falling
runs by least squares on ``|x_{k+1} - x*| ~ rho |x_k - x*|``
(:func:`rbc.walkers.evaluation.metrics.contraction_terms`).
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass

import numpy as np

from rbc.batch import SYNCHRONOUS, run_bag, scheduler_address, task_rng
from rbc.walkers.errors import WalkerError

BATCH_CONTROLLERS = ("fl", "adaptive", "rise", "composite")


@dataclass(frozen=True)
class BatchConfig:
    """What to run.

    Attributes:
        model: walker with virtual constraints. controllers: names of
            :data:`rbc.walkers.environment.plant_sim.PLANT_CONTROLLERS`. samples: Monte Carlo
            samples.
        strides: strides per walk. seed: root seed. dt: step [s] (None: model's or 1 ms).
        slope: [rad]. model: a registered name or a model file path (each worker reads it;
            with a remote Dask cluster the path must exist on the workers).
        stride_time_limit: [s] (None: the model's default).
    """

    model: str = "rabbit"
    controllers: tuple[str, ...] = BATCH_CONTROLLERS
    samples: int = 100
    strides: int = 20
    seed: int = 0
    dt: float | None = None
    slope: float = 0.0
    stride_time_limit: float | None = None

    def __post_init__(self) -> None:
        from rbc.walkers.environment.plant_sim import PLANT_CONTROLLERS

        if self.samples < 1 or self.strides < 1:
            raise WalkerError(f"samples and strides must be >= 1, got {self.samples}, "
                              f"{self.strides}")
        for c in self.controllers:
            if c not in PLANT_CONTROLLERS:
                raise WalkerError(f"unknown controller '{c}'", choices=PLANT_CONTROLLERS,
                                  got=c)


def sample_rng(seed: int, index: int) -> np.random.Generator:
    """Generator of sample ``index``: child ``index`` of ``SeedSequence(seed)``
    (:func:`rbc.batch.task_rng`)."""
    return task_rng(seed, index)


def draw_scenario(seed: int, index: int, strides: int, nu: int, mu: float):
    """The true plant and disturbances of sample ``index`` (module docstring).

    Distributions: mass scale U(0.9, 1.1), inertia scale U(0.85, 1.15), payload U(0, 5) kg,
    effectiveness U(0.85, 1.0) and bias U(-5, 5) N m per actuator, Coulomb joint friction
    U(1, 4) N m (Stribeck knee of ``JointFriction``'s defaults); with probability 1/2 an ice
    patch of 0.8 m at U(1, 4) m with ``mu`` U(0.25, 0.5) (stick-slip ground always on), and
    with probability 1/2 a trip at the swing foot in a stride U{2, ..., strides - 2},
    U(0.05, 0.2) s into it, of ``(U(-4, -1), U(0, 1))`` N s.

    Returns:
        ``(Scenario, description dict)``.
    """
    from rbc.walkers.environment.effects import Ground, Impulse, JointFriction
    from rbc.walkers.environment.plant import Mismatch
    from rbc.walkers.environment.plant_sim import Scenario

    rng = sample_rng(seed, index)
    mm = Mismatch(mass_scale=float(rng.uniform(0.9, 1.1)),
                  inertia_scale=float(rng.uniform(0.85, 1.15)),
                  payload=float(rng.uniform(0.0, 5.0)),
                  effectiveness=tuple(rng.uniform(0.85, 1.0, nu).tolist()),
                  bias=tuple(rng.uniform(-5.0, 5.0, nu).tolist()))
    fric = JointFriction(tau_c=float(rng.uniform(1.0, 4.0)))
    ice = rng.uniform() < 0.5
    x0, mu_ice = float(rng.uniform(1.0, 4.0)), float(rng.uniform(0.25, 0.5))
    patches = ((x0, x0 + 0.8, mu_ice),) if ice else ()
    trip = rng.uniform() < 0.5 and strides >= 4
    k, tt = int(rng.integers(2, max(3, strides - 1))), float(rng.uniform(0.05, 0.2))
    F = (float(rng.uniform(-4.0, -1.0)), float(rng.uniform(0.0, 1.0)))
    impulses = (Impulse(k, tt, "swing_foot", F),) if trip else ()
    sc = Scenario(mm, fric, Ground(mu, patches, stick_slip=True), impulses)
    desc = {"mismatch": asdict(mm), "tau_c": fric.tau_c, "ice": list(patches[0]) if ice
            else None, "trip": {"stride": k, "time": tt, "impulse": list(F)} if trip else None}
    return sc, desc


def run_job(job: tuple) -> dict:
    """One walk: ``job = (config dict, sample index, controller)`` -> result row (dict).

    Module-level and pure in its arguments so it pickles to worker processes and Dask.
    """
    from rbc.walkers.control.context import ControlContext
    from rbc.walkers.control.vc import vc_initial_state
    from rbc.walkers.environment.plant_sim import walk_plant
    from rbc.walkers.evaluation.metrics import contraction_terms
    from rbc.walkers.hybrid.registry import resolve_model, stride_time_limit

    cfg, index, controller = BatchConfig(**job[0]), job[1], job[2]
    model = resolve_model(cfg.model)
    dt = cfg.dt or float(model.params.get("dt", 1e-3))
    ctx = ControlContext.from_model(model, cfg.slope, dt)
    sc, desc = draw_scenario(cfg.seed, index, cfg.strides, model.B.shape[1], model.mu)
    rate = float(model.params["controller"].get("initial_phase_rate", 1.0))
    x0 = vc_initial_state(ctx.extra["fl"], rate)
    t0 = time.perf_counter()
    lim = cfg.stride_time_limit or stride_time_limit(model)
    res = walk_plant(ctx, controller, sc, x0, cfg.strides, t_max=lim)
    ab, aa = contraction_terms(res.poincare) if not res.fell else (0.0, 0.0)
    return {"sample": index, "controller": controller, "fell": bool(res.fell),
            "fall_reason": res.fall_reason, "strides_completed": len(res.strides),
            "tracking_ema": float(res.ema[-1]), "contraction_ab": ab, "contraction_aa": aa,
            "slip": float(sum(s.extra["slip"] for s in res.strides)),
            "friction_work": float(sum(s.extra["friction_work"] for s in res.strides)),
            "scenario": desc, "wall_time": time.perf_counter() - t0}


def jobs_of(cfg: BatchConfig) -> list[tuple]:
    """All (config, sample, controller) jobs, sample-major."""
    d = asdict(cfg)
    return [(d, i, c) for i in range(cfg.samples) for c in cfg.controllers]


def summarize(cfg: BatchConfig, rows: list[dict], wall_time: float,
              failures: list[dict] | None = None) -> dict:
    """Per-controller fall rate, EMA statistics and pooled contraction estimate.

    ``failures``: ``{"sample", "controller", "error"}`` of jobs that raised (not walks that
    fell); they are listed and left out of the statistics.
    """
    rows = sorted(rows, key=lambda r: (r["sample"], cfg.controllers.index(r["controller"])))
    per = {}
    for c in cfg.controllers:
        rs = [r for r in rows if r["controller"] == c]
        ok = [r for r in rs if not r["fell"]]
        ema = np.array([r["tracking_ema"] for r in ok])
        aa = sum(r["contraction_aa"] for r in ok)
        per[c] = {"runs": len(rs), "falls": len(rs) - len(ok),
                  "fall_rate": (len(rs) - len(ok)) / len(rs) if rs else None,
                  "ema_mean": float(ema.mean()) if len(ema) else None,
                  "ema_median": float(np.median(ema)) if len(ema) else None,
                  "contraction": sum(r["contraction_ab"] for r in ok) / aa if aa > 0 else None,
                  "mean_slip": float(np.mean([r["slip"] for r in rs])) if rs else None,
                  "mean_friction_work": (float(np.mean([r["friction_work"] for r in rs]))
                                         if rs else None)}
    return {"config": asdict(cfg), "wall_time": wall_time, "controllers": per, "runs": rows,
            "failures": list(failures or [])}


def run_batch(cfg: BatchConfig, workers: int = 1, progress=None,
              scheduler: str | None = None) -> dict:
    """Run every job (:func:`rbc.batch.run_bag`) and summarize.

    Args:
        workers: worker processes of a local Dask cluster; 1 runs the jobs in this process.
        progress: optional ``progress(done, total)`` after each finished job.
        scheduler: address of an existing Dask scheduler (default ``$RBC_DASK_SCHEDULER``;
            then ``workers`` is ignored: the cluster's workers run the jobs).

    Returns:
        The summary of :func:`summarize` (``runs`` sorted by sample then controller; jobs
        that raised under ``failures``).

    Raises:
        WalkerError: bad configuration (an invalid model file, a model that cannot take a
            controller: the message lists those it can). SchedulerError: the scheduler does
            not answer.
    """
    from rbc.walkers.control.controllers import controllers_for, is_footed
    from rbc.walkers.environment.plant_sim import PLANT_CONTROLLERS
    from rbc.walkers.hybrid.registry import resolve_model

    model = resolve_model(cfg.model)  # refuse a bad file here, not in every worker
    usable = () if is_footed(model) else tuple(
        c for c in controllers_for(model) if c in PLANT_CONTROLLERS)
    for c in cfg.controllers:
        if c not in usable:
            raise WalkerError(f"model '{model.name}' cannot run the Monte Carlo batch under "
                              f"'{c}' (the batch needs a point-foot model with virtual "
                              "constraints)", choices=usable or None, got=c)
    jobs = jobs_of(cfg)
    where = scheduler_address(scheduler) or (SYNCHRONOUS if workers <= 1 else None)
    res = run_bag(run_job, jobs, label=f"walk batch ({cfg.model})", scheduler=where,
                  workers=None if where else workers,
                  progress=None if progress is None else (lambda d, n, _f: progress(d, n)))
    failures = [{"sample": f.inputs[1], "controller": f.inputs[2], "error": f.error}
                for f in res.failures]
    return summarize(cfg, [r for r in res.values if r is not None], res.wall_time, failures)

"""The ``service`` estimate source: the simulated scheduler asks the product itself, and the product learns as jobs end.

It is production's loop (:class:`training.service_loop.ServiceLoop`): champions chosen by the real training pipeline
(forward validation, the site's rules among the candidates, the guard) first on the workload's history, then again
whenever a pair is due by the retrain worker's own rule as simulated jobs finish; online champions learning every run
the store records; a real :class:`~predictor.oracle.RuntimeOracle` (envelopes, intervals, floors, the request as a
cap) answering. Members, folds and the retrain rule are the settings', as a site runs them: there is no second
learner here that production does not run. Only what the scheduler plans with is the simulation's choice
(:class:`LearningOptions`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from predictor.catalog import Catalog
from predictor.domain import Estimate, Measurement, ServedEstimate, Source, Target
from predictor.intervals import scaled
from predictor.oracle import JobQuery, Oracle, ResolvedJob, ServedModel
from scheduler.run_times import ObservingOracle, QuantileOracle, job_key
from scheduler.state import Job, Machine, Run
from simulator.workload import Workload
from training.memory import MemoryChampions, MemoryMeasurements
from training.service_loop import LoopCosts, ServiceLoop
from training.settings import WorkerSettings

# upcoming jobs of an algorithm estimated together, in one model call per platform
CHUNK = 512


@dataclass(frozen=True)
class LearningOptions:
    """Which of the service's numbers the scheduler plans with: the point estimate, ``qLEVEL`` (the point scaled by the
    serving model's residual quantile at LEVEL, e.g. ``q0.75``) or the ``limit`` (at ``limit_quantile``, the settings'
    default when None)."""

    plan: str = "point"
    limit_quantile: float | None = None

    def __post_init__(self) -> None:
        if self.plan not in ("point", "limit") and not (self.plan.startswith("q") and _level(self.plan) is not None):
            raise ValueError(f"plan is point, limit or qLEVEL (0 < LEVEL < 1), got {self.plan!r}")


def _level(plan: str) -> float | None:
    """LEVEL of a ``qLEVEL`` plan, or None when it is not one."""
    try:
        level = float(plan[1:])
    except ValueError:
        return None
    return level if 0 < level < 1 else None


class LearningOracle(Oracle, QuantileOracle, ObservingOracle):
    """Estimates from the service's champions, retrained as simulated jobs end (see the module docstring)."""

    def __init__(
        self, workload: Workload, settings: WorkerSettings, options: LearningOptions = LearningOptions()
    ) -> None:
        if options.limit_quantile is not None:
            settings = settings.model_copy(update={"limit_quantile": options.limit_quantile})
        self.options = options
        self.loop = ServiceLoop(settings, service_catalog(workload))
        self.oracle = self.loop.oracle
        self.eligible = {job_key(j.algorithm, j.params): tuple(j.true_times) for j in workload.jobs}
        self.queue: dict[str, list[tuple[str, dict[str, float], tuple[str, ...]]]] = {}  # per algorithm, submit order
        self.position: dict[str, int] = {}
        for spec in sorted(workload.jobs, key=lambda j: j.submit):
            key, jobs = job_key(spec.algorithm, spec.params), self.queue.setdefault(spec.algorithm, [])
            self.position[key] = len(jobs)
            jobs.append((key, dict(spec.features or {}), tuple(spec.true_times)))
        self.answers: dict[tuple[str, str], tuple[object, dict[str, Estimate]]] = {}  # per pair: (what served, answers)
        self.served: dict[str, dict[str, Estimate]] = {}
        self.served_by: dict[str, dict[str, ServedModel | None]] = {}  # the model behind each first answer
        # quantiles() of jobs that outlived their estimate
        self.ladders: dict[tuple[str, str], tuple[float, ...]] = {}
        self.instant = workload.clock()
        self.loop.record(workload.history)

    @property
    def settings(self) -> WorkerSettings:
        return self.loop.settings

    @property
    def store(self) -> MemoryMeasurements:
        return self.loop.store

    @property
    def book(self) -> MemoryChampions:
        return self.loop.book

    @property
    def costs(self) -> LoopCosts:
        return self.loop.costs

    @property
    def decisions(self) -> list[dict[str, Any]]:
        return self.loop.decisions

    def answer(self, job: JobQuery) -> dict[str, Estimate]:
        """What the service serves for the job on each platform it can run on; the first answer is remembered.

        Answers are computed a chunk of upcoming jobs at a time, one model call per pair, and kept until
        the pair's served model changes: the numbers are those one call per job would give. Planning with
        the ``limit`` hands the scheduler the limit as the seconds (the service still scores its points).
        """
        key = job_key(job.algorithm, job.params)
        answer = {p: self._pair_answer(job.algorithm, p, key) for p in self.eligible[key] if job.allows(p)}
        if key not in self.served:
            self.served[key] = answer
            self.served_by[key] = {p: self.oracle.models.get((job.algorithm, p)) for p in answer}
        if self.options.plan == "limit":
            return {
                p: e.model_copy(update={"seconds": e.limit}) if e.limit is not None else e for p, e in answer.items()
            }
        if self.options.plan != "point":
            level = _level(self.options.plan)
            return {p: self._at(key, p, e, level) for p, e in answer.items()}
        return answer

    def _at(self, key: str, platform: str, estimate: Estimate, level: float | None) -> Estimate:
        """``estimate`` planned at its serving model's residual quantile ``level`` (as it is without quantiles)."""
        model = self.served_by.get(key, {}).get(platform)
        if level is None or estimate.seconds is None or model is None or not model.quantiles:
            return estimate
        return estimate.model_copy(update={"seconds": float(scaled(estimate.seconds, dict(model.quantiles), level))})

    def quantiles(self, job: Job, platform: str) -> tuple[float, ...]:
        """The upper quantiles of the job's first served interval on ``platform``, in seconds ascending: its point
        scaled by the serving model's residual quantiles at the recorded levels above the median, and the served
        upper end and limit (which carry any widening). Empty where that answer had no interval.

        What ``correction=quantile`` climbs when a running job outlives its planning time.
        """
        key = job_key(job.algorithm, job.params)
        known = self.ladders.get((key, platform))
        if known is not None:
            return known
        estimate = self.served.get(key, {}).get(platform)
        model = self.served_by.get(key, {}).get(platform)
        ladder: tuple[float, ...] = ()
        if estimate is not None and estimate.seconds is not None and model is not None and model.quantiles:
            recorded = dict(model.quantiles)
            values = {float(scaled(estimate.seconds, recorded, level)) for level in recorded if level > 0.5}
            values.update(v for v in (estimate.upper, estimate.limit) if v is not None)
            ladder = tuple(sorted(v for v in values if v > estimate.seconds))
        self.ladders[(key, platform)] = ladder
        return ladder

    def _pair_answer(self, algorithm: str, platform: str, key: str) -> Estimate:
        """The served model's estimate of job ``key`` on ``platform``, computing it with the next chunk of jobs if needed.

        A chunk's answers hold while the pair is served by the same model and, for a champion that learns online, until
        it learns again: its jobs are then answered one at a time, each by what it has learned so far.
        """
        pair = (algorithm, platform)
        model = self.oracle.models.get(pair)
        member = self.store.live.get((algorithm, platform, Target.TIME))
        live = member is not None and model is not None and member.version == model.champion.version
        served = (model, member.revision if live and member is not None else None)
        cached = self.answers.get(pair)
        if cached is None or cached[0] != served:
            cached = self.answers[pair] = (served, {})
        found = cached[1]
        if key not in found:
            start = self.position[key]
            chunk = [
                (k, f)
                for k, f, where in self.queue[algorithm][start : start + (1 if live else CHUNK)]
                if platform in where and k not in found
            ]
            answers = self.oracle.estimate_jobs([ResolvedJob(algorithm, (platform,), f) for _, f in chunk])
            found.update((k, a[platform]) for (k, _), a in zip(chunk, answers, strict=True))
        return found[key]

    def observe(self, job: Job, run: Run, machine: Machine, wall: float) -> None:
        """A job ended cleanly: the service records it beside the estimate it was served, and learns from it."""
        run_id = f"sim-{job.id}-{run.attempt}"
        measurement = Measurement(
            run_id=run_id,
            algorithm=job.algorithm,
            platform=machine.platform,
            features=dict(job.features or {}),
            wall_seconds=max(wall, 0.0),
            source=Source.PRODUCTION,
            recorded_at=self.instant(run.start + max(wall, 0.0)),
            context={"wait_seconds": max(run.start - job.submit, 0.0)},
        )
        estimate = self.served.get(job_key(job.algorithm, job.params), {}).get(machine.platform)
        served = (
            ServedEstimate.of(run_id, job.algorithm, estimate, origin="scheduler") if estimate is not None else None
        )
        self.loop.record([measurement], [served] if served is not None else [])


def service_catalog(workload: Workload) -> Catalog:
    """A catalog of the workload's algorithms and platforms (the oracle reads no parameters or commands of it)."""
    platforms = {
        name: {
            "kind": "cpu",
            "cores": 1,
            "clock_ghz": 1.0,
            "memory_gb": 1.0,
            "disk": "hdd",
            "power_watts": max(p.power_watts, 1.0),
        }
        for name, p in workload.cluster.platforms.items()
    }
    runs_on: dict[str, set[str]] = {}
    for spec in workload.jobs:
        runs_on.setdefault(spec.algorithm, set()).update(spec.true_times)
    for m in workload.history:
        runs_on.setdefault(m.algorithm, set()).add(m.platform)
    algorithms: dict[str, dict[str, dict[str, dict[str, object]]]] = {
        name: {"parameters": {}, "implementations": {p: {} for p in sorted(where) if p in platforms}}
        for name, where in runs_on.items()
    }
    return Catalog.model_validate({"platforms": platforms, "algorithms": algorithms, "source": "simulated workload"})


def estimates_served(oracle: Any, jobs: Sequence[Any]) -> list[tuple[float, float]]:
    """(served seconds, true seconds) of each job on its first platform, for accuracy figures.

    ``oracle`` is any online oracle that keeps each job's first answer in ``served`` (this one, ``last_two_mean``'s).
    """
    out = []
    for spec in jobs:
        platform, true = next(iter(spec.true_times.items()))
        estimate = oracle.served.get(job_key(spec.algorithm, spec.params), {}).get(platform)
        if estimate is not None and estimate.seconds is not None:
            out.append((estimate.seconds, true))
    return out

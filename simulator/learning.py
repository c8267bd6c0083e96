"""The ``service`` estimate source: the simulated scheduler asks the product itself, and the product learns as jobs end.

The estimates come from a real :class:`~predictor.oracle.RuntimeOracle` (envelopes, intervals,
floors) serving champions that the real training pipeline chose (cross-validation, selection,
the guard), first on the workload's history, then again whenever a pair is due by the retrain
worker's own rule (:func:`training.worker.why_due`) as simulated jobs finish. Training runs
synchronously, on the simulation's clock; tracking and the registry are kept in memory
(:mod:`training.memory`), so retraining hundreds of times stays affordable.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from predictor.catalog import Catalog
from predictor.domain import Estimate, Measurement, ServedEstimate, Source
from predictor.intervals import scaled
from predictor.oracle import Job as OracleJob
from predictor.oracle import JobQuery, Oracle, RuntimeOracle, ServedModel, serve_model
from scheduler.run_times import ObservingOracle, QuantileOracle, job_key
from scheduler.state import Job, Machine, Run
from simulator.workload import Workload
from training.dataset import load_training_sets
from training.memory import MemoryChampions, MemoryMeasurements, MemoryTracker
from training.pipeline import decision_row, train
from training.settings import WorkerSettings
from training.worker import why_due

# Members that fit in milliseconds to a second on thousands of rows: a simulation retrains hundreds of times.
# The networks and the SVR search (seconds to minutes per fit) are left out; name them to include them.
SIMULATION_MODELS = (
    "mean",
    "profile_mean",
    "last_two_mean",
    "requested_time",
    "linear",
    "linear_log",
    "linear_log_smeared",
    "lad_log",
    "quadratic_log",
    "simple_linear",
    "simple_linear_log",
    "isotonic",
    "isotonic_log",
    "lightgbm",
    "lightgbm_log",
    "lightgbm_log_smeared",
)


CHUNK = 512  # upcoming jobs of an algorithm estimated together, in one model call per platform


@dataclass(frozen=True)
class LearningOptions:
    """How the simulated service learns: which members, how many folds, when a pair is due, how often drift is checked;
    and which of its numbers the scheduler plans with: the point estimate or the ``limit`` (at ``limit_quantile``,
    the settings' default when None)."""

    models: tuple[str, ...] = SIMULATION_MODELS
    folds: int = 5
    min_new_runs: int = 20
    min_new_fraction: float = 0.5
    drift_every: int = 10  # job ends of a pair between two drift checks
    plan: Literal["point", "limit"] = "point"
    limit_quantile: float | None = None


@dataclass
class LearningLog:
    """What the service did during a simulation: retrains, their seconds, and each decision."""

    retrains: int = 0
    train_seconds: float = 0.0
    decisions: list[dict[str, Any]] = field(default_factory=list)


class LearningOracle(Oracle, QuantileOracle, ObservingOracle):
    """Estimates from the service's champions, retrained as simulated jobs end (see the module docstring)."""

    def __init__(
        self, workload: Workload, settings: WorkerSettings, options: LearningOptions = LearningOptions()
    ) -> None:
        self.settings = settings.model_copy(
            update={
                "cv_folds": options.folds,
                "train_models": list(options.models),
                "n_jobs": 1,
                "retrain_min_new_runs": options.min_new_runs,
                "retrain_min_new_fraction": options.min_new_fraction,
                **({"limit_quantile": options.limit_quantile} if options.limit_quantile is not None else {}),
            }
        )
        self.options = options
        self.store = MemoryMeasurements()
        self.book = MemoryChampions()
        self.tracker = MemoryTracker(settings.interval_coverage)
        self.log = LearningLog()
        self.eligible = {job_key(j.algorithm, j.params): tuple(j.true_times) for j in workload.jobs}
        self.queue: dict[
            str, list[tuple[str, dict[str, float], tuple[str, ...]]]
        ] = {}  # per algorithm, in submit order
        self.position: dict[str, int] = {}
        for spec in sorted(workload.jobs, key=lambda j: j.submit):
            key, jobs = job_key(spec.algorithm, spec.params), self.queue.setdefault(spec.algorithm, [])
            self.position[key] = len(jobs)
            jobs.append((key, dict(spec.features or {}), tuple(spec.true_times)))
        self.answers: dict[
            tuple[str, str], tuple[object, dict[str, Estimate]]
        ] = {}  # per pair: (served model, answers)
        self.served: dict[str, dict[str, Estimate]] = {}
        self.served_by: dict[str, dict[str, ServedModel | None]] = {}  # the model behind each first answer
        self.ladders: dict[tuple[str, str], tuple[float, ...]] = {}  # quantiles() of jobs that outlived their estimate
        self._ends: dict[tuple[str, str], int] = {}
        self.oracle = RuntimeOracle(
            _catalog(workload),
            {},
            coverage=self.settings.interval_coverage,
            limit_quantile=self.settings.limit_quantile,
        )
        self.store.add(workload.history)
        self._retrain(dict.fromkeys(self.store.pairs(), "history"))

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
        return answer

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
        """The served model's estimate of job ``key`` on ``platform``, computing it with the next chunk of jobs if needed."""
        pair = (algorithm, platform)
        model = self.oracle.models.get(pair)
        cached = self.answers.get(pair)
        if cached is None or cached[0] is not model:
            cached = self.answers[pair] = (model, {})
        found = cached[1]
        if key not in found:
            start = self.position[key]
            chunk = [
                (k, f)
                for k, f, where in self.queue[algorithm][start : start + CHUNK]
                if platform in where and k not in found
            ]
            answers = self.oracle.estimate_jobs([OracleJob(algorithm, (platform,), f) for _, f in chunk])
            found.update((k, a[platform]) for (k, _), a in zip(chunk, answers, strict=True))
        return found[key]

    def observe(self, job: Job, run: Run, machine: Machine, wall: float) -> None:
        """A job ended cleanly: store it beside the estimate it was served, and retrain its pair if it is due."""
        pair = (job.algorithm, machine.platform)
        run_id = f"sim-{job.id}-{run.attempt}"
        measurement = Measurement(
            run_id=run_id,
            algorithm=job.algorithm,
            platform=machine.platform,
            features=dict(job.features or {}),
            wall_seconds=max(wall, 0.0),
            source=Source.PRODUCTION,
        )
        estimate = self.served.get(job_key(job.algorithm, job.params), {}).get(machine.platform)
        served = (
            ServedEstimate.of(run_id, job.algorithm, estimate, origin="scheduler") if estimate is not None else None
        )
        self.store.add([measurement], [served] if served is not None else [])
        ends = self._ends[pair] = self._ends.get(pair, 0) + 1
        incumbent = self.book.incumbent(*pair)
        if (
            incumbent is not None
            and (
                self.store.count(*pair, informative_only=True) - (incumbent.n_rows or 0)
                < self.settings.retrain_min_new_runs
            )
            and ends % self.options.drift_every
        ):
            return  # neither enough new runs nor a drift check due: skip the full rule (the common case)
        reason = why_due(self.settings, self.store, *pair, incumbent)
        if reason is not None:
            self._retrain({pair: reason})

    def _retrain(self, reasons: dict[tuple[str, str], str]) -> None:
        """Train the due pairs under the guard, record the decisions, and serve what now holds the alias."""
        algorithms = {a for a, _ in reasons}
        sets = [ts for ts in load_training_sets(self.store, algorithms) if (ts.algorithm, ts.platform) in reasons]
        if not sets:
            return
        started = time.perf_counter()
        outcomes = train(self.settings, sets, tracker=self.tracker, champions=self.book)
        self.log.train_seconds += time.perf_counter() - started
        self.log.retrains += len(sets)
        for outcome in outcomes:
            self.log.decisions.append(decision_row(outcome, reasons[(outcome.algorithm, outcome.platform)]))
        self._serve()

    def _serve(self) -> None:
        """Swap in the champions that changed (compiled once each) and the current profile table."""
        current = self.oracle.models
        models: dict[tuple[str, str], ServedModel] = {}
        for pair, champion in self.book.champions().items():
            served = current.get(pair)
            models[pair] = served if served is not None and served.champion is champion else serve_model(champion)
        self.oracle.swap(models, self.store.profile_table())


def _catalog(workload: Workload) -> Catalog:
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
    algorithms = {
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

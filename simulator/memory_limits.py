"""Memory limits learned online from a log's history, and the waste and failures they cause (issue 31).

Jobs are replayed in submit order; a job's peak becomes known at its end (submit + wait + run), so every limit is
set from the jobs that had ended by its submission, as a live site would. Memory is per processor in a log (KB),
so each source sets a limit per processor and the job's limit is that times its processors. Sources:

- :class:`NodeShare`: no learning, what a job gets without a request: its processors' share of the node's memory
  (``DefMemPerCPU`` = node memory / CPUs), or with ``whole`` the most a placement allows, a whole node over the
  CPUs the job fills on one (a one-CPU job holds a node's memory; a wider job, packed on whole nodes, the share).
- :class:`LastRuns`: a quantile (1: the largest) of the last ``k`` peaks of the job's class (the same user, or the
  same user on as many processors), plus an ``offset``.
- :class:`OnlineQuantile`: the project's online learner (:class:`models.online.AsymmetricOnlineRegressor`, one
  update per ended job) over memory-history features, planned at a ``level`` quantile of its residuals.
- :class:`SizeyStyle`: after Bader et al. (2024), *Sizey: memory-efficient execution of scientific workflow tasks*:
  per task class (the user, or the user and processors) several regressors learned online (linear, k nearest neighbours, random forest, a small
  network) over the job's request (processors, time), the one with the best resource-allocation-quality score
  (``alpha`` x efficiency + (1 - alpha) x accuracy) chosen per job, plus an offset against under-allocation (the
  spread or the median of its past relative under-predictions).

The learned sources fall back to another source (:func:`replay`'s ``fallback``) where their class has no history. :func:`score` gives the requested but
unused memory (GB-hours, each job's limit above its peak times its run time) and the share of jobs over their limit.
"""

from __future__ import annotations

import heapq
import math
import statistics
import warnings
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

import numpy as np

from features.swf import UNKNOWN, SwfLog
from models.online import AsymmetricOnlineRegressor

KB = 1024
GB = 2**30


@dataclass(frozen=True, slots=True)
class MemoryJob:
    """A job of a log with a known peak: what was asked at submission, and what it used (bytes per processor)."""

    id: int
    user: int
    procs: int
    submit: float
    end: float
    run: float
    requested_time: float | None
    peak: float  # bytes per processor
    # bytes per processor, where the user asked
    requested: float | None = None
    # bytes of the job's inputs, where known (a catalog program's run)
    size: float | None = None

    @property
    def peak_total(self) -> float:
        return self.peak * self.procs


def memory_jobs(log: SwfLog) -> list[MemoryJob]:
    """The log's jobs with a used memory, a run time and processors, in submit order (ties in log order)."""
    out = []
    for job in log.jobs:
        procs = job.procs or 0
        if job.used_memory == UNKNOWN or job.run == UNKNOWN or job.end is None or procs <= 0:
            continue
        requested_time = None if job.requested_time == UNKNOWN else job.requested_time
        requested = None if job.requested_memory == UNKNOWN else job.requested_memory * KB
        out.append(
            MemoryJob(
                job.job, job.user, procs, job.submit, job.end, job.run, requested_time, job.used_memory * KB, requested
            )
        )
    return sorted(out, key=lambda j: j.submit)


class MemorySource(Protocol):
    """A memory limit per processor at a job's submission (None: no opinion, the fallback decides)."""

    name: str

    def limit(self, job: MemoryJob) -> float | None: ...

    def ended(self, job: MemoryJob) -> None: ...


class Fallback(MemorySource, Protocol):
    """A source with a limit for every job: what :func:`replay` falls back to."""

    def limit(self, job: MemoryJob) -> float: ...


class _Regressor(Protocol):
    """A fitted scikit-learn regressor, as :func:`_fit` uses it."""

    def predict(self, x: np.ndarray) -> np.ndarray: ...


@dataclass
class NodeShare:
    """The memory a job gets without a request: its processors' share of a node, or the most a placement allows."""

    node_memory: float
    cpus_per_node: int
    whole: bool = False

    @property
    def name(self) -> str:
        return "a node's memory over the CPUs it fills" if self.whole else "node share per CPU"

    def limit(self, job: MemoryJob) -> float:
        return self.node_memory / (min(job.procs, self.cpus_per_node) if self.whole else self.cpus_per_node)

    def ended(self, job: MemoryJob) -> None:
        return None


Scope = Literal["user", "class"]
SCOPES: tuple[str, ...] = ("user", "class")


def job_class(job: MemoryJob, scope: Scope) -> tuple[int, ...]:
    """The jobs whose history sets ``job``'s limit: the same user's, or the same user's on as many processors."""
    return (job.user,) if scope == "user" else (job.user, job.procs)


@dataclass
class LastRuns:
    """The ``quantile`` of the class's last ``k`` peaks (1: the largest) times 1 + ``offset``."""

    k: int = 3
    offset: float = 0.0
    scope: Scope = "class"
    quantile: float = 1.0
    runs: dict[tuple[int, ...], deque[float]] = field(default_factory=dict)

    @property
    def name(self) -> str:
        which = "max" if self.quantile == 1.0 else f"q{self.quantile:g}"
        return f"{which} of last {self.k} per {self.scope} +{self.offset:.0%}"

    def limit(self, job: MemoryJob) -> float | None:
        past = self.runs.get(job_class(job, self.scope))
        if not past:
            return None
        return float(np.quantile(np.fromiter(past, float), self.quantile)) * (1.0 + self.offset)

    def ended(self, job: MemoryJob) -> None:
        self.runs.setdefault(job_class(job, self.scope), deque(maxlen=self.k)).appendleft(job.peak)


MEMORY_FEATURES = (
    "procs",
    "request.time",
    "user.last1",
    "user.last2",
    "user.last3",
    "user.max",
    "class.last",
    "class.max",
)


class OnlineQuantile:
    """The online learner over memory-history features, planned at its residuals' ``level`` quantile (module doc)."""

    def __init__(self, level: float = 0.99) -> None:
        self.level = level
        self.model = AsymmetricOnlineRegressor(under="squared", over="absolute", log=True).begin(len(MEMORY_FEATURES))
        self.users: dict[int, deque[float]] = {}
        self.user_max: dict[int, float] = {}
        self.classes: dict[tuple[int, int], list[float]] = {}  # [last, max]
        self.name = f"online learner q{level:g}"

    def row(self, job: MemoryJob) -> np.ndarray:
        """The job's features from its user's ended jobs (MB per processor; NaN where unknown)."""
        recent = list(self.users.get(job.user, ()))
        recent += [math.nan] * (3 - len(recent))
        last, most = self.classes.get((job.user, job.procs), [math.nan, math.nan])
        values = [
            job.procs,
            job.requested_time or math.nan,
            *recent[:3],
            self.user_max.get(job.user, math.nan),
            last,
            most,
        ]
        return np.array([v / 2**20 if i >= 2 else v for i, v in enumerate(values)], dtype=float)

    def limit(self, job: MemoryJob) -> float | None:
        if job.user not in self.users:
            return None
        point = self.model.predict_one(self.row(job)) * 2**20
        return point * math.exp(self.model.residual_quantiles((self.level,))[self.level])

    def ended(self, job: MemoryJob) -> None:
        self.model.learn_one(self.row(job), job.peak / 2**20)
        self.users.setdefault(job.user, deque(maxlen=3)).appendleft(job.peak)
        self.user_max[job.user] = max(self.user_max.get(job.user, 0.0), job.peak)
        cls = self.classes.setdefault((job.user, job.procs), [job.peak, job.peak])
        cls[0], cls[1] = job.peak, max(cls[1], job.peak)


OffsetRule = Literal["std", "median-under", "max-under"]
OFFSET_RULES: tuple[str, ...] = ("std", "median-under", "max-under")
SIZEY_MODELS = ("linear", "knn", "forest", "network")


class SizeyModels:
    """Sizey's four regressors per user, refitted on every ended job of the user, and their predictions per job.

    The models learn peaks whatever limit was set, so one set of predictions serves every :class:`SizeyStyle` of a
    replay (the costly part: a refit per user per ended job).
    """

    def __init__(self, scope: Scope = "user", seed: int = 0) -> None:
        self.scope, self.seed = scope, seed
        # (class, ended): models
        self.fitted: dict[tuple[tuple[int, ...], int], list[Callable[[np.ndarray], float]]] = {}
        self.predictions: dict[int, tuple[float, ...] | None] = {}

    def predict(self, job: MemoryJob, ended: Sequence[MemoryJob]) -> tuple[float, ...] | None:
        """The models' predictions (bytes per processor) for ``job``, fitted on its class's ``ended`` jobs (None
        before two ended); memoised by job, the fits by class and number ended (they end in the same order in every
        replay)."""
        if job.id not in self.predictions:
            if len(ended) < 2:
                self.predictions[job.id] = None
            else:
                key = (job_class(job, self.scope), len(ended))
                if key not in self.fitted:
                    x = np.array([_features(j) for j in ended])
                    self.fitted[key] = _fit(x, np.array([j.peak for j in ended]), self.seed)
                self.predictions[job.id] = tuple(max(model(_features(job)), 1.0) for model in self.fitted[key])
        return self.predictions[job.id]


class SizeyStyle:
    """The best of Sizey's models by RAQ for each job, plus an offset (module docstring).

    Each model's relative error on a job ((peak - prediction) / peak) is recorded when the job ends; accuracy is minus
    the mean absolute relative error of its last ``window`` predictions for the user; efficiency is minus its
    prediction over the largest of the models' predictions (Sizey's definitions).
    """

    def __init__(self, models: SizeyModels, alpha: float = 0.5, offset: OffsetRule = "std", window: int = 20) -> None:
        if offset not in OFFSET_RULES:
            raise ValueError(f"offset must be one of {', '.join(OFFSET_RULES)}, got {offset!r}")
        self.models, self.alpha, self.offset, self.window = models, alpha, offset, window
        self.name = f"Sizey-style per {models.scope}, alpha {alpha:g}, offset {offset}"
        self.ended_jobs: dict[tuple[int, ...], list[MemoryJob]] = {}
        self.errors: dict[tuple[int, ...], list[deque[float]]] = {}

    def limit(self, job: MemoryJob) -> float | None:
        key = job_class(job, self.models.scope)
        predictions = self.models.predict(job, self.ended_jobs.get(key, []))
        if predictions is None:
            # fewer than two of the class's jobs ended: nothing to fit yet
            return None
        errors = self.errors.get(key) or [deque() for _ in SIZEY_MODELS]
        biggest = max(predictions)
        raq = [
            self.alpha * (-p / biggest)
            + (1 - self.alpha) * (-(statistics.fmean(abs(e) for e in errs) if errs else 0.0))
            for p, errs in zip(predictions, errors)
        ]
        best = int(np.argmax(raq))
        return predictions[best] * (1.0 + _offset(self.offset, list(errors[best])))

    def ended(self, job: MemoryJob) -> None:
        key = job_class(job, self.models.scope)
        self.ended_jobs.setdefault(key, []).append(job)
        predictions = self.models.predictions.get(job.id)
        if predictions is not None:
            errors = self.errors.setdefault(key, [deque(maxlen=self.window) for _ in SIZEY_MODELS])
            for errs, p in zip(errors, predictions):
                errs.append((job.peak - p) / job.peak)


def _features(job: MemoryJob) -> np.ndarray:
    """Sizey's input size: the bytes of the job's inputs where known, else the request (log processors and log
    requested time, all a log's job tells)."""
    if job.size is not None:
        return np.array([math.log1p(job.size)])
    return np.array([math.log(job.procs), math.log1p(job.requested_time or 0.0)])


def _fit(x: np.ndarray, y: np.ndarray, seed: int) -> list[Callable[[np.ndarray], float]]:
    """Sizey's four regressors on (request, peak), as functions of one row."""
    from sklearn.ensemble import RandomForestRegressor
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import LinearRegression
    from sklearn.neighbors import KNeighborsRegressor
    from sklearn.neural_network import MLPRegressor
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    scale = float(np.max(y))
    regressors = [
        LinearRegression(),
        KNeighborsRegressor(n_neighbors=min(3, len(y))),
        RandomForestRegressor(n_estimators=10, random_state=seed),
        make_pipeline(StandardScaler(), MLPRegressor(hidden_layer_sizes=(8,), max_iter=200, random_state=seed)),
    ]
    with warnings.catch_warnings():
        # a few hundred steps on a handful of rows, as Sizey does
        warnings.simplefilter("ignore", ConvergenceWarning)
        fitted = [r.fit(x, y / scale) for r in regressors]
    return [_predictor(r, scale) for r in fitted]


def _predictor(regressor: _Regressor, scale: float) -> Callable[[np.ndarray], float]:
    """``regressor``'s prediction for one row, in the units of the peaks it was fitted on (divided by ``scale``)."""
    return lambda row: float(regressor.predict(row[None, :])[0]) * scale


def _offset(rule: OffsetRule, errors: Sequence[float]) -> float:
    """Sizey's offsets from a model's relative errors ((peak - prediction) / peak): 0.05 before any is known."""
    if not errors:
        return 0.05
    under = [e for e in errors if e > 0]
    if rule == "std":
        return float(np.std(np.abs(errors)))
    if rule == "median-under":
        return statistics.median(under) if under else 0.05
    return max(under) if under else 0.05


def replay(jobs: Sequence[MemoryJob], source: MemorySource, fallback: Fallback) -> list[float]:
    """Each job's limit per processor from ``source`` at its submission (``fallback`` where it has none), the source
    told of every job that had ended by then."""
    ends: list[tuple[float, int]] = []
    out = []
    for index, job in enumerate(jobs):
        while ends and ends[0][0] <= job.submit:
            source.ended(jobs[heapq.heappop(ends)[1]])
        limit = source.limit(job)
        out.append(fallback.limit(job) if limit is None else limit)
        heapq.heappush(ends, (job.end, index))
    return out


@dataclass(frozen=True)
class Score:
    """Requested-but-unused memory (GB-hours) and jobs over their limit, over some jobs."""

    jobs: int
    waste_gbh: float
    requested_gbh: float
    over: int

    @property
    def over_share(self) -> float:
        return self.over / self.jobs if self.jobs else 0.0


def score(jobs: Sequence[MemoryJob], limits: Sequence[float]) -> Score:
    """Waste (each job's limit above its peak, times its processors and run time) and jobs whose peak is above it."""
    waste = sum(max(limit - j.peak, 0.0) * j.procs * j.run for j, limit in zip(jobs, limits)) / GB / 3600
    asked = sum(limit * j.procs * j.run for j, limit in zip(jobs, limits)) / GB / 3600
    return Score(len(jobs), waste, asked, sum(j.peak > limit for j, limit in zip(jobs, limits)))

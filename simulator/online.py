"""The ``online`` estimate source: the scheduler-trained member (:mod:`models.online`) learning as simulated jobs end.

Each job is estimated once, at its submission, from its job-history features (:mod:`features.history`) by an
:class:`~models.online.AsymmetricOnlineRegressor` that first learned the workload's history in submit order and then
learns every job that terminates in the simulation (cleanly or not: its run is what the next estimate needs), one
constant-time update each, as Gaussier et al. (2015) do. The number the scheduler plans with is the model's point, or
the point scaled by a quantile of its residuals (``plan="quantile"`` at ``level``); every answer also carries the
residual quantiles above the point, which ``correction=quantile`` climbs when a job outlives its plan.
The preset :data:`SC15` is the SC'15-style baseline: seconds learned directly, each job weighted by its area.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Literal

import numpy as np

from features.history import FEATURE_NAMES
from models.online import AsymmetricOnlineRegressor, Side
from predictor.domain import Estimate
from predictor.oracle import JobQuery, Oracle
from scheduler.run_times import QuantileOracle, TerminationOracle, job_key
from scheduler.state import Job, requested_seconds
from simulator.workload import Workload

# residual quantiles a job that outlives its plan climbs, in order
LADDER = (0.6, 0.7, 0.8, 0.9, 0.95, 0.99)
_AREA = (FEATURE_NAMES.index("request.procs"), FEATURE_NAMES.index("request.time"))


@dataclass(frozen=True)
class OnlineOptions:
    """The learner's loss (see :class:`~models.online.AsymmetricOnlineRegressor`) and the number planned with."""

    under: Side = "squared"
    over: Side = "absolute"
    under_weight: float = 1.0
    over_weight: float = 1.0
    dead_zone: float = 0.0
    # weight each job by 1 + log(1 + processors x request)
    area: bool = True
    log: bool = True
    plan: Literal["point", "quantile"] = "point"
    # the residual quantile planned with when plan="quantile"
    level: float = 0.9

    def label(self) -> str:
        """A short name of these options, for tables."""
        loss = f"{self.under}x{self.under_weight:g}/{self.over}x{self.over_weight:g}"
        number = "point" if self.plan == "point" else f"q{self.level:g}"
        return f"online({loss}{',dz' + format(self.dead_zone, 'g') if self.dead_zone else ''},{number})"


# The SC'15-style baseline: run times in seconds (their space), under-estimates squared and over-estimates linear,
# each job weighted by its area; its point plans.
SC15 = OnlineOptions(under="squared", over="absolute", area=True, log=False)


class OnlineOracle(Oracle, QuantileOracle, TerminationOracle):
    """Each job's first answer from the online member, which learns every job that terminates (module docstring)."""

    def __init__(self, workload: Workload, options: OnlineOptions = OnlineOptions()) -> None:
        self.options = options
        self.model = AsymmetricOnlineRegressor(
            under=options.under,
            over=options.over,
            under_weight=options.under_weight,
            over_weight=options.over_weight,
            dead_zone=options.dead_zone,
            area_columns=_AREA if options.area else None,
            log=options.log,
        )
        self.eligible = {job_key(j.algorithm, j.params): tuple(j.true_times) for j in workload.jobs}
        self.served: dict[str, dict[str, Estimate]] = {}
        self.ladders: dict[str, tuple[float, ...]] = {}
        seen: set[str] = set()
        rows, runs = [], []
        # a replay's history holds one measurement per platform of a job: learn it once
        for m in workload.history:
            job = m.run_id.rsplit("-", 1)[0]
            if job not in seen:
                seen.add(job)
                rows.append(_row(m.features))
                runs.append(m.wall_seconds)
        if rows:
            self.model.fit(np.array(rows), np.array(runs))
        else:
            self.model.begin(len(FEATURE_NAMES))

    def answer(self, job: JobQuery) -> dict[str, Estimate]:
        """The same answer on every platform the job can run on; a job asked again gets its first answer."""
        key = job_key(job.algorithm, job.params)
        answer = self.served.get(key)
        if answer is None:
            answer = self.served[key] = self._first_answer(key, job.params, job.features or {})
        return job.among(answer)

    def terminated(self, job: Job, wall: float) -> None:
        """A job ended (done or failed) after ``wall`` seconds: one update of the member."""
        self.model.learn_one(_row(job.features or {}), max(wall, 0.0))

    def quantiles(self, job: Job, platform: str) -> tuple[float, ...]:
        """The job's point scaled by the residual quantiles of :data:`LADDER` at its submission, ascending."""
        return self.ladders.get(job_key(job.algorithm, job.params), ())

    def _first_answer(self, key: str, params: dict[str, Any], features: dict[str, float]) -> dict[str, Estimate]:
        """The point (or quantile) and the ladder above it, capped by the request; the same on every platform. Before
        the member has learned a run, the request (as EASY plans without estimates)."""
        request = requested_seconds(params)
        if self.model.n_seen_ == 0:
            return {
                p: Estimate(platform=p, seconds=request, model_name=self.options.label()) for p in self.eligible[key]
            }
        point = self.model.predict_one(_row(features))
        residuals = self.model.residual_quantiles((*LADDER, self.options.level))
        seconds = point * float(np.exp(residuals[self.options.level])) if self.options.plan == "quantile" else point
        ladder = sorted({point * float(np.exp(residuals[level])) for level in LADDER})
        self.ladders[key] = tuple(v for v in ladder if v > seconds and (request is None or v < request))
        if request is not None:
            seconds = min(seconds, request)
        label = self.options.label()
        return {p: Estimate(platform=p, seconds=seconds, model_name=label) for p in self.eligible[key]}


def _row(features: dict[str, float]) -> np.ndarray:
    """A job's history features in :data:`~features.history.FEATURE_NAMES` order (NaN where unknown)."""
    return np.array([features.get(name, np.nan) for name in FEATURE_NAMES], dtype=float)


def with_plan(options: OnlineOptions, number: str) -> OnlineOptions:
    """``options`` planning with ``number``: ``point`` or ``qLEVEL`` (e.g. ``q0.9``)."""
    if number == "point":
        return replace(options, plan="point")
    if number.startswith("q"):
        return replace(options, plan="quantile", level=float(number[1:]))
    raise ValueError(f"a planning number is 'point' or 'qLEVEL', got {number!r}")

"""Tsafrir, Etsion & Feitelson (2007), online: a job's estimate is the mean run time of its user's last two jobs.

Only jobs that had *terminated* (cleanly or not) in the simulation before the job's submission count: the
oracle hears of each end from the event loop (``EventLoop(on_termination=...)``), so it never reads the log's
own end times of replayed jobs. The estimate is capped by the job's request (``params['requested_time']``,
the kill limit), and is the request itself while the user has fewer than two terminated jobs, as in pyss.
A replay's history prefix is not simulated: a user's first replayed job seeds the user's last runs from its
``history.last1`` / ``history.last2`` features (jobs of the prefix that had ended before it was submitted).
"""

from __future__ import annotations

from collections import deque
from typing import Any

from predictor.domain import Estimate
from predictor.oracle import JobQuery, Oracle
from scheduler.run_times import TerminationOracle, job_key
from scheduler.state import Job, requested_seconds
from simulator.workload import Workload

LABEL = "last_two_mean"


class LastTwoMeanOracle(Oracle, TerminationOracle):
    """The user's last two run times, averaged and capped by the request; each job's first answer is kept."""

    def __init__(self, workload: Workload) -> None:
        self.eligible = {job_key(j.algorithm, j.params): tuple(j.true_times) for j in workload.jobs}
        # user -> run times of their last terminated jobs, newest last
        self.recent: dict[Any, deque[float]] = {}
        self.served: dict[str, dict[str, Estimate]] = {}

    def answer(self, job: JobQuery) -> dict[str, Estimate]:
        """The same seconds on every platform the job can run on; a job asked again gets its first answer."""
        key = job_key(job.algorithm, job.params)
        answer = self.served.get(key)
        if answer is None:
            value = self._predict(job.params, job.features or {})
            answer = self.served[key] = {
                p: Estimate(platform=p, seconds=value, model_name=LABEL) for p in self.eligible[key]
            }
        return job.among(answer)

    def terminated(self, job: Job, wall: float) -> None:
        """A job of the user ended (done or failed) after ``wall`` seconds: it becomes the user's latest run."""
        self._runs(job.params.get("user"), job.features or {}).append(max(wall, 0.0))

    def _predict(self, params: dict[str, Any], features: dict[str, float]) -> float | None:
        request = requested_seconds(params)
        runs = self._runs(params.get("user"), features)
        if len(runs) < 2:
            return request
        mean = (runs[0] + runs[1]) / 2.0
        return min(mean, request) if request is not None else mean

    def _runs(self, user: Any, features: dict[str, float]) -> deque[float]:
        """The user's recent runs, seeded on first sight from the job-history features of the log's prefix."""
        runs = self.recent.get(user)
        if runs is None:
            runs = self.recent[user] = deque(maxlen=2)
            finished = int(features.get("history.finished_jobs", 0))
            seeds = (
                [features.get("history.last2"), features.get("history.last1")][-min(finished, 2) :] if finished else []
            )
            runs.extend(float(s) for s in seeds if s is not None)
        return runs

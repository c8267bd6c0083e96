"""Job-history features of a workload log (Tsafrir et al. 2007, Gaussier et al. 2015), free of leakage.

Each job's features use only what the system knew at its submit time ``s``: its own request, the same user's
earlier submissions, which of the user's jobs had started (start <= s) and which had finished (end <= s, where
end = submit + wait + run). A job's own run time and the run time of any job still running at ``s`` never
enter. One pass in submit order (ties in log order) with two heaps, of starts and of ends: O(n log n). The pass keeps
one :class:`UserHistory` per user and turns it into a job's features with :func:`features_at`; a live service
applies the same function to the same state read from its store: one definition for the replay and the live path.

Features (all seconds unless said otherwise):

- ``request.time``, ``request.procs``: the job's requested time and processors (requested, else allocated).
- ``history.finished_jobs``: how many of the user's jobs had finished; the indicator for the fills below.
- ``history.last1``, ``history.last2``, ``history.last3``: run times of the user's three most recently finished
  jobs (by end time, whatever their status); ``history.last2_mean``, ``history.last3_mean``: means of the first
  two and three; ``history.mean``: mean over all the user's finished jobs. Where fewer jobs had finished, the
  missing run times are filled with this job's requested time (and the means taken over the filled values).
- ``user.submitted_jobs``: the user's earlier submissions (0 for a user's first job).
- ``user.since_last_submit``: time since the user's previous submission; for a first job, the time since the
  log's first submission (no earlier submission is known since then).
- ``user.running_jobs``, ``user.running_procs``: the user's jobs running at ``s`` (start <= s < end) and their
  processors (as ``request.procs``; 0 where unknown).
- ``time.hour`` (0-23), ``time.weekday`` (0 = Monday): local time of the submission.

A feature whose value is unknown (requested time or processors of -1, and the fills that would need that
requested time) is left out of the job's dict. Jobs whose start or end the log does not know count as
submissions only: they are never running nor finished.
"""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, tzinfo

from features.swf import UNKNOWN, SwfJob

FEATURE_NAMES: tuple[str, ...] = (
    "request.time",
    "request.procs",
    "history.finished_jobs",
    "history.last1",
    "history.last2",
    "history.last3",
    "history.last2_mean",
    "history.last3_mean",
    "history.mean",
    "user.submitted_jobs",
    "user.since_last_submit",
    "user.running_jobs",
    "user.running_procs",
    "time.hour",
    "time.weekday",
)
# how many of a user's latest run times the features keep
LAST = 3
# the job's requested seconds: its kill limit, which no estimate of it should pass
REQUEST_TIME = "request.time"


@dataclass
class UserHistory:
    """What is known of one user's jobs at one instant, all a job's history features need: kept up to date by the
    replay below, or read from a store of a site's jobs."""

    submitted: int = 0
    last_submit: float = 0.0
    running: int = 0
    running_procs: int = 0
    finished: int = 0
    finished_total: float = 0.0
    recent: deque[float] = field(default_factory=lambda: deque(maxlen=LAST))  # run times, newest end first


def history_features(jobs: Sequence[SwfJob], start_time: float = 0.0, tz: tzinfo = UTC) -> list[dict[str, float]]:
    """Features of every job (same order as ``jobs``) from what was known at its submit time."""
    order = sorted(range(len(jobs)), key=lambda i: jobs[i].submit)
    users: dict[int, UserHistory] = {}
    # (start, index, end) of submitted jobs not yet started
    starts: list[tuple[float, int, float]] = []
    # (end, index) of started jobs not yet finished
    ends: list[tuple[float, int]] = []
    out: list[dict[str, float]] = [{} for _ in jobs]
    first_submit = jobs[order[0]].submit if jobs else 0.0
    for i in order:
        job = jobs[i]
        _advance(job.submit, jobs, users, starts, ends)
        user = users.setdefault(job.user, UserHistory())
        requested = None if job.requested_time == UNKNOWN else job.requested_time
        out[i] = features_at(
            job.submit, requested, job.procs, user, first_submit=first_submit, start_time=start_time, tz=tz
        )
        user.submitted += 1
        user.last_submit = job.submit
        start, end = job.start, job.end
        if start is not None and end is not None:  # a known end implies a known start
            heapq.heappush(starts, (start, i, end))
    return out


def _advance(
    now: float,
    jobs: Sequence[SwfJob],
    users: dict[int, UserHistory],
    starts: list[tuple[float, int, float]],
    ends: list[tuple[float, int]],
) -> None:
    """Apply every start, then every end, at or before ``now``; ends in end order."""
    while starts and starts[0][0] <= now:
        _, i, end = heapq.heappop(starts)
        user = users[jobs[i].user]
        user.running += 1
        user.running_procs += jobs[i].procs or 0
        heapq.heappush(ends, (end, i))
    while ends and ends[0][0] <= now:
        _, i = heapq.heappop(ends)
        user = users[jobs[i].user]
        user.running -= 1
        user.running_procs -= jobs[i].procs or 0
        user.finished += 1
        user.finished_total += jobs[i].run
        user.recent.appendleft(jobs[i].run)


def features_at(
    submit: float,
    requested_time: float | None,
    procs: int | None,
    user: UserHistory,
    *,
    first_submit: float,
    start_time: float = 0.0,
    tz: tzinfo = UTC,
) -> dict[str, float]:
    """One job's features from its request (None: unknown) and its user's state at its submit time.

    ``submit``, ``first_submit`` (the log's or site's first submission) and the user's times are seconds on one
    clock whose zero is the Unix time ``start_time``; the hour and weekday are read in ``tz``.
    """
    local = datetime.fromtimestamp(start_time + submit, tz)
    since = submit - (user.last_submit if user.submitted else first_submit)
    out = {
        "history.finished_jobs": float(user.finished),
        "user.submitted_jobs": float(user.submitted),
        "user.since_last_submit": since,
        "user.running_jobs": float(user.running),
        "user.running_procs": float(user.running_procs),
        "time.hour": float(local.hour),
        "time.weekday": float(local.weekday()),
    }
    last = [*user.recent, *[requested_time] * (LAST - len(user.recent))]
    known = {
        "request.time": requested_time,
        "request.procs": procs,
        "history.last1": last[0],
        "history.last2": last[1],
        "history.last3": last[2],
        "history.last2_mean": _mean(last[:2]),
        "history.last3_mean": _mean(last),
        "history.mean": user.finished_total / user.finished if user.finished else requested_time,
    }
    out.update({name: float(value) for name, value in known.items() if value is not None})
    return out


def _mean(values: list[float | None]) -> float | None:
    """Mean of the values, or None when one is unknown."""
    known = [v for v in values if v is not None]
    return sum(known) / len(known) if len(known) == len(values) else None

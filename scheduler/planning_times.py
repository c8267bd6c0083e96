"""What a backfilling scheduler plans with: planning times under a kill limit and their correction.

A job's *kill limit* is the time its user requested (``params['requested_time']``): the resource manager
kills it there, so no plan needs more. Its *planning time* is the estimate the scheduler was given, capped
by the kill limit (the request itself when the estimate is unknown). When a running job outlives its
planning time the plan must not pretend it has ended: :func:`planned_end` raises the estimate, either by
Tsafrir, Etsion & Feitelson's (2007) steps (1 min, 5 min, 15 min, 30 min, 1 h, 2 h, 5 h, 10 h, 20 h, 50 h,
100 h past the first estimate, never beyond the kill limit), by doubling it until it is not outlived (as the learned
predictors of Gaussier et al. 2015 are corrected), straight to the kill limit, or to the next quantile of
the job's served interval that it has not outlived (the ``service`` source's residual quantiles; Tsafrir's step
where the source served none, or the job has outlived them all).
The plan's free slots over time are in :mod:`scheduler.profiles`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Literal

from scheduler.state import INF, Job, Run, requested_seconds

Correction = Literal["tsafrir", "requested", "quantile", "doubling"]
CORRECTIONS: tuple[str, ...] = ("tsafrir", "requested", "quantile", "doubling")
# a job's served quantiles on a platform, in seconds, ascending
Quantiles = Callable[[Job, str], Sequence[float]]
TSAFRIR_STEPS = (60.0, 300.0, 900.0, 1800.0, 3600.0, 7200.0, 18000.0, 36000.0, 72000.0, 180000.0, 360000.0)
# a job past its kill limit (the log let some run on) is expected to end within this many seconds
OVERDUE = 60.0


def kill_limit(job: Job) -> float:
    """The job's requested time, after which the resource manager kills it (INF when unknown)."""
    asked = requested_seconds(job.params)
    return INF if asked is None else asked


def planning_seconds(job: Job, platform: str) -> float:
    """The estimate on ``platform`` capped by the kill limit; the kill limit when there is no estimate."""
    estimate = job.estimates.get(platform)
    limit = kill_limit(job)
    return limit if estimate is None else min(estimate, limit)


def planned_end(
    job: Job, run: Run, platform: str, now: float, correction: Correction, quantiles: Quantiles | None = None
) -> float:
    """When the plan expects ``run`` to end, seen at ``now`` (not before ``now``): corrected once outlived.

    A run due exactly now is taken at its word: several runs ending at one instant are reported one by one,
    and the first report must not push the others' ends back. ``quantiles`` gives the served quantiles
    ``correction="quantile"`` climbs.
    """
    first = planning_seconds(job, platform)
    end = run.start + first
    if end >= now:
        return end
    limit = kill_limit(job)
    elapsed = now - run.start
    if correction == "quantile":
        served = quantiles(job, platform) if quantiles is not None else ()
        raised = next((q for q in served if q > elapsed), None)
        if raised is not None:
            return run.start + min(raised, limit) if limit > elapsed else now + OVERDUE
    if correction == "doubling":
        raised = first if first > 0 else 1.0
        while raised <= elapsed:
            raised *= 2.0
        if min(raised, limit) > elapsed:
            return run.start + min(raised, limit)
        return now + OVERDUE
    if correction in ("tsafrir", "quantile"):
        raised = next((first + step for step in TSAFRIR_STEPS if first + step > elapsed), INF)
        if min(raised, limit) > elapsed:
            return run.start + min(raised, limit)
    elif limit > elapsed:
        return run.start + limit
    return now + OVERDUE

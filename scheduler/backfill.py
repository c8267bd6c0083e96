"""What a backfilling scheduler plans with: planning times under a kill limit, their correction, a free-slot profile.

A job's *kill limit* is the time its user requested (``params['requested_time']``): the resource manager
kills it there, so no plan needs more. Its *planning time* is the estimate the scheduler was given, capped
by the kill limit (the request itself when the estimate is unknown). When a running job outlives its
planning time the plan must not pretend it has ended: :func:`planned_end` raises the estimate, either by
Tsafrir, Etsion & Feitelson's (2007) steps (1 min, 5 min, 15 min, 30 min, 1 h, 2 h, 5 h, 10 h, 20 h, 50 h,
100 h past the first estimate, never beyond the kill limit), straight to the kill limit, or to the next quantile of
the job's served interval that it has not outlived (the ``service`` source's residual quantiles; Tsafrir's step
where the source served none, or the job has outlived them all).
A :class:`Profile` is one machine's free slots over time, node by node, as the plan sees them.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable, Sequence
from typing import Literal

import numpy as np

from scheduler.nodes import Allocation, levels
from scheduler.state import INF, Job, Run
from scheduler.workload import requested_seconds

Correction = Literal["tsafrir", "requested", "quantile"]
Quantiles = Callable[[Job, str], Sequence[float]]  # a job's served quantiles on a platform, in seconds, ascending
TSAFRIR_STEPS = (60.0, 300.0, 900.0, 1800.0, 3600.0, 7200.0, 18000.0, 36000.0, 72000.0, 180000.0, 360000.0)
OVERDUE = 60.0  # a job past its kill limit (the log let some run on) is expected to end within this many seconds


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
    if correction in ("tsafrir", "quantile"):
        raised = next((first + step for step in TSAFRIR_STEPS if first + step > elapsed), INF)
        if min(raised, limit) > elapsed:
            return run.start + min(raised, limit)
    elif limit > elapsed:
        return run.start + limit
    return now + OVERDUE


class Profile:
    """One machine's free slots per node from ``now`` on: ``free[i, n]`` slots of node ``n`` over [``times[i]``,
    ``times[i + 1]``) (one column on a pooled machine).

    Built from the slots free now and the planned ends of running jobs (each releases the (node, slots) it
    holds); reservations take slots out. The slots of a run due to end now count as free now: a job that needs
    them is planned at ``now`` but can only start once that end is reported (the policy checks the machine's
    free slots before it starts anything). A job fits from a time if, on nodes of their own, its needs stay
    free for its whole planning time (:mod:`scheduler.nodes`).
    """

    def __init__(self, now: float, free_now: Sequence[int], releases: Iterable[tuple[float, Allocation]]) -> None:
        times, free = [now], [list(free_now)]
        for at, nodes in sorted(releases):
            if at > times[-1]:
                times.append(at)
                free.append(list(free[-1]))
            for node, slots in nodes:
                free[-1][node] += slots
        self.times = np.array(times, dtype=float)
        self.free = np.array(free, dtype=np.int64)

    @property
    def now(self) -> float:
        return float(self.times[0])

    def earliest(self, needs: Sequence[int], seconds: float) -> float:
        """The earliest time nodes give ``needs`` (slots per node) for ``seconds`` without a break (INF if never)."""
        rows = len(self.times)
        until = np.append(self.times, INF)
        feasible = np.ones(rows, dtype=bool)
        for slots, count in levels(needs):
            ok = self.free >= slots
            bad = np.where(ok, rows, np.arange(rows)[:, None])
            broken = until[np.minimum.accumulate(bad[::-1], axis=0)[::-1]]  # when each node next runs short
            lasting = ok & (broken - self.times[:, None] >= seconds)
            feasible &= np.count_nonzero(lasting, axis=1) >= count
        return float(self.times[int(np.argmax(feasible))]) if feasible.any() else INF

    def window(self, start: float, seconds: float) -> np.ndarray:
        """Each node's fewest free slots over [start, start + seconds) (``start`` at or after ``now``)."""
        first = bisect.bisect_right(self.times, start) - 1
        last = bisect.bisect_left(self.times, start + seconds) if seconds < INF else len(self.times)
        return self.free[first : max(last, first + 1)].min(axis=0)

    def free_at(self, at: float) -> int:
        """Slots free at time ``at`` (at or after ``now``), over all nodes."""
        return int(self.free[bisect.bisect_right(self.times, at) - 1].sum())

    def reserve(self, start: float, seconds: float, nodes: Allocation) -> None:
        """Take each (node, slots) of ``nodes`` over [start, start + seconds)."""
        first = self._split(start)
        last = self._split(start + seconds) if seconds < INF else len(self.times)
        for node, slots in nodes:
            self.free[first:last, node] -= slots

    def _split(self, at: float) -> int:
        """The index of a breakpoint at ``at``, inserted if missing."""
        index = bisect.bisect_left(self.times, at)
        if index < len(self.times) and self.times[index] == at:
            return index
        self.times = np.insert(self.times, index, at)
        self.free = np.insert(self.free, index, self.free[index - 1], axis=0)
        return index

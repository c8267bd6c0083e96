"""What a backfilling scheduler plans with: planning times under a kill limit, their correction, a free-slot profile.

A job's *kill limit* is the time its user requested (``params['requested_time']``): the resource manager
kills it there, so no plan needs more. Its *planning time* is the estimate the scheduler was given, capped
by the kill limit (the request itself when the estimate is unknown). When a running job outlives its
planning time the plan must not pretend it has ended: :func:`planned_end` raises the estimate, either by
Tsafrir, Etsion & Feitelson's (2007) steps (1 min, 5 min, 15 min, 30 min, 1 h, 2 h, 5 h, 10 h, 20 h, 50 h,
100 h past the first estimate, never beyond the kill limit) or straight to the kill limit.
A :class:`Profile` is one machine's free slots over time as the plan sees them.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable
from typing import Literal

import numpy as np

from scheduler.state import INF, Job, Run
from scheduler.workload import requested_seconds

Correction = Literal["tsafrir", "requested"]
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


def planned_end(job: Job, run: Run, platform: str, now: float, correction: Correction) -> float:
    """When the plan expects ``run`` to end, seen at ``now`` (not before ``now``): corrected once outlived.

    A run due exactly now is taken at its word: several runs ending at one instant are reported one by one,
    and the first report must not push the others' ends back.
    """
    first = planning_seconds(job, platform)
    end = run.start + first
    if end >= now:
        return end
    limit = kill_limit(job)
    elapsed = now - run.start
    if correction == "tsafrir":
        raised = next((first + step for step in TSAFRIR_STEPS if first + step > elapsed), INF)
        if min(raised, limit) > elapsed:
            return run.start + min(raised, limit)
    elif limit > elapsed:
        return run.start + limit
    return now + OVERDUE


class Profile:
    """One machine's free slots from ``now`` on: ``free[i]`` slots over [``times[i]``, ``times[i + 1]``).

    Built from the slots free now and the planned ends of running jobs; reservations take slots out. The slots
    of a run due to end now count as free now: a job that needs them is planned at ``now`` but can only start
    once that end is reported (the policy checks the machine's free slots before it starts anything).
    """

    def __init__(self, now: float, free_now: int, releases: Iterable[tuple[float, int]]) -> None:
        times, free = [now], [free_now]
        for at, slots in sorted(releases):
            if at > times[-1]:
                times.append(at)
                free.append(free[-1])
            free[-1] += slots
        self.times = np.array(times, dtype=float)
        self.free = np.array(free, dtype=np.int64)

    @property
    def now(self) -> float:
        return float(self.times[0])

    def earliest(self, size: int, seconds: float) -> float:
        """The earliest time ``size`` slots stay free for ``seconds`` (INF if never)."""
        ok = self.free >= size
        if not ok.any():
            return INF
        bad = np.flatnonzero(~ok)
        broken = np.append(self.times[bad], INF)[np.searchsorted(bad, np.arange(len(ok)))]  # next time slots run short
        valid = ok & (broken - self.times >= seconds)
        return float(self.times[int(np.argmax(valid))]) if valid.any() else INF

    def free_at(self, at: float) -> int:
        """Slots free at time ``at`` (at or after ``now``)."""
        return int(self.free[bisect.bisect_right(self.times, at) - 1])

    def reserve(self, start: float, seconds: float, size: int) -> None:
        """Take ``size`` slots over [start, start + seconds)."""
        first = self._split(start)
        last = self._split(start + seconds) if seconds < INF else len(self.times)
        self.free[first:last] -= size

    def _split(self, at: float) -> int:
        """The index of a breakpoint at ``at``, inserted if missing."""
        index = bisect.bisect_left(self.times, at)
        if index < len(self.times) and self.times[index] == at:
            return index
        self.times = np.insert(self.times, index, at)
        self.free = np.insert(self.free, index, self.free[index - 1])
        return index

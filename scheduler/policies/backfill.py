"""Backfilling, as batch schedulers do it (Slurm's backfill plugin, Maui/Moab, PBS): EASY and conservative.

Both keep the queue in arrival order and plan with the estimates the oracle gives, capped by each job's
kill limit (its requested time; :mod:`scheduler.backfill`); a job that outlives its planning time has it
raised (``correction``) before the next plan. Jobs are never killed early: the plan only decides starts.

- :class:`EASY` (Lifka 1995; Mu'alem & Feitelson 2001): start jobs from the head while they fit; the first
  that does not gets a reservation at the earliest time it fits; any later job may start now if it does not
  delay that reservation (it ends before it, or uses only slots the head leaves free). ``order="sjbf"`` tries
  the backfill candidates shortest planning time first (Tsafrir et al.'s EASY++ is ``easy:order=sjbf`` fed
  ``last_two_mean`` estimates).
- :class:`Conservative` (Mu'alem & Feitelson 2001): every queued job gets a reservation, in arrival order, at
  the earliest time it fits around the running jobs and the reservations before it; those due now start.
  The plan is rebuilt at every pass (compression on early ends), so a later arrival never delays an
  earlier job's reservation. Its reservations are the predicted start times the API serves.
"""

from __future__ import annotations

from typing import Literal

from scheduler import orders as o
from scheduler.backfill import Correction, Profile, planned_end, planning_seconds
from scheduler.orders import Order
from scheduler.policy import Context
from scheduler.state import INF, Job, Machine, State


class _Backfilling:
    """What both backfillers share: the queue, the machines and the running jobs' planned ends."""

    replans_every_end = True  # the event loop replans at every end rather than start the plan's next jobs itself

    def __init__(self, correction: Correction = "tsafrir") -> None:
        if correction not in ("tsafrir", "requested"):
            raise ValueError(f"correction must be 'tsafrir' or 'requested', got {correction!r}")
        self.correction = correction

    def _setup(self, ctx: Context) -> tuple[list[Job], list[Machine]]:
        """Ready pending jobs in arrival order, and the online machines."""
        state = ctx.state
        queue = [job for job in (state.jobs[j] for j in state.pending) if state.ready(job)]
        return queue, [m for m in state.machines.values() if m.online]

    def _profile(self, state: State, machine: Machine, now: float, started: list[tuple[Job, float]]) -> Profile:
        """The machine's free slots from now on: its running jobs end as planned (corrected when outlived);
        ``started`` are (job, planning seconds) of jobs this pass has just started on it."""
        releases = [
            (planned_end(job, job.runs[machine.id], machine.platform, now, self.correction), job.size)
            for job in (state.jobs[j] for j in machine.running)
            if not job.runs[machine.id].orphan
        ]
        releases += [(now + seconds, job.size) for job, seconds in started]
        free = machine.free - sum(job.size for job, _ in started)
        return Profile(now, free, releases)


class EASY(_Backfilling):
    """One reservation, for the first job that cannot start; backfill the rest around it (see the module docstring)."""

    def __init__(self, order: Literal["fcfs", "sjbf"] = "fcfs", correction: Correction = "tsafrir") -> None:
        super().__init__(correction)
        if order not in ("fcfs", "sjbf"):
            raise ValueError(f"order must be 'fcfs' or 'sjbf', got {order!r}")
        self.order = order
        self.name = "easy" if order == "fcfs" else "easy-sjbf"

    def schedule(self, ctx: Context) -> list[Order]:
        """START the head jobs that fit, reserve for the first that does not, START the backfill that keeps it."""
        state, now = ctx.state, ctx.now
        queue, machines = self._setup(ctx)
        free = {m.id: m.free for m in machines}
        started: dict[str, list[tuple[Job, float]]] = {m.id: [] for m in machines}
        out: list[Order] = []
        head = 0
        while head < len(queue):
            job = queue[head]
            machine = next((m for m in machines if m.platform in job.estimates and free[m.id] >= job.size), None)
            if machine is None:
                break
            out.append(o.start(job.id, machine.id))
            free[machine.id] -= job.size
            started[machine.id].append((job, planning_seconds(job, machine.platform)))
            head += 1
        if head == len(queue):
            return out
        blocked = queue[head]
        shadow, reserved, extra = INF, None, 0
        for machine in (m for m in machines if m.platform in blocked.estimates):
            profile = self._profile(state, machine, now, started[machine.id])
            at = profile.earliest(blocked.size, planning_seconds(blocked, machine.platform))
            if at < shadow:
                shadow, reserved, extra = at, machine, profile.free_at(at) - blocked.size
        if reserved is not None:
            out.append(o.defer(blocked.id, reserved.id, shadow))
        candidates = queue[head + 1 :]
        if self.order == "sjbf":
            candidates = sorted(candidates, key=_shortest_planning)
        for job in candidates:
            for machine in machines:
                if machine.platform not in job.estimates or free[machine.id] < job.size:
                    continue
                if machine is reserved and now + planning_seconds(job, machine.platform) > shadow:
                    if job.size > extra:
                        continue
                    extra -= job.size  # it still runs at the shadow time: it takes slots the head leaves free
                out.append(o.start(job.id, machine.id, "backfill"))
                free[machine.id] -= job.size
                break
        return out


class Conservative(_Backfilling):
    """A reservation for every queued job, in arrival order; those due now start (see the module docstring)."""

    def __init__(self, correction: Correction = "tsafrir") -> None:
        super().__init__(correction)
        self.name = "conservative"

    def schedule(self, ctx: Context) -> list[Order]:
        """Reserve every ready pending job at its earliest fit; START those reserved at ``now``, DEFER the rest."""
        state, now = ctx.state, ctx.now
        queue, machines = self._setup(ctx)
        profiles = {m.id: self._profile(state, m, now, []) for m in machines}
        free = {m.id: m.free for m in machines}
        out: list[Order] = []
        for job in queue:
            best, where, seconds = INF, None, INF
            for machine in (m for m in machines if m.platform in job.estimates):
                length = planning_seconds(job, machine.platform)
                at = profiles[machine.id].earliest(job.size, length)
                if at < best:
                    best, where, seconds = at, machine, length
            if where is None:
                continue  # it fits no machine, ever: it waits for one to join
            profiles[where.id].reserve(best, seconds, job.size)
            if best <= now and free[where.id] >= job.size:
                out.append(o.start(job.id, where.id))
                free[where.id] -= job.size
            else:  # later, or now on slots of a run that ends at this instant but is not reported yet
                out.append(o.defer(job.id, where.id, best))
        return out


def _shortest_planning(job: Job) -> float:
    """The job's shortest planning time over its platforms (SJBF's key)."""
    return min((planning_seconds(job, p) for p in job.estimates), default=INF)

"""Backfilling, as batch schedulers do it (Slurm's backfill plugin, Maui/Moab, PBS): EASY and conservative.

Both keep the queue in arrival order and plan with the estimates the oracle gives, capped by each job's
kill limit (its requested time; :mod:`scheduler.planning_times`); a job that outlives its planning time has it
raised (``correction``) before the next plan. Jobs are never killed early: the plan only decides starts.

- :class:`EASY` (Lifka 1995; Mu'alem & Feitelson 2001): start jobs from the head while they fit; the first
  that does not gets a reservation at the earliest time it fits; any later job may start now if it does not
  delay that reservation (it ends before it, or uses only slots the head leaves free). ``order="sjbf"`` tries
  the backfill candidates shortest planning time first (Tsafrir et al.'s EASY++ is ``easy:order=sjbf`` fed
  ``last_two_mean`` estimates); ``order="saf"`` tries them smallest area (processors x planning time) first.
- :class:`Conservative` (Mu'alem & Feitelson 2001): every queued job gets a reservation, in arrival order, at
  the earliest time it fits around the running jobs and the reservations before it; those due now start.
  The plan is rebuilt at every pass (compression on early ends), so a later arrival never delays an
  earlier job's reservation. Its reservations are the predicted start times the API serves.

``planned=true`` asks the embedded scheduler to take the order and the correction from the newest planning decision
of the policy's family (``predictor plan choose``; :meth:`SchedulerService`, :mod:`scheduler.planning`), the spec's own
options serving until there is one; elsewhere (the simulator) the spec's options plan.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from scheduler import orders as o
from scheduler.nodes import Allocation, Room, SlotNeeds
from scheduler.orders import Order
from scheduler.planning_times import CORRECTIONS, Correction, planned_end, planning_seconds
from scheduler.policy import Context, Policy
from scheduler.profiles import NodeProfile, PoolProfile, make_profile
from scheduler.run_times import QuantileOracle
from scheduler.state import INF, Job, Machine


class Backfilling(Policy):
    """What both backfillers share: the queue, the machines and the running jobs' planned ends."""

    # the event loop replans at every end rather than start the plan's next jobs itself
    replans_every_end = True
    # it gives each start its nodes on a machine of nodes (scheduler/nodes.py)
    places_nodes = True
    # placement and reservations count each node's free memory
    plans_memory = True
    # whose planning decisions it follows when ``planned``
    family: ClassVar[Literal["easy", "conservative"]]

    def __init__(self, correction: Correction = "tsafrir", planned: bool = False) -> None:
        if correction not in CORRECTIONS:
            raise ValueError(f"correction must be one of {', '.join(CORRECTIONS)}, got {correction!r}")
        self.correction = self.given_correction = correction
        self.planned = planned

    def follow(self, order: str | None = None, correction: Correction | None = None) -> None:
        """Plan from now on with a planning decision's ``correction`` (and, for EASY, backfill ``order``); None: the
        spec's own."""
        correction = correction or self.given_correction
        if correction not in CORRECTIONS:
            raise ValueError(f"correction must be one of {', '.join(CORRECTIONS)}, got {correction!r}")
        self.correction = correction

    def _setup(self, ctx: Context) -> tuple[list[Job], list[Machine]]:
        """Ready pending jobs in arrival order, and the online machines."""
        state = ctx.state
        queue = [job for job in (state.jobs[j] for j in state.pending) if state.ready(job)]
        return queue, [m for m in state.machines.values() if m.online]

    def _profile(
        self, ctx: Context, machine: Machine, started: list[tuple[float, Allocation, int]]
    ) -> NodeProfile | PoolProfile:
        """The machine's free slots (and memory) from now on: its running jobs end as planned (corrected when outlived,
        with the quantiles the oracle served, if it has them); ``started`` are (planning seconds, nodes, memory per
        slot) of jobs this pass has just started on it."""
        state, now = ctx.state, ctx.now
        quantiles = ctx.oracle.quantiles if isinstance(ctx.oracle, QuantileOracle) else None
        releases = [
            (
                planned_end(job, run, machine.platform, now, self.correction, quantiles),
                run.nodes or ((0, job.size),),
                run.memory,
            )
            for job, run in ((job, job.runs[machine.id]) for job in (state.jobs[j] for j in machine.running))
            if not run.orphan
        ]
        releases += [(now + seconds, nodes, memory) for seconds, nodes, memory in started]
        room = machine.room()
        for _, nodes, memory in started:
            room.take(nodes, memory)
        return make_profile(now, room.free, releases, on_nodes=bool(machine.node_slots), memory_now=room.memory)


# arrival, shortest planning time, smallest area first
BACKFILL_ORDERS: tuple[str, ...] = ("fcfs", "sjbf", "saf")


class EASY(Backfilling):
    """One reservation, for the first job that cannot start; backfill the rest around it (see the module docstring)."""

    family = "easy"

    def __init__(
        self,
        order: Literal["fcfs", "sjbf", "saf"] = "fcfs",
        correction: Correction = "tsafrir",
        planned: bool = False,
    ) -> None:
        super().__init__(correction, planned)
        self._order(order)
        self.given_order = order

    def follow(self, order: str | None = None, correction: Correction | None = None) -> None:
        order = order or self.given_order
        if order not in BACKFILL_ORDERS:  # checked before anything changes
            raise ValueError(f"order must be one of {', '.join(BACKFILL_ORDERS)}, got {order!r}")
        super().follow(order, correction)
        self._order(order)

    def _order(self, order: str) -> None:
        if order not in BACKFILL_ORDERS:
            raise ValueError(f"order must be one of {', '.join(BACKFILL_ORDERS)}, got {order!r}")
        self.order = order
        self.name = "easy" if order == "fcfs" else f"easy-{order}"

    def schedule(self, ctx: Context) -> list[Order]:
        """START the head jobs that fit, reserve for the first that does not, START the backfill that keeps it."""
        now = ctx.now
        queue, machines = self._setup(ctx)
        rooms = {m.id: m.room() for m in machines}
        started: dict[str, list[tuple[float, Allocation, int]]] = {m.id: [] for m in machines}
        out: list[Order] = []
        head = 0
        while head < len(queue):
            job = queue[head]
            fit = _fit_now(job, machines, rooms)
            if fit is None:
                break
            machine, needs, nodes = fit
            out.append(o.start(job.id, machine.id, nodes=nodes))
            rooms[machine.id].take(nodes, needs.memory)
            started[machine.id].append((planning_seconds(job, machine.platform), nodes, needs.memory))
            head += 1
        if head == len(queue):
            return out
        blocked = queue[head]
        shadow, reserved, plan = INF, None, None
        for machine in (m for m in machines if m.platform in blocked.estimates):
            profile = self._profile(ctx, machine, started[machine.id])
            at = profile.earliest(machine.needs(blocked), planning_seconds(blocked, machine.platform))
            if at < shadow:
                shadow, reserved, plan = at, machine, profile
        if reserved is not None and plan is not None:
            out.append(o.defer(blocked.id, reserved.id, shadow))
            seconds, needs = planning_seconds(blocked, reserved.platform), reserved.needs(blocked)
            plan.reserve(shadow, seconds, plan.place(needs, shadow, seconds) or (), needs.memory)
        candidates = queue[head + 1 :]
        if self.order != "fcfs":
            candidates = sorted(candidates, key=_shortest_planning if self.order == "sjbf" else _smallest_area)
        for job in candidates:
            for machine in machines:
                room = rooms[machine.id]
                if machine.platform not in job.estimates or room.total < job.size:
                    continue
                seconds = planning_seconds(job, machine.platform)
                # a job that runs past the reservation on its machine may only take what the reserved job leaves free
                # there, node by node (one that ends before it needs only the room there is now)
                past = plan if machine is reserved and now + seconds > shadow else None
                needs = machine.needs(job)
                placed = room.place(needs, past.window(now, seconds, needs.memory) if past is not None else None)
                if placed is None:
                    continue
                if past is not None:
                    past.reserve(now, seconds, placed, needs.memory)
                out.append(o.start(job.id, machine.id, "backfill", placed))
                room.take(placed, needs.memory)
                break
        return out


class Conservative(Backfilling):
    """A reservation for every queued job, in arrival order; those due now start (see the module docstring)."""

    family = "conservative"

    def __init__(self, correction: Correction = "tsafrir", planned: bool = False) -> None:
        super().__init__(correction, planned)
        self.name = "conservative"

    def schedule(self, ctx: Context) -> list[Order]:
        """Reserve every ready pending job at its earliest fit; START those reserved at ``now``, DEFER the rest."""
        now = ctx.now
        queue, machines = self._setup(ctx)
        profiles = {m.id: self._profile(ctx, m, []) for m in machines}
        rooms = {m.id: m.room() for m in machines}
        out: list[Order] = []
        for job in queue:
            best, where, seconds = INF, None, INF
            for machine in (m for m in machines if m.platform in job.estimates):
                length = planning_seconds(job, machine.platform)
                at = profiles[machine.id].earliest(machine.needs(job), length)
                if at < best:
                    best, where, seconds = at, machine, length
            if where is None:
                # it fits no machine, ever: it waits for one to join
                continue
            needs, plan = where.needs(job), profiles[where.id]
            nodes = rooms[where.id].place(needs, plan.window(best, seconds, needs.memory)) if best <= now else None
            if nodes is not None:
                out.append(o.start(job.id, where.id, nodes=nodes))
                rooms[where.id].take(nodes, needs.memory)
            # later, or now on slots of a run that ends at this instant but is not reported yet
            else:
                out.append(o.defer(job.id, where.id, best))
            plan.reserve(best, seconds, nodes or plan.place(needs, best, seconds) or (), needs.memory)
        return out


def _fit_now(job: Job, machines: list[Machine], rooms: dict[str, Room]) -> tuple[Machine, SlotNeeds, Allocation] | None:
    """The first machine with room for the job now, its needs there and the nodes it would take there."""
    for machine in machines:
        if machine.platform in job.estimates:
            needs = machine.needs(job)
            nodes = rooms[machine.id].place(needs)
            if nodes is not None:
                return machine, needs, nodes
    return None


def _shortest_planning(job: Job) -> float:
    """The job's shortest planning time over its platforms (SJBF's key)."""
    return min((planning_seconds(job, p) for p in job.estimates), default=INF)


def _smallest_area(job: Job) -> float:
    """The job's smallest planning time x processors over its platforms (smallest-area-first's key)."""
    return job.size * _shortest_planning(job)

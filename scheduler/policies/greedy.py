"""Greedy-1, Greedy-2 and Greedy-3 of Kontothanassis & Goddeau 2004 (section 4, Fig 10): each free machine to the job that would lose most without it."""

from __future__ import annotations

from typing import Literal

import numpy as np

from scheduler import orders as o
from scheduler.orders import Order
from scheduler.policies.profile_driven import ProfileTable, WarmGain
from scheduler.policy import Context, Policy
from scheduler.state import INF, Job, Machine

Cost = Literal["estimate", "warm", "learned"]
# (platform, data set read last): free machines that cost a job the same
Group = tuple[str, str | None]


class Greedy(Policy):
    """Kontothanassis & Goddeau 2004, section 4, Fig 10 (the benefit heuristic of its ref. [4]).

    Each pass, while ready jobs and free machines remain: each job's cost on each free
    machine comes from the profile table; its benefit is its second-best cost minus
    its best (what it loses if its best machine goes to another job; infinite when it
    has one machine to choose from); the job with the largest benefit takes its best
    machine, ties going to the older job and to the machine idle longest. No job
    waits for a busy machine (unlike ``sufferage``, which weighs expected completions
    on busy machines too and defers).

    ``cost``: ``"estimate"`` (Greedy-1: the oracle's estimate on the machine's
    platform); ``"warm"`` (Greedy-2: that times the warm factor where the machine's
    cache holds the job's data; factors from ``warm_gain`` or learned, see
    :class:`ProfileTable`); ``"learned"`` (Greedy-3: the mean run time seen for the job
    type on that machine type, warm or cold as the machine is). A cost not known yet
    is ``unknown``, low by default, so unexplored combinations get tried; while the
    first run of one goes on, the time it has taken so far is its cost.
    """

    def __init__(self, name: str, cost: Cost, warm_gain: WarmGain | None = None, unknown: float = 0.0) -> None:
        if cost not in ("estimate", "warm", "learned"):
            raise ValueError(f"cost must be 'estimate', 'warm' or 'learned', got {cost!r}")
        if unknown < 0:
            raise ValueError(f"unknown cost must be >= 0, got {unknown}")
        self.name = name
        self.cost = cost
        self.unknown = float(unknown)
        self.profile = ProfileTable(warm_gain)

    def schedule(self, ctx: Context) -> list[Order]:
        """START jobs on free machines by largest benefit first, recomputing benefits after each assignment."""
        state, now = ctx.state, ctx.now
        free = [m for m in state.machines.values() if m.online and m.used < m.slots]
        self.profile.learn(state, free)
        waiting = [job for job in (state.jobs[j] for j in state.pending) if state.ready(job)]
        if not free or not waiting:
            return []
        free.sort(key=lambda m: m.idle_since)
        groups: dict[Group, list[Machine]] = {}
        for m in free:
            groups.setdefault((m.platform, m.warm), []).append(m)
        keys = list(groups)
        cost = np.array([[self._cost(job, groups[g][0], now) for g in keys] for job in waiting])
        room = _Room(free, keys, groups, [job.size for job in waiting])
        rows = np.arange(len(waiting))
        out: list[Order] = []
        while True:
            usable = np.where(room.fits > 0, cost, INF)
            # the first of equals: the group idle longest
            best_group = usable.argmin(axis=1)
            best = usable[rows, best_group]
            placeable = best < INF
            if not placeable.any():
                return out
            usable[rows, best_group] = INF
            # second best minus best (INF: no second)
            gap = usable.min(axis=1) - np.where(placeable, best, 0.0)
            benefit = np.where(placeable, np.where(room.fits[rows, best_group] > 1, 0.0, gap), -INF)
            j = int(benefit.argmax())  # the first of equals: the oldest job
            job, g = waiting[j], int(best_group[j])
            machine = room.take(g, job.size)
            out.append(o.start(job.id, machine.id))
            self.profile.started(job, machine, now)
            cost[j] = INF

    def _cost(self, job: Job, machine: Machine, now: float) -> float:
        """The job's cost on the machine from the profile table; INF where its platform cannot run the job."""
        if machine.platform not in job.estimates:
            return INF
        if self.cost == "estimate":
            seconds = job.estimates[machine.platform]
        elif self.cost == "warm":
            seconds = self.profile.estimate(job, machine)
        else:
            seconds = self.profile.observed(job, machine, now)
        return self.unknown if seconds is None else seconds


class _Room:
    """Free slots of each group of free machines, and how many machines of a group each job fits on (``fits``)."""

    def __init__(
        self, free: list[Machine], keys: list[Group], groups: dict[Group, list[Machine]], sizes: list[int]
    ) -> None:
        self.room = {m.id: m.slots - m.used for m in free}
        self.machines = [groups[g] for g in keys]
        self.sizes = sorted(set(sizes))
        self.by_size = np.array([[self._count(ms, size) for ms in self.machines] for size in self.sizes], dtype=int)
        self.size_of = np.searchsorted(self.sizes, sizes)
        self.fits = self.by_size[self.size_of]

    def _count(self, machines: list[Machine], size: int) -> int:
        return len(machines) if size == 1 else sum(1 for m in machines if self.room[m.id] >= size)

    def take(self, g: int, size: int) -> Machine:
        """Book ``size`` slots on the group's first machine (idle longest) with that much room."""
        machine = next(m for m in self.machines[g] if self.room[m.id] >= size)
        self.room[machine.id] -= size
        if not self.room[machine.id]:
            self.machines[g].remove(machine)  # a group lists only machines with room
        self.by_size[:, g] = [self._count(self.machines[g], s) for s in self.sizes]
        self.fits[:, g] = self.by_size[self.size_of, g]
        return machine


def greedy1(unknown: float = 0.0) -> Greedy:
    """Greedy-1 (Kontothanassis & Goddeau 2004, section 4, Fig 10): costs are the oracle's estimates per platform."""
    return Greedy("greedy1", "estimate", unknown=unknown)


def greedy2(warm_gain: WarmGain | None = None, unknown: float = 0.0) -> Greedy:
    """Greedy-2 (Kontothanassis & Goddeau 2004, section 4): Greedy-1 whose table also knows the data set the machine read last.

    ``warm_gain`` (``warm_gain=ALG@PLATFORM:GAIN;...`` in a spec, see :mod:`scheduler.specs`) gives the warm factors; without it they are learned.
    """
    return Greedy("greedy2", "warm", warm_gain=warm_gain, unknown=unknown)


def greedy3(unknown: float = 0.0) -> Greedy:
    """Greedy-3 (Kontothanassis & Goddeau 2004, section 4): Greedy-2 learning its whole table online, unknown combinations costing ``unknown``."""
    return Greedy("greedy3", "learned", unknown=unknown)

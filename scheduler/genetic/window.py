"""A scheduling pass as Phan, Ranganathan & Sion 2005's snapshot window (section 4.1): state -> :class:`Problem`, schedule -> orders.

The window is the first ``size`` ready pending jobs of the queue. Its nodes are
*lanes*: one per slot of every online machine, NACT = now for a free slot and the
expected end of the run holding a busy one (``Run.end_after``). COMPUTE is the
oracle's estimate on the lane's platform (``scheduler.planner.cost_matrix``); a job
the oracle gives no estimate at all gets the window's median estimate (or 1 s), since
the GA needs some number to pack. The service's state has no data stores, so the
window has no objects: replication is a no-op here and the GA evolves the queue order
and the job -> lane assignment (the full co-scheduling runs in the paper's own model,
``scheduler.genetic.model``, see ``benchmarks/seed004_genetic.py``).

A job whose lane is free now and that comes first on it STARTs; every other one is
DEFERred to its lane's machine at its planned start, so the event loop starts it when
the machine frees (``scheduler/events.py``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from scheduler.genetic.model import Problem, Timeline
from scheduler.orders import Order, defer, start
from scheduler.planner import cost_matrix
from scheduler.state import INF, Job, State


@dataclass(frozen=True)
class Window:
    """The window's jobs, its lanes (machine id, free now?) and the Problem built over them."""

    jobs: list[Job]
    machines: list[str]
    free: np.ndarray
    problem: Problem
    now: float

    def orders(self, plan: Timeline, row: int = 0) -> list[Order]:
        """START the first job of each free lane, DEFER the rest to their machine in order of planned start."""
        nodes, begins = plan.nodes[row], plan.start[row]
        seen: set[int] = set()
        starts: list[Order] = []
        defers: list[Order] = []
        for j in sorted(range(len(self.jobs)), key=lambda j: (begins[j], nodes[j])):
            lane, begin = int(nodes[j]), float(begins[j])
            if begin == INF:
                # no lane will ever take it as things stand; it waits for a later pass
                continue
            job, machine = self.jobs[j].id, self.machines[lane]
            if lane not in seen and self.free[lane] and begin <= self.now:
                starts.append(start(job, machine, "ga window"))
            else:
                defers.append(defer(job, machine, max(begin, self.now)))
            seen.add(lane)
        return starts + defers


def check_size(size: int) -> int:
    """A window size must be a positive integer."""
    if not isinstance(size, int) or size < 1:
        raise ValueError(f"window must be an integer >= 1, got {size!r}")
    return size


def snapshot(state: State, now: float, size: int) -> Window | None:
    """The pass's window, or None when no ready job can run on an online machine."""
    jobs = [job for job in (state.jobs[j] for j in state.pending) if state.ready(job)][:size]
    wide = next((job for job in jobs if job.size != 1), None)
    if wide is not None:
        raise ValueError(f"the GA schedules one-slot jobs; job {wide.id!r} asks for {wide.size} slots")
    soon = math.nextafter(now, INF)
    machines: list[str] = []
    ready: list[float] = []
    for m in state.machines.values():
        if not m.online:
            continue
        ends = [
            max(state.jobs[j].runs[m.id].end_after(now), soon) for j in m.running for _ in range(state.jobs[j].size)
        ]
        lanes = [now] * (m.slots - m.used) + ends
        machines += [m.id] * len(lanes)
        ready += lanes
    if not jobs or not machines:
        return None
    platforms = sorted({state.machines[m].platform for m in machines})
    matrix, blind = cost_matrix(jobs, platforms)
    if blind.any():
        known = matrix[np.isfinite(matrix)]
        guess = float(np.median(known)) if known.size else 1.0
        for j in np.flatnonzero(blind):
            matrix[j] = [guess if p in jobs[j].estimates else INF for p in platforms]
    column = {p: i for i, p in enumerate(platforms)}
    compute = matrix[:, [column[state.machines[m].platform] for m in machines]]
    usable = np.isfinite(compute).any(axis=1)
    if not usable.any():
        return None
    jobs = [job for job, ok in zip(jobs, usable, strict=True) if ok]
    width = len(machines)
    problem = Problem(
        compute=compute[usable],
        requires=np.zeros((len(jobs), 0), dtype=bool),
        size=np.zeros(0),
        source=np.zeros(0, dtype=np.intp),
        remote_to_store=np.ones((0, 0)),
        store_to_node=np.ones((0, width)),
        remote_to_node=np.ones((0, width)),
        ready=np.array(ready),
        clock=now,
    )
    return Window(jobs, machines, np.array(ready) <= now, problem, now)

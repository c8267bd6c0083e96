"""List-scheduling machinery shared by policies: when each machine is free, and where a job completes earliest.

Single-slot machines of one platform are interchangeable, so each platform keeps a
heap of (free time, busy, idle since, machine) and a job only looks at the top of each
heap: O(platforms + log machines) per job. Machines with many slots (a partition of
CPUs, as in the replayed cluster logs) keep a free-slots profile over time and
admit a job into the earliest window that holds it (conservative backfilling).
"""

from __future__ import annotations

import heapq
import math
from bisect import bisect_right
from collections.abc import Iterable, Mapping, Sequence
from typing import NamedTuple

import numpy as np

from scheduler.nodes import node_needs
from scheduler.state import INF, Job, JobStatus, State


class Profile:
    """Free slots of one many-slot machine over time: ``free[i]`` holds on [times[i], times[i+1]); on a machine with a
    memory size, ``memory[i]`` its free bytes over the same span (None: memory never limits)."""

    __slots__ = ("free", "memory", "slots", "times")

    def __init__(
        self,
        now: float,
        slots: int,
        free_now: int,
        releases: Iterable[tuple[float, int] | tuple[float, int, int]],
        memory_now: int | None = None,
    ) -> None:
        """``releases``: (when, slots) a running job gives back, with the bytes it holds where memory counts."""
        self.slots = slots
        self.times = [now]
        self.free = [free_now]
        self.memory = None if memory_now is None else [memory_now]
        # an overrunning job's slots free "any moment", never now
        soon = math.nextafter(now, INF)
        for at, size, *held in sorted(releases):
            at = max(at, soon)
            if at == INF:
                continue
            if at > self.times[-1]:
                self.times.append(at)
                self.free.append(self.free[-1])
                if self.memory is not None:
                    self.memory.append(self.memory[-1])
            for i in range(len(self.times) - 1, -1, -1):
                if self.times[i] < at:
                    break
                self.free[i] += size
                if self.memory is not None and held:
                    self.memory[i] += held[0]

    def earliest(self, t0: float, size: int, duration: float, memory: int = 0) -> float:
        """Earliest start >= t0 at which ``size`` slots (and ``memory`` bytes) stay free for ``duration`` (INF if never)."""
        times, free, room = self.times, self.free, self.memory
        i = max(bisect_right(times, t0) - 1, 0)
        start = max(t0, times[0])
        n = len(times)
        while i < n:
            # memory never limits a machine without a memory size (room None)
            if free[i] < size or (memory and room is not None and room[i] < memory):
                if i + 1 >= n:
                    return INF
                start = times[i + 1]
            elif (times[i + 1] if i + 1 < n else INF) >= start + duration:
                return start
            i += 1
        return INF

    def reserve(self, start: float, end: float, size: int, memory: int = 0) -> None:
        """Take ``size`` slots (and ``memory`` bytes) during [start, end)."""
        self._split(start)
        if end != INF:
            self._split(end)
        times, free, room = self.times, self.free, self.memory
        for i in range(bisect_right(times, start) - 1, len(times)):
            if times[i] >= end:
                break
            free[i] -= size
            if room is not None:
                room[i] -= memory

    def _split(self, at: float) -> None:
        i = bisect_right(self.times, at) - 1
        if i >= 0 and self.times[i] != at:
            self.times.insert(i + 1, at)
            self.free.insert(i + 1, self.free[i])
            if self.memory is not None:
                self.memory.insert(i + 1, self.memory[i])


class Slot(NamedTuple):
    """A placement: job on machine from start to end (end is INF when the job has no estimate)."""

    job: Job
    machine: str
    start: float
    end: float
    now: bool


class Pools:
    """Free times of every online machine at the start of a pass, updated as jobs are placed.

    Heap entries are (free at, busy, idle since, machine): among machines free at the
    same time the really idle ones come first, the longest idle first. A machine with a memory
    size (``Machine.node_memory``) is planned by a :class:`Profile` of its slots and its memory, one slot
    or many, so that no plan ever holds more memory on it than it has (:func:`memory_need`).
    """

    def __init__(
        self,
        state: State,
        now: float,
        freed: Mapping[str, str] | None = None,
    ) -> None:
        """``freed`` maps machine -> job whose run there is to be treated as gone (a candidate preemption)."""
        self.now = now
        self.heaps: dict[str, list[tuple[float, int, float, str]]] = {}
        self.profiles: dict[str, list[tuple[float, Profile, str]]] = {}
        self.power: dict[str, float] = {}
        self.slots: dict[str, int] = {}
        freed = freed or {}
        for platform, machines in state.platforms.items():
            online = [m for m in machines if m.online]
            if not online:
                continue
            self.power[platform] = online[0].power_watts
            single = [m for m in online if m.slots == 1 and m.node_memory is None]
            if single:
                self.heaps[platform] = [
                    (m.free_after(now), 1, m.idle_since, m.id)
                    if m.used and m.id not in freed
                    else (now, 0, m.idle_since, m.id)
                    for m in single
                ]
            for m in online:
                if m.slots > 1 or m.node_memory is not None:
                    gone = freed.get(m.id)
                    runs = [(state.jobs[j], state.jobs[j].runs[m.id]) for j in m.running if j != gone]
                    releases = [(run.end_after(now), job.size, run.memory * job.size) for job, run in runs]
                    free_now = m.slots - sum(size for _, size, _ in releases)
                    memory_now = None if m.node_memory is None else m.node_memory - sum(b for _, _, b in releases)
                    profile = Profile(now, m.slots, free_now, releases, memory_now)
                    self.profiles.setdefault(platform, []).append((m.idle_since, profile, m.id))
                    self.slots[m.id] = m.slots
        for heap in self.heaps.values():
            heapq.heapify(heap)

    def options(self, job: Job, costs: Iterable[tuple[str, float]], t0: float) -> list[tuple[float, float, str, str]]:
        """(completion, start, platform, machine) of the best machine of each platform for ``job`` from ``t0``."""
        out = []
        size = job.size
        for platform, seconds in costs:
            heap = self.heaps.get(platform)
            if heap and size == 1:
                free_at = heap[0][0]
                start = max(t0, free_at)
                out.append((start + seconds, start, platform, heap[0][3]))
            for _, profile, machine in self.profiles.get(platform, ()):
                if size <= profile.slots:
                    start = profile.earliest(t0, size, seconds, memory_need(job, platform, profile))
                    if start != INF:
                        out.append((start + seconds, start, platform, machine))
        return out

    def idle_now(self, job: Job, platforms: Iterable[str]) -> tuple[str, str] | None:
        """(platform, machine) of the longest-idle machine that can take ``job`` now and for as long as it runs."""
        best: tuple[float, str, str] | None = None
        for platform in platforms:
            heap = self.heaps.get(platform)
            if heap and job.size == 1 and heap[0][1] == 0 and heap[0][0] <= self.now:
                cand = (heap[0][2], platform, heap[0][3])
                best = cand if best is None or cand < best else best
            for since, profile, machine in self.profiles.get(platform, ()):
                need = memory_need(job, platform, profile)
                if job.size <= profile.slots and profile.earliest(self.now, job.size, INF, need) == self.now:
                    cand = (since, platform, machine)
                    best = cand if best is None or cand < best else best
        return None if best is None else (best[1], best[2])

    def startable(self, platform: str, machine: str, start: float) -> bool:
        """Whether a placement at ``start`` on ``machine`` can begin right now (machine really idle or with room)."""
        if start > self.now:
            return False
        heap = self.heaps.get(platform)
        if heap and heap[0][3] == machine:
            return heap[0][1] == 0
        return True

    def take(self, job: Job, platform: str, machine: str, start: float, end: float) -> None:
        """Book ``machine`` for ``job`` during [start, end)."""
        heap = self.heaps.get(platform)
        if heap and heap[0][3] == machine:
            heapq.heapreplace(heap, (end, 1, heap[0][2], machine))
            return
        for _, profile, name in self.profiles[platform]:
            if name == machine:
                profile.reserve(start, end, job.size, memory_need(job, platform, profile))
                return
        raise KeyError(f"machine {machine!r} is not the top of platform {platform!r}")


def memory_need(job: Job, platform: str, profile: Profile) -> int:
    """The bytes ``job`` holds on a machine of ``platform`` planned by ``profile``: its memory there spread over its
    slots and rounded up per slot, as a run holds it (:func:`scheduler.state.hold_memory`); 0 where memory does not
    count (the machine has no memory size, or the job's memory there is unknown)."""
    if profile.memory is None:
        return 0
    return node_needs(job.size, job.params, 0, job.memory_on(platform)).memory * job.size


def cost_matrix(
    jobs: Sequence[Job],
    platforms: Sequence[str],
    progress: Mapping[str, float] | None = None,
    cache: dict[str, tuple[float | None, ...]] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Estimated seconds of each job's remaining work on each platform (INF where it cannot run), and a blind mask.

    A platform the job can run on but has no estimate for gets the job's worst known
    estimate; a job with no estimate at all is blind (its row stays INF). Work done
    before a checkpoint counts on platforms that can resume it; ``progress`` overrides
    that fraction per job (to weigh a pause). ``cache`` keeps each job's raw row for
    these ``platforms`` between calls (estimates do not change once made).
    """
    if not jobs:
        return np.empty((0, len(platforms))), np.zeros(0, dtype=bool)
    if cache is None:
        cache = {}
    raw = []
    for j in jobs:
        row = cache.get(j.id)
        if row is None:
            row = cache[j.id] = tuple(j.estimates.get(p, -1.0) for p in platforms)
        raw.append(row)
    matrix = np.array(raw, dtype=float).reshape(len(jobs), len(platforms))
    unknown = np.isnan(matrix)
    eligible = matrix != -1.0
    known = eligible & ~unknown
    matrix[~known] = -INF
    worst = matrix.max(axis=1, initial=-INF)
    matrix = np.where(unknown, worst[:, None], matrix)
    matrix[~eligible] = INF
    blind = ~known.any(axis=1)
    matrix[blind] = INF
    progress = progress or {}
    for i, job in enumerate(jobs):
        if job.checkpoint:
            done = progress.get(job.id, job.progress)
            if done > 0.0:
                for k, platform in enumerate(platforms):
                    if platform in job.checkpoint and matrix[i, k] != INF:
                        matrix[i, k] *= 1.0 - done
    return matrix, blind


RANKS = ("best", "mean", "median")


def check_rank(rank: str) -> str:
    """``rank`` if it names a way to rank jobs (:data:`RANKS`), else a clear ValueError."""
    if rank not in RANKS:
        raise ValueError(f"rank must be one of {', '.join(RANKS)}, got {rank!r}")
    return rank


def rank_seconds(matrix: np.ndarray, rank: str) -> np.ndarray:
    """Each row's least, mean or median (``rank``) over its finite entries; INF for a row without any.

    How list schedulers order jobs: by the fastest time, or, HEFT-style, by the time a job
    costs over every machine it could land on.
    """
    check_rank(rank)
    finite = np.isfinite(matrix)
    if rank == "best":
        return matrix.min(axis=1, initial=INF)
    values = np.where(finite, matrix, np.nan)
    out = np.full(len(matrix), INF)
    some = finite.any(axis=1)
    out[some] = (np.nanmean if rank == "mean" else np.nanmedian)(values[some], axis=1)
    return out


def ready_at(state: State, job: Job, placed: Mapping[str, Slot], now: float) -> tuple[float, str | None]:
    """(earliest start the job's dependencies allow, None) or (INF, the dependency not placed yet)."""
    r = -INF
    # a running dependency is never done "now"
    soon = math.nextafter(now, INF)
    jobs = state.jobs
    for dep_id in job.depends_on:
        dep = jobs.get(dep_id)
        if dep is None:
            return INF, dep_id
        if dep.status is JobStatus.DONE:
            continue
        if dep.status is JobStatus.RUNNING and dep.runs:
            r = max(r, soon, min(run.end_after(now) for run in dep.runs.values()))
        elif dep_id in placed:
            r = max(r, placed[dep_id].end)
        else:
            return INF, dep_id
    producer_id = job.stream_from
    if producer_id is not None:
        producer = jobs.get(producer_id)
        if producer is None:
            return INF, producer_id
        if producer.status not in (JobStatus.RUNNING, JobStatus.DONE):
            if producer_id not in placed:
                return INF, producer_id
            r = max(r, placed[producer_id].start)
    return r, None


def running_total(state: State, now: float, exclude: Iterable[str] = ()) -> float:
    """Sum over running jobs (but ``exclude``) of when each is expected to end: its earliest run's end."""
    skip = set(exclude)
    ends: dict[str, float] = {}
    for machine in state.machines.values():
        for job_id in machine.running:
            if job_id not in skip:
                ends[job_id] = min(run.end_after(now) for run in state.jobs[job_id].runs.values())
    return sum(ends.values())

"""Classic mapping heuristics for independent jobs on heterogeneous machines: MCT, HEFT order, Min-Min, Max-Min, Sufferage.

Each pass maps the batch of ready pending jobs onto the online machines by their
expected completion time ECT = when the machine is expected free (see
:meth:`scheduler.state.Machine.free_after`, :meth:`scheduler.state.Run.end_after`) +
the job's estimate on the machine's platform, as in Braun et al. 2001 (JPDC 61(6),
"A comparison of eleven static heuristics for mapping a class of independent tasks
onto heterogeneous distributed computing systems") and Maheswaran et al. 1999 (JPDC
59(2), "Dynamic mapping of a class of independent tasks onto heterogeneous computing
systems"). A job whose machine is free now is STARTed; the others are DEFERred to
their machine in the order they were mapped, so the event loop starts each when its
machine frees. The mapping is redone at every full pass; running jobs are never
disturbed.

The ECT matrix (columns x jobs) lives in NumPy. Mapping a job changes one column's
free time; when it does, that row is recomputed and only the jobs whose best (for
Sufferage: best or second best) column it was get their minimum recomputed, so an
assignment costs O(jobs + stale jobs x columns), not O(jobs x columns).

:func:`map_times` runs any of them on a bare batch (a time matrix, one column per
machine), the way ``scheduler/policies/batch.py`` seeds its search.
"""

from __future__ import annotations

import heapq
import math

import numpy as np

from scheduler.orders import Order
from scheduler.planner import Pools, Profile, Slot, check_rank, cost_matrix, rank_seconds
from scheduler.policies.edf import _orders
from scheduler.policy import Context, Policy
from scheduler.state import INF, Job, State


class Columns:
    """Where a pass can put jobs and when each place is expected free, advanced as jobs are mapped.

    The one-slot machines of a platform are interchangeable, so they form one column: a
    heap of (free at, busy, idle since, machine) as in :class:`scheduler.planner.Pools`,
    whose top (earliest free, then really idle, then idle longest) takes the next job.
    Each many-slot machine is a column of ``slots`` lanes: a job of size s starts when
    its s earliest lanes are free (the s-th smallest lane time) and holds them until it
    ends (list scheduling without backfilling). Row c of ``times`` holds column c's
    sorted lane times (a heap column: its top's), padded with INF. Columns come in
    platform-name order, a platform's one-slot pool before its many-slot machines, so
    ties in completion time go to the first.
    """

    def __init__(self, state: State, now: float, depth: int = 1) -> None:
        pools = Pools(state, now)
        self.now = now
        # a busy machine whose run is overdue frees "any moment", never now
        self.soon = math.nextafter(now, INF)
        self.platforms: list[str] = []
        self.heaps: list[list[tuple[float, int, float, str]] | None] = []
        # a many-slot column's machine ("" for a pool)
        self.machines: list[str] = []
        rows: list[list[float]] = []
        for platform in sorted(pools.power):
            heap = pools.heaps.get(platform)
            if heap:
                heap = [(max(at, self.soon) if busy else at, busy, since, m) for at, busy, since, m in heap]
                heapq.heapify(heap)
                self.platforms.append(platform)
                self.heaps.append(heap)
                self.machines.append("")
                rows.append([heap[0][0]])
            for _, profile, machine in sorted(pools.profiles.get(platform, []), key=lambda entry: (entry[0], entry[2])):
                self.platforms.append(platform)
                self.heaps.append(None)
                self.machines.append(machine)
                rows.append(_profile_lanes(profile))
        self.times = np.full((len(rows), max([depth, *map(len, rows)])), INF)
        for c, row in enumerate(rows):
            self.times[c, : len(row)] = row

    @classmethod
    def lanes(cls, ready: np.ndarray) -> Columns:
        """One column per one-slot machine, free at ``ready[c]`` and named by its index: a bare batch's machines."""
        columns = cls.__new__(cls)
        columns.now = 0.0
        columns.soon = math.nextafter(0.0, INF)
        columns.platforms = [str(c) for c in range(len(ready))]
        columns.heaps = [[(float(at), 0, 0.0, str(c))] for c, at in enumerate(ready)]
        columns.machines = [""] * len(ready)
        columns.times = np.asarray(ready, dtype=float).reshape(-1, 1).copy()
        return columns

    def take(self, c: int, size: int, seconds: float) -> tuple[str, float, float]:
        """Book column ``c`` for a job of ``size`` slots running ``seconds``; returns (machine, start, end)."""
        heap = self.heaps[c]
        if heap is not None:
            start, _, since, machine = heap[0]
            end = max(start + seconds, self.soon)
            heapq.heapreplace(heap, (end, 1, since, machine))
            self.times[c, 0] = heap[0][0]
            return machine, start, end
        lanes = self.times[c]
        start = float(lanes[size - 1])
        end = max(start + seconds, self.soon)
        lanes[:size] = end
        lanes.sort()
        return self.machines[c], start, end


def _profile_lanes(profile: Profile) -> list[float]:
    """Lane free times of a many-slot machine: its free slots now, then each release; INF for runs without estimate."""
    lanes = [profile.times[0]] * profile.free[0]
    for i in range(1, len(profile.times)):
        lanes += [profile.times[i]] * (profile.free[i] - profile.free[i - 1])
    return lanes + [INF] * (profile.slots - len(lanes))


class Completions:
    """The ECT matrix of a batch (columns x jobs), kept current as jobs are mapped, and the placements made.

    ``seconds[c, j]`` is job j's estimated run on column c's platform (INF where it
    cannot run). The matrix is built on first use, so MCT, which looks at one job at a
    time, never pays for it.
    """

    def __init__(self, columns: Columns, seconds: np.ndarray, sizes: np.ndarray) -> None:
        self.columns = columns
        self.seconds = seconds
        self.sizes = sizes
        self.lane = sizes - 1  # the lane each job waits for
        # (job, machine, start, end) in mapping order
        self.placed: list[tuple[int, str, float, float]] = []
        self._matrix: np.ndarray | None = None

    @property
    def jobs(self) -> int:
        return self.seconds.shape[1]

    @property
    def matrix(self) -> np.ndarray:
        if self._matrix is None:
            self._matrix = self.columns.times[:, self.lane] + self.seconds
        return self._matrix

    def of(self, j: int) -> np.ndarray:
        """Job j's completion time in every column now."""
        return self.columns.times[:, self.lane[j]] + self.seconds[:, j]

    def assign(self, j: int, c: int) -> bool:
        """Map job j onto column c; True if that moved the column's free times (its row was brought up to date)."""
        times = self.columns.times[c]
        before = times.copy()
        self.placed.append((j, *self.columns.take(c, int(self.sizes[j]), float(self.seconds[c, j]))))
        if np.array_equal(before, times):
            return False
        if self._matrix is not None:
            self._matrix[c] = times[self.lane] + self.seconds[c]
        return True

    def best(self, jobs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(column, completion) of the earliest completion of each of ``jobs``."""
        sub = self.matrix[:, jobs]
        arg = sub.argmin(axis=0)
        return arg, sub[arg, np.arange(len(jobs))]

    def best_two(self, jobs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(column, completion) of the earliest and of the second earliest completion of each of ``jobs``.

        The second is over the machines other than the best one: a pool of several idle
        machines offers the same completion twice (a sufferage of 0).
        """
        sub = self.matrix[:, jobs]
        cols = np.arange(len(jobs))
        arg = sub.argmin(axis=0)
        first = sub[arg, cols]
        sub[arg, cols] = self._second_in_column(arg, jobs)
        arg2 = sub.argmin(axis=0)
        return arg, first, arg2, sub[arg2, cols]

    def _second_in_column(self, columns: np.ndarray, jobs: np.ndarray) -> np.ndarray:
        """Each job's completion on the second machine of its best column (INF where there is none)."""
        out = np.full(len(jobs), INF)
        heaps = self.columns.heaps
        for c in np.unique(columns):
            heap = heaps[c]
            if heap is not None and len(heap) > 1:
                free = heap[1][0] if len(heap) == 2 else min(heap[1][0], heap[2][0])
                picked = columns == c
                out[picked] = free + self.seconds[c, jobs[picked]]
        return out


class BatchMapping(Policy):
    """A pass of a mapping heuristic over the ready pending jobs; subclasses choose the order of assignments.

    Jobs without any estimate cannot be mapped: once the others are, they start in
    queue order on machines still free now (never deferred). Jobs whose dependencies
    are not done wait for a later pass.
    """

    name = "mapping"

    def __init__(self) -> None:
        self._rows: dict[str, tuple[float | None, ...]] = {}
        self._rows_for: list[str] = []

    def schedule(self, ctx: Context) -> list[Order]:
        """Map the batch; START what begins now, DEFER the rest to its machine."""
        state, now = ctx.state, ctx.now
        jobs = [job for job in (state.jobs[j] for j in state.pending) if state.ready(job)]
        if not jobs:
            return []
        sizes = np.array([job.size for job in jobs])
        columns = Columns(state, now, int(sizes.max()))
        if not columns.platforms:
            return []
        platforms = sorted(set(columns.platforms))
        if platforms != self._rows_for or len(self._rows) > 4 * len(jobs) + 1024:
            self._rows, self._rows_for = {}, platforms
        matrix, blind = cost_matrix(jobs, platforms, cache=self._rows)
        index = {p: i for i, p in enumerate(platforms)}
        ect = Completions(columns, np.ascontiguousarray(matrix[:, [index[p] for p in columns.platforms]].T), sizes)
        self.map(ect)
        slots = [Slot(jobs[j], machine, start, end, start <= now) for j, machine, start, end in ect.placed]
        slots += _start_blind(columns, [jobs[j] for j in np.flatnonzero(blind)])
        return _orders(slots)

    def map(self, ect: Completions) -> None:
        """Assign the batch's jobs with ``ect.assign``, in the heuristic's order."""
        raise NotImplementedError


def _start_blind(columns: Columns, jobs: list[Job]) -> list[Slot]:
    """Start jobs without estimates, in queue order, in the first column of their platforms with room now."""
    slots = []
    for job in jobs:
        for c, platform in enumerate(columns.platforms):
            if platform in job.estimates and columns.times[c, job.size - 1] <= columns.now:
                machine, start, _ = columns.take(c, job.size, INF)
                slots.append(Slot(job, machine, start, INF, True))
                break
    return slots


def map_times(heuristic: BatchMapping, times: np.ndarray, ready: np.ndarray) -> np.ndarray:
    """The machine ``heuristic`` gives each job of a bare batch (``times``: jobs x machines, INF where it cannot run)."""
    ect = Completions(
        Columns.lanes(ready), np.ascontiguousarray(np.asarray(times, dtype=float).T), np.ones(len(times), dtype=np.intp)
    )
    heuristic.map(ect)
    assign = np.full(len(times), -1, dtype=np.intp)
    for j, machine, _, _ in ect.placed:
        assign[j] = int(machine)
    return assign


class MCT(BatchMapping):
    """Minimum Completion Time: each job in queue order to the machine where it completes earliest.

    Braun et al. 2001, heuristic "MCT" (Fast Greedy); the immediate-mode MCT of
    Maheswaran et al. 1999. O(columns) per job.
    """

    name = "mct"

    def map(self, ect: Completions) -> None:
        for j in self.sequence(ect):
            completion = self.among(ect, j, ect.of(j))
            c = int(completion.argmin())
            if completion[c] != INF:
                ect.assign(j, c)

    def sequence(self, ect: Completions) -> list[int]:
        """The order jobs are mapped in: the queue's."""
        return list(range(ect.jobs))

    def among(self, ect: Completions, j: int, completion: np.ndarray) -> np.ndarray:
        """Job j's completion per column, INF where it may not go: every column may."""
        return completion


class HEFT(MCT):
    """HEFT's order for independent jobs: longest first by mean (or median) run over the usable columns, each to its earliest completion.

    Topcuoglu, Hariri & Wu 2002 (IEEE TPDS 13(3)) rank a task by its mean cost over the
    processors; without dependencies the upward rank is that mean. On unrelated machines
    (a CPU and a GPU implementation whose speed-up differs per program) the mean weighs
    what a job costs wherever it lands, where the fastest time (``edf:objective=makespan``'s
    tie) ignores all but one machine. Columns as in :class:`Columns`; ties keep queue order.
    """

    def __init__(self, rank: str = "mean") -> None:
        super().__init__()
        self.rank = check_rank(rank)
        self.name = "heft" if rank == "mean" else f"heft-{rank}"

    def sequence(self, ect: Completions) -> list[int]:
        return np.argsort(-rank_seconds(ect.seconds.T, self.rank), kind="stable").tolist()


class KPercentBest(HEFT):
    """K-percent best: in HEFT's order, each job to its earliest completion among its ``percent`` % fastest columns.

    Maheswaran et al. 1999, heuristic "KPB": a job never lands on a machine far slower for
    it than its best ones just because that machine is free, so the batch's total work
    stays small (MCT's weakness on unrelated machines) while the load still spreads.
    """

    def __init__(self, percent: float = 20.0, rank: str = "mean") -> None:
        super().__init__(rank)
        if not 0.0 < percent <= 100.0:
            raise ValueError(f"percent must be in (0, 100], got {percent}")
        self.percent = percent
        self.name = f"kpb-{percent:g}"

    def among(self, ect: Completions, j: int, completion: np.ndarray) -> np.ndarray:
        seconds = ect.seconds[:, j]
        keep = max(1, math.ceil(self.percent / 100.0 * np.isfinite(seconds).sum()))
        fastest = np.argsort(seconds, kind="stable")[:keep]
        out = np.full_like(completion, INF)
        out[fastest] = completion[fastest]
        return out


class MinMin(BatchMapping):
    """Min-Min: repeatedly map the job with the least earliest completion time onto that machine.

    Braun et al. 2001, heuristic "Min-min" (after Ibarra and Kim 1977): short jobs go
    first, each to the machine that finishes it soonest. The least of the jobs' earliest
    completions is the least completion of any (job, column) pair, and in a column
    (for jobs of one size) that is the open job with the shortest run there; so each
    column keeps its jobs sorted by run time and a round costs O(columns x sizes).
    Ties go to the first column, then to the earlier job in the queue.
    """

    name = "minmin"

    def map(self, ect: Completions) -> None:
        times = ect.columns.times
        seconds = ect.seconds.tolist()
        open_ = [True] * ect.jobs
        # per job size: (lane, jobs of that size by run time in each column, next candidate per column)
        groups = []
        for size in np.unique(ect.sizes):
            members = np.flatnonzero(ect.sizes == size)
            by_time = members[np.argsort(ect.seconds[:, members], axis=1, kind="stable")].tolist()
            groups.append((int(size) - 1, by_time, [0] * len(by_time)))
        # small loops in plain Python: a round touches a few numbers per column
        while True:
            best, pick = INF, (-1, -1)
            for lane, by_time, at in groups:
                for c, column in enumerate(by_time):
                    k = at[c]
                    while k < len(column) and not open_[column[k]]:  # skip jobs mapped elsewhere
                        k += 1
                    at[c] = k
                    if k < len(column):
                        j = column[k]
                        completion = times.item(c, lane) + seconds[c][j]
                        if completion < best:
                            best, pick = completion, (j, c)
            if best == INF:
                return
            open_[pick[0]] = False
            ect.assign(*pick)


class MaxMin(BatchMapping):
    """Max-Min: repeatedly map the job with the greatest earliest completion time onto that machine.

    Braun et al. 2001, heuristic "Max-min": long jobs are placed first and short ones
    fill in around them. Only the jobs whose best column was the one just booked need
    their earliest completion recomputed.
    """

    name = "maxmin"

    def map(self, ect: Completions) -> None:
        arg, best = ect.best(np.arange(ect.jobs))
        key = np.where(best != INF, best, -INF)  # -INF marks jobs mapped or unplaceable
        while True:
            j = int(key.argmax())
            if key[j] == -INF:
                return
            c = int(arg[j])
            key[j] = -INF
            if ect.assign(j, c):
                stale = np.flatnonzero((arg == c) & (key != -INF))
                if stale.size:
                    arg[stale], values = ect.best(stale)
                    key[stale] = np.where(values != INF, values, -INF)


class Sufferage(BatchMapping):
    """Sufferage: each round, every machine takes the job that would suffer most (second minus best ECT) elsewhere.

    Maheswaran et al. 1999, batch-mode heuristic "Sufferage": every unmapped job claims
    its best machine; a machine claimed by several keeps the claimant with the largest
    sufferage (the first in queue order on a tie) and the others wait for the next
    round; the round's winners are mapped together and the machines' free times
    advance. A job with one usable machine has infinite sufferage. A pool of identical
    machines is claimed machine by machine: one winner per pool per round.
    """

    name = "sufferage"

    def map(self, ect: Completions) -> None:
        arg, best, arg2, second = ect.best_two(np.arange(ect.jobs))
        open_ = best != INF
        while open_.any():
            idx = np.flatnonzero(open_)
            suffer = second[idx] - best[idx]
            column = arg[idx]
            # by column, largest sufferage first, then queue order
            order = np.lexsort((idx, -suffer, column))
            ranked = column[order]
            winners = np.sort(idx[order[np.r_[True, ranked[1:] != ranked[:-1]]]])
            for j in winners:
                ect.assign(int(j), int(arg[j]))
            open_[winners] = False
            # a pool's second machine may have changed even where its first did not
            changed = arg[winners]
            stale = np.flatnonzero(open_ & (np.isin(arg, changed) | np.isin(arg2, changed)))
            if stale.size:
                arg[stale], best[stale], arg2[stale], second[stale] = ect.best_two(stale)
                open_[stale] = best[stale] != INF

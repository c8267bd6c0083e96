"""Santos-Neto et al. 2004's schedulers for bags of data-intensive tasks on a grid of sites (section 3).

- ``wqr``: Workqueue with Replication (3.1): tasks to idle processors at random, no
  information at all; once none waits, running tasks are replicated onto the idle
  processors (up to ``copies`` running copies each) and the first copy to finish wins.
  ``wqr:copies=1`` is plain Workqueue.
- ``storage-affinity``: Algorithm 1 (3.3): the waiting task with the most bytes of its
  input already at a free processor's site goes there; then replicas, to processors
  at sites where the task has positive affinity, least-replicated task first.
- ``xsufferage``: Casanova et al. 2000 as described in 3.2: site-level sufferage
  over completion times that include input transfers; needs runtime estimates and the
  link's available bandwidth.

WQR and Storage Affinity use no runtime estimates (run them with ``--estimates none``);
Storage Affinity reads only where data lives and how big it is (``State.sites``). The
event loop cancels the losing copies when one finishes (``EventLoop.job_ended``); a
policy with ``replicates = True`` is asked again whenever a processor frees up.
"""

from __future__ import annotations

import heapq
import random
from itertools import pairwise

import numpy as np

from scheduler import orders as o
from scheduler.orders import Order
from scheduler.policy import Context, Policy
from scheduler.sites import SITES, DataStores
from scheduler.state import INF, Job, JobStatus, Machine, State


def stores_of(state: State) -> DataStores:
    """The data servers a data-aware policy reads; a clear error when the workload has no sites."""
    if state.sites is None:
        raise ValueError(f"this policy needs a workload that provides {SITES!r} (sites, data servers, a home link)")
    return state.sites


def input_bytes(job: Job) -> int:
    """Total bytes of a task's input."""
    return sum(size for _, size in job.inputs)


def free_slots(state: State) -> list[Machine]:
    """Online machines with room, one entry per free slot, idle longest first (ties in cluster order)."""
    idle = sorted((m for m in state.machines.values() if m.online and m.used < m.slots), key=lambda m: m.idle_since)
    return [m for m in idle for _ in range(m.slots - m.used)]


def runs_on(job: Job, machine: Machine) -> bool:
    """Whether ``job`` has an implementation on ``machine``'s platform (the paper's tasks run anywhere; ours may not)."""
    return machine.platform in job.estimates


def pair_up(tasks: list[Job], free: list[Machine]) -> tuple[list[tuple[Job, Machine]], list[Machine]]:
    """Tasks in order, each with the first free slot left that can run it (tasks no slot can run wait); the slots left."""
    left = list(free)
    pairs = []
    for job in tasks:
        i = next((i for i, m in enumerate(left) if runs_on(job, m)), None)
        if i is not None:
            pairs.append((job, left.pop(i)))
    return pairs, left


def waiting(state: State) -> list[Job]:
    """Pending tasks whose dependencies allow them to start, in queue order."""
    return [job for job in (state.jobs[j] for j in state.pending) if state.ready(job)]


class Copies:
    """What a replication phase may copy: the running tasks and those its pass starts, with their running copies."""

    def __init__(self, state: State, starts: list[Order]) -> None:
        ids = {job_id for m in state.machines.values() for job_id in m.running}
        running = [state.jobs[j] for j in ids if state.jobs[j].status is JobStatus.RUNNING]
        self.count = {job.id: len(job.runs) for job in running}
        self.count.update((order.job, 1) for order in starts)
        self.tasks = sorted(running + [state.jobs[order.job] for order in starts], key=lambda job: job.seq)
        self.placed = {(order.job, order.machine) for order in starts}

    def allowed(self, job: Job, machine: Machine) -> bool:
        """``job`` can run on ``machine``, and no copy of it runs there or was just ordered there."""
        return runs_on(job, machine) and machine.id not in job.runs and (job.id, machine.id) not in self.placed

    def add(self, job: Job, machine: Machine) -> Order:
        """Count one more copy of ``job``, on ``machine``; the REPLICATE order."""
        self.count[job.id] += 1
        self.placed.add((job.id, machine.id))
        return o.replicate(job.id, machine.id, "no task waits")


def _check_copies(copies: int, least: int) -> int:
    if not isinstance(copies, int) or copies < least:
        raise ValueError(f"copies must be an integer >= {least}, got {copies!r}")
    return copies


class WorkqueueReplication(Policy):
    """Workqueue with Replication (Santos-Neto et al. 2004, section 3.1, after Paranhos et al. 2003): knowledge-free, data-unaware.

    Each pass hands the waiting tasks, in queue order, to the idle processors taken in
    a random order (``seed``); when no task waits, each idle processor gets a replica of
    the running task with the fewest copies (the longest-running on a tie) that has
    fewer than ``copies`` and none on that processor. ``copies=1``: plain Workqueue.
    """

    def __init__(self, copies: int = 2, seed: int = 0) -> None:
        self.copies = _check_copies(copies, 1)
        self.rng = random.Random(seed)
        self.replicates = copies > 1
        self.name = "workqueue" if copies == 1 else "wqr"

    def schedule(self, ctx: Context) -> list[Order]:
        """START waiting tasks on idle processors at random; REPLICATE running ones onto what stays idle."""
        state = ctx.state
        free = free_slots(state)
        self.rng.shuffle(free)
        tasks = waiting(state)
        pairs, left = pair_up(tasks, free)
        out = [o.start(job.id, m.id) for job, m in pairs]
        if len(pairs) < len(tasks) or not self.replicates:
            return out
        copies = Copies(state, out)
        count = copies.count
        for m in left:
            choice = min(
                (job for job in copies.tasks if count[job.id] < self.copies and copies.allowed(job, m)),
                key=lambda job: (count[job.id], job.started if job.started is not None else INF, job.seq),
                default=None,
            )
            if choice is not None:
                out.append(copies.add(choice, m))
        return out


class StorageAffinity(Policy):
    """Storage Affinity (Santos-Neto et al. 2004, section 3.3, Algorithm 1): data reuse first, then replication; no runtime estimates.

    Phase 1: among the waiting tasks and the sites with idle processors, the pair
    with the largest storage affinity (bytes of the task's input already at the site)
    goes first, to the site's processor idle longest; tasks with no affinity to any
    such site follow in queue order. Phase 2, when no task waits: each idle processor
    replicates a running task with positive affinity to its site, choosing the least
    replicated (degree = running copies) and then the largest affinity; ``copies``
    caps the running copies of a task (0: no cap, as in the paper).
    """

    name = "storage-affinity"
    replicates = True

    def __init__(self, copies: int = 0) -> None:
        self.copies = _check_copies(copies, 0)

    def schedule(self, ctx: Context) -> list[Order]:
        """START by affinity, then REPLICATE onto the processors left idle."""
        state = ctx.state
        stores = stores_of(state)
        free: dict[str, list[Machine]] = {}
        for m in free_slots(state):
            free.setdefault(stores.site_of[m.id], []).append(m)
        if not free:
            return []
        tasks = waiting(state)
        out = self._by_affinity(tasks, free, stores)
        if len(out) < len(tasks):
            return out
        return out + self._replicas(Copies(state, out), free, stores)

    def _by_affinity(self, tasks: list[Job], free: dict[str, list[Machine]], stores: DataStores) -> list[Order]:
        """Phase 1: largest affinity first, per site a heap of (-affinity, queue position, task); then queue order."""
        heaps: dict[str, list[tuple[int, int, Job]]] = {site: [] for site in free}
        for i, job in enumerate(tasks):
            for site, nbytes in stores.affinities(job.inputs).items():
                if site in heaps:
                    heaps[site].append((-nbytes, i, job))
        for heap in heaps.values():
            heapq.heapify(heap)
        taken: set[str] = set()
        out: list[Order] = []
        while True:
            for site in list(heaps):
                heap = heaps[site]
                while heap and heap[0][2].id in taken:
                    heapq.heappop(heap)
                if not heap or site not in free:
                    del heaps[site]
            if not heaps:
                break
            site = min(heaps, key=lambda s: heaps[s][0][:2])
            _, _, job = heapq.heappop(heaps[site])
            machine = self._take(free, site, job)
            if machine is not None:
                out.append(o.start(job.id, machine.id, "storage affinity"))
                taken.add(job.id)
        rest = sorted((m for machines in free.values() for m in machines), key=lambda m: m.idle_since)
        for job, m in pair_up([j for j in tasks if j.id not in taken], rest)[0]:
            out.append(o.start(job.id, m.id))
            free[stores.site_of[m.id]].remove(m)
        for site in [s for s, machines in free.items() if not machines]:
            del free[site]
        return out

    def _replicas(self, copies: Copies, free: dict[str, list[Machine]], stores: DataStores) -> list[Order]:
        """Phase 2: per idle processor, the least-replicated running task with positive affinity to its site, largest first."""
        degree = copies.count
        affinity = {job.id: stores.affinities(job.inputs) for job in copies.tasks}
        out: list[Order] = []
        for site, machines in free.items():
            for m in machines:
                choice = min(
                    (
                        job
                        for job in copies.tasks
                        if affinity[job.id].get(site, 0) > 0
                        and copies.allowed(job, m)
                        and (self.copies == 0 or degree[job.id] < self.copies)
                    ),
                    key=lambda job: (degree[job.id], -affinity[job.id][site], job.seq),
                    default=None,
                )
                if choice is not None:
                    out.append(copies.add(choice, m))
        return out

    @staticmethod
    def _take(free: dict[str, list[Machine]], site: str, job: Job) -> Machine | None:
        """The site's processor idle longest that can run ``job``, taken from ``free``; None if none can."""
        machines = free[site]
        m = next((m for m in machines if runs_on(job, m)), None)
        if m is None:
            return None
        machines.remove(m)
        if not machines:
            del free[site]
        return m


class XSufferage(Policy):
    """XSufferage (Santos-Neto et al. 2004, section 3.2; Casanova et al. 2000): sufferage at site level, transfers included.

    Each pass maps the waiting tasks in rounds: a task's completion on a processor is
    when the processor frees + transfer of the input bytes its site lacks + its run
    time estimate; a site's completion is its best processor's; the task whose best and
    second-best sites differ most (its sufferage) goes to its best processor. Tasks
    mapped to processors idle now START; the pass stops when none is left idle (the
    rest would wait for a busy processor and are mapped again at the next pass). The
    link's available bandwidth is its capacity over the transfers on it now plus those
    this pass may add (one per idle processor), as a monitor like NWS would report.
    A processor's free time is the end this policy expected when it started its run.
    Files a task mapped in this pass would bring to its site are not credited to the
    other tasks of the pass (the generated bags share no files within one execution).
    """

    name = "xsufferage"

    def __init__(self) -> None:
        # machine -> expected end of the run this policy started there
        self._expected: dict[str, float] = {}
        # task -> estimates per processor, then its input bytes
        self._rows: dict[str, np.ndarray] = {}
        self._rows_for: tuple[str, ...] = ()

    def schedule(self, ctx: Context) -> list[Order]:
        """Map waiting tasks by site-level sufferage; START those whose processor is idle."""
        state, now = ctx.state, ctx.now
        stores = stores_of(state)
        tasks = waiting(state)
        idle = {m.id for m in free_slots(state)}
        if not tasks or not idle:
            return []
        sites = sorted(stores.sites)
        machines = [m for site in sites for m in stores.sites[site] if m in state.machines and state.machines[m].online]
        bounds = np.searchsorted([sites.index(stores.site_of[m]) for m in machines], np.arange(len(sites) + 1))
        seconds, sizes = self._rows_of(tasks, machines, state)
        bandwidth = stores.bandwidth / (stores.transfers + len(idle))
        transfer = np.repeat(sizes[:, None], len(sites), axis=1)
        column_of = {site: k for k, site in enumerate(sites)}
        for i, job in enumerate(tasks):
            for site, nbytes in stores.affinities(job.inputs).items():
                transfer[i, column_of[site]] -= nbytes
        transfer /= bandwidth
        soon = np.nextafter(now, INF)
        ready = np.array([now if m in idle else max(self._expected.get(m, soon), soon) for m in machines])
        column_site = np.repeat(np.arange(len(sites)), np.diff(bounds))
        completion = ready + seconds + transfer[:, column_site]  # tasks x processors
        by_site = np.stack([_min_or_inf(completion[:, lo:hi]) for lo, hi in pairwise(bounds)], axis=1)
        first, sufferage = _sufferage(by_site)
        mapped = np.zeros(len(tasks), dtype=bool)
        out: list[Order] = []
        left = len(idle)
        while left:
            t = int(sufferage.argmax())  # the first in queue order on a tie
            if sufferage[t] == -INF:
                break
            s = int(first[t])
            lo, hi = bounds[s], bounds[s + 1]
            p = lo + int(completion[t, lo:hi].argmin())
            if ready[p] <= now:
                out.append(o.start(tasks[t].id, machines[p], "xsufferage"))
                self._expected[machines[p]] = float(completion[t, p])
                left -= 1
            ready[p] = completion[t, p]
            mapped[t], sufferage[t] = True, -INF
            before = completion[:, p].copy()
            completion[:, p] = ready[p] + seconds[:, p] + transfer[:, s]
            # the processor only got later: only tasks whose site-s best was on it change, and only their ranking
            rows = np.flatnonzero((before == by_site[:, s]) & ~mapped)
            if rows.size:
                by_site[rows, s] = completion[rows, lo:hi].min(axis=1)
                first[rows], sufferage[rows] = _sufferage(by_site[rows])
        return out

    def _rows_of(self, tasks: list[Job], machines: list[str], state: State) -> tuple[np.ndarray, np.ndarray]:
        """Tasks x processors run time estimates (INF where a task cannot run) and input bytes; cached per task."""
        key = tuple(machines)
        if key != self._rows_for:
            self._rows, self._rows_for = {}, key
        platforms = [state.machines[m].platform for m in machines]
        rows = []
        for job in tasks:
            row = self._rows.get(job.id)
            if row is None:
                if job.estimates and all(v is None for v in job.estimates.values()):
                    raise ValueError(
                        "xsufferage needs runtime estimates: simulate it with --estimates oracle, model or noisy"
                    )
                times = [INF if job.estimates.get(p) is None else job.estimates[p] for p in platforms]
                row = self._rows[job.id] = np.array([*times, input_bytes(job)], dtype=float)
            rows.append(row)
        matrix = np.stack(rows)
        return matrix[:, :-1], matrix[:, -1]


def _sufferage(by_site: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each task's best site and its sufferage: second-best minus best site completion (-INF if it fits nowhere)."""
    first = by_site.argmin(axis=1)
    best = by_site[np.arange(len(by_site)), first]
    second = np.partition(by_site, 1, axis=1)[:, 1] if by_site.shape[1] > 1 else best
    return first, np.where(np.isfinite(best), second - best, -INF)


def _min_or_inf(block: np.ndarray) -> np.ndarray:
    """Row minima of a tasks x processors block (INF for a site with no online processor)."""
    return block.min(axis=1) if block.shape[1] else np.full(block.shape[0], INF)

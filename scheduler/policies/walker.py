"""Walker 2001 (MSc thesis): RAND, MP and MPL, static placement of data-parallel grid jobs' tasks.

All three follow the greedy heuristic of section 3.6: take the tasks one by one, keep
only the machines whose architecture and operating system the task's binaries support
(section 3.4.1), give the task to the fittest of them and count it in that machine's
load for the tasks after it (step 7). An assignment is final: a task whose machine has
no free processor is DEFERred to that machine and waits there. The fitness is what
tells them apart (section 5.3); their costs for k tasks on n machines (section 5.3.2)
are O(k) for RAND, O(nk) for MP and O(nk^2) for MPL, whose latency sums over the tasks
already placed. (Here RAND is O(nk) as well: eligibility filtering looks at every machine.)

Load, as the policies read it, is the machine's snapshot load plus the tasks of ours
running on it or waiting for it: what a fresh snapshot would report, which is why the
thesis need not carry its per-job increments from one scheduling run to the next.
"""

from __future__ import annotations

import random

import numpy as np

from scheduler import orders as o
from scheduler.gridinfo import (
    Application,
    GridNode,
    max_performance,
    topology,
)
from scheduler.orders import Order
from scheduler.policy import Context, Policy
from scheduler.state import Job, JobStatus, Machine, State


class GridView:
    """The state's machines as arrays: snapshots, slots and the Topology matrix (section 4.4.3) between them."""

    def __init__(self, machines: list[Machine]) -> None:
        self.machines = machines
        self.ids = [m.id for m in machines]
        self.index = {m.id: i for i, m in enumerate(machines)}
        self.nodes = [GridNode.parse(m.attributes, m.id) for m in machines]
        self.platforms = np.array([n.platform for n in self.nodes], dtype=object)
        self.processors = np.array([n.processors for n in self.nodes], dtype=float)
        self.slots = np.array([m.slots for m in machines])
        self.topology = np.array([[topology(a.path, b.path) for b in self.nodes] for a in self.nodes]).reshape(
            len(machines), len(machines)
        )
        self._origins: dict[tuple[str, ...], np.ndarray] = {}

    def from_origin(self, origin: tuple[str, ...]) -> np.ndarray:
        """Topology(origin, h) for every machine h."""
        cost = self._origins.get(origin)
        if cost is None:
            cost = self._origins[origin] = np.array([topology(origin, n.path) for n in self.nodes])
        return cost

    def eligible(self, job: Job, app: Application) -> np.ndarray:
        """Indices of online machines the task's binaries run on (section 3.4.1), that the oracle knows and that fit it."""
        known = np.array([m.online and m.platform in job.estimates for m in self.machines], dtype=bool)
        runs = np.isin(self.platforms, sorted(app.binaries))
        return np.flatnonzero(known & runs & (self.slots >= job.size))


class StaticPlacement(Policy):
    """The shared loop of section 3.6; subclasses supply :meth:`choose`, the fitness ranking."""

    name = "walker"

    def __init__(self) -> None:
        self._view: GridView | None = None
        # grid job -> machines its tasks were given, in order (ASSIGNMENT)
        self._placed: dict[str, list[str]] = {}

    def schedule(self, ctx: Context) -> list[Order]:
        """Keep every earlier assignment (START once its machine frees), then place each new task."""
        state, now = ctx.state, ctx.now
        if not state.pending:
            return []
        view = self.grid_view(state)
        free = [m.free for m in view.machines]
        load = np.array([float(m.attributes["load"]) + m.used for m in view.machines])
        out: list[Order] = []
        kept: set[str] = set()
        for machine_id, queue in state.plan.items():
            i = view.index[machine_id]
            if not view.machines[i].online:
                # its waiting tasks are placed anew below
                continue
            for job_id in queue:
                job = state.jobs[job_id]
                if job.status is JobStatus.PENDING and job.planned_machine == machine_id:
                    kept.add(job_id)
                    load[i] += job.size
                    out.append(
                        _order(state, job, view, i, free, job.planned_start if job.planned_start is not None else now)
                    )
        latency_cache: dict[str, np.ndarray] = {}
        for job_id in state.pending:
            if job_id in kept:
                continue
            job = state.jobs[job_id]
            app = Application.of(job)
            candidates = view.eligible(job, app)
            if not len(candidates):
                # no machine can run it (now): it waits, as with fcfs and edf
                continue
            placed = self._placed.setdefault(app.job, [])
            i = self.choose(
                view, app, candidates, load, [view.index[p] for p in placed if p in view.index], latency_cache
            )
            placed.append(view.ids[i])
            load[i] += job.size
            out.append(_order(state, job, view, i, free, now))
        return out

    def choose(
        self,
        view: GridView,
        app: Application,
        candidates: np.ndarray,
        load: np.ndarray,
        placed: list[int],
        cache: dict[str, np.ndarray],
    ) -> int:
        """The machine (index into ``view``) for the next task of ``app`` among ``candidates``."""
        raise NotImplementedError

    def grid_view(self, state: State) -> GridView:
        """The view of the state's machines, kept until a machine joins."""
        if self._view is None or len(self._view.ids) != len(state.machines):
            self._view = GridView(list(state.machines.values()))
        return self._view


def _order(state: State, job: Job, view: GridView, i: int, free: list[int], at: float) -> Order:
    """START on machine ``i`` if it has room and the job is ready, else DEFER to it."""
    if free[i] >= job.size and state.ready(job):
        free[i] -= job.size
        return o.start(job.id, view.ids[i], "grid placement")
    return o.defer(job.id, view.ids[i], at)


def fitness(view: GridView, app: Application, candidates: np.ndarray, load: np.ndarray) -> np.ndarray:
    """Max_performance of each candidate at its current load (section 4.4.1)."""
    return np.array([max_performance(view.nodes[j], app, load[j]) for j in candidates])


ANCHORS = ("origin", "peers", "both")


def latency(
    view: GridView,
    app: Application,
    candidates: np.ndarray,
    placed: list[int],
    anchor: str,
    cache: dict[str, np.ndarray],
) -> np.ndarray:
    """Latency(t_i, h) = ratio x the sum of Topology(h, a) over the anchors a (section 4.4.3), per candidate h.

    ``anchor`` names them: the node the job was submitted from, where its data live
    (``origin``); the job's tasks placed so far, the thesis's ASSIGNMENT (``peers``); or
    ``both``. With no anchor yet, the thesis's temporary assignment stands in (see
    :func:`closest_fill`).
    """
    cost = np.zeros(len(candidates))
    anchored = False
    if anchor != "peers" and app.origin is not None:
        cost += view.from_origin(app.origin)[candidates]
        anchored = True
    if anchor != "origin" and placed:
        cost += view.topology[np.ix_(candidates, np.asarray(placed))].sum(axis=1)
        anchored = True
    if not anchored:
        if app.job not in cache:
            cache[app.job] = closest_fill(view, candidates, app.tasks - 1)
        cost = cache[app.job]
    return app.ratio * cost


def closest_fill(view: GridView, candidates: np.ndarray, others: int) -> np.ndarray:
    """Per candidate h: the Topology cost of the job's ``others`` tasks put one per processor on the machines closest to h.

    Section 4.4.3's remedy for an empty ASSIGNMENT; h keeps one processor for the task
    being placed. Tasks beyond the candidates' processors are charged at the farthest level.
    """
    cost = view.topology[np.ix_(candidates, candidates)]
    order = np.argsort(cost, axis=1, kind="stable")
    near = np.take_along_axis(cost, order, axis=1)
    procs = view.processors[candidates][order] - (candidates[order] == candidates[:, None])
    before = np.cumsum(procs, axis=1) - procs
    take = np.clip(others - before, 0.0, procs)
    rest = np.maximum(others - procs.sum(axis=1), 0.0)
    return (take * near).sum(axis=1) + rest * near[:, -1]


class Rand(StaticPlacement):
    """RAND (thesis section 5.3): each task to a machine drawn uniformly among the eligible ones; the baseline.

    ``seed`` makes the draws repeatable.
    """

    def __init__(self, seed: int = 0) -> None:
        super().__init__()
        self.rng = random.Random(seed)
        self.name = "rand"

    def choose(
        self,
        view: GridView,
        app: Application,
        candidates: np.ndarray,
        load: np.ndarray,
        placed: list[int],
        cache: dict[str, np.ndarray],
    ) -> int:
        """Uniform among ``candidates``."""
        return int(candidates[self.rng.randrange(len(candidates))])


class MaxPerformance(StaticPlacement):
    """MP (thesis sections 3.6, 4.4.1, 5.3): fitness = speed x processors / (load + 1) x ASF; ties to the first machine."""

    def __init__(self) -> None:
        super().__init__()
        self.name = "mp"

    def choose(
        self,
        view: GridView,
        app: Application,
        candidates: np.ndarray,
        load: np.ndarray,
        placed: list[int],
        cache: dict[str, np.ndarray],
    ) -> int:
        """The candidate of highest Max_performance."""
        return int(candidates[np.argmax(fitness(view, app, candidates, load))])


class MaxPerformanceLatency(StaticPlacement):
    """MPL (thesis sections 3.4.3, 4.4.3, 5.3): fitness = Max_performance / (1 + Latency).

    Latency weighs the job's ``ratio`` by 10**n per network level n between the machine
    and each anchor: by default the node the job was submitted from (``anchor="origin"``);
    ``anchor="peers"`` is the thesis's own rule, the job's tasks placed so far, and
    ``anchor="both"`` sums the two (see :func:`latency`).
    """

    def __init__(self, anchor: str = "origin") -> None:
        if anchor not in ANCHORS:
            raise ValueError(f"anchor must be one of {', '.join(ANCHORS)}, got {anchor!r}")
        super().__init__()
        self.anchor = anchor
        self.name = "mpl" if anchor == "origin" else f"mpl-{anchor}"

    def choose(
        self,
        view: GridView,
        app: Application,
        candidates: np.ndarray,
        load: np.ndarray,
        placed: list[int],
        cache: dict[str, np.ndarray],
    ) -> int:
        """The candidate of highest Performance = Max_performance / (1 + Latency)."""
        score = fitness(view, app, candidates, load) / (
            1.0 + latency(view, app, candidates, placed, self.anchor, cache)
        )
        return int(candidates[np.argmax(score)])

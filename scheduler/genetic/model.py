"""Phan, Ranganathan & Sion 2005's model (section 3, Table 1) and its evaluation function (Fig 6), vectorised.

A snapshot window of J jobs runs on C compute nodes. Job j needs the data objects
REQUIRES(j, .); object o lives at a remote store ``source[o]`` behind a slow wide-area
link and may be replicated to one of S local data stores on the nodes' LAN. A schedule
(a *chromosome*) is the tuple {queue order, job -> node, object -> store}; the store
value ``S`` (:attr:`Problem.no_replica`) means "not replicated": jobs fetch the object
from its remote store straight to their node.

The evaluation walks the queue in order (Fig 6). Job j on node c is dispatched at
t = NACT(c); for each object it needs, the copy to the object's local store starts at t
unless an earlier copy arrives sooner (NAOT(o) = min(NAOT(o), t + first hop), lines
18-22, "waits for that download or instantiates its own, whichever is faster",
section 3); then the final hop store -> node follows once the object is there and the
job has started. The job computes once its slowest object has arrived, and NACT(c)
becomes its end. The makespan is the latest end.

One reading differs from the figure's letter, on purpose: Fig 6 sets ``clock`` once,
before the loop, and adds ``maxTD`` (an absolute NAOT plus a hop) to NACT(C). Taken
literally every object would be fetched at time zero by every job and a replica could
never save anything, contradicting Fig 7 (replication shortens makespans). We take
``clock`` as the job's dispatch time and ``maxTD`` as the delay from it, which is what
section 3 describes (objects are downloaded in parallel when the job runs; later jobs
reuse the local replica).

:func:`evaluate` runs that loop over the queue positions once for a whole population:
each step is a handful of NumPy operations on (population x objects-per-job) arrays.
:func:`evaluate_reference` is the same function written per chromosome, line by line
after Fig 6, to check the vectorised one against.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import NamedTuple

import numpy as np

INF = np.inf


@dataclass(frozen=True)
class Problem:
    """Table 1's lookup tables for one snapshot window (seconds, bytes and bytes per second).

    ``compute[j, c]``: COMPUTE(job, node), INF where the job cannot run; ``requires[j, o]``:
    REQUIRES(job, object); ``size[o]``: SIZE(object); ``source[o]``: its remote store;
    BANDWIDTH split by link kind: ``remote_to_store`` (R x S), ``store_to_node`` (S x C)
    and ``remote_to_node`` (R x C, for objects not replicated). ``ready[c]`` is NACT at
    the start (``clock`` for every node when omitted).
    """

    compute: np.ndarray
    requires: np.ndarray
    size: np.ndarray
    source: np.ndarray
    remote_to_store: np.ndarray
    store_to_node: np.ndarray
    remote_to_node: np.ndarray
    ready: np.ndarray | None = None
    clock: float = 0.0

    def __post_init__(self) -> None:
        for name, dtype in (
            ("compute", float),
            ("requires", bool),
            ("size", float),
            ("source", np.intp),
            ("remote_to_store", float),
            ("store_to_node", float),
            ("remote_to_node", float),
        ):
            object.__setattr__(self, name, np.asarray(getattr(self, name), dtype=dtype))
        jobs, nodes = np.shape(self.compute)
        objects = len(self.size)
        remotes, stores = np.shape(self.remote_to_store)
        expected = {
            "requires": ((jobs, objects), np.shape(self.requires)),
            "source": ((objects,), np.shape(self.source)),
            "store_to_node": ((stores, nodes), np.shape(self.store_to_node)),
            "remote_to_node": ((remotes, nodes), np.shape(self.remote_to_node)),
        }
        if self.ready is not None:
            expected["ready"] = ((nodes,), np.shape(self.ready))
        for name, (want, got) in expected.items():
            if want != got:
                raise ValueError(
                    f"{name} has shape {got}, expected {want} for {jobs} jobs, {nodes} nodes, {objects} objects"
                )
        if jobs == 0 or nodes == 0:
            raise ValueError("a problem needs at least one job and one node")
        for name in ("remote_to_store", "store_to_node", "remote_to_node"):
            if np.any(np.asarray(getattr(self, name)) <= 0):
                raise ValueError(f"{name}: bandwidths must be positive")
        if np.any(np.asarray(self.size) < 0) or np.any(np.asarray(self.compute) < 0):
            raise ValueError("sizes and compute times must be >= 0")
        if objects and (np.min(self.source) < 0 or np.max(self.source) >= remotes):
            raise ValueError(f"source must name remote stores 0..{remotes - 1}")
        if not np.isfinite(self.compute).any(axis=1).all():
            raise ValueError("every job needs a node it can run on (a finite COMPUTE)")

    @property
    def jobs(self) -> int:
        return int(np.shape(self.compute)[0])

    @property
    def nodes(self) -> int:
        return int(np.shape(self.compute)[1])

    @property
    def objects(self) -> int:
        return len(self.size)

    @property
    def stores(self) -> int:
        return int(np.shape(self.remote_to_store)[1])

    @property
    def no_replica(self) -> int:
        """The store value meaning "not replicated" (fetch from the remote store every time)."""
        return self.stores

    @cached_property
    def eligible(self) -> np.ndarray:
        """(J x C) bool: where each job can run."""
        return np.isfinite(self.compute)

    @cached_property
    def needs(self) -> np.ndarray:
        """(J x K) object indices each job needs, padded with the dummy object ``D`` (free, zero-size)."""
        counts = self.requires.sum(axis=1)
        width = max(int(counts.max(initial=0)), 1)
        out = np.full((self.jobs, width), self.objects, dtype=np.intp)
        rows, cols = np.nonzero(self.requires)
        out[rows, np.arange(len(rows)) - np.repeat(np.cumsum(counts) - counts, counts)] = cols
        return out

    @cached_property
    def first_hop(self) -> np.ndarray:
        """((D+1) x (S+1)) seconds to copy each object from its remote store to each local store (0: no replica)."""
        out = np.zeros((self.objects + 1, self.stores + 1))
        out[:-1, :-1] = self.size[:, None] / self.remote_to_store[self.source]
        return out

    @cached_property
    def last_hop(self) -> np.ndarray:
        """((D+1) x (S+1) x C) seconds from each store to each node; the no-replica column is remote -> node."""
        out = np.zeros((self.objects + 1, self.stores + 1, self.nodes))
        size = self.size[:, None, None]
        out[:-1, :-1] = size / self.store_to_node[None, :, :]
        out[:-1, -1] = size[:, 0] / self.remote_to_node[self.source]
        return out

    def start_times(self) -> np.ndarray:
        """NACT at the start of the window, one entry per node."""
        return np.full(self.nodes, float(self.clock)) if self.ready is None else np.asarray(self.ready, dtype=float)


class Chromosomes(NamedTuple):
    """A population of schedules (Phan, Ranganathan & Sion 2005, section 4.3): P rows of each string."""

    # (P x J) permutation of jobs: the queue order
    order: np.ndarray
    # (P x J) node of job j (indexed by job, not by queue position)
    nodes: np.ndarray
    # (P x D) local store of object o, or Problem.no_replica
    stores: np.ndarray

    def take(self, rows: np.ndarray) -> Chromosomes:
        """The chromosomes at ``rows``."""
        return Chromosomes(self.order[rows], self.nodes[rows], self.stores[rows])


class Timeline(NamedTuple):
    """What a schedule does: each job's node, start and end of computation, and the makespan (P rows)."""

    nodes: np.ndarray  # (P x J) by job
    # (P x J) by job: when computation begins (after the slowest object arrives)
    start: np.ndarray
    end: np.ndarray  # (P x J) by job
    makespan: np.ndarray  # (P,)


def timeline(problem: Problem, order: np.ndarray, nodes: np.ndarray | None, stores: np.ndarray) -> Timeline:
    """Fig 6 over a population at once; ``nodes=None`` sends each job to the node free soonest (jobs-LL, section 5.2).

    The loop runs over queue positions; every step handles the k-th job of all P
    chromosomes together, so its cost is O(J) NumPy calls whatever P is.
    """
    order = np.atleast_2d(order)
    stores = np.atleast_2d(stores)
    population, jobs = order.shape
    if (
        jobs != problem.jobs
        or stores.shape != (population, problem.objects)
        or (nodes is not None and np.shape(np.atleast_2d(nodes)) != order.shape)
    ):
        raise ValueError(
            f"population of {population}: order and nodes must be {population} x {problem.jobs}, stores {population} x {problem.objects}"
        )
    rows = np.arange(population)
    column = rows[:, None]
    # objects plus the dummy one that pads each job's list
    width = problem.objects + 1
    padded = np.concatenate([stores, np.full((population, 1), problem.no_replica)], axis=1)
    # (P x D+1) copy time of each object to its store
    first = problem.first_hop[np.arange(width), padded]
    # (P x D+1 x C) hop from that store to each node
    last = problem.last_hop[np.arange(width), padded]
    # (P x J x K) objects of the job at each queue position
    needs = problem.needs[order]
    # their cells in the flattened NAOT table
    slots = (column * width)[:, :, None] + needs
    # (P x J x K) first-hop times along the queue
    copies = first[column[:, :, None], needs]
    naot = np.full(population * width, INF)
    nact = np.tile(problem.start_times(), population)  # flattened (P x C) NACT table
    base = rows * problem.nodes
    compute = problem.compute
    # jobs-LL: the node is chosen as the walk goes
    if nodes is None:
        chosen = np.empty((population, jobs), dtype=np.intp)
        unusable = np.where(problem.eligible, 0.0, INF)
    # everything but the clocks is known up front: gather it once
    else:
        chosen = np.atleast_2d(nodes)[column, order]  # node of the job at each queue position
        hops = last[column[:, :, None], needs, chosen[:, :, None]]
        works = compute[order, chosen]
    start = np.empty((population, jobs))
    for k in range(jobs):
        if nodes is None:
            node = chosen[:, k] = (nact.reshape(population, -1) + unusable[order[:, k]]).argmin(axis=1)
            hop, work = last[column, needs[:, k], node[:, None]], compute[order[:, k], node]
        else:
            node, hop, work = chosen[:, k], hops[:, k], works[:, k]
        at = base + node
        t = nact[at]
        cells = slots[:, k]
        arrive = np.minimum(naot[cells], copies[:, k] + t[:, None])
        naot[cells] = arrive
        begin = (np.maximum(arrive, t[:, None]) + hop).max(axis=1)  # the dummy object makes it >= t
        start[:, k] = begin
        nact[at] = begin + work
    end = start + compute[order, chosen]
    by_job = np.argsort(order, axis=1)
    return Timeline(chosen[column, by_job], start[column, by_job], end[column, by_job], end.max(axis=1))


def evaluate(problem: Problem, population: Chromosomes) -> np.ndarray:
    """Makespan of every chromosome of ``population`` (the GA's evaluation function)."""
    return timeline(problem, population.order, population.nodes, population.stores).makespan


def evaluate_reference(problem: Problem, order: np.ndarray, nodes: np.ndarray, stores: np.ndarray) -> float:
    """The makespan of one chromosome by a plain loop over Fig 6's lines (the check on :func:`timeline`)."""
    nact = [float(x) for x in problem.start_times()]
    naot = [INF] * problem.objects
    makespan = 0.0
    for j in order:
        c = int(nodes[j])
        # the job is dispatched when its node is free
        clock = nact[c]
        max_td = 0.0
        for o in np.flatnonzero(problem.requires[j]):
            s = int(stores[o])
            if s == problem.no_replica:
                td = 0.0
                final_hop = problem.size[o] / problem.remote_to_node[problem.source[o], c]
            else:
                td = problem.size[o] / problem.remote_to_store[problem.source[o], s]  # line 17
                final_hop = problem.size[o] / problem.store_to_node[s, c]  # line 23
            # lines 18-22: a copy already under way, or one of our own
            naot[o] = min(naot[o], clock + td)
            max_td = max(max_td, max(naot[o], clock) + final_hop - clock)  # line 26, as a delay from dispatch
        completion = nact[c] + max_td + float(problem.compute[j, c])  # lines 31-32
        nact[c] = max(nact[c], completion)  # line 33
        makespan = max(makespan, completion)  # line 36
    return makespan

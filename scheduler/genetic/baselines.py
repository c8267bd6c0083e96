"""Phan, Ranganathan & Sion 2005's greedy FIFO baselines (section 5.2): jobs-LL / jobs-rand crossed with rep-none / rep-rand.

Jobs leave the queue in FIFO order; jobs-LL sends each to the node free soonest (NACT
as the evaluation function tracks it, transfers included), jobs-rand to a random node
it can use. rep-none never replicates (every job fetches its objects from their remote
stores), rep-rand copies each object to a random local store. The schedule is then
timed by the same evaluation function as the GA's (Fig 6), so all six algorithms are
judged alike.

rep-fast is ours, not the paper's: each object goes to the local store with the fastest
link from its remote store, the obvious informed greedy placement (a stronger baseline
for the benchmark; it needs no search).
"""

from __future__ import annotations

import numpy as np

from scheduler.genetic.ga import random_nodes, random_stores
from scheduler.genetic.model import Problem, Timeline, timeline

DISPATCH = ("ll", "rand")
REPLICATION = ("none", "rand", "fast")
NAMES = ("jobs-ll-rep-none", "jobs-ll-rep-rand", "jobs-rand-rep-none", "jobs-rand-rep-rand")  # the paper's four


def greedy(problem: Problem, jobs: str, rep: str, rng: np.random.Generator, runs: int = 1) -> Timeline:
    """``runs`` independent draws of the greedy baseline ``jobs-<jobs>-rep-<rep>`` (rows of the timeline)."""
    if jobs not in DISPATCH or rep not in REPLICATION:
        raise ValueError(f"unknown greedy baseline jobs-{jobs}-rep-{rep}; known: {', '.join(NAMES)}")
    order = np.tile(np.arange(problem.jobs), (runs, 1))
    nodes = None if jobs == "ll" else random_nodes(problem.eligible, runs, rng)
    if rep == "fast" and problem.stores:
        stores = np.tile(problem.first_hop[:-1, :-1].argmin(axis=1), (runs, 1))
    else:
        stores = random_stores(problem, runs, rng, replicate=rep == "rand")
    return timeline(problem, order, nodes, stores)

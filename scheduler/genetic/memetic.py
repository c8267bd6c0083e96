"""Phan, Ranganathan & Sion 2005's GA made strong: its first population holds the list heuristics' schedules, and local search polishes its best.

The paper's GA starts from random schedules, so on a batch of independent jobs it
rarely catches up with a good list heuristic (``benchmarks/batch_planning.py``). Here
the first population gets the given job -> node assignments (each with the queue order
and each object replicated to the local store with the fastest link from its remote
store, the informed ``jobs-ll-rep-fast`` placement) and the jobs-LL schedule itself; the
rest stays random. Every generation the best parent is polished:

- without data objects (the scheduler's window, a plain batch) the makespan is the
  latest node's ready time plus load, and the R||Cmax local search of
  ``scheduler/batch/search.py`` improves the node string directly;
- with objects (the paper's model) a descent over the population evaluation itself:
  every move of a job of the node that ends last to another node it can use is a row
  of one population, evaluated at once (Fig 6), the best taken while it helps.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import numpy as np

from scheduler.batch.search import improve
from scheduler.genetic.baselines import greedy
from scheduler.genetic.model import Chromosomes, Problem, evaluate, timeline

Polish = Callable[[Chromosomes, float], tuple[Chromosomes, float]]


def seeded(problem: Problem, assignments: Sequence[np.ndarray], rng: np.random.Generator) -> Chromosomes:
    """Chromosomes of the given node assignments and of jobs-LL, objects replicated the fast way (or not at all)."""
    stores = (
        problem.first_hop[:-1, :-1].argmin(axis=1) if problem.stores else np.full(problem.objects, problem.no_replica)
    )
    ll = greedy(problem, "ll", "fast", rng).nodes[0]
    nodes = np.array([*assignments, ll], dtype=np.intp)
    count = len(nodes)
    return Chromosomes(np.tile(np.arange(problem.jobs), (count, 1)), nodes, np.tile(stores, (count, 1)).astype(np.intp))


def polisher(problem: Problem, seconds: float, rng: np.random.Generator) -> Polish:
    """A local search for one chromosome, at most ``seconds`` per call, never returning a worse one."""
    if problem.objects == 0:
        return lambda best, score: _search_nodes(problem, best, seconds, rng)
    return lambda best, score: _descend_population(problem, best, score, seconds)


def _search_nodes(
    problem: Problem, best: Chromosomes, seconds: float, rng: np.random.Generator
) -> tuple[Chromosomes, float]:
    found = improve(problem.compute, problem.start_times(), best.nodes[0], seconds, rng)
    out = Chromosomes(best.order, found.assign[None, :], best.stores)
    return out, float(evaluate(problem, out)[0])


def _descend_population(problem: Problem, best: Chromosomes, score: float, seconds: float) -> tuple[Chromosomes, float]:
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        plan = timeline(problem, best.order, best.nodes, best.stores)
        ends = np.zeros(problem.nodes)
        np.maximum.at(ends, plan.nodes[0], plan.end[0])
        mine = np.flatnonzero(plan.nodes[0] == ends.argmax())
        job, node = np.nonzero(problem.eligible[mine])
        keep = node != ends.argmax()
        job, node = mine[job[keep]], node[keep]
        if not job.size:
            break
        nodes = np.repeat(best.nodes, len(job), axis=0)
        nodes[np.arange(len(job)), job] = node
        trial = Chromosomes(np.repeat(best.order, len(job), axis=0), nodes, np.repeat(best.stores, len(job), axis=0))
        scores = evaluate(problem, trial)
        pick = int(scores.argmin())
        if not scores[pick] < score:
            break
        best, score = trial.take(np.arange(pick, pick + 1)), float(scores[pick])
    return best, score

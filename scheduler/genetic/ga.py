"""Phan, Ranganathan & Sion 2005's genetic algorithm (section 4, Fig 2): operators on whole populations, selection with elitism.

Every operator works on all children at once (rows of NumPy arrays), so a generation
is a few array operations plus one call of the vectorised evaluation. Randomness comes
only from the ``numpy.random.Generator`` passed in: same seed, same schedule.

- queue order: two-point order crossover (section 4.4, after Davis): a random
  contiguous slice of the first parent stays in place, the other positions take the
  second parent's remaining jobs in its order; the child is always a permutation.
- job -> node and object -> store: two-point crossover: the slice from the first
  parent, the rest from the second, position by position (every gene stays a value
  one parent had there, so a job never lands on a node it cannot use).
- optional reversal mutation (section 4.4): reverse the jobs between two random
  queue positions. The paper switched it off; so does the default ``mutation=0``.
- selection: the best ``parents`` of the ``children`` breed the next generation, and
  the best schedule found so far always survives (elitism, section 4.1).

Beyond the paper (the strong GA of ``memetic.py``): ``evolve`` may start from given
schedules (``initial``, the rest of the first population random) and polish the best
parent of every generation by local search (``polish``), and ``GaSettings.budget`` stops
it after that many seconds.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from scheduler.genetic.model import Chromosomes, Problem, evaluate


@dataclass(frozen=True)
class GaSettings:
    """The GA's knobs; the defaults are the paper's (10 parents, 50 children, 100 generations, no mutation)."""

    parents: int = 10
    children: int = 50
    generations: int = 100
    mutation: float = 0.0
    # False: the paper's "GA rep-none", objects never replicated
    replicate: bool = True
    # seconds: no new generation starts after it (None: all of them)
    budget: float | None = None

    def __post_init__(self) -> None:
        if not 1 <= self.parents <= self.children:
            raise ValueError(f"need 1 <= parents <= children, got parents={self.parents}, children={self.children}")
        if self.generations < 0:
            raise ValueError(f"generations must be >= 0, got {self.generations}")
        if not 0.0 <= self.mutation <= 1.0:
            raise ValueError(f"mutation is a probability per child, got {self.mutation}")


class Evolution(NamedTuple):
    """A GA run's outcome: the best schedule (one row), its makespan, and the best makespan after each generation."""

    best: Chromosomes
    makespan: float
    # generations + 1 entries: after the initial population, then after each generation
    history: np.ndarray


def random_nodes(eligible: np.ndarray, count: int, rng: np.random.Generator) -> np.ndarray:
    """``count`` rows of a node per job, uniform over the nodes each job can run on."""
    keys = rng.random((count, *eligible.shape))
    return np.where(eligible, keys, -1.0).argmax(axis=2)


def random_stores(problem: Problem, count: int, rng: np.random.Generator, replicate: bool) -> np.ndarray:
    """``count`` rows of a local store per object, uniform (all "not replicated" without replication or stores)."""
    if not replicate or problem.stores == 0:
        return np.full((count, problem.objects), problem.no_replica, dtype=np.intp)
    return rng.integers(0, problem.stores, size=(count, problem.objects))


def random_population(problem: Problem, count: int, rng: np.random.Generator, replicate: bool = True) -> Chromosomes:
    """The GA's initial population: random queue orders, node and store assignments."""
    order = rng.random((count, problem.jobs)).argsort(axis=1)
    return Chromosomes(order, random_nodes(problem.eligible, count, rng), random_stores(problem, count, rng, replicate))


def _segments(rows: int, length: int, rng: np.random.Generator) -> np.ndarray:
    """(rows x length) bool: a random contiguous slice [a, b) per row (possibly empty or whole)."""
    cuts = np.sort(rng.integers(0, length + 1, size=(rows, 2)), axis=1)
    at = np.arange(length)
    return (at >= cuts[:, :1]) & (at < cuts[:, 1:])


def order_crossover(first: np.ndarray, second: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Two-point order crossover of permutations, row by row: slice of ``first`` kept, the rest in ``second``'s order."""
    count, length = first.shape
    keep = _segments(count, length, rng)
    rows = np.arange(count)[:, None]
    taken = np.zeros((count, length), dtype=bool)
    taken[rows, first] = keep  # the jobs the slice holds
    rest = second[rows, np.argsort(taken[rows, second], axis=1, kind="stable")]  # second's other jobs first, in order
    # positions outside the slice first, left to right
    gaps = np.argsort(keep, axis=1, kind="stable")
    child = np.empty_like(first)
    # the tail lands on the slice's positions and is overwritten next
    child[rows, gaps] = rest
    return np.where(keep, first, child)


def two_point_crossover(first: np.ndarray, second: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Two-point crossover of assignment strings, row by row: a random slice from ``first``, the rest from ``second``."""
    rows, length = first.shape
    return np.where(_segments(rows, length, rng), first, second)


def reversal_mutation(order: np.ndarray, rate: float, rng: np.random.Generator) -> np.ndarray:
    """Each row, with probability ``rate``, has the jobs between two random positions (inclusive) reversed."""
    count, length = order.shape
    ends = np.sort(rng.integers(0, length, size=(count, 2)), axis=1)
    # rows left alone: the empty reversal [0, 0]
    ends[rng.random(count) >= rate] = 0
    at = np.arange(length)
    inside = (at >= ends[:, :1]) & (at <= ends[:, 1:])
    source = np.where(inside, ends[:, :1] + ends[:, 1:] - at, at)
    return order[np.arange(count)[:, None], source]


def breed(parents: Chromosomes, count: int, rng: np.random.Generator, mutation: float = 0.0) -> Chromosomes:
    """``count`` children, each of two distinct random parents (when there are two), string by string."""
    n = len(parents.order)
    a = rng.integers(0, n, size=count)
    b = (a + rng.integers(1, n, size=count)) % n if n > 1 else a
    order = order_crossover(parents.order[a], parents.order[b], rng)
    if mutation > 0:
        order = reversal_mutation(order, mutation, rng)
    return Chromosomes(
        order,
        two_point_crossover(parents.nodes[a], parents.nodes[b], rng),
        two_point_crossover(parents.stores[a], parents.stores[b], rng),
    )


def select(
    children: Chromosomes, scores: np.ndarray, count: int, elite: Chromosomes | None, elite_score: float
) -> tuple[Chromosomes, np.ndarray]:
    """The best ``count`` children (ascending makespan); the elite replaces the last of them if no child beats it."""
    best = np.argsort(scores, kind="stable")[:count]
    parents, kept = children.take(best), scores[best]
    if elite is not None and elite_score < kept[0]:
        parents = Chromosomes(*(np.concatenate([e, p[:-1]]) for e, p in zip(elite, parents, strict=True)))
        kept = np.concatenate([[elite_score], kept[:-1]])
    return parents, kept


def evolve(
    problem: Problem,
    settings: GaSettings,
    rng: np.random.Generator,
    initial: Chromosomes | None = None,
    polish: Callable[[Chromosomes, float], tuple[Chromosomes, float]] | None = None,
) -> Evolution:
    """Fig 2: a random population, then ``generations`` rounds of breed, evaluate, select; returns the best schedule.

    ``initial`` rows take the first places of the first population; ``polish(best, makespan)``
    returns a schedule at least as good as the best parent of a generation, which replaces it.
    """
    deadline = np.inf if settings.budget is None else time.perf_counter() + settings.budget
    children = random_population(problem, settings.children, rng, settings.replicate)
    if initial is not None:
        rows = min(len(initial.order), settings.children)
        children = Chromosomes(*(np.concatenate([i[:rows], c[rows:]]) for i, c in zip(initial, children, strict=True)))
    parents, scores = select(children, evaluate(problem, children), settings.parents, None, np.inf)
    history = [scores[0]]
    for _ in range(settings.generations):
        if polish is not None:
            parents, scores = _polished(parents, scores, polish)
        if time.perf_counter() >= deadline:
            break
        children = breed(parents, settings.children, rng, settings.mutation)
        parents, scores = select(
            children, evaluate(problem, children), settings.parents, parents.take(np.arange(1)), scores[0]
        )
        history.append(scores[0])
    if polish is not None:
        parents, scores = _polished(parents, scores, polish)
        history[-1] = scores[0]
    return Evolution(parents.take(np.arange(1)), float(scores[0]), np.array(history))


def _polished(
    parents: Chromosomes, scores: np.ndarray, polish: Callable[[Chromosomes, float], tuple[Chromosomes, float]]
) -> tuple[Chromosomes, np.ndarray]:
    """The parents with the best one replaced by its polished version when that is shorter."""
    better, score = polish(parents.take(np.arange(1)), float(scores[0]))
    if score >= scores[0]:
        return parents, scores
    return Chromosomes(*(np.concatenate([b, p[1:]]) for b, p in zip(better, parents, strict=True))), np.r_[
        score, scores[1:]
    ]

"""Phan, Ranganathan & Sion 2005: the genetic co-scheduler and its greedy baselines as scheduler policies.

- ``ga``: sections 4.1-4.5 (Figs 2 and 6): each pass evolves a schedule for the
  snapshot window of pending jobs (queue order x job -> machine slot) and follows it.
- ``ga-strong``: the same GA over batch-search's window (1,000 jobs, not the paper's 100) with its
  first population seeded by batch-search's plan and the list heuristics' schedules, and the best
  parent polished by local search each generation (``scheduler/genetic/memetic.py``,
  :func:`evolve_strong`): never worse than the plan it is seeded with.
- ``jobs-ll-rep-none``, ``jobs-ll-rep-rand``, ``jobs-rand-rep-none``,
  ``jobs-rand-rep-rand``: section 5.2's greedy FIFO baselines over the same window.

They need no workload capability: the service's state has no data stores, so the
window has no data objects and object replication is a no-op (the rep-none and
rep-rand variants of a baseline then behave alike). Compute times come from the
oracle. See ``scheduler/genetic/window.py`` for how a pass maps onto the paper's model.
"""

from __future__ import annotations

import numpy as np

from scheduler.genetic.baselines import greedy
from scheduler.genetic.ga import Evolution, GaSettings, evolve
from scheduler.genetic.memetic import polisher, seeded
from scheduler.genetic.model import Problem, timeline
from scheduler.genetic.window import check_size, snapshot
from scheduler.orders import Order
from scheduler.policies.batch import HEURISTICS, STARTS, heuristic_plans, plan
from scheduler.policy import Context, Policy

# jobs x nodes up to which every list heuristic seeds the strong GA (above: the cheap STARTS)
SEED_ALL_UP_TO = 5000


def evolve_strong(
    problem: Problem, settings: GaSettings, rng: np.random.Generator, polish: float = 0.02, search: float = 0.0
) -> Evolution:
    """The strong GA: Phan, Ranganathan & Sion 2005's, seeded with batch-search's plan and the list heuristics' schedules, polished ``polish`` seconds a generation.

    Batch-search's plan (:func:`scheduler.policies.batch.plan`, ``search`` seconds) is in the first
    population, so with elitism the result is never worse than it. Every heuristic of ``HEURISTICS``
    seeds a window of at most ``SEED_ALL_UP_TO`` jobs x nodes; a larger one gets the cheap ``STARTS``.
    """
    ready = problem.start_times() - problem.clock
    names = tuple(HEURISTICS) if problem.jobs * problem.nodes <= SEED_ALL_UP_TO else STARTS
    searched = plan(problem.compute, ready, search, rng=rng).assign
    initial = seeded(problem, [searched, *heuristic_plans(problem.compute, ready, names).values()], rng)
    return evolve(problem, settings, rng, initial, polisher(problem, polish, rng))


class GeneticCoScheduling(Policy):
    """Phan, Ranganathan & Sion 2005, sections 4.1-4.5, Figs 2 and 6: a GA over {queue order, job -> slot} for the window each pass.

    The paper's defaults: 10 parents, 50 children per generation, 100 generations, no
    mutation (``mutation`` > 0 turns on reversal mutation with that probability per
    child); ``window`` pending jobs per pass; ``seed`` makes a simulation repeatable.
    ``strong=True`` (the ``ga-strong`` policy, registered with batch-search's window of 1,000) seeds
    the first population with batch-search's plan of ``budget`` seconds and the list heuristics'
    schedules, polishes the best parent ``polish`` seconds a generation (:func:`evolve_strong`), and
    starts no generation after another ``budget`` seconds: a pass costs about twice ``budget``.
    """

    def __init__(
        self,
        window: int = 100,
        parents: int = 10,
        children: int = 50,
        generations: int = 100,
        mutation: float = 0.0,
        seed: int = 0,
        strong: bool = False,
        polish: float = 0.002,
        budget: float = 0.1,
    ) -> None:
        if budget < 0:
            raise ValueError(f"budget is seconds >= 0, got {budget}")
        self.window = check_size(window)
        self.settings = GaSettings(parents, children, generations, mutation, budget=budget if strong else None)
        self.rng = np.random.default_rng(seed)
        self.strong, self.polish, self.budget = strong, polish, budget
        self.name = "ga-strong" if strong else "ga"

    def schedule(self, ctx: Context) -> list[Order]:
        """Evolve a schedule for the window; START what begins now, DEFER the rest."""
        window = snapshot(ctx.state, ctx.now, self.window)
        if window is None:
            return []
        if self.strong:
            best = evolve_strong(window.problem, self.settings, self.rng, self.polish, self.budget).best
        else:
            best = evolve(window.problem, self.settings, self.rng).best
        return window.orders(timeline(window.problem, *best))


class GreedyCoScheduling(Policy):
    """Phan, Ranganathan & Sion 2005, section 5.2: FIFO over the window to the slot free soonest (``ll``) or a random one (``rand``)."""

    def __init__(self, jobs: str, rep: str, window: int = 100, seed: int = 0) -> None:
        self.jobs, self.rep = jobs, rep
        self.window = check_size(window)
        self.rng = np.random.default_rng(seed)
        self.name = f"jobs-{jobs}-rep-{rep}"

    def schedule(self, ctx: Context) -> list[Order]:
        """Place the window's jobs in queue order; START what begins now, DEFER the rest."""
        window = snapshot(ctx.state, ctx.now, self.window)
        if window is None:
            return []
        return window.orders(greedy(window.problem, self.jobs, self.rep, self.rng))

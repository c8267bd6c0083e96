"""Seed 004 (Phan, Ranganathan & Sion): the genetic co-scheduler and its greedy baselines as scheduler policies.

- ``ga``: sections 4.1-4.5 (Figs 2 and 6): each pass evolves a schedule for the
  snapshot window of pending jobs (queue order x job -> machine slot) and follows it.
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
from scheduler.genetic.ga import Settings, evolve
from scheduler.genetic.model import timeline
from scheduler.genetic.window import check_size, snapshot
from scheduler.orders import Order
from scheduler.policy import Context


class GeneticCoScheduling:
    """Seed 004, sections 4.1-4.5, Figs 2 and 6: a GA over {queue order, job -> slot} for the window each pass.

    The paper's defaults: 10 parents, 50 children per generation, 100 generations, no
    mutation (``mutation`` > 0 turns on reversal mutation with that probability per
    child); ``window`` pending jobs per pass; ``seed`` makes a simulation repeatable.
    """

    def __init__(self, window: int = 100, parents: int = 10, children: int = 50, generations: int = 100, mutation: float = 0.0, seed: int = 0) -> None:
        self.window = check_size(window)
        self.settings = Settings(parents, children, generations, mutation)
        self.rng = np.random.default_rng(seed)
        self.name = "ga"

    def schedule(self, ctx: Context) -> list[Order]:
        """Evolve a schedule for the window; START what begins now, DEFER the rest."""
        window = snapshot(ctx.state, ctx.now, self.window)
        if window is None:
            return []
        best = evolve(window.problem, self.settings, self.rng).best
        return window.orders(timeline(window.problem, *best))


class GreedyCoScheduling:
    """Seed 004, section 5.2: FIFO over the window to the slot free soonest (``ll``) or a random one (``rand``)."""

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



"""Planning a window of pending jobs close to optimal: the best of the list heuristics, improved by local search.

``plan`` takes a bare batch (``times``: jobs x machines, INF where a job cannot run;
``ready``: when each machine is free): it maps it with a few list heuristics
(``scheduler/policies/mapping.py``), runs the local search of
``scheduler/batch/search.py`` from each for a share of the budget, continues the best by
iterated local search for the rest, and, for a small batch, hands the result to the
MILP of ``scheduler/batch/exact.py`` as an upper bound under its own time limit.

``batch-search`` is the policy: each pass plans the first ``window`` ready pending
one-slot jobs on every free or busy slot (Phan, Ranganathan & Sion 2005's window, ``scheduler/genetic/window.py``),
each slot's jobs shortest first; the first job of a free slot STARTs, the rest are
DEFERred to their machine.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from functools import partial
from typing import NamedTuple

import numpy as np

from scheduler.batch import exact
from scheduler.batch.search import descend, improve, loads
from scheduler.genetic.model import timeline
from scheduler.genetic.window import check_size, snapshot
from scheduler.orders import Order
from scheduler.policies.mapping import HEFT, MCT, BatchMapping, KPercentBest, MaxMin, MinMin, Sufferage, map_times
from scheduler.policy import Context, Policy

HEURISTICS: dict[str, Callable[[], BatchMapping]] = {
    "heft": HEFT,
    "heft-median": partial(HEFT, "median"),
    "kpb": partial(KPercentBest, 10.0),
    "mct": MCT,
    "minmin": MinMin,
    "maxmin": MaxMin,
    "sufferage": Sufferage,
}
# cheap at 1,000 x 50 (O(jobs x machines)); the others cost up to ~1 s there
STARTS = ("heft", "kpb")


class BatchPlan(NamedTuple):
    """A batch's assignment (machine per job), its makespan, and what produced it."""

    assign: np.ndarray
    makespan: float
    source: str


def heuristic_plans(
    times: np.ndarray, ready: np.ndarray, names: Sequence[str] = tuple(HEURISTICS)
) -> dict[str, np.ndarray]:
    """The assignment each named list heuristic gives the batch."""
    return {name: map_times(HEURISTICS[name](), times, ready) for name in names}


def plan(
    times: np.ndarray,
    ready: np.ndarray,
    budget: float = 1.0,
    exact_seconds: float = 0.0,
    exact_cells: int = 2000,
    starts: Sequence[str] = STARTS,
    rng: np.random.Generator | None = None,
) -> BatchPlan:
    """Plan the batch within about ``budget`` seconds (plus ``exact_seconds`` for the MILP when jobs x machines <= ``exact_cells``).

    A quarter of the budget goes to descents from each start, the rest to iterated local
    search from the best; the result is never worse than the best start.
    """
    times = np.asarray(times, dtype=float)
    ready = np.asarray(ready, dtype=float)
    began = time.perf_counter()
    best = BatchPlan(np.zeros(0, dtype=np.intp), float("inf"), "")
    share = 0.25 * budget / max(1, len(starts))
    for name, assign in heuristic_plans(times, ready, starts).items():
        load = loads(times, ready, assign)
        descend(times, assign, load, time.perf_counter() + share)
        if load.max() < best.makespan:
            best = BatchPlan(assign, float(load.max()), name)
    found = improve(times, ready, best.assign, max(0.0, budget - (time.perf_counter() - began)), rng)
    if found.makespan < best.makespan:
        best = BatchPlan(found.assign, found.makespan, f"{best.source} + search")
    if exact_seconds > 0 and times.size <= exact_cells:
        solved = exact.solve(times, ready, exact_seconds, best.makespan)
        if solved.assign is not None and solved.makespan < best.makespan:
            best = BatchPlan(solved.assign, solved.makespan, "milp")
    return best


class BatchSearch(Policy):
    """Each pass: plan the window's jobs with :func:`plan` and follow the plan (START now, DEFER the rest).

    ``window``: pending jobs per pass; ``budget``: seconds of search per pass; ``exact``:
    seconds for the MILP on windows of at most ``exact_cells`` jobs x slots (0: never);
    ``seed`` makes the search repeatable.
    """

    def __init__(
        self, window: int = 1000, budget: float = 0.1, exact: float = 0.0, exact_cells: int = 2000, seed: int = 0
    ) -> None:
        if budget < 0 or exact < 0:
            raise ValueError(f"budget and exact are seconds >= 0, got {budget} and {exact}")
        self.window = check_size(window)
        self.budget, self.exact, self.exact_cells = budget, exact, exact_cells
        self.rng = np.random.default_rng(seed)
        self.name = "batch-search"

    def schedule(self, ctx: Context) -> list[Order]:
        """Plan the window; START what begins now, DEFER the rest."""
        window = snapshot(ctx.state, ctx.now, self.window)
        if window is None:
            return []
        problem = window.problem
        times = problem.compute
        found = plan(times, problem.start_times() - ctx.now, self.budget, self.exact, self.exact_cells, rng=self.rng)
        # each slot's jobs shortest first
        order = np.lexsort((times[np.arange(len(found.assign)), found.assign], found.assign))
        stores = np.zeros((1, 0), dtype=np.intp)
        return window.orders(timeline(problem, order[None, :], found.assign[None, :], stores))

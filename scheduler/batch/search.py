"""Iterated local search for a batch (R||Cmax): moves and swaps off the critical machine, kicks, a time budget.

The descent looks only at the machine that ends last (the critical one, ``c`` with
load ``L``): it moves one of c's jobs to another machine, or swaps one with a job of
another machine, taking the change whose two new loads have the smallest maximum, as
long as that maximum is below L. Every other machine keeps its load, so a step never
raises the makespan; it lowers it, or leaves one machine fewer at it. All moves and
swaps of a step are evaluated at once as NumPy arrays (k x machines for moves, k x jobs
for swaps, k the critical machine's jobs).

At a local optimum, a kick moves a few random jobs of the critical machine to random
machines they can use, and the descent runs again; the result is kept if it is no
worse than the best so far (accepting equal ones lets the search drift over plateaus),
else the search returns to the best. The loop stops at the time budget or after
``patience`` kicks without gain.
"""

from __future__ import annotations

import time
from typing import NamedTuple

import numpy as np

INF = float("inf")
EPS = 1e-9  # relative: a step must lower the critical load by more than rounding


class Result(NamedTuple):
    """The best assignment found, its makespan, and how the search went."""

    assign: np.ndarray
    makespan: float
    steps: int
    kicks: int


def loads(times: np.ndarray, ready: np.ndarray, assign: np.ndarray) -> np.ndarray:
    """Each machine's ready time plus the time of the jobs ``assign`` gives it."""
    return ready + np.bincount(assign, weights=times[np.arange(len(assign)), assign], minlength=len(ready))


def descend(times: np.ndarray, assign: np.ndarray, load: np.ndarray, limit: int = 1_000_000) -> int:
    """Improve ``assign`` and ``load`` in place by steepest moves and swaps off the critical machine; returns the steps taken."""
    jobs = np.arange(len(assign))
    steps = 0
    while steps < limit:
        c = int(load.argmax())
        top = load[c]
        mine = np.flatnonzero(assign == c)
        if not mine.size:
            return steps  # the machine is busy with earlier work alone: nothing to move
        here = times[mine, c]
        left = top - here  # c's load once each of its jobs leaves
        moved = np.maximum(load[None, :] + times[mine], left[:, None])  # (k x machines)
        moved[:, c] = INF
        move = int(moved.argmin())
        best = moved.flat[move]
        others = assign != c
        theirs = jobs[others]
        at = assign[others]
        back = times[theirs, c]  # each other job's time on c
        swapped = np.maximum(left[:, None] + back[None, :], (load[at] - times[theirs, at])[None, :] + times[np.ix_(mine, at)])
        swap = int(swapped.argmin()) if swapped.size else -1
        if swap >= 0 and swapped.flat[swap] < best:
            if not swapped.flat[swap] < top * (1.0 - EPS):
                return steps
            a, b = divmod(swap, len(theirs))
            job, other = mine[a], theirs[b]
            target = at[b]
            load[c] += times[other, c] - times[job, c]
            load[target] += times[job, target] - times[other, target]
            assign[job], assign[other] = target, c
        else:
            if not best < top * (1.0 - EPS):
                return steps
            a, target = divmod(move, times.shape[1])
            job = mine[a]
            load[c] -= times[job, c]
            load[target] += times[job, target]
            assign[job] = target
        steps += 1
    return steps


def improve(
    times: np.ndarray,
    ready: np.ndarray,
    start: np.ndarray,
    budget: float = 1.0,
    rng: np.random.Generator | None = None,
    patience: int = 2000,
    kick: int = 3,
) -> Result:
    """Iterated local search from ``start`` for up to ``budget`` seconds (wall); never returns worse than ``start``.

    ``kick``: at most this many jobs moved at random per kick (1..kick, uniformly).
    """
    times = np.asarray(times, dtype=float)
    ready = np.asarray(ready, dtype=float)
    rng = rng or np.random.default_rng(0)
    deadline = time.perf_counter() + budget
    eligible = np.isfinite(times)
    assign = np.array(start, dtype=np.intp)
    load = loads(times, ready, assign)
    steps = descend(times, assign, load)
    best, best_load, best_span = assign.copy(), load.copy(), float(load.max())
    kicks = stale = 0
    while stale < patience and time.perf_counter() < deadline:
        kicks += 1
        stale += 1
        c = int(load.argmax())
        mine = np.flatnonzero(assign == c)
        if not mine.size:
            break
        for job in rng.choice(mine, size=min(len(mine), int(rng.integers(1, kick + 1))), replace=False):
            options = np.flatnonzero(eligible[job])
            target = int(options[rng.integers(len(options))])
            load[assign[job]] -= times[job, assign[job]]
            load[target] += times[job, target]
            assign[job] = target
        steps += descend(times, assign, load)
        span = float(load.max())
        if span < best_span * (1.0 - EPS):
            stale = 0
        if span <= best_span:
            best, best_load, best_span = assign.copy(), load.copy(), span
        else:
            assign, load = best.copy(), best_load.copy()
    return Result(best, best_span, steps, kicks)

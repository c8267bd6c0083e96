"""Iterated local search for a batch (R||Cmax): moves, swaps and chains off the critical machine, kicks, a time budget.

The descent (:func:`descend`) works on the critical machine, the one of the batch's
machines that ends last: it moves one of its jobs elsewhere, swaps one with another
machine's job, or moves one to a machine that in turn hands a job on, taking the change
whose new loads have the smallest maximum as long as that is below the critical load.
When nothing helps there, it evens out the other machines (moves, then swaps of badly
placed jobs, lowering the sum of squared loads) without letting any reach the makespan.
No step raises the makespan. Every neighbourhood of a step is evaluated at once as
NumPy arrays (k x machines, k x jobs or jobs x machines, k the critical machine's jobs).

At a local optimum, a kick moves one to ``kick`` random jobs of the critical machine to
random machines they can use, and the descent runs again; the result is kept if it is
no worse than the best so far (accepting equal ones lets the search drift over
plateaus), else the search returns to the best. The loop stops at the time budget, after
``patience`` kicks without gain, or when the makespan is the longest task's fastest end
(optimal then).
"""

from __future__ import annotations

import time
from typing import NamedTuple

import numpy as np

INF = float("inf")
# relative: a step must lower the critical load by more than rounding
EPS = 1e-9


class Result(NamedTuple):
    """The best assignment found, its makespan, and how the search went."""

    assign: np.ndarray
    makespan: float
    steps: int
    kicks: int


def loads(times: np.ndarray, ready: np.ndarray, assign: np.ndarray) -> np.ndarray:
    """Each machine's ready time plus the time of the jobs ``assign`` gives it."""
    return ready + np.bincount(assign, weights=times[np.arange(len(assign)), assign], minlength=len(ready))


def descend(times: np.ndarray, assign: np.ndarray, load: np.ndarray, deadline: float = INF) -> int:
    """Improve ``assign`` and ``load`` in place until no step helps; returns the steps taken.

    Each step tries, in order, the cheapest neighbourhood that still helps: a move of a
    job off the critical machine, a swap with a job of another machine, an ejection chain
    of two moves (:func:`_critical_step`), and, when none lowers the critical load, the
    move of any job that most lowers the sum of squared loads while keeping every load
    below the makespan (:func:`_balancing_step`), or else the same for a swap of two jobs
    placed far from their fastest machine (:func:`_exchange_step`): both free room a later
    step needs. (makespan, machines at it, sum of squared loads) falls at every step, so
    the descent ends; the makespan never rises. Stops at ``deadline`` (``time.perf_counter()``) too.
    """
    columns = np.ascontiguousarray(times.T)
    fastest = times.min(axis=1)
    current = times[np.arange(len(assign)), assign]
    steps = 0
    while (steps % 8 or time.perf_counter() < deadline) and (
        _critical_step(times, columns, assign, load, current)
        or _balancing_step(times, assign, load, current)
        or _exchange_step(times, columns, assign, load, current, fastest)
    ):
        steps += 1
    return steps


def _critical(assign: np.ndarray, load: np.ndarray) -> tuple[int, float]:
    """The machine with jobs that ends last, and its load: what the search lowers.

    A machine without jobs of the batch but busy until later (a window's slot running an
    earlier job) is a wall no step can move, so it is left out; steps still refuse to
    load any machine up to the critical load, that one included.
    """
    used = np.bincount(assign, minlength=len(load)) > 0
    c = int(np.where(used, load, -INF).argmax())
    return c, float(load[c])


def _apply(times: np.ndarray, assign: np.ndarray, load: np.ndarray, current: np.ndarray, job: int, target: int) -> None:
    load[assign[job]] -= current[job]
    current[job] = times[job, target]
    load[target] += current[job]
    assign[job] = target


def _critical_step(
    times: np.ndarray, columns: np.ndarray, assign: np.ndarray, load: np.ndarray, current: np.ndarray
) -> bool:
    """Lower the critical machine's load, keeping every other load below it; False if no neighbour does.

    The critical machine c has load ``top`` and k jobs. Tried in order, each the best of
    its kind (least new maximum of the loads it changes):

    - move: one of c's jobs to another machine (k x machines);
    - swap: one of c's jobs with a job of another machine short enough on c to fit in
      what the first leaves (k x those jobs);
    - chain: one of c's jobs to machine i while i's longest job that fits elsewhere
      below ``top`` (not on c) moves there (k x machines, after one jobs x machines pass).
    """
    c, top = _critical(assign, load)
    limit = top * (1.0 - EPS)
    mine = np.flatnonzero(assign == c)
    rows = times[mine]
    left = top - rows[:, c]  # c's load once each of its jobs leaves
    moved = np.maximum(load[None, :] + rows, left[:, None])  # (k x machines)
    moved[:, c] = INF
    move = int(moved.argmin())
    if moved.flat[move] < limit:
        a, target = divmod(move, times.shape[1])
        _apply(times, assign, load, current, mine[a], target)
        return True
    back = columns[c]  # every job's time on c
    partners = np.flatnonzero((back < rows[:, c].max()) & (assign != c))
    if partners.size:
        at = assign[partners]
        swapped = np.maximum(
            left[:, None] + back[partners][None, :], (load[at] - current[partners])[None, :] + rows[:, at]
        )
        swap = int(swapped.argmin())
        if swapped.flat[swap] < limit:
            a, b = divmod(swap, len(partners))
            job, other = mine[a], partners[b]
            target = assign[other]
            _apply(times, assign, load, current, other, c)
            _apply(times, assign, load, current, job, target)
            return True
    return _chain(times, assign, load, current, c, mine, rows, left, limit)


def _chain(
    times: np.ndarray,
    assign: np.ndarray,
    load: np.ndarray,
    current: np.ndarray,
    c: int,
    mine: np.ndarray,
    rows: np.ndarray,
    left: np.ndarray,
    limit: float,
) -> bool:
    """The ejection chain of :func:`_critical_step`: job a of c -> machine i, and i's longest relocatable job -> elsewhere."""
    jobs, machines = times.shape
    elsewhere = load[None, :] + times
    elsewhere[:, c] = INF
    elsewhere[np.arange(jobs), assign] = INF
    dest = elsewhere.argmin(axis=1)
    movable = np.flatnonzero((elsewhere[np.arange(jobs), dest] < limit) & (assign != c))
    if not movable.size:
        return False
    ranked = movable[np.lexsort((current[movable], assign[movable]))]  # by machine, longest last
    last = np.r_[assign[ranked][1:] != assign[ranked][:-1], True]
    ejected = np.full(machines, -1)
    ejected[assign[ranked[last]]] = ranked[last]
    # what each machine's longest relocatable job frees
    freed = np.where(ejected >= 0, current[np.maximum(ejected, 0)], -INF)
    chained = np.maximum(left[:, None], load[None, :] + rows - freed[None, :])
    chained[:, c] = INF
    pick = int(chained.argmin())
    if not chained.flat[pick] < limit:
        return False
    a, target = divmod(pick, machines)
    other = int(ejected[target])
    _apply(times, assign, load, current, other, int(dest[other]))
    _apply(times, assign, load, current, mine[a], target)
    return True


def _balancing_step(times: np.ndarray, assign: np.ndarray, load: np.ndarray, current: np.ndarray) -> bool:
    """The move of any job that most lowers the sum of squared loads and keeps its new machine below the makespan."""
    _, top = _critical(assign, load)
    source = load[assign]
    change = times * (2.0 * load[None, :] + times) - (current * (2.0 * source - current))[:, None]
    # would reach the makespan (also: the job's own machine)
    change[(load[None, :] + times) >= top * (1.0 - EPS)] = INF
    pick = int(change.argmin())
    if not change.flat[pick] < -EPS * top * top:
        return False
    job, target = divmod(pick, times.shape[1])
    _apply(times, assign, load, current, job, target)
    return True


def _exchange_step(
    times: np.ndarray,
    columns: np.ndarray,
    assign: np.ndarray,
    load: np.ndarray,
    current: np.ndarray,
    fastest: np.ndarray,
    candidates: int = 64,
) -> bool:
    """The swap that most lowers the sum of squared loads, keeping both loads below the makespan.

    Tried for the ``candidates`` jobs furthest (as a ratio) from their fastest machine
    against every job on another machine: where balancing moves cannot help (every load
    near the makespan), swapping two badly placed jobs shortens both machines.
    """
    _, top = _critical(assign, load)
    limit = top * (1.0 - EPS)
    slow = current / fastest
    picked = np.argpartition(-slow, min(candidates, len(slow)) - 1)[:candidates]
    picked = picked[slow[picked] > 1.0 + EPS]
    if not picked.size:
        return False
    # s: each candidate's machine; the partner b sits on assign[b]
    home = assign[picked]
    # s after a leaves and b arrives (k x jobs)
    new_home = (load[home] - current[picked])[:, None] + columns[home]
    # b's machine after b leaves and a arrives
    new_away = (load[assign] - current)[None, :] + times[picked][:, assign]
    change = new_home**2 - load[home][:, None] ** 2 + new_away**2 - load[assign][None, :] ** 2
    change[(new_home >= limit) | (new_away >= limit) | (home[:, None] == assign[None, :])] = INF
    pick = int(change.argmin())
    if not change.flat[pick] < -EPS * top * top:
        return False
    a, b = divmod(pick, len(assign))
    job, other = picked[a], b
    target = assign[other]
    source = assign[job]
    _apply(times, assign, load, current, other, source)
    _apply(times, assign, load, current, job, target)
    return True


def improve(
    times: np.ndarray,
    ready: np.ndarray,
    start: np.ndarray,
    budget: float = 1.0,
    rng: np.random.Generator | None = None,
    patience: int = 500,
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
    steps = descend(times, assign, load, deadline)
    best, best_load, best_span = assign.copy(), load.copy(), _critical(assign, load)[1]
    # the longest task alone: nothing ends sooner
    floor = float((ready[None, :] + times).min(axis=1).max())
    kicks = stale = 0
    while stale < patience and best_span > floor * (1.0 + EPS) and time.perf_counter() < deadline:
        kicks += 1
        stale += 1
        c, _ = _critical(assign, load)
        mine = np.flatnonzero(assign == c)
        for job in rng.choice(mine, size=min(len(mine), int(rng.integers(1, kick + 1))), replace=False):
            options = np.flatnonzero(eligible[job])
            target = int(options[rng.integers(len(options))])
            load[assign[job]] -= times[job, assign[job]]
            load[target] += times[job, target]
            assign[job] = target
        steps += descend(times, assign, load, deadline)
        span = _critical(assign, load)[1]
        if span < best_span * (1.0 - EPS):
            stale = 0
        if span <= best_span:
            best, best_load, best_span = assign.copy(), load.copy(), span
        else:
            assign, load = best.copy(), best_load.copy()
    return Result(best, float(loads(times, ready, best).max()), steps, kicks)

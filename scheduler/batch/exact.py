"""A batch solved exactly as a MILP by HiGHS (scipy.optimize.milp) under a time limit: for small windows.

min T subject to: each job on exactly one machine it can run on (binary x[j, i]) and
every machine's ready time plus load within T. An upper bound (a known schedule's
makespan) caps T so the solver prunes from the start. Within the time limit HiGHS
either proves the optimum or returns its best schedule with the bound it has proven
(``mip_dual_bound``), which also measures how loose the LP bound is on small batches.
"""

from __future__ import annotations

import time
from typing import NamedTuple

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, milp

from scheduler.batch.relaxations import assignment_rows
from scheduler.batch.search import loads

INF = float("inf")


class Exact(NamedTuple):
    """The solver's answer: its best assignment (None if it found none), that makespan, its proven bound, optimality, time."""

    assign: np.ndarray | None
    makespan: float
    bound: float
    optimal: bool
    seconds: float


def solve(times: np.ndarray, ready: np.ndarray, time_limit: float = 1.0, upper: float = INF) -> Exact:
    """Solve the batch (``times``: jobs x machines, INF where a job cannot run) within ``time_limit`` seconds."""
    times = np.asarray(times, dtype=float)
    ready = np.asarray(ready, dtype=float)
    jobs, machines = times.shape
    (j, i), one_each, load = assignment_rows(times, np.isfinite(times), np.ones(machines))
    pairs = len(j)
    cost = np.zeros(pairs + 1)
    cost[-1] = 1.0
    cap = upper * (1.0 + 1e-9) if np.isfinite(upper) else INF
    began = time.perf_counter()
    result = milp(
        cost,
        constraints=[LinearConstraint(one_each, 1.0, 1.0), LinearConstraint(load, -INF, -ready)],
        integrality=np.r_[np.ones(pairs), 0.0],
        bounds=Bounds(np.zeros(pairs + 1), np.r_[np.ones(pairs), cap]),
        options={"time_limit": time_limit, "disp": False},
    )
    seconds = time.perf_counter() - began
    bound = float(getattr(result, "mip_dual_bound", np.nan) or np.nan)
    if result.x is None:
        return Exact(None, INF, bound, False, seconds)
    chosen = result.x[:pairs] > 0.5
    assign = np.full(jobs, -1, dtype=np.intp)
    assign[j[chosen]] = i[chosen]
    return Exact(assign, float(loads(times, ready, assign).max()), bound, result.status == 0, seconds)

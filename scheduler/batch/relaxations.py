"""Lower bounds on the makespan of independent jobs on unrelated machines (R||Cmax), from their time matrix.

Two standard relaxations: the LP relaxation with the Lenstra-Shmoys-Tardos restriction that a
job may only use a machine on which it alone fits within T (:func:`lp_bound`), and, on related
machines, the optimum of the preemptive problem Q|pmtn|Cmax (:func:`preemptive_related_bound`).
The batch planners use the model's rows (``exact``); ``simulator/bounds.py`` bounds whole workloads with them.
"""

from __future__ import annotations

import numpy as np
from scipy import sparse
from scipy.optimize import linprog

INF = float("inf")
# relative, HiGHS's default tolerance: an LP optimum (not a breakpoint) is shaded down by it to stay a bound
SLACK = 1e-7


def lp_bound(
    times: np.ndarray,
    counts: np.ndarray | None = None,
    ready: np.ndarray | None = None,
    sizes: np.ndarray | None = None,
) -> float:
    """The LP relaxation of R||Cmax with the Lenstra-Shmoys-Tardos restriction: no schedule ends before it.

    ``times[j, c]``: job j's seconds on a machine of column c (INF where it cannot run);
    column c holds ``counts[c]`` identical machines (or slots), free from ``ready[c]``;
    job j holds ``sizes[j]`` of them while it runs. For a makespan T, each column's
    slot-seconds of work must fit in ``counts[c] * (T - ready[c])`` and job j may only
    use a column where ``ready[c] + times[j, c] <= T``. T* is the least T for which the
    fractional assignment exists (Lenstra, Shmoys & Tardos 1990, Math. Programming 46).

    The allowed set only changes at the values ``ready[c] + times[j, c]`` ("steps"), and
    below the unrestricted LP's optimum none can hold, so T* is found among the steps
    above it (and the one just below): a galloping then binary search, one LP per probe.
    Large batches usually need two or three probes.
    """
    times = np.asarray(times, dtype=float)
    jobs, columns = times.shape
    counts = np.ones(columns) if counts is None else np.asarray(counts, dtype=float)
    ready = np.zeros(columns) if ready is None else np.asarray(ready, dtype=float)
    sizes = np.ones(jobs) if sizes is None else np.asarray(sizes, dtype=float)
    finish = ready[None, :] + times  # when job j would end alone on column c
    earliest = finish.min(axis=1)
    if not np.isfinite(earliest).all():
        raise ValueError("every job needs a column it can run on")
    work = sizes[:, None] * times

    def least(threshold: float) -> float:
        return _relaxed_makespan(work, counts, ready, np.isfinite(finish) & (finish <= threshold))

    # no restriction: at most every restricted optimum
    free = least(INF)
    steps = np.unique(finish[np.isfinite(finish) & (finish >= float(earliest.max()))])
    # steps[first - 1] < free: its LP cannot fit within it
    first = int(np.searchsorted(steps, free, side="left"))
    if first == len(steps):
        return free * (1.0 - SLACK)
    low, high, before = first, first, least(float(steps[first - 1])) if first > 0 else INF
    gap = 1
    while (value := least(float(steps[high]))) > steps[high]:  # gallop up to a step whose LP fits
        if high == len(steps) - 1:
            return value * (1.0 - SLACK)
        low, before = high + 1, value
        high = min(high + gap, len(steps) - 1)
        gap *= 2
    # the first fitting step lies in (low - 1, high]
    while low < high:
        mid = (low + high) // 2
        value = least(float(steps[mid]))
        if value <= steps[mid]:
            high = mid
        else:
            low, before = mid + 1, value
    return min(float(steps[low]), before * (1.0 - SLACK))


def _relaxed_makespan(work: np.ndarray, counts: np.ndarray, ready: np.ndarray, allowed: np.ndarray) -> float:
    """min T: every job spread over its allowed columns, each column's work within ``counts * (T - ready)`` (HiGHS)."""
    pairs, one_each, load = assignment_rows(work, allowed, counts)
    cost = np.zeros(len(pairs[0]) + 1)
    cost[-1] = 1.0
    result = linprog(
        cost, A_ub=load, b_ub=-counts * ready, A_eq=one_each, b_eq=np.ones(len(work)), bounds=(0, None), method="highs"
    )
    if result.status == 2:
        return INF  # some job has no allowed column
    if result.status != 0:
        raise RuntimeError(f"the LP bound failed: {result.message}")
    return float(result.fun)


def assignment_rows(
    work: np.ndarray, allowed: np.ndarray, counts: np.ndarray
) -> tuple[tuple[np.ndarray, np.ndarray], sparse.csr_array, sparse.csr_array]:
    """The rows of the assignment model over variables x[j, c] (``allowed`` pairs) then T.

    Returns the pairs (job and column indices, in variable order), the rows saying each
    job is placed once (sum over c of x[j, c] = 1) and the load rows (sum over j of
    work[j, c] x[j, c] - counts[c] T <= -counts[c] ready[c], right-hand side the caller's).
    """
    jobs, columns = work.shape
    j, c = np.nonzero(allowed)
    n = len(j)
    one_each = sparse.csr_array((np.ones(n), (j, np.arange(n))), shape=(jobs, n + 1))
    rows = np.concatenate([c, np.arange(columns)])
    cols = np.concatenate([np.arange(n), np.full(columns, n)])
    load = sparse.csr_array((np.concatenate([work[j, c], -counts]), (rows, cols)), shape=(columns, n + 1))
    return (j, c), one_each, load


def preemptive_related_bound(work: np.ndarray, speeds: np.ndarray) -> float:
    """The optimum of Q|pmtn|Cmax: no schedule of jobs ``work`` on machines ``speeds`` (all free at 0) ends before it.

    The k longest jobs need the k fastest machines' whole capacity at best, for every k
    below the machine count, and all jobs need all machines' (Horowitz & Sahni 1976, JACM 23).
    """
    work = np.sort(np.asarray(work, dtype=float))[::-1]
    speeds = np.sort(np.asarray(speeds, dtype=float))[::-1]
    k = min(len(work), len(speeds) - 1)
    heads = np.cumsum(work[:k]) / np.cumsum(speeds[:k]) if k > 0 else np.zeros(0)
    return float(max(heads.max(initial=0.0), work.sum() / speeds.sum()))


def related_speeds(times: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """(work per job, speed per column) if ``times`` is related (``times[j, c] = work[j] / speed[c]``, all finite), else None."""
    if not np.isfinite(times).all() or (times <= 0).any():
        return None
    speed = times[0, 0] / times[0]
    work = times[:, 0]
    return (work, speed) if np.allclose(times, work[:, None] / speed[None, :], rtol=1e-9, atol=0.0) else None


def batch_lower_bound(times: np.ndarray, ready: np.ndarray | None = None) -> float:
    """A lower bound on the makespan (latest end) of independent one-machine jobs ``times`` (jobs x machines).

    The largest of: each job's earliest end alone, the LP bound (:func:`lp_bound`) and, when
    the machines are related and free together, the preemptive bound.
    """
    times = np.asarray(times, dtype=float)
    ready = np.zeros(times.shape[1]) if ready is None else np.asarray(ready, dtype=float)
    bound = lp_bound(times, ready=ready)
    related = related_speeds(times)
    if related is not None and np.all(ready == ready[0]):
        bound = max(bound, ready[0] + preemptive_related_bound(*related))
    return float(max(bound, (ready[None, :] + times).min(axis=1).max()))

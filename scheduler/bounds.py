"""Lower bounds on a workload's makespan, to judge how far a policy's schedule is from optimal.

Three standard relaxations, the largest of which is the bound:

- every job at least once on its fastest usable machine, from its submit time;
- the LP relaxation of R||Cmax (jobs split fractionally over machines, every machine's load
  within T) with the Lenstra-Shmoys-Tardos restriction that a job may only use a machine
  on which it alone fits within T (:func:`lp_bound`);
- on related machines (one speed per machine, one amount of work per job), the optimum of
  the preemptive problem Q|pmtn|Cmax (:func:`preemptive_related_bound`).

Dependencies, outages, queueing and arrivals only lengthen real schedules, so every bound
stays valid for them, just weaker.
"""

from __future__ import annotations

import numpy as np
from scipy import sparse
from scipy.optimize import linprog

from scheduler.workload import JobSpec, Workload

INF = float("inf")
LP_PAIRS = 50_000  # (job, platform) pairs above which a workload's bound skips the LP (about 4 s of CPU per LP there)
SLACK = 1e-7  # relative, HiGHS's default tolerance: an LP optimum (not a breakpoint) is shaded down by it to stay a bound


def platform_times(spec: JobSpec, workload: Workload, slots: dict[str, int]) -> dict[str, float]:
    """The job's shortest possible run on each platform that can run it (platform -> true seconds).

    A platform counts if the job may use it (``true_times`` and ``platforms``) and one of
    its machines (``slots``: platform -> most slots on one machine) holds ``size`` slots.
    The time is cut by the platform's ``warm_gain`` when the job reads data (a warm cache
    may be there) and by ``fail_at`` for a job that fails, as the simulator does.
    """
    times = {}
    for platform, seconds in spec.true_times.items():
        if spec.platforms is not None and platform not in spec.platforms:
            continue
        if slots.get(platform, 0) < spec.size:
            continue
        if spec.data is not None:
            seconds *= 1.0 - workload.warm_gain.get((spec.algorithm, platform), 0.0)
        times[platform] = seconds * spec.fail_at if spec.fails else seconds
    if not times:
        raise ValueError(f"job {spec.id!r}: no machine of the cluster can run it (size {spec.size})")
    return times


def best_time(spec: JobSpec, workload: Workload, slots: dict[str, int]) -> float:
    """The job's shortest possible run: its least time over :func:`platform_times`."""
    return min(platform_times(spec, workload, slots).values())


def lp_bound(times: np.ndarray, counts: np.ndarray | None = None, ready: np.ndarray | None = None, sizes: np.ndarray | None = None) -> float:
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

    free = least(INF)  # no restriction: at most every restricted optimum
    steps = np.unique(finish[np.isfinite(finish) & (finish >= float(earliest.max()))])
    first = int(np.searchsorted(steps, free, side="left"))  # steps[first - 1] < free: its LP cannot fit within it
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
    while low < high:  # the first fitting step lies in (low - 1, high]
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
    result = linprog(cost, A_ub=load, b_ub=-counts * ready, A_eq=one_each, b_eq=np.ones(len(work)), bounds=(0, None), method="highs")
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


def completion_lower_bound(workload: Workload) -> float:
    """A time before which the workload's last job cannot end (see :func:`makespan_lower_bound`)."""
    if not workload.jobs:
        raise ValueError(f"workload {workload.name!r} has no jobs")
    biggest: dict[str, int] = {}
    slots: dict[str, int] = {}
    machines = [(m.platform, m.slots) for m in workload.cluster.machines]
    known = {m.id for m in workload.cluster.machines}
    for event in workload.machine_events:  # machines that join later add capacity; count it to stay a bound
        if event.kind == "gained" and event.platform is not None and event.machine not in known:
            known.add(event.machine)
            machines.append((event.platform, event.slots))
    for platform, n in machines:
        biggest[platform] = max(biggest.get(platform, 0), n)
        slots[platform] = slots.get(platform, 0) + n
    t0 = min(spec.submit for spec in workload.jobs)
    platforms = sorted(slots)
    times = np.full((len(workload.jobs), len(platforms)), INF)
    latest_single = 0.0
    for j, spec in enumerate(workload.jobs):
        usable = platform_times(spec, workload, biggest)
        times[j] = [usable.get(p, INF) for p in platforms]
        latest_single = max(latest_single, spec.submit + min(usable.values()))
    counts = np.array([slots[p] for p in platforms], dtype=float)
    sizes = np.array([spec.size for spec in workload.jobs], dtype=float)
    bound = float(sizes @ times.min(axis=1)) / counts.sum()  # all work, each job at its fastest, over every slot
    if np.isfinite(times).sum() <= LP_PAIRS:
        bound = max(bound, lp_bound(times, counts, sizes=sizes))
    related = related_speeds(times)
    if related is not None and (sizes == 1).all():
        work, speed = related
        bound = max(bound, preemptive_related_bound(work, np.repeat(speed, counts.astype(int))))
    return max(latest_single, t0 + bound, t0 + link_seconds(workload))


def link_seconds(workload: Workload) -> float:
    """Seconds the home link needs to carry every input no data server holds yet (0 without sites).

    Seed 003's tasks read their inputs at their site's data server; an input no server holds
    must cross the shared home link at least once, and the link carries one byte stream at a time.
    """
    if workload.grid is None:
        return 0.0
    held = {name for files in workload.grid.stored.values() for name in files}
    missing = {name: size for spec in workload.jobs for name, size in spec.inputs if name not in held}
    return sum(missing.values()) / workload.grid.bandwidth


def makespan_lower_bound(workload: Workload) -> float:
    """A lower bound on ``Metrics.makespan`` (last end minus first submit) of any schedule of ``workload``.

    With job j's shortest true runs on each platform (:func:`platform_times`), ``t0`` the
    earliest submit, and the slots of all machines (the cluster's plus any that join later),
    the last end is at least the largest of

    (a) max_j (submit_j + its fastest run): no job ends before it was submitted and run once,
    (b) t0 + the LP bound over platforms (:func:`lp_bound`: a platform's slots form one column,
        a job of size s holds s of them), or, for workloads of more than ``LP_PAIRS``
        (job, platform) pairs, the weaker total work at its fastest spread over every slot,
    (c) t0 + the preemptive bound when the platforms are related and every job takes one slot,
    (d) t0 + the home link's time to carry every input no data server holds (workloads with sites,
        :func:`link_seconds`).

    The bound returned is that end time minus ``t0``, so it compares with
    ``Metrics.makespan`` directly (it equals the end-time bound when all jobs arrive at 0).
    """
    return completion_lower_bound(workload) - min(spec.submit for spec in workload.jobs)

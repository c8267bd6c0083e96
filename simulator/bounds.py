"""Lower bounds on a workload's makespan, to judge how far a policy's schedule is from optimal.

Three standard relaxations, the largest of which is the bound:

- every job at least once on its fastest usable machine, from its submit time;
- the LP relaxation of R||Cmax (jobs split fractionally over machines, every machine's load
  within T) with the Lenstra-Shmoys-Tardos restriction that a job may only use a machine
  on which it alone fits within T (``lp_bound``);
- on related machines (one speed per machine, one amount of work per job), the optimum of
  the preemptive problem Q|pmtn|Cmax (``preemptive_related_bound``).

Both relaxations live in ``scheduler/batch/relaxations.py``, which the batch planners share.

Dependencies, outages, queueing and arrivals only lengthen real schedules, so every bound
stays valid for them, just weaker.
"""

from __future__ import annotations

import numpy as np

from scheduler.batch.relaxations import INF, lp_bound, preemptive_related_bound, related_speeds
from simulator.workload import JobSpec, Workload

# (job, platform) pairs above which a workload's bound skips the LP (about 4 s of CPU per LP there)
LP_PAIRS = 50_000


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


def completion_lower_bound(workload: Workload) -> float:
    """A time before which the workload's last job cannot end (see :func:`makespan_lower_bound`)."""
    if not workload.jobs:
        raise ValueError(f"workload {workload.name!r} has no jobs")
    biggest: dict[str, int] = {}
    slots: dict[str, int] = {}
    machines = [(m.platform, m.slots) for m in workload.cluster.machines]
    known = {m.id for m in workload.cluster.machines}
    # machines that join later add capacity; count it to stay a bound
    for event in workload.machine_events:
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
    # all work, each job at its fastest, over every slot
    bound = float(sizes @ times.min(axis=1)) / counts.sum()
    if np.isfinite(times).sum() <= LP_PAIRS:
        bound = max(bound, lp_bound(times, counts, sizes=sizes))
    related = related_speeds(times)
    if related is not None and (sizes == 1).all():
        work, speed = related
        bound = max(bound, preemptive_related_bound(work, np.repeat(speed, counts.astype(int))))
    return max(latest_single, t0 + bound, t0 + link_seconds(workload))


def link_seconds(workload: Workload) -> float:
    """Seconds the home link needs to carry every input no data server holds yet (0 without sites).

    Santos-Neto et al. 2004's tasks read their inputs at their site's data server; an input no server holds
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
    (b) t0 + the LP bound over platforms (``lp_bound``: a platform's slots form one column,
        a job of size s holds s of them), or, for workloads of more than ``LP_PAIRS``
        (job, platform) pairs, the weaker total work at its fastest spread over every slot,
    (c) t0 + the preemptive bound when the platforms are related and every job takes one slot,
    (d) t0 + the home link's time to carry every input no data server holds (workloads with sites,
        :func:`link_seconds`).

    The bound returned is that end time minus ``t0``, so it compares with
    ``Metrics.makespan`` directly (it equals the end-time bound when all jobs arrive at 0).
    """
    return completion_lower_bound(workload) - min(spec.submit for spec in workload.jobs)

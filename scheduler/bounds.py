"""Lower bounds on a workload's makespan, to judge how far a policy's schedule is from optimal.

The bound relaxes the problem to independent, perfectly divisible work: no policy,
with any oracle, can finish a workload faster. Dependencies, outages and queueing
only lengthen real schedules, so the bound stays valid for them, just weaker.
"""

from __future__ import annotations

from scheduler.workload import JobSpec, Workload


def best_time(spec: JobSpec, workload: Workload, slots: dict[str, int]) -> float:
    """The job's shortest possible run: its least true seconds over the platforms that can run it.

    A platform counts if the job may use it (``true_times`` and ``platforms``) and one of
    its machines (``slots``: platform -> most slots on one machine) holds ``size`` slots.
    The time is cut by the platform's ``warm_gain`` when the job reads data (a warm cache
    may be there) and by ``fail_at`` for a job that fails, as the simulator does.
    """
    times = []
    for platform, seconds in spec.true_times.items():
        if spec.platforms is not None and platform not in spec.platforms:
            continue
        if slots.get(platform, 0) < spec.size:
            continue
        if spec.data is not None:
            seconds *= 1.0 - workload.warm_gain.get((spec.algorithm, platform), 0.0)
        times.append(seconds * spec.fail_at if spec.fails else seconds)
    if not times:
        raise ValueError(f"job {spec.id!r}: no machine of the cluster can run it (size {spec.size})")
    return min(times)


def completion_lower_bound(workload: Workload) -> float:
    """A time before which the workload's last job cannot end (see :func:`makespan_lower_bound`)."""
    if not workload.jobs:
        raise ValueError(f"workload {workload.name!r} has no jobs")
    biggest: dict[str, int] = {}
    total_slots = 0
    machines = [(m.platform, m.slots) for m in workload.cluster.machines]
    known = {m.id for m in workload.cluster.machines}
    for event in workload.machine_events:  # machines that join later add capacity; count it to stay a bound
        if event.kind == "gained" and event.platform is not None and event.machine not in known:
            known.add(event.machine)
            machines.append((event.platform, event.slots))
    for platform, n in machines:
        biggest[platform] = max(biggest.get(platform, 0), n)
        total_slots += n
    t0 = min(spec.submit for spec in workload.jobs)
    latest_single = 0.0
    work = 0.0
    for spec in workload.jobs:
        best = best_time(spec, workload, biggest)
        latest_single = max(latest_single, spec.submit + best)
        work += spec.size * best
    return max(latest_single, t0 + work / total_slots, t0 + link_seconds(workload))


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

    With ``best_j`` job j's shortest true run over the platforms that can run it
    (:func:`best_time`), ``size_j`` its slots, ``t0`` the earliest submit and ``S`` the
    slots of all machines (the cluster's plus any that join later), the last end is at
    least the larger of

    (a) max_j (submit_j + best_j): no job ends before it was submitted and run once, and
    (b) t0 + sum_j size_j * best_j / S: the slot-seconds of all work spread over every slot from t0,
    (c) t0 + the home link's time to carry every input no data server holds (workloads with sites,
        :func:`link_seconds`).

    The bound returned is that end time minus ``t0``, so it compares with
    ``Metrics.makespan`` directly (it equals the end-time bound when all jobs arrive at 0).
    """
    return completion_lower_bound(workload) - min(spec.submit for spec in workload.jobs)

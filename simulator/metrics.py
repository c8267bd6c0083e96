"""Schedule quality from a simulation record: makespan, flowtime, completion split, tardiness, utilisation, energy;
for batch logs the community's average bounded slowdown, the estimates' underestimates and the predicted starts' error."""

from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass

from simulator.simulate import SimResult


@dataclass(frozen=True)
class Metrics:
    """Seconds unless named otherwise; means are over jobs that finished (done or failed)."""

    jobs: int
    done: int
    failed: int
    dropped: int
    unfinished: int
    makespan: float
    flowtime: float
    mean_completion: float
    mean_waiting: float
    mean_running: float
    mean_slowdown: float
    tardiness: float
    deadline_misses: int
    utilisation: float
    energy_kwh: float
    wasted_seconds: float
    interrupted: int
    avebsld: float = 0.0
    max_waiting: float = 0.0
    underestimated: float = 0.0
    over_request: int = 0
    predicted_starts: int = 0
    start_error_median: float = 0.0
    start_within_10min: float = 0.0
    overcommits: int = 0

    def as_dict(self) -> dict[str, float | int]:
        return asdict(self)


def compute(result: SimResult) -> Metrics:
    """Metrics of one run.

    Completion = end - submit; running = the last run's length (end - its start);
    waiting = completion - running (queueing plus any work lost to cancellations).
    Flowtime is the sum of completions (Brandstätter-Müller et al. 2011 after Pinedo). Utilisation is the busy
    share of each machine's slots over its online time, from the first arrival to the last end;
    mean slowdown is bounded (completion over max(running, 10 s)), as usual for cluster logs.
    Energy is each machine's platform power over the time it ran something, scaled
    by the share of its slots in use; wasted seconds are cancelled, lost or killed (memory, time) runs and
    ``interrupted`` counts runs cancelled or paused (preemptions, duplicates, moves).

    ``avebsld`` is the batch community's average bounded slowdown, max(1, completion / max(running, 10 s));
    ``underestimated`` the share of finished jobs told an estimate below their run; ``over_request`` the jobs
    that ran past their requested time (a real resource manager would have killed them: the simulator never
    kills, so it is the log's own count whatever the policy). Predicted starts (the plan's start for a job
    right after its submission) are judged on the ``predicted_starts`` jobs that waited: the median absolute
    error against the real start and the share within 10 minutes. ``overcommits`` counts the starts that put a
    node's true memory above its size (the simulator's count).
    """
    ended = [(j, j.end) for j in result.jobs if j.status in ("done", "failed") and j.end is not None]
    finished = [j for j, _ in ended]
    completions = [end - j.submit for j, end in ended]
    running = [end - j.start if j.start is not None else 0.0 for j, end in ended]
    slowdown = [c / max(r, 10.0) for c, r in zip(completions, running)]
    t0 = min((j.submit for j in result.jobs), default=0.0)
    t1 = max([j.end for j in result.jobs if j.end is not None] + [s.end for s in result.segments], default=t0)
    span = t1 - t0
    busy = sum((s.end - s.start) * s.share for s in result.segments)
    online = 0.0
    for machine in result.slots:
        down = sum(max(0.0, min(b, t1) - max(a, t0)) for a, b in result.offline.get(machine, []))
        online += max(span - down, 0.0)
    joules = sum((s.end - s.start) * s.share * result.power.get(s.platform, 0.0) for s in result.segments)
    with_deadline = [(j, j.deadline) for j in result.jobs if j.deadline is not None]
    late = [max(0.0, (j.end if j.status == "done" and j.end is not None else t1) - due) for j, due in with_deadline]
    misses = sum(1 for (j, _), lateness in zip(with_deadline, late) if lateness > 0 or j.status != "done")
    n = len(finished)
    waits = [c - r for c, r in zip(completions, running)]
    told = [(j.estimate, end - j.start) for j, end in ended if j.estimate is not None and j.start is not None]
    errors = [
        abs(j.predicted_start - j.start)
        for j in result.jobs
        if j.predicted_start is not None and j.start is not None and j.start > j.submit
    ]
    return Metrics(
        jobs=len(result.jobs),
        done=sum(j.status == "done" for j in result.jobs),
        failed=sum(j.status == "failed" for j in result.jobs),
        dropped=sum(j.status in ("dropped", "cancelled") for j in result.jobs),
        unfinished=sum(j.status in ("pending", "running") for j in result.jobs),
        makespan=span,
        flowtime=sum(completions),
        mean_completion=sum(completions) / n if n else 0.0,
        mean_waiting=(sum(completions) - sum(running)) / n if n else 0.0,
        mean_running=sum(running) / n if n else 0.0,
        mean_slowdown=sum(slowdown) / n if n else 0.0,
        tardiness=sum(late, 0.0),
        deadline_misses=misses,
        utilisation=busy / online if online else 0.0,
        energy_kwh=joules / 3.6e6,
        wasted_seconds=sum(
            s.end - s.start for s in result.segments if s.outcome in ("cancelled", "lost", "oom", "timeout")
        ),
        interrupted=sum(1 for s in result.segments if s.outcome in ("cancelled", "paused")),
        avebsld=sum(max(1.0, s) for s in slowdown) / n if n else 0.0,
        max_waiting=max(waits, default=0.0),
        underestimated=sum(e < r for e, r in told) / len(told) if told else 0.0,
        over_request=sum(1 for j, r in zip(finished, running) if j.requested is not None and r > j.requested),
        predicted_starts=len(errors),
        start_error_median=statistics.median(errors) if errors else 0.0,
        start_within_10min=sum(e <= 600.0 for e in errors) / len(errors) if errors else 0.0,
        overcommits=result.overcommits,
    )

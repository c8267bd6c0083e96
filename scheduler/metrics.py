"""Schedule quality from a simulation record: makespan, flowtime, completion split, tardiness, utilisation, energy."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from scheduler.simulate import SimResult


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

    def as_dict(self) -> dict[str, float | int]:
        return asdict(self)


def compute(result: SimResult) -> Metrics:
    """Metrics of one run.

    Completion = end - submit; running = the last run's length (end - its start);
    waiting = completion - running (queueing plus any work lost to cancellations).
    Flowtime is the sum of completions (seed 001 after Pinedo). Utilisation is the busy
    share of each machine's slots over its online time, from the first arrival to the last end;
    mean slowdown is bounded (completion over max(running, 10 s)), as usual for cluster logs.
    Energy is each machine's platform power over the time it ran something, scaled
    by the share of its slots in use; wasted seconds are cancelled or lost runs and
    ``interrupted`` counts runs cancelled or paused (preemptions, duplicates, moves).
    """
    finished = [j for j in result.jobs if j.status in ("done", "failed") and j.end is not None]
    completions = [j.end - j.submit for j in finished]
    running = [j.end - j.start if j.start is not None else 0.0 for j in finished]
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
    with_deadline = [j for j in result.jobs if j.deadline is not None]
    late = [max(0.0, (j.end if j.status == "done" and j.end is not None else t1) - j.deadline) for j in with_deadline]
    misses = sum(1 for j, lateness in zip(with_deadline, late) if lateness > 0 or j.status != "done")
    n = len(finished)
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
        wasted_seconds=sum(s.end - s.start for s in result.segments if s.outcome in ("cancelled", "lost")),
        interrupted=sum(1 for s in result.segments if s.outcome in ("cancelled", "paused")),
    )

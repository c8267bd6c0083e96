"""Small builders for scheduler tests: jobs of one algorithm with known run times, machines, a scheduler."""

from __future__ import annotations

from scheduler.events import EventLoop
from scheduler.run_times import TableOracle, job_key
from scheduler.specs import make_policy
from scheduler.state import Job, Machine

ALGORITHM = "task"


def job(name: str, submit: float = 0.0, **extra) -> Job:
    return Job(id=name, algorithm=ALGORITHM, submit=submit, params={"task": name}, **extra)


def oracle(times: dict[str, dict[str, float | None]]) -> TableOracle:
    return TableOracle({job_key(ALGORITHM, {"task": name}): row for name, row in times.items()}, "test")


def scheduler(
    times: dict[str, dict[str, float | None]], machines: list[tuple[str, str]], policy: str = "edf", **kwargs
) -> EventLoop:
    """A scheduler over one-slot machines (id, platform), all online at time 0, power 100 W per platform letter."""
    s = EventLoop(make_policy(policy), oracle(times), **kwargs)
    for machine_id, platform in machines:
        s.machine_gained(Machine(machine_id, platform, power_watts=100.0), 0.0)
    return s


def kinds(orders) -> list[tuple[str, str, str]]:
    """(kind, job, machine) of each order, the migrate target in place of the machine."""
    return [(o.kind.value, o.job, o.target or o.machine) for o in orders]

"""Memory in the production scheduler (issue 31), on SQLite and PostgreSQL: a job's memory, the memory it is planned
with and a machine's node memory survive a restart; a job whose memory no node has free waits while a smaller one
backfills; a job that asked for no memory is planned with the oracle's memory limit where the pair has one."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from predictor.domain import Estimate
from predictor.oracle import JobQuery, Oracle
from predictor.store import MeasurementStore
from predictor.store.scheduler_tables import sched_events, sched_jobs, sched_machines, sched_runs
from scheduler.service import EventError, SchedulerService
from scheduler.specs import make_policy
from scheduler.state import Job, JobStatus

GIB = 2**30
SECONDS = {("blastn", "cpu-small"): 100.0, ("blastn", "gpu-a100"): 10.0, ("mafft", "cpu-small"): 5.0}
MEMORY_LIMITS = {("blastn", "cpu-small"): 1.5 * GIB + 0.5}  # the one pair with a memory champion


class MemoryOracle(Oracle):
    """Seconds per (algorithm, platform), and a memory limit where :data:`MEMORY_LIMITS` has one."""

    def answer(self, job: JobQuery) -> dict[str, Estimate]:
        return job.among(
            {
                p: Estimate(platform=p, seconds=s, memory_limit=MEMORY_LIMITS.get((a, p)))
                for (a, p), s in SECONDS.items()
                if a == job.algorithm
            }
        )


class Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


def service(store: MeasurementStore, catalog, clock: Clock) -> SchedulerService:
    return SchedulerService(store, MemoryOracle(), catalog, policy=make_policy("easy"), clock=clock)


def memory_view(s: SchedulerService) -> dict:
    state = s.state
    return {
        "jobs": {
            j.id: (j.status, j.memory, j.planned_memory, {m: r.memory for m, r in j.runs.items()})
            for j in state.jobs.values()
        },
        "machines": {m.id: (m.node_memory, m.memory_used, m.used) for m in state.machines.values()},
    }


def test_memory_survives_a_restart_and_still_limits_placement(store, catalog):
    clock = Clock()
    first = service(store, catalog, clock)
    first.machine_event("cpu-1", "gained", platform="cpu-small", slots=4, node_memory=8 * GIB)
    first.machine_event("gpu-1", "gained", platform="gpu-a100")  # no memory size
    first.submit(
        [
            Job(id="big", algorithm="mafft", submit=0, memory=5 * GIB),
            Job(id="guess", algorithm="blastn", submit=0, platforms=("cpu-small",)),
        ]
    )
    before = memory_view(first)
    assert before["jobs"]["big"] == (JobStatus.RUNNING, 5 * GIB, {}, {"cpu-1": 5 * GIB})  # above 2**32: 64-bit columns
    assert before["jobs"]["guess"] == (JobStatus.RUNNING, None, {"cpu-small": 1.5 * GIB + 1}, {"cpu-1": 1.5 * GIB + 1})
    assert before["machines"]["cpu-1"] == (8 * GIB, [6.5 * GIB + 1], 2) and before["machines"]["gpu-1"] == (None, [], 0)
    with store.engine.connect() as conn:  # stored as the columns, not only in memory
        assert conn.execute(select(sched_jobs.c.memory).where(sched_jobs.c.id == "big")).scalar_one() == 5 * GIB
        assert (
            conn.execute(select(sched_machines.c.node_memory).where(sched_machines.c.id == "cpu-1")).scalar_one()
            == 8 * GIB
        )
        assert sorted(conn.execute(select(sched_runs.c.job_id, sched_runs.c.memory)).all()) == [
            ("big", 5 * GIB),
            ("guess", 1.5 * GIB + 1),
        ]
    second = service(store, catalog, clock)
    assert memory_view(second) == before
    # after the restart the memory still counts: 1.5 GiB is free, a 2 GiB job waits though 2 slots are free
    second.submit([Job(id="after", algorithm="mafft", submit=0, memory=2 * GIB)])
    assert second.job("after").status is JobStatus.PENDING
    clock.now += 5
    second.job_event("big", "ended", machine="cpu-1")
    assert second.job("after").status is JobStatus.RUNNING
    assert second.state.machines["cpu-1"].memory_used == [3.5 * GIB + 1]


def test_a_job_no_node_has_memory_for_waits_while_a_smaller_one_backfills(store, catalog):
    clock = Clock()
    s = service(store, catalog, clock)
    s.machine_event("cpu-1", "gained", platform="cpu-small", slots=4, node_memory=8 * GIB)
    s.submit([Job(id="holder", algorithm="blastn", submit=0, memory=5 * GIB, platforms=("cpu-small",))])
    clock.now += 1
    s.submit(
        [
            Job(id="huge", algorithm="blastn", submit=0, memory=6 * GIB, platforms=("cpu-small",)),
            Job(id="small", algorithm="mafft", submit=0, memory=1 * GIB),
        ]
    )
    huge, small = s.job("huge"), s.job("small")
    assert huge.status is JobStatus.PENDING and s.state.machines["cpu-1"].free >= 2, (
        "slots are free: memory holds it back"
    )
    assert huge.planned_start == 1_100.0, "reserved for when the holder's 5 GiB come back"
    assert small.status is JobStatus.RUNNING
    restarted = service(store, catalog, clock)
    assert restarted.job("huge").status is JobStatus.PENDING
    clock.now = 1_100.0
    restarted.job_event("small", "ended", machine="cpu-1")
    restarted.job_event("holder", "ended", machine="cpu-1")
    assert restarted.job("huge").status is JobStatus.RUNNING


def test_a_job_without_memory_is_planned_with_the_oracle_s_limit_and_a_user_s_memory_is_kept(store, catalog):
    clock = Clock()
    s = service(store, catalog, clock)
    s.machine_event("cpu-1", "gained", platform="cpu-small", slots=4, node_memory=GIB)  # smaller than the 1.5 GiB limit
    s.machine_event("gpu-1", "gained", platform="gpu-a100")
    guessed, asked, unknown = s.submit(
        [
            Job(id="guessed", algorithm="blastn", submit=0, platforms=("cpu-small",)),
            Job(id="asked", algorithm="blastn", submit=0, memory=GIB // 2, platforms=("cpu-small",)),
            Job(id="unknown", algorithm="mafft", submit=0),
        ]
    )
    assert (guessed.memory, guessed.planned_memory, guessed.status) == (
        None,
        {"cpu-small": 1.5 * GIB + 1},
        JobStatus.PENDING,
    )
    assert (asked.memory, asked.planned_memory, asked.status) == (GIB // 2, {}, JobStatus.RUNNING)
    assert (unknown.memory, unknown.planned_memory, unknown.status) == (None, {}, JobStatus.RUNNING), (
        "no memory champion: None"
    )
    both = s.submit([Job(id="both", algorithm="blastn", submit=0)])[
        0
    ]  # its limit is cpu-small's; the GPU has no memory size
    assert both.planned_memory == {"cpu-small": 1.5 * GIB + 1} and both.runs.keys() == {"gpu-1"}


def test_a_known_machine_keeps_its_node_memory(store, catalog):
    s = service(store, catalog, Clock())
    s.machine_event("cpu-1", "gained", platform="cpu-small", node_memory=GIB)
    s.machine_event("cpu-1", "lost")
    s.machine_event("cpu-1", "gained")
    with pytest.raises(EventError, match="bytes of node memory, not"):
        s.machine_event("cpu-1", "gained", node_memory=2 * GIB)
    assert s.state.machines["cpu-1"].node_memory == GIB


def test_an_inbox_row_registers_a_machine_with_its_node_memory_and_a_bad_one_is_rejected(store, catalog):
    s = service(store, catalog, Clock())
    s.db.add_event("gained", machine="cpu-1", payload={"platform": "cpu-small", "node_memory": 4 * GIB})
    bad = s.db.add_event("gained", machine="cpu-2", payload={"platform": "cpu-small", "node_memory": "4G"})
    s.sync()
    assert s.state.machines["cpu-1"].node_memory == 4 * GIB and "cpu-2" not in s.state.machines
    with store.engine.connect() as conn:
        outcome = conn.execute(select(sched_events.c.outcome).where(sched_events.c.seq == bad)).scalar_one()
    assert outcome.startswith("rejected: payload.node_memory")


@pytest.mark.parametrize("policy", ["mct", "heft"])
def test_a_policy_that_does_not_plan_memory_is_refused_a_machine_with_node_memory(store, catalog, policy):
    s = SchedulerService(store, MemoryOracle(), catalog, policy=make_policy(policy), clock=Clock())
    assert not s.scheduler.policy.plans_memory
    with pytest.raises(EventError, match="does not plan memory"):
        s.machine_event("cpu-1", "gained", platform="cpu-small", slots=4, node_memory=8 * GIB)
    assert "cpu-1" not in s.state.machines
    s.machine_event("cpu-1", "gained", platform="cpu-small", slots=4)  # without a memory size it plans as before
    assert s.state.machines["cpu-1"].node_memory is None


def test_the_policies_that_plan_memory_say_so():
    assert {name for name in ("fcfs", "easy", "conservative", "edf", "mct") if make_policy(name).plans_memory} == {
        "fcfs",
        "easy",
        "conservative",
        "edf",
    }


def memory_held(s: SchedulerService, machine: str) -> int:
    """The bytes the runs on ``machine`` hold, counted from the runs themselves (not the machine's own tally)."""
    state = s.state
    return sum(state.jobs[j].runs[machine].memory * state.jobs[j].size for j in state.machines[machine].running)


def test_edf_never_overcommits_a_machines_memory_and_plans_a_waiting_job_for_when_memory_frees(store, catalog):
    """Issue 42: EDF, the default policy, plans memory. On 4 slots and 8 GiB, jobs of 5, 4, 2 and 1 GiB (100 s each):
    5, 2 and 1 start (8 GiB), the 4 GiB one is deferred to when the 5 GiB one ends though a slot is free; a job that
    asked for no memory is planned with the oracle's 1.5 GiB limit and not put on the idle one-slot machine of 1 GiB;
    a 9 GiB job is placed nowhere."""
    clock = Clock()
    s = SchedulerService(store, MemoryOracle(), catalog, policy=make_policy("edf"), clock=clock)
    s.machine_event("cpu-1", "gained", platform="cpu-small", slots=4, node_memory=8 * GIB)
    s.machine_event("cpu-2", "gained", platform="cpu-small", node_memory=GIB)  # one slot, 1 GiB
    here = ("cpu-small",)
    s.submit(
        [
            Job(id="five", algorithm="blastn", submit=0, memory=5 * GIB, platforms=here),
            Job(id="four", algorithm="blastn", submit=0, memory=4 * GIB, platforms=here),
            Job(id="two", algorithm="blastn", submit=0, memory=2 * GIB, platforms=here),
            Job(id="one", algorithm="blastn", submit=0, memory=GIB, platforms=here),
            Job(id="huge", algorithm="blastn", submit=0, memory=9 * GIB, platforms=here),
            Job(id="guessed", algorithm="blastn", submit=0, platforms=here),  # the oracle's 1.5 GiB limit
        ]
    )
    jobs = {j.id: j for j in s.jobs()}
    assert {j.id: next(iter(j.runs)) for j in jobs.values() if j.status is JobStatus.RUNNING} == {
        "five": "cpu-1",
        "two": "cpu-1",
        "one": "cpu-1",
    }
    assert memory_held(s, "cpu-1") == s.state.machines["cpu-1"].memory_used[0] == 8 * GIB, "full, never over"
    assert (jobs["four"].planned_machine, jobs["four"].planned_start) == ("cpu-1", 1_100.0), (
        "waits for the 5 GiB though a slot is free"
    )
    assert jobs["guessed"].planned_memory == {"cpu-small": 1.5 * GIB + 1} and jobs["guessed"].planned_machine == "cpu-1"
    assert not s.state.machines["cpu-2"].running, "idle, but 1 GiB holds neither 1.5 GiB job"
    assert (jobs["huge"].status, jobs["huge"].planned_machine) == (JobStatus.PENDING, None), "no machine has 9 GiB"

    clock.now = 1_100.0
    s.job_event("five", "ended", machine="cpu-1")
    assert s.job("four").status is JobStatus.RUNNING and memory_held(s, "cpu-1") == 7 * GIB
    for job_id in ("two", "one", "four", "guessed"):
        s.job_event(job_id, "ended", machine=next(iter(s.job(job_id).runs)))
        for name, m in s.state.machines.items():
            assert memory_held(s, name) == m.memory_used[0] <= m.node_memory, f"{name} after {job_id} ended"
        clock.now += 100.0
    assert s.job("huge").status is JobStatus.PENDING and s.job("guessed").status is JobStatus.DONE

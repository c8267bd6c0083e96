"""Issue 39: the embedded scheduler's backfilling plans as the site's newest planning decision chose (its order and
correction), read at start and again when a new one is recorded; through the real SchedulerService on each store."""

from __future__ import annotations

import pytest

from predictor.domain import Estimate
from predictor.oracle import JobQuery, Oracle
from predictor.store import MeasurementStore
from scheduler.planning import PlanningConfig
from scheduler.policies.backfill import EASY, Conservative
from scheduler.service import SchedulerService
from scheduler.specs import make_policy
from scheduler.state import Job, JobStatus
from tests.planning import record_planning


class AskedSeconds(Oracle):
    """The seconds each job names in its parameters, on cpu-small."""

    def answer(self, job: JobQuery) -> dict[str, Estimate]:
        return job.among({"cpu-small": Estimate(platform="cpu-small", seconds=float(job.params["seconds"]))})


class Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


def _job(name: str, seconds: float, size: int) -> Job:
    return Job(id=name, algorithm="blastn", submit=0.0, params={"seconds": seconds}, size=size)


def _backfilled(service: SchedulerService) -> str:
    """On 4 slots, a 2-slot job runs 100 s and a 4-slot head waits for it; of two 2-slot jobs that both end before the
    head's reservation, one fits now: the longer, which came first (fcfs), or the shorter (sjbf, saf)."""
    service.machine_event("m", "gained", platform="cpu-small", slots=4)
    service.submit([_job("running", 100, 2)])
    service.submit([_job("head", 50, 4), _job("long", 90, 2), _job("short", 10, 2)])
    (started,) = [j.id for j in service.jobs([JobStatus.RUNNING]) if j.id != "running"]
    return started


@pytest.mark.parametrize(
    ("recorded", "started"),
    [
        (None, "long"),  # no decision yet: the spec's own options (fcfs)
        (PlanningConfig("last-two", "point", "tsafrir", "sjbf"), "short"),  # EASY++ kept by the site
        (PlanningConfig("service", "point", "doubling", "saf"), "short"),
        (PlanningConfig("service", "point", "doubling", "fcfs"), "long"),
    ],
)
def test_a_planned_easy_backfills_as_the_newest_decision_chose(
    store: MeasurementStore, catalog, recorded: PlanningConfig | None, started: str
) -> None:
    if recorded is not None:
        record_planning(store, "site", "easy", PlanningConfig("service", "q0.75", "quantile", "saf"))  # superseded
        record_planning(store, "site", "easy", recorded)
        record_planning(store, "site", "conservative", PlanningConfig("service", "point", "quantile"))  # not easy's
    service = SchedulerService(store, AskedSeconds(), catalog, policy=make_policy("easy:planned=true"), clock=Clock())
    assert _backfilled(service) == started
    policy = service.scheduler.policy
    assert isinstance(policy, EASY)
    expected = recorded or PlanningConfig(order="fcfs")
    assert (policy.order, policy.correction) == (expected.order, expected.correction)


def test_a_new_decision_serves_within_seconds_and_an_unplanned_policy_reads_none(
    store: MeasurementStore, catalog
) -> None:
    clock = Clock()
    record_planning(store, "site", "conservative", PlanningConfig("service", "point", "doubling"))
    policy = make_policy("conservative:planned=true")
    service = SchedulerService(store, AskedSeconds(), catalog, policy=policy, clock=clock)
    assert isinstance(policy, Conservative) and policy.correction == "doubling"
    record_planning(store, "other-site", "conservative", PlanningConfig("last-two", "point", "tsafrir"))
    clock.now += 1.0
    service.sync()
    assert policy.correction == "doubling"  # read at most every few seconds
    clock.now += 5.0
    service.sync()  # the poller's pass, every second
    assert policy.correction == "tsafrir"  # the newest of the family, whichever site recorded it
    restarted = make_policy("conservative:planned=true")  # a standby taking the lease over reads it at start
    SchedulerService(store, AskedSeconds(), catalog, policy=restarted, clock=clock)
    assert isinstance(restarted, Conservative) and restarted.correction == "tsafrir"
    fixed = make_policy("easy:order=saf")  # not planned: the spec's options whatever is recorded
    record_planning(store, "site", "easy", PlanningConfig("last-two", "point", "doubling", "fcfs"))
    SchedulerService(store, AskedSeconds(), catalog, policy=fixed, clock=clock)
    assert isinstance(fixed, EASY) and (fixed.order, fixed.correction) == ("saf", "tsafrir")

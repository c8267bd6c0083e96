"""The event paths of Brandstätter-Müller et al. 2011's Figs 6-10 on the event loop itself: new jobs, machines
gained and lost, jobs ended and failed, dependencies, streaming pairs."""

from __future__ import annotations

import pytest

from scheduler.events import EventLoop, OrderError
from scheduler.orders import Order, OrderKind, cancel, defer, replicate, start
from scheduler.policy import Context, Policy
from scheduler.state import JobStatus, Machine
from tests.scheduler.kit import job, kinds, oracle, scheduler

FAST_SLOW = [("F", "fast"), ("S", "slow")]


def test_new_normal_job_waits_without_disturbing_running_ones():
    s = scheduler({"A": {"fast": 10}, "B": {"fast": 2}}, [("F", "fast")])
    assert kinds(s.submit([job("A")], 0)) == [("start", "A", "F")]
    assert s.submit([job("B", 1)], 1) == []
    b = s.state.jobs["B"]
    assert (b.status, b.planned_machine, b.planned_start) == (JobStatus.PENDING, "F", 10)


def test_high_priority_pauses_a_checkpointable_job_and_it_migrates_when_a_machine_is_free():
    times = {"W": {"r1": 3}, "V": {"r1": 10, "r2": 10}, "H": {"r2": 2}}
    s = scheduler(times, [("R1", "r1"), ("R2", "r2")], policy="edf:objective=flowtime")
    both = frozenset({"r1", "r2"})
    assert kinds(s.submit([job("W"), job("V", checkpoint=both)], 0)) == [("start", "W", "R1"), ("start", "V", "R2")]
    s.machine_gained(Machine("R3", "r1"), 0.5)
    orders = s.submit([job("H", 1, priority=1)], 1)
    assert kinds(orders) == [("migrate", "V", "R3"), ("start", "H", "R2")]
    v = s.state.jobs["V"]
    assert v.progress == pytest.approx(0.1) and set(v.runs) == {"R3"}
    assert v.runs["R3"].estimate == pytest.approx(9.0)


def test_high_priority_pause_without_a_free_machine_defers_the_victim():
    times = {"W": {"r1": 3}, "V": {"r1": 10, "r2": 10}, "H": {"r2": 2}}
    s = scheduler(times, [("R1", "r1"), ("R2", "r2")], policy="edf:objective=flowtime")
    s.submit([job("W"), job("V", checkpoint=frozenset({"r1", "r2"}))], 0)
    assert kinds(s.submit([job("H", 1, priority=1)], 1)) == [("pause", "V", "R2"), ("start", "H", "R2")]
    v = s.state.jobs["V"]
    assert v.status is JobStatus.PENDING and v.planned_machine == "R1" and v.planned_start == 3


def test_gained_fast_machine_takes_a_running_job_when_the_gain_is_significant():
    s = scheduler({"J": {"fast": 10, "slow": 100}, "K": {"fast": 10, "slow": 11}}, [("S", "slow")])
    s.submit([job("J")], 0)
    assert kinds(s.machine_gained(Machine("F", "fast"), 5)) == [("cancel", "J", "S"), ("start", "J", "F")]
    s.job_ended("J", "F", 15)
    s.submit([job("K", 15)], 15)  # K starts on F (done at 25); S stays idle (S would end at 26)
    s.job_ended("K", "F", 25)
    assert s.state.jobs["J"].ended == 15


def test_gained_machine_leaves_a_running_job_when_the_gain_is_small():
    s = scheduler({"J": {"fast": 8, "slow": 10}}, [("S", "slow")])
    s.submit([job("J")], 0)
    assert s.machine_gained(Machine("F", "fast"), 1) == []


def test_lost_machine_job_restarts_elsewhere_and_returning_healthy_cancels_the_replacement():
    s = scheduler({"J": {"fast": 10, "slow": 20}}, FAST_SLOW)
    s.submit([job("J")], 0)
    assert kinds(s.machine_lost("F", 2)) == [("start", "J", "S")]
    assert kinds(s.machine_gained(Machine("F", "fast"), 5, healthy=["J"])) == [("cancel", "J", "S")]
    j = s.state.jobs["J"]
    assert set(j.runs) == {"F"} and j.status is JobStatus.RUNNING and not j.runs["F"].orphan
    assert s.state.machines["S"].used == 0
    s.job_ended("J", "F", 10)
    assert j.status is JobStatus.DONE


def test_replacement_finishing_first_cancels_the_original_on_the_lost_machine():
    s = scheduler({"J": {"fast": 10, "slow": 20}}, FAST_SLOW)
    s.submit([job("J")], 0)
    s.machine_lost("F", 2)
    assert kinds(s.job_ended("J", "S", 22)) == [("cancel", "J", "F")]  # delivered when F is reachable again
    assert s.machine_gained(Machine("F", "fast"), 30, healthy=["J"]) == []
    assert s.state.machines["F"].used == 0 and s.state.jobs["J"].status is JobStatus.DONE


def test_lost_machine_returning_without_its_job_keeps_the_replacement():
    s = scheduler({"J": {"fast": 10, "slow": 12}}, FAST_SLOW)
    s.submit([job("J")], 0)
    s.machine_lost("F", 2)
    assert s.machine_gained(Machine("F", "fast"), 5, healthy=[]) == []
    assert set(s.state.jobs["J"].runs) == {"S"} and s.state.machines["F"].used == 0


def test_lost_machine_back_before_its_replacement_started_resumes_without_orders():
    s = scheduler({"J": {"fast": 10}, "K": {"fast": 50}}, [("F1", "fast"), ("F2", "fast")])
    s.submit([job("K"), job("J")], 0)
    (home,) = s.state.jobs["J"].runs
    assert s.machine_lost(home, 1) == []  # J's replacement waits for the other machine, busy with K
    assert s.state.jobs["J"].planned_machine is not None
    assert s.machine_gained(Machine(home, "fast"), 2, healthy=["J"]) == []
    j = s.state.jobs["J"]
    assert j.status is JobStatus.RUNNING and "J" not in s.state.pending and set(j.runs) == {home}


def test_end_close_to_estimate_follows_the_plan_without_a_pass():
    observed = []
    s = scheduler(
        {"A": {"fast": 10}, "B": {"fast": 5}},
        [("F", "fast")],
        policy="edf:objective=flowtime",
        on_observation=lambda j, r, m, w: observed.append((j.id, m.id, w)),
    )
    s.submit([job("A"), job("B")], 0)  # shortest first: B, then A planned at 5
    passes = s.passes
    assert kinds(s.job_ended("B", "F", 5.5)) == [("start", "A", "F")]
    assert s.passes == passes and observed == [("B", "F", 5.5)]


def test_end_far_from_estimate_triggers_a_pass():
    s = scheduler({"A": {"fast": 5}, "B": {"fast": 10}}, [("F", "fast")], policy="edf:objective=flowtime")
    s.submit([job("A"), job("B")], 0)
    passes = s.passes
    assert kinds(s.job_ended("A", "F", 1)) == [("start", "B", "F")]
    assert s.passes == passes + 1


def test_failure_drops_dependents_and_stops_streaming_consumers():
    notes = []
    times = {"P": {"a": 10}, "C": {"b": 10}, "D": {"a": 1}, "E": {"a": 1}}
    s = scheduler(times, [("A", "a"), ("B", "b")], on_notify=lambda j, text: notes.append((j.id, text)))
    orders = s.submit(
        [job("P"), job("C", stream_from="P"), job("D", depends_on=("P",)), job("E", depends_on=("D",))], 0
    )
    assert kinds(orders) == [("start", "P", "A"), ("start", "C", "B")]
    assert kinds(s.job_failed("P", "A", 3, "segfault")) == [("cancel", "C", "B")]
    status = {j: s.state.jobs[j].status for j in "PCDE"}
    assert status == {"P": JobStatus.FAILED, "C": JobStatus.FAILED, "D": JobStatus.DROPPED, "E": JobStatus.DROPPED}
    assert {n[0] for n in notes} == set("PCDE")
    assert s.state.jobs["P"].message == "segfault" and "P" in s.state.jobs["C"].message


def test_dependent_waits_for_its_dependency_then_starts_where_planned():
    s = scheduler({"A": {"a": 4}, "B": {"a": 2, "b": 9}}, [("M1", "a"), ("M2", "a"), ("M3", "b")])
    assert kinds(s.submit([job("A"), job("B", depends_on=("A",))], 0)) == [("start", "A", "M1")]
    b = s.state.jobs["B"]
    assert b.planned_start == 4 and b.planned_machine == "M2"
    assert kinds(s.job_ended("A", "M1", 4)) == [("start", "B", "M2")]


def test_job_submitted_after_its_dependency_failed_is_dropped():
    s = scheduler({"A": {"a": 4}, "B": {"a": 2}}, [("M", "a")])
    s.submit([job("A")], 0)
    s.job_failed("A", "M", 1)
    s.submit([job("B", 2, depends_on=("A",))], 2)
    assert s.state.jobs["B"].status is JobStatus.DROPPED


def test_job_no_platform_can_run_is_dropped():
    s = scheduler({"A": {}}, [("M", "a")])
    assert s.submit([job("A")], 0) == [] and s.state.jobs["A"].status is JobStatus.DROPPED


def test_replicas_first_to_end_wins_and_the_other_is_cancelled():
    class Replicating(Policy):
        name = "replicating"

        def schedule(self, ctx: Context) -> list[Order]:
            pending = list(ctx.state.pending)
            return [start(pending[0], "M1"), replicate(pending[0], "M2")] if pending else []

    s = EventLoop(Replicating(), oracle({"J": {"a": 5}}))
    for m in ("M1", "M2"):
        s.machine_gained(Machine(m, "a"), 0)
    assert kinds(s.submit([job("J")], 0)) == [("start", "J", "M1"), ("replicate", "J", "M2")]
    assert kinds(s.job_ended("J", "M2", 4)) == [("cancel", "J", "M1")]
    assert s.state.machines["M1"].used == 0 and s.state.jobs["J"].status is JobStatus.DONE


@pytest.mark.parametrize(
    ("orders", "message"),
    [
        ([start("J", "M1"), start("K", "M1")], "free slots"),
        ([start("J", "M1"), cancel("J", "M1")], "high-priority"),
        ([start("J", "nowhere")], "unknown or offline"),
    ],
)
def test_impossible_orders_are_refused(orders, message):
    class Rogue(Policy):
        name = "rogue"

        def schedule(self, ctx: Context) -> list[Order]:
            return orders if ctx.arrivals else []

    s = EventLoop(Rogue(), oracle({"J": {"a": 5}, "K": {"a": 5}}))
    s.machine_gained(Machine("M1", "a"), 0)
    with pytest.raises(OrderError, match=message):
        s.submit([job("J"), job("K")], 0)


def test_a_start_past_a_pooled_machines_free_memory_is_refused():
    """Issue 42: the event loop checks every start against a machine's free memory, on a pool of slots too."""

    class Rogue(Policy):
        name = "rogue"

        def schedule(self, ctx: Context) -> list[Order]:
            return [start("J", "M1"), start("K", "M1")] if ctx.arrivals else []

    s = EventLoop(Rogue(), oracle({"J": {"a": 5}, "K": {"a": 5}}))
    s.machine_gained(Machine("M1", "a", slots=2, node_memory=8), 0)
    with pytest.raises(OrderError, match="has not the memory K needs free"):
        s.submit([job("J", memory=5), job("K", memory=5)], 0)
    assert s.state.machines["M1"].memory_used == [5]


def test_power_mode_takes_the_frugal_platform_when_the_deadline_allows():
    times = {"J": {"hot": 10, "cool": 30}, "K": {"hot": 10, "cool": 30}}
    s = scheduler(times, [("H", "hot"), ("C", "cool")], policy="edf:power=true")
    s.state.machines["H"].power_watts = 500.0
    s.state.machines["C"].power_watts = 50.0
    assert kinds(s.submit([job("J", deadline=40)], 0)) == [("start", "J", "C")]
    assert kinds(s.submit([job("K", deadline=15)], 0)) == [("start", "K", "H")]


def test_orders_are_tagged_for_the_resource_manager():
    assert start("J", "M").sent and not defer("J", "M", 1.0).sent
    assert defer("J", "M", 1.0) == Order(OrderKind.DEFER, "J", "M", 1.0)


def test_failed_replacement_also_cancels_the_orphan_on_the_lost_machine():
    s = scheduler({"J": {"fast": 10, "slow": 20}}, FAST_SLOW)
    s.submit([job("J")], 0)
    s.machine_lost("F", 2)
    assert kinds(s.job_failed("J", "S", 4, "disk full")) == [("cancel", "J", "F")]
    assert s.state.jobs["J"].status is JobStatus.FAILED and s.state.machines["F"].used == 0

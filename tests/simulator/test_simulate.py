"""The simulator around the real scheduler: metrics by hand, outages, failures, Gantt charts."""

from __future__ import annotations

import pytest

from scheduler.specs import make_policy
from simulator.gantt import plot
from simulator.metrics import compute
from simulator.scenarios import parse_estimates
from simulator.simulate import simulate
from simulator.workload import Cluster, JobSpec, MachineEvent, MachineSpec, PlatformSpec, Workload
from simulator.workloads.figures import fig11, fig14

TWO = Cluster(
    {"a": PlatformSpec("a", 100.0), "b": PlatformSpec("b", 50.0)}, [MachineSpec("A", "a"), MachineSpec("B", "b")]
)


def spec(name: str, submit: float, times: dict[str, float], **extra) -> JobSpec:
    return JobSpec(name, submit, "algo", times, params={"name": name}, **extra)


def test_metrics_of_fig11_by_hand():
    w = fig11()
    m = compute(simulate(w, make_policy("fcfs"), parse_estimates("oracle").oracle(w)))
    # completions 2, 3, 3, 4, 7; runs 2, 3, 3, 2, 4; waits 0, 0, 0, 2, 3
    assert (m.makespan, m.flowtime, m.mean_completion) == (7, 19, 3.8)
    assert (m.mean_running, m.mean_waiting) == (2.8, 1.0)
    assert m.utilisation == pytest.approx(14 / 21)
    assert m.energy_kwh == pytest.approx(14 * 100 / 3.6e6)
    assert (m.done, m.failed, m.tardiness, m.deadline_misses, m.wasted_seconds) == (5, 0, 0, 0, 0)


def test_deadlines_tardiness_and_energy_per_platform():
    w = Workload("d", [spec("x", 0, {"a": 4}, deadline=3.0), spec("y", 0, {"b": 2}, deadline=5.0)], TWO)
    m = compute(simulate(w, make_policy("edf"), parse_estimates("oracle").oracle(w)))
    assert (m.tardiness, m.deadline_misses) == (1.0, 1)
    assert m.energy_kwh == pytest.approx((4 * 100 + 2 * 50) / 3.6e6)


def test_outage_with_healthy_return_cancels_the_replacement_run():
    w = Workload(
        "outage",
        [spec("j", 0, {"a": 10, "b": 30})],
        TWO,
        machine_events=[MachineEvent(2, "A", "lost"), MachineEvent(5, "A", "gained")],
    )
    result = simulate(w, make_policy("edf"), parse_estimates("oracle").oracle(w))
    assert {(s.machine, s.start, s.end, s.outcome) for s in result.segments} == {
        ("B", 2, 5, "cancelled"),
        ("A", 0, 10, "done"),
    }
    assert result.offline == {"A": [(2, 5)]}
    m = compute(result)
    assert m.done == 1 and m.wasted_seconds == 3 and m.utilisation == pytest.approx(13 / (10 + 7))


def test_outage_that_kills_jobs_runs_them_again():
    w = Workload(
        "crash",
        [spec("j", 0, {"a": 10, "b": 30})],
        TWO,
        machine_events=[MachineEvent(2, "A", "lost", healthy=False), MachineEvent(5, "A", "gained")],
    )
    result = simulate(w, make_policy("edf"), parse_estimates("oracle").oracle(w))
    outcomes = sorted((s.machine, s.start, s.end, s.outcome) for s in result.segments)
    assert outcomes == [("A", 0, 2, "lost"), ("A", 5, 15, "done"), ("B", 2, 5, "cancelled")]


def test_end_reported_late_when_the_machine_was_unreachable():
    w = Workload(
        "late",
        [spec("j", 0, {"a": 3})],
        TWO,
        machine_events=[MachineEvent(1, "A", "lost"), MachineEvent(8, "A", "gained")],
    )
    result = simulate(w, make_policy("edf"), parse_estimates("oracle").oracle(w))
    assert [(s.machine, s.end, s.outcome) for s in result.segments] == [("A", 8, "done")]


def test_new_machine_joins_mid_run():
    w = Workload(
        "join",
        [spec("j", 0, {"a": 100, "c": 10}), spec("k", 1, {"a": 5})],
        Cluster({"a": PlatformSpec("a"), "c": PlatformSpec("c")}, [MachineSpec("A", "a")]),
        machine_events=[MachineEvent(3, "C", "gained", platform="c")],
    )
    result = simulate(w, make_policy("edf"), parse_estimates("oracle").oracle(w))
    assert sorted((s.job, s.machine, s.start, s.end, s.outcome) for s in result.segments) == [
        ("j", "A", 0, 3, "cancelled"),
        ("j", "C", 3, 13, "done"),
        ("k", "A", 3, 8, "done"),
    ]


def test_failure_drops_the_dependent_job():
    w = Workload(
        "fail", [spec("p", 0, {"a": 4}, fails=True, fail_at=0.5), spec("q", 0, {"a": 1}, depends_on=("p",))], TWO
    )
    result = simulate(w, make_policy("edf"), parse_estimates("oracle").oracle(w))
    assert {j.id: j.status for j in result.jobs} == {"p": "failed", "q": "dropped"}
    assert [(s.end, s.outcome) for s in result.segments] == [(2, "failed")]


def test_checkpointed_job_resumes_with_its_true_progress():
    w = fig14()
    w.jobs[1].checkpoint = frozenset({"r1", "r2"})
    result = simulate(w, make_policy("edf"), parse_estimates("oracle").oracle(w))
    t2 = sorted((s.machine, s.start, s.end, s.outcome) for s in result.segments if s.job == "T2")
    assert t2 == [("R1", 3, 5.25, "done"), ("R2", 0, 1, "paused")]  # a quarter of T2 done on R2, 3/4 x 3 on R1


def test_gantt_chart_is_a_png(tmp_path):
    w = fig14()
    path = plot(simulate(w, make_policy("edf"), parse_estimates("oracle").oracle(w)), tmp_path / "out" / "fig14.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

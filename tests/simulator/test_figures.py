"""Brandstätter-Müller et al. 2011's Figs 11-14 replayed through the simulator: the exact schedules its text describes."""

from __future__ import annotations

import pytest

from scheduler.specs import make_policy
from simulator.metrics import compute
from simulator.scenarios import parse_estimates
from simulator.simulate import SimResult, simulate
from simulator.workloads.figures import fig11, fig12, fig13, fig14


def run(workload, policy: str, estimates: str = "oracle") -> SimResult:
    return simulate(workload, make_policy(policy), parse_estimates(estimates).oracle(workload), estimates=estimates)


def schedule(result: SimResult) -> set[tuple[str, str, float, float, str]]:
    return {(s.job, s.machine, s.start, s.end, s.outcome) for s in result.segments}


def test_fig11_fcfs_takes_seven_units():
    result = run(fig11(), "fcfs")
    assert schedule(result) == {
        ("T1", "N1", 0, 2, "done"),
        ("T2", "N2", 0, 3, "done"),
        ("T3", "N3", 0, 3, "done"),
        ("T4", "N1", 2, 4, "done"),
        ("T5", "N2", 3, 7, "done"),
    }
    assert compute(result).makespan == 7


def test_fig11_known_run_times_take_five_units():
    result = run(fig11(), "edf:objective=makespan")
    assert schedule(result) == {
        ("T5", "N1", 0, 4, "done"),
        ("T2", "N2", 0, 3, "done"),
        ("T3", "N3", 0, 3, "done"),
        ("T1", "N2", 3, 5, "done"),
        ("T4", "N3", 3, 5, "done"),
    }
    assert compute(result).makespan == 5


def test_fig11_without_estimates_edf_is_fcfs():
    assert schedule(run(fig11(), "edf:objective=makespan", "none")) == schedule(run(fig11(), "fcfs"))


def test_fig12_defers_for_the_busy_fast_platform():
    deferred = run(fig12(), "edf")
    assert schedule(deferred) == {("T1", "R1", 0, 2, "done"), ("T2", "R1", 2, 4, "done")}
    plain = run(fig12(), "edf:deferral=false")
    assert schedule(plain) == {("T1", "R1", 0, 2, "done"), ("T2", "R2", 1, 7, "done")}
    assert compute(deferred).makespan == 4 and compute(plain).makespan == 7


@pytest.mark.parametrize(
    ("policy", "expected", "makespan"),
    [
        ("fcfs", {("T1", "R1", 0, 3), ("T2", "R2", 0, 3), ("T3", "R1", 3, 5), ("T4", "R2", 3, 8)}, 8),
        ("fcfs:fastest_only=true", {("T1", "R1", 0, 3), ("T2", "R1", 3, 5), ("T3", "R1", 5, 7), ("T4", "R1", 7, 9)}, 9),
        ("edf:objective=makespan", {("T1", "R1", 0, 3), ("T2", "R2", 0, 3), ("T3", "R1", 3, 5), ("T4", "R1", 5, 7)}, 7),
    ],
)
def test_fig13_fastest_platform_only_is_worse_and_deferral_best(policy, expected, makespan):
    result = run(fig13(), policy)
    assert {(s.job, s.machine, s.start, s.end) for s in result.segments} == expected
    assert compute(result).makespan == makespan


@pytest.mark.parametrize("policy", ["edf", "edf:objective=makespan"])
def test_fig14_cancels_and_restarts_for_a_high_priority_job(policy):
    result = run(fig14(), policy)
    assert schedule(result) == {
        ("T1", "R1", 0, 3, "done"),
        ("T2", "R2", 0, 1, "cancelled"),
        ("T3", "R2", 1, 4, "done"),
        ("T2", "R1", 3, 6, "done"),
    }
    metrics = compute(result)
    assert metrics.makespan == 6 and metrics.wasted_seconds == 1 and metrics.interrupted == 1


def test_fig14_waiting_would_end_later():
    result = run(fig14(), "edf:preempt=false")
    assert schedule(result) == {("T1", "R1", 0, 3, "done"), ("T2", "R2", 0, 4, "done"), ("T3", "R2", 4, 7, "done")}
    assert compute(result).makespan == 7


def test_fig14_normal_priority_never_preempts():
    workload = fig14()
    workload.jobs[2].priority = 0
    segments = run(workload, "edf").segments
    assert len(segments) == len(workload.jobs) and all(s.outcome == "done" for s in segments)

"""Makespan lower bounds, computed by hand, and never above a simulated schedule's makespan."""

from __future__ import annotations

import pytest

from scheduler.bounds import completion_lower_bound, makespan_lower_bound
from scheduler.metrics import compute
from scheduler.simulate import simulate
from scheduler.specs import make_policy, parse_estimates
from scheduler.workload import (
    Cluster,
    JobSpec,
    MachineEvent,
    MachineSpec,
    PlatformSpec,
    Workload,
)

TWO = Cluster({"a": PlatformSpec("a"), "b": PlatformSpec("b")}, [MachineSpec("A", "a"), MachineSpec("B", "b")])


def spec(name: str, submit: float, times: dict[str, float], **extra) -> JobSpec:
    return JobSpec(name, submit, "algo", times, params={"name": name}, **extra)


def test_total_work_over_slots_dominates():
    # best times x 4 (a), y 3 (b), z 2 (a): (a) max 4; (b) (4 + 3 + 2) / 2 slots = 4.5
    w = Workload("w", [spec("x", 0, {"a": 4, "b": 8}), spec("y", 0, {"a": 6, "b": 3}), spec("z", 0, {"a": 2})], TWO)
    assert makespan_lower_bound(w) == 4.5
    assert compute(simulate(w, make_policy("edf"), parse_estimates("oracle").oracle(w))).makespan >= 4.5


def test_a_late_long_job_dominates_and_the_bound_counts_from_the_first_submit():
    # (a) max(5 + 1, 15 + 4) = 19; (b) 5 + (1 + 4) / 2 = 7.5; end bound 19, makespan bound 19 - 5 = 14
    w = Workload("w", [spec("p", 5, {"a": 1}), spec("q", 15, {"a": 4, "b": 6})], TWO)
    assert completion_lower_bound(w) == 19
    assert makespan_lower_bound(w) == 14


def test_size_excludes_small_machines_and_weights_the_work():
    # A has 4 slots, B 1: a size-2 job cannot use b (1 s there), so its best is 10 on a.
    # (a) 10; (b) 3 jobs x 2 slots x 10 s / 5 slots = 12
    cluster = Cluster({"a": PlatformSpec("a"), "b": PlatformSpec("b")}, [MachineSpec("A", "a", 4), MachineSpec("B", "b")])
    w = Workload("w", [spec(f"j{i}", 0, {"a": 10, "b": 1}, size=2) for i in range(3)], cluster)
    assert makespan_lower_bound(w) == 12


def test_allowed_platforms_failures_and_warm_caches_shorten_or_restrict_the_best_time():
    # r may only use b: 5; f fails at half its run: 4 * 0.5 = 2; d may find a warm cache (gain 0.5): 8 * 0.5 = 4
    # (a) max(5, 2, 4) = 5; (b) 11 / 2 = 5.5
    jobs = [
        spec("r", 0, {"a": 1, "b": 5}, platforms=("b",)),
        spec("f", 0, {"a": 4}, fails=True, fail_at=0.5),
        spec("d", 0, {"a": 8}, data="db"),
    ]
    w = Workload("w", jobs, TWO, warm_gain={("algo", "a"): 0.5})
    assert makespan_lower_bound(w) == 5.5


def test_machines_that_join_later_count_as_capacity():
    # a third slot (new machine C of platform a) joins: (b) 9 / 3 = 3 < (a) 4
    w = Workload(
        "w", [spec("x", 0, {"a": 4}), spec("y", 0, {"a": 3}), spec("z", 0, {"a": 2})], TWO,
        machine_events=[MachineEvent(1, "C", "gained", platform="a")],
    )  # fmt: skip
    assert makespan_lower_bound(w) == 4


def test_bad_workloads_are_clear_errors():
    with pytest.raises(ValueError, match="no machine"):
        makespan_lower_bound(Workload("w", [spec("x", 0, {"c": 1})], TWO))
    with pytest.raises(ValueError, match="no jobs"):
        makespan_lower_bound(Workload("w", [], TWO))

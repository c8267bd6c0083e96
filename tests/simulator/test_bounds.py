"""Makespan lower bounds, computed by hand, and never above a simulated schedule's makespan."""

from __future__ import annotations

import pytest

from scheduler.specs import make_policy
from simulator.bounds import completion_lower_bound, makespan_lower_bound
from simulator.metrics import compute
from simulator.scenarios import parse_estimates
from simulator.simulate import simulate
from simulator.workload import Cluster, JobSpec, MachineEvent, MachineSpec, PlatformSpec, Workload

TWO = Cluster({"a": PlatformSpec("a"), "b": PlatformSpec("b")}, [MachineSpec("A", "a"), MachineSpec("B", "b")])


def spec(name: str, submit: float, times: dict[str, float], **extra) -> JobSpec:
    return JobSpec(name, submit, "algo", times, params={"name": name}, **extra)


def test_the_lp_bound_with_its_restriction_beats_the_work_spread_over_slots():
    # best times x 4 (a), y 3 (b), z 2 (a): fastest run 4; work over slots (4 + 3 + 2) / 2 = 4.5.
    # The LP: below T = 8, x may not use b (8 s alone), so a carries x and z (6) and y goes to b (3): T = 6,
    # which is also the optimum (x, z on A; y on B)
    w = Workload("w", [spec("x", 0, {"a": 4, "b": 8}), spec("y", 0, {"a": 6, "b": 3}), spec("z", 0, {"a": 2})], TWO)
    assert makespan_lower_bound(w) == pytest.approx(6, rel=1e-6)
    assert compute(simulate(w, make_policy("edf"), parse_estimates("oracle").oracle(w))).makespan >= 4.5


def test_a_late_long_job_dominates_and_the_bound_counts_from_the_first_submit():
    # (a) max(5 + 1, 15 + 4) = 19; (b) 5 + (1 + 4) / 2 = 7.5; end bound 19, makespan bound 19 - 5 = 14
    w = Workload("w", [spec("p", 5, {"a": 1}), spec("q", 15, {"a": 4, "b": 6})], TWO)
    assert completion_lower_bound(w) == 19
    assert makespan_lower_bound(w) == 14


def test_size_excludes_small_machines_and_weights_the_work():
    # A has 4 slots, B 1: a size-2 job cannot use b (1 s there), so its best is 10 on a.
    # fastest run 10; the LP puts all 3 jobs x 2 slots x 10 s on a's 4 slots: 15 (B's slot is no use to them)
    cluster = Cluster(
        {"a": PlatformSpec("a"), "b": PlatformSpec("b")}, [MachineSpec("A", "a", 4), MachineSpec("B", "b")]
    )
    w = Workload("w", [spec(f"j{i}", 0, {"a": 10, "b": 1}, size=2) for i in range(3)], cluster)
    assert makespan_lower_bound(w) == pytest.approx(15, rel=1e-6)


def test_allowed_platforms_failures_and_warm_caches_shorten_or_restrict_the_best_time():
    # r may only use b: 5; f fails at half its run: 4 * 0.5 = 2; d may find a warm cache (gain 0.5): 8 * 0.5 = 4
    # fastest runs max(5, 2, 4) = 5; f and d can only use a: the LP's a carries 2 + 4 = 6
    jobs = [
        spec("r", 0, {"a": 1, "b": 5}, platforms=("b",)),
        spec("f", 0, {"a": 4}, fails=True, fail_at=0.5),
        spec("d", 0, {"a": 8}, data="db"),
    ]
    w = Workload("w", jobs, TWO, warm_gain={("algo", "a"): 0.5})
    assert makespan_lower_bound(w) == pytest.approx(6, rel=1e-6)


def test_machines_that_join_later_count_as_capacity():
    # a third slot (new machine C of platform a) joins: every job runs on a only, so the LP spreads 9 s over a's 2 slots
    w = Workload(
        "w",
        [spec("x", 0, {"a": 4}), spec("y", 0, {"a": 3}), spec("z", 0, {"a": 2})],
        TWO,
        machine_events=[MachineEvent(1, "C", "gained", platform="a")],
    )
    assert makespan_lower_bound(w) == pytest.approx(4.5, rel=1e-6)


def test_bad_workloads_are_clear_errors():
    with pytest.raises(ValueError, match="no machine"):
        makespan_lower_bound(Workload("w", [spec("x", 0, {"c": 1})], TWO))
    with pytest.raises(ValueError, match="no jobs"):
        makespan_lower_bound(Workload("w", [], TWO))

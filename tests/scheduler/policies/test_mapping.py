"""MCT, Min-Min, Max-Min and Sufferage through the simulator, on instances mapped by hand."""

from __future__ import annotations

import pytest

from scheduler.policies import applicable_policies
from scheduler.specs import make_policy
from simulator.bounds import makespan_lower_bound
from simulator.estimates import truth
from simulator.metrics import compute
from simulator.scenarios import parse_estimates
from simulator.simulate import SimResult, simulate
from simulator.workload import Cluster, JobSpec, MachineSpec, PlatformSpec, Workload
from tests.scheduler import kit

TWO = Cluster({"a": PlatformSpec("a"), "b": PlatformSpec("b")}, [MachineSpec("A", "a"), MachineSpec("B", "b")])


def workload(
    times: dict[str, dict[str, float]], cluster: Cluster = TWO, submit: dict[str, float] | None = None, **extra
) -> Workload:
    """Jobs in the order of ``times`` (the queue order), all at 0 unless ``submit`` says otherwise."""
    submit = submit or {}
    jobs = [JobSpec(n, submit.get(n, 0.0), "algo", t, params={"name": n}, **extra.get(n, {})) for n, t in times.items()]
    return Workload("w", jobs, cluster)


def run(w: Workload, policy: str, estimates: str = "") -> SimResult:
    """Simulate with a TableOracle of the true times (or the named estimates)."""
    return simulate(w, make_policy(policy), parse_estimates(estimates).oracle(w) if estimates else truth(w))


def segments(result: SimResult) -> list[tuple[str, str, float, float]]:
    return sorted((s.job, s.machine, s.start, s.end) for s in result.segments)


# 3 jobs x 2 machines, times (A, B): x (2, 4), y (3, 6), z (10, 11); A and B free at 0.
THREE = {"x": {"a": 2, "b": 4}, "y": {"a": 3, "b": 6}, "z": {"a": 10, "b": 11}}
# 4 jobs x 2 machines where all four heuristics differ: w (17, 8), x (25, 19), y (11, 9), z (18, 14).
FOUR = {"w": {"a": 17, "b": 8}, "x": {"a": 25, "b": 19}, "y": {"a": 11, "b": 9}, "z": {"a": 18, "b": 14}}

EXPECTED = {
    # MCT, queue order: x A2|B4 -> A (0-2); y A5|B6 -> A (2-5); z A15|B11 -> B (0-11). Makespan 11.
    ("mct", "THREE"): [("x", "A", 0, 2), ("y", "A", 2, 5), ("z", "B", 0, 11)],
    # Min-Min: bests x A2, y A3, z A10 -> x to A (0-2); then y A5|B6, z A12|B11: y (5) to A (2-5);
    # then z A15|B11 -> B (0-11). Makespan 11.
    ("minmin", "THREE"): [("x", "A", 0, 2), ("y", "A", 2, 5), ("z", "B", 0, 11)],
    # Max-Min: bests x 2, y 3, z 10 -> z to A (0-10); then x A12|B4, y A13|B6: y (6) to B (0-6);
    # then x A12|B10 -> B (6-10). Makespan 10.
    ("maxmin", "THREE"): [("x", "B", 6, 10), ("y", "B", 0, 6), ("z", "A", 0, 10)],
    # Sufferage round 1: all claim A, sufferages x 2, y 3, z 1 -> y to A (0-3); round 2: x A5|B4 -> B (suff 1),
    # z A13|B11 -> B (suff 2): z to B (0-11); round 3: x A5|B15 -> A (3-5). Makespan 11.
    ("sufferage", "THREE"): [("x", "A", 3, 5), ("y", "A", 0, 3), ("z", "B", 0, 11)],
    # MCT: w A17|B8 -> B (0-8); x A25|B27 -> A (0-25); y A36|B17 -> B (8-17); z A43|B31 -> B (17-31). Makespan 31.
    ("mct", "FOUR"): [("w", "B", 0, 8), ("x", "A", 0, 25), ("y", "B", 8, 17), ("z", "B", 17, 31)],
    # Min-Min: bests w 8, x 19, y 9, z 14 (all B) -> w to B (0-8); then x A25|B27, y A11|B17, z A18|B22:
    # y to A (0-11); then x A36|B27, z A29|B22: z to B (8-22); then x A36|B41 -> A (11-36). Makespan 36.
    ("minmin", "FOUR"): [("w", "B", 0, 8), ("x", "A", 11, 36), ("y", "A", 0, 11), ("z", "B", 8, 22)],
    # Max-Min: x (19) to B (0-19); then w A17|B27, y A11|B28, z A18|B33: z to A (0-18);
    # then w A35|B27, y A29|B28: y to B (19-28); then w A35|B36 -> A (18-35). Makespan 35.
    ("maxmin", "FOUR"): [("w", "A", 18, 35), ("x", "B", 0, 19), ("y", "B", 19, 28), ("z", "A", 0, 18)],
    # Sufferage: round 1 all claim B, sufferages w 9, x 6, y 2, z 4 -> w to B (0-8); round 2 all claim A,
    # x 2, y 6, z 4 -> y to A (0-11); round 3 both claim B, x 36-27 = 9, z 29-22 = 7 -> x to B (8-27);
    # round 4 z A29|B41 -> A (11-29). Makespan 29.
    ("sufferage", "FOUR"): [("w", "B", 0, 8), ("x", "B", 8, 27), ("y", "A", 0, 11), ("z", "A", 11, 29)],
}
MAKESPANS = {
    ("mct", "THREE"): 11,
    ("minmin", "THREE"): 11,
    ("maxmin", "THREE"): 10,
    ("sufferage", "THREE"): 11,
    ("mct", "FOUR"): 31,
    ("minmin", "FOUR"): 36,
    ("maxmin", "FOUR"): 35,
    ("sufferage", "FOUR"): 29,
}


@pytest.mark.parametrize(("policy", "instance"), sorted(EXPECTED))
def test_assignments_and_makespans_by_hand(policy: str, instance: str):
    w = workload({"THREE": THREE, "FOUR": FOUR}[instance])
    result = run(w, policy)
    assert segments(result) == EXPECTED[(policy, instance)]
    makespan = compute(result).makespan
    assert makespan == MAKESPANS[(policy, instance)]
    # bounds: THREE max(10, 15 / 2) = 10 (Max-Min reaches it); FOUR max(19, 50 / 2) = 25
    assert (
        makespan >= makespan_lower_bound(w) == pytest.approx({"THREE": 10, "FOUR": 27.875}[instance], rel=1e-6)
    )  # FOUR: the LP bound


@pytest.mark.parametrize("policy", ["mct", "minmin", "maxmin", "sufferage"])
def test_a_job_is_deferred_for_a_busy_fast_machine(policy: str):
    # p at 0 takes A (10 < 30). q arrives at 1: A frees at 10, 10 + 4 = 14 beats B's 1 + 20 = 21, so q is
    # DEFERred to A and started there when p ends.
    times = {"p": {"a": 10, "b": 30}, "q": {"a": 4, "b": 20}}
    assert segments(run(workload(times, submit={"q": 1.0}), policy)) == [("p", "A", 0, 10), ("q", "A", 10, 14)]
    s = kit.scheduler(times, [("A", "a"), ("B", "b")], policy)
    assert kit.kinds(s.submit([kit.job("p")], 0.0)) == [("start", "p", "A")]
    assert s.submit([kit.job("q", 1.0)], 1.0) == []
    assert (s.state.plan, s.state.jobs["q"].planned_start) == ({"A": ["q"]}, 10.0)


def test_many_slot_machines_take_jobs_by_size():
    # M has 2 slots (platform a), N one (b). big needs 2 slots, so only M; Min-Min: s1 M3|N5 -> M (0-3), lanes 0, 3;
    # s2 M3|N5 -> M (0-3), lanes 3, 3; big waits for both lanes: M (3-7). Makespan 7.
    cluster = Cluster(
        {"a": PlatformSpec("a"), "b": PlatformSpec("b")}, [MachineSpec("M", "a", 2), MachineSpec("N", "b")]
    )
    times = {"big": {"a": 4}, "s1": {"a": 3, "b": 5}, "s2": {"a": 3, "b": 5}}
    result = run(workload(times, cluster, big={"size": 2}), "minmin")
    assert segments(result) == [("big", "M", 3, 7), ("s1", "M", 0, 3), ("s2", "M", 0, 3)]


@pytest.mark.parametrize("policy", ["mct", "minmin", "maxmin", "sufferage"])
def test_without_estimates_jobs_start_on_free_machines(policy: str):
    # no estimates: x and y take the free machines in queue order; z starts on A when x ends at 2
    result = run(workload(THREE), policy, "none")
    assert segments(result) == [("x", "A", 0, 2), ("y", "B", 0, 6), ("z", "A", 2, 12)]


def test_registered_for_plain_workloads():
    assert {"mct", "minmin", "maxmin", "sufferage"} <= set(applicable_policies(()))
    assert [make_policy(n).name for n in ("mct", "minmin", "maxmin", "sufferage")] == [
        "mct",
        "minmin",
        "maxmin",
        "sufferage",
    ]

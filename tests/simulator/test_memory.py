"""Memory beside cores: a node never holds more memory than it has, under FCFS, EASY and conservative backfilling;
without memory nothing changes; the simulator counts overcommits, kills at the limits and retries (issue 31)."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

from scheduler.specs import make_policy
from simulator.metrics import compute
from simulator.retries import OOM, TIMEOUT, LimitOracle, RetryPolicy
from simulator.scenarios import parse_estimates
from simulator.simulate import SimResult, simulate
from simulator.workload import Cluster, JobSpec, MachineSpec, PlatformSpec, Workload
from simulator.workloads import swf
from tests.traces import trace

GB = 2**30
Row = tuple[str, float, int, float, int | None]  # id, submit, processors, run (= request), memory (bytes, None unknown)


def log(rows: list[Row], nodes: int, per_node: int, node_memory: int | None, mode: str = "packed") -> Workload:
    """Jobs on one machine of ``nodes`` x ``per_node`` slots with ``node_memory`` bytes each; each job's memory is
    both what it plans with and its true peak."""
    jobs = [
        JobSpec(
            n, t, "log", {"m": run}, params={"job": n, "requested_time": run}, size=size, memory=mem, true_memory=mem
        )
        for n, t, size, run, mem in rows
    ]
    pooled_memory = None if node_memory is None else node_memory * (nodes if mode == "pooled" else 1)
    machine = MachineSpec(
        "m", "m", nodes * per_node, node_slots=per_node if mode == "packed" else 0, node_memory=pooled_memory
    )
    return Workload("toy", jobs, Cluster({"m": PlatformSpec("m")}, [machine]))


def run(w: Workload, policy: str) -> SimResult:
    result = simulate(w, make_policy(policy), parse_estimates("requested").oracle(w))
    assert all(j.status == "done" for j in result.jobs)
    return result


def starts(result: SimResult) -> dict[str, float | None]:
    return {j.id: j.start for j in result.jobs}


@pytest.mark.parametrize("policy", ["fcfs", "easy", "conservative"])
@pytest.mark.parametrize("mode", ["packed", "pooled"])
def test_a_job_that_fits_the_cores_but_not_the_memory_waits(policy: str, mode: str) -> None:
    # One node of 4 cores and 4 GB: A takes 1 core and 3 GB until 100; B (1 core, 2 GB) has cores at 1 but no memory.
    rows: list[Row] = [("A", 0, 1, 100, 3 * GB), ("B", 1, 1, 50, 2 * GB)]
    assert starts(run(log(rows, 1, 4, 4 * GB, mode), policy)) == {"A": 0, "B": 100}
    unknown = [(n, t, s, r, None) for n, t, s, r, _ in rows]  # the same jobs without a memory estimate start at once
    assert starts(run(log(unknown, 1, 4, 4 * GB, mode), policy)) == {"A": 0, "B": 1}


def test_easy_backfills_only_what_the_memory_allows() -> None:
    # 2 nodes x 2 cores x 8 GB. A (2 cores, 6 GB) fills node 0 to 100; B (4 cores) is reserved both nodes at 100.
    # C (1 core, 3 GB) backfills on node 1; D (1 core, 6 GB) finds its last core but only 5 GB: it backfills once C ends.
    rows: list[Row] = [("A", 0, 2, 100, 6 * GB), ("B", 1, 4, 10, GB), ("C", 2, 1, 10, 3 * GB), ("D", 3, 1, 10, 6 * GB)]
    assert starts(run(log(rows, 2, 2, 8 * GB), "easy")) == {"A": 0, "B": 100, "C": 2, "D": 12}
    assert starts(run(log(rows, 2, 2, None), "easy")) == {"A": 0, "B": 100, "C": 2, "D": 3}  # no node size: cores only


def node_memory_never_exceeded(result: SimResult, w: Workload, size: int) -> None:
    """At every instant each node's memory (the jobs' memory spread over the slots they hold there) fits it."""
    memory = {j.id: j.memory or 0 for j in w.jobs}
    events = []
    for s in result.segments:
        each = memory[s.job] / sum(slots for _, slots in s.nodes)
        events += [(s.end, -slots * each, node) for node, slots in s.nodes] + [
            (s.start, slots * each, node) for node, slots in s.nodes
        ]
    used: dict[int, float] = {}
    for _, change, node in sorted(events):  # ends before starts at one instant
        used[node] = used.get(node, 0.0) + change
        assert used[node] <= size + 1


@pytest.mark.parametrize("policy", ["fcfs", "easy", "easy:order=sjbf", "conservative"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_no_policy_ever_puts_more_memory_on_a_node_than_it_has(policy: str, seed: int) -> None:
    rng = random.Random(seed)
    rows: list[Row] = []
    t = 0.0
    for i in range(60):
        t += rng.expovariate(1 / 15)
        size = rng.choice([1, 1, 2, 3, 4, 6])
        per_core = rng.uniform(0.25, 8 / min(size, 4)) * GB  # a node's 4 cores hold at most its 8 GB
        memory = None if rng.random() < 0.2 else int(size * per_core)
        rows.append((f"j{i}", round(t), size, rng.choice([5, 20, 60, 200]), memory))
    w = log(rows, 4, 4, 8 * GB)
    result = run(w, policy)
    node_memory_never_exceeded(result, w, 8 * GB)
    assert result.overcommits == 0
    ignored = Workload("toy", [replace(spec, memory=None) for spec in w.jobs], w.cluster)
    assert run(ignored, policy).overcommits > 0  # placed by cores alone the same jobs overcommit nodes


def test_without_memory_the_hpc2n_replay_is_unchanged_and_ignoring_memory_overcommits() -> None:
    path = trace("hpc2n.swf")
    results = {
        memory: run(swf.replay(path, train_fraction=0.0, nodes="packed", memory=memory), "easy")
        for memory in ("none", "ignored", "used")
    }
    assert starts(results["ignored"]) == starts(results["none"])  # node sizes and true peaks alone change no decision
    assert results["none"].overcommits == 0 and results["ignored"].overcommits > 0
    assert results["used"].overcommits == 0 and starts(results["used"]) != starts(results["none"])


def test_hpc2n_on_its_nodes_without_memory_gives_the_figures_measured_before_memory() -> None:
    # docs/results/backfilling.md, "On the nodes": EASY with requests on Seth's nodes, measured before jobs had memory
    w = swf.replay(trace("hpc2n.swf"), nodes="packed")
    m = compute(simulate(w, make_policy("easy"), parse_estimates("requested").oracle(w)))
    assert (round(m.avebsld, 1), round(m.mean_waiting), m.max_waiting, round(m.utilisation, 3)) == (
        20.3,
        3831,
        81284.0,
        0.457,
    )


def test_hpc2n_memory_is_per_processor_times_processors_and_nodes_have_the_machine_file_s() -> None:
    w = swf.replay(trace("hpc2n.swf"), train_fraction=0.0, nodes="packed", memory="used")
    assert w.cluster.machines[0].node_memory == 1048576 * 1024
    log = swf.read_swf(trace("hpc2n.swf"))
    known = {f"hpc2n-{j.job}": j for j in log.jobs if j.used_memory != -1}
    assert 1000 <= len(known) <= 1048
    replayed = [s for s in w.jobs if s.id in known]
    assert replayed and all(s.true_memory == s.memory == known[s.id].used_memory * 1024 * s.size for s in replayed)
    assert all(s.memory is None for s in w.jobs if s.id not in known)
    numbers = {int(s.id.split("-")[1]): 5 * GB for s in replayed[:3]}  # an estimate source's numbers, by job number
    mapped = swf.replay(trace("hpc2n.swf"), train_fraction=0.0, nodes="packed", memory=numbers)
    assert sum(s.memory == 5 * GB for s in mapped.jobs) == 3
    with pytest.raises(ValueError, match="memory must be one of"):
        swf.replay(trace("hpc2n.swf"), memory="asked")  # type: ignore[arg-type]


def killed(rows: list[tuple[str, float, float, int, int]], retry: RetryPolicy | None) -> SimResult:
    """Jobs (id, run, time limit, memory limit, true peak) on one node of 4 cores and 8 GB, limits enforced."""
    jobs = [
        JobSpec(n, 0.0, "log", {"m": r}, params={"job": n, "requested_time": limit}, memory=mem, true_memory=peak)
        for n, r, limit, mem, peak in rows
    ]
    w = Workload(
        "toy", jobs, Cluster({"m": PlatformSpec("m")}, [MachineSpec("m", "m", 4, node_slots=4, node_memory=8 * GB)])
    )
    return simulate(w, make_policy("easy"), LimitOracle(("m",)), enforce=True, retry=retry)


def test_a_job_above_its_memory_limit_is_killed_when_it_would_exceed_it_and_retried_with_more_memory_only() -> None:
    result = killed([("A", 100.0, 1000.0, GB, 2 * GB)], RetryPolicy("failed-only"))
    segments = [(s.job, s.start, s.end, s.outcome) for s in result.segments]
    assert segments == [("A", 0.0, 50.0, OOM), ("A~1", 50.0, 150.0, "done")]  # half its peak: killed at half its run
    statuses = {j.id: (j.status, j.requested) for j in result.jobs}
    assert statuses == {"A": ("failed", 1000.0), "A~1": ("done", 1000.0)}  # its time limit untouched


def test_a_timed_out_job_gets_more_time_only_unless_everything_is_doubled() -> None:
    rows = [("T", 100.0, 60.0, GB, GB // 2)]
    only = killed(rows, RetryPolicy("failed-only"))
    assert [(s.job, s.end, s.outcome) for s in only.segments] == [("T", 60.0, TIMEOUT), ("T~1", 160.0, "done")]
    both = killed(rows, RetryPolicy("double-both"))
    assert [j.requested for j in both.jobs] == [60.0, 120.0]
    assert [s.outcome for s in killed(rows, None).segments] == [TIMEOUT]  # enforced, not retried
    assert [
        s.outcome for s in killed([("U", 100.0, 60.0, GB, GB)], RetryPolicy("failed-only", retries=0)).segments
    ] == [TIMEOUT]


def test_a_retry_never_asks_more_memory_than_a_node_has_and_a_job_too_big_for_one_stops() -> None:
    """Issue 42: on one node of 8 GB, B (peak 10 GB) is retried at 6 GB, then at 8 GB, not 12 (no node has it: it could
    never be placed); killed at 8 GB it is not retried again. C ran out of time: doubling everything gives it 8 GB,
    not 12, and it completes."""
    cluster = Cluster({"m": PlatformSpec("m")}, [MachineSpec("m", "m", 4, node_slots=4, node_memory=8 * GB)])
    rows = [("B", 100.0, 1000.0, 3 * GB, 10 * GB), ("C", 100.0, 60.0, 6 * GB, 5 * GB)]
    for rule in ("failed-only", "double-both"):
        result = killed(rows, RetryPolicy(rule, retries=5, cluster=cluster))
        memory = {j.id: (j.memory, j.status) for j in result.jobs}
        assert [memory[f"B~{n}"] for n in (1, 2)] == [(6 * GB, "failed"), (8 * GB, "failed")], rule
        assert "B~3" not in memory and all(status != "pending" for _, status in memory.values()), rule
        raised = 8 * GB if rule == "double-both" else 6 * GB
        assert memory["C~1"] == (raised, "done"), rule
    uncapped = killed(rows, RetryPolicy("double-both", retries=5))  # without the cluster, as before
    assert {j.id: j.status for j in uncapped.jobs}["C~1"] == "pending", "12 GB: placed nowhere"


def test_without_enforcement_no_job_is_killed() -> None:
    jobs = [
        JobSpec(
            "A", 0.0, "log", {"m": 100.0}, params={"job": "A", "requested_time": 10.0}, memory=GB, true_memory=2 * GB
        )
    ]
    w = Workload("toy", jobs, Cluster({"m": PlatformSpec("m")}, [MachineSpec("m", "m", 1)]))
    assert [s.outcome for s in simulate(w, make_policy("easy"), LimitOracle(("m",))).segments] == ["done"]


def test_a_retry_policy_rejects_a_bad_rule() -> None:
    with pytest.raises(ValueError, match="rule must be one of"):
        RetryPolicy("triple")  # type: ignore[arg-type]

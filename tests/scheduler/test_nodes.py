"""Node-based allocation on tiny hand-worked logs: packing, per-node limits, EASY's reservation on nodes, pooled as before."""

from __future__ import annotations

import hashlib
import json
import random

import pytest

from scheduler.nodes import node_needs, place
from scheduler.specs import make_policy
from simulator.scenarios import parse_estimates
from simulator.simulate import SimResult, simulate
from simulator.workload import Cluster, JobSpec, MachineSpec, PlatformSpec, Workload

Row = tuple[str, float, int, float]  # id, submit, processors, run (= request)


def log(rows: list[Row], nodes: int, per_node: int, mode: str) -> Workload:
    """Jobs on one machine of ``nodes`` x ``per_node`` slots, as nodes (``packed``) or one pool (``pooled``)."""
    jobs = [
        JobSpec(n, t, "log", {"m": run}, params={"job": n, "requested_time": run}, size=size)
        for n, t, size, run in rows
    ]
    machine = MachineSpec("m", "m", nodes * per_node, node_slots=per_node if mode == "packed" else 0)
    return Workload("toy", jobs, Cluster({"m": PlatformSpec("m")}, [machine]))


def run(w: Workload, policy: str, estimates: str = "requested") -> SimResult:
    result = simulate(w, make_policy(policy), parse_estimates(estimates).oracle(w))
    assert all(j.status == "done" for j in result.jobs)
    return result


def starts(result: SimResult) -> dict[str, float]:
    return {j.id: j.start for j in result.jobs}


def test_needs_pack_whole_nodes_or_follow_the_request_and_placement_is_best_fit():
    assert node_needs(5, {}, 0) == (5,)  # a pool: one node of all its slots
    assert node_needs(5, {}, 2) == (2, 2, 1)
    assert node_needs(12, {"node_request": [[2, 6]]}, 12) == (6, 6)
    assert node_needs(12, {"node_request": [[2, 6]], "exclusive": True}, 12) == (12, 12)
    assert node_needs(12, {"node_request": [[1, 16]]}, 12) == (12,)  # a request the nodes cannot give: packed
    assert place((2, 2, 1), [2, 1, 2, 0]) == ((0, 2), (2, 2), (1, 1))
    assert place((3,), [4, 3, 3]) == ((1, 3),)  # the tightest node that holds it
    assert place((2, 2), [2, 1, 1]) is None


def test_a_job_wider_than_a_node_spans_nodes_only_as_the_mode_allows():
    # 2 nodes x 4: A and B (3 each) leave one slot on each node. C (2 processors) fits the pool at once; on nodes it
    # waits for a node with 2 free slots (A's, at 100); D (5) then packs onto that whole node and the slot left on B's.
    rows = [("A", 0, 3, 100), ("B", 0, 3, 200), ("C", 1, 2, 50), ("D", 2, 5, 10)]
    pooled, packed = run(log(rows, 2, 4, "pooled"), "fcfs"), run(log(rows, 2, 4, "packed"), "fcfs")
    assert starts(pooled) == {"A": 0, "B": 0, "C": 1, "D": 100}
    assert starts(packed) == {"A": 0, "B": 0, "C": 100, "D": 150}
    held = {s.job: sorted(slots for _, slots in s.nodes) for s in packed.segments}
    assert held == {"A": [3], "B": [3], "C": [2], "D": [1, 4]}
    assert all(not s.nodes for s in pooled.segments)


def occupancy_never_exceeds_nodes(result: SimResult, per_node: int) -> None:
    assert result.segments
    events = sorted(
        [(s.end, -slots, node) for s in result.segments for node, slots in s.nodes]
        + [(s.start, slots, node) for s in result.segments for node, slots in s.nodes]
    )  # ends before starts at one instant
    used: dict[int, int] = {}
    for _, change, node in events:
        used[node] = used.get(node, 0) + change
        assert 0 <= used[node] <= per_node


def random_rows(seed: int, n: int = 60) -> list[Row]:
    rng = random.Random(seed)
    rows, t = [], 0.0
    for i in range(n):
        t += rng.expovariate(1 / 15)
        rows.append((f"j{i}", round(t), rng.choice([1, 1, 2, 3, 4, 5, 8]), rng.choice([5, 20, 60, 200])))
    return rows


@pytest.mark.parametrize("policy", ["fcfs", "easy", "easy:order=sjbf", "conservative"])
def test_a_packed_job_never_exceeds_a_nodes_slots_and_holds_what_it_needs(policy):
    rows = random_rows(3)
    w = log(rows, 4, 4, "packed")
    result = run(w, policy, "last_two_mean")
    occupancy_never_exceeds_nodes(result, 4)
    size = {name: s for name, _, s, _ in rows}
    assert all(
        sorted((sl for _, sl in s.nodes), reverse=True) == list(node_needs(size[s.job], {}, 4)) for s in result.segments
    )


def test_easys_reservation_is_on_nodes_a_job_that_fits_the_pool_but_not_the_nodes_is_not_backfilled():
    # 4 nodes x 4. A fills node 0 to 100, B takes 2 of node 1 to 50, D and E 3 of nodes 2 and 3 to 1000.
    # H needs a whole node: reserved on node 1 at 50. C (2 processors, 200 s) would fit the pool beside H's
    # reservation (2 of 6 slots left at 50) but only node 1 has 2 free slots: it is not backfilled. F (1) fits the
    # slot left on node 2 and is.
    rows = [
        ("A", 0, 4, 100),
        ("B", 0, 2, 50),
        ("D", 0, 3, 1000),
        ("E", 0, 3, 1000),
        ("H", 1, 4, 10),
        ("C", 2, 2, 200),
        ("F", 3, 1, 200),
    ]
    for policy in ("easy", "conservative"):
        assert starts(run(log(rows, 4, 4, "packed"), policy)) == {
            "A": 0,
            "B": 0,
            "D": 0,
            "E": 0,
            "H": 50,
            "C": 60,
            "F": 3,
        }
    assert starts(run(log(rows, 4, 4, "pooled"), "easy")) == {"A": 0, "B": 0, "D": 0, "E": 0, "H": 1, "C": 11, "F": 11}


def test_a_policy_that_does_not_place_on_nodes_is_refused():
    with pytest.raises(ValueError, match="does not place jobs on nodes"):
        run(log([("A", 0, 1, 10)], 2, 2, "packed"), "edf")


def pooled_log(seed: int, n: int = 120, slots: int = 16) -> Workload:
    rng = random.Random(seed)
    jobs, t = [], 0.0
    for i in range(n):
        t += rng.expovariate(1 / 20)
        seconds = rng.choice([5, 20, 60, 200, 600])
        params = {"job": i, "user": i % 7, "requested_time": seconds * rng.choice([1, 1, 2, 5])}
        jobs.append(
            JobSpec(
                f"j{i}", round(t), "log", {"pool": seconds}, params=params, size=rng.choice([1, 1, 2, 3, 4, 6, 8, 12])
            )
        )
    return Workload("toy", jobs, Cluster({"pool": PlatformSpec("pool")}, [MachineSpec("pool", "pool", slots)]))


# sha256 (first 16 hex digits) of the sorted (seed, job, start, predicted start) of pooled_log(0..2) under each policy
# with last_two_mean estimates, as the pooled code gave them before node allocation existed (commit d4ade97)
BEFORE_NODES = {
    "fcfs": "bb8aac2d22673a3b",
    "easy": "4e4ff2016030c2cc",
    "easy:order=sjbf": "a9a94bd93f2fee6a",
    "conservative": "712717163eec109a",
}


@pytest.mark.parametrize("policy", sorted(BEFORE_NODES))
def test_the_pooled_mode_starts_every_job_where_it_did_before_nodes(policy):
    records = []
    for seed in range(3):
        w = pooled_log(seed)
        records += [(seed, j.id, j.start, j.predicted_start) for j in run(w, policy, "last_two_mean").jobs]
    assert len(records) == 360
    assert hashlib.sha256(json.dumps(sorted(records)).encode()).hexdigest()[:16] == BEFORE_NODES[policy]

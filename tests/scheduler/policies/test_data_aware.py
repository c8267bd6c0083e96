"""Santos-Neto et al. 2004 on small hand-checked grids: transfers over the shared link, Storage Affinity, WQR, XSufferage, waste."""

from __future__ import annotations

import pytest

from scheduler.policies import applicable_policies
from scheduler.sites import MB, SITES, Grid
from scheduler.specs import make_policy
from simulator.grid import GridRecord, SharedLink, StagedRun, waste
from simulator.metrics import compute
from simulator.scenarios import parse_estimates, parse_workload
from simulator.simulate import SimResult, simulate
from simulator.workload import Cluster, JobSpec, MachineSpec, PlatformSpec, Workload
from simulator.workloads import bag_of_tasks

DATA_AWARE = {"wqr", "storage-affinity", "xsufferage"}


def task(name: str, times: dict[str, float], files: dict[str, int]) -> JobSpec:
    return JobSpec(name, 0.0, "scan", times, params={"task": name}, inputs=tuple(files.items()))


def grid_workload(
    jobs: list[JobSpec], sites: dict[str, list[str]], bandwidth: float, stored: dict[str, dict[str, int]] | None = None
) -> Workload:
    """Machines named by ``sites``; each machine is its own platform (its id in lower case)."""
    machines = [MachineSpec(m, m.lower()) for members in sites.values() for m in members]
    cluster = Cluster({m.platform: PlatformSpec(m.platform) for m in machines}, machines)
    grid = Grid({s: tuple(members) for s, members in sites.items()}, bandwidth, stored or {})
    return Workload("grid", jobs, cluster, provides=frozenset({SITES}), grid=grid)


def run(w: Workload, policy: str, estimates: str = "none") -> SimResult:
    return simulate(w, make_policy(policy), parse_estimates(estimates).oracle(w))


def runs(result: SimResult) -> list[tuple[str, str, float, float, str]]:
    """(job, machine, start, end, outcome) of every run, sorted."""
    return sorted((s.job, s.machine, s.start, s.end, s.outcome) for s in result.segments)


def test_transfer_then_compute_and_reuse_in_the_next_execution():
    w = grid_workload([task("t", {"a1": 5.0}, {"f": 1000})], {"A": ["A1"]}, bandwidth=100.0)
    first = run(w, "storage-affinity")
    assert runs(first) == [("t", "A1", 0.0, 15.0, "done")]  # 1000 B / 100 B/s = 10 s, then 5 s of compute
    assert first.grid is not None and first.grid.stored == {"A": {"f": 1000}}
    again = w.__class__(**{**w.__dict__, "grid": Grid(w.grid.sites, 100.0, first.grid.stored)})
    assert runs(run(again, "storage-affinity")) == [("t", "A1", 0.0, 5.0, "done")]  # the data server kept f


def test_link_bandwidth_is_shared_equally_by_concurrent_transfers():
    # 100 B/s for two transfers: 50 B/s each until t=10, when the 500 B one is done; the other's last 1000 B go at 100 B/s
    w = grid_workload(
        [task("small", {"a1": 5.0, "b1": 5.0}, {"f": 500}), task("big", {"a1": 5.0, "b1": 5.0}, {"g": 1500})],
        {"A": ["A1"], "B": ["B1"]},
        bandwidth=100.0,
    )
    result = run(w, "storage-affinity")
    assert [(job, end) for job, _, _, end, _ in runs(result)] == [("big", 25.0), ("small", 15.0)]
    assert compute(result).makespan == 25.0
    assert {r.job: r.staged for r in result.grid.runs} == {"small": 10.0, "big": 20.0}


def test_shared_link_aborted_transfer_speeds_up_the_rest():
    link = SharedLink(100.0)
    link.add("x", 1000.0)
    link.add("y", 1000.0)
    assert link.advance(4.0) == [] and link.next_end() == 20.0
    assert link.remove("x") == pytest.approx(200.0)  # 4 s at 50 B/s
    assert link.next_end() == pytest.approx(12.0)  # y's 800 B left at the full 100 B/s
    assert link.advance(12.0) == [("y", pytest.approx(12.0))]


def test_storage_affinity_sends_the_task_to_the_site_that_holds_its_data():
    # FIFO order would put t1 on A1 (first idle); its 1000 B are at site B, so Storage Affinity puts it on B1
    w = grid_workload(
        [task("t1", {"a1": 5.0, "b1": 5.0}, {"f1": 1000}), task("t2", {"a1": 5.0, "b1": 5.0}, {"f2": 1000})],
        {"A": ["A1"], "B": ["B1"]},
        bandwidth=100.0,
        stored={"B": {"f1": 1000}},
    )
    result = run(w, "storage-affinity")
    # t1 runs at once (no transfer); t2 fetches 1000 B alone on the link: 10 s, then 5 s
    assert runs(result) == [("t1", "B1", 0.0, 5.0, "done"), ("t2", "A1", 0.0, 15.0, "done")]
    assert {r.job: r.fetched for r in result.grid.runs} == {"t1": 0.0, "t2": 1000.0}


def test_storage_affinity_replicates_only_where_the_task_has_data():
    # t1 (data at site A) starts on A1, idle longest; A2 (4x faster) gets a replica, B1 none (no affinity at B)
    w = grid_workload(
        [task("t1", {"a1": 40.0, "a2": 10.0, "b1": 10.0}, {"f": 1000})],
        {"A": ["A1", "A2"], "B": ["B1"]},
        bandwidth=100.0,
        stored={"A": {"f": 1000}},
    )
    result = run(w, "storage-affinity")
    assert runs(result) == [("t1", "A1", 0.0, 10.0, "cancelled"), ("t1", "A2", 0.0, 10.0, "done")]
    assert result.orders == {"start": 1, "replicate": 1, "cancel": 1}


def test_wqr_replicates_when_no_task_waits_and_cancels_the_loser():
    # one task, two idle processors: the original and a replica fetch 1000 B at 500 B/s each (2 s), then compute
    # 10 s (fast) and 40 s (slow): the fast copy wins at 12 and the slow one, 10 s into its computation, is cancelled
    w = grid_workload([task("t", {"f1": 10.0, "s1": 40.0}, {"f": 1000})], {"A": ["F1"], "B": ["S1"]}, bandwidth=1000.0)
    result = run(w, "wqr")
    assert runs(result) == [("t", "F1", 0.0, 12.0, "done"), ("t", "S1", 0.0, 12.0, "cancelled")]
    assert result.orders == {"start": 1, "replicate": 1, "cancel": 1}
    spent = waste(result.grid)
    assert (spent.cpu, spent.bandwidth) == (1.0, 1.0)  # 10 s of 10 s; 1000 B of 1000 B
    plain = run(w, "wqr:copies=1")  # Workqueue: no replica
    assert plain.orders == {"start": 1} and waste(plain.grid).cpu == 0.0


def test_waste_metrics_on_a_hand_made_record():
    record = GridRecord(
        [
            StagedRun("a", "m1", "A", 0.0, 2.0, 12.0, 1000.0, "done"),  # 10 s of compute, 1000 B
            StagedRun("b", "m2", "A", 0.0, 0.0, 30.0, 0.0, "done"),  # 30 s, data already there
            StagedRun("a", "m3", "B", 0.0, 4.0, 12.0, 1000.0, "cancelled"),  # a losing replica: 8 s, 1000 B
            StagedRun("b", "m4", "B", 0.0, None, 30.0, 300.0, "cancelled"),  # killed mid-transfer: 0 s, 300 B
        ],
        {},
    )
    spent = waste(record)
    assert spent.cpu == pytest.approx(8.0 / 40.0) and spent.bandwidth == pytest.approx(1300.0 / 1000.0)
    assert (spent + spent).cpu == pytest.approx(0.2)


def test_xsufferage_weighs_the_transfer_against_the_faster_processor():
    # A1 computes in 10 s, B1 (which holds the data) in 20 s. Two idle processors and an empty link: the estimated
    # bandwidth is 1/2 of the link. At 100 B/s: A1 = 10 + 1000 / 50 = 30 > B1 = 20, so B1; at 1000 B/s: 10 + 2 < 20, A1.
    def placed(bandwidth: float) -> str:
        w = grid_workload(
            [task("t", {"a1": 10.0, "b1": 20.0}, {"f": 1000})],
            {"A": ["A1"], "B": ["B1"]},
            bandwidth,
            {"B": {"f": 1000}},
        )
        return runs(run(w, "xsufferage", "oracle"))[0][1]

    assert (placed(100.0), placed(1000.0)) == ("B1", "A1")


def test_xsufferage_maps_the_task_that_would_suffer_most_first():
    # One idle processor per site; t_far has its 1000 B at A (elsewhere: +20 s at 50 B/s), t_near has no data anywhere.
    # Site completions: t_far A 10 / B 30 (sufferage 20), t_near A 10 / B 30 after transfers of its 100 B (+2 s each):
    # t_near A 12 / B 12 (sufferage 0). t_far takes A1, then t_near takes B1.
    w = grid_workload(
        [task("t_near", {"a1": 10.0, "b1": 10.0}, {"g": 100}), task("t_far", {"a1": 10.0, "b1": 10.0}, {"f": 1000})],
        {"A": ["A1"], "B": ["B1"]},
        bandwidth=100.0,
        stored={"A": {"f": 1000}},
    )
    result = run(w, "xsufferage", "oracle")
    assert [(job, machine) for job, machine, *_ in runs(result)] == [("t_far", "A1"), ("t_near", "B1")]


def test_xsufferage_refuses_to_run_blind():
    w = grid_workload([task("t", {"a1": 1.0}, {"f": 1})], {"A": ["A1"]}, 1.0)
    with pytest.raises(ValueError, match="xsufferage needs runtime estimates"):
        run(w, "xsufferage", "none")


def test_data_aware_policies_need_sites():
    assert DATA_AWARE <= set(applicable_policies({SITES}))
    assert not DATA_AWARE & set(applicable_policies(frozenset()))


def test_bag_of_tasks_is_shaped_like_the_paper(catalog):
    w = parse_workload("bot:granularity=75,sites=3,grid_heterogeneity=8,app_heterogeneity=0.5,app=vis", catalog).make(2)
    assert SITES in w.provides and len(w.grid.sites) == 3 and w.grid.bandwidth == 125_000.0  # 1 Mbps
    sizes = [size for job in w.jobs for _, size in job.inputs]
    assert sum(sizes) == pytest.approx(2 * 2**30, abs=len(sizes))  # 2 GB, floored to whole bytes
    assert all(75 * MB * 0.75 - 1 <= s <= 75 * MB * 1.25 for s in sizes[:-1])  # H_a 50 %: U(0.75, 1.25) x 75 MB
    job = w.jobs[0]
    cost = job.inputs[0][1] / 1024 * bag_of_tasks.COST_MS_PER_KB / 1000  # visualization: cost set by the input
    rel = {m.platform: cost / job.true_times[m.platform] for m in w.cluster.machines}
    speeds = [rel[m.platform] for m in w.cluster.machines]  # U(2.2, 17.6) rounded to 0.5; grid power 1,000
    assert all(2.0 <= v <= 17.5 for v in speeds) and 1000 <= sum(speeds) < 1000 + 17.5
    sizes_by_site = {s: len(ms) for s, ms in w.grid.sites.items()}
    assert max(sizes_by_site.values()) - min(sizes_by_site.values()) <= 1  # equal shares


def test_next_execution_starts_from_the_data_the_last_one_left():
    w = bag_of_tasks.generate(seed=0, granularity=75, sites=2, app="vis", grid_heterogeneity=1, app_heterogeneity=0.0)
    first = run(w, "storage-affinity")
    following = bag_of_tasks.next_execution(w, first.grid)
    assert [j.id for j in following.jobs[:2]] == ["e1-t0", "e1-t1"] and following.grid.stored == first.grid.stored
    second = run(following, "storage-affinity")
    assert sum(r.fetched for r in second.grid.runs if r.outcome == "done") == 0.0  # every task found its data
    assert compute(second).makespan < compute(first).makespan / 100


def test_the_makespan_bound_counts_inputs_the_home_link_must_carry():
    from simulator.bounds import makespan_lower_bound

    # Two tasks of 1 s each on two sites, 1000 + 500 bytes over a 100 B/s link: the link needs 15 s,
    # a shared input counts once, and an input a data server already holds not at all.
    jobs = [
        task("a", {"a1": 1.0}, {"f": 1000}),
        task("b", {"b1": 1.0}, {"g": 500}),
        task("c", {"a1": 1.0}, {"f": 1000}),
    ]
    w = grid_workload(jobs, {"A": ["A1"], "B": ["B1"]}, bandwidth=100.0)
    assert makespan_lower_bound(w) == 15.0
    for policy in DATA_AWARE:
        assert compute(run(w, policy, "oracle")).makespan >= 15.0
    held = grid_workload(jobs, {"A": ["A1"], "B": ["B1"]}, bandwidth=100.0, stored={"B": {"f": 1000}})
    assert makespan_lower_bound(held) == 5.0

"""Batch planning on unrelated machines: HEFT's order, the local search, the MILP, the bounds and the checker, on hand-worked and brute-forced instances."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from benchmarks.instances.batches import as_workload, generate
from benchmarks.instances.check import checked_makespan
from scheduler.batch import exact
from scheduler.batch.relaxations import batch_lower_bound, lp_bound, preemptive_related_bound
from scheduler.batch.search import descend, improve, loads
from scheduler.policies.batch import HEURISTICS, heuristic_plans, plan
from scheduler.policies.mapping import HEFT, KPercentBest, map_times
from scheduler.specs import make_policy
from simulator.metrics import compute
from simulator.scenarios import parse_estimates
from simulator.simulate import simulate
from tests.scheduler import kit

INF = float("inf")

# Three programs on a CPU (column 0) and a GPU (column 1): a gains 10x on the GPU, b nothing, c loses 4x.
# Means: a 5.5, c 5, b 4; fastest times: b 4, c 2, a 1.
CPU_GPU = np.array([[10.0, 1.0], [4.0, 4.0], [2.0, 8.0]])


def optimum(times: np.ndarray, ready: np.ndarray) -> float:
    """The least makespan over every assignment (brute force)."""
    machines = range(times.shape[1])
    return min(
        checked_makespan(times, ready, a)
        for a in itertools.product(machines, repeat=len(times))
        if all(np.isfinite(times[j, i]) for j, i in enumerate(a))
    )


def tiny(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """A random instance of 1-6 jobs on 1-3 machines: related, or unrelated with gaps, machines free at 0 or later."""
    jobs, machines = int(rng.integers(1, 7)), int(rng.integers(1, 4))
    if rng.random() < 0.3:
        times = rng.uniform(1, 10, jobs)[:, None] / rng.uniform(0.5, 3, machines)[None, :]
    else:
        times = rng.uniform(1, 10, (jobs, machines))
        times[rng.random((jobs, machines)) < 0.25] = INF
        times[np.arange(jobs), rng.integers(0, machines, jobs)] = rng.uniform(1, 10, jobs)  # every job runs somewhere
    ready = rng.uniform(0, 4, machines) if rng.random() < 0.5 else np.zeros(machines)
    return times, ready


def test_heft_ranks_by_mean_time_and_finds_the_optimum_where_the_fastest_time_misleads():
    # HEFT order a, c, b: a -> GPU (1), c -> CPU (2), b: CPU 6 or GPU 5 -> GPU. Makespan 5, the optimum.
    # By fastest time (b, c, a): b -> CPU (4, a tie goes to the first), c -> CPU (6), a -> GPU (1): makespan 6.
    ready = np.zeros(2)
    assert map_times(HEFT(), CPU_GPU, ready).tolist() == [1, 1, 0]
    assert checked_makespan(CPU_GPU, ready, map_times(HEFT(), CPU_GPU, ready)) == 5 == optimum(CPU_GPU, ready)
    assert map_times(HEFT("median"), CPU_GPU, ready).tolist() == [1, 1, 0]  # the median of two is their mean


@pytest.mark.parametrize("policy", ["heft", "edf:objective=makespan,rank=mean"])
def test_heft_as_a_policy_and_as_edf_s_rank(policy: str):
    times = {"a": {"cpu": 10, "gpu": 1}, "b": {"cpu": 4, "gpu": 4}, "c": {"cpu": 2, "gpu": 8}}
    s = kit.scheduler(times, [("C", "cpu"), ("G", "gpu")], policy)
    orders = s.submit([kit.job(name) for name in times], 0.0)
    assert (kit.kinds(orders), s.state.plan) == (
        [("start", "a", "G"), ("start", "c", "C")],
        {"G": ["b"]},
    )  # b deferred: ends at 5


def test_edf_by_fastest_time_is_the_weaker_order_here():
    times = {"a": {"cpu": 10, "gpu": 1}, "b": {"cpu": 4, "gpu": 4}, "c": {"cpu": 2, "gpu": 8}}
    s = kit.scheduler(times, [("C", "cpu"), ("G", "gpu")], "edf:objective=makespan")
    s.submit([kit.job(name) for name in times], 0.0)
    assert s.state.plan == {"C": ["c"]}  # c waits behind b on the CPU: it ends at 6


def test_kpb_keeps_each_job_among_its_fastest_machines():
    # 50 % of 2 machines: each job only on its fastest one, however busy; HEFT sends the third to the slow machine
    # (ends 2 there, 3 on the fast one; the second job's tie at 2 goes to the first machine)
    times = np.array([[1.0, 2.0], [1.0, 2.0], [1.0, 2.0]])
    assert map_times(KPercentBest(50), times, np.zeros(2)).tolist() == [0, 0, 0]
    assert map_times(HEFT(), times, np.zeros(2)).tolist() == [0, 0, 1]
    with pytest.raises(ValueError, match="percent"):
        KPercentBest(0)
    with pytest.raises(ValueError, match="rank must be one of"):
        HEFT("mode")


def test_the_local_search_never_worsens_a_schedule():
    rng = np.random.default_rng(3)
    cases = [tiny(rng) for _ in range(150)] + [
        (generate(kind, 60, 6, s).times, np.zeros(6)) for kind in ("related", "unrelated") for s in range(3)
    ]
    assert cases
    for times, ready in cases:
        start = np.array([rng.choice(np.flatnonzero(np.isfinite(row))) for row in times])
        before = checked_makespan(times, ready, start)
        assign, load = start.copy(), loads(times, ready, start)
        descend(times, assign, load)
        assert checked_makespan(times, ready, assign) <= before + 1e-9
        assert load == pytest.approx(loads(times, ready, assign))  # the incremental loads stay exact
        found = improve(times, ready, start, budget=0.02, rng=rng)
        assert (
            found.makespan == pytest.approx(checked_makespan(times, ready, found.assign))
            and found.makespan <= before + 1e-9
        )


def test_the_search_reaches_the_optimum_of_small_instances():
    rng = np.random.default_rng(5)
    gaps = []
    for _ in range(40):
        times, ready = tiny(rng)
        # a wall budget ten times what an idle machine needs: the search stops on its patience first (40 instances
        # take 1.3 s at 0.05 s and 1.7 s at 0.5 s), and a loaded machine (mean gap 1.0101 at 0.05 s) still gets there
        found = plan(times, ready, budget=0.5, rng=rng)
        gaps.append(found.makespan / optimum(times, ready))
    assert min(gaps) >= 1.0 - 1e-9 and np.mean(gaps) < 1.01


def test_a_step_moves_a_job_off_the_critical_machine_by_hand():
    # both jobs on machine 0 (load 8); moving the 3 s job to machine 1 (4 s there) gives max(5, 4) = 5
    times = np.array([[5.0, 9.0], [3.0, 4.0]])
    assign = np.array([0, 0])
    load = loads(times, np.zeros(2), assign)
    assert descend(times, assign, load) == 1
    assert assign.tolist() == [0, 1] and load.tolist() == [5.0, 4.0]


def test_the_bound_is_never_above_the_optimum():
    rng = np.random.default_rng(1)
    for _ in range(150):
        times, ready = tiny(rng)
        assert batch_lower_bound(times, ready) <= optimum(times, ready) + 1e-9


def test_the_bounds_by_hand():
    # Below T = 4 b fits nowhere; at T = 4 a may only use the GPU (10 > 4) and c only the CPU (8 > 4), and
    # splitting b 3/8 : 5/8 loads both to 3.5 <= 4: T* = 4 (the optimum, 5, needs b whole)
    assert lp_bound(CPU_GPU) == pytest.approx(4.0, rel=1e-6)
    # Q|pmtn|Cmax: the longest job (6) on the fastest machine (2) takes 3; all 12 on speed 3 take 4
    assert preemptive_related_bound(np.array([6.0, 3.0, 3.0]), np.array([2.0, 1.0])) == 4.0
    related = np.array([6.0, 3.0, 3.0])[:, None] / np.array([2.0, 1.0])[None, :]
    assert batch_lower_bound(related, np.zeros(2)) == pytest.approx(4.0)
    assert batch_lower_bound(np.array([[2.0], [2.0]]), np.array([7.0])) == pytest.approx(
        11.0, rel=1e-6
    )  # ready + all work


def test_the_milp_finds_the_brute_force_optimum():
    rng = np.random.default_rng(2)
    for _ in range(25):
        times, ready = tiny(rng)
        solved = exact.solve(times, ready, time_limit=10.0)
        assert solved.optimal and solved.makespan == pytest.approx(optimum(times, ready))
        assert checked_makespan(times, ready, solved.assign) == pytest.approx(solved.makespan)


def test_every_heuristic_plans_every_task():
    instance = generate("unrelated", 40, 5, 1)
    plans = heuristic_plans(instance.times, instance.ready)
    assert set(plans) == set(HEURISTICS)
    for assign in plans.values():
        checked_makespan(instance.times, instance.ready, assign)


def test_batch_search_runs_in_the_simulator_and_beats_the_fastest_time_order():
    w = as_workload(generate("unrelated", 40, 4, 0))
    truth = parse_estimates("oracle").oracle(w)
    edf = compute(simulate(w, make_policy("edf:objective=makespan"), truth))
    searched = compute(simulate(w, make_policy("batch-search:budget=0.05"), truth))
    assert searched.done == len(w.jobs) and searched.makespan <= edf.makespan


def test_the_strong_ga_never_ends_worse_than_the_heuristics_it_starts_from():
    from benchmarks.instances.coscheduling import Setup
    from benchmarks.instances.coscheduling import generate as paper_instance
    from scheduler.genetic.baselines import greedy
    from scheduler.genetic.ga import GaSettings, evolve
    from scheduler.genetic.model import Problem
    from scheduler.policies.genetic import evolve_strong

    instance = generate("unrelated", 30, 4, 2)
    problem = Problem(
        compute=instance.times,
        requires=np.zeros((30, 0), dtype=bool),
        size=np.zeros(0),
        source=np.zeros(0, dtype=np.intp),
        remote_to_store=np.ones((0, 0)),
        store_to_node=np.ones((0, 4)),
        remote_to_node=np.ones((0, 4)),
    )
    best = min(
        checked_makespan(instance.times, instance.ready, a)
        for a in heuristic_plans(instance.times, instance.ready).values()
    )
    strong = evolve_strong(problem, GaSettings(generations=5), np.random.default_rng(0), polish=0.01)
    assert checked_makespan(instance.times, instance.ready, strong.best.nodes[0]) == pytest.approx(strong.makespan)
    assert strong.makespan <= best
    assert (
        evolve(problem, GaSettings(generations=5), np.random.default_rng(0)).makespan > strong.makespan
    )  # the paper's GA, unseeded
    # the paper's model, with data objects: never worse than jobs-LL with the fast replication it is seeded with
    paper = paper_instance(Setup(jobs=20, nodes=4, stores=4), 0)
    strong = evolve_strong(paper, GaSettings(generations=3), np.random.default_rng(0), polish=0.01)
    assert strong.makespan <= greedy(paper, "ll", "fast", np.random.default_rng(0)).makespan[0]
    assert np.all(np.diff(strong.history) <= 1e-9)  # elitism: the best never gets worse


def test_ga_strong_in_the_simulator_plans_a_heavy_tailed_batch_as_well_as_batch_search():
    """Issue 30, item 14: on 150 heavy-tailed CPU/GPU tasks the paper's window of 100 hid the last 50 (1.30x the bound)."""
    from benchmarks.batch_shapes import shaped, simulated_ratio

    instance = shaped("cpu-gpu", 150, 4, 0)
    searched = simulated_ratio(instance, "batch-search:budget=0.05")
    assert searched < 1.02
    assert simulated_ratio(instance, "ga-strong") <= searched * 1.01

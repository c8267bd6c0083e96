"""Phan, Ranganathan & Sion 2005: the evaluation function by hand, the GA's operators, the policies in the simulator."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.instances.coscheduling import Setup, generate
from scheduler.genetic.baselines import greedy
from scheduler.genetic.ga import (
    GaSettings,
    evolve,
    order_crossover,
    random_population,
    reversal_mutation,
    select,
    two_point_crossover,
)
from scheduler.genetic.model import Problem, evaluate, evaluate_reference, timeline
from scheduler.policies import applicable_policies
from scheduler.specs import make_policy
from simulator.estimates import truth
from simulator.metrics import compute
from simulator.simulate import SimResult, simulate
from simulator.workload import Cluster, JobSpec, MachineSpec, PlatformSpec, Workload

# 3 jobs, 2 nodes (C0, C1), 2 objects from one remote store R0, 2 local stores (S0, S1); bytes and bytes/s.
# o0: 100 B, o1: 50 B. R0->S0 10, R0->S1 5; S0->C0 50, S0->C1 25, S1->C0 10, S1->C1 50; R0->C0 5, R0->C1 2.
# So o0 copies R0->S0 in 10 s, R0->S1 in 20 s; hops S0->C0 2, S0->C1 4, S1->C0 10, S1->C1 2.
#    o1 copies R0->S1 in 10 s; hops S1->C1 1; without a replica R0->C0 10 s.
# J0 needs o0, J1 needs o0 and o1, J2 needs o1; COMPUTE (C0, C1): J0 (3, 6), J1 (4, 4), J2 (2, 5).
HAND = Problem(
    compute=np.array([[3.0, 6.0], [4.0, 4.0], [2.0, 5.0]]),
    requires=np.array([[True, False], [True, True], [False, True]]),
    size=np.array([100.0, 50.0]),
    source=np.array([0, 0]),
    remote_to_store=np.array([[10.0, 5.0]]),
    store_to_node=np.array([[50.0, 25.0], [10.0, 50.0]]),
    remote_to_node=np.array([[5.0, 2.0]]),
)
NONE = HAND.no_replica  # 2
HAND_SCHEDULES = [
    # queue J1, J0, J2; J0 -> C1, J1 -> C0, J2 -> C0; o0 -> S0, o1 not replicated.
    # J1 on C0 at 0: o0 copied to S0 by 10, at C0 by 12; o1 from R0 by 10; computes 12-16.
    # J0 on C1 at 0: o0's copy (at S0 by 10) is as soon as its own would be; at C1 by 14; computes 14-20.
    # J2 on C0 at 16: o1 from R0 again, 16-26; computes 26-28.  Makespan 28.
    ([1, 0, 2], [1, 0, 0], [0, NONE], {"start": [14, 12, 26], "end": [20, 16, 28]}, 28.0),
    # queue J0, J1, J2; J0 -> C0, J1 -> C1, J2 -> C1; both objects -> S1.
    # J0 on C0 at 0: o0 at S1 by 20, at C0 by 30; computes 30-33.
    # J1 on C1 at 0: o0 waits for that copy (20), at C1 by 22; o1 at S1 by 10, at C1 by 11; computes 22-26.
    # J2 on C1 at 26: o1 is already at S1, hop 26-27; computes 27-32.  Makespan 33.
    ([0, 1, 2], [0, 1, 1], [1, 1], {"start": [30, 22, 27], "end": [33, 26, 32]}, 33.0),
]


@pytest.mark.parametrize(("order", "nodes", "stores", "times", "makespan"), HAND_SCHEDULES)
def test_evaluation_function_matches_the_hand_computed_schedule(order, nodes, stores, times, makespan):
    plan = timeline(HAND, np.array([order]), np.array([nodes]), np.array([stores]))
    assert plan.start[0].tolist() == times["start"]
    assert plan.end[0].tolist() == times["end"]
    assert plan.makespan[0] == makespan
    assert evaluate_reference(HAND, np.array(order), np.array(nodes), np.array(stores)) == makespan


def test_jobs_ll_sends_each_job_to_the_node_free_soonest():
    # FIFO J0, J1, J2, nothing replicated. J0 -> C0 (tie, first node): o0 from R0 in 20, computes 20-23.
    # J1 -> C1 (free at 0): o0 from R0 in 50, o1 in 25; computes 50-54. J2 -> C0 (free at 23): o1 23-33, computes 33-35.
    plan = greedy(HAND, "ll", "none", np.random.default_rng(0))
    assert plan.nodes[0].tolist() == [0, 1, 0]
    assert plan.end[0].tolist() == [23, 54, 35]
    assert plan.makespan[0] == 54
    # rep-fast (ours): both objects to S0, the faster link from R0. J0 -> C0: o0 at S0 by 10, at C0 by 12, computes 12-15.
    # J1 -> C1: o0 at C1 by 14, o1 at S0 by 5 and C1 by 7; computes 14-18. J2 -> C0 (free at 15): o1 hop 15-16, 16-18.
    fast = greedy(HAND, "ll", "fast", np.random.default_rng(0))
    assert fast.nodes[0].tolist() == [0, 1, 0] and fast.end[0].tolist() == [15, 18, 18]
    with pytest.raises(ValueError, match="unknown greedy baseline"):
        greedy(HAND, "fastest", "none", np.random.default_rng(0))


@pytest.mark.parametrize("seed", range(4))
def test_vectorised_evaluation_equals_the_plain_loop(seed):
    rng = np.random.default_rng(seed)
    setup = Setup(jobs=25, nodes=6, stores=4, remotes=3, objects=12, per_job=(0, 4))
    base = generate(setup, seed)
    speeds = rng.uniform(
        0.5, 2.0, setup.nodes
    )  # heterogeneous nodes, some busy at the start, one job unrunnable on node 0
    compute_ = base.compute * speeds
    compute_[0, 0] = np.inf
    problem = Problem(
        compute_,
        base.requires,
        base.size,
        base.source,
        base.remote_to_store,
        base.store_to_node,
        base.remote_to_node,
        ready=rng.uniform(0, 500, setup.nodes),
        clock=0.0,
    )
    population = random_population(problem, 30, rng)
    population.stores[::3] = problem.no_replica  # some objects not replicated
    expected = [evaluate_reference(problem, *(s[i] for s in population)) for i in range(30)]
    assert np.allclose(evaluate(problem, population), expected, rtol=1e-12)
    # jobs-LL picks nodes as the walk goes (never the unrunnable one); replaying its picks gives the same makespans
    fifo = np.tile(np.arange(problem.jobs), (5, 1))
    ll = timeline(problem, fifo, None, population.stores[:5])
    assert np.all(ll.nodes[:, 0] != 0)
    assert np.allclose(
        ll.makespan, [evaluate_reference(problem, fifo[i], ll.nodes[i], population.stores[i]) for i in range(5)]
    )


def _is_order_crossover(child: np.ndarray, first: np.ndarray, second: np.ndarray) -> bool:
    """Some slice [lo, hi) of ``child`` is ``first``'s, and the other positions hold ``second``'s other jobs in order."""
    for lo in range(len(child) + 1):
        for hi in range(lo, len(child) + 1):
            kept = set(first[lo:hi].tolist())
            rest = [x for x in second.tolist() if x not in kept]
            if (child[lo:hi] == first[lo:hi]).all() and child[:lo].tolist() + child[hi:].tolist() == rest:
                return True
    return False


def test_order_crossover_keeps_permutations_and_the_first_parents_slice():
    rng = np.random.default_rng(1)
    first = rng.random((200, 9)).argsort(axis=1)
    second = rng.random((200, 9)).argsort(axis=1)
    child = order_crossover(first, second, np.random.default_rng(2))
    assert (np.sort(child, axis=1) == np.arange(9)).all()
    assert all(_is_order_crossover(c, a, b) for c, a, b in zip(child, first, second, strict=True))
    big = order_crossover(rng.random((50, 100)).argsort(axis=1), rng.random((50, 100)).argsort(axis=1), rng)
    assert (np.sort(big, axis=1) == np.arange(100)).all()
    # by hand: first 0..5, second 5..0; a child keeping first's slice [2, 4) = (2, 3) is 5 4 2 3 1 0
    assert _is_order_crossover(np.array([5, 4, 2, 3, 1, 0]), np.arange(6), np.arange(6)[::-1])
    assert not _is_order_crossover(np.array([5, 2, 4, 3, 1, 0]), np.arange(6), np.arange(6)[::-1])


def test_assignment_crossover_and_reversal_mutation():
    rng = np.random.default_rng(3)
    first, second = np.zeros((50, 20), dtype=int), np.ones((50, 20), dtype=int)
    child = two_point_crossover(first, second, rng)
    for row in child:  # one contiguous run of the first parent's genes
        zeros = np.flatnonzero(row == 0)
        assert zeros.size == 0 or (np.diff(zeros) == 1).all()
    order = np.tile(np.arange(10), (40, 1))
    assert (reversal_mutation(order, 0.0, rng) == order).all()
    mutated = reversal_mutation(order, 1.0, rng)
    assert (np.sort(mutated, axis=1) == np.arange(10)).all()
    for row in mutated:  # the identity with one stretch [i, j] reversed
        moved = np.flatnonzero(row != np.arange(10))
        if moved.size:
            i, j = moved[0], moved[-1]
            assert row[i : j + 1].tolist() == list(range(j, i - 1, -1))


def test_elitism_keeps_the_best_and_evolution_is_seeded():
    problem = generate(Setup(jobs=30, nodes=5, stores=5, objects=15), 0)
    runs = [
        evolve(problem, GaSettings(parents=4, children=12, generations=30), np.random.default_rng(7)) for _ in range(2)
    ]
    history = runs[0].history
    assert len(history) == 31 and (np.diff(history) <= 0).all()
    assert runs[0].makespan == history[-1] == evaluate(problem, runs[0].best)[0]
    assert runs[1].makespan == runs[0].makespan and all(
        (x == y).all() for x, y in zip(runs[0].best, runs[1].best, strict=True)
    )
    # a generation of children all worse than the elite: the elite takes the last parent's place, first in line
    kids = random_population(problem, 6, np.random.default_rng(1))
    elite = random_population(problem, 1, np.random.default_rng(2))
    parents, scores = select(kids, np.arange(10.0, 16.0), 3, elite, 5.0)
    assert scores.tolist() == [5.0, 10.0, 11.0]
    assert (parents.order[0] == elite.order[0]).all() and (parents.order[1] == kids.order[0]).all()


def test_ga_beats_the_greedy_baselines_on_a_paper_like_instance():
    problem = generate(Setup(jobs=40, nodes=10, stores=10), 3)
    ga = evolve(problem, GaSettings(generations=40), np.random.default_rng(0)).makespan
    rng = np.random.default_rng(0)
    best_greedy = min(
        greedy(problem, jobs, rep, rng, runs=5).makespan.mean() for jobs in ("ll", "rand") for rep in ("none", "rand")
    )
    assert ga < best_greedy


def test_bad_input_is_a_clear_error():
    with pytest.raises(ValueError, match="requires has shape"):
        Problem(
            HAND.compute,
            HAND.requires[:, :1],
            HAND.size,
            HAND.source,
            HAND.remote_to_store,
            HAND.store_to_node,
            HAND.remote_to_node,
        )
    with pytest.raises(ValueError, match="bandwidths must be positive"):
        Problem(
            HAND.compute,
            HAND.requires,
            HAND.size,
            HAND.source,
            HAND.remote_to_store * 0,
            HAND.store_to_node,
            HAND.remote_to_node,
        )
    with pytest.raises(ValueError, match="order and nodes must be 1 x 3"):
        timeline(HAND, np.array([[0, 1, 2]]), np.array([[0, 1]]), np.array([[0, 0]]))
    with pytest.raises(ValueError, match="parents"):
        GaSettings(parents=60)
    with pytest.raises(ValueError, match="window"):
        make_policy("ga:window=0")


# --- the policies in the simulator -------------------------------------------------------------------------------

TWO = Cluster({"a": PlatformSpec("a"), "b": PlatformSpec("b")}, [MachineSpec("A", "a"), MachineSpec("B", "b")])
# x (A 2, B 4), y (A 3, B 6), z (A 10, B 11), all at 0 in that queue order.
THREE = {"x": {"a": 2, "b": 4}, "y": {"a": 3, "b": 6}, "z": {"a": 10, "b": 11}}


def run(policy: str, times: dict[str, dict[str, float]] = THREE, **extra) -> SimResult:
    jobs = [JobSpec(n, 0.0, "algo", t, params={"name": n}, **extra) for n, t in times.items()]
    w = Workload("w", jobs, TWO)
    return simulate(w, make_policy(policy), truth(w))


def placed(result: SimResult) -> dict[str, tuple[str, float, float]]:
    return {s.job: (s.machine, s.start, s.end) for s in result.segments if s.outcome == "done"}


def test_ga_policy_finds_the_best_schedule_in_the_simulator():
    # the optimum is z alone on A (0-10) and x, y on B (4 + 6 = 10): makespan 10 (MCT gets 11, jobs-LL 12)
    result = run("ga:generations=20,seed=3")
    where = placed(result)
    assert where["z"] == ("A", 0.0, 10.0)
    assert {where["x"][0], where["y"][0]} == {"B"} and max(where["x"][2], where["y"][2]) == 10.0
    assert compute(result).makespan == 10.0


def test_ga_policy_uses_each_slot_of_a_many_slot_machine_as_a_lane():
    # one 2-slot machine: z alone in one slot (0-10), x and y one after the other in the other (0-5); makespan 10
    jobs = [JobSpec(n, 0.0, "algo", {"a": t["a"]}, params={"name": n}) for n, t in THREE.items()]
    w = Workload("w", jobs, Cluster({"a": PlatformSpec("a")}, [MachineSpec("M", "a", slots=2)]))
    where = placed(simulate(w, make_policy("ga:generations=10"), truth(w)))
    assert where["z"] == ("M", 0.0, 10.0)
    assert sorted(where[j][1:] for j in "xy") in ([(0.0, 2.0), (2.0, 5.0)], [(0.0, 3.0), (3.0, 5.0)])


def test_jobs_ll_policy_in_the_simulator():
    # FIFO to the machine free soonest, blind to speed: x -> A 0-2, y -> B 0-6, z -> A 2-12
    assert placed(run("jobs-ll-rep-rand")) == {"x": ("A", 0.0, 2.0), "y": ("B", 0.0, 6.0), "z": ("A", 2.0, 12.0)}
    assert compute(run("jobs-rand-rep-none:seed=5")).done == 3


def test_ga_window_and_applicability():
    # window=1: one job per pass, to where it ends soonest, and a pass runs on arrival or when a machine frees:
    # x -> A 0-2 (B idle: nothing else is in the window); at 2, y -> A 2-5 (B would end at 8); at 5, z -> A 5-15 (B: 16)
    assert placed(run("ga:window=1,generations=5")) == {
        "x": ("A", 0.0, 2.0),
        "y": ("A", 2.0, 5.0),
        "z": ("A", 5.0, 15.0),
    }
    assert {"ga", "jobs-ll-rep-none", "jobs-ll-rep-rand", "jobs-rand-rep-none", "jobs-rand-rep-rand"} <= set(
        applicable_policies(())
    )
    with pytest.raises(ValueError, match="one-slot jobs"):
        run("ga:generations=1", size=2)

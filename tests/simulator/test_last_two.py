"""Tsafrir's last-two-runs estimate, learnt online from the simulation's own job ends."""

from __future__ import annotations

from scheduler.specs import make_policy
from simulator.scenarios import parse_estimates
from simulator.simulate import simulate
from simulator.workload import Cluster, JobSpec, MachineSpec, PlatformSpec, Workload


def user_jobs(runs: list[tuple[float, float, float]], user: int = 7, fails: tuple[int, ...] = ()) -> Workload:
    """One-slot machine; job i (submit, run, request) of ``user``; jobs in ``fails`` end with an error."""
    jobs = [
        JobSpec(
            f"j{i}",
            submit,
            "log",
            {"p": run},
            params={"job": i, "user": user, "requested_time": request},
            fails=i in fails,
        )
        for i, (submit, run, request) in enumerate(runs)
    ]
    return Workload("toy", jobs, Cluster({"p": PlatformSpec("p")}, [MachineSpec("m", "p")]))


def served(oracle, w: Workload) -> list[float | None]:
    return [oracle.estimate(j.algorithm, j.params, features=j.features)["p"].seconds for j in w.jobs]


def test_request_until_two_jobs_ended_then_their_mean_capped_by_the_request():
    # j0 runs 0-100, j1 100-400, j2 400-410 (one slot, in order); j2 at 50 saw no end; j3 at 450 saw j1 and j2 end
    # last; j3 ends at 460, as j4 arrives (ends come first): mean(10, 10) = 10, capped by j4's request of 5
    w = user_jobs([(0, 100, 1000), (1, 300, 1000), (50, 10, 900), (450, 10, 5000), (460, 10, 5)])
    source = parse_estimates("last_two_mean")
    oracle = source.oracle(w)
    simulate(w, make_policy("fcfs"), oracle, estimates="last_two_mean")
    assert served(oracle, w) == [1000, 1000, 900, 155.0, 5]


def test_only_runs_that_ended_before_the_submission_count():
    # j1 is submitted while j0 still runs: it must not see j0's run time, whatever the log says later
    w = user_jobs([(0, 50, 500), (0, 70, 500), (10, 5, 500), (200, 5, 500)])
    oracle = parse_estimates("last_two_mean").oracle(w)
    simulate(w, make_policy("fcfs"), oracle)
    assert served(oracle, w) == [500, 500, 500, 37.5]  # j1 (70 s) and j2 (5 s) ended last


def test_failed_jobs_count_as_terminated():
    w = user_jobs([(0, 40, 500), (0, 80, 500), (300, 5, 500)], fails=(1,))
    oracle = parse_estimates("last_two_mean").oracle(w)
    simulate(w, make_policy("fcfs"), oracle)
    assert served(oracle, w)[2] == 60.0


def test_a_users_first_replayed_job_starts_from_the_history_prefix():
    w = user_jobs([(0, 10, 900)])
    w.jobs[0].features = {"history.finished_jobs": 3.0, "history.last1": 100.0, "history.last2": 300.0}
    other = user_jobs([(0, 10, 900)], user=8)
    other.jobs[0].features = {"history.finished_jobs": 1.0, "history.last1": 100.0, "history.last2": 900.0}
    assert served(parse_estimates("last_two_mean").oracle(w), w) == [200.0]
    assert served(parse_estimates("last_two_mean").oracle(other), other) == [900]  # one run known: the request

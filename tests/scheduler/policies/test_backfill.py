"""EASY and conservative backfilling on tiny hand-worked logs: who backfills, who waits, and the plan's corrections."""

from __future__ import annotations

import random

import pytest

from scheduler.planning_times import planned_end
from scheduler.profiles import PoolProfile
from scheduler.run_times import TableOracle, job_key
from scheduler.specs import make_policy
from scheduler.state import INF, Job, Run
from simulator.metrics import compute
from simulator.scenarios import parse_estimates
from simulator.simulate import simulate
from simulator.workload import Cluster, JobSpec, MachineSpec, PlatformSpec, Workload

SLOTS = 4


def log(rows: list[tuple[str, float, int, float, float]]) -> Workload:
    """Jobs (id, submit, processors, run, request) on one pooled machine of ``SLOTS`` processors."""
    jobs = [
        JobSpec(name, submit, "log", {"pool": run}, params={"job": name, "requested_time": request}, size=size)
        for name, submit, size, run, request in rows
    ]
    return Workload("toy", jobs, Cluster({"pool": PlatformSpec("pool")}, [MachineSpec("pool", "pool", SLOTS)]))


def starts(w: Workload, policy: str, estimates: str = "requested", oracle=None) -> dict[str, float]:
    result = simulate(w, make_policy(policy), oracle or parse_estimates(estimates).oracle(w))
    assert all(j.status == "done" for j in result.jobs)
    return {j.id: j.start for j in result.jobs}


def test_easy_backfills_a_job_that_ends_before_the_reservation_and_refuses_one_that_would_delay_it():
    # A holds 2 of 4 processors until 100; B needs all 4: reserved at 100. C (ends at 52) slips in before it;
    # D arrives at 60 with 2 free processors, but would run to 260 and hold B back: it waits until B is done.
    w = log([("A", 0, 2, 100, 100), ("B", 1, 4, 10, 10), ("C", 2, 2, 50, 50), ("D", 60, 2, 200, 200)])
    assert starts(w, "easy") == {"A": 0, "B": 100, "C": 2, "D": 110}
    assert starts(w, "fcfs") == {"A": 0, "B": 100, "C": 110, "D": 110}
    metrics = compute(simulate(w, make_policy("easy"), parse_estimates("requested").oracle(w)))
    # bounded slowdowns: A 100/100, B 109/10, C 50/50, D 250/200; waits 0, 99, 0, 50
    assert metrics.avebsld == pytest.approx((1 + 10.9 + 1 + 1.25) / 4) and metrics.max_waiting == 99
    assert (metrics.underestimated, metrics.over_request, metrics.predicted_starts) == (0.0, 0, 1)  # B's reservation
    assert metrics.start_error_median == 0


def test_easy_sjbf_tries_the_shortest_candidate_first():
    # B (all 4 processors) is reserved at 100; C (90 s) and D (20 s) both fit before it, but only one at a time
    w = log([("A", 0, 2, 100, 100), ("B", 0, 4, 10, 10), ("C", 0, 2, 90, 90), ("D", 0, 2, 20, 20)])
    assert starts(w, "easy") == {"A": 0, "B": 100, "C": 0, "D": 110}
    # SJBF starts D first; when D ends at 20, C would run to 110, past B's reservation: it waits
    assert starts(w, "easy:order=sjbf") == {"A": 0, "B": 100, "C": 110, "D": 0}


def test_conservative_never_delays_an_earlier_reservation():
    # D fits in the gap at 100-150 beside B only if it is short; a long D must go after C, not delay it
    w = log([("A", 0, 4, 100, 100), ("B", 1, 2, 50, 50), ("C", 2, 4, 100, 100), ("D", 3, 2, 200, 200)])
    assert starts(w, "conservative") == {"A": 0, "B": 100, "C": 150, "D": 250}
    short = log([("A", 0, 4, 100, 100), ("B", 1, 2, 50, 50), ("C", 2, 4, 100, 100), ("D", 3, 2, 40, 40)])
    assert starts(short, "conservative") == {"A": 0, "B": 100, "C": 150, "D": 100}


def random_log(seed: int, n: int = 80) -> Workload:
    rng = random.Random(seed)
    rows, t = [], 0.0
    for i in range(n):
        t += rng.expovariate(1 / 30)
        run = rng.choice([5, 20, 60, 200, 600])
        rows.append((f"j{i}", round(t), rng.choice([1, 1, 2, 3, 4]), run, run * rng.choice([1, 1, 2, 5])))
    return log(rows)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_with_exact_estimates_conservative_starts_every_job_by_its_first_reservation(seed):
    w = random_log(seed)
    result = simulate(w, make_policy("conservative"), parse_estimates("oracle").oracle(w))
    waited = [j for j in result.jobs if j.start > j.submit]
    assert waited and all(j.predicted_start is not None for j in result.jobs)
    assert all(j.start <= j.predicted_start + 1e-9 for j in result.jobs)
    metrics = compute(result)
    assert metrics.predicted_starts == len(waited) and metrics.start_within_10min == 1.0


@pytest.mark.parametrize("policy", ["easy", "easy:order=sjbf", "conservative"])
def test_no_job_is_killed_and_processors_are_never_oversubscribed(policy):
    w = random_log(5)
    result = simulate(w, make_policy(policy), parse_estimates("last_two_mean").oracle(w))
    assert all(j.status == "done" for j in result.jobs)
    runs = {s.job: s.end - s.start for s in result.segments}
    assert all(runs[j.id] == j.true_times["pool"] for j in w.jobs)  # every job ran its whole logged time
    events = sorted(
        [(s.start, s.share * SLOTS) for s in result.segments] + [(s.end, -s.share * SLOTS) for s in result.segments]
    )
    level = 0.0
    for _, change in sorted(events, key=lambda e: (e[0], e[1])):
        level += change
        assert level <= SLOTS + 1e-9


def test_planned_end_is_corrected_by_tsafrirs_steps_up_to_the_kill_limit():
    job = Job("x", "log", 0.0, params={"requested_time": 1000.0}, estimates={"p": 100.0})
    run = Run("m", 0.0, 1, 100.0)
    assert planned_end(job, run, "p", 50.0, "tsafrir") == 100.0
    assert planned_end(job, run, "p", 150.0, "tsafrir") == 160.0  # +1 min
    assert planned_end(job, run, "p", 170.0, "tsafrir") == 400.0  # +5 min
    assert planned_end(job, run, "p", 900.0, "tsafrir") == 1000.0  # +15 min would pass the kill limit
    assert planned_end(job, run, "p", 1200.0, "tsafrir") == 1260.0  # past it (the log let it run): due any minute
    assert planned_end(job, run, "p", 150.0, "requested") == 1000.0


def test_the_quantile_correction_climbs_the_served_quantiles_then_tsafrirs_steps():
    job = Job("x", "log", 0.0, params={"requested_time": 1000.0}, estimates={"p": 100.0})
    run = Run("m", 0.0, 1, 100.0)

    def served(_job: Job, _platform: str) -> tuple[float, ...]:
        return (150.0, 300.0, 600.0)  # e.g. the 0.75, 0.9 and 0.99 quantiles of its served interval

    assert planned_end(job, run, "p", 50.0, "quantile", served) == 100.0  # not outlived yet
    assert planned_end(job, run, "p", 120.0, "quantile", served) == 150.0
    assert planned_end(job, run, "p", 150.5, "quantile", served) == 300.0
    assert planned_end(job, run, "p", 400.0, "quantile", served) == 600.0
    assert planned_end(job, run, "p", 700.0, "quantile", served) == 1000.0  # past them all: Tsafrir's +15 min, capped
    assert planned_end(job, run, "p", 1200.0, "quantile", served) == 1260.0  # past the kill limit: due any minute
    assert planned_end(job, run, "p", 120.0, "quantile", lambda _j, _p: (150.0, 2000.0)) == 150.0
    assert (
        planned_end(job, run, "p", 200.0, "quantile", lambda _j, _p: (150.0, 2000.0)) == 1000.0
    )  # capped by the request
    assert (
        planned_end(job, run, "p", 120.0, "quantile", lambda _j, _p: ()) == 160.0
    )  # no interval served: Tsafrir's step
    assert planned_end(job, run, "p", 120.0, "quantile") == 160.0  # a source without quantiles (requests, last two)


def test_the_correction_replans_around_a_job_that_outlives_its_estimate():
    # A (2 processors) is planned at 100 s but runs 500; B (all 4) arrives at 150 and C (2, 30 s) at 151.
    # Tsafrir's step puts A's end at 160, so B's reservation is at 160 and C (to 181) may not backfill;
    # raised straight to A's request (1000), B waits until 1000 and C slips in at once.
    w = log([("A", 0, 2, 500, 1000), ("B", 150, 4, 10, 10), ("C", 151, 2, 30, 30)])
    told = TableOracle(
        {job_key("log", j.params): {"pool": 100.0 if j.id == "A" else j.true_times["pool"]} for j in w.jobs}, "told"
    )
    assert starts(w, "easy:correction=tsafrir", oracle=told)["C"] == 510  # after B (500-510)
    assert starts(w, "easy:correction=requested", oracle=told)["C"] == 151
    assert (
        starts(w, "easy:correction=quantile", oracle=told)["C"] == 510
    )  # the table serves no interval: Tsafrir's steps


def test_profile_finds_the_earliest_window_and_reservations_take_slots():
    profile = PoolProfile(0.0, [1], [(10.0, ((0, 2),)), (30.0, ((0, 1),))])  # 1 free, 3 from 10, 4 from 30
    assert profile.earliest((1,), 100.0) == 0.0
    assert profile.earliest((3,), 5.0) == 10.0
    profile.reserve(10.0, 10.0, ((0, 3),))  # 10-20 taken
    assert profile.earliest((2,), 15.0) == 20.0
    assert profile.free_at(15.0) == 0 and profile.free_at(25.0) == 3
    assert profile.earliest((5,), 1.0) == INF


def test_the_doubling_correction_doubles_the_estimate_until_it_is_not_outlived():
    job = Job("x", "log", 0.0, params={"requested_time": 1000.0}, estimates={"p": 100.0})
    run = Run("m", 0.0, 1, 100.0)
    assert planned_end(job, run, "p", 50.0, "doubling") == 100.0  # not outlived yet
    assert planned_end(job, run, "p", 150.0, "doubling") == 200.0
    assert planned_end(job, run, "p", 390.0, "doubling") == 400.0
    assert planned_end(job, run, "p", 850.0, "doubling") == 1000.0  # 1,600 would pass the kill limit
    assert planned_end(job, run, "p", 1200.0, "doubling") == 1260.0  # past it: due any minute


def test_easy_saf_tries_the_smallest_area_first():
    # A holds 2 of 4 processors until 100 and B (all 4) is reserved then; two processors are free now. D (2 x 30 s,
    # area 60) is the shortest, E (1 x 50 s, area 50) the smallest: SJBF starts D first, SAF starts E first
    w = log([("A", 0, 2, 100, 100), ("B", 0, 4, 10, 10), ("C", 0, 2, 40, 40), ("D", 0, 2, 30, 30), ("E", 0, 1, 50, 50)])
    assert starts(w, "easy:order=sjbf")["D"] == 0
    assert starts(w, "easy:order=saf")["E"] == 0
    assert starts(w, "easy:order=saf")["D"] > 0

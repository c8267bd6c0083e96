"""Job-history features: hand-checked values, a brute-force reference, and proof that no run time leaks."""

from __future__ import annotations

import random
from dataclasses import replace
from datetime import UTC
from zoneinfo import ZoneInfo

import pytest

from features.history import FEATURE_NAMES, history_features
from features.swf import SwfJob, read_swf
from tests.traces import trace

MONDAY = 1704067200  # 2024-01-01 00:00:00 UTC, a Monday


def job(number: int, submit: float, wait: float, run: float, user: int, req: float = 100, procs: int = 1) -> SwfJob:
    """A job line with the fields the history reads; the rest unknown."""
    return SwfJob(
        line=number,
        job=number,
        submit=submit,
        wait=wait,
        run=run,
        allocated_procs=-1,
        avg_cpu=-1,
        used_memory=-1,
        requested_procs=procs,
        requested_time=req,
        requested_memory=-1,
        status=1,
        user=user,
        group=-1,
        executable=-1,
        queue=-1,
        partition=-1,
        preceding_job=-1,
        think_time=-1,
    )


def expected(
    req: float | None,
    procs: float,
    finished: int,
    last: list[float],
    mean: float | None,
    submitted: int,
    since: float,
    running: int,
    running_procs: float,
) -> dict[str, float]:
    """A feature dict from hand-worked values (history fills already applied in ``last``)."""
    out = {
        "history.finished_jobs": finished,
        "user.submitted_jobs": submitted,
        "user.since_last_submit": since,
        "user.running_jobs": running,
        "user.running_procs": running_procs,
        "time.hour": 0,
        "time.weekday": 0,
        "request.procs": procs,
    }
    if req is not None:
        out.update(
            {
                "request.time": req,
                "history.last1": last[0],
                "history.last2": last[1],
                "history.last3": last[2],
                "history.last2_mean": sum(last[:2]) / 2,
                "history.last3_mean": sum(last) / 3,
                "history.mean": mean,
            }
        )
    return out


def test_hand_checked_log() -> None:
    jobs = {
        "J1": job(1, 0, 10, 100, user=1, req=500, procs=2),  # runs 10-110
        "J2": job(2, 50, 0, 30, user=1, req=60),  # runs 50-80
        "K1": job(3, 60, 0, 1000, user=2, req=2000, procs=8),  # runs 60-1060
        "J3": job(4, 100, 5, 20, user=1, req=40, procs=4),  # runs 105-125
        "K2": job(5, 120, -1, 5, user=2, req=10),  # start unknown: never running nor finished
        "K3": job(6, 130, 0, 1, user=2, req=-1),  # requested time unknown
        "J4": job(7, 200, 0, 7, user=1, req=30),
    }
    names = ["K3", "J4", "J1", "K1", "J3", "J2", "K2"]  # log order need not be submit order
    features = dict(zip(names, history_features([jobs[n] for n in names], MONDAY, UTC)))
    assert features["J1"] == expected(500, 2, 0, [500] * 3, 500, 0, 0, 0, 0)
    assert features["J2"] == expected(60, 1, 0, [60] * 3, 60, 1, 50, 1, 2)
    assert features["K1"] == expected(2000, 8, 0, [2000] * 3, 2000, 0, 60, 0, 0)
    assert features["J3"] == expected(40, 4, 1, [30, 40, 40], 30, 2, 50, 1, 2)
    assert features["K2"] == expected(10, 1, 0, [10] * 3, 10, 1, 60, 1, 8)
    assert features["K3"] == expected(None, 1, 0, [], None, 2, 10, 1, 8)
    assert features["J4"] == expected(30, 1, 3, [20, 100, 30], 50, 3, 100, 0, 0)
    assert set(features["J4"]) == set(FEATURE_NAMES)


def test_time_of_submission_is_local_to_the_log() -> None:
    jobs = [job(1, 23 * 3600, 0, 1, user=1), job(2, 23 * 3600 + 86400 * 5, 0, 1, user=1)]
    utc = history_features(jobs, MONDAY, UTC)
    local = history_features(jobs, MONDAY, ZoneInfo("Europe/Stockholm"))  # UTC+1 in January
    assert [(f["time.hour"], f["time.weekday"]) for f in utc] == [(23, 0), (23, 5)]
    assert [(f["time.hour"], f["time.weekday"]) for f in local] == [(0, 1), (0, 6)]


def random_log(rng: random.Random, n: int = 80, users: int = 4) -> list[SwfJob]:
    """Jobs in shuffled log order with continuous times (no ties), a few unknown waits and run times."""
    jobs = [
        job(
            i,
            rng.uniform(0, 5000),
            -1 if rng.random() < 0.05 else rng.expovariate(1 / 100),
            -1 if rng.random() < 0.05 else rng.expovariate(1 / 400),
            user=rng.randrange(users),
            req=rng.choice([-1, 60, 600, 3600]) if rng.random() < 0.1 else rng.uniform(10, 2000),
            procs=rng.randint(1, 8),
        )
        for i in range(n)
    ]
    rng.shuffle(jobs)
    return jobs


def reference(jobs: list[SwfJob]) -> list[dict[str, float]]:
    """The features straight from their definition, O(n^2): what the one-pass heap version must equal."""
    out = []
    for me in jobs:
        earlier = [j for j in jobs if j.user == me.user and j.submit < me.submit]
        done = sorted(
            (j for j in earlier if j.end is not None and j.end <= me.submit), key=lambda j: j.end, reverse=True
        )
        running = [j for j in earlier if j.end is not None and j.start <= me.submit < j.end]
        fill = None if me.requested_time == -1 else me.requested_time
        last = [j.run for j in done[:3]] + [fill] * max(0, 3 - len(done))
        since = me.submit - max((j.submit for j in earlier), default=min(j.submit for j in jobs))
        values = {
            "history.finished_jobs": len(done),
            "user.submitted_jobs": len(earlier),
            "user.since_last_submit": since,
            "user.running_jobs": len(running),
            "user.running_procs": sum(j.procs for j in running),
            "request.procs": me.procs,
            "request.time": fill,
            "history.last1": last[0],
            "history.last2": last[1],
            "history.last3": last[2],
            "history.last2_mean": None if None in last[:2] else sum(last[:2]) / 2,
            "history.last3_mean": None if None in last else sum(last) / 3,
            "history.mean": sum(j.run for j in done) / len(done) if done else fill,
        }
        out.append({k: float(v) for k, v in values.items() if v is not None})
    return out


def without_time(features: list[dict[str, float]]) -> list[dict[str, float]]:
    return [{k: v for k, v in f.items() if not k.startswith("time.")} for f in features]


@pytest.mark.parametrize("seed", range(20))
def test_one_pass_equals_the_definition(seed: int) -> None:
    jobs = random_log(random.Random(seed))
    assert jobs
    for got, want in zip(without_time(history_features(jobs)), reference(jobs), strict=True):
        assert got == pytest.approx(want)


def perturbed_runs(jobs: list[SwfJob], which: set[int], rng: random.Random) -> list[SwfJob]:
    """The log with new, different run times for the jobs at the given positions (unknown ones stay unknown)."""
    return [
        replace(j, run=j.run + rng.uniform(1, 3000)) if i in which and j.run != -1 else j for i, j in enumerate(jobs)
    ]


@pytest.mark.parametrize("seed", range(20))
def test_no_leak_of_a_job_or_later_jobs_run_times(seed: int) -> None:
    """Changing the run times of job k and of every job submitted after it changes nothing up to job k."""
    rng = random.Random(seed)
    jobs = random_log(rng)
    base = history_features(jobs)
    k = rng.randrange(len(jobs))
    later = {i for i, j in enumerate(jobs) if j.submit >= jobs[k].submit}
    changed = history_features(perturbed_runs(jobs, later, rng))
    for i, j in enumerate(jobs):
        if j.submit <= jobs[k].submit:
            assert changed[i] == base[i], (
                f"job {j.job} submitted at {j.submit} saw a run time from at or after {jobs[k].submit}"
            )


@pytest.mark.parametrize("seed", range(20))
def test_a_run_time_is_seen_only_once_the_job_has_ended(seed: int) -> None:
    """Changing one job's run time changes no job submitted before it ends (either end); later ones do change."""
    rng = random.Random(seed)
    jobs = random_log(rng)
    k = max(
        range(len(jobs)), key=lambda i: sum(j.user == jobs[i].user and j.submit > (jobs[i].end or 1e9) for j in jobs)
    )
    base = history_features(jobs)
    new = perturbed_runs(jobs, {k}, rng)
    changed = history_features(new)
    horizon = min(jobs[k].end, new[k].end)
    before = [i for i, j in enumerate(jobs) if j.submit < horizon]
    assert before and all(changed[i] == base[i] for i in before)
    assert any(changed[i] != base[i] for i, j in enumerate(jobs) if j.submit >= horizon and j.user == jobs[k].user)


@pytest.mark.parametrize("seed", range(5))
def test_own_run_and_wait_never_change_own_features(seed: int) -> None:
    rng = random.Random(seed)
    jobs = random_log(rng)
    base = history_features(jobs)
    for i in rng.sample(range(len(jobs)), 20):
        own = replace(jobs[i], run=rng.uniform(0, 1e5), wait=rng.uniform(0, 1e3))
        assert history_features([*jobs[:i], own, *jobs[i + 1 :]])[i] == base[i]


def test_no_leak_on_the_real_wagap_log() -> None:
    """On the real log: perturb job k and all later jobs, then job k alone; earlier features stay as they were."""
    log = read_swf(trace("wagap-2013.swf"))
    jobs, rng = log.jobs, random.Random(7)
    base = history_features(jobs, log.start_time, log.timezone)
    k = len(jobs) // 2
    changed = history_features(perturbed_runs(jobs, set(range(k, len(jobs))), rng), log.start_time, log.timezone)
    assert changed[: k + 1] == base[: k + 1]  # the log is in submit order
    assert changed[k + 1 :] != base[k + 1 :]
    alone = perturbed_runs(jobs, {k}, rng)
    changed = history_features(alone, log.start_time, log.timezone)
    horizon = min(jobs[k].end, alone[k].end)
    before = [i for i, j in enumerate(jobs) if j.submit < horizon]
    assert before and all(changed[i] == base[i] for i in before)
    assert any(changed[i] != base[i] for i, j in enumerate(jobs) if j.user == jobs[k].user and j.submit >= horizon)

"""The scheduler-trained member as an estimate source, and the planning configuration chosen by replaying the past."""

from __future__ import annotations

import random
from dataclasses import asdict
from pathlib import Path

import pytest

from scheduler.specs import make_policy
from simulator.plan_choice import (
    Choice,
    LiveScore,
    PlanningConfig,
    Serving,
    candidates,
    choose,
    jobs_after,
    last_submit,
    live_score,
    replay_config,
)
from simulator.scenarios import parse_estimates
from simulator.simulate import simulate
from simulator.workload import Cluster, JobSpec, MachineSpec, PlatformSpec, Workload
from simulator.workloads import swf

SLOTS = 8


def write_log(path: Path, seed: int, jobs: int = 240, future_factor: float = 1.0, cut: float = 0.3) -> Path:
    """A small SWF log on one 8-CPU cluster: 6 users, each with a typical run; runs after ``cut`` x ``future_factor``."""
    rng = random.Random(seed)
    lines, t = ["; UnixStartTime: 1000000000"], 0
    typical = {user: rng.choice([60, 300, 1800, 7200]) for user in range(6)}
    for i in range(1, jobs + 1):
        t += int(rng.expovariate(1 / 400))
        user = rng.randrange(6)
        run = max(1, int(typical[user] * rng.lognormvariate(0, 0.4) * (future_factor if i > cut * jobs else 1.0)))
        request, procs = int(run * rng.choice([1.5, 2, 5, 10])), rng.choice([1, 1, 2, 4, 8])
        lines.append(f"{i} {t} 0 {run} {procs} -1 -1 {procs} {request} -1 1 {user} 1 -1 1 -1 -1 -1")
    path.write_text("\n".join(lines) + "\n")
    path.with_name(path.name + ".machines").write_text("0 pool 4 2 1.0 1000\n")
    return path


def user_log(runs: list[tuple[float, float, float]]) -> Workload:
    """One user's jobs (submit, run, request) on a one-slot machine, with the request as a feature."""
    jobs = [
        JobSpec(
            f"j{i}",
            submit,
            "log",
            {"p": run},
            params={"job": i, "user": 1, "requested_time": request},
            features={"request.time": request, "request.procs": 1.0},
        )
        for i, (submit, run, request) in enumerate(runs)
    ]
    return Workload("toy", jobs, Cluster({"p": PlatformSpec("p")}, [MachineSpec("m", "p")]))


def served(oracle, w: Workload) -> list[float]:
    return [oracle.estimate(j.algorithm, j.params, features=j.features)["p"].seconds for j in w.jobs]


def test_the_online_source_learns_only_from_jobs_that_ended_before_a_submission():
    # j1 is submitted while j0 still runs: its estimate must be the same whatever j0's run turns out to be
    runs = [(0, 500, 5000), (10, 100, 5000), (2000, 100, 5000)]
    answers = []
    for first in (500, 4000):
        w = user_log([(0, first, 5000), *runs[1:]])
        oracle = parse_estimates("online").oracle(w)
        simulate(w, make_policy("fcfs"), oracle)
        answers.append(served(oracle, w))
    assert answers[0][:2] == answers[1][:2]
    assert answers[0][2] != answers[1][2]  # j2 came after j0 ended: it learned from it


def test_the_online_source_learns_a_known_asymmetric_target_on_a_hand_made_log():
    # every run is a quarter of its request, times a log-normal error; linear sides with under-estimates weighted 9
    # ask for the 90 % quantile, both weighted 1 for the median
    rng = random.Random(3)
    rows, t = [], 0.0
    for _ in range(3000):
        t += 4000
        request = rng.choice([600, 3600, 14400, 36000])
        rows.append((t, request / 4 * rng.lognormvariate(0, 0.5), request))
    w = user_log(rows)
    shares = {}
    for weight in (1, 9):
        oracle = parse_estimates(f"online:under=absolute,over=absolute,under_weight={weight}").oracle(w)
        simulate(w, make_policy("fcfs"), oracle)
        late = list(zip(served(oracle, w), (r for _, r, _ in rows), strict=True))[1500:]
        shares[weight] = sum(e >= r for e, r in late) / len(late)
    assert shares[1] == pytest.approx(0.5, abs=0.12)
    assert shares[9] == pytest.approx(0.9, abs=0.06)


def test_the_sc15_preset_learns_seconds_and_weights_by_area():
    options = parse_estimates("sc15").options
    assert options is not None and (options.log, options.area, options.under, options.over) == (
        False,
        True,
        "squared",
        "absolute",
    )
    quantile = parse_estimates("online:plan=quantile,level=0.75").options
    assert quantile is not None and (quantile.plan, quantile.level) == ("quantile", 0.75)


def test_a_choice_never_reads_the_jobs_after_its_window(tmp_path: Path):
    # two logs with the same past and a different future (every run after the 30 % mark ten times longer)
    same = write_log(tmp_path / "a.swf", seed=1)
    other = write_log(tmp_path / "b.swf", seed=1, future_factor=10.0)
    windows = [swf.replay(p, train_fraction=0.15, stop_fraction=0.3) for p in (same, other)]
    assert [(j.params, j.true_times, j.features) for j in windows[0].jobs] == [
        (j.params, j.true_times, j.features) for j in windows[1].jobs
    ]
    grid = candidates("easy")[:6]
    choices = [choose([w], "easy", grid=grid) for w in windows]
    assert choices[0].scores == choices[1].scores and choices[0].chosen == choices[1].chosen
    # while the whole replays after the 30 % history do differ
    assert (
        replay_config(swf.replay(same), "easy", grid[0]).metrics
        != replay_config(swf.replay(other), "easy", grid[0]).metrics
    )


def test_the_guard_keeps_the_serving_configuration_unless_a_candidate_wins_by_the_margin(tmp_path: Path):
    window = swf.replay(write_log(tmp_path / "c.swf", seed=4, jobs=400), train_fraction=0.15, stop_fraction=0.6)
    incumbent = PlanningConfig("requested", order="fcfs")
    grid = [PlanningConfig("requested", order=order) for order in ("sjbf", "saf")]
    free = choose([window], "easy", incumbent, margin=0.0, grid=grid)
    best = min(free.scores.values())
    assert free.scores[incumbent] == 1.0 > best, "the hand-made log must let a candidate beat FCFS order"
    assert free.promoted and free.chosen != incumbent and free.scores[free.chosen] == best
    assert best == pytest.approx(free.raw[free.chosen][0] / free.raw[incumbent][0])
    strict = choose([window], "easy", incumbent, margin=min(0.99, 1 - best + 0.01), grid=grid)
    assert not strict.promoted and strict.chosen == incumbent and "kept" in strict.reason
    assert strict.record()["incumbent_score"] == strict.record()["chosen_score"] == 1.0


def quiet_log(path: Path, jobs: int = 60) -> Path:
    """Jobs a day apart on the 8-CPU cluster: none ever waits, so every configuration schedules them alike."""
    lines = ["; UnixStartTime: 1000000000"]
    lines += [f"{i} {i * 86_400} 0 600 1 -1 -1 1 3600 -1 1 {i % 3} 1 -1 1 -1 -1 -1" for i in range(1, jobs + 1)]
    path.write_text("\n".join(lines) + "\n")
    path.with_name(path.name + ".machines").write_text("0 pool 4 2 1.0 1000\n")
    return path


def test_a_candidate_better_on_one_window_alone_is_not_promoted(tmp_path: Path):
    """A mean moved by one busy window while the others tie is one stretch's accident: most windows must agree."""
    busy = swf.replay(write_log(tmp_path / "c.swf", seed=4, jobs=400), train_fraction=0.15, stop_fraction=0.6)
    quiet = swf.replay(quiet_log(tmp_path / "q.swf"), train_fraction=0.2)
    incumbent = PlanningConfig("requested", order="fcfs")
    grid = [PlanningConfig("requested", order=order) for order in ("sjbf", "saf")]
    alone = choose([busy], "easy", incumbent, margin=0.0, grid=grid)
    assert alone.promoted, "the busy window alone must let a candidate beat FCFS order"
    diluted = choose([quiet, busy, quiet], "easy", incumbent, margin=0.0, grid=grid)
    assert diluted.scores[diluted.challenger] < 1.0 and not diluted.promoted and diluted.chosen == incumbent
    assert "better by 0% on 1 of 3 window(s): not on most, kept" in diluted.reason
    assert diluted.decision_row("toy", "test")["challenger"] == diluted.challenger.label("easy")
    outvoted = choose([busy, quiet, busy], "easy", incumbent, margin=0.0, grid=grid)
    assert outvoted.promoted and outvoted.chosen == alone.chosen


def test_choices_refuse_unknown_objectives_and_margins(tmp_path: Path):
    window = swf.replay(write_log(tmp_path / "d.swf", seed=2, jobs=60), train_fraction=0.5)
    with pytest.raises(ValueError, match="objective"):
        choose([window], "easy", objective="fastest", grid=[])
    with pytest.raises(ValueError, match="margin"):
        choose([window], "easy", margin=1.5, grid=[])
    with pytest.raises(ValueError, match="window"):
        choose([], "easy", grid=[])


def test_the_site_starts_from_its_own_rule_and_the_service_plans_with_what_production_serves(tmp_path: Path):
    """EASY++ (the users' last two runs) is what a backfilling site has, the requests what an EDF one has; the service's
    numbers are its learning loop's answers, the same for every configuration that plans with them."""
    from simulator.plan_choice import service_answers, site_rule

    assert site_rule("easy") == PlanningConfig("last-two", "point", "tsafrir", "sjbf")
    assert site_rule("edf").source == "requested"
    easy = candidates("easy")
    assert site_rule("easy") in easy and {c.source for c in easy} == {"last-two", "requested", "service"}
    assert all(c.number == "point" and c.correction != "quantile" for c in easy if c.source != "service")
    # the site's rules with two corrections x three orders each, the service with two numbers x three x three
    assert [len(candidates(f)) for f in ("easy", "conservative", "edf")] == [30, 10, 4]
    window = swf.replay(write_log(tmp_path / "e.swf", seed=5, jobs=120), train_fraction=0.4)
    answers = service_answers(window)
    assert set(answers.answers) == {f"{j.algorithm}|{j.params}" for j in window.jobs} or len(answers.answers) == len(
        window.jobs
    )
    served = [e for row in answers.answers.values() for e in row.values()]
    assert served and all(e.model_name and e.model_name.startswith("runtime-") for e in served)
    point, high = answers.planned(None), answers.planned(0.75)
    job = window.jobs[-1]
    assert (
        high.estimate(job.algorithm, job.params)["pool"].seconds
        >= point.estimate(job.algorithm, job.params)["pool"].seconds
    )
    with pytest.raises(ValueError, match="not a planning configuration"):
        PlanningConfig.from_record({"source": "last-two", "number": "q0.75"})  # the site's rules have no quantiles
    with pytest.raises(ValueError, match="not a planning configuration"):
        PlanningConfig.from_record({"loss": "sc15"})  # a decision recorded before the service planned


EASY_PLUS_PLUS = PlanningConfig("last-two", "point", "tsafrir", "sjbf")
REQUESTS = PlanningConfig("requested", "point", "tsafrir", "sjbf")


def drifting_log(path: Path, seed: int = 3, jobs: int = 300, cut: float = 0.5) -> tuple[Path, float]:
    """A busy SWF log on one 8-CPU cluster whose users change at ``cut``: before it each user runs alike and asks at
    random (1.2x or 100x the run), so the last two runs plan better than the requests; after it each user's runs
    alternate between 30 s and 50 min and the requests are right (1.2x), so the requests plan better. With the log and
    the last submission before the cut (what a decision made then had seen)."""
    rng = random.Random(seed)
    lines, t, since = ["; UnixStartTime: 1000000000"], 0, 0
    typical = {user: rng.choice([30, 300, 3000]) for user in range(6)}
    for i in range(1, jobs + 1):
        t += int(rng.expovariate(1 / 300))
        user = rng.randrange(6)
        if i <= cut * jobs:
            run = max(1, int(typical[user] * rng.lognormvariate(0, 0.1)))
            request, since = run * rng.choice([1.2, 100]), t
        else:
            run = rng.choice([30, 3000])
            request = run * 1.2
        procs = rng.choice([1, 2, 4, 8])
        lines.append(f"{i} {t} 0 {run} {procs} -1 -1 {procs} {int(request)} -1 1 {user} 1 -1 1 -1 -1 -1")
    path.write_text("\n".join(lines) + "\n")
    path.with_name(path.name + ".machines").write_text("0 pool 4 2 1.0 1000\n")
    return path, float(since)


def test_the_live_score_finds_a_choice_the_jobs_after_it_made_lose(tmp_path: Path):
    """Issue 39: EASY++ planned better than the requests before the decision (it was right to keep it); on the jobs
    after it the requests plan better by far more than the margin, and the live score says so."""
    log, since = drifting_log(tmp_path / "site.swf")
    before = swf.replay(log, train_fraction=0.2, stop_fraction=0.5)
    ours, theirs = (replay_config(before, "easy", c).metrics.avebsld for c in (EASY_PLUS_PLUS, REQUESTS))
    assert ours < theirs * 0.9  # the past: EASY++ ahead
    assert last_submit(log) > since
    after = jobs_after(log, since)
    assert len(after.jobs) == 150 and all(j.submit >= 0 for j in after.jobs)
    assert len(after.history) == 150  # every job before the decision is the history, none after it
    live = live_score(after, "easy", Serving(EASY_PLUS_PLUS, REQUESTS, since))
    assert live.jobs == 150 and live.score > 1.1 and live.behind(0.02) and not live.behind(0.5)
    row = live.reverted_row("site", "test", 0.02, last_submit(log))
    details = row["details"]
    assert row["decision"] == "reverted" and "behind by more than 2%" in str(row["reason"])
    assert details["config"] == asdict(REQUESTS) and details["runner_up"] == asdict(EASY_PLUS_PLUS)
    assert details["live"]["score"] == pytest.approx(1 / live.score) and details["live_since"] == last_submit(log)
    assert Serving.from_details(details) == Serving(REQUESTS, EASY_PLUS_PLUS, last_submit(log))


def test_a_kept_choice_carries_its_live_window_and_runner_up_a_new_one_starts_its_own():
    """The live window runs from when a configuration began to serve, against the runner-up of then; a promotion (or
    a first decision) starts both afresh, with the best other candidate of its own replay."""
    other = PlanningConfig("service", "point", "doubling", "saf")
    scores = {EASY_PLUS_PLUS: 1.0, REQUESTS: 1.05, other: 1.2}
    kept = Choice("easy", "avebsld", EASY_PLUS_PLUS, EASY_PLUS_PLUS, False, "kept", scores, 10, 0.0, {}, EASY_PLUS_PLUS)
    assert kept.runner_up == REQUESTS
    fresh = kept.decision_row("site", "t", seen_until=500.0)["details"]
    assert (fresh["runner_up"], fresh["live_since"], fresh["live"]) == (asdict(REQUESTS), 500.0, None)
    serving = Serving(EASY_PLUS_PLUS, other, 100.0)
    live = LiveScore("easy", "avebsld", EASY_PLUS_PLUS, other, 100.0, 120, 9.0, 10.0)
    carried = kept.decision_row("site", "t", seen_until=900.0, serving=serving, live=live)["details"]
    assert (carried["runner_up"], carried["live_since"], carried["seen_until"]) == (asdict(other), 100.0, 900.0)
    assert carried["live"]["score"] == pytest.approx(0.9) and carried["live"]["jobs"] == 120
    promoted = Choice("easy", "avebsld", EASY_PLUS_PLUS, other, True, "won", scores, 10, 0.0, {}, other)
    new = promoted.decision_row("site", "t", seen_until=900.0, serving=serving, live=live)["details"]
    assert (new["runner_up"], new["live_since"], new["live"]) == (asdict(EASY_PLUS_PLUS), 900.0, None)

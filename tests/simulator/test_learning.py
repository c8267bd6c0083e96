"""The ``service`` estimate source: the simulated scheduler asks the product, which retrains as simulated jobs end, by
production's own loop and settings."""

from __future__ import annotations

import math

import pytest

from scheduler.run_times import job_key
from scheduler.specs import make_policy
from simulator.learning import LearningOracle
from simulator.metrics import compute
from simulator.scenarios import parse_estimates
from simulator.simulate import simulate
from simulator.workloads import ncbi
from training.settings import WorkerSettings

MODELS = ("mean", "linear", "linear_log", "isotonic")
# a site's settings: these members, three windows, a retrain after 10 new runs and half again the champion's
SITE = {"PREDICTOR_TRAIN_MODELS": '["mean", "linear"]', "PREDICTOR_CV_FOLDS": "3"}


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    workload = ncbi.generate(hours=0.25, seed=1, per_type=2, types=("type1", "type2", "type6"), history_runs=12)
    settings = WorkerSettings(
        home=tmp_path_factory.mktemp("learning"),
        train_models=list(MODELS),
        cv_folds=3,
        retrain_min_new_runs=10,
        retrain_min_new_fraction=0.5,
    )
    oracle = LearningOracle(workload, settings)
    first = dict(oracle.book.alias)
    result = simulate(workload, make_policy("edf"), oracle, estimates="service")
    return workload, oracle, first, result


def test_champions_come_from_the_training_pipeline_on_the_history(run) -> None:
    workload, oracle, first, _ = run
    assert len(first) == 5 * 3  # every program on every machine type got a champion from its 12 history runs
    assert oracle.decisions[0]["trigger"] == "worker: no champion; 12 runs"
    assert {d["decision"] for d in oracle.decisions} <= {"promoted", "refreshed", "kept"}
    assert all(v.champion.tags["model_kind"] in (*MODELS, "median", "ensemble") for v in first.values())


def test_finished_jobs_are_stored_and_due_pairs_retrained_during_the_run(run) -> None:
    workload, oracle, first, result = run
    done = [j for j in result.jobs if j.status == "done"]
    assert len(done) == len(workload.jobs) > 100
    assert oracle.store.count() == len(workload.history) + len(done)
    later = [d for d in oracle.decisions if "no champion" not in d["trigger"]]
    assert later and all(" new runs since " in d["trigger"] or "live RAE" in d["trigger"] for d in later)
    moved = [pair for pair, version in oracle.book.alias.items() if version is not first[pair]]
    assert moved, "no champion was refreshed or replaced as runs arrived"
    assert oracle.costs.retrains == len(oracle.decisions) and oracle.costs.train_cpu_s > 0


def test_the_scheduler_was_served_the_oracle_s_answers(run) -> None:
    workload, oracle, _, result = run
    assert len(oracle.served) == len(workload.jobs)
    served = [e for answer in oracle.served.values() for e in answer.values()]
    assert served and all(e.model_name.startswith("runtime-") and e.seconds > 0 for e in served)
    assert all(0 < e.lower <= e.seconds <= e.upper <= e.limit for e in served)
    assert compute(result).unfinished == 0


def test_the_spec_learns_as_the_settings_say_and_refuses_learning_options(monkeypatch) -> None:
    """The source runs production's members, folds and retrain rule (the settings'); only the planning number is its own."""
    for name, value in SITE.items():
        monkeypatch.setenv(name, value)
    workload = ncbi.generate(hours=0.02, seed=0, per_type=1, types=("type2",), history_runs=5)
    oracle = parse_estimates("service").oracle(workload)
    assert isinstance(oracle, LearningOracle) and oracle.settings.train_models == ["mean", "linear"]
    assert oracle.settings.cv_folds == 3
    with pytest.raises(
        ValueError, match="estimates 'service' has no option 'models'; its options: plan, limit_quantile"
    ):
        parse_estimates("service:models=mean").oracle(workload)


def test_planning_with_the_limit_hands_the_scheduler_the_served_limit(monkeypatch) -> None:
    for name, value in SITE.items():
        monkeypatch.setenv(name, value)
    workload = ncbi.generate(hours=0.02, seed=0, per_type=1, types=("type2",), history_runs=5)
    oracle = parse_estimates("service:plan=limit,limit_quantile=0.9").oracle(workload)
    assert oracle.settings.limit_quantile == 0.9
    assert workload.jobs
    spec = workload.jobs[0]
    planned = oracle.estimate(spec.algorithm, spec.params, features=spec.features)
    served = oracle.served[next(iter(oracle.served))]
    assert planned and all(e.seconds == served[p].limit > served[p].seconds for p, e in planned.items())


def test_the_served_quantiles_climb_from_the_point_to_the_limit(monkeypatch) -> None:
    for name, value in SITE.items():
        monkeypatch.setenv(name, value)
    workload = ncbi.generate(
        hours=0.02, seed=0, per_type=1, types=("type2",), history_runs=20
    )  # 10 forward residuals per pair
    oracle = parse_estimates("service").oracle(workload)
    assert workload.jobs
    spec = workload.jobs[0]
    served = oracle.estimate(spec.algorithm, spec.params, features=spec.features)
    job = spec.job()
    assert served
    for platform, estimate in served.items():
        ladder = oracle.quantiles(job, platform)
        recorded = dict(oracle.served_by[job_key(job.algorithm, job.params)][platform].quantiles)
        # one rung per recorded level above the median (0.75 ... 0.99) that lies above the point, plus upper and limit
        assert len(ladder) >= 2 and list(ladder) == sorted(ladder) and ladder[0] > estimate.seconds
        assert estimate.upper in ladder and estimate.limit in ladder
        assert ladder[-1] == pytest.approx(max(estimate.limit, estimate.seconds * math.exp(recorded[0.99])))

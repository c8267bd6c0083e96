"""End to end: a store of synthetic runs -> training with real MLflow on SQLite -> champions that predict."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import mlflow
import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from cli.app import app
from models import available_models
from models.zoo import NEEDS
from predictor.domain import Measurement
from predictor.intervals import QUANTILE_LEVELS
from predictor.registry import registry_client
from predictor.store import MeasurementStore
from tests.training.kit import served_champion
from training.champions import best_candidate, list_champions, registered_name
from training.dataset import load_training_sets
from training.folds import FoldPlan
from training.metrics import compute_metrics
from training.pipeline import (
    DEFAULT_MODELS,
    TrainingOutcome,
    count_steps,
    fold_plan_path,
    run_training,
)
from training.report import REPORT_METRICS, NoSession, champion_lead, latest_session
from training.settings import TrainingSettings
from training.tracking import OUT_OF_FOLD, Candidate, load_out_of_fold

SPEED = {"fast": 1.0, "slow": 3.0}
# A few members of each kind (baseline, linear, trees, Weka-like) keep the module quick; the zoo has its own tests.
FIRST_MODELS = ("mean", "profile_mean", "linear_log", "lightgbm")


def _measurements(start: int = 0, n: int = 40, seed: int = 3) -> list[Measurement]:
    """Seconds ~ speed * 0.002 * length * sequences: ``n`` runs per platform, a failed run, a pair too small to train."""
    rng = np.random.default_rng(seed)
    runs = []
    for platform, speed in SPEED.items():
        for i in range(start, start + n):
            length, count = float(rng.uniform(100, 5000)), float(rng.integers(2, 50))
            seconds = speed * 0.002 * length * count * float(rng.lognormal(0, 0.05))
            runs.append(
                Measurement(
                    run_id=f"{platform}-{i:02d}",
                    algorithm="align",
                    platform=platform,
                    features={"input.length": length, "input.sequences": count},
                    wall_seconds=seconds,
                )
            )
    failed = {"input.length": 1.0, "input.sequences": 1.0}
    if start:
        return runs
    runs.append(
        Measurement(
            run_id="failed", algorithm="align", platform="fast", features=failed, wall_seconds=1e6, exit_status=1
        )
    )
    runs += [Measurement(run_id=f"tiny-{i}", algorithm="search", platform="fast", wall_seconds=1) for i in range(2)]
    return runs


@dataclass
class Trained:
    settings: TrainingSettings
    store: MeasurementStore
    first: list[TrainingOutcome]
    unchanged: list[TrainingOutcome]
    second: list[TrainingOutcome]
    newcomer: list[TrainingOutcome]
    labels: list[str]
    steps: int

    @property
    def client(self) -> mlflow.MlflowClient:
        """A client of the tracking store and registry the sessions wrote to (MLflow's process-wide URI is not theirs)."""
        return registry_client(self.settings.resolved_tracking_uri)


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> Trained:
    """Two training sessions over one store and one tracking database: four models, then two."""
    home = tmp_path_factory.mktemp("training")
    settings = TrainingSettings(
        home=home,
        mlflow_tracking_uri=f"sqlite:///{home / 'mlflow.db'}",
        mlflow_artifact_root=home / "artifacts",
        cv_folds=5,
        selection_metric="rae",
        n_jobs=1,
    )
    store = MeasurementStore(f"sqlite:///{home / 'store.db'}")
    store.migrate()
    store.add(_measurements())
    labels: list[str] = []
    steps = count_steps(settings, load_training_sets(store), models=FIRST_MODELS)
    first = run_training(settings, store, models=FIRST_MODELS, progress=labels.append)
    unchanged = run_training(settings, store, algorithms=["align"], models=["mean", "linear_log"])
    store.add(_measurements(start=40, n=20, seed=4))  # new runs: the champion's member is refreshed on them
    second = run_training(settings, store, algorithms=["align"], models=["mean", "linear_log"])
    newcomer = run_training(settings, store, algorithms=["align"], models=["mean"])  # the mean cannot take over
    yield Trained(settings, store, first, unchanged, second, newcomer, labels, steps)
    store.dispose()


def test_each_pair_gets_a_champion_chosen_by_rae(trained: Trained) -> None:
    pairs = [(o.algorithm, o.platform, o.version) for o in trained.first]
    assert pairs == [("align", "fast", "1"), ("align", "slow", "1")]
    for outcome in trained.first:
        assert list(outcome.metrics) == [*FIRST_MODELS, "median", "ensemble"]  # the site's rule is always a candidate
        assert outcome.challenger == min(FIRST_MODELS, key=lambda m: outcome.metrics[m]["rae"])
        assert outcome.serving == outcome.challenger and outcome.decision.verdict.value == "promoted"
        assert outcome.decision.reason.startswith(
            f"no champion served before; {outcome.challenger} beats the rule median"
        )
        assert outcome.metric == "rae"
        assert outcome.metrics[outcome.challenger]["rae"] < 20 < outcome.metrics["mean"]["rae"]


def test_progress_is_reported_once_per_fit(trained: Trained) -> None:
    assert len(trained.labels) == trained.steps + 2  # and once per registered version
    assert trained.labels[0] == "align/fast mean fold 1/5"
    registered = sorted(label for label in trained.labels if "registered as version" in label)
    assert registered == [f"align/{o.platform} {o.challenger} registered as version 1" for o in trained.first]
    assert sorted(trained.labels[-2:]) == registered


def test_runs_are_tracked_per_algorithm_with_children_per_candidate(trained: Trained) -> None:
    experiment = trained.client.get_experiment_by_name("runtime/align")
    assert experiment.artifact_location == (trained.settings.resolved_artifact_root / "align").as_uri()
    order = ["attributes.start_time ASC"]
    runs = trained.client.search_runs([experiment.experiment_id], order_by=order)
    parents = [r for r in runs if "mlflow.parentRunId" not in r.data.tags]
    children = [r for r in runs if r.data.tags.get("mlflow.parentRunId") == parents[0].info.run_id]
    assert len(parents) == 4 and len(children) == 2 * (len(FIRST_MODELS) + 2)  # with the median rule and the ensemble
    child = next(r for r in children if r.data.tags["model_kind"] == "linear_log" and r.data.tags["platform"] == "fast")
    assert child.data.params["n_rows"] == "40" and child.data.params["n_features"] == "2"
    assert "cv_rae" in child.data.metrics and "fit_seconds" in child.data.metrics
    assert 0.0 <= child.data.metrics["cv_interval_coverage"] <= 1.0
    assert child.data.tags["target_transform"] == "log" and child.data.params["interval_nominal_coverage"] == "0.9"
    history = trained.client.get_metric_history(child.info.run_id, "fold_rae")
    assert [m.step for m in history] == [0, 1, 2, 3, 4]
    artifacts = {a.path for a in trained.client.list_artifacts(child.info.run_id)}
    assert {"pred_vs_actual.svg", "relative_errors.svg", "folds.csv", "features.json", OUT_OF_FOLD} <= artifacts
    assert "residual_log_quantiles.json" in artifacts and "learning_curve.svg" not in artifacts


def test_each_candidate_logs_its_out_of_fold_predictions(trained: Trained) -> None:
    report = latest_session(trained.settings, "align", "fast")
    row = next(r for r in report.rows if r.model == "linear_log")
    folder = mlflow.artifacts.download_artifacts(run_id=row.run_id, tracking_uri=trained.settings.resolved_tracking_uri)
    table = pd.read_csv(f"{folder}/{OUT_OF_FOLD}", dtype={"run_id": str})
    plan = FoldPlan.load(f"{folder}/folds.csv")
    assert list(table.columns) == [
        "run_id",
        "job",
        "fold",
        "measured_seconds",
        "predicted_seconds",
        "prior_seconds",
        "censored",
    ]
    assert plan.scheme == "forward" and (table["fold"] == -1).sum() == 30  # the earlier half only trains
    assert table.loc[table["fold"] == -1, "predicted_seconds"].isna().all()
    assert table["run_id"].tolist() == plan.run_ids and (table["fold"].to_numpy() == plan.folds).all()
    scored = table[table["fold"] >= 0]
    recomputed = compute_metrics(scored["measured_seconds"], scored["predicted_seconds"], scored["prior_seconds"])
    assert recomputed["rae"] == pytest.approx(row.metrics["rae"])


def test_load_champion_predicts_in_seconds(trained: Trained) -> None:
    for platform, speed in SPEED.items():
        champion = served_champion(trained.settings, "align", platform)
        assert champion is not None
        assert champion.version == "2" and champion.tags["model_kind"] == "linear_log"  # the refreshed one, not v3
        assert champion.feature_names == ["input.length", "input.sequences"]
        X = pd.DataFrame({"input.length": [1000.0], "input.sequences": [10.0]})
        expected = speed * 0.002 * 1000 * 10
        assert champion.model.predict(X)[0] == pytest.approx(expected, rel=0.5)


def test_training_again_on_the_same_runs_changes_nothing(trained: Trained) -> None:
    assert [o.platform for o in trained.unchanged] == ["fast", "slow"]
    for outcome in trained.unchanged:
        assert outcome.decision.verdict.value == "kept" and outcome.registered == [] and outcome.version == "1"
        assert "no runs since version 1 was trained" in outcome.decision.reason


def test_new_runs_refresh_the_champion_and_keep_the_old_version(trained: Trained) -> None:
    assert [(o.version, o.decision.verdict.value) for o in trained.second] == [("2", "refreshed"), ("2", "refreshed")]
    client = trained.client
    for outcome in trained.first:
        name = registered_name("align", outcome.platform)
        assert str(client.get_model_version_by_alias(name, "champion").version) == "2"
        old = client.get_model_version(name, "1")
        assert old.tags["model_kind"] == outcome.challenger and "champion" not in old.aliases
    for outcome in trained.second:
        assert "refreshed minus served on 20 new run(s)" in outcome.decision.reason
        assert outcome.n_rows == 60
    assert [v.name for v in list_champions(trained.settings.resolved_tracking_uri)] == [
        "runtime-align-fast",
        "runtime-align-slow",
    ]


def test_a_worse_challenger_is_registered_but_does_not_take_the_alias(trained: Trained) -> None:
    client = trained.client
    assert [o.platform for o in trained.newcomer] == ["fast", "slow"]
    for outcome in trained.newcomer:
        # the mean served as the oracle serves it (the envelope's law beyond it) against the site's rule, the measured
        # median: the better of the two stands as the challenger, and loses to the power law
        assert outcome.challenger in ("mean", "median") and outcome.decision.verdict.value == "kept"
        assert outcome.decision.reason.startswith("mean ") and " the rule median" in outcome.decision.reason
        assert f"; {outcome.challenger} does not beat linear_log: RAE +" in outcome.decision.reason
        assert outcome.registered == ["3"] and outcome.version == "2" and outcome.serving == "linear_log"
        name = registered_name("align", outcome.platform)
        assert str(client.get_model_version_by_alias(name, "champion").version) == "2"
        challenger = client.get_model_version(name, "3")
        assert challenger.tags["role"] == "challenger" and challenger.tags["guard_verdict"] == "kept"
        assert challenger.tags["model_kind"] == outcome.challenger


def test_the_oracle_loads_what_training_registered(trained: Trained) -> None:
    champion = served_champion(trained.settings, "align", "slow")
    assert champion is not None
    assert champion.feature_names == ["input.length", "input.sequences"]
    assert champion.metrics["rae"] == pytest.approx(trained.second[1].metrics[champion.tags["model_kind"]]["rae"])


def test_pairs_without_enough_runs_are_skipped(trained: Trained) -> None:
    assert served_champion(trained.settings, "search", "fast") is None
    assert trained.client.get_experiment_by_name("runtime/search") is None


def test_unknown_models_and_metrics_are_refused_before_training(trained: Trained) -> None:
    with pytest.raises(ValueError, match="unknown or no models: nope"):
        run_training(trained.settings, trained.store, models=["mean", "nope"])
    bad = trained.settings.model_copy(update={"selection_metric": "cc"})
    with pytest.raises(ValueError, match="cannot select champions by 'cc'"):
        run_training(bad, trained.store)


def test_best_candidate_takes_the_lowest_and_never_nan() -> None:
    def candidate(name: str, rae: float) -> Candidate:
        return Candidate(name, run_id=name, metrics={"rae": rae})

    candidates = [candidate("a", float("nan")), candidate("b", 30.0), candidate("c", 12.0), candidate("d", 12.0)]
    assert best_candidate(candidates, "rae").model_name == "c"
    with pytest.raises(ValueError, match="no candidates"):
        best_candidate([], "rae")


def test_champions_carry_interval_quantiles_and_nominal_coverage(trained: Trained) -> None:
    champion = served_champion(trained.settings, "align", "fast")
    assert champion is not None
    quantiles = champion.residual_quantiles
    assert sorted(quantiles) == sorted(QUANTILE_LEVELS)
    assert quantiles[0.05] <= quantiles[0.5] <= quantiles[0.95]
    assert champion.tags["interval_coverage"] == "0.9" and champion.tags["target_transform"] == "log"
    assert 0.0 <= champion.metrics["interval_coverage"] <= 1.0
    source = trained.client.get_run(champion.tags["source_run_id"])
    assert json.loads(champion.tags["residual_log_quantiles"]) == mlflow.artifacts.load_dict(
        f"{source.info.artifact_uri}/residual_log_quantiles.json"
    )


def test_fold_plans_are_written_for_peer_tools(trained: Trained) -> None:
    for platform in SPEED:
        plan = FoldPlan.load(fold_plan_path(trained.settings, "align", platform))
        assert plan.run_ids == sorted(f"{platform}-{i:02d}" for i in range(60)) and plan.n_folds == 5


def test_the_parent_run_names_each_platforms_champion(trained: Trained) -> None:
    experiment = trained.client.get_experiment_by_name("runtime/align")
    latest = trained.client.search_runs(
        [experiment.experiment_id], "attributes.run_name = 'train-align'", order_by=["attributes.start_time DESC"]
    )[0]
    assert latest.data.tags["champion.fast"] == "linear_log" and latest.data.tags["champion_version.slow"] == "2"
    assert latest.data.tags["challenger.fast"] == "median" and latest.data.tags["guard.fast"] == "kept"
    assert latest.data.tags["metric.fast"] == "rae"


def test_default_models_apply_only_where_their_features_exist(trained: Trained) -> None:
    defaults = [m for m in DEFAULT_MODELS if m in available_models()]
    history = {m for m in defaults if NEEDS[m].features}  # members that read named job-history columns
    assert {"last_two_mean", "requested_time", "online_area_log"} <= history
    rules = {m for m in available_models() if NEEDS[m].rule and not NEEDS[m].features}  # the median, always a candidate
    per_platform = 5 * len((set(defaults) | rules) - history) + 1  # every fold fit, and the champion's refit
    assert count_steps(trained.settings, load_training_sets(trained.store)) == 2 * per_platform


def test_only_what_is_served_is_refitted(trained: Trained) -> None:
    client = trained.client
    champion = served_champion(trained.settings, "align", "fast")
    assert champion is not None
    assert client.get_run(champion.tags["source_run_id"]).data.metrics["refit_seconds"] > 0
    experiment = trained.client.get_experiment_by_name("runtime/align")
    baselines = [
        run
        for kind in ("mean", "median")
        for run in trained.client.search_runs([experiment.experiment_id], f"tags.model_kind = '{kind}'")
    ]
    refitted = [run for run in baselines if "refit_seconds" in run.data.metrics]
    assert len(baselines) == 16 and len(refitted) == 2  # four sessions; only the newcomer's challengers were registered


def test_report_reads_the_latest_session(trained: Trained) -> None:
    session = latest_session(trained.settings, "align", "fast")
    rows = {r.model: r for r in session.rows}
    assert set(rows) == {"linear_log", "mean", "median"} and session.nominal_coverage == 0.9  # the newcomer's session
    best, baseline = rows["linear_log"], rows["mean"]
    assert best.champion and not baseline.champion and best.target_transform == "log"
    assert set(best.metrics) == set(REPORT_METRICS) and best.fit_seconds > 0
    assert 0 < best.metrics["rae"] < baseline.metrics["rae"]
    with pytest.raises(NoSession, match="no finished training session of 'search'"):
        latest_session(trained.settings, "search")


def test_report_sets_the_champion_against_the_runner_up(trained: Trained) -> None:
    session = latest_session(trained.settings, "align", "fast")
    lead = champion_lead(session, "fast")
    assert lead is not None and lead.champion == "linear_log" and lead.n_jobs == 30  # the later half, scored
    runner_up = next(r for r in session.rows if not r.champion)
    champion = next(r for r in session.rows if r.champion)
    assert lead.runner_up == runner_up.model
    for metric, difference in lead.differences.items():
        scale = 100.0 if metric in ("male", "mdale") else 1.0  # the bootstrap counts log errors in hundredths of ln
        assert difference.observed == pytest.approx(scale * (champion.metrics[metric] - runner_up.metrics[metric]))
        assert difference.low <= difference.observed <= difference.high


def test_a_run_without_out_of_fold_predictions_is_named(trained: Trained) -> None:
    session = latest_session(trained.settings, "align", "fast")
    with pytest.raises(FileNotFoundError, match=f"run {session.run_id} has no {OUT_OF_FOLD}"):
        load_out_of_fold(
            trained.settings.resolved_tracking_uri, session.run_id
        )  # the session's parent run logs no candidate files


def test_report_command_prints_the_table(trained: Trained) -> None:
    env = {"PREDICTOR_HOME": str(trained.settings.home)}
    result = CliRunner().invoke(app, ["report", "--algorithm", "align", "--platform", "slow"], env=env)
    assert result.exit_code == 0, result.output
    assert "align on slow" in result.output and "align on fast" not in result.output
    assert "* linear_log" in result.output and "RAE%" in result.output and "cover" in result.output
    assert "champion linear_log minus runner-up" in result.output and "paired bootstrap over 30 jobs" in result.output
    missing = CliRunner().invoke(app, ["report", "--algorithm", "search"], env=env)
    assert missing.exit_code == 2


def test_train_command_prints_plain_progress_lines_in_a_pipe(tmp_path: Path) -> None:
    store = MeasurementStore(f"sqlite:///{tmp_path / 'store.db'}")  # the default store of PREDICTOR_HOME=tmp_path
    store.migrate()
    store.add(_measurements())
    store.dispose()
    env = {"PREDICTOR_HOME": str(tmp_path), "PREDICTOR_CV_FOLDS": "3", "PREDICTOR_N_JOBS": "1"}
    result = CliRunner().invoke(app, ["train", "--model", "mean", "--model", "linear_log"], env=env)
    assert result.exit_code == 0, result.output
    total = 2 * (3 * 3 + 1)  # the two members and the median rule, three windows each, and each pair's judgement
    lines = [line for line in result.stdout.splitlines() if line.startswith("training: ")]
    assert len(lines) >= 2, result.stdout
    assert re.match(rf"training: 1/{total} \(5%\), \d+s elapsed: align/fast mean fold 1/3$", lines[0])
    # judging each pair and registering each version add steps beyond the estimate: the count catches up at the end
    assert re.match(r"training: (\d+)/\1 \(100%\), \d+s elapsed: align/\w+ \w+ registered as version 1$", lines[-1])

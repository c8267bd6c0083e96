"""Peak memory as a second target: training sets of bytes, a champion of its own under ``memory-…``, killed runs as bounds.

A store of runs whose peak memory grows with their input (and their time too), trained for both targets
with real MLflow on SQLite.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from models.zoo import applicable
from predictor.domain import Measurement, Target
from predictor.registry import CHAMPION_ALIAS, ENVELOPE_ARTIFACT, registered_name, registry_client
from predictor.store import MeasurementStore
from training.champions import list_champions, load_registered
from training.dataset import DatasetError, load_training_sets, training_set_from_frame
from training.guard import Verdict
from training.pipeline import TrainingOutcome, count_steps, decision_row, fold_plan_path, run_training, train
from training.report import latest_session, tracked_algorithms
from training.settings import TrainingSettings
from training.tracking import experiment_name

MODELS = ("mean", "linear", "linear_log")


def peak_kb(size: np.ndarray | float) -> np.ndarray | float:
    """The peak memory of a run on an input of ``size``, KB: 20 MB of program and 300 KB per unit of input."""
    return 20_000 + 300 * size


def runs(
    n: int, *, start: int = 0, seed: int = 0, oom_kb: float | None = None, measured: bool = True
) -> list[Measurement]:
    """``n`` runs of tool on cpu; those whose peak would pass ``oom_kb`` are killed there (censored at the limit)."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(start, start + n):
        size = float(rng.uniform(10, 1000))
        kb = float(peak_kb(size) * rng.lognormal(0, 0.02))
        killed = oom_kb is not None and kb > oom_kb
        out.append(
            Measurement(
                run_id=f"r{i:04d}",
                algorithm="tool",
                platform="cpu",
                features={"input.size": size},
                wall_seconds=0.01 * size,
                max_rss_kb=int(oom_kb if killed else kb) if measured else None,
                exit_status=137 if killed else 0,
                censored=killed,
            )
        )
    return out


def test_a_memory_set_holds_the_bytes_of_the_runs_that_measured_them() -> None:
    frame = pd.DataFrame(
        [{**m.model_dump(exclude={"features"}), **m.features} for m in runs(12) + runs(3, start=12, measured=False)]
    )
    time, memory = (training_set_from_frame(frame, "tool", "cpu", target) for target in Target)
    assert (time.target, memory.target) == (Target.TIME, Target.MEMORY)
    assert len(time) == 15 and len(memory) == 12 and memory.run_ids == [f"r{i:04d}" for i in range(12)]
    assert np.array_equal(memory.y, frame["max_rss_kb"].to_numpy()[:12] * 1024.0)
    assert time.fingerprint != training_set_from_frame(frame.head(12), "tool", "cpu").fingerprint != memory.fingerprint
    with pytest.raises(DatasetError, match=r"^tool on cpu: 0 successful run\(s\) with a peak memory, need at least 3$"):
        training_set_from_frame(frame.assign(max_rss_kb=np.nan), "tool", "cpu", Target.MEMORY)


def test_a_run_killed_for_memory_is_a_lower_bound_on_its_peak() -> None:
    killed = runs(30, oom_kb=200_000)
    frame = pd.DataFrame([{**m.model_dump(exclude={"features"}), **m.features} for m in killed])
    ts = training_set_from_frame(frame, "tool", "cpu", Target.MEMORY)
    assert ts.censored.sum() == sum(m.censored for m in killed) > 0
    assert np.all(ts.y[ts.censored] == 200_000 * 1024.0)  # what it reached when killed: at least that much


def test_members_that_read_a_requested_time_estimate_run_times_only() -> None:
    assert applicable("requested_time", ["request.time"], 10) and not applicable(
        "requested_time", ["request.time"], 10, Target.MEMORY
    )
    history = ["history.last2_mean", "history.last1", "request.time"]
    assert not applicable("last_two_mean", history, 10, Target.MEMORY) and applicable("mean", [], 3, Target.MEMORY)
    with_request = [
        m.model_copy(update={"features": {**m.features, "request.time": 60.0 * (i % 4 + 1)}})
        for i, m in enumerate(runs(12))
    ]
    frame = pd.DataFrame([{**m.model_dump(exclude={"features"}), **m.features} for m in with_request])
    settings = TrainingSettings(cv_folds=3)
    sets = {target: training_set_from_frame(frame, "tool", "cpu", target) for target in Target}
    # a job class's run time has the request among its rules (the last two runs need history features), its peak
    # memory the measured median
    assert count_steps(settings, [sets[Target.TIME]], models=["mean", "requested_time"]) == 2 * 3 + 1
    assert count_steps(settings, [sets[Target.MEMORY]], models=["mean", "requested_time"]) == 2 * 3 + 1


@dataclass
class Trained:
    settings: TrainingSettings
    store: MeasurementStore
    memory: list[TrainingOutcome]
    time: list[TrainingOutcome]
    again: list[TrainingOutcome]


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> Trained:
    """40 runs with a peak memory and 5 without, trained for peak memory, then for run time, then for memory again."""
    home = tmp_path_factory.mktemp("memory")
    settings = TrainingSettings(
        home=home,
        mlflow_tracking_uri=f"sqlite:///{home / 'mlflow.db'}",
        mlflow_artifact_root=home / "artifacts",
        cv_folds=5,
        n_jobs=1,
    )
    store = MeasurementStore(f"sqlite:///{home / 'store.db'}")
    store.migrate()
    store.add(runs(40) + runs(5, start=40, seed=1, measured=False))
    memory = run_training(settings, store, models=MODELS, target=Target.MEMORY)
    for outcome in memory:
        store.add_decision(decision_row(outcome, "test"))
    time = run_training(settings, store, models=MODELS)
    again = run_training(settings, store, models=MODELS, target=Target.MEMORY)
    yield Trained(settings, store, memory, time, again)
    store.dispose()


def test_a_memory_champion_is_registered_under_its_own_name_and_predicts_bytes(trained: Trained) -> None:
    [outcome] = trained.memory
    assert (outcome.target, outcome.decision.verdict, outcome.version, outcome.n_rows) == (
        Target.MEMORY,
        Verdict.PROMOTED,
        "1",
        40,
    )
    client = registry_client(trained.settings.resolved_tracking_uri)
    version = client.get_model_version_by_alias(registered_name("tool", "cpu", Target.MEMORY), CHAMPION_ALIAS)
    assert (
        version.name == "memory-tool-cpu"
        and version.tags["target"] == "memory"
        and version.tags["role"] == CHAMPION_ALIAS
    )
    assert "residual_log_quantiles" in version.tags and "interval_coverage" in version.tags
    assert ENVELOPE_ARTIFACT in {a.path for a in client.list_artifacts(version.run_id)}
    model = load_registered(trained.settings.resolved_tracking_uri, version.name, version.version)
    sizes = np.array([100.0, 500.0, 900.0])
    predicted = model.predict(pd.DataFrame({"input.size": sizes}))
    assert np.all(np.abs(predicted / (peak_kb(sizes) * 1024) - 1) < 0.05), predicted


def test_time_and_memory_have_a_champion_each(trained: Trained) -> None:
    [time] = trained.time
    assert (time.target, time.version, time.n_rows) == (
        Target.TIME,
        "1",
        45,
    )  # run time also learns from the 5 unmeasured runs
    assert [v.name for v in list_champions(trained.settings.resolved_tracking_uri, Target.TIME)] == ["runtime-tool-cpu"]
    assert [v.name for v in list_champions(trained.settings.resolved_tracking_uri, Target.MEMORY)] == [
        "memory-tool-cpu"
    ]
    model = load_registered(trained.settings.resolved_tracking_uri, "runtime-tool-cpu", time.version)
    assert model.predict(pd.DataFrame({"input.size": [500.0]}))[0] == pytest.approx(5.0, rel=0.05)  # seconds, not bytes


def test_memory_sessions_are_tracked_apart_and_tagged_with_their_target(trained: Trained) -> None:
    assert tracked_algorithms(trained.settings, Target.MEMORY) == ["tool"] == tracked_algorithms(trained.settings)
    client = registry_client(trained.settings.resolved_tracking_uri)
    for target in Target:
        experiment = client.get_experiment_by_name(experiment_name("tool", target))
        found = client.search_runs([experiment.experiment_id])
        assert found and {r.data.tags["target"] for r in found} == {target.value}
        assert {r.data.params["target"] for r in found} == {target.value}
    session = latest_session(trained.settings, "tool", target=Target.MEMORY)
    assert session.target is Target.MEMORY and {r.model for r in session.rows} >= set(MODELS)
    assert fold_plan_path(trained.settings, "tool", "cpu", Target.MEMORY).exists()
    assert fold_plan_path(trained.settings, "tool", "cpu", Target.MEMORY) != fold_plan_path(
        trained.settings, "tool", "cpu"
    )


def test_the_same_memory_runs_are_not_trained_again_and_decisions_say_their_target(trained: Trained) -> None:
    assert [o.decision.verdict for o in trained.again] == [Verdict.UNCHANGED]
    assert [(d["target"], d["decision"]) for d in trained.store.decisions()] == [("memory", "promoted")]
    assert trained.store.decisions(target="time") == []


def test_training_one_target_on_sets_of_the_other_is_refused(trained: Trained) -> None:
    sets = load_training_sets(trained.store, target=Target.MEMORY)
    with pytest.raises(ValueError, match=r"training time on sets of another target: tool/cpu \(memory\)"):
        train(trained.settings, sets, models=["mean"])


def test_a_champion_that_learns_from_killed_runs_answers_at_least_their_bound(tmp_path: Path) -> None:
    settings = TrainingSettings(
        home=tmp_path,
        mlflow_tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}",
        mlflow_artifact_root=tmp_path / "artifacts",
        cv_folds=5,
        n_jobs=1,
    )
    store = MeasurementStore(f"sqlite:///{tmp_path / 'store.db'}")
    store.migrate()
    store.add(runs(60, oom_kb=200_000))  # inputs above ~600 units are killed at 200 MB
    try:
        [outcome] = run_training(settings, store, models=["tobit_log"], target=Target.MEMORY)
    finally:
        store.dispose()
    assert outcome.version == "1"
    model = load_registered(settings.resolved_tracking_uri, "memory-tool-cpu", outcome.version)
    killed = model.predict(pd.DataFrame({"input.size": [800.0, 950.0]}))
    assert np.all(killed > 200_000 * 1024), killed  # beyond the limit they were killed at
    assert np.all(np.abs(killed / (peak_kb(np.array([800.0, 950.0])) * 1024) - 1) < 0.15), killed

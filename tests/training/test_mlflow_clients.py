"""Training reaches MLflow through clients of its settings' URI: the process-wide URIs are nobody's hidden input."""

from __future__ import annotations

import os
from pathlib import Path

import mlflow
import numpy as np
import pandas as pd

from predictor.domain import Measurement
from predictor.registry import registry_client
from predictor.thirdparty import mlflow_set_uris
from training.champions import MlflowChampions, list_champions
from training.dataset import TrainingSet, training_set_from_frame
from training.pipeline import train
from training.report import latest_session
from training.settings import TrainingSettings
from training.tracking import MlflowTracker


def _settings(home: Path) -> TrainingSettings:
    """TrainingSettings of a tracking store and artifact root of their own under ``home``."""
    return TrainingSettings(
        home=home,
        mlflow_tracking_uri=f"sqlite:///{home / 'mlflow.db'}",
        mlflow_artifact_root=home / "artifacts",
        cv_folds=3,
        n_jobs=1,
    )


def _training_set(algorithm: str, n: int = 12) -> TrainingSet:
    """``n`` runs of ``algorithm`` on cpu whose seconds grow with the input's size."""
    rng = np.random.default_rng(0)
    runs = [
        Measurement(
            run_id=f"{algorithm}-{i}",
            algorithm=algorithm,
            platform="cpu",
            features={"input.size": float(size)},
            wall_seconds=0.01 * float(size),
        )
        for i, size in enumerate(rng.uniform(10, 1000, n))
    ]
    frame = pd.DataFrame([{**m.model_dump(exclude={"features"}), **m.features} for m in runs])
    return training_set_from_frame(frame, algorithm, "cpu")


def _process_wide() -> tuple[object, ...]:
    """What MLflow would use without a client: the URIs set in the process, what it resolves, their variables."""
    variables = tuple(os.environ.get(name) for name in ("MLFLOW_TRACKING_URI", "MLFLOW_REGISTRY_URI"))
    return mlflow_set_uris(), mlflow.get_tracking_uri(), mlflow.get_registry_uri(), variables


def test_tracking_and_registering_leave_mlflows_process_wide_uris_as_they_were(tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    before = _process_wide()
    tracker, book = MlflowTracker(settings), MlflowChampions(settings.resolved_tracking_uri)
    assert _process_wide() == before
    [outcome] = train(settings, [_training_set("tool")], models=["mean"], tracker=tracker, champions=book)
    assert outcome.version == "1" and book.incumbent("tool", "cpu") is not None
    assert latest_session(settings, "tool").rows
    assert _process_wide() == before


def test_two_trackers_of_two_stores_in_one_process_each_write_to_their_own(tmp_path: Path) -> None:
    first, second = _settings(tmp_path / "first"), _settings(tmp_path / "second")
    books = {
        s.resolved_tracking_uri: (MlflowTracker(s), MlflowChampions(s.resolved_tracking_uri)) for s in (first, second)
    }
    for settings, algorithm in (
        (first, "alpha"),
        (second, "beta"),
        (first, "gamma"),
    ):  # the second built last, used between
        tracker, book = books[settings.resolved_tracking_uri]
        train(settings, [_training_set(algorithm)], models=["mean"], tracker=tracker, champions=book)
    for settings, algorithms in ((first, ["alpha", "gamma"]), (second, ["beta"])):
        uri = settings.resolved_tracking_uri
        assert [v.name for v in list_champions(uri)] == [f"runtime-{a}-cpu" for a in algorithms]
        experiments = registry_client(uri).search_experiments(filter_string="name LIKE 'runtime/%'")
        assert sorted(e.name for e in experiments) == [f"runtime/{a}" for a in algorithms]
        artifacts = sorted(p.name for p in settings.resolved_artifact_root.iterdir())
        assert artifacts == algorithms

"""Experiment tracking in MLflow: an experiment per algorithm, a parent run per session, a child run per candidate.

Nothing here touches MLflow at import time; :func:`configure_mlflow` is called explicitly.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path

import mlflow
import numpy as np
from matplotlib.figure import Figure
from mlflow.entities import Run
from mlflow.models import infer_signature
from sklearn.base import RegressorMixin

from predictor import registry
from predictor.settings import Settings
from training.crossval import CVResult
from training.dataset import TrainingSet
from training.folds import FoldPlan

# What a served zoo member needs installed; named here so MLflow need not infer it (slow: a subprocess per model).
MODEL_REQUIREMENTS = ("scikit-learn", "lightgbm", "numpy", "pandas", "scipy", "skops")


@dataclass(frozen=True)
class Candidate:
    """A cross-validated, refitted model logged in a child run: what champion selection chooses among."""

    model_name: str
    run_id: str
    model_uri: str
    metrics: dict[str, float]


def configure_mlflow(settings: Settings) -> None:
    """Point MLflow's tracking and model registry at the settings' URI."""
    registry.configure_mlflow(settings.resolved_tracking_uri)


def experiment_name(algorithm: str) -> str:
    return f"runtime/{algorithm}"


def ensure_experiment(settings: Settings, algorithm: str) -> str:
    """Id of the algorithm's experiment, created with its artifacts under the artifact root on first use."""
    name = experiment_name(algorithm)
    experiment = mlflow.get_experiment_by_name(name)
    if experiment is not None:
        return experiment.experiment_id
    location = settings.resolved_artifact_root / algorithm
    location.mkdir(parents=True, exist_ok=True)
    return mlflow.create_experiment(name, artifact_location=location.as_uri())


@contextmanager
def training_session(settings: Settings, algorithm: str, models: Sequence[str]) -> Iterator[Run]:
    """The parent run of one algorithm's training session; candidates are logged as its children."""
    experiment_id = ensure_experiment(settings, algorithm)
    tags = {"algorithm": algorithm}
    with mlflow.start_run(experiment_id=experiment_id, run_name=f"train-{algorithm}", tags=tags) as run:
        mlflow.log_params(
            {"algorithm": algorithm, "models": ",".join(models), "cv_folds": settings.cv_folds, "seed": settings.seed}
        )
        yield run


def log_candidate(
    parent: Run,
    training_set: TrainingSet,
    plan: FoldPlan,
    result: CVResult,
    model: RegressorMixin,
    *,
    refit_seconds: float,
) -> Candidate:
    """Log one model's cross-validation and its refit on all rows as a child run of ``parent``."""
    ts = training_set
    with mlflow.start_run(
        experiment_id=parent.info.experiment_id,
        parent_run_id=parent.info.run_id,
        nested=True,
        run_name=f"{result.model_name}@{ts.platform}",
        tags={"algorithm": ts.algorithm, "platform": ts.platform, "model_kind": result.model_name},
    ) as run:
        mlflow.log_params(
            {
                "model_kind": result.model_name,
                "algorithm": ts.algorithm,
                "platform": ts.platform,
                "n_rows": len(ts),
                "n_features": len(ts.feature_names),
                "n_folds": plan.n_folds,
                **_model_params(model),
            }
        )
        mlflow.log_dict({"features": ts.feature_names}, "features.json")
        mlflow.log_metrics({f"cv_{k}": v for k, v in result.metrics.items()})
        for fold, metrics in enumerate(result.fold_metrics):
            mlflow.log_metrics({f"fold_{k}": v for k, v in metrics.items()}, step=fold)
        mlflow.log_metrics({"fit_seconds": result.fit_seconds, "refit_seconds": refit_seconds})
        title = f"{result.model_name}: {ts.algorithm} on {ts.platform}"
        mlflow.log_figure(_scatter(ts.y, result.predictions, title), "pred_vs_actual.png")
        with tempfile.TemporaryDirectory() as tmp:
            mlflow.log_artifact(str(plan.save(Path(tmp) / "folds.csv")))
        info = mlflow.sklearn.log_model(
            model,
            name="model",
            signature=infer_signature(ts.X, model.predict(ts.X)),
            input_example=ts.X.head(3),
            skops_trusted_types=_trusted_types(model),
            pip_requirements=[f"{name}=={version(name)}" for name in MODEL_REQUIREMENTS],
        )
    return Candidate(result.model_name, run_id=run.info.run_id, model_uri=info.model_uri, metrics=result.metrics)


def _model_params(model: RegressorMixin) -> dict[str, object]:
    """The model's scalar hyper-parameters, prefixed ``model.`` (nested estimators are left out)."""
    return {
        f"model.{k}": v
        for k, v in model.get_params(deep=True).items()
        if v is None or isinstance(v, (bool, int, float, str))
    }


def _trusted_types(model: RegressorMixin) -> list[str]:
    """Types skops must trust to load ``model`` again; this process built it, so all it contains."""
    import skops.io

    return skops.io.get_untrusted_types(data=skops.io.dumps(model))


def _scatter(actual: np.ndarray, predicted: np.ndarray, title: str) -> Figure:
    """Out-of-fold predicted against measured seconds, log-log when every value is positive."""
    figure = Figure(figsize=(5, 5))
    axes = figure.subplots()
    axes.scatter(actual, predicted, s=14, alpha=0.7)
    low = float(min(actual.min(), predicted.min()))
    high = float(max(actual.max(), predicted.max()))
    axes.plot([low, high], [low, high], color="black", linestyle="--", linewidth=1)
    if low > 0:
        axes.set_xscale("log")
        axes.set_yscale("log")
    axes.set(xlabel="measured seconds", ylabel="predicted seconds (out of fold)", title=title)
    return figure

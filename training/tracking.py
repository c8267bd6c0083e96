"""Experiment tracking in MLflow: an experiment per algorithm, a parent run per session, a child run per candidate.

Nothing here touches MLflow at import time; :func:`configure_mlflow` is called explicitly.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path
from typing import Any

import mlflow
import numpy as np
from mlflow.entities import Run
from mlflow.models import infer_signature
from sklearn.base import RegressorMixin
from sklearn.pipeline import Pipeline

from models.zoo import target_transform
from predictor import registry
from predictor.intervals import residual_log_quantiles
from predictor.settings import Settings
from training import plots
from training.crossval import CVResult
from training.dataset import TrainingSet
from training.folds import FoldPlan
from training.intervals import cross_fitted_coverage

# What a served zoo member needs installed; named here so MLflow need not infer it (slow: a subprocess per model).
MODEL_REQUIREMENTS = ("scikit-learn", "lightgbm", "numpy", "pandas", "scipy", "skops")


@dataclass(frozen=True)
class Candidate:
    """A cross-validated, refitted model logged in a child run: what champion selection chooses among."""

    model_name: str
    run_id: str
    model_uri: str
    metrics: dict[str, float]
    residual_quantiles: dict[float, float] = field(default_factory=dict)


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
    coverage: float,
) -> Candidate:
    """Log one model's cross-validation and its refit on all rows as a child run of ``parent``.

    Besides the metrics of :func:`~training.metrics.compute_metrics` the candidate gets its
    out-of-fold residual log-ratio quantiles (what its intervals would serve) and
    ``interval_coverage``, the share of runs inside intervals of nominal ``coverage`` built
    from the other folds' residuals.
    """
    ts = training_set
    quantiles = residual_log_quantiles(ts.y, result.predictions)
    metrics = {**result.metrics, "interval_coverage": cross_fitted_coverage(ts.y, result.predictions, plan.folds, coverage)}
    tags = {
        "algorithm": ts.algorithm,
        "platform": ts.platform,
        "model_kind": result.model_name,
        "target_transform": target_transform(result.model_name),
    }
    with mlflow.start_run(
        experiment_id=parent.info.experiment_id,
        parent_run_id=parent.info.run_id,
        nested=True,
        run_name=f"{result.model_name}@{ts.platform}",
        tags=tags,
    ) as run:
        mlflow.log_params(
            {
                "model_kind": result.model_name,
                "algorithm": ts.algorithm,
                "platform": ts.platform,
                "n_rows": len(ts),
                "n_features": len(ts.feature_names),
                "n_folds": plan.n_folds,
                "interval_nominal_coverage": coverage,
                **_model_params(model),
                **{f"tuned.{k}": v for k, v in (inner_attribute(model, "best_params_") or {}).items()},
            }
        )
        mlflow.log_dict({"features": ts.feature_names}, "features.json")
        mlflow.log_dict({str(level): value for level, value in quantiles.items()}, "residual_log_quantiles.json")
        mlflow.log_metrics({f"cv_{k}": v for k, v in metrics.items()})
        for fold, fold_metrics in enumerate(result.fold_metrics):
            mlflow.log_metrics({f"fold_{k}": v for k, v in fold_metrics.items()}, step=fold)
        mlflow.log_metrics({"fit_seconds": result.fit_seconds, "refit_seconds": refit_seconds})
        title = f"{result.model_name}: {ts.algorithm} on {ts.platform}"
        mlflow.log_figure(plots.pred_vs_actual(ts.y, result.predictions, title), "pred_vs_actual.png")
        mlflow.log_figure(plots.relative_errors(ts.y, result.predictions, title), "relative_errors.png")
        curve: Mapping[str, np.ndarray] | None = inner_attribute(model, "learning_curve_")
        if curve is not None:
            mlflow.log_figure(plots.learning_curve(curve, title), "learning_curve.png")
            for units, error in zip(curve["hidden_units"], curve.get("validation_mse", [])):
                mlflow.log_metric("curve_validation_mse", float(error), step=int(units))
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
    return Candidate(
        result.model_name, run_id=run.info.run_id, model_uri=info.model_uri, metrics=metrics, residual_quantiles=quantiles
    )


def inner_attribute(model: Any, attribute: str) -> Any:
    """``attribute`` of ``model`` or of the first estimator inside it (target transforms, searches, pipelines), or None."""
    while True:
        if hasattr(model, attribute):
            return getattr(model, attribute)
        if hasattr(model, "regressor_"):
            model = model.regressor_
        elif hasattr(model, "best_estimator_"):
            model = model.best_estimator_
        elif isinstance(model, Pipeline):
            model = model[-1]
        else:
            return None


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

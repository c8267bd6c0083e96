"""Cross-validation of one zoo member on one training set, and the refit on every row that gets served."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from sklearn.base import RegressorMixin

from models import make_model
from training.dataset import TrainingSet
from training.folds import FoldPlan
from training.metrics import compute_metrics


@dataclass(frozen=True)
class CVResult:
    """Out-of-fold predictions of one model on one training set, and their metrics."""

    model_name: str
    predictions: np.ndarray
    priors: np.ndarray
    fold_metrics: list[dict[str, float]]
    metrics: dict[str, float]
    fit_seconds: float


def _predict(model: RegressorMixin, X: object) -> np.ndarray:
    """Predictions clipped at zero, as the oracle serves them."""
    return np.maximum(np.asarray(model.predict(X), dtype="float64"), 0.0)


def cross_validate(
    model_name: str,
    training_set: TrainingSet,
    plan: FoldPlan,
    *,
    seed: int = 0,
    on_fit: Callable[[int], None] | None = None,
) -> CVResult:
    """Fit ``model_name`` on each training fold, predict its test fold; ``on_fit(fold)`` after each fit."""
    if plan.run_ids != training_set.run_ids:
        pair = f"{training_set.algorithm} on {training_set.platform}"
        raise ValueError(f"the fold plan does not cover the runs of {pair}")
    X, y = training_set.X, training_set.y
    predictions = np.empty_like(y)
    priors = np.empty_like(y)
    fold_metrics = []
    fit_seconds = 0.0
    for fold, (train, test) in enumerate(plan.splits()):
        started = time.perf_counter()
        model = make_model(model_name, seed=seed).fit(X.iloc[train], y[train])
        fit_seconds += time.perf_counter() - started
        predictions[test] = _predict(model, X.iloc[test])
        priors[test] = y[train].mean()
        fold_metrics.append(compute_metrics(y[test], predictions[test], priors[test]))
        if on_fit is not None:
            on_fit(fold)
    return CVResult(
        model_name=model_name,
        predictions=predictions,
        priors=priors,
        fold_metrics=fold_metrics,
        metrics=compute_metrics(y, predictions, priors),
        fit_seconds=fit_seconds,
    )


def refit(model_name: str, training_set: TrainingSet, *, seed: int = 0) -> RegressorMixin:
    """``model_name`` fitted on every row of ``training_set``: the candidate that may be served."""
    return make_model(model_name, seed=seed).fit(training_set.X, training_set.y)

"""Cross-validation of one zoo member on one training set, and the refit on every row that gets served.

Each fold is one independent fit (:func:`fit_fold`), so a caller may run folds of many models in
parallel and put them together with :func:`collect`; :func:`cross_validate` does it in turn.

Censored runs (stopped before they finished: ``y`` a lower bound) are passed, flagged, to the members
registered to learn from them; every other member is fitted on the finished runs only. Every row, censored
or not, gets an out-of-fold prediction; the metrics score the finished rows (see :mod:`training.metrics`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from sklearn.base import RegressorMixin
from sklearn.pipeline import Pipeline

from models import make_model
from models.zoo import learns_from_censored
from training.dataset import TrainingSet
from training.folds import FoldPlan
from training.metrics import compute_metrics


@dataclass(frozen=True)
class FoldFit:
    """Predictions of one fold's test rows by a model fitted on its other rows, the fit's seconds, what it chose.

    ``tuned`` holds the settings an inner search picked, ``curve`` a grown network's error per size.
    """

    fold: int
    predictions: np.ndarray
    seconds: float
    tuned: Mapping[str, Any] = field(default_factory=dict)
    curve: Mapping[str, np.ndarray] | None = None


@dataclass(frozen=True)
class CVResult:
    """Out-of-fold predictions of one model on one training set, and their metrics."""

    model_name: str
    predictions: np.ndarray
    priors: np.ndarray
    fold_metrics: list[dict[str, float]]
    metrics: dict[str, float]
    fit_seconds: float
    tuned: list[Mapping[str, Any]] = field(default_factory=list)
    curves: list[Mapping[str, np.ndarray]] = field(default_factory=list)


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


def _predict(model: RegressorMixin, X: object) -> np.ndarray:
    """Predictions clipped at zero, as the oracle serves them."""
    return np.maximum(np.asarray(model.predict(X), dtype="float64"), 0.0)


def check_plan(training_set: TrainingSet, plan: FoldPlan) -> None:
    """Refuse a fold plan made for other runs than the training set's."""
    if plan.run_ids != training_set.run_ids:
        pair = f"{training_set.algorithm} on {training_set.platform}"
        raise ValueError(f"the fold plan does not cover the runs of {pair}")


def _fitted(model_name: str, X: pd.DataFrame, y: np.ndarray, censored: np.ndarray, *, seed: int) -> RegressorMixin:
    """``model_name`` fitted on these rows: with their censoring if it learns from it, else on the finished ones only."""
    model = make_model(model_name, seed=seed)
    if learns_from_censored(model_name):
        return model.fit(X, y, censored=censored)
    if censored.any():
        X, y = X[~censored], y[~censored]
    return model.fit(X, y)


def fit_fold(model_name: str, training_set: TrainingSet, plan: FoldPlan, fold: int, *, seed: int = 0) -> FoldFit:
    """Fit ``model_name`` on every fold but ``fold`` and predict all of ``fold``'s rows (censored ones too)."""
    train, test = np.flatnonzero(plan.folds != fold), np.flatnonzero(plan.folds == fold)
    X, y = training_set.X, training_set.y
    started = time.perf_counter()
    model = _fitted(model_name, X.iloc[train], y[train], training_set.censored[train], seed=seed)
    seconds = time.perf_counter() - started
    tuned = inner_attribute(model, "best_params_") or {}
    return FoldFit(fold, _predict(model, X.iloc[test]), seconds, tuned, inner_attribute(model, "learning_curve_"))


def collect(model_name: str, training_set: TrainingSet, plan: FoldPlan, fits: Sequence[FoldFit]) -> CVResult:
    """Put one model's fold fits together: pooled out-of-fold predictions, priors and metrics per fold and pooled.

    The prior of a row is its training fold's mean (of the finished runs), so RAE and RRSE are
    relative to the baseline that fold would have had, as Weka computes them; censored rows are
    scored as bounds only. What the fits chose (tuned settings, growth curves) is kept in fold order.
    """
    fits = sorted(fits, key=lambda f: f.fold)
    folds = [f.fold for f in fits]
    if folds != list(range(plan.n_folds)):
        raise ValueError(f"{model_name}: need one fit per fold of the plan, got folds {folds}")
    y, censored = training_set.y, training_set.censored
    predictions = np.empty_like(y)
    priors = np.empty_like(y)
    fold_metrics = []
    for fit in fits:
        test = plan.folds == fit.fold
        predictions[test] = fit.predictions
        priors[test] = y[~test & ~censored].mean()
        fold_metrics.append(compute_metrics(y[test], predictions[test], priors[test], censored[test]))
    return CVResult(
        model_name=model_name,
        predictions=predictions,
        priors=priors,
        fold_metrics=fold_metrics,
        metrics=compute_metrics(y, predictions, priors, censored),
        fit_seconds=sum(f.seconds for f in fits),
        tuned=[f.tuned for f in fits],
        curves=[f.curve for f in fits if f.curve is not None],
    )


def cross_validate(
    model_name: str,
    training_set: TrainingSet,
    plan: FoldPlan,
    *,
    seed: int = 0,
    on_fit: Callable[[int], None] | None = None,
) -> CVResult:
    """Fit ``model_name`` on each training fold, predict its test fold; ``on_fit(fold)`` after each fit."""
    check_plan(training_set, plan)
    fits = []
    for fold in range(plan.n_folds):
        fits.append(fit_fold(model_name, training_set, plan, fold, seed=seed))
        if on_fit is not None:
            on_fit(fold)
    return collect(model_name, training_set, plan, fits)


def refit(model_name: str, training_set: TrainingSet, *, seed: int = 0) -> RegressorMixin:
    """``model_name`` fitted on every row of ``training_set``: what is served when it (or an ensemble of it) wins."""
    return _fitted(model_name, training_set.X, training_set.y, training_set.censored, seed=seed)

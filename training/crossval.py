"""Cross-validation of one zoo member on one training set by a fold plan, and the refit on every row that gets served.

Each fold is one independent fit (:func:`fit_fold`), so a caller may run folds of many models in
parallel and put them together with :func:`collect`; :func:`cross_validate` does it in turn.

Censored runs (stopped before they finished: ``y`` a lower bound) are passed, flagged, to the members
registered to learn from them; every other member is fitted on the finished runs only. Every row a fold scores,
censored or not, gets an out-of-fold prediction; the metrics score the finished ones (see :mod:`training.metrics`).
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
from models.zoo import learns_from_censored, learns_online
from predictor.domain import Target
from predictor.envelope import TrainingEnvelope
from predictor.served import cap_at_request, served_points
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
    """Out-of-fold predictions of one model on one training set, and their metrics.

    ``scored`` marks the rows some fold predicted; the others (a forward plan's first stretch) hold NaN.
    """

    model_name: str
    predictions: np.ndarray
    priors: np.ndarray
    fold_metrics: list[dict[str, float]]
    metrics: dict[str, float]
    fit_seconds: float
    scored: np.ndarray
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


def in_time_order(training_set: TrainingSet, rows: np.ndarray) -> np.ndarray:
    """Row indices of the mask ``rows`` in the order the runs ended (ties in row order): how every fit sees them, so an
    online member learns them as they came."""
    index = np.flatnonzero(rows)
    return index[np.argsort(training_set.ended[index], kind="stable")]


def fit_fold(model_name: str, training_set: TrainingSet, plan: FoldPlan, fold: int, *, seed: int = 0) -> FoldFit:
    """Fit ``model_name`` on the rows fold ``fold`` trains on and predict all of its scored rows (censored ones too)."""
    ts = training_set
    train, test = in_time_order(ts, plan.train_rows(fold)), np.flatnonzero(plan.test_rows(fold))
    X, y = ts.X, ts.y
    started = time.perf_counter()
    model = _fitted(model_name, X.iloc[train], y[train], ts.censored[train], seed=seed)
    answers = model.predict(X.iloc[test])
    seconds = time.perf_counter() - started
    tuned = inner_attribute(model, "best_params_") or {}
    predictions = np.maximum(np.asarray(answers, dtype="float64"), 0.0)
    return FoldFit(fold, predictions, seconds, tuned, inner_attribute(model, "learning_curve_"))


def fit_every_fold(model_name: str, training_set: TrainingSet, plan: FoldPlan, *, seed: int = 0) -> list[FoldFit]:
    """An online member's answers to every fold of a forward plan, as it serves them: fitted on the runs that had ended
    before the first window, it then goes through time, answering each scored run at its submission and learning each
    run (finished) at its end, one step each. One pass for every fold, and no answer knows a run that ended after its
    job was submitted.
    """
    if plan.scheme != "forward" or not learns_online(model_name):
        raise ValueError(f"{model_name}: one pass serves only an online member on a forward plan")
    ts = training_set
    known = in_time_order(ts, plan.train_rows(0))
    started = time.perf_counter()
    model = _fitted(model_name, ts.X.iloc[known], ts.y[known], ts.censored[known], seed=seed)
    Z, weights = model.design(ts.X)
    later = np.flatnonzero(~plan.train_rows(0) & ts.finished)
    scored = np.flatnonzero(plan.scored)
    # at one instant an end comes before a submission: a run that ended then is known to a job submitted then
    events = sorted([(ts.ended[i], 0, i) for i in later] + [(ts.submitted[i], 1, i) for i in scored])
    answers = np.empty(len(ts))
    for _, submission, i in events:
        if submission:
            answers[i] = model.answer_row(Z[i])
        else:
            model.learn_row(Z[i], float(ts.y[i]), float(weights[i]))
    seconds = time.perf_counter() - started
    return [
        FoldFit(fold, np.maximum(answers[plan.test_rows(fold)], 0.0), seconds / plan.n_folds)
        for fold in range(plan.n_folds)
    ]


def one_pass(model_name: str, plan: FoldPlan) -> bool:
    """Whether a member's folds of ``plan`` are fitted in one pass (:func:`fit_every_fold`): an online member (learning
    each run once, in order) on a forward plan."""
    if plan.scheme != "forward" or not learns_online(model_name):
        return False
    return make_model(model_name).get_params().get("epochs", 1) == 1


def fold_envelopes(training_set: TrainingSet, plan: FoldPlan) -> list[TrainingEnvelope]:
    """Each fold's training envelope, fitted on the finished runs it trains on (without the law's errors, which only
    widen intervals): what the oracle would have served a learned champion of that fold with
    (:func:`training.champions.training_envelope` says which have one)."""
    ts = training_set
    envelopes = []
    for fold in range(plan.n_folds):
        rows = plan.train_rows(fold) & ts.finished
        envelopes.append(TrainingEnvelope.fit(ts.X[rows], ts.y[rows], law_errors=False))
    return envelopes


def as_served(
    training_set: TrainingSet, rows: np.ndarray, predictions: np.ndarray, envelope: TrainingEnvelope | None
) -> np.ndarray:
    """A fold's predictions of ``rows`` as the oracle would serve them: outside ``envelope`` by its law (None: a rule,
    served as it answers), floored, and a job class's run time capped at the request."""
    X = training_set.X.to_numpy(dtype="float64")[rows]
    points, _ = served_points(predictions, X, envelope)
    answers = {"seconds": points}
    if training_set.target is Target.TIME:
        cap_at_request(answers, training_set.feature_names, X)
    return answers["seconds"]


def collect(
    model_name: str,
    training_set: TrainingSet,
    plan: FoldPlan,
    fits: Sequence[FoldFit],
    envelopes: Sequence[TrainingEnvelope | None] | None = None,
) -> CVResult:
    """Put one model's fold fits together: out-of-fold predictions, priors and metrics per fold and pooled.

    With ``envelopes`` (one per fold; :func:`fold_envelopes`, or None per fold for a rule), each fold's predictions are
    scored as served (:func:`as_served`).

    Each fold's predictions are its scored rows' in row order. The prior of a row is the mean of the finished runs
    its fold trained on, so RAE and RRSE are relative to the baseline that fold would have had, as Weka computes
    them; censored rows are scored as bounds only. Rows no fold scores (a forward plan's first stretch) keep NaN
    and enter no metric. What the fits chose (tuned settings, growth curves) is kept in fold order.
    """
    fits = sorted(fits, key=lambda f: f.fold)
    folds = [f.fold for f in fits]
    if folds != list(range(plan.n_folds)):
        raise ValueError(f"{model_name}: need one fit per fold of the plan, got folds {folds}")
    y, censored = training_set.y, training_set.censored
    predictions = np.full_like(y, np.nan)
    priors = np.full_like(y, np.nan)
    fold_metrics = []
    for fit in fits:
        test = plan.test_rows(fit.fold)
        served = (
            fit.predictions
            if envelopes is None
            else as_served(training_set, test, fit.predictions, envelopes[fit.fold])
        )
        predictions[test] = served
        priors[test] = y[plan.train_rows(fit.fold) & ~censored].mean()
        fold_metrics.append(compute_metrics(y[test], predictions[test], priors[test], censored[test]))
    scored = plan.scored
    return CVResult(
        model_name=model_name,
        predictions=predictions,
        priors=priors,
        fold_metrics=fold_metrics,
        metrics=compute_metrics(y[scored], predictions[scored], priors[scored], censored[scored]),
        fit_seconds=sum(f.seconds for f in fits),
        scored=scored,
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
    """``model_name`` fitted on every row of ``training_set``, in time order: what is served when it (or an ensemble of
    it) wins."""
    ts = training_set
    rows = in_time_order(ts, np.ones(len(ts), dtype=bool))
    return _fitted(model_name, ts.X.iloc[rows], ts.y[rows], ts.censored[rows], seed=seed)

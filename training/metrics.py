"""Weka-style regression metrics (those of Table 2 of Brandstätter-Müller et al. (2011), *Improving job scheduling on
a heterogeneous cluster by predicting job execution times using heuristics*) plus the relative errors a scheduler
cares about.

``y_prior`` is what the baseline would have said for each row: under cross-validation
the mean of that row's training fold (its finished runs), as Weka computes RAE and RRSE.

A censored run's time is a lower bound, not a time, so it is left out of every error; its rows are
counted (``censored_rows``) and judged only where a bound can judge: ``censored_underestimate``, the share
predicted below the time the run had already taken when it was stopped, a sure underestimate.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

# Every metric of finished runs, as compute_metrics names them.
METRICS = (
    "cc",
    "mae",
    "rmse",
    "rae",
    "rrse",
    "mape",
    "median_ape",
    "male",
    "mdale",
    "within_10pct",
    "within_25pct",
    "within_factor_2",
    "underestimate_rate",
    "mean_underestimate",
)
# Metrics where a smaller value is a better model (the ones that may pick champions).
LOWER_IS_BETTER = frozenset(
    {"mae", "rmse", "rae", "rrse", "mape", "median_ape", "male", "mdale", "underestimate_rate", "mean_underestimate"}
)
# both sides of a log error are floored here (a millisecond, a kilobyte's millionth)
LOG_FLOOR = 1.0e-3


def absolute_log_errors(y_true: np.ndarray, y_pred: np.ndarray) -> np.ndarray:
    """|ln(prediction / truth)| of each row, both floored at :data:`LOG_FLOOR`: a factor of e off is 1 whichever way."""
    return np.abs(np.log(np.maximum(y_pred, LOG_FLOOR)) - np.log(np.maximum(y_true, LOG_FLOOR)))


def _ratio(numerator: float, denominator: float) -> float:
    """numerator/denominator, with 0/0 = 0 and x/0 = inf (a perfect baseline cannot be beaten)."""
    if denominator > 0:
        return numerator / denominator
    return 0.0 if numerator == 0 else math.inf


def _correlation(a: np.ndarray, b: np.ndarray) -> float:
    """Pearson correlation, 0 when either side is constant (as Weka reports it)."""
    da, db = a - a.mean(), b - b.mean()
    denominator = math.sqrt(float(da @ da) * float(db @ db))
    return float(da @ db) / denominator if denominator > 0 else 0.0


def compute_metrics(
    y_true: ArrayLike, y_pred: ArrayLike, y_prior: ArrayLike, censored: ArrayLike | None = None
) -> dict[str, float]:
    """All metrics of predictions ``y_pred`` of ``y_true`` against the baseline answers ``y_prior``.

    Percentages (rae, rrse, mape, median_ape) are in %; shares are in [0, 1]; ``male`` and ``mdale``, the mean
    and median absolute log errors, in units of ln (0.69: a factor of two); relative
    errors use only rows with a positive true runtime (NaN when there are none). Rows flagged
    ``censored`` enter only ``censored_rows`` and ``censored_underestimate``, present when there are
    any; the other metrics are NaN when every row is censored.
    """
    y = np.asarray(y_true, dtype="float64")
    pred = np.asarray(y_pred, dtype="float64")
    prior = np.asarray(y_prior, dtype="float64")
    bound = np.zeros(y.shape, dtype=bool) if censored is None else np.asarray(censored, dtype=bool)
    if not (y.shape == pred.shape == prior.shape == bound.shape) or y.ndim != 1 or len(y) == 0:
        shapes = f"{y.shape}, {pred.shape}, {prior.shape}, {bound.shape}"
        raise ValueError(f"need equally long non-empty 1-d arrays, got shapes {shapes}")
    if not bound.any():
        return _finished_metrics(y, pred, prior)
    finished = ~bound
    metrics = (
        _finished_metrics(y[finished], pred[finished], prior[finished])
        if finished.any()
        else dict.fromkeys(METRICS, math.nan)
    )
    metrics["censored_rows"] = float(bound.sum())
    metrics["censored_underestimate"] = float((pred[bound] < y[bound]).mean())
    return metrics


def _finished_metrics(y: np.ndarray, pred: np.ndarray, prior: np.ndarray) -> dict[str, float]:
    """:data:`METRICS` of predictions of finished runs' times (non-empty, equally long arrays)."""
    error = pred - y
    abs_error = np.abs(error)
    positive = y > 0
    ape = abs_error[positive] / y[positive]
    ratio = pred[positive] / y[positive]
    log_errors = absolute_log_errors(y, pred)
    under = error < 0
    some = bool(positive.any())
    return {
        "cc": _correlation(y, pred),
        "mae": float(abs_error.mean()),
        "rmse": math.sqrt(float((error**2).mean())),
        "rae": 100.0 * _ratio(float(abs_error.sum()), float(np.abs(y - prior).sum())),
        "rrse": 100.0 * math.sqrt(_ratio(float((error**2).sum()), float(((y - prior) ** 2).sum()))),
        "mape": 100.0 * float(ape.mean()) if some else math.nan,
        "median_ape": 100.0 * float(np.median(ape)) if some else math.nan,
        "male": float(log_errors.mean()),
        # the bootstrap's median (training.significance)
        "mdale": float(np.quantile(log_errors, 0.5, method="lower")),
        "within_10pct": float((ape <= 0.10).mean()) if some else math.nan,
        "within_25pct": float((ape <= 0.25).mean()) if some else math.nan,
        "within_factor_2": float(((ratio >= 0.5) & (ratio <= 2.0)).mean()) if some else math.nan,
        "underestimate_rate": float(under.mean()),
        "mean_underestimate": float(-error[under].mean()) if under.any() else 0.0,
    }

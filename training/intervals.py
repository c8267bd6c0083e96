"""Intervals of a candidate: residual log-ratio quantiles to serve, and the coverage they achieve out of fold."""

from __future__ import annotations

import numpy as np

from predictor.intervals import MIN_SECONDS, quantile_at, residual_log_quantiles


def _log_ratios(actual: np.ndarray, predicted: np.ndarray) -> np.ndarray:
    """log(actual / predicted) with both floored at a millisecond, as the quantiles are computed."""
    return np.log(np.maximum(actual, MIN_SECONDS)) - np.log(np.maximum(predicted, MIN_SECONDS))


def cross_fitted_coverage(actual: np.ndarray, predicted: np.ndarray, folds: np.ndarray, coverage: float) -> float:
    """Share of rows inside the interval of nominal ``coverage`` built from the other folds' residuals only.

    ``predicted`` are out-of-fold predictions; quantiles taken on every row would be judged on the
    rows they were taken from, so each fold is judged by the quantiles of the rest (cross-fitting).
    """
    ratios = _log_ratios(actual, predicted)
    covered = np.zeros(len(actual), dtype=bool)
    for fold in np.unique(folds):
        held = folds == fold
        quantiles = residual_log_quantiles(actual[~held], predicted[~held])
        low, high = quantile_at(quantiles, (1 - coverage) / 2), quantile_at(quantiles, (1 + coverage) / 2)
        covered[held] = (ratios[held] >= low) & (ratios[held] <= high)
    return float(covered.mean())

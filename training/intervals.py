"""Intervals of a candidate: residual log-ratio quantiles to serve, and the coverage they achieve out of fold."""

from __future__ import annotations

import numpy as np

from predictor.intervals import log_ratios, quantile_at, residual_log_quantiles
from predictor.kaplan_meier import product_limit


def cross_fitted_coverage(
    actual: np.ndarray, predicted: np.ndarray, folds: np.ndarray, coverage: float, censored: np.ndarray | None = None
) -> float:
    """Share of rows inside the interval of nominal ``coverage`` built from the other folds' residuals only.

    ``predicted`` are out-of-fold predictions; quantiles taken on every row would be judged on the
    rows they were taken from, so each fold is judged by the quantiles of the rest (cross-fitting).

    A ``censored`` row's ratio is only a lower bound: its run outlived it. Whether the interval held
    that run is unknown, so the row counts for the chance that it did, under the other folds' product-
    limit estimate: P(low <= ratio <= high | ratio > bound). That is 0 when the bound already lies at or
    above the upper end (the run overran the interval: a certain miss) or beyond every finished ratio
    of the other folds (nothing is known of what follows it: counted as a miss, the safe side), and
    the plain in-or-out of a finished row when nothing is censored.
    """
    bound = np.zeros(len(actual), dtype=bool) if censored is None else np.asarray(censored, dtype=bool)
    ratios = log_ratios(actual, predicted)
    covered = np.zeros(len(actual))
    for fold in np.unique(folds):
        held = folds == fold
        quantiles = residual_log_quantiles(actual[~held], predicted[~held], bound[~held])
        low, high = quantile_at(quantiles, (1 - coverage) / 2), quantile_at(quantiles, (1 + coverage) / 2)
        finished = held & ~bound
        covered[finished] = (ratios[finished] >= low) & (ratios[finished] <= high)
        if (held & bound).any():
            estimate = product_limit(ratios[~held], bound[~held])
            covered[held & bound] = [estimate.share_inside(r, low, high) for r in ratios[held & bound]]
    return float(covered.mean())

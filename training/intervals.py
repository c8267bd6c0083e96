"""Intervals of a candidate: residual log-ratio quantiles to serve, and the coverage they achieve out of fold."""

from __future__ import annotations

import numpy as np

from predictor.intervals import log_ratios, quantile_at, residual_log_quantiles
from predictor.kaplan_meier import product_limit
from training.folds import FoldPlan


def cross_fitted_coverage(
    actual: np.ndarray, predicted: np.ndarray, plan: FoldPlan, coverage: float, censored: np.ndarray | None = None
) -> float:
    """Share of scored rows inside the interval of nominal ``coverage`` built from residuals the fold could have known.

    ``predicted`` are out-of-fold predictions; quantiles taken on every row would be judged on the rows they were
    taken from, so each fold is judged by the quantiles of the scored rows it trained on (cross-fitting): the other
    folds of a shuffled plan, the earlier windows of a forward one. A fold with none (a forward plan's first) is not
    judged; NaN when no fold is.

    A ``censored`` row's ratio is only a lower bound: its run outlived it. Whether the interval held
    that run is unknown, so the row counts for the chance that it did, under the known rows' product-
    limit estimate: P(low <= ratio <= high | ratio > bound). That is 0 when the bound already lies at or
    above the upper end (the run overran the interval: a certain miss) or beyond every finished ratio
    of the known rows (nothing is known of what follows it: counted as a miss, the safe side), and
    the plain in-or-out of a finished row when nothing is censored.
    """
    bound = np.zeros(len(actual), dtype=bool) if censored is None else np.asarray(censored, dtype=bool)
    ratios = log_ratios(actual, predicted)
    covered: list[np.ndarray] = []
    for fold in range(plan.n_folds):
        held, known = plan.test_rows(fold), plan.train_rows(fold) & plan.scored
        if not known.any():
            continue
        quantiles = residual_log_quantiles(actual[known], predicted[known], bound[known])
        low, high = quantile_at(quantiles, (1 - coverage) / 2), quantile_at(quantiles, (1 + coverage) / 2)
        inside = np.zeros(int(held.sum()))
        finished = ~bound[held]
        inside[finished] = (ratios[held][finished] >= low) & (ratios[held][finished] <= high)
        if (~finished).any():
            estimate = product_limit(ratios[known], bound[known])
            inside[~finished] = [estimate.share_inside(r, low, high) for r in ratios[held][~finished]]
        covered.append(inside)
    return float(np.concatenate(covered).mean()) if covered else float("nan")


def cross_fitted_exceedance(
    actual: np.ndarray,
    predicted: np.ndarray,
    plan: FoldPlan,
    level: float,
    censored: np.ndarray,
    request: np.ndarray,
) -> tuple[float, float]:
    """How often the runs a fold scored outlived the limit it would have served, against how often they outlived their
    own request: (limit exceeded, request exceeded), shares of the scored runs with a request.

    The limit is the prediction scaled by the quantile at ``level`` of the residuals the fold could have known (the
    earlier windows', as :func:`cross_fitted_coverage` takes them), capped at the request; a run is past a value it
    ran longer than, or was stopped at (censored) having reached it. NaN without such runs.
    """
    bound = np.asarray(censored, dtype=bool)
    request = np.asarray(request, dtype="float64")
    limit_past: list[np.ndarray] = []
    request_past: list[np.ndarray] = []
    for fold in range(plan.n_folds):
        held = plan.test_rows(fold) & np.isfinite(request) & (request > 0)
        known = plan.train_rows(fold) & plan.scored
        if not known.any() or not held.any():
            continue
        quantiles = residual_log_quantiles(actual[known], predicted[known], bound[known])
        limit = np.minimum(predicted[held] * np.exp(quantile_at(quantiles, level)), request[held])
        for value, out in ((limit, limit_past), (request[held], request_past)):
            out.append((actual[held] > value) | (bound[held] & (actual[held] >= value)))
    if not limit_past:
        return float("nan"), float("nan")
    return float(np.concatenate(limit_past).mean()), float(np.concatenate(request_past).mean())

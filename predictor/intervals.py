"""Prediction intervals from out-of-fold residual quantiles (split-conformal on log ratios).

Training records, for each champion, quantiles of log(actual / predicted) over its
out-of-fold predictions. An interval of nominal coverage c around a new prediction
p is [p * exp(q((1-c)/2)), p * exp(q((1+c)/2))]; a walltime limit at quantile u is
p * exp(q(u)). Ratios, not differences, because run-time errors scale with the run time.

A censored run (stopped before it finished) gives a ratio that is a lower bound; with such runs the
quantiles are those of the product-limit (Kaplan-Meier) estimate (:mod:`predictor.kaplan_meier`), so
a limit those runs exceeded is not taken for enough. Without any, they are the plain empirical ones.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from predictor.kaplan_meier import product_limit

QUANTILE_LEVELS: tuple[float, ...] = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.975, 0.99)
MIN_SECONDS = 1e-3
# closer to 1, the upper level (1 + coverage) / 2 rounds to 1.0 in floating point
MAX_COVERAGE = 0.999999


def log_ratios(actual: np.ndarray, predicted: np.ndarray) -> np.ndarray:
    """log(actual / predicted) with both floored at a millisecond."""
    return np.log(np.maximum(actual, MIN_SECONDS)) - np.log(np.maximum(predicted, MIN_SECONDS))


def residual_log_quantiles(
    actual: np.ndarray, predicted: np.ndarray, censored: np.ndarray | None = None
) -> dict[float, float]:
    """Quantiles of log(actual / predicted) at :data:`QUANTILE_LEVELS`, ``censored`` rows' ratios being lower bounds.

    Product-limit quantiles (the empirical ones when nothing is censored) rounded outwards (lower
    levels down, upper levels up), so intervals err wide; levels beyond the last finished ratio take
    the largest ratio observed.
    """
    estimate = product_limit(log_ratios(actual, predicted), censored)
    return {level: estimate.quantile(level, "lower" if level < 0.5 else "higher") for level in QUANTILE_LEVELS}


def quantile_at(quantiles: Mapping[float, float], level: float) -> float:
    """Log-ratio quantile at ``level``, linearly interpolated between recorded levels (clamped at the ends)."""
    if not 0.0 < level < 1.0 or not quantiles:
        raise ValueError(f"quantile level must lie in (0, 1) and quantiles be recorded, got {level}")
    levels = sorted(quantiles)
    return float(np.interp(level, levels, [quantiles[q] for q in levels]))


def scaled(predicted: float | np.ndarray, quantiles: Mapping[float, float], level: float) -> float | np.ndarray:
    """``predicted`` scaled by the recorded error ratio at ``level``."""
    return predicted * math.exp(quantile_at(quantiles, level))


def interval(
    predicted: float | np.ndarray, quantiles: Mapping[float, float], coverage: float
) -> tuple[float | np.ndarray, float | np.ndarray]:
    """Central interval of nominal ``coverage`` around ``predicted``."""
    return scaled(predicted, quantiles, (1 - coverage) / 2), scaled(predicted, quantiles, (1 + coverage) / 2)

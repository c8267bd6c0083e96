"""Coverage of residual-quantile intervals, judged out of fold by cross-fitting."""

from __future__ import annotations

import numpy as np
import pytest

from predictor.intervals import interval, residual_log_quantiles
from training.intervals import cross_fitted_coverage


def test_each_fold_is_judged_by_the_other_folds_quantiles() -> None:
    # log(actual / predicted) = 0, 0.1, -0.1, 0.5, one row per fold. With three other rows the 5% and 95%
    # quantiles are their minimum and maximum: row 0 sees [-0.1, 0.5] (in), row 1 [-0.1, 0.5] (in),
    # row 2 [0, 0.5] (out), row 3 [-0.1, 0.1] (out).
    predicted = np.full(4, 10.0)
    actual = predicted * np.exp([0.0, 0.1, -0.1, 0.5])
    assert cross_fitted_coverage(actual, predicted, np.arange(4), 0.9) == pytest.approx(0.5)


def test_in_sample_quantiles_would_claim_full_coverage() -> None:
    predicted = np.full(4, 10.0)
    actual = predicted * np.exp([0.0, 0.1, -0.1, 0.5])
    low, high = interval(predicted, residual_log_quantiles(actual, predicted), 0.9)
    assert ((actual >= low * (1 - 1e-12)) & (actual <= high * (1 + 1e-12))).all()


def test_coverage_of_lognormal_errors_is_near_nominal() -> None:
    rng = np.random.default_rng(5)
    predicted = rng.uniform(1, 100, 2000)
    actual = predicted * rng.lognormal(0.0, 0.3, 2000)
    achieved = cross_fitted_coverage(actual, predicted, np.arange(2000) % 10, 0.8)
    assert achieved == pytest.approx(0.8, abs=0.03)

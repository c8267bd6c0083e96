"""Coverage of residual-quantile intervals, judged out of fold by cross-fitting."""

from __future__ import annotations

import numpy as np
import pytest

from predictor.intervals import interval, residual_log_quantiles
from training.folds import FoldPlan
from training.intervals import cross_fitted_coverage


def _shuffled(folds: np.ndarray) -> FoldPlan:
    """A shuffled plan with these fold ids."""
    return FoldPlan([f"r{i}" for i in range(len(folds))], np.asarray(folds))


def test_each_fold_is_judged_by_the_other_folds_quantiles() -> None:
    # log(actual / predicted) = 0, 0.1, -0.1, 0.5, one row per fold. With three other rows the 5% and 95%
    # quantiles are their minimum and maximum: row 0 sees [-0.1, 0.5] (in), row 1 [-0.1, 0.5] (in),
    # row 2 [0, 0.5] (out), row 3 [-0.1, 0.1] (out).
    predicted = np.full(4, 10.0)
    actual = predicted * np.exp([0.0, 0.1, -0.1, 0.5])
    assert cross_fitted_coverage(actual, predicted, _shuffled(np.arange(4)), 0.9) == pytest.approx(0.5)


def test_in_sample_quantiles_would_claim_full_coverage() -> None:
    predicted = np.full(4, 10.0)
    actual = predicted * np.exp([0.0, 0.1, -0.1, 0.5])
    low, high = interval(predicted, residual_log_quantiles(actual, predicted), 0.9)
    assert ((actual >= low * (1 - 1e-12)) & (actual <= high * (1 + 1e-12))).all()


def test_coverage_of_lognormal_errors_is_near_nominal() -> None:
    rng = np.random.default_rng(5)
    predicted = rng.uniform(1, 100, 2000)
    actual = predicted * rng.lognormal(0.0, 0.3, 2000)
    achieved = cross_fitted_coverage(actual, predicted, _shuffled(np.arange(2000) % 10), 0.8)
    assert achieved == pytest.approx(0.8, abs=0.03)


def test_a_censored_run_counts_for_the_chance_that_the_interval_held_it() -> None:
    # Fold 0: eight finished rows, log ratios -0.35..0.35. Fold 1: two runs stopped at log ratios 0.9 and -1.
    predicted = np.full(10, 10.0)
    ratios = np.array([-0.35, -0.25, -0.15, -0.05, 0.05, 0.15, 0.25, 0.35, 0.9, -1.0])
    censored = np.array([False] * 8 + [True, True])
    folds = _shuffled(np.array([0] * 8 + [1, 1]))
    coverage = cross_fitted_coverage(predicted * np.exp(ratios), predicted, folds, 0.5, censored)
    # Fold 1 is judged by the eight finished ratios: the 25% and 75% quantiles are -0.25 and 0.25 (rounded out).
    # The run stopped at 0.9 overran that interval: a miss. The one stopped at -1 lies inside it with the chance
    # that a ratio above -1 lies in [-0.25, 0.25]: 6 in 8. Fold 0 is judged by two bounds only: every quantile is
    # the largest, 0.9, and no finished row lies at it.
    assert coverage == pytest.approx((0.0 + 6 / 8) / 10)


def test_without_censored_rows_coverage_is_unchanged() -> None:
    rng = np.random.default_rng(7)
    predicted = rng.uniform(1, 100, 200)
    actual = predicted * rng.lognormal(0.0, 0.3, 200)
    folds = _shuffled(np.arange(200) % 10)
    assert cross_fitted_coverage(actual, predicted, folds, 0.8, np.zeros(200, dtype=bool)) == cross_fitted_coverage(
        actual, predicted, folds, 0.8
    )


def test_a_forward_window_is_judged_by_the_earlier_windows_residuals_only() -> None:
    # Ten rows in time order; the first four only train. Window 0 (rows 4-5) has no earlier scored rows and is not
    # judged; window 1 (rows 6-7) is judged by rows 4-5's ratios (0 and 0.1: a 90% interval [0, 0.1]), window 2
    # (rows 8-9) by rows 4-7's.
    predicted = np.full(10, 10.0)
    ratios = np.array([9, 9, 9, 9, 0.0, 0.1, 0.05, 2.0, 0.05, -0.5])  # the unscored rows' ratios must not count
    plan = FoldPlan.forward_chain([f"r{i}" for i in range(10)], np.arange(10.0), 3, start=0.4)
    assert list(plan.folds) == [-1] * 4 + [0, 0, 1, 1, 2, 2]
    coverage = cross_fitted_coverage(predicted * np.exp(ratios), predicted, plan, 0.9)
    # window 1: 0.05 in [0, 0.1], 2.0 out; window 2 with [0, 2.0]: 0.05 in, -0.5 out
    assert coverage == pytest.approx(2 / 4)


def test_the_limit_a_window_would_have_served_is_judged_against_the_users_requests() -> None:
    from training.intervals import cross_fitted_exceedance

    # eight runs in time order, the first two only train; every prediction is 10 s, requests 100 s
    plan = FoldPlan.forward_chain([f"r{i}" for i in range(8)], np.arange(8.0), 3, start=0.25)
    predicted = np.full(8, 10.0)
    actual = np.array([10, 10, 10, 12, 30, 10, 100, 11.0])
    censored = np.array([False] * 6 + [True, False])  # run 6 was killed at its request
    request = np.full(8, 100.0)
    limit, asked = cross_fitted_exceedance(actual, predicted, plan, 0.95, censored, request)
    # window 0 (runs 2, 3) has no earlier residuals and is not judged; of runs 4-7 only the killed one reached its request
    assert asked == pytest.approx(1 / 4)
    assert limit == pytest.approx(2 / 4)  # the limits learned from small residuals are outlived by the 30 s run as well

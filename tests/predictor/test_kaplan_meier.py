"""The product-limit estimate: exactly numpy's quantiles without censoring, lifelines' curve with it, the tail rule."""

from __future__ import annotations

import numpy as np
import pytest
from lifelines import KaplanMeierFitter

from predictor.intervals import QUANTILE_LEVELS, residual_log_quantiles
from predictor.kaplan_meier import product_limit

LEVELS = (*QUANTILE_LEVELS, 0.0, 0.001, 0.3, 0.7, 0.999, 1.0)


@pytest.mark.parametrize("n", [1, 2, 3, 7, 10, 11, 20, 37, 100, 1001])
def test_without_censoring_the_quantiles_are_numpys_exactly(n: int) -> None:
    rng = np.random.default_rng(n)
    for values in (rng.normal(size=n), np.round(rng.normal(size=n), 1)):  # the second with ties
        estimate = product_limit(values)
        for level in LEVELS:
            for side in ("lower", "higher"):
                assert estimate.quantile(level, side) == np.quantile(values, level, method=side), (level, side)


def test_residual_quantiles_without_censoring_are_todays_empirical_ones() -> None:
    rng = np.random.default_rng(0)
    predicted = rng.uniform(0.5, 50, 137)
    actual = predicted * rng.lognormal(0, 0.4, 137)
    ratios = np.log(actual) - np.log(predicted)
    today = {q: float(np.quantile(ratios, q, method="lower" if q < 0.5 else "higher")) for q in QUANTILE_LEVELS}
    assert residual_log_quantiles(actual, predicted) == today
    assert residual_log_quantiles(actual, predicted, np.zeros(137, dtype=bool)) == today


@pytest.mark.parametrize("seed", range(5))
def test_the_curve_is_lifelines_kaplan_meier(seed: int) -> None:
    rng = np.random.default_rng(seed)
    values = np.round(rng.lognormal(1.0, 0.8, 60), 1)  # ties, some between a finished and a censored value
    censored = rng.random(60) < 0.35
    estimate = product_limit(values, censored)
    fitter = KaplanMeierFitter().fit(values, event_observed=~censored)
    grid = np.unique(values)
    expected = fitter.survival_function_at_times(grid).to_numpy()
    np.testing.assert_allclose([1.0 - estimate.cdf(t) for t in grid], expected, rtol=1e-12, atol=1e-12)
    assert estimate.weights.sum() + estimate.tail == pytest.approx(60)


def test_a_censored_value_hands_its_weight_to_the_values_above_it() -> None:
    estimate = product_limit([1.0, 2.0, 3.0, 4.0], [False, True, False, False])
    np.testing.assert_array_equal(estimate.values, [1.0, 3.0, 4.0])
    np.testing.assert_allclose(estimate.weights, [1.0, 1.5, 1.5])
    assert estimate.tail == 0.0
    # At equal values the finished run comes first: the censored 2.0 outlived the finished 2.0.
    tie = product_limit([2.0, 2.0, 5.0], [True, False, False])
    np.testing.assert_allclose(tie.weights, [1.0, 2.0])


def test_levels_the_curve_never_reaches_take_the_largest_bound() -> None:
    # Half the runs were stopped at 10, beyond every finished value: the curve stops at 0.5.
    estimate = product_limit([1.0, 2.0, 3.0, 10.0, 10.0, 10.0], [False, False, False, True, True, True])
    assert estimate.tail == 3.0 and estimate.cdf(100.0) == 0.5
    assert estimate.quantile(0.95, "higher") == 10.0 and estimate.quantile(0.99, "lower") == 10.0
    assert estimate.quantile(0.25, "lower") == 2.0
    dropped = product_limit([1.0, 2.0, 3.0])
    assert dropped.quantile(0.95, "higher") == 3.0, "without the stopped runs the top would be the longest finished one"


def test_chance_inside_an_interval_for_a_run_known_to_exceed_a_bound() -> None:
    estimate = product_limit([1.0, 2.0, 3.0, 4.0])  # a quarter of the mass on each
    assert estimate.share_inside(2.5, 1.0, 3.0) == pytest.approx(0.5)  # above 2.5: 3 and 4, and 3 is inside
    assert estimate.share_inside(0.0, 2.0, 4.0) == pytest.approx(0.75)  # below the interval: 2, 3, 4 of 1..4
    assert estimate.share_inside(3.0, 1.0, 3.0) == 0.0  # it outlived the upper end: a certain miss
    assert estimate.share_inside(4.0, 1.0, 9.0) == 0.0  # beyond every finished value: nothing is known, a miss


def test_bad_input_is_refused() -> None:
    with pytest.raises(ValueError, match="non-empty"):
        product_limit([])
    with pytest.raises(ValueError, match="one censored flag per value"):
        product_limit([1.0, 2.0], [True])

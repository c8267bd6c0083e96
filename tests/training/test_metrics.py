"""Metrics against values computed by hand."""

from __future__ import annotations

import math

import pytest

from training.metrics import LOWER_IS_BETTER, METRICS, compute_metrics

# Three rows from two folds: training-fold means 20 (rows 1, 2) and 30 (row 3).
Y = [10.0, 20.0, 40.0]
PRED = [12.0, 15.0, 40.0]
PRIOR = [20.0, 20.0, 30.0]


def test_hand_computed_values() -> None:
    m = compute_metrics(Y, PRED, PRIOR)
    # errors +2, -5, 0; |y - prior| = 10, 0, 10
    assert m["mae"] == pytest.approx(7 / 3)
    assert m["rmse"] == pytest.approx(math.sqrt(29 / 3))
    assert m["rae"] == pytest.approx(100 * 7 / 20)
    assert m["rrse"] == pytest.approx(100 * math.sqrt(29 / 200))
    # deviations from the means, times 3: y (-40, -10, 50), pred (-31, -22, 53)
    assert m["cc"] == pytest.approx(4110 / math.sqrt(4200 * 4254))
    # absolute percentage errors 20 %, 25 %, 0 %
    assert m["mape"] == pytest.approx(15.0)
    assert m["median_ape"] == pytest.approx(20.0)
    assert m["within_10pct"] == pytest.approx(1 / 3)
    assert m["within_25pct"] == pytest.approx(1.0)
    assert m["within_factor_2"] == pytest.approx(1.0)
    assert m["underestimate_rate"] == pytest.approx(1 / 3)
    assert m["mean_underestimate"] == pytest.approx(5.0)


def test_predicting_the_prior_scores_rae_100() -> None:
    m = compute_metrics(Y, PRIOR, PRIOR)
    assert m["rae"] == pytest.approx(100.0)
    assert m["rrse"] == pytest.approx(100.0)


def test_perfect_predictions() -> None:
    m = compute_metrics(Y, Y, PRIOR)
    assert (m["mae"], m["rae"], m["mape"], m["underestimate_rate"], m["mean_underestimate"]) == (0, 0, 0, 0, 0)
    assert m["cc"] == pytest.approx(1.0)
    assert m["within_10pct"] == 1.0


def test_factor_of_two_and_underestimates() -> None:
    m = compute_metrics([10.0, 10.0, 10.0, 10.0], [4.0, 5.0, 20.0, 21.0], [10.0] * 4)
    assert m["within_factor_2"] == pytest.approx(0.5)
    assert m["underestimate_rate"] == pytest.approx(0.5)
    assert m["mean_underestimate"] == pytest.approx((6 + 5) / 2)


def test_degenerate_cases() -> None:
    constant = compute_metrics(Y, [5.0, 5.0, 5.0], PRIOR)
    assert constant["cc"] == 0.0
    assert compute_metrics([3.0, 3.0], [3.0, 3.0], [3.0, 3.0])["rae"] == 0.0
    assert compute_metrics([3.0, 3.0], [4.0, 3.0], [3.0, 3.0])["rae"] == math.inf
    zero_runtimes = compute_metrics([0.0, 0.0], [1.0, 0.0], [0.5, 0.5])
    assert math.isnan(zero_runtimes["mape"]) and math.isnan(zero_runtimes["within_factor_2"])


def test_shapes_are_checked() -> None:
    with pytest.raises(ValueError, match="equally long"):
        compute_metrics([1.0, 2.0], [1.0], [1.0, 2.0])
    with pytest.raises(ValueError):
        compute_metrics([], [], [])


def test_selection_metrics_are_computed() -> None:
    assert LOWER_IS_BETTER <= compute_metrics(Y, PRED, PRIOR).keys()


def test_metrics_name_every_metric_of_finished_runs() -> None:
    assert tuple(compute_metrics(Y, PRED, PRIOR)) == METRICS


def test_censored_rows_are_left_out_of_errors_and_judged_as_bounds() -> None:
    # Two censored rows: stopped at 50 s (predicted 30: a sure underestimate) and at 5 s (predicted 60: fine).
    m = compute_metrics([*Y, 50.0, 5.0], [*PRED, 30.0, 60.0], [*PRIOR, 99.0, 99.0], [False, False, False, True, True])
    assert {k: m[k] for k in METRICS} == compute_metrics(Y, PRED, PRIOR)
    assert (m["censored_rows"], m["censored_underestimate"]) == (2.0, 0.5)
    assert "censored_rows" not in compute_metrics(Y, PRED, PRIOR, [False, False, False])


def test_only_censored_rows_leave_the_errors_undefined() -> None:
    m = compute_metrics([50.0], [60.0], [10.0], [True])
    assert all(math.isnan(m[k]) for k in METRICS) and (m["censored_rows"], m["censored_underestimate"]) == (1.0, 0.0)

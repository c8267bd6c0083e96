"""Cross-validation on synthetic data with a known law."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from training.crossval import cross_validate, refit
from training.dataset import TrainingSet
from training.folds import FoldPlan


@pytest.fixture(scope="module")
def doubling() -> TrainingSet:
    """y = 2 x exactly, 40 runs."""
    x = np.linspace(1.0, 100.0, 40)
    run_ids = [f"r{i:02d}" for i in range(40)]
    return TrainingSet("a", "p", pd.DataFrame({"x": x}), 2.0 * x, ["x"], run_ids)


@pytest.fixture(scope="module")
def plan(doubling: TrainingSet) -> FoldPlan:
    return FoldPlan.create(doubling.run_ids, 5, seed=11)


def test_linear_recovers_y_equals_2x(doubling: TrainingSet, plan: FoldPlan) -> None:
    fits: list[int] = []
    result = cross_validate("linear", doubling, plan, on_fit=fits.append)
    assert fits == [0, 1, 2, 3, 4]
    assert result.metrics["rae"] == pytest.approx(0.0, abs=1e-6)
    assert result.metrics["cc"] == pytest.approx(1.0)
    np.testing.assert_allclose(result.predictions, doubling.y, rtol=1e-9)
    assert len(result.fold_metrics) == 5 and result.fit_seconds > 0


def test_mean_model_scores_rae_100_against_the_fold_prior(doubling: TrainingSet, plan: FoldPlan) -> None:
    result = cross_validate("mean", doubling, plan)
    assert result.metrics["rae"] == pytest.approx(100.0)
    np.testing.assert_allclose(result.predictions, result.priors)
    for _, test in plan.splits():
        assert len(set(result.priors[test])) == 1


def test_predictions_are_out_of_fold(doubling: TrainingSet, plan: FoldPlan) -> None:
    lightgbm = cross_validate("lightgbm", doubling, plan, seed=3)
    again = cross_validate("lightgbm", doubling, plan, seed=3)
    np.testing.assert_array_equal(lightgbm.predictions, again.predictions)
    in_sample = refit("lightgbm", doubling, seed=3).predict(doubling.X)
    assert np.abs(lightgbm.predictions - doubling.y).mean() > np.abs(in_sample - doubling.y).mean()


def test_plan_must_cover_the_training_set(doubling: TrainingSet) -> None:
    other = FoldPlan.create([f"x{i}" for i in range(40)], 5, seed=11)
    with pytest.raises(ValueError, match="does not cover"):
        cross_validate("linear", doubling, other)


def test_refit_uses_every_row(doubling: TrainingSet) -> None:
    model = refit("linear", doubling)
    np.testing.assert_allclose(model.predict(pd.DataFrame({"x": [500.0]})), [1000.0])

"""AveragedRegressor: scikit-learn's contract, weighted means, assembly from fitted members, bad members."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.dummy import DummyRegressor
from sklearn.linear_model import LinearRegression
from sklearn.utils.estimator_checks import check_estimator

from models import make_model
from models.ensemble import AveragedRegressor

RNG = np.random.default_rng(3)
X = pd.DataFrame({"a": RNG.uniform(1, 10, 50), "b": RNG.uniform(1, 10, 50)})
Y = 2.0 * X["a"].to_numpy() + X["b"].to_numpy()


def test_passes_check_estimator() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = check_estimator(
            AveragedRegressor([("ols", LinearRegression()), ("mean", DummyRegressor())], [3, 1]), on_fail=None
        )
    assert [r["check_name"] for r in results if r["status"] == "failed"] == []


def test_answers_the_weighted_mean_of_its_members() -> None:
    ensemble = AveragedRegressor([("ols", LinearRegression()), ("mean", DummyRegressor())], [3, 1]).fit(X, Y)
    expected = (3 * LinearRegression().fit(X, Y).predict(X) + Y.mean()) / 4
    np.testing.assert_allclose(ensemble.predict(X), expected)


def test_from_fitted_serves_the_refits_without_fitting_again() -> None:
    members = [
        ("linear_log", make_model("linear_log").fit(X, Y)),
        ("lightgbm", make_model("lightgbm", seed=0).fit(X, Y)),
    ]
    ensemble = AveragedRegressor.from_fitted(members, [1, 1], X)
    assert ensemble.estimators_[0] is members[0][1] and list(ensemble.feature_names_in_) == ["a", "b"]
    np.testing.assert_allclose(ensemble.predict(X), (members[0][1].predict(X) + members[1][1].predict(X)) / 2)
    with pytest.raises(ValueError, match="feature names"):
        ensemble.predict(X[["b", "a"]])


@pytest.mark.parametrize(
    ("members", "weights"), [([], None), ([("ols", LinearRegression())], [1, 2]), ([("ols", LinearRegression())], [0])]
)
def test_bad_members_or_weights_are_refused(members: list, weights: list | None) -> None:
    with pytest.raises(ValueError, match="member"):
        AveragedRegressor(members, weights).fit(X, Y)

"""The Tobit member: least squares (ridge) in log-log space without censoring, lifelines' log-normal AFT with it."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from lifelines import LogNormalAFTFitter
from sklearn.linear_model import Ridge
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer, StandardScaler

from models import make_model
from models.censored import TobitLogRegression
from models.transforms import signed_log1p
from models.zoo import learns_from_censored


def power_law(seed: int, n: int = 200) -> tuple[pd.DataFrame, np.ndarray]:
    """Seconds ~ size^0.9 / other^0.4 with log-normal noise (sigma 0.5), sizes over three orders of magnitude."""
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({"size": 10 ** rng.uniform(1, 4, n), "other": rng.uniform(1, 50, n)})
    seconds = np.exp(0.3 + 0.9 * np.log1p(X["size"]) - 0.4 * np.log1p(X["other"]) + rng.normal(0, 0.5, n))
    return X, seconds.to_numpy()


def scaled_features(X: pd.DataFrame) -> np.ndarray:
    """The member's view of the features: signed-log, then standardised."""
    features = signed_log1p(X.to_numpy(dtype=float))
    return (features - features.mean(axis=0)) / features.std(axis=0)


def test_only_the_tobit_member_is_registered_to_learn_from_censored_runs() -> None:
    assert learns_from_censored("tobit_log") and not learns_from_censored("linear_log")
    assert isinstance(make_model("tobit_log"), TobitLogRegression)


def test_without_censoring_it_is_least_squares_in_log_log_space() -> None:
    X, y = power_law(1)
    tobit = TobitLogRegression(alpha=0.0).fit(X, y)
    np.testing.assert_allclose(tobit.predict(X), make_model("linear_log").fit(X, y).predict(X), rtol=1e-9)
    np.testing.assert_allclose(
        tobit.predict(X), TobitLogRegression(alpha=0.0).fit(X, y, censored=np.zeros(len(y))).predict(X)
    )
    residual = np.log(y) - np.log(tobit.predict(X))
    assert tobit.scale_ == pytest.approx(np.sqrt(np.mean(residual**2)))


def test_its_penalty_is_a_ridge_whose_strength_does_not_depend_on_the_noise() -> None:
    X, y = power_law(2)
    ridge = make_pipeline(FunctionTransformer(signed_log1p), StandardScaler(), Ridge(alpha=3.0)).fit(X, np.log(y))
    tobit = TobitLogRegression(alpha=3.0).fit(X, y)
    np.testing.assert_allclose(tobit.coef_, ridge[-1].coef_, rtol=1e-9)
    np.testing.assert_allclose(tobit.predict(X), np.exp(ridge.predict(X)), rtol=1e-9)


def test_with_censoring_it_is_lifelines_log_normal_aft() -> None:
    X, truth = power_law(3)
    limit = np.quantile(truth, 0.7)
    censored = truth > limit  # the longest 30 % killed at one limit
    y = np.minimum(truth, limit)
    tobit = TobitLogRegression(alpha=0.0).fit(X, y, censored=censored)
    assert tobit.n_iter_ > 0
    table = pd.DataFrame(scaled_features(X), columns=list(X.columns)).assign(T=y, E=~censored)
    aft = LogNormalAFTFitter().fit(table, duration_col="T", event_col="E")
    mu = aft.params_["mu_"]
    np.testing.assert_allclose(tobit.coef_, mu[list(X.columns)].to_numpy(), atol=1e-4)
    assert tobit.intercept_ == pytest.approx(mu["Intercept"], abs=1e-4)
    assert np.log(tobit.scale_) == pytest.approx(aft.params_["sigma_"]["Intercept"], abs=1e-4)
    np.testing.assert_allclose(tobit.predict(X), aft.predict_median(table[list(X.columns)]).to_numpy(), rtol=1e-4)
    # Taking the bounds for times would pull the long jobs' estimates down.
    naive = TobitLogRegression(alpha=0.0).fit(X, y)
    assert (tobit.predict(X)[censored] > naive.predict(X)[censored]).all()


def test_bad_censoring_is_refused() -> None:
    X, y = power_law(4, n=10)
    with pytest.raises(ValueError, match="3 flags for 10 rows"):
        TobitLogRegression().fit(X, y, censored=[True, False, True])
    with pytest.raises(ValueError, match="every row is censored"):
        TobitLogRegression().fit(X, y, censored=np.ones(10, dtype=bool))

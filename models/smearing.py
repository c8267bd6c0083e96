"""Log-target regression answering the mean run time: Duan's (1983) smearing retransformation."""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin, clone
from sklearn.utils.validation import check_is_fitted, validate_data

from models.transforms import log_seconds


class SmearedLogTarget(RegressorMixin, BaseEstimator):
    """``regressor`` learns log(seconds); answers are exp of its predictions times the smearing factor.

    exp of a log-space prediction estimates the median run time; scaled by the mean of exp(training
    residual) it estimates the mean (Duan 1983), which is what squared errors (RMSE, RRSE) reward and
    which underestimates less often: a variant of the zoo's log target for skewed, noisy run times.
    """

    def __init__(self, regressor: BaseEstimator) -> None:
        self.regressor = regressor

    def fit(self, X: Any, y: Any) -> SmearedLogTarget:
        """Fit the regressor on log seconds and take the smearing factor from its training residuals."""
        X, y = validate_data(self, X, y, y_numeric=True)
        logs = log_seconds(y)
        self.regressor_ = clone(self.regressor).fit(X, logs)
        self.smearing_factor_ = float(np.mean(np.exp(logs - self.regressor_.predict(X))))
        return self

    def predict(self, X: Any) -> np.ndarray:
        """exp of the log-space prediction, times the smearing factor."""
        check_is_fitted(self)
        X = validate_data(self, X, reset=False)
        return np.exp(self.regressor_.predict(X)) * self.smearing_factor_

    def __sklearn_tags__(self) -> Any:
        """A log target fits arbitrary (negative) targets poorly, by design."""
        tags = super().__sklearn_tags__()
        tags.regressor_tags.poor_score = True
        return tags

"""A weighted mean of several fitted regressors: the ensemble that greedy selection builds from the zoo."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin, clone
from sklearn.utils.validation import check_is_fitted, validate_data

# The name the training pipeline gives the ensemble it selects from a pair's members.
ENSEMBLE = "ensemble"


class AveragedRegressor(RegressorMixin, BaseEstimator):
    """The weighted mean of ``estimators``' predictions (Caruana et al. 2004's ensemble selection).

    Training picks the members and weights (how often greedy forward selection took each) from
    the zoo's out-of-fold predictions (``training/ensemble.py``); the served ensemble averages the
    members as refitted on every row, which :meth:`from_fitted` assembles without fitting again.
    ``fit`` fits a clone of each member, so the ensemble is an ordinary estimator too.
    """

    def __init__(self, estimators: Sequence[tuple[str, BaseEstimator]], weights: Sequence[float] | None = None) -> None:
        self.estimators = estimators
        self.weights = weights

    @classmethod
    def from_fitted(
        cls, fitted: Sequence[tuple[str, BaseEstimator]], weights: Sequence[float], X: Any
    ) -> AveragedRegressor:
        """An ensemble of members already fitted on ``X`` (their refits), ready to predict."""
        ensemble = cls(list(fitted), list(weights))
        ensemble._check_members()
        validate_data(ensemble, X, skip_check_array=True)
        ensemble.estimators_ = [estimator for _, estimator in fitted]
        return ensemble

    def fit(self, X: Any, y: Any) -> AveragedRegressor:
        """Fit a clone of every member on ``X`` and ``y``."""
        self._check_members()
        checked, y = validate_data(self, X, y, y_numeric=True)
        # members see column names when there are some
        X = X if hasattr(self, "feature_names_in_") else checked
        self.estimators_ = [clone(estimator).fit(X, y) for _, estimator in self.estimators]
        return self

    def predict(self, X: Any) -> np.ndarray:
        """The members' predictions, averaged with the weights."""
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, skip_check_array=hasattr(self, "feature_names_in_"))
        predictions = [np.asarray(estimator.predict(X), dtype="float64") for estimator in self.estimators_]
        return np.average(predictions, axis=0, weights=self.weights)

    def _check_members(self) -> None:
        if not self.estimators:
            raise ValueError("an ensemble needs at least one member")
        if self.weights is not None and (
            len(self.weights) != len(self.estimators) or min(self.weights) < 0 or sum(self.weights) <= 0
        ):
            raise ValueError(f"need one non-negative weight per member, not all zero; got {self.weights!r}")

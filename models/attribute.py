"""Single-attribute regressors as Weka 3.6 builds them: the one attribute with the lowest training squared error."""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.isotonic import IsotonicRegression
from sklearn.utils.validation import check_is_fitted, validate_data


class SimpleLinearRegression(RegressorMixin, BaseEstimator):
    """Weka's SimpleLinearRegression, y = a + b * x on the best single attribute (``SimpleLinRegr.`` in Table 2 of
    Brandstätter-Müller et al. (2011), *Improving job scheduling on a heterogeneous cluster by predicting job
    execution times using heuristics*).

    Every attribute gets its least-squares line; the one with the smallest training squared error
    wins (the first on ties). Constant attributes are skipped; with none left it predicts the mean.
    """

    def fit(self, X: Any, y: Any) -> SimpleLinearRegression:
        """Choose the attribute whose least-squares line leaves the smallest squared error."""
        X, y = validate_data(self, X, y, y_numeric=True)
        dx = X - X.mean(axis=0)
        dy = y - y.mean()
        sxx = (dx**2).sum(axis=0)
        sxy = dx.T @ dy
        usable = sxx > 0
        slopes = np.divide(sxy, sxx, out=np.zeros_like(sxy), where=usable)
        errors = np.where(usable, float(dy @ dy) - slopes * sxy, np.inf)
        self.attribute_ = int(np.argmin(errors)) if usable.any() else -1
        self.slope_ = float(slopes[self.attribute_]) if usable.any() else 0.0
        x_mean = float(X[:, self.attribute_].mean()) if usable.any() else 0.0
        self.intercept_ = float(y.mean()) - self.slope_ * x_mean
        return self

    def predict(self, X: Any) -> np.ndarray:
        """Intercept plus slope times the chosen attribute."""
        check_is_fitted(self)
        X = validate_data(self, X, reset=False)
        x = X[:, self.attribute_] if self.attribute_ >= 0 else np.zeros(len(X))
        return self.intercept_ + self.slope_ * x


class BestAttributeIsotonic(RegressorMixin, BaseEstimator):
    """Weka's IsotonicRegression, a monotone step function of the best attribute (``IsotonicRegr.`` in Table 2 of
    Brandstätter-Müller et al. 2011).

    Each attribute is tried increasing and decreasing (pool-adjacent-violators, ties pooled); the
    fit with the smallest training squared error wins. As in Weka, a new value takes the level of
    the nearest training value: cut points lie halfway between neighbours, and a value on a cut
    takes the upper level.
    """

    def fit(self, X: Any, y: Any) -> BestAttributeIsotonic:
        """Fit both directions on every attribute and keep the one with the least squared error."""
        X, y = validate_data(self, X, y, y_numeric=True)
        best = (np.inf, 0, True)
        for attribute in range(X.shape[1]):
            for increasing in (True, False):
                fitted = IsotonicRegression(increasing=increasing).fit_transform(X[:, attribute], y)
                error = float(((fitted - y) ** 2).sum())
                if error < best[0]:
                    best = (error, attribute, increasing)
        _, self.attribute_, self.increasing_ = best
        x = X[:, self.attribute_]
        self.thresholds_, first = np.unique(x, return_index=True)
        levels = IsotonicRegression(increasing=self.increasing_).fit_transform(x, y)
        self.levels_ = levels[first]
        return self

    def predict(self, X: Any) -> np.ndarray:
        """The level of the nearest training value of the chosen attribute."""
        check_is_fitted(self)
        X = validate_data(self, X, reset=False)
        cuts = (self.thresholds_[1:] + self.thresholds_[:-1]) / 2
        return self.levels_[np.searchsorted(cuts, X[:, self.attribute_], side="right")]

"""A sparse median line: features chosen along the lasso path by BIC, then least absolute deviations on them alone."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LassoLarsIC, QuantileRegressor
from sklearn.utils.validation import check_is_fitted, validate_data


def median_line() -> QuantileRegressor:
    """The least-absolute-deviations line: no penalty, solved exactly as a linear programme.

    HiGHS's interior-point method (with its crossover to a vertex) reaches the same optimum as the
    dual simplex that ``solver="highs"`` picks, 6x faster on 8,000 rows and 11x on 20,000
    (docs/results/training-speed.md); the simplex grows much faster than linearly with the rows.
    """
    return QuantileRegressor(quantile=0.5, alpha=0.0, solver="highs-ipm")


def bic_support(X: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, int]:
    """Columns of ``X`` kept by the lasso (LARS path) model with the lowest BIC, and how many convergence warnings it gave.

    The criterion needs the noise variance: from the least-squares fit on every column when
    there are more rows than columns plus one (LassoLarsIC's own estimate), else the target's
    variance, which errs towards fewer columns, as one should on so few rows. Nearly collinear
    columns (a FASTA's residues and its sequences times mean length) make the active set
    degenerate, or the residues tiny, and LARS then drops a regressor or stops the path early with
    a ConvergenceWarning; both are expected here (the BIC still chooses among the steps taken), so
    they are counted instead of printed (other warnings pass on). On some such paths scikit-learn's
    solver fails outright (a shape error inside ``lars_path``); every column is kept then, counted too.
    """
    n, p = X.shape
    if not np.ptp(y) or not np.any(np.ptp(X, axis=0)):
        return np.empty(0, dtype="int64"), 0
    noise = None if n > p + 1 else float(np.var(y))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        try:
            lasso = LassoLarsIC(criterion="bic", noise_variance=noise).fit(X, y)
        # scikit-learn's LARS solver can fail outright on a degenerate path: keep every column
        except ValueError:
            return np.arange(p), len(caught) + 1
    others = [w for w in caught if not issubclass(w.category, ConvergenceWarning)]
    for w in others:
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno, source=w.source)
    return np.flatnonzero(lasso.coef_), len(caught) - len(others)


class SparseMedianRegression(RegressorMixin, BaseEstimator):
    """Least absolute deviations on the features a BIC-chosen lasso keeps (a relaxed lasso with a median refit).

    Weka's LinearRegression drops attributes before it fits (Brandstätter-Müller et al. (2011), *Improving job
    scheduling on a heterogeneous cluster by predicting job execution times using heuristics*, Table 2); here the
    lasso path chooses which, BIC how many, and the median line is refitted on those alone without
    shrinkage. Attributes that vary only by chance (a file's GC content when a tool's time does
    not depend on it) mostly drop out instead of bending the line; a few slow runs cannot bend it either.
    ``lasso_warnings_`` counts the lasso path's convergence warnings (regressors dropped, early stops).
    """

    def fit(self, X: Any, y: Any) -> SparseMedianRegression:
        """Choose the support along the lasso path, then fit the median line on it."""
        X, y = validate_data(self, X, y, y_numeric=True)
        self.support_, self.lasso_warnings_ = bic_support(X, y)
        if len(self.support_) == 0:
            self.coef_, self.intercept_ = np.empty(0), float(np.median(y))
            return self
        line = median_line().fit(X[:, self.support_], y)
        self.coef_, self.intercept_ = line.coef_, float(line.intercept_)
        return self

    def predict(self, X: Any) -> np.ndarray:
        """The median line on the chosen features."""
        check_is_fitted(self)
        X = validate_data(self, X, reset=False)
        return self.intercept_ + X[:, self.support_] @ self.coef_

"""Hyper-parameters tuned by inner cross-validation on a bounded subsample, the winner refitted on every row."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from copy import deepcopy
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin, clone
from sklearn.model_selection import GridSearchCV, KFold
from sklearn.utils import check_random_state, get_tags
from sklearn.utils.validation import check_is_fitted, validate_data


class SubsampledGridSearch(RegressorMixin, BaseEstimator):
    """Grid search by ``cv``-fold inner CV on at most ``max_rows`` random rows; the best settings refit on all rows.

    Kernel methods cost O(rows^2) or more per fit, so tuning on a subsample keeps a grid affordable
    on thousands of runs while the served model still learns from every run. This is how the zoo
    tunes the epsilon-SVR "cost", "gamma" and "epsilon" of Brandstätter-Müller et al. (2011), *Improving job
    scheduling on a heterogeneous cluster by predicting job execution times using heuristics* (its Figs 4-5).
    """

    def __init__(
        self,
        estimator: BaseEstimator,
        param_grid: Mapping[str, Sequence[Any]],
        *,
        max_rows: int = 500,
        cv: int = 3,
        scoring: str = "neg_mean_absolute_error",
        random_state: int | None = 0,
    ) -> None:
        self.estimator = estimator
        self.param_grid = param_grid
        self.max_rows = max_rows
        self.cv = cv
        self.scoring = scoring
        self.random_state = random_state

    def fit(self, X: Any, y: Any) -> SubsampledGridSearch:
        """Pick the grid point with the best inner-CV score on a subsample, then fit it on every row."""
        X, y = validate_data(self, X, y, y_numeric=True, ensure_min_samples=2)
        rows = check_random_state(self.random_state).permutation(len(y))[: self.max_rows]
        folds = KFold(min(self.cv, len(rows)), shuffle=True, random_state=self.random_state)
        search = GridSearchCV(clone(self.estimator), self.param_grid, scoring=self.scoring, cv=folds, refit=False)
        search.fit(X[rows], y[rows])
        self.best_params_ = search.best_params_
        self.best_estimator_ = clone(self.estimator).set_params(**self.best_params_).fit(X, y)
        return self

    def predict(self, X: Any) -> np.ndarray:
        """Predictions of the refitted best estimator."""
        check_is_fitted(self)
        X = validate_data(self, X, reset=False)
        return self.best_estimator_.predict(X)

    def __sklearn_tags__(self) -> Any:
        """The tuned estimator's regression and target tags (e.g. a log target fits negative targets poorly)."""
        tags = super().__sklearn_tags__()
        inner = get_tags(self.estimator)
        tags.regressor_tags = deepcopy(inner.regressor_tags)
        tags.target_tags = deepcopy(inner.target_tags)
        return tags

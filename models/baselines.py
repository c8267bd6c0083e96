"""Baselines a learned model must beat: the profile table of Kontothanassis & Goddeau (2004), *A case study of
profile driven scheduling for a heterogeneous cluster of workstations*, and job-history predictors (Tsafrir et al.
2007)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import check_is_fitted, validate_data

Column = str | int


def _column_indices(estimator: BaseEstimator, columns: Sequence[Column]) -> list[int]:
    """Positions of ``columns`` (names of the fitted frame's columns, or positions) in the training matrix."""
    names = list(getattr(estimator, "feature_names_in_", []))
    indices = []
    for column in columns:
        if isinstance(column, str):
            if column not in names:
                raise ValueError(f"column {column!r} is not among the features: {', '.join(names) or '(unnamed)'}")
            indices.append(names.index(column))
        elif 0 <= column < estimator.n_features_in_:
            indices.append(int(column))
        else:
            raise ValueError(f"column {column} is out of range for {estimator.n_features_in_} features")
    return indices


def _parameter_columns(X: np.ndarray, names: list[str]) -> list[int]:
    """Positions of the plain columns (no dot in the name) that are not sizes derived from the inputs' columns."""
    plain = [i for i, name in enumerate(names) if "." not in name]
    sizes = [i for i, name in enumerate(names) if "." in name]
    if not sizes:
        return plain
    inputs = np.unique(X[:, sizes], axis=0, return_inverse=True)[1].reshape(-1)
    n_inputs = int(inputs.max()) + 1
    kept = []
    for i in plain:
        values = np.unique(X[:, i], return_inverse=True)[1].reshape(-1)
        n_values = int(values.max()) + 1
        determined = np.unique(inputs * n_values + values).size == n_inputs  # one value per input
        if not (determined and 2 * n_values > n_inputs):
            kept.append(i)
    return kept


class JobTypeMean(RegressorMixin, BaseEstimator):
    """Kontothanassis & Goddeau 2004's profile table: the mean wall time of each job type on the platform (one
    platform per training set).

    A job type is a distinct combination of the ``group_columns`` values; by default the plain
    parameters, as Kontothanassis & Goddeau 2004 key their table by executable and database: every column whose
    name has no dot, which under the project's feature naming are the parameters (and one-hot categoricals), not
    the ``<file>.<feature>`` sizes of inputs. A derived feature has a plain name too but is a size
    (``search_space``: query times database residues), and keyed by it every job would be a type of
    its own, so a plain column the inputs determine that is nearly as varied as they are (more than
    half as many values as distinct inputs) is left out. Unseen job types get the training mean.
    """

    def __init__(self, group_columns: Sequence[Column] | None = None) -> None:
        self.group_columns = group_columns

    def fit(self, X: Any, y: Any) -> JobTypeMean:
        """Tabulate the mean of ``y`` per job type."""
        X, y = validate_data(self, X, y, y_numeric=True)
        if self.group_columns is None:
            self.group_indices_ = _parameter_columns(X, list(getattr(self, "feature_names_in_", [])))
        else:
            self.group_indices_ = _column_indices(self, self.group_columns)
        self.mean_ = float(y.mean())
        self.job_types_, which = np.unique(X[:, self.group_indices_], axis=0, return_inverse=True)
        self.type_means_ = np.bincount(which, weights=y) / np.bincount(which)
        return self

    def predict(self, X: Any) -> np.ndarray:
        """The mean of each row's job type, or the training mean for a type never seen."""
        check_is_fitted(self)
        X = validate_data(self, X, reset=False)
        table = {tuple(key): mean for key, mean in zip(self.job_types_.tolist(), self.type_means_)}
        keys = X[:, self.group_indices_].tolist()
        return np.array([table.get(tuple(key), self.mean_) for key in keys], dtype="float64")


def first_known(X: np.ndarray, columns: Sequence[int], cap: int | None, mean: float) -> np.ndarray:
    """Per row of the float matrix ``X``: the first positive value among ``columns`` (else ``mean``), capped at column
    ``cap`` where that is positive. :class:`HistoryBaseline`'s answer, which the service's fast path calls on rows
    directly."""
    predictions = np.full(len(X), mean)
    unknown = np.ones(len(X), dtype=bool)
    for index in columns:
        known = unknown & (np.nan_to_num(X[:, index]) > 0)
        predictions[known] = X[known, index]
        unknown &= ~known
    if cap is not None:
        limit = np.nan_to_num(X[:, cap])
        predictions = np.where(limit > 0, np.minimum(predictions, limit), predictions)
    return predictions


class HistoryBaseline(RegressorMixin, BaseEstimator):
    """Job-history estimate of Tsafrir, Etsion and Feitelson (2007): the mean of the user's last two run times.

    Each row takes the first positive value among ``columns`` (by default the user's last-two
    mean, else the last run, else the requested time; zero or NaN means unknown), else the
    training mean; the answer is capped at ``cap_column`` when that is positive, since a job is
    killed at its requested time. ``columns=("request.time",)`` is the user's own estimate.
    """

    def __init__(
        self,
        columns: Sequence[Column] = ("history.last2_mean", "history.last1", "request.time"),
        cap_column: Column | None = "request.time",
    ) -> None:
        self.columns = columns
        self.cap_column = cap_column

    def fit(self, X: Any, y: Any) -> HistoryBaseline:
        """Find the columns; remember the training mean for rows without history."""
        X, y = validate_data(self, X, y, y_numeric=True, ensure_all_finite="allow-nan")
        self.column_indices_ = _column_indices(self, self.columns)
        self.cap_index_ = None if self.cap_column is None else _column_indices(self, [self.cap_column])[0]
        self.mean_ = float(y.mean())
        return self

    def predict(self, X: Any) -> np.ndarray:
        """First known history value per row (else the mean), capped at the requested time."""
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, ensure_all_finite="allow-nan")
        return first_known(X, self.column_indices_, self.cap_index_, self.mean_)

    def __sklearn_tags__(self) -> Any:
        """Missing values mean 'no history'; a copied column fits arbitrary data poorly, by design."""
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        tags.regressor_tags.poor_score = True
        return tags

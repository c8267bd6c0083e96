"""An online linear run-time model trained for the scheduler: one update per finished job, in constant time.

After Gaussier, Glesser, Reis & Trystram (2015), *Improving backfilling by using machine learning to predict running
times* (SC'15): a linear model over a job's features, learned one job at a time by normalised adaptive gradient
descent (Ross, Mineiro & Langford 2013, *Normalized online learning*: each feature's scale is tracked, so features of
very different ranges need no prior scaling), on an *asymmetric* loss. A backfilling scheduler pays differently for
the two kinds of error: an estimate below the run lets a backfilled job delay the reserved one, an estimate above it
only misses a backfill chance. So under- and over-estimates each have their own shape (absolute, squared or
exponential) and weight, residuals inside a dead zone cost nothing, and each job may be weighted by its area
(``1 + log(processors x requested time)`` when those columns are named), as SC'15 does.

With ``log=True`` the model learns log(seconds) from signed-log features, so its residuals are ratios; with
``log=False`` it learns seconds from the raw features (SC'15's own space). Either way it also keeps a histogram of its
log residuals, updated with every job (constant time too), from which :meth:`residual_quantiles` reads the interval
and limit the service serves.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from models.transforms import signed_log1p

Side = Literal["absolute", "squared", "exponential"]
SIDES: tuple[str, ...] = ("absolute", "squared", "exponential")
# log-residual bins of 0.05 (a factor of about 1.05)
HISTOGRAM_EDGES = np.linspace(-12.0, 12.0, 481)
_EDGES = HISTOGRAM_EDGES.tolist()
# rows after which a residual counts half as much in the interval's quantiles
RESIDUAL_HALF_LIFE = 2000
_GROWTH = 2.0 ** (1.0 / RESIDUAL_HALF_LIFE)
# the exponential side's argument is capped, so one wild job cannot blow the weights up
_EXP_CAP = 5.0


def side_gradient(kind: str, error: float) -> float:
    """d loss / d error of one side at ``error`` >= 0 (the distance past the dead zone)."""
    if kind == "absolute":
        return 1.0
    if kind == "squared":
        return 2.0 * error
    return float(np.expm1(min(error, _EXP_CAP)))


class AsymmetricOnlineRegressor(RegressorMixin, BaseEstimator):
    """Linear model learned per observation on an asymmetric loss (see the module docstring).

    ``under``/``over``: the loss's shape for estimates below / above the run; ``under_weight``/``over_weight`` scale
    them; ``dead_zone``: residuals (in the learned space, relative to the run's scale) this small cost nothing;
    ``area_columns``: positions or names of (processors, requested seconds) whose product weights each job by
    ``1 + log(1 + area)``; ``learning_rate``: the normalised gradient step; ``epochs``: passes of :meth:`fit` over its
    rows (``partial_fit`` always makes one).
    """

    def __init__(
        self,
        under: Side = "squared",
        over: Side = "absolute",
        under_weight: float = 1.0,
        over_weight: float = 1.0,
        dead_zone: float = 0.0,
        area_columns: Sequence[str | int] | None = None,
        learning_rate: float = 0.05,
        epochs: int = 1,
        log: bool = True,
    ) -> None:
        self.under = under
        self.over = over
        self.under_weight = under_weight
        self.over_weight = over_weight
        self.dead_zone = dead_zone
        self.area_columns = area_columns
        self.learning_rate = learning_rate
        self.epochs = epochs
        self.log = log

    def fit(self, X: np.ndarray, y: np.ndarray, sample_weight: np.ndarray | None = None) -> AsymmetricOnlineRegressor:
        """Start afresh and learn the rows in order (``epochs`` passes), as if they had arrived one by one."""
        X, y = validate_data(self, X, y, reset=True, ensure_all_finite="allow-nan", y_numeric=True)
        if self.under not in SIDES or self.over not in SIDES:
            raise ValueError(f"under and over must be one of {', '.join(SIDES)}, got {self.under!r}, {self.over!r}")
        if self.epochs < 1 or self.learning_rate <= 0 or self.dead_zone < 0:
            raise ValueError("epochs must be >= 1, learning_rate > 0 and dead_zone >= 0")
        weights = _sample_weights(sample_weight, X.shape[0])
        if weights.sum() <= 0:
            raise ValueError("the sample weights sum to zero: nothing to learn from")
        self._reset(X.shape[1])
        for _ in range(self.epochs):
            self._learn(X, np.asarray(y, dtype=float), weights)
        return self

    def partial_fit(
        self, X: np.ndarray, y: np.ndarray, sample_weight: np.ndarray | None = None
    ) -> AsymmetricOnlineRegressor:
        """Learn these rows, in order, on top of what was learned: O(features) per row, whatever was seen before."""
        first = not hasattr(self, "coef_")
        X, y = validate_data(self, X, y, reset=first, ensure_all_finite="allow-nan", y_numeric=True)
        if first:
            self._reset(X.shape[1])
        self._learn(X, np.asarray(y, dtype=float), _sample_weights(sample_weight, X.shape[0]))
        return self

    def predict(self, X: np.ndarray) -> np.ndarray:
        """Seconds for each row: positive, finite."""
        check_is_fitted(self, "coef_")
        X = validate_data(self, X, reset=False, ensure_all_finite="allow-nan")
        return self._seconds(self._design(X) @ self.coef_)

    def design(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The rows as :meth:`answer_row` and :meth:`learn_row` take them (validated once): their design rows and job
        weights, so a caller that interleaves answers and learning pays the checks once."""
        check_is_fitted(self, "coef_")
        X = validate_data(self, X, reset=False, ensure_all_finite="allow-nan")
        return self._design(X), self._job_weights(X)

    def answer_row(self, z: np.ndarray) -> float:
        """Seconds for one design row of :meth:`design`."""
        return self._second(float(z @ self.coef_))

    def learn_row(self, z: np.ndarray, seconds: float, weight: float) -> None:
        """Learn one run of a design row of :meth:`design` (with its job weight) that took ``seconds``."""
        self._step(z, seconds, weight)

    def begin(self, n_features: int) -> AsymmetricOnlineRegressor:
        """Start afresh, having learned nothing, for rows of ``n_features`` (an online source with no history yet)."""
        self.n_features_in_ = n_features
        self._reset(n_features)
        return self

    def learn_one(self, row: np.ndarray, seconds: float, weight: float = 1.0) -> None:
        """:meth:`partial_fit` of one already-validated row (a float array of the fitted width), without the checks:
        the per-finished-job path of an online estimate source."""
        self._learn(row.reshape(1, -1), np.array([seconds], dtype=float), np.array([weight], dtype=float))

    def predict_one(self, row: np.ndarray) -> float:
        """:meth:`predict` of one already-validated row, without the checks."""
        return self._second(float(self._design(row.reshape(1, -1))[0] @ self.coef_))

    def residual_quantiles(self, levels: Sequence[float]) -> dict[float, float]:
        """Quantiles of log(run / estimate) over every row learned so far (0 before any), at ``levels`` in (0, 1)."""
        check_is_fitted(self, "coef_")
        total = self.residual_counts_.sum()
        if total <= 0:
            return {float(level): 0.0 for level in levels}
        cumulative = np.cumsum(self.residual_counts_) / total
        centres = (HISTOGRAM_EDGES[:-1] + HISTOGRAM_EDGES[1:]) / 2.0
        return {
            float(level): float(centres[min(int(np.searchsorted(cumulative, level)), len(centres) - 1)])
            for level in levels
        }

    def state(self) -> dict[str, Any]:
        """What it has learned, as plain numbers (JSON-able); with :meth:`get_params`, enough for :meth:`from_state`."""
        check_is_fitted(self, "coef_")
        names = getattr(self, "feature_names_in_", None)
        return {
            "n_features": int(self.n_features_in_),
            "feature_names": None if names is None else [str(n) for n in names],
            "coef": self.coef_.tolist(),
            "scale": self.scale_.tolist(),
            "norm": self.norm_,
            "target_scale": self.target_scale_,
            "n_seen": self.n_seen_,
            "residual_counts": self.residual_counts_.tolist(),
            "increment": self._increment,
        }

    @classmethod
    def from_state(cls, params: dict[str, Any], state: dict[str, Any]) -> AsymmetricOnlineRegressor:
        """The member built with ``params`` that has learned what ``state`` (from :meth:`state`) holds."""
        model = cls(**params)
        if state["feature_names"] is not None:
            model.feature_names_in_ = np.asarray(state["feature_names"], dtype=object)
        model.n_features_in_ = int(state["n_features"])
        model._reset(model.n_features_in_)
        model.coef_ = np.asarray(state["coef"], dtype=float)
        model.scale_ = np.asarray(state["scale"], dtype=float)
        model.norm_ = float(state["norm"])
        model.target_scale_ = float(state["target_scale"])
        model.n_seen_ = int(state["n_seen"])
        model.residual_counts_ = np.asarray(state["residual_counts"], dtype=float)
        model._increment = float(state["increment"])
        return model

    def __sklearn_tags__(self) -> Any:
        """Missing values mean 0 (as in a job without history); one pass of a log-target model fits arbitrary
        (negative) targets poorly, by design."""
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        tags.regressor_tags.poor_score = True
        return tags

    # -- internals -------------------------------------------------------------------------------------------------

    def _reset(self, n_features: int) -> None:
        """No knowledge: zero weights, unknown scales, an empty residual histogram."""
        # the last is the intercept, on a constant column of 1
        self.coef_ = np.zeros(n_features + 1)
        self.scale_ = np.zeros(n_features + 1)
        # N of normalised online learning: the sum of squared normalised inputs
        self.norm_ = 0.0
        # the largest run seen, the unit of ``log=False``'s target
        self.target_scale_ = 0.0
        self.n_seen_ = 0
        self.residual_counts_ = np.zeros(len(HISTOGRAM_EDGES) - 1)
        self._increment = 1.0
        self.area_index_ = self._area_index(n_features)

    def _area_index(self, n_features: int) -> list[int]:
        """Positions of ``area_columns`` among the fitted features (resolved once, not at every learned run)."""
        names = list(getattr(self, "feature_names_in_", []))
        try:
            idx = [names.index(c) if isinstance(c, str) else int(c) for c in self.area_columns or ()]
        except ValueError:
            raise ValueError(
                f"area_columns {list(self.area_columns or ())} are not among the features {names}"
            ) from None
        if max(idx, default=0) >= n_features:
            raise ValueError(f"area_columns {list(self.area_columns or ())} are out of range for {n_features} features")
        return idx

    def _design(self, X: np.ndarray) -> np.ndarray:
        """The rows as the model sees them: missing values as 0, signed logs when ``log``, a constant column."""
        Z = np.nan_to_num(np.asarray(X, dtype=float), nan=0.0, posinf=0.0, neginf=0.0)
        if self.log:
            Z = signed_log1p(Z)
        return np.hstack([Z, np.ones((Z.shape[0], 1))])

    def _target(self, seconds: float) -> float:
        """What is learned of one run: log(seconds) (floored at a millisecond), or seconds in units of the longest run
        seen (a longer run than ever rescales the weights to the new unit, as NAG does for its inputs)."""
        if self.log:
            return float(np.log(max(seconds, 1e-3)))
        if abs(seconds) > self.target_scale_:
            if self.target_scale_ > 0:
                self.coef_ *= self.target_scale_ / abs(seconds)
            self.target_scale_ = abs(seconds)
        return seconds / max(self.target_scale_, 1e-12)

    def _second(self, raw: float) -> float:
        """:meth:`_seconds` of one value, without arrays."""
        if self.log:
            return math.exp(min(max(0.0 if math.isnan(raw) else raw, -7.0), 30.0))
        seconds = raw * self.target_scale_
        return 1.0 if math.isnan(seconds) else min(max(seconds, 1.0), 1e12)

    def _seconds(self, raw: np.ndarray) -> np.ndarray:
        """The learned space back to seconds, positive and finite."""
        if self.log:
            return np.exp(np.clip(np.nan_to_num(raw, nan=0.0), -7.0, 30.0))
        seconds = np.nan_to_num(raw * self.target_scale_, nan=1.0, posinf=1e12, neginf=1.0)
        return np.clip(seconds, 1.0, 1e12)

    def _job_weights(self, X: np.ndarray) -> np.ndarray:
        """1 + log(1 + processors x request) per row when ``area_columns`` names them, else 1."""
        if not self.area_index_:
            return np.ones(X.shape[0])
        area = np.prod(np.nan_to_num(np.abs(X[:, self.area_index_]), nan=1.0), axis=1)
        return 1.0 + np.log1p(area)

    def _learn(self, X: np.ndarray, y: np.ndarray, weights: np.ndarray) -> None:
        """One normalised-gradient step per row, in order; the residual histogram follows each row."""
        Z, weights = self._design(X), weights * self._job_weights(X)
        for z, seconds, w in zip(Z, y.tolist(), weights.tolist(), strict=True):
            self._step(z, seconds, w)

    def _step(self, z: np.ndarray, seconds: float, weight: float) -> None:
        """Learn one run of design row ``z`` (from :meth:`_design`) that took ``seconds``, weighing ``weight``."""
        if weight <= 0:
            return
        coef, scale = self.coef_, self.scale_
        t = self._target(seconds)
        if self.n_seen_ == 0 and coef[-1] == 0.0:
            # start from the first run: the intercept then only has to learn corrections
            coef[-1] = t
        size = np.abs(z)
        grown = size > scale
        # a feature larger than ever before: shrink its weight to its new scale (NAG)
        if grown.any():
            old, new = scale[grown], size[grown]
            coef[grown] *= np.where(old > 0, (old / new) ** 2, 1.0)
            scale[grown] = new
        known = scale > 0
        zk, sk = z[known], scale[known]
        self.norm_ += float(np.dot(zk / sk, zk / sk))
        self.n_seen_ += 1
        estimate = float(z @ coef)
        self._record_residual(t, estimate)
        slope = self._loss_slope(estimate - t)
        if slope == 0.0:
            return
        step = self.learning_rate * weight * math.sqrt(self.n_seen_ / max(self.norm_, 1e-12))
        coef[known] -= step * slope * zk / sk**2

    def _loss_slope(self, residual: float) -> float:
        """d loss / d estimate at ``residual`` = estimate - target (in the learned space), past the dead zone."""
        error = abs(residual) - self.dead_zone
        if error <= 0:
            return 0.0
        if residual < 0:
            return -self.under_weight * side_gradient(self.under, error)
        return self.over_weight * side_gradient(self.over, error)

    def _record_residual(self, target: float, estimate: float) -> None:
        """Count log(run / estimate) of the estimate made before learning this row (an honest, prequential residual)."""
        if self.log:
            ratio = target - estimate
        else:
            run = max(target * self.target_scale_, 1e-3)
            ratio = math.log(run / self._second(estimate))
        index = min(max(bisect.bisect_left(_EDGES, ratio) - 1, 0), len(_EDGES) - 2)
        # newer residuals count more (half-life RESIDUAL_HALF_LIFE rows): a growing increment instead of decaying every
        # bin keeps the update O(1); the counts are rescaled now and then so the numbers stay finite
        self.residual_counts_[index] += self._increment
        self._increment *= _GROWTH
        if self._increment > 1e150:
            self.residual_counts_ /= self._increment
            self._increment = 1.0


def _sample_weights(sample_weight: ArrayLike | None, n_rows: int) -> np.ndarray:
    """One finite, non-negative weight per row (all 1 when None)."""
    if sample_weight is None:
        return np.ones(n_rows)
    weights = np.asarray(sample_weight, dtype=float)
    if weights.ndim == 0:
        weights = np.full(n_rows, float(weights))
    if weights.shape != (n_rows,) or not np.all(np.isfinite(weights)) or np.any(weights < 0):
        raise ValueError(
            f"sample_weight must hold {n_rows} finite, non-negative numbers, got shape {np.shape(sample_weight)}"
        )
    return weights

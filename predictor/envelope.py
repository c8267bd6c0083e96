"""The region of feature space a champion was trained on, and the power law that answers outside it.

A model fitted on jobs of 10 to 500 sequences knows nothing of a job of 5,000: trees stay flat,
kernels fall back to their mean, a raw-seconds line may cross zero. Training records, with each
champion, its :class:`TrainingEnvelope`:

- per feature the range it saw, and in a scaled space (signed log, then standardised) the distinct
  trained jobs and their ``reach``: the largest distance from one of them to its nearest other one.
  A request beyond a feature's range, or farther from every trained job than ``reach``, is
  *extrapolating*;
- a monotone power law ``log seconds = a + sum_j b_j * slog(x_j)`` with every ``b_j >= 0`` (non-negative
  least squares with a small ridge on the exponents, on the finished runs): more of any input never makes
  it faster, so it extrapolates sanely where the champion may not;
- ``law_quantiles``: the law's own errors beyond a range it did not see, measured at training time by
  refitting it without the top (then the bottom) 30 % of each feature and answering those runs; per
  quantile level the widest over features and ways;
- ``floor``: the fastest finished run of the pair. No estimate is served below it.

How far out a request lies (``excess``: standard deviations beyond the range in the scaled space,
or the share of ``reach`` beyond it, capped at :data:`MAX_EXCESS`) widens its interval: the oracle
multiplies ``law_quantiles`` by ``sqrt(1 + excess)`` (the champion's quantiles when the pair has too few runs
to measure the law's). On the bundled runs, trained on the smaller 70 % and asked about the largest 30 %,
those limits held at about their nominal rate (``docs/results/extrapolation.md``); the champion's residuals
widened by ``1 + excess`` were exceeded five times as often. No limit is served above 100 times its
estimate (:data:`predictor.oracle.MAX_LIMIT_RATIO`). How far out a job is stays visible in
``extrapolating`` and ``out_of_domain``, the list ``reason`` names.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
import pandas as pd
from scipy.linalg import cholesky, solve_triangular
from scipy.optimize import nnls
from scipy.spatial import cKDTree

from models.transforms import MIN_SECONDS, log_seconds
from models.transforms import signed_log1p as _slog
from predictor.intervals import QUANTILE_LEVELS

# distinct trained jobs kept for the distance check, runs for the law's errors (a seeded sample beyond)
MAX_ROWS = 2000
# how far out counts at most: the log-width beyond the range grows at most twofold (sqrt(1 + 3))
MAX_EXCESS = 3.0
# the power law's ridge per run on its exponents: they stay finite on collinear or barely varying features
LAW_RIDGE = 1e-3
# the share of runs the law is refitted on to measure its errors beyond them
HELD_IN = 0.7
# fewer runs beyond the held-in share: no extrapolation quantiles (the champion's, widened, answer)
MIN_HELD_OUT = 5


@dataclass(frozen=True)
class Check:
    """Which rows of a request lie outside the envelope, by how much, and which of their features are out of range."""

    outside: np.ndarray
    excess: np.ndarray
    out_of_range: list[list[str]]


@dataclass(frozen=True)
class TrainingEnvelope:
    """What a champion was trained on (see the module docstring); JSON-serialisable with :meth:`to_json`."""

    feature_names: list[str]
    low: np.ndarray
    high: np.ndarray
    center: np.ndarray
    scale: np.ndarray
    rows: np.ndarray
    reach: float
    law_intercept: float
    law_coef: np.ndarray
    floor: float
    # log(actual / law) beyond a held-out range
    law_quantiles: dict[float, float] = field(default_factory=dict)

    @classmethod
    def fit(cls, X: pd.DataFrame, y: np.ndarray, *, seed: int = 0, law_errors: bool = True) -> TrainingEnvelope:
        """The envelope of finished runs ``X`` (feature columns) taking ``y`` seconds; without ``law_errors``, no
        ``law_quantiles`` (what shaping a point answer does not need, and costs most)."""
        values = X.to_numpy(dtype="float64")
        y = np.asarray(y, dtype="float64")
        if len(values) == 0 or len(values) != len(y):
            raise ValueError("need at least one run, and one run time per row")
        logged = _slog(values)
        center = logged.mean(axis=0)
        spread = logged.std(axis=0)
        scale = np.where(spread > 0, spread, 1.0)
        distinct = np.unique((logged - center) / scale, axis=0)
        if len(distinct) > MAX_ROWS:
            distinct = distinct[np.random.default_rng(seed).choice(len(distinct), MAX_ROWS, replace=False)]
        reach = 0.0
        if len(distinct) > 1:
            gaps, _ = cKDTree(distinct).query(distinct, k=2)
            reach = float(gaps[:, 1].max())
        target = log_seconds(y)
        intercept, coef = _power_law(logged, target)
        return cls(
            feature_names=list(X.columns),
            low=values.min(axis=0),
            high=values.max(axis=0),
            center=center,
            scale=scale,
            rows=distinct,
            reach=reach,
            law_intercept=intercept,
            law_coef=coef,
            floor=max(float(y.min()), MIN_SECONDS),
            law_quantiles=_extrapolation_quantiles(logged, target, seed) if law_errors else {},
        )

    @cached_property
    def _tree(self) -> cKDTree:
        return cKDTree(self.rows)

    def law(self, X: np.ndarray) -> np.ndarray:
        """Seconds by the monotone power law, for rows in :attr:`feature_names` order."""
        return np.exp(self.law_intercept + _slog(np.asarray(X, dtype="float64")) @ self.law_coef)

    @cached_property
    def _scaled_range(self) -> tuple[np.ndarray, np.ndarray]:
        """Each feature's trained range in the scaled space: fixed once fitted, while :meth:`check` runs per request."""
        return (_slog(self.low) - self.center) / self.scale, (_slog(self.high) - self.center) / self.scale

    def check(self, X: np.ndarray) -> Check:
        """Where rows (in :attr:`feature_names` order) lie relative to the envelope."""
        X = np.asarray(X, dtype="float64").reshape(-1, len(self.feature_names))
        scaled = (_slog(X) - self.center) / self.scale
        low, high = self._scaled_range
        out = (X > self.high) | (X < self.low)
        out_of_range = out.any(axis=1)
        excess = (
            np.maximum(np.maximum(scaled - high, low - scaled).max(axis=1), 0.0) if X.shape[1] else np.zeros(len(X))
        )
        if self.reach > 0:
            # nan_to_num costs more than the query
            points = scaled if np.isfinite(scaled).all() else np.nan_to_num(scaled)
            distance, _ = self._tree.query(points, k=1)
            far = distance > self.reach
            excess = np.maximum(excess, np.where(far, distance / self.reach - 1.0, 0.0))
        else:
            far = np.zeros(len(X), dtype=bool)
        outside = out_of_range | far
        names = self.feature_names
        excess = np.where(outside, np.minimum(excess, MAX_EXCESS), 0.0)
        beyond: list[list[str]] = [[] for _ in range(len(X))]
        # most rows lie within every range: only the others are spelled out
        for i in np.flatnonzero(out_of_range):
            beyond[i] = [names[j] for j in np.flatnonzero(out[i])]
        return Check(outside, excess, beyond)

    def to_json(self) -> str:
        """The envelope as JSON (numbers as lists), for the model registry."""
        return json.dumps(
            {
                "feature_names": self.feature_names,
                "low": self.low.tolist(),
                "high": self.high.tolist(),
                "center": self.center.tolist(),
                "scale": self.scale.tolist(),
                "rows": self.rows.tolist(),
                "reach": self.reach,
                "law_intercept": self.law_intercept,
                "law_coef": self.law_coef.tolist(),
                "floor": self.floor,
                "law_quantiles": {str(k): v for k, v in self.law_quantiles.items()},
            }
        )

    @classmethod
    def from_json(cls, text: str) -> TrainingEnvelope:
        """The envelope :meth:`to_json` wrote."""
        raw: dict[str, Any] = json.loads(text)
        n = len(raw["feature_names"])
        arrays = {k: np.asarray(raw[k], dtype="float64") for k in ("low", "high", "center", "scale", "law_coef")}
        rows = np.asarray(raw["rows"], dtype="float64").reshape(-1, n)
        return cls(
            feature_names=list(raw["feature_names"]),
            rows=rows,
            reach=float(raw["reach"]),
            law_intercept=float(raw["law_intercept"]),
            floor=float(raw["floor"]),
            **arrays,
            # absent before they were kept
            law_quantiles={float(k): float(v) for k, v in raw.get("law_quantiles", {}).items()},
        )


def _power_law(logged: np.ndarray, target: np.ndarray) -> tuple[float, np.ndarray]:
    """Intercept and non-negative exponents of ``target ~ logged`` by least squares with a small ridge on the exponents.

    The ridge (:data:`LAW_RIDGE` per run) keeps exponents finite where features are collinear or barely vary
    (a target file's shortest sequence, 56 or 57 residues while its count went from 2,000 to 8,000): plain
    least squares gives them exponents of 10 to 10^10, and estimates of a tenth or of infinity beyond the range.
    It weighs exponents in the features' own log units, so a feature of wide range carries an effect before one
    whose range is a few percent.
    """
    center = logged.mean(axis=0)
    n, k = logged.shape
    mean_y = float(target.mean())
    centred = logged - center
    # the same problem in k rows, not n + k: with R'R = X'X + ridge, ||R b - d|| differs from the full residual by a constant
    upper = cholesky(centred.T @ centred + LAW_RIDGE * n * np.eye(k))
    coef, _ = nnls(upper, solve_triangular(upper, centred.T @ (target - mean_y), trans="T"))
    return mean_y - float(center @ coef), coef


def _extrapolation_quantiles(logged: np.ndarray, target: np.ndarray, seed: int) -> dict[float, float]:
    """Log(actual / law) quantiles of runs beyond a range the law was refitted without, the worst over features and ways.

    For each feature and each way (up, down), the law is refitted on the runs within the feature's
    :data:`HELD_IN` share and answers the runs beyond it; each level keeps its widest value over those
    (the highest for upper levels, the lowest for lower ones), so a request beyond any one feature's range
    gets errors as large as that way out ever gave. Empty when no feature leaves :data:`MIN_HELD_OUT` runs out.
    Beyond :data:`MAX_ROWS` runs, a seeded sample of them: two refits per feature stay cheap.
    """
    if len(target) > MAX_ROWS:
        kept = np.random.default_rng(seed).choice(len(target), MAX_ROWS, replace=False)
        logged, target = logged[kept], target[kept]
    n = len(target)
    found = []
    for values in logged.T:
        for beyond in (values > np.quantile(values, HELD_IN), values < np.quantile(values, 1 - HELD_IN)):
            if MIN_HELD_OUT <= beyond.sum() <= n - MIN_HELD_OUT:
                intercept, coef = _power_law(logged[~beyond], target[~beyond])
                ratios = target[beyond] - (intercept + logged[beyond] @ coef)
                found.append(
                    [
                        np.quantile(ratios, level, method="lower" if level < 0.5 else "higher")
                        for level in QUANTILE_LEVELS
                    ]
                )
    if not found:
        return {}
    table = np.array(found)
    return {
        level: float(table[:, i].min() if level < 0.5 else table[:, i].max()) for i, level in enumerate(QUANTILE_LEVELS)
    }

"""The region of feature space a champion was trained on, and the power law that answers outside it.

A model fitted on jobs of 10 to 500 sequences knows nothing of a job of 5,000: trees stay flat,
kernels fall back to their mean, a raw-seconds line may cross zero. Training records, with each
champion, its :class:`TrainingEnvelope`:

- per feature the range it saw, and in a scaled space (signed log, then standardised) the distinct
  trained jobs and their ``reach``: the largest distance from one of them to its nearest other one.
  A request beyond a feature's range, or farther from every trained job than ``reach``, is
  *extrapolating*;
- a monotone power law ``log seconds = a + sum_j b_j * slog(x_j)`` with every ``b_j >= 0`` (non-negative
  least squares on the finished runs): more of any input never makes it faster, so it extrapolates
  sanely where the champion may not;
- ``floor``: the fastest finished run of the pair. No estimate is served below it.

How far out a request lies (``excess``: standard deviations beyond the range in the scaled space,
or the share of ``reach`` beyond it) widens its interval: the oracle multiplies the log-ratio
quantiles by ``1 + excess``, with ``excess`` capped at :data:`MAX_EXCESS`. That rule is a heuristic,
chosen to grow with distance and to leave jobs inside the envelope untouched; the cap keeps a
feature of tiny spread (a GC fraction: a protein file where DNA was trained) from turning a
limit into 10^43 seconds. How far out a job is stays visible in ``extrapolating`` and ``out_of_domain``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
import pandas as pd
from scipy.optimize import nnls
from scipy.spatial import cKDTree

from models.transforms import MIN_SECONDS, log_seconds
from models.transforms import signed_log1p as _slog

MAX_ROWS = 2000  # distinct trained jobs kept for the distance check (a seeded sample beyond that)
MAX_EXCESS = 3.0  # an interval is widened at most to four times its trained log-width


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

    @classmethod
    def fit(cls, X: pd.DataFrame, y: np.ndarray, *, seed: int = 0) -> TrainingEnvelope:
        """The envelope of finished runs ``X`` (feature columns) taking ``y`` seconds."""
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
        mean_x, mean_y = logged.mean(axis=0), float(target.mean())
        coef, _ = nnls(logged - mean_x, target - mean_y)
        return cls(
            feature_names=list(X.columns),
            low=values.min(axis=0),
            high=values.max(axis=0),
            center=center,
            scale=scale,
            rows=distinct,
            reach=reach,
            law_intercept=mean_y - float(mean_x @ coef),
            law_coef=coef,
            floor=max(float(y.min()), MIN_SECONDS),
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
        excess = np.maximum(np.maximum(scaled - high, low - scaled).max(axis=1), 0.0) if X.shape[1] else np.zeros(len(X))
        if self.reach > 0:
            points = scaled if np.isfinite(scaled).all() else np.nan_to_num(scaled)  # nan_to_num costs more than the query
            distance, _ = self._tree.query(points, k=1)
            far = distance > self.reach
            excess = np.maximum(excess, np.where(far, distance / self.reach - 1.0, 0.0))
        else:
            far = np.zeros(len(X), dtype=bool)
        outside = out_of_range | far
        names = self.feature_names
        excess = np.where(outside, np.minimum(excess, MAX_EXCESS), 0.0)
        beyond: list[list[str]] = [[] for _ in range(len(X))]
        for i in np.flatnonzero(out_of_range):  # most rows lie within every range: only the others are spelled out
            beyond[i] = [names[j] for j in np.flatnonzero(out[i])]
        return Check(outside, excess, beyond)

    def to_json(self) -> str:
        """The envelope as JSON (numbers as lists), for the model registry."""
        return json.dumps({
            "feature_names": self.feature_names, "low": self.low.tolist(), "high": self.high.tolist(),
            "center": self.center.tolist(), "scale": self.scale.tolist(), "rows": self.rows.tolist(), "reach": self.reach,
            "law_intercept": self.law_intercept, "law_coef": self.law_coef.tolist(), "floor": self.floor,
        })  # fmt: skip

    @classmethod
    def from_json(cls, text: str) -> TrainingEnvelope:
        """The envelope :meth:`to_json` wrote."""
        raw: dict[str, Any] = json.loads(text)
        n = len(raw["feature_names"])
        arrays = {k: np.asarray(raw[k], dtype="float64") for k in ("low", "high", "center", "scale", "law_coef")}
        rows = np.asarray(raw["rows"], dtype="float64").reshape(-1, n)
        return cls(
            feature_names=list(raw["feature_names"]), rows=rows, reach=float(raw["reach"]),
            law_intercept=float(raw["law_intercept"]), floor=float(raw["floor"]), **arrays,
        )  # fmt: skip

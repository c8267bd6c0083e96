"""Live error: how the estimates a pair's runs were served compare with what the runs then took (prequential).

Every finished or censored run is stored beside the estimate it was served before it ran
(:class:`~predictor.domain.ServedEstimate`). Over a sliding window of a pair's latest such runs:

- ``rae``: relative absolute error (%) of the served seconds on finished runs, against the window's
  mean run time (100 is no better than always answering that mean);
- ``male``, ``mdale``: the mean and (lower) median absolute log error of the served seconds on finished runs, as
  forward validation scores them;
- ``within_25pct``: share of finished runs served within 25 % of their time;
- ``underestimate_rate``: share of runs served less than they took (a censored run that ran
  longer than its estimate is a sure underestimate; one stopped before it, unknown, not counted);
- ``limit_exceeded``: share of runs with a served limit that ran past it (censored ones included:
  they ran at least that long);
- ``interval_coverage``: share of finished runs with an interval that fell inside it.

Shares are of the runs they apply to; NaN when none does.
"""

from __future__ import annotations

import math
from typing import Protocol

import numpy as np
import pandas as pd

LIVE_METRICS = (
    "runs",
    "rae",
    "male",
    "mdale",
    "within_25pct",
    "underestimate_rate",
    "limit_exceeded",
    "interval_coverage",
)
LOG_FLOOR = 1.0e-3  # both sides of a log error floored here, as forward validation floors them


class LiveWindows(Protocol):
    """The part of the measurement store live error reads."""

    def live_window(self, algorithm: str, platform: str, size: int) -> pd.DataFrame: ...

    def served_pairs(self) -> list[tuple[str, str]]: ...


def live_metrics(window: pd.DataFrame) -> dict[str, float]:
    """The metrics of the module docstring over one window (columns of ``MeasurementStore.live_window``)."""
    served = window["seconds"].to_numpy(dtype="float64")
    took = window["wall_seconds"].to_numpy(dtype="float64")
    censored = window["censored"].to_numpy(dtype=bool)
    done = ~censored
    y, p = took[done], served[done]
    spread = float(np.abs(y - y.mean()).sum()) if len(y) else 0.0
    limit = window["limit"].to_numpy(dtype="float64")
    has_limit = ~np.isnan(limit)
    lower, upper = window["lower"].to_numpy(dtype="float64")[done], window["upper"].to_numpy(dtype="float64")[done]
    has_interval = ~np.isnan(lower) & ~np.isnan(upper)
    log_errors = np.abs(np.log(np.maximum(p, LOG_FLOOR)) - np.log(np.maximum(y, LOG_FLOOR)))
    return {
        "runs": float(len(window)),
        "rae": 100.0 * float(np.abs(p - y).sum()) / spread if spread > 0 else math.nan,
        "male": float(log_errors.mean()) if len(y) else math.nan,
        "mdale": float(np.quantile(log_errors, 0.5, method="lower")) if len(y) else math.nan,
        "within_25pct": _share(np.abs(p - y) <= 0.25 * y),
        "underestimate_rate": _share(served < took),
        "limit_exceeded": _share(took[has_limit] > limit[has_limit]),
        "interval_coverage": _share((y >= lower) & (y <= upper), has_interval),
    }


def live_report(store: LiveWindows, size: int) -> dict[tuple[str, str], dict[str, float]]:
    """Live metrics of every pair with served estimates, over its latest ``size`` runs."""
    return {pair: live_metrics(store.live_window(*pair, size)) for pair in store.served_pairs()}


def _share(hits: np.ndarray, where: np.ndarray | None = None) -> float:
    """Share of True in ``hits`` (restricted to ``where``); NaN when there is nothing to count."""
    if where is not None:
        hits = hits[where]
    return float(hits.mean()) if len(hits) else math.nan

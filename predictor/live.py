"""Live error: how the estimates a pair's runs were served compare with what the runs then took (prequential).

Every finished or censored run is stored beside the estimate it was served before it ran
(:class:`~predictor.domain.ServedEstimate`): its seconds, and its peak memory where a memory champion answered.
Over a sliding window of a pair's latest such runs, for a target (:class:`~predictor.domain.Target`: run time,
or peak memory against the run's measured peak):

- ``rae``: relative absolute error (%) of the served value on finished runs, against the window's
  mean measured value (100 is no better than always answering that mean);
- ``male``, ``mdale``: the mean and (lower) median absolute log error of the served value on finished runs, as
  forward validation scores them;
- ``within_25pct``: share of finished runs served within 25 % of what they measured;
- ``underestimate_rate``: share of runs served less than they measured (a censored run that measured
  more than its estimate is a sure underestimate, since it only grows; one stopped below it, unknown, not counted);
- ``limit_exceeded``: share of runs with a served limit that measured past it (censored ones included:
  they ran at least that long, they peaked at least that high);
- ``interval_coverage``: share of finished runs with an interval that fell inside it.

Memory counts the runs that were served a memory estimate and measured their peak (``max_rss_kb``); run time every
run of the window. Shares are of the runs they apply to; NaN when none does.
"""

from __future__ import annotations

import math
from typing import NamedTuple, Protocol

import numpy as np
import pandas as pd

from predictor.domain import Target

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
# both sides of a log error floored here, as forward validation floors them
LOG_FLOOR = 1.0e-3


class LiveWindows(Protocol):
    """The part of the measurement store live error reads."""

    def live_window(self, algorithm: str, platform: str, size: int) -> pd.DataFrame: ...

    def served_pairs(self) -> list[tuple[str, str]]: ...


class _Columns(NamedTuple):
    """Which live-window columns hold a target's served value, interval, limit and model version."""

    served: str
    lower: str
    upper: str
    limit: str
    version: str


COLUMNS = {
    Target.TIME: _Columns("seconds", "lower", "upper", "limit", "model_version"),
    Target.MEMORY: _Columns("memory", "memory_lower", "memory_upper", "memory_limit", "memory_model_version"),
}


def measured(window: pd.DataFrame, target: Target) -> np.ndarray:
    """What each run of the window measured of ``target``: wall seconds, or peak bytes (NaN where not measured)."""
    if target is Target.TIME:
        return window["wall_seconds"].to_numpy(dtype="float64")
    return window["max_rss_kb"].to_numpy(dtype="float64") * 1024.0


def judged(window: pd.DataFrame, target: Target, version: str | None = None) -> pd.DataFrame:
    """The runs of ``window`` that judge ``target``'s estimates: served one and measured it (run time: every run);
    only those ``version`` of the target's champion served, when given."""
    columns = COLUMNS[target]
    keep = ~np.isnan(window[columns.served].to_numpy(dtype="float64")) & ~np.isnan(measured(window, target))
    if version is not None:
        keep &= (window[columns.version] == version).to_numpy(dtype=bool)
    return window[keep]


def served_window(
    store: LiveWindows, algorithm: str, platform: str, size: int, target: Target, version: str | None = None
) -> pd.DataFrame:
    """The pair's runs among its latest ``size`` served ones that judge ``target`` (served by ``version`` of its
    champion, when given), oldest first: what :func:`live_metrics` scores a champion's live error of ``target`` on.
    The retrain worker asks it with the champion's version (run time's drift, and peak memory's alike)."""
    return judged(store.live_window(algorithm, platform, size), target, version)


def live_metrics(window: pd.DataFrame, target: Target = Target.TIME) -> dict[str, float]:
    """The metrics of the module docstring for ``target`` over one window (columns of ``MeasurementStore.live_window``;
    runs that do not judge ``target`` are left out, see :func:`judged`)."""
    window = judged(window, target)
    columns = COLUMNS[target]
    served = window[columns.served].to_numpy(dtype="float64")
    took = measured(window, target)
    censored = window["censored"].to_numpy(dtype=bool)
    done = ~censored
    y, p = took[done], served[done]
    spread = float(np.abs(y - y.mean()).sum()) if len(y) else 0.0
    limit = window[columns.limit].to_numpy(dtype="float64")
    has_limit = ~np.isnan(limit)
    lower = window[columns.lower].to_numpy(dtype="float64")[done]
    upper = window[columns.upper].to_numpy(dtype="float64")[done]
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


LiveReport = dict[Target, dict[tuple[str, str], dict[str, float]]]


def live_report(store: LiveWindows, size: int) -> LiveReport:
    """Live metrics of each target of every pair with served estimates, over its latest ``size`` runs (each window read
    once); peak memory's for the pairs with at least one run that judges it."""
    report: LiveReport = {target: {} for target in Target}
    for pair in store.served_pairs():
        window = store.live_window(*pair, size)
        for target in Target:
            values = live_metrics(window, target)
            if target is Target.TIME or values["runs"] > 0:
                report[target][pair] = values
    return report


def _share(hits: np.ndarray, where: np.ndarray | None = None) -> float:
    """Share of True in ``hits`` (restricted to ``where``); NaN when there is nothing to count."""
    if where is not None:
        hits = hits[where]
    return float(hits.mean()) if len(hits) else math.nan

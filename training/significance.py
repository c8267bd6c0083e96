"""Is one model's lead over another real? A paired bootstrap over jobs of the difference in RAE, RRSE, MALE and MdALE.

Two models scored on the same folds differ partly by chance: which jobs happened to be measured,
and how noisy their repeats were. Resampling whole jobs (all repeats of a job together, as the fold
plan keeps them) with replacement, and scoring both models on each resample, gives the spread of
the difference; an interval that straddles zero says the table cannot tell the two apart.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from training.metrics import absolute_log_errors

# The difference that moves with each selection metric (same sign): the one the guard and the ensemble's check compare.
BOOTSTRAP_METRIC = {"rae": "rae", "mae": "rae", "rrse": "rrse", "rmse": "rrse", "male": "male", "mdale": "mdale"}


@dataclass(frozen=True)
class Difference:
    """Metric of model A minus metric of model B (RAE and RRSE in % points, MALE and MdALE in hundredths of ln; negative:
    A is better), with a bootstrap interval.

    ``share_a_better`` is the share of resamples in which A's metric is the lower one.
    """

    metric: str
    observed: float
    low: float
    high: float
    share_a_better: float


def paired_bootstrap(
    y_true: ArrayLike,
    y_prior: ArrayLike,
    pred_a: ArrayLike,
    pred_b: ArrayLike,
    groups: Sequence[Hashable],
    *,
    n_resamples: int = 4000,
    level: float = 0.95,
    seed: int = 0,
    censored: ArrayLike | None = None,
    metrics: Sequence[str] = ("rae", "rrse", "male", "mdale"),
) -> dict[str, Difference]:
    """RAE, RRSE, MALE and MdALE differences of predictions ``pred_a`` and ``pred_b`` of ``y_true``, resampling ``groups``
    (jobs).

    Each metric is computed as :func:`training.metrics.compute_metrics` does (RAE and RRSE against each row's
    ``y_prior``; MdALE as the lower median) on every resample; only ``metrics`` are computed (the median's resamples
    cost the most); the interval holds the central ``level`` share of the differences.
    Rows flagged ``censored`` are left out, as the metrics leave them out: their time is only a bound.
    """
    y, prior, a, b = (np.asarray(v, dtype="float64") for v in (y_true, y_prior, pred_a, pred_b))
    if not (y.shape == prior.shape == a.shape == b.shape) or y.ndim != 1 or len(y) == 0 or len(groups) != len(y):
        raise ValueError("need equally long non-empty 1-d arrays and one group per row")
    if censored is not None:
        finished = ~np.asarray(censored, dtype=bool)
        if finished.shape != y.shape or not finished.any():
            raise ValueError("need one censored flag per row, and some finished row")
        y, prior, a, b, groups = (
            y[finished],
            prior[finished],
            a[finished],
            b[finished],
            [g for g, f in zip(groups, finished) if f],
        )
    if not 0 < level < 1 or n_resamples < 1:
        raise ValueError(f"need 0 < level < 1 and n_resamples >= 1, got {level} and {n_resamples}")
    group_of_row = pd.factorize(pd.Series(list(groups)))[0]
    n_groups = int(group_of_row.max()) + 1
    # Per job: sums of absolute and squared errors of A, of B and of the prior; a resample adds them up by its counts.
    columns = np.stack(
        [
            np.abs(a - y),
            np.abs(b - y),
            np.abs(prior - y),
            (a - y) ** 2,
            (b - y) ** 2,
            (prior - y) ** 2,
            absolute_log_errors(y, a),
            absolute_log_errors(y, b),
            np.ones_like(y),
        ],
        axis=1,
    )
    per_group = np.zeros((n_groups, columns.shape[1]))
    np.add.at(per_group, group_of_row, columns)
    counts = resample_counts(seed, n_groups, n_resamples)
    observed = per_group.sum(axis=0)[None, :]
    tails = (1.0 - level) / 2.0
    result = {}
    sums = counts @ per_group
    drawn_by_metric = {
        metric: (scores(observed)[0], scores(sums)) for metric, scores in SUMMED.items() if metric in metrics
    }
    if "mdale" in metrics:
        ones = np.ones((1, n_groups))
        medians = [
            _weighted_medians(absolute_log_errors(y, p), group_of_row, w) for p in (a, b) for w in (ones, counts)
        ]
        drawn_by_metric["mdale"] = (100.0 * (medians[0][0] - medians[2][0]), 100.0 * (medians[1] - medians[3]))
    for metric, (now, drawn) in drawn_by_metric.items():
        drawn = drawn[np.isfinite(drawn)]
        low, high = np.quantile(drawn, [tails, 1.0 - tails]) if len(drawn) else (np.nan, np.nan)
        result[metric] = Difference(
            metric, float(now), float(low), float(high), float((drawn < 0).mean()) if len(drawn) else np.nan
        )
    return result


# The latest draws of resample counts by (seed, jobs), at most this many kept: the guard and the ensemble's check compare
# several pairs of models on one pair's runs, each with the same seed and the same jobs.
_KEPT_DRAWS = 2
_draws: dict[tuple[int, int], np.ndarray] = {}


def resample_counts(seed: int, n_groups: int, n_resamples: int) -> np.ndarray:
    """How often each of ``n_groups`` jobs is drawn in each of ``n_resamples`` resamples (a read-only array).

    The multinomial draw costs more than the rest of a bootstrap, and the same seed and jobs give the same draw: a
    draw of more resamples begins with that of fewer (one row after the other from one stream), so the latest draws
    are kept and sliced, and the answer is the very draw of the seed.
    """
    kept = _draws.get((seed, n_groups))
    if kept is None or len(kept) < n_resamples:
        kept = np.random.default_rng(seed).multinomial(n_groups, np.full(n_groups, 1.0 / n_groups), size=n_resamples)
        kept = kept.astype(np.int32)
        kept.flags.writeable = False
        _draws.pop((seed, n_groups), None)
        while len(_draws) >= _KEPT_DRAWS:
            _draws.pop(next(iter(_draws)))
        _draws[(seed, n_groups)] = kept
    return kept[:n_resamples]


def _weighted_medians(values: np.ndarray, group_of_row: np.ndarray, counts: np.ndarray, block: int = 256) -> np.ndarray:
    """The (lower) median of ``values`` under each resample's weights (a row weighs its group's count), per resample."""
    order = np.argsort(values, kind="stable")
    ordered, groups = values[order], group_of_row[order]
    out = np.empty(len(counts))
    for start in range(0, len(counts), block):
        cumulative = np.cumsum(counts[start : start + block][:, groups], axis=1)
        half = cumulative[:, -1:] / 2.0
        out[start : start + block] = ordered[np.argmax(cumulative >= half, axis=1)]
    return out


def _rae(sums: np.ndarray) -> np.ndarray:
    """RAE of A minus RAE of B (% points) from rows of summed errors; NaN where the prior made no error."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return 100.0 * (sums[:, 0] - sums[:, 1]) / sums[:, 2]


def _male(sums: np.ndarray) -> np.ndarray:
    """Mean absolute log error of A minus that of B, in hundredths of ln (near 0, about % points of relative error, the
    unit of the others), from rows of summed errors and counts."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return 100.0 * (sums[:, 6] - sums[:, 7]) / sums[:, 8]


def _rrse(sums: np.ndarray) -> np.ndarray:
    """RRSE of A minus RRSE of B (% points) from rows of summed errors; NaN where the prior made no error."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return 100.0 * (np.sqrt(sums[:, 3] / sums[:, 5]) - np.sqrt(sums[:, 4] / sums[:, 5]))


# Metrics that are sums over jobs: a resample's value follows from its counts and the per-job sums.
SUMMED = {"rae": _rae, "rrse": _rrse, "male": _male}

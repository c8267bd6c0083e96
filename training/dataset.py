"""Training sets: one (algorithm, platform)'s successful runs as a feature matrix and wall seconds."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property
from typing import Protocol

import numpy as np
import pandas as pd

from training.folds import MIN_ROWS

log = logging.getLogger(__name__)

# Columns of the store's frame that describe a run rather than its inputs.
RUN_COLUMNS = frozenset(
    {
        "run_id",
        "algorithm",
        "platform",
        "machine",
        "wall_seconds",
        "cpu_seconds",
        "max_rss_kb",
        "exit_status",
        "cache_state",
        "source",
        "recorded_at",
        "params",
        "context",
    }
)


class DatasetError(ValueError):
    """A pair's measurements cannot make a training set; names the pair and the reason."""


class MeasurementFrames(Protocol):
    """The part of the measurement store training reads."""

    def pairs(self) -> list[tuple[str, str]]: ...

    def frame(
        self, algorithm: str | None = None, platform: str | None = None, successful_only: bool = True
    ) -> pd.DataFrame: ...


@dataclass(frozen=True)
class TrainingSet:
    """Features ``X`` (columns ``feature_names``) and wall seconds ``y`` of one pair, ordered by run id."""

    algorithm: str
    platform: str
    X: pd.DataFrame
    y: np.ndarray
    feature_names: list[str]
    run_ids: list[str]

    def __len__(self) -> int:
        return len(self.y)

    @cached_property
    def jobs(self) -> np.ndarray:
        """A job number per run (0, 1, ... in order of first run), equal for repeats of a job (the same feature values).

        Computed once per set: the fold plan, every candidate's out-of-fold table and the
        bootstraps all group runs by it.
        """
        return pd.factorize(pd.util.hash_pandas_object(self.X, index=False))[0]


def training_set_from_frame(frame: pd.DataFrame, algorithm: str, platform: str) -> TrainingSet:
    """The successful runs of (algorithm, platform) in ``frame``, with its informative numeric features."""
    rows = frame
    if "algorithm" in rows:
        rows = rows[rows["algorithm"] == algorithm]
    if "platform" in rows:
        rows = rows[rows["platform"] == platform]
    if "exit_status" in rows:
        rows = rows[rows["exit_status"] == 0]
    rows = rows.sort_values("run_id", kind="stable").reset_index(drop=True)
    if len(rows) < MIN_ROWS:
        raise DatasetError(f"{algorithm} on {platform}: {len(rows)} successful run(s), need at least {MIN_ROWS}")
    candidates = [c for c in rows.columns if c not in RUN_COLUMNS and pd.api.types.is_numeric_dtype(rows[c])]
    X = rows[candidates].astype("float64").dropna(axis="columns", how="all").fillna(0.0)
    X = X.loc[:, X.nunique() > 1]
    if X.shape[1] == 0:
        raise DatasetError(f"{algorithm} on {platform}: no feature varies across the {len(rows)} runs")
    names = sorted(X.columns)
    return TrainingSet(
        algorithm=algorithm,
        platform=platform,
        X=X[names],
        y=rows["wall_seconds"].to_numpy(dtype="float64"),
        feature_names=names,
        run_ids=rows["run_id"].astype(str).tolist(),
    )


def load_training_sets(
    store: MeasurementFrames,
    algorithms: Iterable[str] | None = None,
    platforms: Iterable[str] | None = None,
) -> list[TrainingSet]:
    """A training set per stored pair, optionally restricted; unusable pairs are logged and skipped."""
    wanted_algorithms = None if algorithms is None else set(algorithms)
    wanted_platforms = None if platforms is None else set(platforms)
    sets = []
    for algorithm, platform in sorted(store.pairs()):
        if wanted_algorithms is not None and algorithm not in wanted_algorithms:
            continue
        if wanted_platforms is not None and platform not in wanted_platforms:
            continue
        try:
            sets.append(training_set_from_frame(store.frame(algorithm, platform), algorithm, platform))
        except DatasetError as exc:
            log.warning("skipping %s", exc)
    return sets

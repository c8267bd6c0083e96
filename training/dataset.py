"""Training sets: one (algorithm, platform)'s finished and censored runs as a feature matrix and a target.

The target (:class:`~predictor.domain.Target`) is the run's wall seconds, or its peak resident memory
in bytes (``max_rss_kb`` x 1024, only runs that measured it). A censored run was stopped before it
finished (a time limit, an out-of-memory kill): what it reached is a lower bound on both its run time
and its peak memory, marked in the set's ``censored`` mask. Members that learn from bounds take them;
the rest, and every metric, use the finished runs only.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property
from typing import Protocol

import numpy as np
import pandas as pd

from features.history import REQUEST_TIME
from predictor.domain import Target
from predictor.store import RUN_COLUMNS
from training.folds import MIN_ROWS

log = logging.getLogger(__name__)


class DatasetError(ValueError):
    """A pair's measurements cannot make a training set; names the pair and the reason."""


class MeasurementFrames(Protocol):
    """The part of the measurement store training reads."""

    def pairs(self) -> list[tuple[str, str]]: ...

    def frame(
        self,
        algorithm: str | None = None,
        platform: str | None = None,
        successful_only: bool = True,
        *,
        with_censored: bool = False,
    ) -> pd.DataFrame: ...


@dataclass(frozen=True, init=False)
class TrainingSet:
    """Features ``X`` (columns ``feature_names``) and ``target`` values ``y`` of one pair, ordered by run id.

    ``y`` is wall seconds (``Target.TIME``, the default) or peak resident bytes (``Target.MEMORY``).
    ``censored`` marks the rows whose ``y`` is a lower bound (the run was stopped); all False when none is
    (the default). ``ended`` is when each run ended (Unix seconds of its ``recorded_at``), ``submitted`` when its job was
    submitted (the store's ``submitted_at``): what forward validation cuts time by.
    """

    algorithm: str
    platform: str
    X: pd.DataFrame
    y: np.ndarray
    feature_names: list[str]
    run_ids: list[str]
    censored: np.ndarray
    target: Target
    ended: np.ndarray
    submitted: np.ndarray

    def __init__(
        self,
        algorithm: str,
        platform: str,
        X: pd.DataFrame,
        y: np.ndarray,
        feature_names: list[str],
        run_ids: list[str],
        censored: np.ndarray | None = None,
        target: Target = Target.TIME,
        ended: np.ndarray | None = None,
        submitted: np.ndarray | None = None,
    ) -> None:
        """The set, its masks and times checked: ``censored`` None (no row is), ``ended`` None (the runs ended in row
        order) and ``submitted`` None (each run's job was submitted when it ended) are filled in here."""
        mask = np.zeros(len(y), dtype=bool) if censored is None else np.asarray(censored, dtype=bool)
        if mask.shape != (len(y),):
            raise ValueError(f"censored has shape {mask.shape}, need one flag per row ({len(y)})")
        ended_at = np.arange(len(y), dtype="float64") if ended is None else np.asarray(ended, dtype="float64")
        if ended_at.shape != (len(y),) or not np.isfinite(ended_at).all():
            raise ValueError(f"ended needs one finite time per row ({len(y)}), got shape {ended_at.shape}")
        submitted_at = ended_at if submitted is None else np.asarray(submitted, dtype="float64")
        if submitted_at.shape != (len(y),) or not np.isfinite(submitted_at).all():
            raise ValueError(f"submitted needs one finite time per row ({len(y)}), got shape {submitted_at.shape}")
        # Frozen: the fields are set past the dataclass's __setattr__, as its own __init__ would.
        vars(self).update(
            algorithm=algorithm,
            platform=platform,
            X=X,
            y=y,
            feature_names=feature_names,
            run_ids=run_ids,
            censored=mask,
            target=target,
            ended=ended_at,
            submitted=np.minimum(submitted_at, ended_at),
        )

    def __len__(self) -> int:
        return len(self.y)

    @property
    def carries_requests(self) -> bool:
        """Whether the runs carry their users' requested time (``request.time``): a job class, whose runs span seconds
        to weeks and are judged by their log error (``job_class_metric``), with the request among the rules."""
        return REQUEST_TIME in self.feature_names

    @property
    def finished(self) -> np.ndarray:
        """Rows of runs that finished: their ``y`` is the target itself (what metrics and most members learn from)."""
        return ~self.censored

    @cached_property
    def fingerprint(self) -> str:
        """A digest of everything training reads of the set: its target, runs, their features, target values and censoring."""
        digest = hashlib.sha256()
        named = [self.algorithm, self.platform, self.feature_names, self.run_ids]
        # a run-time set's digest is the one it had before sets had targets
        if self.target is not Target.TIME:
            named.append(self.target.value)
        digest.update(json.dumps(named).encode())
        for array in (self.X.to_numpy(dtype="float64"), self.y, self.censored):
            digest.update(np.ascontiguousarray(array).tobytes())
        return digest.hexdigest()

    @cached_property
    def jobs(self) -> np.ndarray:
        """A job number per run (0, 1, ... in order of first run), equal for repeats of a job (the same feature values).

        Computed once per set: the fold plan, every candidate's out-of-fold table and the
        bootstraps all group runs by it.
        """
        return pd.factorize(pd.util.hash_pandas_object(self.X, index=False))[0]


def training_set_from_frame(
    frame: pd.DataFrame, algorithm: str, platform: str, target: Target = Target.TIME
) -> TrainingSet:
    """The finished and censored runs of (algorithm, platform) in ``frame``, with its informative numeric features.

    For ``Target.MEMORY`` only the runs that measured their peak memory (``max_rss_kb`` known and
    positive) count. A pair needs :data:`~training.folds.MIN_ROWS` finished runs; censored ones do not
    count towards it.
    """
    rows = frame
    if "algorithm" in rows:
        rows = rows[rows["algorithm"] == algorithm]
    if "platform" in rows:
        rows = rows[rows["platform"] == platform]
    rows = target_rows(rows, target)
    rows = rows.sort_values("run_id", kind="stable").reset_index(drop=True)
    censored = rows["censored"].to_numpy(dtype=bool)
    finished = int((~censored).sum())
    if finished < MIN_ROWS:
        also = f" (and {len(rows) - finished} censored)" if finished < len(rows) else ""
        measured = " with a peak memory" if target is Target.MEMORY else ""
        raise DatasetError(
            f"{algorithm} on {platform}: {finished} successful run(s){measured}{also}, need at least {MIN_ROWS}"
        )
    candidates = [c for c in rows.columns if c not in RUN_COLUMNS and pd.api.types.is_numeric_dtype(rows[c])]
    X = rows[candidates].astype("float64").dropna(axis="columns", how="all").fillna(0.0)
    # A feature that never varies teaches nothing; the request stays (a class whose users all ask the partition's
    # default limit is still a job class: its answers stop at the request, its rules read it).
    X = X.loc[:, (X.nunique() > 1) | (X.columns == REQUEST_TIME)]
    if X.shape[1] == 0:
        raise DatasetError(f"{algorithm} on {platform}: no feature varies across the {len(rows)} runs")
    names = sorted(X.columns)
    return TrainingSet(
        algorithm=algorithm,
        platform=platform,
        X=X[names],
        y=target_values(rows, target),
        feature_names=names,
        run_ids=rows["run_id"].astype(str).tolist(),
        censored=censored,
        target=target,
        ended=unix_seconds(rows, "recorded_at"),
        submitted=unix_seconds(rows, "submitted_at"),
    )


def unix_seconds(rows: pd.DataFrame, column: str) -> np.ndarray | None:
    """Unix seconds of a time column of a store frame (``recorded_at``: when each run ended; ``submitted_at``: when its
    job was submitted), or None when the frame has no such column."""
    if column not in rows:
        return None
    stamps = pd.to_datetime(rows[column], utc=True)
    return ((stamps - pd.Timestamp(0, tz="UTC")) / pd.Timedelta(seconds=1)).to_numpy(dtype="float64")


def target_rows(frame: pd.DataFrame, target: Target) -> pd.DataFrame:
    """The runs of a store frame that tell ``target``: finished or censored, and for peak memory, having measured it.

    ``censored`` is made a boolean column (all False when the frame has none).
    """
    rows = frame.assign(censored=frame["censored"].astype(bool) if "censored" in frame else False)
    if "exit_status" in rows:
        rows = rows[(rows["exit_status"] == 0) | rows["censored"]]
    if target is Target.MEMORY:
        rss = rows["max_rss_kb"] if "max_rss_kb" in rows else pd.Series(np.nan, index=rows.index)
        rows = rows[rss.notna() & (rss > 0)]
    return rows


def target_values(rows: pd.DataFrame, target: Target) -> np.ndarray:
    """What ``target`` measured of each run of a store frame: wall seconds, or peak resident bytes (``max_rss_kb`` x 1024)."""
    if target is Target.MEMORY:
        return rows["max_rss_kb"].to_numpy(dtype="float64") * 1024.0
    return rows["wall_seconds"].to_numpy(dtype="float64")


def load_training_sets(
    store: MeasurementFrames,
    algorithms: Iterable[str] | None = None,
    platforms: Iterable[str] | None = None,
    target: Target = Target.TIME,
) -> list[TrainingSet]:
    """A training set of ``target`` per stored pair, optionally restricted; unusable pairs are logged and skipped."""
    wanted_algorithms = None if algorithms is None else set(algorithms)
    wanted_platforms = None if platforms is None else set(platforms)
    sets = []
    for algorithm, platform in sorted(store.pairs()):
        if wanted_algorithms is not None and algorithm not in wanted_algorithms:
            continue
        if wanted_platforms is not None and platform not in wanted_platforms:
            continue
        frame = store.frame(algorithm, platform, with_censored=True)
        try:
            sets.append(training_set_from_frame(frame, algorithm, platform, target))
        except DatasetError as exc:
            log.warning("skipping %s", exc)
    return sets

"""Run-to-run noise of repeated identical jobs: the floor below which no model can predict."""

from __future__ import annotations

import json

import pandas as pd


def repeat_groups(frame: pd.DataFrame) -> pd.DataFrame:
    """Per (algorithm, platform, identical parameters) group of 2+ runs: count, mean seconds and coefficient of variation."""
    keyed = frame.assign(_params=frame["params"].map(lambda p: json.dumps(p, sort_keys=True)))
    grouped = keyed.groupby(["algorithm", "platform", "_params"])["wall_seconds"]
    stats = grouped.agg(runs="count", mean_seconds="mean", std_seconds="std").reset_index()
    stats = stats[stats["runs"] >= 2].drop(columns="_params")
    return stats.assign(cv=stats["std_seconds"] / stats["mean_seconds"])


def noise_summary(frame: pd.DataFrame) -> pd.DataFrame:
    """Median and 90th-percentile coefficient of variation of repeated runs, per algorithm and platform."""
    groups = repeat_groups(frame)
    return (
        groups.groupby(["algorithm", "platform"])["cv"]
        .agg(groups="count", median_cv="median", p90_cv=lambda s: s.quantile(0.9))
        .reset_index()
    )

"""How runtime relates to features: per (algorithm, platform), the runs, the runtime range and each feature's
Spearman rank correlation with runtime, over successful runs; optionally a scatter plot per feature.

Spearman's rho is the Pearson correlation of average ranks (ties share a rank), over the runs that have the
feature; it is undefined (None) for fewer than three such runs or when the feature or runtime is constant there.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from rich.table import Table

from predictor.store import RUN_COLUMNS, MeasurementStore

# a positive feature spanning this factor or more is plotted on a log axis
_LOG_X_SPAN = 100.0


@dataclass(frozen=True)
class Correlation:
    """Spearman's rho of runtime with one feature (None when undefined) over the ``runs`` that have it."""

    feature: str
    rho: float | None
    runs: int


@dataclass(frozen=True)
class PairSummary:
    """Successful and failed runs of one (algorithm, platform), the runtime range, correlations by falling |rho|."""

    algorithm: str
    platform: str
    runs: int
    failed: int
    min_seconds: float
    median_seconds: float
    max_seconds: float
    correlations: tuple[Correlation, ...]


def describe_pairs(
    store: MeasurementStore, algorithm: str | None = None, platform: str | None = None
) -> Iterator[tuple[PairSummary, pd.DataFrame]]:
    """Summary and successful runs of every stored pair, or only those of one algorithm and/or platform."""
    for pair_algorithm, pair_platform in store.pairs():
        if algorithm not in (None, pair_algorithm) or platform not in (None, pair_platform):
            continue
        frame = store.frame(pair_algorithm, pair_platform)
        failed = store.count(pair_algorithm, pair_platform) - len(frame)
        yield summarize(frame, pair_algorithm, pair_platform, failed), frame


def summarize(frame: pd.DataFrame, algorithm: str, platform: str, failed: int = 0) -> PairSummary:
    """Runtime range and rank correlations of one pair's successful runs (a store frame)."""
    runtime = frame["wall_seconds"]
    correlations = [
        Correlation(name, spearman(frame[name], runtime), int(frame[name].notna().sum()))
        for name in feature_columns(frame)
    ]
    correlations.sort(key=lambda c: (c.rho is None, -abs(c.rho or 0.0), c.feature))
    return PairSummary(
        algorithm=algorithm,
        platform=platform,
        runs=len(frame),
        failed=failed,
        min_seconds=float(runtime.min()),
        median_seconds=float(runtime.median()),
        max_seconds=float(runtime.max()),
        correlations=tuple(correlations),
    )


def feature_columns(frame: pd.DataFrame) -> list[str]:
    """The feature columns of a store frame."""
    return [name for name in frame.columns if name not in RUN_COLUMNS]


def spearman(x: pd.Series, y: pd.Series) -> float | None:
    """Spearman's rank correlation over the rows where both are known; None when undefined."""
    known = x.notna() & y.notna()
    if known.sum() < 3:
        return None
    x_ranks, y_ranks = x[known].rank(), y[known].rank()
    if x_ranks.nunique() < 2 or y_ranks.nunique() < 2:
        return None
    rho = float(np.corrcoef(x_ranks, y_ranks)[0, 1])
    return None if math.isnan(rho) else rho


def summary_table(summary: PairSummary) -> Table:
    """The summary as a table: a title line with counts and runtime range, one row per feature."""
    s = summary
    table = Table(
        title=f"{s.algorithm} on {s.platform}: {s.runs} runs ({s.failed} failed), runtime min {_seconds(s.min_seconds)} "
        f"/ median {_seconds(s.median_seconds)} / max {_seconds(s.max_seconds)} s",
        title_justify="left",
    )
    table.add_column("feature")
    table.add_column("Spearman rho", justify="right")
    table.add_column("runs", justify="right")
    for c in s.correlations:
        table.add_row(c.feature, "-" if c.rho is None else f"{c.rho:+.3f}", str(c.runs))
    return table


def plot_features(summary: PairSummary, frame: pd.DataFrame, directory: Path) -> list[Path]:
    """One PNG per feature under ``directory/<algorithm>@<platform>/``: runtime (log axis) against the feature."""
    folder = directory / _file_name(f"{summary.algorithm}@{summary.platform}")
    folder.mkdir(parents=True, exist_ok=True)
    shown = frame[frame["wall_seconds"] > 0]
    hidden = len(frame) - len(shown)
    written = []
    for c in summary.correlations:
        points = shown[shown[c.feature].notna()]
        figure = Figure(figsize=(5, 4))
        axes = figure.subplots()
        axes.scatter(points[c.feature], points["wall_seconds"], s=6, alpha=0.4, linewidths=0)
        axes.set_yscale("log")
        low, high = points[c.feature].min(), points[c.feature].max()
        if len(points) and low > 0 and high / low >= _LOG_X_SPAN:
            axes.set_xscale("log")
        rho = "undefined" if c.rho is None else f"{c.rho:+.2f}"
        note = f"; {hidden} runs of 0 s not shown" if hidden else ""
        axes.set(xlabel=c.feature, ylabel="wall seconds (log)", title=f"Spearman rho {rho}, {len(points)} runs{note}")
        figure.suptitle(f"{summary.algorithm} on {summary.platform}", fontsize="medium")
        path = folder / f"{_file_name(c.feature)}.png"
        figure.savefig(path, dpi=80)
        written.append(path)
    return written


def _seconds(value: float) -> str:
    """Seconds compactly: three significant digits below 1000, whole seconds with separators above."""
    return f"{value:,.0f}" if value >= 1000 else f"{value:.3g}"


def _file_name(text: str) -> str:
    """Text made safe as a file name."""
    return re.sub(r"[^A-Za-z0-9._=@-]+", "_", text)

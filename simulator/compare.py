"""Every applicable policy on one workload and cluster, under several estimate sources and seeds, side by side.

:func:`run_grid` simulates the grid policy x estimates x seed into a tidy frame (one
row per run, every :class:`simulator.metrics.Metrics` field plus the makespan's ratio
to :func:`simulator.bounds.makespan_lower_bound`); :func:`summarize` turns it into the
mean and a Student-t confidence interval per (policy, estimates, metric);
:func:`table` and :func:`markdown` lay that out, and :func:`plot` draws one metric
with its intervals, one group of bars per estimate source.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import fields
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from scheduler.policies import PolicyChoice, applicable_policies
from simulator.bounds import makespan_lower_bound
from simulator.estimates import EstimateSource, Fitted, Noisy, Truth
from simulator.metrics import Metrics
from simulator.runner import run
from simulator.workload import Cluster, Workload, WorkloadRecipe

DEFAULT_ESTIMATES: dict[str, EstimateSource] = {"oracle": Truth(), "model": Fitted(), "noisy:0.5": Noisy(0.5)}
CONFIDENCE = 0.95
# what a summary row is about; ``seed`` is what it averages over
KEYS = ("policy", "estimates")
TABLE_METRICS = (
    "makespan",
    "makespan_ratio",
    "mean_completion",
    "mean_waiting",
    "max_waiting",
    "mean_slowdown",
    "avebsld",
    "utilisation",
    "energy_kwh",
)
METRICS = (*(f.name for f in fields(Metrics)), "lower_bound", "makespan_ratio", "sim_seconds")  # columns per run
# shown only when some run has them, so the table stays narrow where they cannot happen
OCCASIONAL_METRICS = (
    "tardiness",
    "deadline_misses",
    "unfinished",
    "dropped",
    "failed",
    "wasted_seconds",
    "interrupted",
    "underestimated",
    "over_request",
    "predicted_starts",
    "start_error_median",
    "start_within_10min",
)
# every other metric ranks smallest first
HIGHER_IS_BETTER = frozenset({"done", "utilisation", "start_within_10min"})
# (label of the run just finished, runs done, runs in all)
Progress = Callable[[str, int, int], None]


def resolve_policies(
    workload: Workload, requested: Mapping[str, PolicyChoice] | None = None
) -> dict[str, PolicyChoice]:
    """``requested`` (label -> policy) checked against the workload, or every policy the workload can run."""
    if not requested:
        on_nodes = any(m.node_slots for m in workload.cluster.machines)  # only policies that place jobs on nodes
        names = [
            n for n in applicable_policies(workload.provides) if not on_nodes or PolicyChoice(n).build().places_nodes
        ]
        return {name: PolicyChoice(name) for name in names}
    for choice in requested.values():
        if missing := choice.needs - workload.provides:
            raise ValueError(
                f"policy {choice.name!r} needs {', '.join(sorted(missing))}, which workload {workload.name} does not provide"
            )
    return dict(requested)


def resolve_estimates(
    workload: Workload, requested: Mapping[str, EstimateSource] | None = None
) -> dict[str, EstimateSource]:
    """``requested`` (label -> source), or the defaults without the fitted model when the workload has no history."""
    if requested:
        return dict(requested)
    return {
        label: source
        for label, source in DEFAULT_ESTIMATES.items()
        if not isinstance(source, Fitted) or workload.history
    }


def run_grid(
    workload: WorkloadRecipe,
    *,
    cluster: Cluster | None = None,
    policies: Mapping[str, PolicyChoice] | None = None,
    estimates: Mapping[str, EstimateSource] | None = None,
    seeds: int = 3,
    progress: Progress | None = None,
) -> pd.DataFrame:
    """Simulate every (policy, estimates, seed) of ``workload``; one row per run, policies and sources by their labels.

    Seed ``s`` makes the workload (``workload.make(s)``; fixed workloads stay the same) and seeds the
    noise and the fitted models, so every policy of one seed and estimate source meets the same jobs
    and the same estimates. Policies and estimates are checked on seed 0's workload before anything runs.
    """
    if seeds < 1:
        raise ValueError(f"seeds must be at least 1, got {seeds}")
    rows: list[dict[str, object]] = []
    chosen_policies: dict[str, PolicyChoice] = {}
    chosen_estimates: dict[str, EstimateSource] = {}
    for seed in range(seeds):
        w = workload.make(seed)
        if cluster is not None:
            w.cluster = cluster
        if seed == 0:
            chosen_policies = resolve_policies(w, policies)
            chosen_estimates = resolve_estimates(w, estimates)
        total = seeds * len(chosen_policies) * len(chosen_estimates)
        bound = makespan_lower_bound(w)
        for source_label, source in chosen_estimates.items():
            oracle = source.oracle(w, seed)
            for policy_label, policy in chosen_policies.items():
                result, metrics = run(w, policy.build(), oracle, label=source_label)
                rows.append(
                    {
                        "workload": w.name,
                        "policy": policy_label,
                        "estimates": source_label,
                        "seed": seed,
                        **metrics.as_dict(),
                        "lower_bound": bound,
                        "makespan_ratio": metrics.makespan / bound if bound > 0 else math.nan,
                        "sim_seconds": result.wall_seconds,
                    }
                )
                if progress is not None:
                    progress(f"{policy_label} / {source_label} / seed {seed}", len(rows), total)
    return pd.DataFrame(rows)


def summarize(runs: pd.DataFrame) -> pd.DataFrame:
    """Per (policy, estimates, metric): runs, mean, and the half-width, low and high of a two-sided t-interval.

    One run gives no interval (NaN); identical runs give a zero-width one.
    """
    metrics = [
        c for c in runs.columns if c not in (*KEYS, "workload", "seed") and pd.api.types.is_numeric_dtype(runs[c])
    ]
    quantile = (1.0 + CONFIDENCE) / 2.0
    out = []
    for (policy, source), group in runs.groupby(list(KEYS), sort=False):
        for metric in metrics:
            values = group[metric].dropna().to_numpy(dtype=float)
            n = len(values)
            mean = float(values.mean()) if n else math.nan
            if n < 2:
                half = math.nan
            elif values.min() == values.max():
                # exactly, not a rounding residue of the mean
                half = 0.0
            else:
                half = float(stats.t.ppf(quantile, n - 1) * values.std(ddof=1) / math.sqrt(n))
            out.append(
                {
                    "policy": policy,
                    "estimates": source,
                    "metric": metric,
                    "runs": n,
                    "mean": mean,
                    "half_width": half,
                    "low": mean - half,
                    "high": mean + half,
                }
            )
    return pd.DataFrame(out)


def table_metrics(runs: pd.DataFrame, extra: Sequence[str] = ()) -> list[str]:
    """The metrics worth a column: the usual ones, ``extra``, and the occasional ones some run actually has."""
    occasional = [m for m in OCCASIONAL_METRICS if m in runs and runs[m].fillna(0).ne(0).any()]
    return list(dict.fromkeys([*TABLE_METRICS, *extra, *occasional]))


def table(summary: pd.DataFrame, metrics: Sequence[str], sort_by: str) -> tuple[list[str], list[list[str]]]:
    """Header and rows ``mean ± half-width``, grouped by estimate source (in run order), best mean ``sort_by`` first."""
    wide = summary.pivot_table(
        index=list(KEYS), columns="metric", values=["mean", "half_width"], sort=False, dropna=False
    )
    order = list(dict.fromkeys(summary["estimates"]))
    sign = -1.0 if sort_by in HIGHER_IS_BETTER else 1.0
    ranked = sorted(wide.index, key=lambda k: (order.index(k[1]), sign * wide.loc[k, ("mean", sort_by)]))
    rows = []
    for key in ranked:
        cells = [_cell(wide.loc[key, ("mean", m)], wide.loc[key, ("half_width", m)]) for m in metrics]
        rows.append([key[1], key[0], *cells])
    return ["estimates", "policy", *metrics], rows


def markdown(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A GitHub markdown table, numbers right-aligned."""
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(["---"] * 2 + ["---:"] * (len(header) - 2)) + " |"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def _cell(mean: float, half: float) -> str:
    """``mean ± half`` with decimals for the magnitude; the mean alone when there is no interval."""
    if math.isnan(mean):
        return "-"
    size = abs(mean)
    digits = (
        0
        if size >= 1000
        else 1
        if size >= 10
        else 3
        if size >= 0.1 or size == 0
        else min(6, 2 - math.floor(math.log10(size)))
    )
    return f"{mean:,.{digits}f}" if math.isnan(half) else f"{mean:,.{digits}f} ± {half:,.{digits}f}"


def plot(summary: pd.DataFrame, metric: str, path: str | Path, title: str = "") -> Path:
    """Bars of ``metric``'s mean with its interval as error bars: one group per estimate source, one bar per policy."""
    from matplotlib import colormaps
    from matplotlib.figure import Figure

    part = summary[summary["metric"] == metric]
    if part.empty:
        raise ValueError(f"unknown metric {metric!r}; known: {', '.join(dict.fromkeys(summary['metric']))}")
    sources = list(dict.fromkeys(part["estimates"]))
    policies = list(dict.fromkeys(part["policy"]))
    width = 0.8 / len(policies)
    fig = Figure(figsize=(max(6.0, 1.2 + len(sources) * len(policies) * 0.35), 4.5))
    ax = fig.subplots()
    colors = colormaps["tab10" if len(policies) <= 10 else "tab20"]
    for i, policy in enumerate(policies):
        mine = part[part["policy"] == policy].set_index("estimates").reindex(sources)
        x = np.arange(len(sources)) - 0.4 + width * (i + 0.5)
        ax.bar(
            x,
            mine["mean"],
            width,
            yerr=mine["half_width"].fillna(0.0),
            capsize=3,
            label=policy,
            color=colors(i % colors.N),
        )
    if metric == "makespan_ratio":
        ax.axhline(1.0, color="black", linewidth=0.8, linestyle="--", label="lower bound")
    ax.set_xticks(np.arange(len(sources)), sources)
    ax.set_xlabel("estimates")
    ax.set_ylabel(f"{metric} (mean, {int(part['runs'].max())} runs, {CONFIDENCE:.0%} CI)")
    ax.set_title(title or metric)
    # beside the bars
    ax.legend(fontsize=8, ncols=1 + len(policies) // 16, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=120, bbox_inches="tight")
    return out


def save(runs: pd.DataFrame, summary: pd.DataFrame, metric: str, directory: str | Path, stem: str) -> list[Path]:
    """Write ``STEM-runs.csv``, ``STEM-summary.csv`` and ``STEM-METRIC.png`` (stem made file-safe) under ``directory``."""
    base = Path(directory)
    base.mkdir(parents=True, exist_ok=True)
    safe = re.sub(r"[^\w.-]+", "_", stem).strip("_") or "compare"
    paths = [base / f"{safe}-runs.csv", base / f"{safe}-summary.csv"]
    runs.to_csv(paths[0], index=False)
    summary.to_csv(paths[1], index=False)
    seeds = runs["seed"].nunique()
    paths.append(
        plot(summary, metric, base / f"{safe}-{metric}.png", f"{stem}: {metric}, {seeds} seed{'s' * (seeds > 1)}")
    )
    return paths

"""Accuracy of the peak-memory target on the bundled runs (issue 31): 10-fold CV per (algorithm, platform).

    python benchmarks/memory_accuracy.py data/measurements/realtools.csv --json benchmarks/results/memory_accuracy.json

Per pair of the runs that measured their peak memory (``max_rss_kb``), with the pipeline's own fold plan (10 folds,
repeats of a job kept in one fold) and metric (:func:`training.crossval.cross_validate`):

- **RAE** (%, against each fold's training mean), **within 25 %** and **over the limit** (the share of runs above
  the limit served at the settings' memory limit quantile, cross-fitted: each fold's limit from the other folds' residuals,
  as :func:`training.intervals.cross_fitted_coverage` judges intervals) of ``linear_log`` and ``lightgbm_log`` and of
  the best of :data:`MEMBERS` per pair (chosen on these same folds, so optimistic, as a champion's CV figure is);
- the **training mean** (the prior RAE is measured against: RAE 100 by definition, its own share over);
- the **last two runs**: each run predicted by the mean of the two runs of its pair recorded before it (EASY++'s
  rule, Tsafrir, Etsion & Feitelson 2007), in the order they were recorded; its limit is that mean scaled by the
  limit quantile of the earlier runs' ratios (from the 10th run on).
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from data.ingest import ingest_file
from predictor.catalog import load_catalog
from predictor.domain import Target
from predictor.intervals import log_ratios, residual_log_quantiles, scaled
from predictor.settings import BUNDLED_DATA, Settings
from predictor.store import MeasurementStore
from training.crossval import cross_validate
from training.dataset import TrainingSet, load_training_sets
from training.folds import FoldPlan
from training.metrics import compute_metrics

MEMBERS = ("linear_log", "lightgbm_log", "isotonic_log", "quadratic_log", "lad_log")
FOLDS = 10


def over_limit_cross_fitted(y: np.ndarray, predicted: np.ndarray, folds: np.ndarray, level: float) -> float:
    """Share of runs above their limit, each fold's limit scaled by the other folds' residual quantile at ``level``."""
    over = np.zeros(len(y), dtype=bool)
    for fold in np.unique(folds):
        held = folds == fold
        over[held] = y[held] > scaled(predicted[held], residual_log_quantiles(y[~held], predicted[~held]), level)
    return float(over.mean())


def last_two(y: np.ndarray, level: float) -> dict[str, float]:
    """The last-two-runs rule, prequential in run order from the third run: RAE against the running mean, within 25 %,
    and the share over a limit at ``level`` of the earlier ratios."""
    predicted = np.array([(y[i - 1] + y[i - 2]) / 2 for i in range(2, len(y))])
    truth, prior = y[2:], np.array([y[:i].mean() for i in range(2, len(y))])
    metrics = compute_metrics(truth, predicted, prior)
    ratios = log_ratios(truth, predicted)
    over = [truth[i] > predicted[i] * np.exp(np.quantile(ratios[:i], level)) for i in range(10, len(truth))]
    return {
        "rae": metrics["rae"],
        "within_25pct": metrics["within_25pct"],
        "over_limit": float(np.mean(over)) if over else float("nan"),
    }


def pair_row(ts: TrainingSet, in_recorded_order: np.ndarray, level: float) -> dict[str, Any]:
    """Every column of one pair's row; ``in_recorded_order`` is its finished runs' peak memory in the order recorded."""
    y = ts.y[ts.finished]
    plan = FoldPlan.create(ts.run_ids, FOLDS, seed=0, groups=list(ts.jobs))
    results = {m: cross_validate(m, ts, plan) for m in MEMBERS}
    scored = {
        m: {
            "rae": r.metrics["rae"],
            "within_25pct": r.metrics["within_25pct"],
            "over_limit": over_limit_cross_fitted(
                ts.y[ts.finished], r.predictions[ts.finished], plan.folds[ts.finished], level
            ),
        }
        for m, r in results.items()
    }
    best = min(scored, key=lambda m: scored[m]["rae"])
    mean_prior = next(iter(results.values())).priors[ts.finished]
    return {
        "algorithm": ts.algorithm,
        "platform": ts.platform,
        "runs": int(len(y)),
        "median_mib": float(np.median(y) / 2**20),
        "max_mib": float(y.max() / 2**20),
        "members": scored,
        "best": best,
        "training_mean": {
            "rae": 100.0,
            "within_25pct": compute_metrics(y, mean_prior, mean_prior)["within_25pct"],
            "over_limit": float((y > mean_prior).mean()),
        },
        "last_two": last_two(in_recorded_order, level),
    }


def markdown(result: dict[str, Any]) -> str:
    """The table docs/results/peak-memory.md shows."""
    lines = [
        "| pair | runs | median MiB | best member | RAE best / linear_log / lightgbm_log / last two | within 25 % best / last two / mean | "
        "over the limit best / last two / mean |",
        "| --- | ---: | ---: | --- | --- | --- | --- |",
    ]
    for r in result["pairs"]:
        b, lt, mean = r["members"][r["best"]], r["last_two"], r["training_mean"]
        lines.append(
            f"| {r['algorithm']} {r['platform']} | {r['runs']} | {r['median_mib']:.0f} | {r['best']} | {b['rae']:.1f} / "
            f"{r['members']['linear_log']['rae']:.1f} / {r['members']['lightgbm_log']['rae']:.1f} / {lt['rae']:.1f} | "
            f"{100 * b['within_25pct']:.0f} / {100 * lt['within_25pct']:.0f} / {100 * mean['within_25pct']:.0f} % | "
            f"{100 * b['over_limit']:.1f} / {100 * lt['over_limit']:.1f} / {100 * mean['over_limit']:.1f} % |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", type=Path, help="A measurements CSV with max_rss_kb, or with --markdown a result file.")
    parser.add_argument(
        "--markdown", action="store_true", help="Print the table of a result file instead of measuring."
    )
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    if args.markdown:
        print(markdown(json.loads(args.data.read_text())))
        return
    level = Settings().memory_limit_quantile
    catalog = load_catalog(BUNDLED_DATA / "catalog.yaml")
    with tempfile.TemporaryDirectory() as home:
        store = MeasurementStore(f"sqlite:///{home}/store.db")
        store.migrate()
        ingest_file(args.data, store, catalog)
        sets = load_training_sets(store, target=Target.MEMORY)
        frame = store.frame().dropna(subset=["max_rss_kb"]).sort_values("recorded_at", kind="stable")
    recorded = {
        pair: 1024.0 * rows["max_rss_kb"].to_numpy(dtype=float)
        for pair, rows in frame.groupby(["algorithm", "platform"])
    }
    pairs = [pair_row(ts, recorded[(ts.algorithm, ts.platform)], level) for ts in sets]
    result = {"data": args.data.name, "limit_quantile": level, "folds": FOLDS, "pairs": pairs}
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    print(markdown(result))


if __name__ == "__main__":
    main()

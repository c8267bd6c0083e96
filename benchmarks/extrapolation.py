"""Calibration of the limits served outside the training envelope, on the bundled runs (issue 30, item 8).

    python benchmarks/extrapolation.py
    git worktree add /tmp/base <commit> && PYTHONPATH=/tmp/base python benchmarks/extrapolation.py   # an older revision

Per (algorithm, platform) of ``data/measurements/realtools.csv``, the runs are ordered by the pair's main size
feature (of its ``*.residues``, ``*.sequences`` and ``*.bytes`` features, the one of highest rank correlation
with the run time); the smallest 70 % train, the largest 30 % are held out. The champion is the best of three
cheap members (``linear_log``, ``quadratic_log``, ``lightgbm_log``, :data:`data.acquisition.COMMITTEE`) by
5-fold RAE on the training runs (folds grouped by job, as training makes them), its residual quantiles those of
its out-of-fold predictions, its envelope fitted on the training runs; the oracle then answers the held-out runs.
For the answers flagged ``extrapolating``: how many had no finite limit (the service then answers the pair's
mean, without one), how often the run exceeded its ``limit`` (nominal 1 - limit quantile; the interval's
coverage is 0.9, so a quantile below 0.95 gives the interval's upper end) and the largest ``limit / seconds``. ``predictor`` is imported from ``PYTHONPATH`` when set, so the same command
measures an older revision side by side.
"""

from __future__ import annotations

import argparse
import json

import numpy as np
import pandas as pd

from models.zoo import make_model
from predictor.catalog import load_catalog
from predictor.envelope import TrainingEnvelope
from predictor.intervals import residual_log_quantiles
from predictor.oracle import RuntimeOracle, serve_model
from predictor.registry import Champion
from predictor.settings import BUNDLED_DATA
from training.crossval import cross_validate
from training.dataset import TrainingSet, training_set_from_frame
from training.folds import FoldPlan

MEMBERS = ("linear_log", "quadratic_log", "lightgbm_log")
SIZE_SUFFIXES = (".residues", ".sequences", ".bytes")


def bundled_runs() -> pd.DataFrame:
    """The bundled runs with their features under their own names (``feature.`` dropped) and no parameter columns."""
    frame = pd.read_csv(BUNDLED_DATA / "measurements" / "realtools.csv", low_memory=False)
    frame = frame.drop(columns=[c for c in frame.columns if c.startswith("param.")])
    return frame.rename(columns=lambda c: c.removeprefix("feature."))


def split_by_size(ts: TrainingSet, train_share: float) -> tuple[np.ndarray, str]:
    """A mask of the training runs (the smallest ``train_share`` by the main size feature), and that feature."""
    sizes = [c for c in ts.feature_names if c.endswith(SIZE_SUFFIXES)] or ts.feature_names
    main = max(sizes, key=lambda c: (ts.X[c].rank().corr(pd.Series(ts.y).rank()), c))
    values = ts.X[main].to_numpy()
    cut = np.quantile(values, train_share, method="lower")
    train = values <= cut
    return (train if (~train).any() else values < cut), main


def subset(ts: TrainingSet, rows: np.ndarray) -> TrainingSet:
    """The runs of ``ts`` at ``rows`` (a mask), as a training set of their own."""
    X = ts.X[rows].reset_index(drop=True)
    return TrainingSet(
        ts.algorithm,
        ts.platform,
        X,
        ts.y[rows],
        ts.feature_names,
        [r for r, keep in zip(ts.run_ids, rows, strict=True) if keep],
        ts.censored[rows],
    )


def champion_for(train: TrainingSet, seed: int) -> Champion:
    """The best of :data:`MEMBERS` by 5-fold RAE on ``train``, refitted, with its residual quantiles and envelope."""
    plan = FoldPlan.create(train.run_ids, 5, seed, groups=train.jobs)
    results = [cross_validate(name, train, plan, seed=seed) for name in MEMBERS]
    best = min(results, key=lambda r: r.metrics["rae"])
    model = make_model(best.model_name, seed=seed).fit(train.X, train.y)
    quantiles = residual_log_quantiles(train.y, best.predictions)
    return Champion(
        train.algorithm,
        train.platform,
        best.model_name,
        "1",
        "sklearn",
        train.feature_names,
        model,
        tags={"residual_log_quantiles": json.dumps(quantiles)},
        envelope=TrainingEnvelope.fit(train.X, train.y),
    )


def measure_pair(ts: TrainingSet, train_share: float, limit_quantile: float, seed: int) -> dict[str, object]:
    """Train on the smaller runs of ``ts``, answer the larger ones; what the extrapolating answers promised and did."""
    rows, main = split_by_size(ts, train_share)
    train, test = subset(ts, rows), subset(ts, ~rows)
    champion = champion_for(train, seed)
    oracle = RuntimeOracle(load_catalog(BUNDLED_DATA / "catalog.yaml"), {}, coverage=0.9, limit_quantile=limit_quantile)
    oracle.swap({(ts.algorithm, ts.platform): serve_model(champion, train.X.to_numpy())})
    column = oracle.estimate_matrix(ts.algorithm, ts.feature_names, test.X.to_numpy(), [ts.platform])[0]
    out = np.array(column.extrapolating or [False] * len(test), dtype=bool)
    seconds = np.array([np.nan if s is None else s for s in column.seconds], dtype="float64")
    limit = np.array([np.nan if v is None else v for v in (column.limit or [None] * len(test))], dtype="float64")
    answered = out & np.isfinite(limit)  # no finite limit: the service falls back to the pair's mean, with none
    ratios = limit[answered] / seconds[answered]
    return {
        "pair": f"{ts.algorithm}/{ts.platform}",
        "size": main,
        "champion": champion.name,
        "train": len(train),
        "test": len(test),
        "extrapolating": int(out.sum()),
        "unanswered": int((out & ~answered).sum()),
        "over": int((test.y[answered] > limit[answered]).sum()),
        "max_ratio": float(ratios.max()) if len(ratios) else float("nan"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--train-share", type=float, default=0.7)
    parser.add_argument("--limit-quantile", type=float, default=0.95)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    frame = bundled_runs()
    rows = []
    for (algorithm, platform), runs in frame.groupby(["algorithm", "platform"], sort=True):
        ts = training_set_from_frame(runs, str(algorithm), str(platform))
        rows.append(measure_pair(ts, args.train_share, args.limit_quantile, args.seed))
        r = rows[-1]
        print(
            f"{r['pair']:<16} {r['size']:<18} {r['champion']:<14} train {r['train']:>4} test {r['test']:>4} "
            f"extrapolating {r['extrapolating']:>4} no limit {r['unanswered']:>4} over limit {r['over']:>4} "
            f"max limit/seconds {r['max_ratio']:>6.1f}",
            flush=True,
        )
    n = sum(int(r["extrapolating"]) for r in rows)
    over = sum(int(r["over"]) for r in rows)
    unanswered = sum(int(r["unanswered"]) for r in rows)
    worst = max((float(r["max_ratio"]) for r in rows if r["extrapolating"]), default=float("nan"))
    print(
        f"all pairs: {n} extrapolating answers, {unanswered} without a finite limit, {over} over their limit "
        f"({over / max(n, 1):.1%}, nominal {1 - args.limit_quantile:.0%}); largest limit/seconds {worst:.1f}"
    )


if __name__ == "__main__":
    main()

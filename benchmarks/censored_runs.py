"""Censored runs count: what learning from runs killed at their time limit buys, on simulated pairs.

Each pair is a power law with log-normal noise (sigma 0.5) over 300 runs; the longest 30 % were killed
at one time limit, so their wall time is only a lower bound (censored). Both members are 10-fold
cross-validated by ``training.crossval`` (``linear_log`` on the finished runs, ``tobit_log`` on all of
them, the killed ones as bounds); the walltime limit is the served one, the out-of-fold prediction
times exp(its 95 % log-ratio quantile), the quantiles taken with the killed runs as bounds (product
limit) or on the finished runs alone (the killed runs dropped, as before they counted). Per seed:

- ``under``: the killed jobs whose out-of-fold estimate is below their true time (which no store holds);
- ``over limit``: the killed jobs whose true time exceeds their limit, with the killed runs as bounds
  and with them dropped; ``limit x``: the limit's factor over the estimate, both ways;
- ``RAE``: on the finished runs, the pooled cross-validated metric the champion is chosen by.

    .venv/bin/python benchmarks/censored_runs.py --seeds 10
"""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd

from predictor.intervals import quantile_at, residual_log_quantiles
from training.crossval import cross_validate
from training.dataset import TrainingSet
from training.folds import FoldPlan

MEMBERS = ("linear_log", "tobit_log")
LIMIT_QUANTILE = 0.95


def stopped_at_a_limit(seed: int, n: int = 300) -> tuple[TrainingSet, np.ndarray]:
    """A pair whose longest 30 % of runs were killed at one time limit, and every run's true time."""
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({"size": 10 ** rng.uniform(1, 4, n), "other": rng.uniform(1, 10, n)})
    truth = np.exp(-3 + 1.2 * np.log(X["size"]) + 0.2 * np.log(X["other"]) + rng.normal(0, 0.5, n)).to_numpy()
    limit = np.quantile(truth, 0.7)
    ts = TrainingSet(
        "sim", "p", X, np.minimum(truth, limit), ["other", "size"], [f"r{i:03d}" for i in range(n)], truth > limit
    )
    return ts, truth


def scores(ts: TrainingSet, truth: np.ndarray, member: str, plan: FoldPlan) -> dict[str, float]:
    """One member's figures on one pair (see the module's docstring)."""
    result = cross_validate(member, ts, plan)
    killed, predicted = ts.censored, result.predictions
    factors = {
        "bounds": np.exp(quantile_at(residual_log_quantiles(ts.y, predicted, killed), LIMIT_QUANTILE)),
        "dropped": np.exp(quantile_at(residual_log_quantiles(ts.y[~killed], predicted[~killed]), LIMIT_QUANTILE)),
    }
    return {
        "under": float((predicted[killed] < truth[killed]).mean()),
        **{f"over limit ({k})": float((truth[killed] > f * predicted[killed]).mean()) for k, f in factors.items()},
        **{f"limit x ({k})": float(f) for k, f in factors.items()},
        "RAE": result.metrics["rae"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    args = parser.parse_args()
    rows = []
    for seed in range(args.seeds):
        ts, truth = stopped_at_a_limit(seed)
        plan = FoldPlan.create(ts.run_ids, 10, seed=0)
        rows += [{"seed": seed, "member": member, **scores(ts, truth, member, plan)} for member in MEMBERS]
    table = pd.DataFrame(rows)
    print(table.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    print(f"\nmean over {args.seeds} seeds\n")
    print(table.drop(columns="seed").groupby("member", sort=False).mean().to_string(float_format=lambda v: f"{v:.3f}"))


if __name__ == "__main__":
    main()

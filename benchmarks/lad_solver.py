"""The least-absolute-deviations line (``models.sparse.median_line``) with each of HiGHS's solvers, side by side.

    python benchmarks/lad_solver.py --rows 2000 8000 20000 --repeat 3

Rows are a heavy-tailed linear problem (8 features, Student-t noise with 2 degrees of freedom, as
run times around a fitted line are). Per size and solver: the best and median fit seconds over the
rounds (solvers alternate inside each round) and the objective reached, which must be the same.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import numpy as np
from sklearn.linear_model import QuantileRegressor

SOLVERS = ("highs-ds", "highs-ipm")


def problem(rows: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """A heavy-tailed linear regression problem of ``rows`` rows."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(rows, 8))
    return X, X @ rng.normal(size=8) + rng.standard_t(2, size=rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[2000, 8000, 20000])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    out = []
    for rows in args.rows:
        X, y = problem(rows, args.seed)
        seconds: dict[str, list[float]] = {s: [] for s in SOLVERS}
        objective: dict[str, float] = {}
        for _ in range(args.repeat):
            for solver in SOLVERS:
                started = time.perf_counter()
                line = QuantileRegressor(quantile=0.5, alpha=0.0, solver=solver).fit(X, y)
                seconds[solver].append(time.perf_counter() - started)
                objective[solver] = float(np.abs(y - line.predict(X)).sum())
        row = {
            "rows": rows,
            **{
                s: {"best_s": min(t), "median_s": statistics.median(t), "objective": objective[s]}
                for s, t in seconds.items()
            },
        }
        row["speedup"] = row["highs-ds"]["median_s"] / row["highs-ipm"]["median_s"]
        out.append(row)
        print(
            f"{rows:7d} rows  simplex {row['highs-ds']['median_s']:7.3f} s  interior point {row['highs-ipm']['median_s']:7.3f} s"
            f"  ratio {row['speedup']:5.1f}  objectives {objective['highs-ds']:.4f} / {objective['highs-ipm']:.4f}",
            flush=True,
        )
    if args.json:
        args.json.write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()

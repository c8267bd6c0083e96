"""CascadeNetRegressor against FANN's own Cascade2 on the same cross-validation folds: RAE and fit seconds.

Datasets: a CSV (``--csv FILE --target COLUMN``, every other numeric column an input),
else a generated one shaped like Brandstätter-Müller et al. 2011's (three input files, four parameters, 8%
noise), plus every (algorithm, platform) of the bundled real dataset when
``data/measurements/*.csv`` exists. Per fold, in turn on the same machine: FANN Cascade2
(grown to ``--max-hidden``, it has no held-out rule), CascadeNetRegressor without a held-out
rule (the same algorithm, like for like) and CascadeNetRegressor as the zoo uses it
(held-out stopping). Metrics are Weka's, pooled over the out-of-fold predictions;
seconds are summed fit times (FANN's measured inside the C driver, around
``fann_cascadetrain_on_data`` only). Target of issue 4: RAE no worse than FANN's at no
more than 2x its training time.

    python benchmarks/cascade_vs_fann.py --folds 10 --json benchmarks/work/cascade_vs_fann.json
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.fann.driver import run_cascade2
from models.cascade import CascadeNetRegressor
from training.folds import FoldPlan
from training.metrics import compute_metrics

# fit(X_train, y_train, X_test, seed) -> (test predictions, hidden units, fit seconds)
Contender = Callable[[np.ndarray, np.ndarray, np.ndarray, int], tuple[np.ndarray, int, float]]


@dataclass(frozen=True)
class Dataset:
    """Inputs, target and row ids of one benchmark dataset."""

    name: str
    X: np.ndarray
    y: np.ndarray
    run_ids: list[str]


def seed001_like(rows: int, seed: int) -> Dataset:
    """Runtimes of a string-processing job over three FASTA files and four parameters (Brandstätter-Müller et al. 2011, section 2.1)."""
    rng = np.random.default_rng(seed)
    files = np.array([(89_725, 500), (181_156, 1000), (564_117, 1500)], dtype=float)
    in_size, in_count = files[rng.integers(0, 3, rows)].T
    max_mut = rng.integers(1, 6, rows).astype(float)
    win_size = rng.integers(5, 17, rows).astype(float)
    gc = rng.integers(0, 9, rows) / 10
    wall = (
        900.0
        + 0.0035 * in_size
        + 1.1 * in_count * (1.0 + 0.08 * max_mut)
        + 45.0 * win_size * np.log1p(max_mut)
        + 1400.0 * (in_count / 1000.0) / (1.0 + np.exp(-20.0 * (gc - 0.55)))
    ) * rng.lognormal(0.0, 0.08, rows)
    X = np.column_stack([in_size, max_mut, win_size, gc])
    return Dataset(f"generated seed-001-like ({rows} rows)", X, wall, [f"g{i:06d}" for i in range(rows)])


def csv_dataset(path: Path, target: str) -> Dataset:
    """Every numeric column of ``path`` but ``target`` as inputs."""
    frame = pd.read_csv(path)
    inputs = [c for c in frame.columns if c != target and pd.api.types.is_numeric_dtype(frame[c])]
    ids = [f"r{i:06d}" for i in range(len(frame))]
    return Dataset(path.name, frame[inputs].to_numpy(float), frame[target].to_numpy(float), ids)


def bundled_datasets() -> Iterator[Dataset]:
    """Each (algorithm, platform) of data/measurements/*.csv, through the store and training sets as training does."""
    from data.ingest import ingest_file
    from predictor.catalog import load_catalog
    from predictor.store.store import MeasurementStore
    from training.dataset import load_training_sets

    files = sorted((ROOT / "data" / "measurements").glob("*.csv"))
    if not files:
        return
    with tempfile.TemporaryDirectory(prefix="cascade-bench-") as work:
        store = MeasurementStore(f"sqlite:///{work}/store.db")
        store.migrate()
        catalog = load_catalog(ROOT / "data" / "catalog.yaml")
        for path in files:
            ingest_file(path, store, catalog)
        for ts in load_training_sets(store):
            name = f"{ts.algorithm}/{ts.platform} ({len(ts)} rows)"
            yield Dataset(name, ts.X.to_numpy(float), ts.y, ts.run_ids)


def fann(max_hidden: int) -> Contender:
    """FANN's Cascade2 through the C driver."""

    def fit(X: np.ndarray, y: np.ndarray, X_test: np.ndarray, seed: int) -> tuple[np.ndarray, int, float]:
        result = run_cascade2(X, y, X_test, max_neurons=max_hidden, seed=seed)
        return result.predictions, result.hidden_units, result.fit_seconds

    return fit


def cascade(**settings: Any) -> Contender:
    """CascadeNetRegressor with ``settings``, timed around fit."""

    def fit(X: np.ndarray, y: np.ndarray, X_test: np.ndarray, seed: int) -> tuple[np.ndarray, int, float]:
        model = CascadeNetRegressor(random_state=seed, **settings)
        start = time.perf_counter()
        model.fit(X, y)
        seconds = time.perf_counter() - start
        return model.predict(X_test), model.n_hidden_units_, seconds

    return fit


def compare(data: Dataset, contenders: dict[str, Contender], folds: int, seed: int, log_target: bool) -> list[dict]:
    """Cross-validate every contender on one fold plan, fold by fold in turn; one result row per contender."""
    plan = FoldPlan.create(data.run_ids, folds, seed)
    y = np.log(data.y) if log_target else data.y
    predictions = {name: np.empty_like(y) for name in contenders}
    prior = np.empty_like(data.y)
    seconds = dict.fromkeys(contenders, 0.0)
    hidden: dict[str, list[int]] = {name: [] for name in contenders}
    for fold, (train, test) in enumerate(plan.splits()):
        prior[test] = data.y[train].mean()
        for name, fit in contenders.items():
            pred, units, fit_seconds = fit(data.X[train], y[train], data.X[test], seed + fold)
            predictions[name][test] = np.exp(pred) if log_target else pred
            seconds[name] += fit_seconds
            hidden[name].append(units)
    reference = seconds[next(iter(contenders))]
    rows = []
    for name in contenders:
        metrics = compute_metrics(data.y, predictions[name], prior)
        rows.append(
            {
                "dataset": data.name,
                "model": name,
                "rae": metrics["rae"],
                "rrse": metrics["rrse"],
                "cc": metrics["cc"],
                "hidden_units": float(np.mean(hidden[name])),
                "fit_seconds": seconds[name],
                "time_vs_fann": seconds[name] / reference,
            }
        )
    return rows


def markdown(rows: list[dict]) -> str:
    """The results as a Markdown table."""
    lines = [
        "| dataset | model | RAE % | RRSE % | CC | hidden units (mean) | fit s (sum) | time / FANN |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in rows:
        lines.append(
            f"| {r['dataset']} | {r['model']} | {r['rae']:.1f} | {r['rrse']:.1f} | {r['cc']:.4f} "
            f"| {r['hidden_units']:.1f} | {r['fit_seconds']:.2f} | {r['time_vs_fann']:.2f} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--csv", type=Path, help="a dataset CSV instead of the generated one")
    parser.add_argument("--target", default="wall_seconds", help="target column of --csv")
    parser.add_argument("--rows", type=int, default=2400, help="rows of the generated dataset")
    parser.add_argument("--folds", type=int, default=10)
    parser.add_argument("--max-hidden", type=int, default=30, help="hidden-unit cap for every contender")
    parser.add_argument("--seed", type=int, default=20261122)
    parser.add_argument("--log-target", action="store_true", help="every contender learns log(target)")
    parser.add_argument("--no-bundled", action="store_true", help="skip data/measurements even if present")
    parser.add_argument("--json", type=Path, help="also write the rows as JSON here")
    args = parser.parse_args()

    datasets = [csv_dataset(args.csv, args.target) if args.csv else seed001_like(args.rows, args.seed)]
    if not args.no_bundled:
        datasets += list(bundled_datasets())
    contenders = {
        "FANN Cascade2": fann(args.max_hidden),
        "CascadeNet, no held-out rule": cascade(max_hidden_units=args.max_hidden, validation_fraction=None),
        "CascadeNet (zoo default)": cascade(max_hidden_units=args.max_hidden),
    }
    rows = []
    for data in datasets:
        rows += compare(data, contenders, args.folds, args.seed, args.log_target)
        print(markdown([r for r in rows if r["dataset"] == data.name]), flush=True)
    print()
    print(markdown(rows))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()

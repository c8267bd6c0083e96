"""The scheduler-trained online member on the bundled bioinformatics runs (issue 28): does it make catalog jobs'
estimates worse?

    python benchmarks/online_member.py --json benchmarks/results/online_member.json

Per (algorithm, platform) of ``data/measurements/*.csv``, with the catalog's features as the pipeline builds them:

- **10-fold CV RAE** (the pipeline's own fold plan and metric, :func:`training.crossval.cross_validate`) of the online
  members against ``linear_log`` and ``lightgbm_log``, the members that win most bundled pairs: a member that never
  leads on cross-validation cannot become a champion, so adding it to the default zoo leaves the served estimates as
  they were;
- **prequential RAE**, runs in run-id order (the order the pipeline holds them): every run is predicted before it is learned (the online
  member after one update per earlier run; ``linear_log`` refitted every 50 runs on all earlier ones), the error
  counted from the 20th run on.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from models.zoo import applicable, make_model
from predictor.catalog import load_catalog
from predictor.ingest import ingest_file
from predictor.settings import BUNDLED_DATA
from predictor.store import MeasurementStore
from training.crossval import cross_validate
from training.dataset import TrainingSet, load_training_sets
from training.folds import FoldPlan

MEMBERS = ("online_log", "online_area_log", "linear_log", "lightgbm_log")
WARM_UP = 20
REFIT_EVERY = 50


def rae(predicted: np.ndarray, true: np.ndarray, prior: np.ndarray) -> float:
    """Relative absolute error in %: the errors against those of the prior's answers."""
    return float(100 * np.abs(predicted - true).sum() / max(np.abs(prior - true).sum(), 1e-12))


def prequential(ts: TrainingSet, member: str) -> float | None:
    """RAE of predicting each run from the runs before it (in recorded order), from the WARM_UP-th run on."""
    X, y = ts.X.to_numpy(dtype=float), np.asarray(ts.y, dtype=float)
    if len(y) <= WARM_UP + 10:
        return None
    predicted, prior = np.empty(len(y) - WARM_UP), np.empty(len(y) - WARM_UP)
    model = None
    for i in range(WARM_UP, len(y)):
        if member.startswith("online"):
            if model is None:
                model = make_model(member, seed=0).fit(ts.X.iloc[:i], y[:i])
            predicted[i - WARM_UP] = model.predict_one(X[i])
            model.learn_one(X[i], y[i])
        else:
            if model is None or (i - WARM_UP) % REFIT_EVERY == 0:
                model = make_model(member, seed=0).fit(ts.X.iloc[:i], y[:i])
            predicted[i - WARM_UP] = float(model.predict(ts.X.iloc[i : i + 1])[0])
        prior[i - WARM_UP] = y[:i].mean()
    return rae(np.maximum(predicted, 0.0), y[WARM_UP:], prior)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    catalog = load_catalog(BUNDLED_DATA / "catalog.yaml")
    with tempfile.TemporaryDirectory() as home:
        store = MeasurementStore(f"sqlite:///{home}/store.db")
        store.migrate()
        for path in sorted((BUNDLED_DATA / "measurements").glob("*.csv")):
            ingest_file(path, store, catalog)
        sets = load_training_sets(store)
    rows: list[dict[str, Any]] = []
    for ts in sets:
        plan = FoldPlan.create(ts.run_ids, min(10, len(ts)), 0, groups=ts.jobs)
        row: dict[str, Any] = {"algorithm": ts.algorithm, "platform": ts.platform, "runs": len(ts)}
        for member in (m for m in MEMBERS if applicable(m, ts.feature_names, len(ts))):
            started = time.process_time()
            row[f"cv:{member}"] = cross_validate(member, ts, plan, seed=0).metrics["rae"]
            row[f"prequential:{member}"] = prequential(ts, member) if member in ("online_log", "linear_log") else None
            row[f"cpu:{member}"] = time.process_time() - started
        rows.append(row)
        print(json.dumps(row), flush=True)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()

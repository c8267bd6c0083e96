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

``--ncbi SEED ...``: the NCBI-like day's simulated service (``simulator.learning``) trains its first champions on the
day's history; per seed, that training with the simulation's members and with them plus ``online_log``, side by
side: which candidate each pair serves, and where the online member ranks among the members on the pipeline's own CV;
then, with ``online_log``, the largest set the day's service could ever train on: the history and every job of the
day, each on one of its platforms in turn, at its true time (what the online member would have to win there).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from data.ingest import ingest_file
from models.zoo import applicable, make_model
from predictor.catalog import load_catalog
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


# The fast members the simulated service was trained with when this benchmark was written (issue 28).
SIMULATION_MODELS = (
    "mean",
    "profile_mean",
    "last_two_mean",
    "requested_time",
    "linear",
    "linear_log",
    "linear_log_smeared",
    "lad_log",
    "quadratic_log",
    "simple_linear",
    "simple_linear_log",
    "isotonic",
    "isotonic_log",
    "lightgbm",
    "lightgbm_log",
    "lightgbm_log_smeared",
)


def ncbi_first_training(seed: int, hours: float) -> dict[str, Any]:
    """The NCBI-like day's first training (seed ``seed``) without and with ``online_log``: what each pair serves."""
    from predictor.domain import Measurement, Source
    from simulator.workloads import ncbi
    from training.memory import MemoryChampions, MemoryMeasurements, MemoryTracker
    from training.pipeline import train
    from training.settings import TrainingSettings

    w = ncbi.generate(hours=hours, seed=seed)
    store = MemoryMeasurements()
    store.add(w.history)
    sets = load_training_sets(store)
    served: dict[str, dict[str, str]] = {}
    ranks: dict[str, int] = {}
    cpu: dict[str, float] = {}
    for label, members in (("without", SIMULATION_MODELS), ("with", (*SIMULATION_MODELS, "online_log"))):
        settings = TrainingSettings().model_copy(update={"cv_folds": 5, "train_models": list(members), "n_jobs": 1})
        started = time.process_time()
        outcomes = train(settings, sets, tracker=MemoryTracker(settings.interval_coverage), champions=MemoryChampions())
        cpu[label] = time.process_time() - started
        served[label] = {f"{o.algorithm}@{o.platform}": o.challenger for o in outcomes}
        if label == "with":
            for o in outcomes:
                order = sorted((m for m in o.metrics if "+" not in m), key=lambda m: o.metrics[m]["rae"])
                ranks[f"{o.algorithm}@{o.platform}"] = order.index("online_log") + 1 if "online_log" in order else -1
    changed = sorted(p for p in served["without"] if served["without"][p] != served["with"].get(p))
    day = [
        Measurement(
            run_id=f"day-{j.id}",
            algorithm=j.algorithm,
            platform=platform,
            features=dict(j.features or {}),
            wall_seconds=j.true_times[platform],
            source=Source.PRODUCTION,
        )
        for i, j in enumerate(w.jobs)
        for platform in [sorted(j.true_times)[i % len(j.true_times)]]
    ]
    store.add(day)
    settings = TrainingSettings().model_copy(
        update={"cv_folds": 5, "train_models": [*SIMULATION_MODELS, "online_log"], "n_jobs": 1}
    )
    started = time.process_time()
    end = train(
        settings,
        load_training_sets(store),
        tracker=MemoryTracker(settings.interval_coverage),
        champions=MemoryChampions(),
    )
    cpu["end_of_day"] = time.process_time() - started
    end_ranks = {
        f"{o.algorithm}@{o.platform}": sorted(
            (m for m in o.metrics if "+" not in m), key=lambda m: o.metrics[m]["rae"]
        ).index("online_log")
        + 1
        for o in end
    }
    return {
        "seed": seed,
        "hours": hours,
        "history_runs": len(w.history),
        "pairs": len(sets),
        "served": served,
        "online_log_rank": ranks,
        "members": len(SIMULATION_MODELS) + 1,
        "changed": changed,
        "end_of_day": {
            "runs": len(w.history) + len(day),
            "online_log_rank": end_ranks,
            "served_online": sorted(f"{o.algorithm}@{o.platform}" for o in end if "online_log" in o.challenger),
        },
        "cpu_seconds": cpu,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument(
        "--ncbi", type=int, nargs="+", default=None, metavar="SEED", help="The NCBI-like day's first training instead."
    )
    parser.add_argument("--hours", type=float, default=25.0, help="With --ncbi: the day's length.")
    args = parser.parse_args()
    if args.ncbi:
        result = [ncbi_first_training(seed, args.hours) for seed in args.ncbi]
        print(json.dumps(result, indent=2))
        if args.json:
            args.json.write_text(json.dumps(result, indent=2))
        return
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

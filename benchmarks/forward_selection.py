"""Catalog programs (issue 39): champions chosen by forward validation against champions chosen by shuffled 10-fold
cross-validation, both served as the oracle serves them, scored on the later runs of each pair.

    .venv/bin/python benchmarks/forward_selection.py --json benchmarks/results/forward_selection.json

The bundled runs of each (algorithm, platform), in the order they were recorded, are cut at ``--past`` (70 %): the
earlier runs are the past, the later ones are scored. *Forward*: production's training (:func:`training.pipeline.train`:
forward windows, the measured median among the candidates, the guard) on the past. *Shuffled*: the member with the
lowest RAE under a shuffled, grouped 10-fold plan of the past (the selection before issue 39), then fitted on the past
by the same pipeline (``force``). Both champions are served by a :class:`~predictor.oracle.RuntimeOracle` (envelope,
floor, intervals) and scored on the later runs: RAE against the past's mean, MdALE, and how often the limit at the
settings' quantile was exceeded. Members: ``--members`` (cheap ones by default; the networks and the SVR search cost
hours on 14 pairs).
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from data.ingest import ingest_file
from predictor.catalog import load_catalog
from predictor.domain import Measurement
from predictor.oracle import RuntimeOracle
from predictor.settings import BUNDLED_DATA
from predictor.store import MeasurementStore
from training.crossval import cross_validate
from training.dataset import load_training_sets
from training.folds import FoldPlan
from training.memory import MemoryChampions, MemoryMeasurements, MemoryTracker
from training.metrics import absolute_log_errors
from training.pipeline import train
from training.settings import TrainingSettings

MEMBERS = (
    "mean",
    "linear_log",
    "lad_log",
    "quadratic_log",
    "simple_linear_log",
    "isotonic_log",
    "lightgbm_log",
    "online_log",
)


def bundled() -> list[Measurement]:
    """The bundled runs, in the order they were recorded."""
    with tempfile.TemporaryDirectory() as tmp:
        store = MeasurementStore(f"sqlite:///{tmp}/store.db")
        store.migrate()
        catalog = load_catalog(BUNDLED_DATA / "catalog.yaml")
        for path in sorted((BUNDLED_DATA / "measurements").glob("*.csv")):
            ingest_file(path, store, catalog, rejects_dir=Path(tmp))
        runs = store.measurements()
        store.dispose()
    return sorted(runs, key=lambda m: m.recorded_at)


def shuffled_choice(ts: Any, members: tuple[str, ...], seed: int) -> str:
    """The member of least RAE under a shuffled, grouped 10-fold plan (the pre-issue-39 selection, ensembles aside)."""
    plan = FoldPlan.create(ts.run_ids, 10, seed, groups=ts.jobs)
    scores = {}
    for name in members:
        try:
            scores[name] = cross_validate(name, ts, plan, seed=seed).metrics["rae"]
        except Exception:  # noqa: BLE001 - a member that cannot fit this pair is left out, as training does
            continue
    return min(scores, key=lambda name: scores[name])


def served_scores(oracle: RuntimeOracle, later: list[Measurement], prior: float) -> dict[str, Any]:
    """RAE, MdALE and limit exceeded of the oracle's answers for the later runs of one pair."""
    answers = [oracle.estimate(m.algorithm, features=m.features, platforms=[m.platform])[m.platform] for m in later]
    y = np.array([m.wall_seconds for m in later])
    point = np.array([a.seconds for a in answers], dtype=float)
    limit = np.array([a.limit if a.limit is not None else np.inf for a in answers], dtype=float)
    return {
        "rae": float(100 * np.abs(point - y).sum() / np.abs(prior - y).sum()),
        "mdale": float(np.median(absolute_log_errors(y, point))),
        "limit_exceeded": float(np.mean(y > limit)),
        "member": answers[0].member or "",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--past", type=float, default=0.7)
    parser.add_argument("--members", default=",".join(MEMBERS))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    members = tuple(args.members.split(","))
    runs = bundled()
    catalog = load_catalog(BUNDLED_DATA / "catalog.yaml")
    by_pair: dict[tuple[str, str], list[Measurement]] = {}
    for m in runs:
        by_pair.setdefault((m.algorithm, m.platform), []).append(m)
    rows, started = [], time.process_time()
    with tempfile.TemporaryDirectory() as work:
        settings = TrainingSettings(home=Path(work), n_jobs=1, seed=args.seed)
        for pair, pair_runs in sorted(by_pair.items()):
            cut = int(len(pair_runs) * args.past)
            past, later = pair_runs[:cut], [m for m in pair_runs[cut:] if m.exit_status == 0]
            store = MemoryMeasurements()
            store.add(past)
            (ts,) = load_training_sets(store, [pair[0]], [pair[1]])
            prior = float(np.mean([m.wall_seconds for m in past if m.exit_status == 0]))
            found: dict[str, Any] = {"algorithm": pair[0], "platform": pair[1], "past": len(past), "later": len(later)}
            choices = {"forward": None, "shuffled": shuffled_choice(ts, members, args.seed)}
            for how, member in choices.items():
                book = MemoryChampions()
                train(
                    settings,
                    [ts],
                    models=list(members) if member is None else [member],
                    tracker=MemoryTracker(settings.interval_coverage, settings.limit_quantile),
                    champions=book,
                    force=member is not None,
                )
                oracle = RuntimeOracle(
                    catalog,
                    book.champions(),
                    store.profile_table(),
                    coverage=0.9,
                    limit_quantile=settings.limit_quantile,
                )
                found[how] = served_scores(oracle, later, prior)
            rows.append(found)
            print(pair, {k: found[k] for k in ("forward", "shuffled")}, flush=True)
    pooled = {
        how: {
            "rae_median": float(np.median([r[how]["rae"] for r in rows])),
            "mdale_median": float(np.median([r[how]["mdale"] for r in rows])),
            "limit_exceeded_mean": float(np.mean([r[how]["limit_exceeded"] for r in rows])),
            "wins": sum(r[how]["rae"] < r[other]["rae"] for r in rows),
        }
        for how, other in (("forward", "shuffled"), ("shuffled", "forward"))
    }
    result = {
        "members": members,
        "past": args.past,
        "pairs": rows,
        "pooled": pooled,
        "cpu_s": time.process_time() - started,
        "load": os.getloadavg(),
    }
    print(json.dumps(pooled, indent=2))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()

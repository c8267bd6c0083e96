"""Training at scale: a synthetic facility of many (algorithm, platform) pairs, on local processes and on Ray.

The facility is generated from the bundled runs' shapes: pair k copies the features of bundled pair k mod 14
(rows drawn with replacement, continuous features jittered by +-10 % log-normal) and their wall seconds times a
per-pair platform speed (log-normal, sigma 0.3) and noise. The same training (``training.pipeline.train``, what
``predictor train`` runs once the store is read) runs on local processes (1 and 2), then on a local Ray cluster
started here with 1 and with 2 worker processes (one CPU each), one after the other in this run. Each run
reports wall time, the number of fits, and the peak resident memory of the whole process
tree (driver, loky workers, Ray's nodes and workers), sampled every 0.2 s. Then the bundled dataset alone, local
vs Ray with one worker, gives the fixed overhead Ray adds. ``--tracking memory`` keeps MLflow out of the timing
(the driver's logging is the same work for every executor); ``mlflow`` logs into a fresh SQLite backend.

    .venv/bin/python benchmarks/train_scale.py --pairs 200 --runs 200000 --models linear_log,lightgbm_log --folds 10
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
from joblib.externals.loky import get_reusable_executor

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests.raycluster

from apisetup import DATASETS, ROOT, cli, rss_kb

from predictor.store import MeasurementStore
from tests.raycluster import local_cluster
from training.dataset import TrainingSet, load_training_sets
from training.memory import MemoryChampions, MemoryTracker
from training.pipeline import train
from training.settings import TrainingSettings


def bundled_sets(work: Path) -> list[TrainingSet]:
    """The bundled runs' training sets (ingested into ``work`` once)."""
    home = work / "bundled"
    if not (home / "store.db").exists():
        home.mkdir(parents=True, exist_ok=True)
        cli(home, "ingest", *map(str, DATASETS))
    store = MeasurementStore(f"sqlite:///{home / 'store.db'}")
    try:
        return load_training_sets(store)
    finally:
        store.dispose()


def facility(templates: list[TrainingSet], pairs: int, runs: int, seed: int) -> list[TrainingSet]:
    """``pairs`` synthetic pairs of ``runs // pairs`` runs each, shaped like ``templates`` (see the module's docstring)."""
    rng = np.random.default_rng(seed)
    n = runs // pairs
    out = []
    for k in range(pairs):
        t = templates[k % len(templates)]
        rows = rng.integers(0, len(t.y), n)
        X = t.X.iloc[rows].reset_index(drop=True).copy()
        continuous = [c for c in X.columns if X[c].nunique() > 2]
        X[continuous] = X[continuous] * rng.lognormal(0.0, 0.1, (n, len(continuous)))
        y = t.y[rows] * rng.lognormal(0.0, 0.3) * rng.lognormal(0.0, 0.1, n)
        out.append(
            TrainingSet(
                t.algorithm, f"site{k:03d}", X, y, list(t.feature_names), [f"s{k:03d}-{i:06d}" for i in range(n)]
            )
        )
    return out


@dataclass(frozen=True)
class Run:
    """One training: where the fits ran, wall seconds, how many fits, peak memory (MiB)."""

    executor: str
    processes: int
    wall_s: float
    fits: int
    peak_mib: float


class PeakMemory:
    """Samples the resident memory of process trees (roots given) every 0.2 s in a thread; keeps the largest sum."""

    def __init__(self, roots: list[int]) -> None:
        self.roots, self.peak, self._stop = roots, 0, threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def __enter__(self) -> PeakMemory:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _sample(self) -> None:
        while not self._stop.wait(0.2):
            self.peak = max(self.peak, sum(rss_kb(pid) for pid in self.roots))


def timed(
    sets: list[TrainingSet], settings: TrainingSettings, models: list[str], memory: bool, roots: list[int]
) -> Run:
    """Train ``sets`` once with ``settings`` (in-memory tracking with ``memory``, else MLflow under the settings' home)."""
    fits = [0]
    tracking = {"tracker": MemoryTracker(settings.interval_coverage), "champions": MemoryChampions()} if memory else {}
    with PeakMemory([os.getpid(), *roots]) as peak:
        started = time.perf_counter()
        train(settings, sets, models=models, progress=lambda _: fits.__setitem__(0, fits[0] + 1), **tracking)
        wall = time.perf_counter() - started
        get_reusable_executor().shutdown(wait=True)  # local workers end with their run
    processes = settings.n_jobs if settings.executor == "local" else len(roots)
    return Run(settings.executor, processes, wall, fits[0], peak.peak / 1024)


def trainings(
    sets: list[TrainingSet], models: list[str], folds: int, home: Path, memory: bool, local: list[int], ray: list[int]
) -> list[Run]:
    """The same training on each local process count, then on a local Ray cluster of each worker-process count."""
    base = TrainingSettings(home=home, cv_folds=folds)
    runs = []
    for n in local:
        runs.append(timed(sets, base.model_copy(update={"n_jobs": n}), models, memory, []))
        print(runs[-1], flush=True)
    for n in ray:
        with local_cluster(workers=n - 1, cpus=1) as (address, pids):
            runs.append(
                timed(sets, base.model_copy(update={"executor": "ray", "ray_address": address}), models, memory, pids)
            )
        print(runs[-1], flush=True)
    return runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=200)
    parser.add_argument("--runs", type=int, default=200_000)
    parser.add_argument("--models", default="linear_log,lightgbm_log", help="zoo members (comma-separated)")
    parser.add_argument("--folds", type=int, default=10)
    parser.add_argument("--tracking", choices=("memory", "mlflow"), default="memory")
    parser.add_argument("--workdir", type=Path, default=ROOT / "benchmarks" / "work" / "train_scale")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    memory = args.tracking == "memory"
    models = args.models.split(",")
    args.workdir.mkdir(parents=True, exist_ok=True)
    templates = bundled_sets(args.workdir)
    sets = facility(templates, args.pairs, args.runs, args.seed)
    print(
        f"facility: {len(sets)} pairs, {sum(len(s.y) for s in sets)} runs; members {models}, {args.folds} folds",
        flush=True,
    )
    with tempfile.TemporaryDirectory(prefix="train-scale-") as home:
        scale = trainings(sets, models, args.folds, Path(home) / "scale", memory, [1, 2], [1, 2])
        overhead = trainings(templates, models, args.folds, Path(home) / "bundled", memory, [1], [1])
    out = args.workdir / "train_scale.json"
    out.write_text(
        json.dumps(
            {
                "args": {k: str(v) for k, v in vars(args).items()},
                "scale": [asdict(r) for r in scale],
                "bundled": [asdict(r) for r in overhead],
            },
            indent=2,
        )
    )
    print("\n" + _table(f"facility of {len(sets)} pairs", scale) + "\n\n" + _table("bundled dataset", overhead))
    print(f"\nwritten to {out}")


def _table(title: str, runs: list[Run]) -> str:
    first = runs[0].wall_s
    lines = [
        f"{title}:",
        "",
        "| executor | processes | wall (s) | wall / first | fits | wall per fit (ms) | peak memory (MiB) |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in runs:
        lines.append(
            f"| {r.executor} | {r.processes} | {r.wall_s:.1f} | {r.wall_s / first:.2f} | {r.fits} | "
            f"{1000 * r.wall_s / max(r.fits, 1):.1f} | {r.peak_mib:.0f} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    main()

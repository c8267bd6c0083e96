"""Training speed: the whole default zoo, 10-fold cross-validated, refitted, tracked and promoted on 3,000 rows.

The rows are generated (seeded) like the bundled MAFFT runs: FASTA features of protein families plus
MAFFT's parameters, wall seconds growing with sequences^2 x length, with log-normal noise. The same
training runs in one process (``n_jobs=1``) and fanned out over local processes (``--jobs``, default
every core), each into a fresh MLflow backend, one after the other in this run.

    .venv/bin/python benchmarks/train_speed.py --rows 3000 --jobs -1
"""

from __future__ import annotations

import argparse
import os
import resource
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from joblib.externals.loky import get_reusable_executor

from predictor.registry import registry_client
from training.dataset import TrainingSet
from training.pipeline import TrainingOutcome, train
from training.settings import TrainingSettings


def generated_runs(rows: int, seed: int) -> TrainingSet:
    """``rows`` MAFFT-like runs on one platform."""
    rng = np.random.default_rng(seed)
    sequences = rng.integers(4, 400, rows).astype(float)
    mean_length = rng.uniform(50, 1500, rows)
    std_length = mean_length * rng.uniform(0.0, 0.3, rows)
    retree = rng.integers(1, 3, rows).astype(float)
    maxiterate = rng.choice([0.0, 2.0, 16.0], rows)
    X = pd.DataFrame(
        {
            "input.bytes": sequences * (mean_length + 30),
            "input.sequences": sequences,
            "input.residues": sequences * mean_length,
            "input.mean_length": mean_length,
            "input.min_length": np.maximum(mean_length - 2 * std_length, 1.0),
            "input.max_length": mean_length + 2 * std_length,
            "input.std_length": std_length,
            "retree": retree,
            "maxiterate": maxiterate,
        }
    )
    work = 2e-7 * sequences**2 * mean_length * (0.6 + 0.4 * retree) * (1 + 0.15 * maxiterate)
    y = (0.12 + work) * rng.lognormal(0.0, 0.15, rows)
    return TrainingSet("mafft", "generated", X, y, sorted(X.columns), [f"g{i:05d}" for i in range(rows)])


@dataclass(frozen=True)
class Timing:
    """One training run: wall seconds until the last fit and until the end, CPU seconds of every process, load."""

    fits: float
    total: float
    cpu: float
    load: float


def _cpu_seconds() -> float:
    """User + system seconds of this process and of its finished (waited-for) children."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def timed_training(data: TrainingSet, n_jobs: int, folds: int) -> tuple[Timing, list[TrainingOutcome]]:
    """Time one training of the default zoo on ``data`` in a fresh backend; worker processes end with it."""
    with tempfile.TemporaryDirectory(prefix="train-speed-") as home:
        settings = TrainingSettings(home=Path(home), cv_folds=folds, n_jobs=n_jobs)
        registry_client(
            settings.resolved_tracking_uri
        ).search_experiments()  # create the backend's tables before the clock starts
        last_fit = [0.0]
        cpu, started = _cpu_seconds(), time.perf_counter()
        outcomes = train(settings, [data], progress=lambda _: last_fit.__setitem__(0, time.perf_counter()))
        ended = time.perf_counter()
        get_reusable_executor().shutdown(wait=True)  # so the workers' CPU time is counted
        timing = Timing(last_fit[0] - started, ended - started, _cpu_seconds() - cpu, os.getloadavg()[0])
    return timing, outcomes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=3000)
    parser.add_argument("--folds", type=int, default=10)
    parser.add_argument("--jobs", type=int, default=-1, help="processes of the parallel run (-1: one per core)")
    parser.add_argument("--no-serial", action="store_true", help="skip the n_jobs=1 run")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    data = generated_runs(args.rows, args.seed)
    runs = [] if args.no_serial else [1]
    runs.append(args.jobs)
    timings = {}
    for n_jobs in runs:
        timing, outcomes = timed_training(data, n_jobs, args.folds)
        timings[n_jobs] = timing
        print(f"n_jobs={n_jobs}: {timing}", flush=True)
    outcome = outcomes[0]
    print(f"\n{args.rows} rows, {args.folds} folds, champion {outcome.champion}; per member (last run):\n")
    print("| member | RAE % | RRSE % |")
    print("| --- | ---: | ---: |")
    for name, metrics in sorted(outcome.metrics.items(), key=lambda item: item[1]["rae"]):
        print(f"| {name} | {metrics['rae']:.2f} | {metrics['rrse']:.2f} |")
    print(
        f"\n| run ({os.cpu_count()} cores) | fits done (s) | total wall (s) | CPU (s) | total / serial | load avg at end |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    serial = timings[1].total if 1 in timings else np.nan
    for n_jobs, t in timings.items():
        print(
            f"| n_jobs={n_jobs} | {t.fits:.1f} | {t.total:.1f} | {t.cpu:.1f} | {t.total / serial:.2f} | {t.load:.1f} |"
        )


if __name__ == "__main__":
    main()

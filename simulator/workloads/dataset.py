"""A workload of the bundled real runs (``data/measurements/*.csv``): measured times are the truth.

Every distinct job (algorithm and parameters) measured on a platform becomes a job
whose true time there is its latest measured run; earlier repeats are the history a
model learns from, so a model never sees the run it is judged on. Jobs arrive as a
Poisson process sized to keep the cluster at a chosen load.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from pathlib import Path

import numpy as np
import pandas as pd

from predictor.catalog import Catalog
from predictor.domain import Measurement, Source
from simulator.workload import Cluster, JobSpec, MachineSpec, PlatformSpec, Workload


def catalog_cluster(catalog: Catalog, per_platform: int = 2, only: set[str] | None = None) -> Cluster:
    """``per_platform`` machines of every platform in the catalog (or ``only`` those), with its power draw."""
    names = [name for name in catalog.platforms if only is None or name in only]
    platforms = {name: PlatformSpec(name, catalog.platforms[name].power_watts) for name in names}
    machines = [MachineSpec(f"{name}-{i}", name) for name in names for i in range(per_platform)]
    return Cluster(platforms, machines)


def from_measurements(
    paths: list[Path],
    catalog: Catalog,
    *,
    per_platform: int = 2,
    load: float = 0.8,
    copies: int = 1,
    seed: int = 0,
) -> Workload:
    """Jobs of the measured runs in ``paths`` on ``per_platform`` machines per measured platform, at utilisation ``load``."""
    frame = pd.concat([pd.read_csv(p) for p in paths], ignore_index=True)
    frame = frame[(frame["exit_status"] == 0) & frame["platform"].isin(list(catalog.platforms))]
    frame = frame.sort_values("recorded_at", kind="stable")
    param_cols = [c for c in frame.columns if c.startswith("param.")]
    feature_cols = [c for c in frame.columns if c.startswith("feature.")]
    runs: dict[tuple[str, str], list[Measurement]] = defaultdict(list)
    for row in frame.to_dict("records"):
        params = {c[6:]: _plain(row[c]) for c in param_cols if not _missing(row[c])}
        features = {c[8:]: float(row[c]) for c in feature_cols if not _missing(row[c])}
        key = f"{row['algorithm']}|{json.dumps(params, sort_keys=True)}"
        runs[(key, row["platform"])].append(
            Measurement(
                run_id=str(row["run_id"]),
                algorithm=row["algorithm"],
                platform=row["platform"],
                machine=str(row["machine"]),
                params=params,
                features=features,
                wall_seconds=float(row["wall_seconds"]),
                source=Source.PROBE,
            )
        )
    truth: dict[str, dict[str, float]] = defaultdict(dict)
    described: dict[str, Measurement] = {}
    history: list[Measurement] = []
    for (key, platform), measured in runs.items():
        *earlier, latest = measured
        truth[key][platform] = latest.wall_seconds
        described.setdefault(key, latest)
        history += earlier
    keys = sorted(truth)
    rng = np.random.default_rng(seed)
    order = [k for _ in range(copies) for k in rng.permutation(keys).tolist()]
    cluster = catalog_cluster(catalog, per_platform, only={p for times in truth.values() for p in times})
    mean_best = float(np.mean([min(truth[k].values()) for k in order]))
    gaps = rng.exponential(mean_best / (len(cluster.machines) * load), len(order))
    jobs = []
    for n, (key, at) in enumerate(zip(order, np.cumsum(gaps).tolist())):
        first = described[key]
        algorithm, params, features = first.algorithm, first.params, first.features
        checkpoint = frozenset(p for p, impl in catalog.algorithm(algorithm).implementations.items() if impl.checkpoint)
        jobs.append(
            JobSpec(
                id=f"d{n:05d}",
                submit=at,
                algorithm=algorithm,
                true_times=dict(truth[key]),
                params=params,
                features=features,
                checkpoint=checkpoint,
            )
        )
    names = ", ".join(p.name for p in paths)
    return Workload(
        f"dataset-{'+'.join(p.stem for p in paths)}",
        jobs,
        cluster,
        history=history,
        notes=f"{len(keys)} measured jobs from {names}, {copies} cop{'y' if copies == 1 else 'ies'}, load {load}",
    )


def _missing(value: object) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value)) or value == ""


def _plain(value: object) -> object:
    """NumPy scalars as Python values, integral floats as ints (parameters read back from CSV)."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value

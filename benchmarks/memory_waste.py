"""Memory waste and failures on the bundled runs replayed in time order (issue 31).

    nice -n 5 python benchmarks/memory_waste.py data/measurements/realtools.csv --json benchmarks/results/memory_waste.json

The runs that measured their peak, in the order they were recorded, each given a memory limit (``--mem``) as it is
submitted. The first ``--tune`` of them are the past: every data-driven setting is chosen there, and each source is
scored on the runs after it. Sources:

- **no request** (Slurm's default without ``--mem`` on these nodes: the platform's cores' share of the node);
- **fixed per program**: one request per program, the largest peak of its runs in the past (a careful user's);
- **last runs** and **Sizey-style** (:mod:`simulator.memory_limits`), learning online from every run that has
  ended, per program and platform, the Sizey-style models over the bytes of the run's inputs (Bader et al. 2024,
  *Sizey: memory-efficient execution of scientific workflow tasks*); their settings chosen on the past;
- **the service**: the memory champions of ``predictor train --target memory`` trained on the past runs, answering
  through the runtime oracle, the limit at a quantile chosen on the past (champions trained on its first half,
  quantiles scored on its second half). The champions are not retrained during the scored part, where the two
  online sources learn from every run: a handicap the service's worker would lift.

Each setting is chosen by ``benchmarks/peak_memory.py``'s ``choose``: the least waste with at most 1 % of runs over
their limit, else the fewest over. Waste is each run's limit above its peak times its wall time (GB-seconds).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from peak_memory import MAX_OVER, choose

from simulator import memory_limits as ml

NODE_MEMORY = 24 * 10**9  # this machine's memory, shared by its two cores (data/measurements/PROVENANCE.md)
NODE_CORES = 2
QUANTILES = (0.9, 0.95, 0.98, 0.99, 0.995, 0.999)
ALL = 10**6


def load_runs(path: Path) -> pd.DataFrame:
    """The successful runs with a peak, in recorded order."""
    frame = pd.read_csv(path, low_memory=False)
    frame = frame[(frame.exit_status == 0) & (frame.max_rss_kb > 0)].copy()
    frame["recorded"] = pd.to_datetime(frame.recorded_at, format="ISO8601").astype("int64") / 1e9
    return frame.sort_values("recorded", kind="stable").reset_index(drop=True)


def memory_jobs(frame: pd.DataFrame) -> list[ml.MemoryJob]:
    """One job per run: its class (``user``) the program and platform, one processor (the limit is per job), its
    inputs' bytes as Sizey's input size."""
    classes = {pair: i for i, pair in enumerate(sorted(set(zip(frame.algorithm, frame.platform))))}
    size_columns = [c for c in frame.columns if c.startswith("feature.") and c.endswith(".bytes")]
    sizes = frame[size_columns].fillna(0.0).sum(axis=1)
    return [
        ml.MemoryJob(
            i,
            classes[(r.algorithm, r.platform)],
            1,
            r.recorded - r.wall_seconds,
            r.recorded,
            r.wall_seconds,
            None,
            r.max_rss_kb * 1024.0,
            size=float(size),
        )
        for i, (r, size) in enumerate(zip(frame.itertuples(), sizes))
    ]


class Fixed:
    """A limit per run set in advance (no learning)."""

    def __init__(self, name: str, limits: Sequence[float]) -> None:
        self.name, self.limits = name, list(limits)

    def limit(self, job: ml.MemoryJob) -> float:
        return self.limits[job.id]

    def ended(self, job: ml.MemoryJob) -> None:
        return None


def service_limits(
    frame: pd.DataFrame, trained_on: pd.DataFrame, quantiles: Sequence[float], home: Path
) -> dict[float, np.ndarray]:
    """Each run's served memory limit at each quantile, from memory champions trained on ``trained_on`` in ``home``
    (``predictor ingest`` and ``predictor train --target memory``, as an operator would run them)."""
    home.mkdir(parents=True)
    csv = home / "past.csv"
    trained_on.drop(columns="recorded").to_csv(csv, index=False)
    env = dict(os.environ, PREDICTOR_HOME=str(home))
    for command in (["ingest", str(csv)], ["train", "--target", "memory"]):
        subprocess.run([sys.executable, "-m", "predictor", *command], env=env, check=True, stdout=subprocess.DEVNULL)
    from predictor.catalog import load_catalog
    from predictor.oracle import build_oracle
    from predictor.settings import Settings
    from predictor.store import MeasurementStore

    settings = Settings(home=home)
    oracle = build_oracle(
        load_catalog(*settings.catalog_paths), settings, MeasurementStore(settings.resolved_store_url).profile_table()
    )
    out = {q: np.full(len(frame), np.nan) for q in quantiles}
    for (algorithm, platform), group in frame.groupby(["algorithm", "platform"]):
        columns = [c for c in group.columns if c.startswith("feature.") and group[c].notna().all()]
        rows = group[columns].to_numpy(dtype=float)
        names = [c.removeprefix("feature.") for c in columns]
        for q in quantiles:
            (answer,) = oracle.estimate_matrix(algorithm, names, rows, [platform], memory_limit_quantile=q)
            if answer.memory_limit is None:
                raise SystemExit(f"no memory champion for {algorithm} on {platform}")
            out[q][group.index.to_numpy()] = [math.nan if v is None else v for v in answer.memory_limit]
    return out


def row(jobs: Sequence[ml.MemoryJob], split: int, source: str, chosen: str, limits: Sequence[float]) -> dict[str, Any]:
    """A source's waste and over share on the past and on the scored runs."""
    past, scored = ml.score(jobs[:split], limits[:split]), ml.score(jobs[split:], limits[split:])
    return {
        "source": source,
        "chosen": chosen,
        "past": {"runs": past.jobs, "waste_gbs": past.waste_gbh * 3600, "over": past.over_share},
        "scored": {"runs": scored.jobs, "waste_gbs": scored.waste_gbh * 3600, "over": scored.over_share},
    }


def _cpu_with_children() -> float:
    """CPU seconds of this process and of its ended children."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", type=Path)
    parser.add_argument("--tune", type=float, default=0.5, help="share of the runs, first in time, that is the past")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    began = time.process_time()
    frame = load_runs(args.runs)
    jobs = memory_jobs(frame)
    split, half = int(len(jobs) * args.tune), int(len(jobs) * args.tune / 2)
    share = {"cpu1": NODE_MEMORY / NODE_CORES, "cpu2": NODE_MEMORY}
    rows = [
        row(jobs, split, "no request", "the platform's cores' share of the node", [share[p] for p in frame.platform])
    ]
    largest = frame.iloc[:split].groupby("algorithm").max_rss_kb.max() * 1024.0
    fixed = [largest.get(a, share[p]) for a, p in zip(frame.algorithm, frame.platform)]
    rows.append(row(jobs, split, "fixed per program", "its largest peak in the past", fixed))
    fallback = Fixed("fixed per program", fixed)
    sizey = ml.SizeyModels("user")
    families = {
        "last runs": [
            lambda k=k, off=off: ml.LastRuns(k, off, "user")
            for k in (1, 3, 10, ALL)
            for off in (0.0, 0.05, 0.1, 0.25, 0.5)
        ],
        "Sizey-style": [
            lambda a=a, off=off: ml.SizeyStyle(sizey, a, off)
            for a in (0.0, 0.25, 0.5, 0.75, 1.0)
            for off in ml.OFFSET_RULES
        ],  # type: ignore[arg-type]
    }
    for family, makers in families.items():
        name, limits, _ = choose(jobs, split, makers, fallback)
        rows.append(row(jobs, split, family, name.replace("per user", "per program and platform"), limits))
    with tempfile.TemporaryDirectory(prefix="memory-waste-") as tmp:
        cpu = _cpu_with_children()
        early = service_limits(frame.iloc[:split], frame.iloc[:half], QUANTILES, Path(tmp) / "first-half")
        scored_early = {q: ml.score(jobs[half:split], list(early[q][half:split])) for q in QUANTILES}
        ok = [q for q in QUANTILES if scored_early[q].over_share <= MAX_OVER]
        q = min(ok) if ok else min(QUANTILES, key=lambda q: scored_early[q].over_share)
        limits = service_limits(frame, frame.iloc[:split], (q,), Path(tmp) / "past")[q]
        train_cpu = _cpu_with_children() - cpu
    service = row(jobs, split, "the service", f"quantile {q:g}", list(limits))
    service["quantiles_on_the_past"] = {
        str(k): {"waste_gbs": v.waste_gbh * 3600, "over": v.over_share} for k, v in scored_early.items()
    }
    rows.append(service)
    reference = {r["source"]: r["scored"]["waste_gbs"] for r in rows}
    print(f"\n{len(jobs)} runs with a peak; past: first {split}, scored: {len(jobs) - split}")
    print(
        "\n| source | chosen on the past | past: waste GB-s | past: over | scored: waste GB-s | scored: over | scored waste / fixed per program |"
    )
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
    for r in rows:
        p, s = r["past"], r["scored"]
        ratio = s["waste_gbs"] / reference["fixed per program"]
        print(
            f"| {r['source']} | {r['chosen']} | {p['waste_gbs']:,.1f} | {p['over']:.1%} | {s['waste_gbs']:,.1f} | {s['over']:.1%} | {ratio:.2f} |"
        )
    cpu = time.process_time() - began
    load = os.getloadavg()[0]
    print(
        f"\nCPU {cpu:.1f} s here, {train_cpu:.1f} s training and answering the service's limits (with its subprocesses); load {load:.1f}"
    )
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "runs": len(jobs),
                    "past_runs": split,
                    "rows": rows,
                    "cpu_seconds": cpu,
                    "service_training_cpu_s": train_cpu,
                    "load_1m": load,
                },
                indent=2,
            )
            + "\n"
        )


if __name__ == "__main__":
    main()

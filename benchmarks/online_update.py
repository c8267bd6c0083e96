"""What one run costs a live online champion, after 10 runs and after 100,000 (issue 39): the store's add with the
member learning the run, timed side by side in one process, as a ratio.

    .venv/bin/python benchmarks/online_update.py --json benchmarks/results/online_update.json

A fresh SQLite store holds an ``online_log`` member of one pair (:mod:`predictor.online`). ``--repeats`` single-run
adds are timed with the member after 10 learned runs, then again after it has learned ``--runs`` more (learned outside
the store, the same step), interleaved in rounds so that the machine's load falls on both alike. The claim: the ratio
stays near 1 (constant time).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pandas as pd

from models import make_model
from predictor.domain import Measurement, Target
from predictor.store import MeasurementStore
from training.live_members import live_member

START = datetime(2026, 1, 1, tzinfo=UTC)


def runs(n: int, start: int, seed: int) -> list[Measurement]:
    rng = np.random.default_rng(seed)
    return [
        Measurement(
            run_id=f"r{start + i:09d}",
            algorithm="tool",
            platform="cpu",
            features={"input.size": float(x), "input.count": float(c)},
            wall_seconds=float(0.01 * x * c * rng.lognormal(0, 0.2)),
            recorded_at=START + timedelta(seconds=start + i),
        )
        for i, (x, c) in enumerate(zip(rng.uniform(10, 1000, n), rng.integers(1, 50, n), strict=True))
    ]


def timed_adds(store: MeasurementStore, start: int, repeats: int) -> list[float]:
    out = []
    for i in range(repeats):
        run = runs(1, start + i, start + i)
        began = time.perf_counter()
        store.add(run)
        out.append(time.perf_counter() - began)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        stores = {}
        for label, learned in (("after 10", 10), (f"after {args.runs:,}", args.runs)):
            store = MeasurementStore(f"sqlite:///{work}/{learned}.db")
            store.migrate()
            seed = runs(10, 0, 0)
            X = pd.DataFrame([m.features for m in seed])
            member = live_member(
                "tool",
                "cpu",
                Target.TIME,
                {"online_log": 1},
                "1",
                make_model("online_log").fit(X, [m.wall_seconds for m in seed]),
                list(X.columns),
            )
            assert member is not None
            if learned > 10:
                member.learn(runs(learned - 10, 10, 1))
            store.set_live_member(member.key, member)
            stores[label] = store
        times: dict[str, list[float]] = {label: [] for label in stores}
        for r in range(args.rounds):
            for label, store in stores.items():
                times[label] += timed_adds(store, 10_000_000 + r * args.repeats, args.repeats)
        medians = {label: 1e3 * statistics.median(values) for label, values in times.items()}
        labels = list(medians)
        result = {
            "runs": args.runs,
            "repeats": args.repeats * args.rounds,
            "median_ms": medians,
            "ratio": medians[labels[1]] / medians[labels[0]],
            "load": os.getloadavg(),
        }
        for store in stores.values():
            store.dispose()
    print(json.dumps(result, indent=2))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()

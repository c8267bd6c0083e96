"""What the live history features cost at submission: p50/p99 of ``submit_features`` with 100,000 stored runs.

A synthetic, seeded year of one cluster: ``--users`` users sharing ``--runs`` finished runs (submit times uniform
over the year, waits and run times log-normal, requests above the runs), plus a few jobs per user still running at
"now", recorded through :meth:`JobHistory.record` in a migrated store, on SQLite (a file) and on a private
PostgreSQL server (tests/pgserver.py; ``record`` has it gather statistics after a bulk import). Then, for each backend, the time of
``submit_features`` for a new job at "now": of a random known user (the common case), of a user with no history
(which also reads the cluster's first submission), and of one heavy user who ran ``--heavy-runs`` jobs on top of
the others (the cost grows with the user's own jobs, not with the site's). Each known-user call is followed by one
``SELECT 1`` through the same engine, the floor any query pays (pool, driver, round trip), so the ratio of the two
can be read on a loaded machine. Warm-up calls are not counted.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sqlalchemy import text

from predictor.store import MeasurementStore
from predictor.store.job_history import JobHistory, JobRecord
from slurm.submit_history import Submission, submit_features
from tests.pgserver import throwaway_database

NOW = datetime(2026, 1, 1, tzinfo=UTC)
YEAR_S = 365 * 86400
WARM_UP = 50
CLUSTER = "bench"


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def summary(values: list[float]) -> dict[str, float]:
    return {
        "n": len(values),
        "p50_ms": round(statistics.median(values), 3),
        "p99_ms": round(percentile(values, 0.99), 3),
        "max_ms": round(max(values), 3),
    }


def workload(runs: int, users: int, running_per_user: int, heavy_runs: int, seed: int) -> list[JobRecord]:
    """``runs`` finished jobs of ``users`` users and ``heavy_runs`` of user "heavy", spread over the year before NOW,
    and ``running_per_user`` jobs per user running at NOW."""
    rng = random.Random(seed)
    records = []
    for i in range(runs + heavy_runs):
        submit = NOW - timedelta(seconds=rng.uniform(2 * 86400, YEAR_S))
        wait, run = rng.lognormvariate(5, 2), min(rng.lognormvariate(7, 1.5), 86400.0)
        user = f"u{rng.randrange(users)}" if i < runs else "heavy"
        records.append(
            JobRecord(
                key=f"{CLUSTER}-{i}",
                cluster=CLUSTER,
                user=user,
                seq=i,
                partition="batch",
                time_limit_s=float(round(run * rng.uniform(1.2, 10), -1) + 60),
                min_cpus=rng.choice([1, 2, 4, 8, 16, 32]),
                submit_at=submit,
                start_at=submit + timedelta(seconds=wait),
                end_at=submit + timedelta(seconds=wait + run),
                state="COMPLETED",
            )
        )
    for u in range(users):
        for k in range(running_per_user):
            submit = NOW - timedelta(seconds=rng.uniform(600, 86400))
            records.append(
                JobRecord(
                    key=f"{CLUSTER}-running-{u}-{k}",
                    cluster=CLUSTER,
                    user=f"u{u}",
                    seq=runs + heavy_runs + u * running_per_user + k,
                    time_limit_s=86400.0,
                    min_cpus=4,
                    submit_at=submit,
                    start_at=submit + timedelta(seconds=60),
                    state="RUNNING",
                )
            )
    return records


def timed(history: JobHistory, jobs: list[Submission]) -> tuple[list[float], list[float]]:
    """Milliseconds of each ``submit_features`` call and of a ``SELECT 1`` right after it, warm-up calls left out."""
    took, floor = [], []
    for job in jobs:
        started = time.perf_counter()
        submit_features(history, job)
        took.append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        with history.engine.connect() as conn:
            conn.execute(text("SELECT 1"))
        floor.append((time.perf_counter() - started) * 1000)
    return took[WARM_UP:], floor[WARM_UP:]


def measure(url: str, records: list[JobRecord], users: int, calls: int, seed: int) -> dict[str, object]:
    """Load the records into a fresh store at ``url`` and time new jobs of known and of unknown users."""
    store = MeasurementStore(url)
    store.migrate()
    history = JobHistory(store.engine)
    started = time.perf_counter()
    for i in range(0, len(records), 10_000):
        history.record(records[i : i + 10_000])
    load_s = time.perf_counter() - started
    rng = random.Random(seed + 1)

    def job(user: str) -> Submission:
        return Submission(cluster=CLUSTER, user=user, submit=NOW, time_limit_s=3600.0, procs=4)

    known, floor = timed(history, [job(f"u{rng.randrange(users)}") for _ in range(calls + WARM_UP)])
    new, _ = timed(history, [job(f"new{i}") for i in range(calls // 4 + WARM_UP)])
    heavy, _ = timed(history, [job("heavy") for _ in range(calls // 4 + WARM_UP)])
    features = submit_features(history, job("u0"))
    store.dispose()
    return {
        "load_s": round(load_s, 1),
        "known_user": summary(known),
        "select_1": summary(floor),
        "new_user": summary(new),
        "heavy_user": summary(heavy),
        "example_features": features,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100_000)
    parser.add_argument("--users", type=int, default=500)
    parser.add_argument("--running-per-user", type=int, default=2)
    parser.add_argument("--heavy-runs", type=int, default=20_000, help="finished runs of the one heavy user, on top")
    parser.add_argument(
        "--calls", type=int, default=2_000, help="timed calls for known users (a quarter of it for new users)"
    )
    parser.add_argument("--seed", type=int, default=29)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "submit_latency.json")
    args = parser.parse_args()
    records = workload(args.runs, args.users, args.running_per_user, args.heavy_runs, args.seed)
    result: dict[str, object] = {
        "runs": args.runs,
        "users": args.users,
        "running_per_user": args.running_per_user,
        "heavy_runs": args.heavy_runs,
        "load_average_before": os.getloadavg(),
    }
    with tempfile.TemporaryDirectory(prefix="submit-latency-") as work:
        result["sqlite"] = measure(f"sqlite:///{work}/store.db", records, args.users, args.calls, args.seed)
    with throwaway_database() as url:
        result["postgresql"] = measure(url, records, args.users, args.calls, args.seed)
    result["load_average_after"] = os.getloadavg()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()

"""What the Slurm route costs a job estimated by its job class, beside a catalog job: p50/p99 with 100,000 stored runs.

The store holds benchmarks/submit_latency.py's synthetic year (``--runs`` finished runs of ``--users`` users of
cluster ``bench``, partition ``batch``, plus jobs running now), on SQLite (a file) and on a private PostgreSQL server
(tests/pgserver.py). The API (in this process, uvicorn on 127.0.0.1) serves a mafft champion trained on real FASTA
features (tests/trained.py) and a champion of the job class ``bench-batch`` trained on synthetic runs with
history features. Requests alternate between a job naming no program (a random known user: its class, features
from the user's history in the store) and today's catalog job (``#PREDICTOR algorithm=mafft input=...``: features
read from the FASTA file), each ``POST /v1/slurm/estimate?format=text`` on a new connection as the plugin makes it
(``http.client``: no client library's set-up counted). Warm-up requests are not counted; requests over 1 s are
listed by their index.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import random
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.submit_latency import CLUSTER, summary, workload
from features.history import FEATURE_NAMES
from predictor.domain import Measurement, Source
from predictor.settings import Settings
from predictor.store import MeasurementStore
from predictor.store.job_history import JobHistory
from serving.app import create_app
from slurm.settings import SlurmSettings
from tests.livesrv import serve_app
from tests.pgserver import throwaway_database
from tests.trained import api_settings, train_home
from training.pipeline import run_training

WARM_UP = 30
CLASS = f"{CLUSTER}-batch"
TOKEN = "bench-plugin-token-0123456789"  # the plugin's: only it is answered from users' histories


def class_runs(count: int, seed: int) -> list[Measurement]:
    """Runs of the job class whose time follows the user's last runs, with every history feature (seeded)."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(count):
        last = float(rng.uniform(60, 36000))
        features = {name: float(rng.uniform(1, 10)) for name in FEATURE_NAMES} | {
            "history.last1": last,
            "history.last3_mean": last,
        }
        out.append(
            Measurement(
                run_id=f"class-{i}",
                algorithm=CLASS,
                platform="cpu1",
                features=features,
                wall_seconds=last * float(rng.uniform(0.8, 1.2)),
                source=Source.IMPORT,
            )
        )
    return out


def trained(root: Path, seed: int) -> Settings:
    """A home with mafft champions (catalog jobs) and a ``bench-batch`` champion (the job class), and its rule file."""
    home = train_home(root, ["linear_log"])
    (root / "site.yaml").write_text(
        f"algorithms:\n  {CLASS}:\n    parameters: {{}}\n    implementations: {{cpu1: {{}}}}\n"
    )
    (root / "rules.yaml").write_text("partitions: {batch: cpu1}\n")
    settings = home.settings.model_copy(update={"site_catalogs": [root / "site.yaml"]})
    store = MeasurementStore(settings.resolved_store_url)
    store.add(class_runs(200, seed))
    run_training(settings, store, algorithms=[CLASS], models=["linear_log"])
    store.dispose()
    return settings


def timed(url: str, body: dict[str, object]) -> tuple[float, str]:
    """Milliseconds of one estimate on a new connection (as the plugin asks), and the answer's first line."""
    host, port = url.removeprefix("http://").split(":")
    data = json.dumps(body).encode()
    started = time.perf_counter()
    connection = http.client.HTTPConnection(host, int(port), timeout=10)
    try:
        headers = {"content-type": "application/json", "x-predictor-plugin-token": TOKEN}  # as the plugin sends it
        connection.request("POST", "/v1/slurm/estimate?format=text", data, headers)
        answer = connection.getresponse()
        text = answer.read().decode()
    finally:
        connection.close()
    took = (time.perf_counter() - started) * 1000
    if answer.status != 200:
        raise SystemExit(f"the route answered {answer.status}: {text[:200]}")
    return took, text.splitlines()[0]


def measure(
    settings: Settings, slurm: SlurmSettings, url: str, users: int, calls: int, seed: int, inputs: Path
) -> dict[str, object]:
    """The route over the store at ``url``: class jobs of known users and catalog jobs, alternating."""
    rng = random.Random(seed + 2)
    catalog_job = {
        "name": "x.sh",
        "partition": "batch",
        "work_dir": str(inputs),
        "directives": "algorithm=mafft input=f7.fa",
        "time_limit": 30,
    }
    took: dict[str, list[float]] = {"class_job": [], "catalog_job": []}
    with serve_app(create_app(settings.model_copy(update={"store_url": url}), api=api_settings(), slurm=slurm)) as api:
        for i in range(calls + WARM_UP):
            user = f"u{rng.randrange(users)}"
            class_job = {
                "name": "run.sh",
                "partition": "batch",
                "time_limit": 600,
                "min_cpus": 4,
                "user_id": 1000,
                "user_name": user,
            }
            for kind, body in (("class_job", class_job), ("catalog_job", catalog_job)):
                ms, first_line = timed(api, body)
                if not first_line.startswith("time_min="):
                    raise SystemExit(f"{kind}: no time_min set: {first_line}")
                if i >= WARM_UP:
                    took[kind].append(ms)
    return {
        kind: {**summary(values), "over_1s_at": [i for i, ms in enumerate(values) if ms > 1000]}
        for kind, values in took.items()
    }


def loaded(url: str, records: list) -> str:
    """``url`` with the store migrated and the workload recorded."""
    store = MeasurementStore(url)
    store.migrate()
    history = JobHistory(store.engine)
    for i in range(0, len(records), 10_000):
        history.record(records[i : i + 10_000])
    store.dispose()
    return url


@contextlib.contextmanager
def database(backend: str, work: Path) -> Iterator[str]:
    """An empty database of ``backend``: a SQLite file in ``work``, or one on a private PostgreSQL server."""
    if backend == "sqlite":
        yield f"sqlite:///{work}/bench.db"
        return
    with throwaway_database() as url:
        yield url


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100_000)
    parser.add_argument("--users", type=int, default=500)
    parser.add_argument("--calls", type=int, default=500, help="timed requests of each kind per backend")
    parser.add_argument("--seed", type=int, default=29)
    parser.add_argument("--backends", default="sqlite,postgresql", help="comma-separated: sqlite, postgresql")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "slurm_route_latency.json")
    args = parser.parse_args()
    records = workload(runs=args.runs, users=args.users, running_per_user=2, heavy_runs=0, seed=args.seed)
    result: dict[str, object] = {
        "runs": args.runs,
        "users": args.users,
        "calls": args.calls,
        "load_average_before": os.getloadavg(),
    }
    with tempfile.TemporaryDirectory(prefix="slurm-route-") as work:
        settings = trained(Path(work), args.seed)
        slurm = SlurmSettings(rules=Path(work) / "rules.yaml", cluster=CLUSTER, plugin_token=TOKEN)
        for backend in args.backends.split(","):
            with database(backend, Path(work)) as url:
                result[backend] = measure(
                    settings, slurm, loaded(url, records), args.users, args.calls, args.seed, Path(work) / "inputs"
                )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()

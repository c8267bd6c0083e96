"""Soak: this API at a steady load for minutes while the champion alias keeps moving; zero errors and flat memory.

Trains two versions of the champion from the bundled dataset into ``WORKDIR/home`` (once), starts
``predictor serve`` (one process, polling the registry every 10 s) and drives it open-loop at a fixed
rate with a mix of single predictions (precomputed features, and input files read), batches of jobs,
feature matrices, observations (each a new run id, with the token), and reads. Every minute the
``champion`` alias of every platform is flipped between the two versions, so the service hot-swaps
under load. The server's resident memory (its process tree, from /proc) and threads are sampled every 5 s.
The server runs with ``MALLOC_ARENA_MAX=2`` (``--arena-max``), as Python services usually do: glibc's
default gives each new worker thread its own malloc arena, which shows as ~8 MiB steps of RSS.
Reports errors (must be zero), latency, the versions seen, every observation stored exactly once, and
memory: the mean of the first and of the last minute after warm-up, and the fitted slope.

    .venv/bin/python benchmarks/api_soak.py --seconds 330 --rate 100
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from api_load import feature_rows, our_batch, our_matrix, our_single
from apisetup import ROOT, cli, ours, rss_kb, threads, trained_home
from loadgen import Request, post_json, run

from predictor.registry import CHAMPION_ALIAS, registered_name, registry_client
from predictor.store import MeasurementStore

TOKEN = "soak-token"
WARMUP_S = 30.0


def second_version(home: Path, algorithm: str, model: str) -> None:
    """Train ``model`` as well, so each champion has a second version to flip to (once)."""
    marker = home / f".second-{algorithm}-{model}"
    if not marker.exists():
        cli(home, "train", "--algorithm", algorithm, "--model", model, cv_folds="5")
        marker.touch()


def flipper(home: Path, algorithm: str, platforms: list[str], every_s: float, stop: threading.Event, log: list) -> None:
    """Move each platform's champion alias between versions 1 and 2 every ``every_s`` seconds; log (time, version)."""
    client = registry_client(f"sqlite:///{home / 'mlflow.db'}")
    started = time.monotonic()
    while not stop.wait(every_s):
        for platform in platforms:
            name = registered_name(algorithm, platform)
            current = client.get_model_version_by_alias(name, CHAMPION_ALIAS).version
            target = "1" if str(current) != "1" else "2"
            client.set_registered_model_alias(name, CHAMPION_ALIAS, target)
        log.append((round(time.monotonic() - started, 1), target))


def sampler(pid: int, every_s: float, stop: threading.Event, samples: list) -> None:
    """Append (seconds since start, RSS in KiB of the server's process tree, its threads) every ``every_s`` seconds."""
    started = time.monotonic()
    while not stop.wait(every_s):
        samples.append((time.monotonic() - started, rss_kb(pid), threads(pid)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workdir", type=Path, default=ROOT / "benchmarks" / "work" / "api")
    parser.add_argument("--algorithm", default="mafft")
    parser.add_argument("--platform", default="cpu1")
    parser.add_argument("--model", default="lightgbm_log")
    parser.add_argument("--second-model", default="linear_log")
    parser.add_argument("--seconds", type=float, default=330.0)
    parser.add_argument("--rate", type=float, default=100.0, help="requests per second, open loop")
    parser.add_argument("--flip-every", type=float, default=60.0)
    parser.add_argument("--arena-max", default="2", help="MALLOC_ARENA_MAX of the server ('' for glibc's default)")
    args = parser.parse_args()
    workdir = args.workdir.resolve()
    home = trained_home(workdir / "home", args.algorithm, args.model)
    second_version(home, args.algorithm, args.second_model)
    store = MeasurementStore(f"sqlite:///{home / 'store.db'}")
    before = store.count()
    import httpx

    environ = {"MALLOC_ARENA_MAX": args.arena_max} if args.arena_max else {}
    with ours(
        home, workdir / "soak.log", environ, api_token=TOKEN, api_reload_interval_s="10", api_log_level="warning"
    ) as (base, pid):
        platforms = sorted(
            {m["platform"] for m in httpx.get(f"{base}/v1/models").json() if m["algorithm"] == args.algorithm}
        )
        names = next(m["features"] for m in httpx.get(f"{base}/v1/models").json() if m["platform"] == args.platform)
        rows = feature_rows(home, args.algorithm, args.platform, names, 200)
        singles = [our_single(args.algorithm, args.platform, names, r) for r in rows[:50]]
        sample = str(ROOT / "data" / "samples" / "family-40x300.fa")
        heavy = post_json("/v1/predict", {"algorithm": args.algorithm, "params": {"input": sample}})
        batch = our_batch(args.algorithm, args.platform, names, rows[:50])
        matrix = our_matrix(args.algorithm, args.platform, names, rows)
        reads = [Request("GET", "/v1/models"), Request("GET", "/readyz")]
        stamp = int(time.time())
        posted: list[str] = []

        def pick(i: int) -> Request:
            slot = i % 20
            if slot < 14:
                return singles[i % len(singles)]
            if slot == 14:
                return heavy
            if slot == 15:
                return batch
            if slot == 16:
                return matrix
            if slot == 17:
                run_id = f"soak-{stamp}-{i}"
                posted.append(run_id)
                body = {
                    "run_id": run_id,
                    "algorithm": args.algorithm,
                    "platform": args.platform,
                    "wall_seconds": 0.5,
                    "features": dict(zip(names, rows[i % len(rows)].tolist(), strict=True)),
                    "source": "probe",
                }
                return post_json("/v1/observations", body, authorization=f"Bearer {TOKEN}")
            return reads[i % 2]

        versions: Counter[str] = Counter()

        def check(status: int, body: bytes) -> str | None:
            if body.startswith(b'{"algorithm"') and b'"estimates":[{' in body:
                payload = json.loads(body)
                for e in payload["estimates"]:
                    if isinstance(e.get("model_version"), str):
                        versions[e["model_version"]] += 1
            return None

        stop = threading.Event()
        samples: list[tuple[float, int]] = []
        flips: list = []
        threads = [
            threading.Thread(target=sampler, args=(pid, 5.0, stop, samples), daemon=True),
            threading.Thread(
                target=flipper, args=(home, args.algorithm, platforms, args.flip_every, stop, flips), daemon=True
            ),
        ]
        for t in threads:
            t.start()
        result = run(
            base,
            pick,
            concurrency=64,
            max_requests=int(args.rate * args.seconds * 1.05),
            max_seconds=args.seconds,
            rate=args.rate,
            check=check,
        )
        stop.set()
        for t in threads:
            t.join(timeout=30)
        metrics = httpx.get(f"{base}/metrics").text
    stored = store.known_run_ids(posted)
    added = store.count() - before
    store.dispose()
    report = _report(
        args, result.summary(), result.error_samples, samples, versions, flips, len(posted), len(stored), added, metrics
    )
    (workdir / "api_soak.json").write_text(json.dumps(report, indent=2))
    print(json.dumps(report, indent=2))


def _report(args, summary, error_samples, samples, versions, flips, posted, stored, added, metrics) -> dict:
    """The soak's figures: load, errors, swaps, observations, and memory after warm-up."""
    steady = [(t, kb / 1024) for t, kb, _ in samples if t >= WARMUP_S]
    times = np.array([t for t, _ in steady])
    mib = np.array([m for _, m in steady])
    first = mib[times < WARMUP_S + 60].mean() if len(mib) else float("nan")
    last = mib[times > times.max() - 60].mean() if len(mib) else float("nan")
    slope = float(np.polyfit(times / 60, mib, 1)[0]) if len(mib) > 2 else float("nan")
    swaps = [line for line in metrics.splitlines() if line.startswith("predictor_model_reloads_total")]
    return {
        "command": f"benchmarks/api_soak.py --seconds {args.seconds:g} --rate {args.rate:g} --arena-max '{args.arena_max}'",
        "load": summary,
        "error_samples": error_samples,
        "versions_seen": dict(versions),
        "reloads": swaps,
        "observations": {"posted": posted, "stored_once": stored, "rows_added": added},
        "rss_mib": {
            "first_minute": round(first, 1),
            "last_minute": round(last, 1),
            "max": round(float(mib.max()), 1) if len(mib) else None,
            "slope_mib_per_min": round(slope, 3),
            "samples": len(samples),
        },
        "alias_flip_times_s": flips,
        "samples_s_mib_threads": [(round(t, 1), round(kb / 1024, 1), n) for t, kb, n in samples],
    }


if __name__ == "__main__":
    main()

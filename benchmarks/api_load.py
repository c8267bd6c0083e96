"""Load benchmark: this API against ``mlflow models serve`` of the same champion, same client, same run, on 127.0.0.1.

Trains a champion from the bundled dataset into ``WORKDIR/home`` (once), starts ``predictor serve`` and
``mlflow models serve -m models:/runtime-<algorithm>-<platform>@champion --env-manager local`` (one
process each, or ``--workers N`` API workers of ours behind one port), checks that both give the same
numbers for the same 1,000 rows, then drives both with the same keep-alive load generator: single predictions and batches of 1,000 rows, at several
concurrency levels, each bounded in time. Our single request asks for one platform with precomputed
features (one model call, as MLflow makes); batches go both as a list of jobs (``/v1/predict/batch``)
and as a feature matrix (``/v1/predict/matrix``); a heavier request (every platform, the input file
read and its features extracted) is measured too. Besides latency and throughput, each server's CPU
time per request (its whole process tree, from /proc) is reported: it is far less sensitive than
wall time to other work on a shared machine. Prints a Markdown table and writes JSON.

    .venv/bin/python benchmarks/api_load.py --seconds 10
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from apisetup import (
    ROOT,
    champion_of_kind,
    cpu_seconds,
    mlflow_scoring,
    ours,
    trained_home,
)
from loadgen import Request, post_json, run

from predictor.store import MeasurementStore


def feature_rows(home: Path, algorithm: str, platform: str, names: list[str], n: int, seed: int = 0) -> np.ndarray:
    """``n`` rows of real job features (sampled with replacement from the stored measurements), in ``names`` order."""
    store = MeasurementStore(f"sqlite:///{home / 'store.db'}")
    frame = store.frame(algorithm, platform)
    store.dispose()
    table = frame[names].to_numpy(dtype=float)
    return table[np.random.default_rng(seed).integers(0, len(table), size=n)]


def our_single(algorithm: str, platform: str, names: list[str], row: np.ndarray) -> Request:
    return post_json(
        "/v1/predict",
        {"algorithm": algorithm, "platforms": [platform], "features": dict(zip(names, row.tolist(), strict=True))},
    )


def our_batch(
    algorithm: str, platform: str, names: list[str], rows: np.ndarray, fields: list[str] | None = None
) -> Request:
    """The jobs form; ``fields`` trims each estimate (None: every field, the features echoed)."""
    jobs = [
        {"algorithm": algorithm, "platforms": [platform], "features": dict(zip(names, r.tolist(), strict=True))}
        for r in rows
    ]
    return post_json("/v1/predict/batch", {"jobs": jobs} | ({"fields": fields} if fields is not None else {}))


def our_matrix(algorithm: str, platform: str, names: list[str], rows: np.ndarray) -> Request:
    return post_json(
        "/v1/predict/matrix", {"algorithm": algorithm, "platforms": [platform], "columns": names, "rows": rows.tolist()}
    )


def mlflow_rows(names: list[str], rows: np.ndarray) -> Request:
    return post_json("/invocations", {"dataframe_split": {"columns": names, "data": rows.tolist()}})


def same_numbers(
    ours_base: str, mlflow_base: str, algorithm: str, platform: str, names: list[str], rows: np.ndarray
) -> float:
    """Largest relative difference between the two servers' estimates of ``rows`` (they serve the same model)."""
    import httpx

    mine = httpx.post(
        f"{ours_base}/v1/predict/batch",
        content=our_batch(algorithm, platform, names, rows).body,
        headers={"content-type": "application/json"},
        timeout=60,
    ).json()
    theirs = httpx.post(
        f"{mlflow_base}/invocations",
        content=mlflow_rows(names, rows).body,
        headers={"content-type": "application/json"},
        timeout=60,
    ).json()
    a = np.array([item["estimates"][0]["seconds"] for item in mine["results"]])
    b = np.maximum(np.array(theirs["predictions"], dtype=float).reshape(-1), 0.0)
    return float(np.max(np.abs(a - b) / np.maximum(np.abs(b), 1e-12)))


def measure(base: str, pid: int, requests: list[Request], concurrency: int, seconds: float) -> dict[str, float]:
    """Warm up briefly, then load ``base`` with ``requests`` round-robin for ``seconds``; adds the server's CPU per request."""
    import httpx

    def pick(i: int) -> Request:
        return requests[i % len(requests)]

    first = requests[0]
    answer = httpx.request(
        first.method, base + first.path, content=first.body, headers={"content-type": "application/json"}, timeout=60
    )
    run(base, pick, concurrency=concurrency, max_requests=200, max_seconds=min(2.0, seconds))
    before = cpu_seconds(pid)
    stats = run(base, pick, concurrency=concurrency, max_requests=2_000_000, max_seconds=seconds).summary()
    stats["cpu_ms"] = (cpu_seconds(pid) - before) * 1000 / max(stats["requests"], 1)
    stats["request_kb"], stats["response_kb"] = len(first.body) / 1024, len(answer.content) / 1024
    return stats


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workdir", type=Path, default=ROOT / "benchmarks" / "work" / "api")
    parser.add_argument("--algorithm", default="mafft")
    parser.add_argument("--platform", default="cpu1")
    parser.add_argument("--model", default="lightgbm_log", help="zoo member trained as the champion")
    parser.add_argument("--seconds", type=float, default=10.0, help="measuring time per server and level")
    parser.add_argument("--single", default="1,8,32,64", help="concurrency levels for single predictions")
    parser.add_argument("--batch", default="1,4", help="concurrency levels for batches")
    parser.add_argument("--batch-size", type=int, default=1000)
    parser.add_argument("--workers", type=int, default=1, help="API worker processes of ours (MLflow keeps its one)")
    parser.add_argument("--only", default="", help="only the workloads whose name contains this (e.g. 'jobs form')")
    args = parser.parse_args()
    workdir = args.workdir.resolve()
    home = trained_home(workdir / "home", args.algorithm, args.model)
    champion_of_kind(home, args.algorithm, args.model)
    uri = f"models:/runtime-{args.algorithm}-{args.platform}@champion"
    results = []
    with (
        ours(home, workdir / "ours.log", api_reload_interval_s="30", api_workers=str(args.workers)) as (base, pid),
        mlflow_scoring(home, uri, workdir / "mlflow.log") as (mbase, mpid),
    ):
        import httpx

        model = next(
            m
            for m in httpx.get(f"{base}/v1/models").json()
            if m["platform"] == args.platform and m["algorithm"] == args.algorithm
        )
        names = model["features"]
        pool = feature_rows(home, args.algorithm, args.platform, names, 64)
        batch = feature_rows(home, args.algorithm, args.platform, names, args.batch_size, seed=1)
        difference = same_numbers(base, mbase, args.algorithm, args.platform, names, batch)
        print(
            f"champion {model['name']} v{model['version']} ({model['model_kind']}, path {model['prediction_path']}); "
            f"largest relative difference from MLflow's answers on {len(batch)} rows: {difference:.2e}"
        )
        sample = str(ROOT / "data" / "samples" / "family-40x300.fa")
        workloads = {
            "single": (
                [our_single(args.algorithm, args.platform, names, r) for r in pool],
                [mlflow_rows(names, r[None, :]) for r in pool],
                args.single,
            ),
            f"batch of {args.batch_size}, jobs form": (
                [our_batch(args.algorithm, args.platform, names, batch)],
                [mlflow_rows(names, batch)],
                args.batch,
            ),
            f"batch of {args.batch_size}, jobs form, fields seconds and limit": (
                [our_batch(args.algorithm, args.platform, names, batch, ["limit"])],
                [mlflow_rows(names, batch)],
                args.batch,
            ),
            f"batch of {args.batch_size}, matrix form": (
                [our_matrix(args.algorithm, args.platform, names, batch)],
                [mlflow_rows(names, batch)],
                args.batch,
            ),
        }
        for workload, (mine, theirs, levels) in workloads.items():
            if args.only and args.only not in workload:
                continue
            for level in map(int, levels.split(",")):
                ours_stats = measure(base, pid, mine, level, args.seconds)
                theirs_stats = measure(mbase, mpid, theirs, level, args.seconds)
                results.append({"workload": workload, "concurrency": level, "ours": ours_stats, "mlflow": theirs_stats})
                print(_row(results[-1]), flush=True)
        if not args.only or args.only in "single, every platform, file read":
            heavy = post_json("/v1/predict", {"algorithm": args.algorithm, "params": {"input": sample}})
            results.append(
                {
                    "workload": "single, every platform, file read",
                    "concurrency": 8,
                    "ours": measure(base, pid, [heavy], 8, args.seconds),
                    "mlflow": None,
                }
            )
            print(_row(results[-1]), flush=True)
    out = workdir / f"api_load-{args.workers}w.json"
    out.write_text(json.dumps({"difference": difference, "model": model, "results": results}, indent=2))
    print("\n" + _table(results) + f"\n\nwritten to {out}")


def _row(r: dict) -> str:
    def brief(s: dict | None) -> str:
        if s is None:
            return "-"
        return (
            f"{s['rps']:.0f} rps p50 {s['p50_ms']:.2f} p99 {s['p99_ms']:.2f} cpu {s['cpu_ms']:.2f} ms err {s['errors']}"
        )

    return f"{r['workload']} c={r['concurrency']}: ours {brief(r['ours'])} | mlflow {brief(r['mlflow'])}"


def _table(results: list[dict]) -> str:
    lines = [
        "| workload | concurrency | ours req/s | ours p50 ms | ours p99 ms | ours CPU ms/req | MLflow req/s | MLflow p50 ms "
        "| MLflow p99 ms | MLflow CPU ms/req | throughput ratio | errors (ours/MLflow) | KB in/out (ours; MLflow) |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in results:
        o, m = r["ours"], r["mlflow"]
        mine = f"{o['rps']:.0f} | {o['p50_ms']:.2f} | {o['p99_ms']:.2f} | {o['cpu_ms']:.2f}"
        sizes = f"{o['request_kb']:.1f}/{o['response_kb']:.1f}"
        if m is None:
            lines.append(
                f"| {r['workload']} | {r['concurrency']} | {mine} | - | - | - | - | - | {o['errors']}/- | {sizes} |"
            )
            continue
        ratio = o["rps"] / m["rps"] if m["rps"] else float("inf")
        theirs = f"{m['rps']:.0f} | {m['p50_ms']:.2f} | {m['p99_ms']:.2f} | {m['cpu_ms']:.2f}"
        sizes += f"; {m['request_kb']:.1f}/{m['response_kb']:.1f}"
        lines.append(
            f"| {r['workload']} | {r['concurrency']} | {mine} | {theirs} | {ratio:.1f}x | {o['errors']}/{m['errors']} | {sizes} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    main()

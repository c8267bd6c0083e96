"""One hostile request against the API: a 2.3 MB ``POST /v1/predict`` of 200,000 keys, and what ``/healthz`` waits meanwhile.

For a baseline revision (a temporary git worktree, as ``benchmarks/ingest_scale.py`` makes one) and this checkout,
``predictor serve`` is started on a fresh home (no champions: the body is refused before any model) on a free port of
127.0.0.1. A prober asks ``GET /healthz`` every 20 ms on its own connection while the hostile body is sent
``--repeats`` times, one after the other; the same is done with the README's job instead, as the ordinary request
beside it. Reported per revision: the request's own time (median), the size and status of its answer, and
``/healthz``'s latency while it ran (median and worst) against its latency with nothing else running, in the same run.

    .venv/bin/python benchmarks/body_stall.py --baseline main [--repeats 5]

Output: the Markdown table, and ``benchmarks/results/body_stall.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
PREDICTOR = Path(sys.executable).with_name("predictor")
HOSTILE = json.dumps({"algorithm": "mafft", **{f"k{i}": 0 for i in range(200_000)}}).encode()
ORDINARY = json.dumps({"algorithm": "mafft", "params": {"input": "samples/family-40x300.fa"}}).encode()
PROBE_S = 0.02


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def serve(source: Path, home: Path) -> tuple[subprocess.Popen[bytes], str]:
    """``predictor serve`` with ``source``'s packages on a free port, once ``/healthz`` answers (bounded: 300 s)."""
    port = free_port()
    env = {**os.environ, "PREDICTOR_HOME": str(home), "PYTHONPATH": str(source)}
    process = subprocess.Popen(
        [str(PREDICTOR), "serve", "--port", str(port)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{base}/healthz", timeout=2).status_code == 200:
                return process, base
        except httpx.HTTPError:
            time.sleep(0.5)
    process.kill()
    raise SystemExit(f"predictor serve of {source} did not answer in 300 s")


def probed(base: str, body: bytes | None, repeats: int) -> dict[str, float]:
    """``/healthz`` latencies while ``body`` is posted ``repeats`` times (None: while nothing else is asked)."""
    latencies: list[float] = []
    stop = threading.Event()

    def probe() -> None:
        with httpx.Client(timeout=120) as client:
            while not stop.is_set():
                start = time.perf_counter()
                client.get(f"{base}/healthz")
                latencies.append(time.perf_counter() - start)
                time.sleep(PROBE_S)

    prober = threading.Thread(target=probe)
    prober.start()
    took, size, status = [], 0, 0
    try:
        time.sleep(0.5)
        with httpx.Client(timeout=300) as client:
            for _ in range(repeats):
                if body is None:
                    time.sleep(1.0)
                    continue
                start = time.perf_counter()
                answer = client.post(f"{base}/v1/predict", content=body, headers={"content-type": "application/json"})
                took.append(time.perf_counter() - start)
                size, status = len(answer.content), answer.status_code
    finally:
        stop.set()
        prober.join()
    return {
        "request_s": statistics.median(took) if took else 0.0,
        "answer_bytes": size,
        "status": status,
        "healthz_median_ms": statistics.median(latencies) * 1e3,
        "healthz_max_ms": max(latencies) * 1e3,
        "probes": len(latencies),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", required=True, help="git revision to compare against (e.g. main)")
    parser.add_argument("--repeats", type=int, default=5, help="hostile requests per revision")
    args = parser.parse_args()
    results: dict[str, dict[str, dict[str, float]]] = {}
    with tempfile.TemporaryDirectory(prefix="body-stall-") as tmp:
        folder = Path(tmp)
        worktree = folder / "tree"
        subprocess.run(
            ["git", "-C", ROOT, "worktree", "add", "--detach", worktree, args.baseline], check=True, capture_output=True
        )
        try:
            for label, source in (("baseline", worktree), ("current", ROOT)):
                process, base = serve(source, folder / f"home-{label}")
                try:
                    results[label] = {
                        "idle": probed(base, None, args.repeats),
                        "ordinary": probed(base, ORDINARY, args.repeats),
                        "hostile": probed(base, HOSTILE, args.repeats),
                    }
                finally:
                    process.terminate()
                    process.wait(timeout=30)
                print(label, json.dumps(results[label]), flush=True)
        finally:
            subprocess.run(["git", "-C", ROOT, "worktree", "remove", "--force", worktree], check=False)
    out = ROOT / "benchmarks" / "results" / "body_stall.json"
    out.write_text(json.dumps({"baseline": args.baseline, "body_bytes": len(HOSTILE), **results}, indent=2) + "\n")
    revision = {"baseline": args.baseline, "current": "this checkout"}
    print(
        "\n| revision | request | its time (ms, median) | answer | `/healthz` meanwhile, median / worst (ms) "
        "| worst / idle median |"
    )
    print("| --- | --- | ---: | --- | ---: | ---: |")
    for label, rows in results.items():
        idle = rows["idle"]["healthz_median_ms"]
        print(f"| {revision[label]} | none (idle) | - | - | {idle:.1f} / {rows['idle']['healthz_max_ms']:.1f} | 1.0 |")
        for kind in ("ordinary", "hostile"):
            row = rows[kind]
            print(
                f"| {revision[label]} | {kind} | {row['request_s'] * 1e3:.1f} | {int(row['status'])}, "
                f"{row['answer_bytes']:,} B | {row['healthz_median_ms']:.1f} / {row['healthz_max_ms']:.1f} "
                f"| {row['healthz_max_ms'] / idle:.0f} |"
            )


if __name__ == "__main__":
    main()

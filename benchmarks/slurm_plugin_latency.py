"""What the job_submit plugin adds to ``sbatch``: p50/p99 over N submissions with the plugin off and on, same run.

A private single-node Slurm (tests/slurmserver.py) and the API over a trained home (tests/trained.py)
run on 127.0.0.1. Submissions alternate in blocks between a pass-through job_submit.lua ("off") and the project's
plugin ("on"), so both modes see the same machine load; the first submission after each switch (slurmctld reloads
the script then) is not counted. Jobs are submitted held and cancelled at the end. Then the API is replaced by a
server that accepts and never answers, and the same submissions show the wait the plugin's timeout bounds.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from serving.app import create_app
from slurm.plugin import render_plugin
from slurm.settings import SlurmSettings
from tests.livesrv import Silent, serve_app
from tests.slurmserver import PASS_THROUGH, SlurmCluster
from tests.trained import train_home

BLOCK = 20


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def timed_submissions(cluster: SlurmCluster, script: Path, count: int, jobs: list[str]) -> list[float]:
    """Milliseconds each of ``count`` held submissions took, end to end (the sbatch process included)."""
    took = []
    for _ in range(count):
        started = time.perf_counter()
        done = subprocess.run(
            ["sbatch", "--parsable", "--hold", "--time=30", str(script)],
            env=cluster.env,
            capture_output=True,
            text=True,
            check=True,
        )
        took.append((time.perf_counter() - started) * 1000)
        jobs.append(done.stdout.strip())
    return took


def switch(cluster: SlurmCluster, text: str, script: Path, jobs: list[str]) -> None:
    """Install a plugin and make slurmctld load it with one uncounted submission."""
    cluster.set_plugin(text)
    timed_submissions(cluster, script, 1, jobs)


def summary(values: list[float]) -> dict[str, float]:
    return {
        "n": len(values),
        "p50_ms": round(statistics.median(values), 2),
        "p99_ms": round(percentile(values, 0.99), 2),
        "max_ms": round(max(values), 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--submissions", type=int, default=200, help="per mode")
    parser.add_argument("--timeout", type=float, default=0.5, help="the plugin's API timeout (seconds)")
    parser.add_argument("--hang-submissions", type=int, default=20)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "slurm_plugin_latency.json")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="slurm-bench-"))
    home = train_home(work, ["linear_log"])
    rules = work / "rules.yaml"
    rules.write_text("partitions: {debug: cpu1}\n")
    script = work / "align.sh"
    script.write_text(f"#!/bin/sh\n#PREDICTOR algorithm=mafft input={home.inputs / 'f12.fa'}\nsleep 1\n")
    cluster = SlurmCluster()
    cluster.start()
    jobs: list[str] = []
    try:
        with serve_app(create_app(home.settings, api=home.api, slurm=SlurmSettings(rules=rules))) as url:
            on_text = render_plugin(url, args.timeout, raise_missing_limit=False)
            off, on = [], []
            for _ in range(args.submissions // BLOCK):
                switch(cluster, PASS_THROUGH, script, jobs)
                off += timed_submissions(cluster, script, BLOCK, jobs)
                switch(cluster, on_text, script, jobs)
                on += timed_submissions(cluster, script, BLOCK, jobs)
            tagged = cluster.show(jobs[-1])
        silent = Silent()
        try:
            switch(cluster, render_plugin(silent.url, args.timeout, raise_missing_limit=False), script, jobs)
            hanging = timed_submissions(cluster, script, args.hang_submissions, jobs)
            untouched = cluster.show(jobs[-1])
        finally:
            silent.close()
        for start in range(0, len(jobs), 200):
            cluster.run("scancel", *jobs[start : start + 200])
    finally:
        cluster.stop()
    result = {
        "plugin_off": summary(off),
        "plugin_on": summary(on),
        "api_hanging": summary(hanging),
        "timeout_s": args.timeout,
        "added_p50_ms": round(statistics.median(on) - statistics.median(off), 2),
        "added_p99_ms": round(percentile(on, 0.99) - percentile(off, 0.99), 2),
        "tagged_job": {"TimeMin": tagged["TimeMin"], "Comment": tagged["Comment"]},
        "hanging_job": {"TimeMin": untouched["TimeMin"], "Comment": untouched["Comment"]},
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()

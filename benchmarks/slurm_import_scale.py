"""Slurm accounting import against one user's jobs: time and peak memory of ``predictor ingest --format sacct``, and the
latency of a job-class estimate against the size of the user's history, beside a baseline revision.

Import: a generated ``sacct -P`` file of N jobs of one user (one after the other, a few minutes each, every one a run
of the bundled job class ``hpc2n-all``: ``PREDICTOR_SLURM_CLUSTER=hpc2n``), imported into a fresh home by the baseline
revision (a temporary git worktree, as ``benchmarks/ingest_scale.py`` does) and by this checkout, each measured by
:mod:`data.profile` (wall seconds, CPU seconds, peak RSS of the ``predictor`` process). A run over ``--timeout``
seconds is stopped and reported as such.

Estimate: after each import, the median and 95th percentile of ``submit_features`` (what ``POST /v1/slurm/estimate``
reads for a job-class job: its user's state at now) for that user, beside a user with 40 jobs in the same store, in one
process with the revision's code. Where the baseline's import was stopped, its code is probed over this checkout's
import of the same jobs (the same ``job_history`` rows; marked ``*``).

    .venv/bin/python benchmarks/slurm_import_scale.py --baseline main [--jobs 2000,4000,8000,16000,100000] [--timeout 900]
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from data.profile import run_measured  # noqa: E402

PREDICTOR = Path(sys.executable).with_name("predictor")
COLUMNS = (
    "JobID|JobName|State|Elapsed|Timelimit|ReqCPUS|ReqMem|Partition|Comment|ExitCode|NodeList|Start|End|Submit|"
    "WorkDir|User|Cluster|Group|Account|QOS|ReqNodes|NNodes|MaxRSS"
)
SUMMARY = re.compile(r"(\d+) rows, (\d+) stored")
START = datetime(2025, 1, 1, tzinfo=UTC)
SMALL = 40  # jobs of the other user, the small history the estimate is compared with
LATENCY = """
import json, statistics, sys, time
from datetime import datetime
from predictor.store import MeasurementStore
from predictor.store.job_history import JobHistory
from slurm.submit_history import Submission, submit_features
history = JobHistory(MeasurementStore(sys.argv[1]).engine)
out = {}
for user in sys.argv[2:]:
    times = []
    for i in range(60):
        job = Submission("hpc2n", user, datetime.now().astimezone(), 3600.0, 4)
        t = time.perf_counter(); submit_features(history, job); times.append(time.perf_counter() - t)
    times = sorted(times[10:])
    out[user] = [statistics.median(times) * 1e3, times[int(0.95 * (len(times) - 1))] * 1e3]
print(json.dumps(out))
"""


def write_jobs(path: Path, user: str, jobs: int, first_id: int) -> None:
    """``jobs`` ended jobs of ``user``: one submitted every 10 minutes, each running 2-7 minutes (a few fail)."""
    with path.open("w") as fh:
        fh.write(COLUMNS + "\n")
        for i in range(jobs):
            submit = START + timedelta(minutes=10 * i)
            start = submit + timedelta(seconds=30)
            run = 120 + (i * 37) % 300
            end = start + timedelta(seconds=run)
            state = "FAILED" if i % 17 == 0 else "COMPLETED"
            cells = [
                str(first_id + i),
                f"job{i % 50}",
                state,
                _clock(run),
                "01:00:00",
                "4",
                "4000M",
                "batch",
                "",
                "1:0" if state == "FAILED" else "0:0",
                "n1",
                f"{start:%Y-%m-%dT%H:%M:%S}",
                f"{end:%Y-%m-%dT%H:%M:%S}",
                f"{submit:%Y-%m-%dT%H:%M:%S}",
                "/home/" + user,
                user,
                "hpc2n",
                "lab",
                "proj",
                "normal",
                "1",
                "1",
                "",
            ]
            fh.write("|".join(cells) + "\n")


def _clock(seconds: int) -> str:
    return f"{seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


def timed_import(source: Path, data: Path, home: Path, log: Path, timeout: float) -> tuple[float, float, float, str]:
    """Wall seconds, CPU seconds, peak RSS (MB) and the summary line of ``predictor ingest --format sacct data``."""
    command = [
        "env",
        f"PREDICTOR_HOME={home}",
        f"PYTHONPATH={source}",
        "PREDICTOR_SLURM_CLUSTER=hpc2n",
        str(PREDICTOR),
        "ingest",
        "--format",
        "sacct",
        str(data),
    ]
    with log.open("w") as out:
        usage = run_measured(command, stdout=out, stderr=subprocess.STDOUT, timeout=timeout)
    text = log.read_text()
    if usage.censored:
        return usage.wall_seconds, usage.cpu_seconds, usage.max_rss_kb / 1024, f"stopped after {timeout:.0f} s"
    found = SUMMARY.search(text)
    if usage.exit_status != 0 or found is None:
        raise SystemExit(f"predictor ingest with {source} failed (exit {usage.exit_status}):\n{text[-2000:]}")
    return usage.wall_seconds, usage.cpu_seconds, usage.max_rss_kb / 1024, found.group(0)


def latency(source: Path, home: Path) -> dict[str, list[float]]:
    """Median and p95 milliseconds of a job-class job's history features for the big user and the small one."""
    url = f"sqlite:///{home / 'store.db'}"
    done = subprocess.run(
        [sys.executable, "-c", LATENCY, url, "big", "small"],
        env={"PYTHONPATH": str(source), "PATH": "/usr/bin:/bin"},
        cwd=source,  # ``-c`` puts the working directory first on the path: the revision's own packages
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"the latency probe with {source} failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", required=True, help="git revision to compare against (e.g. main)")
    parser.add_argument("--jobs", default="2000,4000,8000,16000,100000", help="jobs of the one user, comma-separated")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds an import may take before it is stopped")
    parser.add_argument("--revisions", default="baseline,current", help="which to run: baseline, current or both")
    args = parser.parse_args()
    sizes = [int(n) for n in args.jobs.split(",")]
    rows = []
    with tempfile.TemporaryDirectory(prefix="slurm-import-scale-") as tmp:
        folder = Path(tmp)
        worktree = folder / "tree"
        subprocess.run(
            ["git", "-C", ROOT, "worktree", "add", "--detach", worktree, args.baseline], check=True, capture_output=True
        )
        try:
            for label in args.revisions.split(","):
                source = worktree if label == "baseline" else ROOT
                for jobs in sizes:
                    home = folder / f"home-{label}-{jobs}"
                    small, big = folder / f"small-{jobs}.txt", folder / f"big-{jobs}.txt"
                    write_jobs(small, "small", SMALL, 1)
                    write_jobs(big, "big", jobs, 1000)
                    timed_import(source, small, home, folder / "small.log", args.timeout)
                    wall, cpu, rss, summary = timed_import(
                        source, big, home, folder / f"{label}-{jobs}.log", args.timeout
                    )
                    lat = latency(source, home) if "stopped" not in summary else {}
                    rows.append((label, jobs, wall, cpu, rss, summary, lat))
                    print(
                        f"{label} {jobs:,} jobs: {wall:.1f} s wall, {cpu:.1f} s CPU, peak {rss:.0f} MB ({summary}); "
                        f"estimate ms (median, p95): {lat}",
                        flush=True,
                    )
            for index, (label, jobs, *rest, lat) in enumerate(rows):  # a stopped baseline import: its code's estimate
                done = folder / f"home-current-{jobs}"  # over the same jobs, as this checkout imported them
                if label == "baseline" and not lat and done.exists():
                    rows[index] = (label, jobs, *rest, {k: [*v, "*"] for k, v in latency(worktree, done).items()})
                    print(f"baseline {jobs:,} jobs, estimate on this checkout's import: {rows[index][-1]}", flush=True)
        finally:
            subprocess.run(["git", "-C", ROOT, "worktree", "remove", "--force", worktree], check=False)
    revision = {"baseline": args.baseline, "current": "this checkout"}
    print(
        "\n| revision | jobs of the user | wall (s) | CPU (s) | peak RSS (MB) | wall per job (ms) | estimate, this user "
        f"(ms, median / p95) | estimate, a user of {SMALL} jobs (ms) |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for label, jobs, wall, cpu, rss, summary, lat in rows:
        stopped = " (stopped)" if "stopped" in summary else ""
        big_ms = "/".join(f"{v:.1f}" if isinstance(v, float) else v for v in lat.get("big", [])) or "-"
        small_ms = "/".join(f"{v:.1f}" if isinstance(v, float) else v for v in lat.get("small", [])) or "-"
        print(
            f"| {revision[label]} | {jobs:,} | {wall:.1f}{stopped} | {cpu:.1f} | {rss:.0f} | {wall / jobs * 1e3:.2f} "
            f"| {big_ms} | {small_ms} |"
        )


if __name__ == "__main__":
    main()

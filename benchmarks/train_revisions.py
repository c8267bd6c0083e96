"""Training time of this checkout against a baseline git revision, run alternately in one session.

Each round ingests the data into a fresh home and times ``predictor train`` (wall, and the CPU
of the command and its worker processes), first for the baseline revision, checked out in a
temporary git worktree and imported ahead of this checkout, then for this checkout. Alternating
spreads the shared machine's drift over both; the ratio of the medians is the figure.

    .venv/bin/python benchmarks/train_revisions.py --baseline db0478b --rounds 2
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PREDICTOR = Path(sys.executable).with_name("predictor")


def _children_cpu() -> float:
    """User + system seconds of every waited-for child process so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed_training(source: Path, data: list[Path]) -> tuple[float, float]:
    """Wall and CPU seconds of ``predictor train`` with ``source``'s packages, on ``data`` ingested into a fresh home."""
    with tempfile.TemporaryDirectory(prefix="train-revision-") as home:
        env = {**os.environ, "PREDICTOR_HOME": home, "PYTHONPATH": str(source)}
        subprocess.run([PREDICTOR, "ingest", *map(str, data)], env=env, cwd=source, check=True, capture_output=True)
        cpu, started = _children_cpu(), time.perf_counter()
        subprocess.run([PREDICTOR, "train"], env=env, cwd=source, check=True, capture_output=True)
        return time.perf_counter() - started, _children_cpu() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", required=True, help="git revision to compare against (e.g. a commit)")
    parser.add_argument("--rounds", type=int, default=2, help="baseline/current pairs, alternating")
    parser.add_argument("--data", type=Path, nargs="*", help="measurement CSVs (default: data/measurements/*.csv)")
    args = parser.parse_args()
    data = [p.resolve() for p in args.data] if args.data else sorted((ROOT / "data" / "measurements").glob("*.csv"))
    if not data:
        parser.error("no measurement CSVs to train on")
    with tempfile.TemporaryDirectory(prefix="baseline-") as tmp:
        worktree = Path(tmp) / "tree"
        subprocess.run(
            ["git", "-C", ROOT, "worktree", "add", "--detach", worktree, args.baseline], check=True, capture_output=True
        )
        try:
            runs: dict[str, list[tuple[float, float]]] = {"baseline": [], "current": []}
            for _ in range(args.rounds):
                for label, source in (("baseline", worktree), ("current", ROOT)):
                    wall, cpu = timed_training(source, data)
                    runs[label].append((wall, cpu))
                    print(f"{label}: wall {wall:.1f} s, CPU {cpu:.1f} s", flush=True)
        finally:
            subprocess.run(["git", "-C", ROOT, "worktree", "remove", "--force", worktree], check=False)
    print(f"\n| run ({os.cpu_count()} cores) | median wall (s) | median CPU (s) | wall / baseline |")
    print("| --- | ---: | ---: | ---: |")
    base = statistics.median(w for w, _ in runs["baseline"])
    for label, timings in runs.items():
        wall, cpu = statistics.median(w for w, _ in timings), statistics.median(c for _, c in timings)
        print(f"| {label} | {wall:.1f} | {cpu:.1f} | {wall / base:.2f} |")


if __name__ == "__main__":
    main()

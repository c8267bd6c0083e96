"""Ingest at scale: wall time and peak memory of ``predictor ingest`` on a generated 1 M-row CSV, beside a baseline revision.

The CSV repeats the bundled MAFFT runs (``data/measurements/realtools.csv``: their columns but ``context``)
with a run id of its own on every row and the wall time jittered (seeded), so every row is a new run. For the
baseline revision, checked out in a temporary git worktree and imported ahead of this checkout (as
``benchmarks/train_revisions.py`` does), and then for this checkout, it ingests the file into a fresh home
and then ingests it again (every row already stored), each run measured by :mod:`data.profile` (wall
seconds, CPU seconds and the peak RSS of the ``predictor ingest`` process). One run of each, side by side:
the machine is shared, so the ratios are the figures (CPU seconds suffer least from other work).

    .venv/bin/python benchmarks/ingest_scale.py --baseline 1865d63 [--rows 1000000]
"""

from __future__ import annotations

import argparse
import csv
import os
import random
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from data.profile import run_measured  # noqa: E402

PREDICTOR = Path(sys.executable).with_name("predictor")
BUNDLED = ROOT / "data" / "measurements" / "realtools.csv"
SUMMARY = re.compile(r"(\d+) rows, (\d+) stored, (\d+) already stored")


def write_rows(path: Path, n_rows: int, seed: int = 1) -> None:
    """``n_rows`` rows shaped like the bundled MAFFT runs, each with its own run id and a jittered wall time."""
    with BUNDLED.open(newline="") as fh:
        runs = [row for row in csv.DictReader(fh) if row["algorithm"] == "mafft"]
    columns = [c for c in runs[0] if c != "context" and any(run[c] for run in runs)]
    rng = random.Random(seed)
    with path.open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(columns)
        for i in range(n_rows):
            row = {**runs[i % len(runs)], "run_id": f"scale-{i:08d}"}
            row["wall_seconds"] = repr(float(row["wall_seconds"]) * rng.uniform(0.9, 1.1))
            writer.writerow([row[c] for c in columns])


Timing = tuple[float, float, float, str]  # wall seconds, CPU seconds, peak RSS in MB, the summary line


def timed_ingest(source: Path, data: Path, home: Path, log: Path) -> Timing:
    """How long ``predictor ingest data``, run with ``source``'s packages, took and how much memory it used at most."""
    command = ["env", f"PREDICTOR_HOME={home}", f"PYTHONPATH={source}", str(PREDICTOR), "ingest", str(data)]
    with log.open("w") as out:
        usage = run_measured(command, stdout=out, stderr=subprocess.STDOUT)
    text = log.read_text()
    summary = SUMMARY.search(text)
    if usage.exit_status != 0 or summary is None:
        raise SystemExit(f"predictor ingest with {source} failed (exit {usage.exit_status}):\n{text[-2000:]}")
    return usage.wall_seconds, usage.cpu_seconds, usage.max_rss_kb / 1024, summary.group(0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", required=True, help="git revision to compare against (e.g. a commit)")
    parser.add_argument("--rows", type=int, default=1_000_000, help="rows of the generated CSV")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ingest-scale-") as tmp:
        folder = Path(tmp)
        data = folder / "runs.csv"
        write_rows(data, args.rows)
        print(f"{args.rows:,} rows, {data.stat().st_size / 1e6:.0f} MB: {data}", flush=True)
        worktree = folder / "tree"
        subprocess.run(
            ["git", "-C", ROOT, "worktree", "add", "--detach", worktree, args.baseline], check=True, capture_output=True
        )
        results: dict[tuple[str, str], Timing] = {}
        try:
            for label, source in (("baseline", worktree), ("current", ROOT)):
                home = folder / f"home-{label}"
                for run in ("fresh", "re-ingest"):
                    results[label, run] = timed_ingest(source, data, home, folder / f"{label}-{run}.log")
                    wall, cpu, rss, summary = results[label, run]
                    print(
                        f"{label} {run}: {wall:.1f} s wall, {cpu:.1f} s CPU, peak {rss:.0f} MB ({summary})", flush=True
                    )
        finally:
            subprocess.run(["git", "-C", ROOT, "worktree", "remove", "--force", worktree], check=False)
    print(
        f"\n| `predictor ingest`, {args.rows:,} rows ({os.cpu_count()} cores) | wall (s) | CPU (s) | peak RSS (MB) "
        "| wall / baseline | CPU / baseline | RSS / baseline |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for (label, run), (wall, cpu, rss, _) in results.items():
        base_wall, base_cpu, base_rss, _ = results["baseline", run]
        revision = args.baseline if label == "baseline" else "this checkout"
        print(
            f"| {revision}, {run} | {wall:.1f} | {cpu:.1f} | {rss:.0f} "
            f"| {wall / base_wall:.2f} | {cpu / base_cpu:.2f} | {rss / base_rss:.2f} |"
        )


if __name__ == "__main__":
    main()

"""CLI start benchmark: how long `predictor` commands take, this tree against a baseline revision, side by side.

Times ``--version``, ``--help``, ``predict --url`` (a running service answers) and a local ``predict`` (the
champions loaded here) for the current tree and for a baseline checked out beside it, each command run as a
fresh process with the same interpreter, the two trees alternating (which goes first swaps every repeat), so
load on a shared machine falls on both alike. Prints medians of wall and of CPU seconds (the child's user and
system time, which other processes on a shared machine inflate less than the wall) and their ratios as a Markdown
table, with the load average seen, and writes JSON.

    git worktree add /tmp/cli-base 5b611ea
    .venv/bin/python benchmarks/cli_start.py --base /tmp/cli-base --home /tmp/bench-home --repeats 7

``--home`` must hold trained mafft champions (``predictor ingest data/measurements/*.csv`` and
``predictor train --algorithm mafft`` with ``PREDICTOR_HOME`` set to it); the service of ``predict --url``
is started from this tree on that home, on a free port of 127.0.0.1, and stopped at the end. The commands of each
tree read the home's champions and a store of their own (``store-base.db``, ``store-current.db``).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RUN = "import sys; sys.argv[0] = 'predictor'; from cli.app import app; app()"  # the tree in the working directory comes first
JOB = [
    "--algorithm",
    "mafft",
    "--param",
    "input=data/samples/family-40x300.fa",
]  # a service reads it under its data root


def timed(tree: Path, args: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Seconds one command takes as a fresh process of ``tree``, of wall and of CPU (user and system); a failed command
    stops the benchmark."""
    before, start = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", RUN, *args], cwd=tree, env=env, capture_output=True, text=True, timeout=600
    )
    seconds, after = time.perf_counter() - start, resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{tree}: predictor {' '.join(args)} failed ({done.returncode}): {done.stderr.strip()[-500:]}")
    return seconds, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def free_port() -> int:
    """A port nothing listens on now, on 127.0.0.1."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_service(env: dict[str, str], port: int) -> subprocess.Popen[bytes]:
    """``predictor serve`` of this tree on ``port``, once it answers /healthz (bounded: 300 s)."""
    service = subprocess.Popen(
        [sys.executable, "-c", RUN, "serve", "--port", str(port)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2):
                return service
        except OSError:
            time.sleep(0.5)
    service.kill()
    raise SystemExit("the service did not answer /healthz within 300 s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--base", type=Path, required=True, help="The baseline tree (git worktree add /tmp/cli-base REV)."
    )
    parser.add_argument("--home", type=Path, required=True, help="PREDICTOR_HOME with trained mafft champions.")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--out", type=Path, default=Path("cli-start.json"))
    args = parser.parse_args()
    env = {**os.environ, "PREDICTOR_HOME": str(args.home.resolve()), "COLUMNS": "120"}
    port = free_port()
    service = start_service(env, port)
    commands = {
        "--version": ["--version"],
        "--help": ["--help"],
        "predict --url": [
            "predict",
            "--algorithm",
            "mafft",
            "--param",
            "input=samples/family-40x300.fa",
            "--url",
            f"http://127.0.0.1:{port}",
        ],
        "predict (local)": ["predict", *JOB],
    }
    trees = {"base": args.base.resolve(), "current": ROOT}
    # each tree its own (empty) store, which it migrates itself: a baseline cannot open a store migrated past its schema
    envs = {
        tree: {**env, "PREDICTOR_STORE_URL": f"sqlite:///{args.home.resolve() / f'store-{tree}.db'}"} for tree in trees
    }
    times: dict[str, dict[str, list[tuple[float, float]]]] = {name: {tree: [] for tree in trees} for name in commands}
    loads = [os.getloadavg()[0]]
    try:
        for repeat in range(args.repeats):
            order = list(trees) if repeat % 2 == 0 else list(reversed(trees))
            for name, command in commands.items():
                for tree in order:
                    times[name][tree].append(timed(trees[tree], command, envs[tree]))
            loads.append(os.getloadavg()[0])
    finally:
        service.terminate()
        service.wait(timeout=60)
    print(
        f"| command | base median s | current median s | base / current | base median CPU s | current median CPU s "
        f"| base / current (CPU) |  ({args.repeats} repeats, alternating; 1-min load {min(loads):.1f}-{max(loads):.1f})"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    summary = {}
    for name, by_tree in times.items():
        wall = {tree: statistics.median(w for w, _ in runs) for tree, runs in by_tree.items()}
        cpu = {tree: statistics.median(c for _, c in runs) for tree, runs in by_tree.items()}
        summary[name] = {
            "base_median_s": wall["base"],
            "current_median_s": wall["current"],
            "ratio": wall["base"] / wall["current"],
            "base_median_cpu_s": cpu["base"],
            "current_median_cpu_s": cpu["current"],
            "cpu_ratio": cpu["base"] / cpu["current"],
            "runs": by_tree,
        }
        print(
            f"| `predictor {name}` | {wall['base']:.2f} | {wall['current']:.2f} | {wall['base'] / wall['current']:.1f}x "
            f"| {cpu['base']:.2f} | {cpu['current']:.2f} | {cpu['base'] / cpu['current']:.1f}x |"
        )
    args.out.write_text(
        json.dumps(
            {"base": str(trees["base"]), "repeats": args.repeats, "load_avg": loads, "commands": summary},
            indent=1,
        )
    )


if __name__ == "__main__":
    main()

"""The learning loop, measured: prequential error, the scheduler fed by the service, and the API's latency while it retrains.

    .venv/bin/python benchmarks/learning_loop.py prequential [--initial 0.2] [--windows 8]
    .venv/bin/python benchmarks/learning_loop.py ncbi [--hours 25] [--seeds 0 1 2] [--json PATH]
    .venv/bin/python benchmarks/learning_loop.py latency [--seconds 15] [--rounds 4] [--rate 200]

``prequential``: the bundled runs replayed in the order they were recorded. Each run is first
estimated, then learnt: by a *static* service trained once on the first ``--initial`` share of
the runs, and by the *loop*, the same service whose pairs are retrained by the worker's own rule
(``training.worker.why_due``: at least 20 new runs and a quarter more than the champion saw) and
judged by the guard, as runs arrive. Both train the default zoo with the real pipeline (10 folds),
tracked in memory. Reports RAE, share within 25 % and underestimate rate per window of the replay,
as a table and a figure (``benchmarks/results/learning_loop_prequential.svg`` and ``.json``).

``ncbi``: the NCBI-like workload (``scheduler_scale.py ncbi``) under FCFS, then EDF fed the true
times, ``noisy:0.25``, the frozen ``model`` and the learning ``service``, per seed. Then why equal
median errors schedule differently (:mod:`error_structure`): the structure of each source's errors,
and EDF fed counterfactual sources: the service's own answers replayed (the live run's result again) and its served points without
its extrapolation limits,
the service trained on the history only with its answers frozen for the day (points, and as
planned), the cost law with the visible features (the best a model can do), and noise shared by a
job's platforms. Writes ``benchmarks/results/learning_loop_ncbi.json``.

``latency``: ``predictor serve`` under an open-loop load of single predictions while the retrain
worker (``predictor worker --once``, its own process) trains every pair of the bundled dataset.
The worker is paused (SIGSTOP) and resumed (SIGCONT) in alternating windows of ``--seconds`` (each
phase first in half the rounds), so the API's p50/p99 with and without a retrain running are
measured side by side on the same busy machine, with each window's p99 to show their spread;
once with the worker's defaults (niceness 10, one process), once at niceness 0 with two.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import error_structure as es
import scheduler_scale
from apisetup import ROOT, cli, home_env, ours, trained_home
from loadgen import post_json, run

from data.ingest import ingest_file
from predictor.catalog import load_catalog
from predictor.domain import Measurement, ServedEstimate
from predictor.oracle import ResolvedJob, RuntimeOracle, serve_model
from predictor.settings import BUNDLED_DATA
from predictor.store import MeasurementStore
from scheduler.run_times import Oracle
from scheduler.specs import make_policy
from simulator.learning import LearningOracle
from simulator.metrics import compute
from simulator.scenarios import parse_estimates
from simulator.simulate import SimResult, simulate
from simulator.workload import Workload
from training.dataset import load_training_sets
from training.memory import MemoryChampions, MemoryMeasurements, MemoryTracker
from training.pipeline import train
from training.settings import WorkerSettings
from training.worker import why_due

RESULTS = ROOT / "benchmarks" / "results"


@dataclass
class Service:
    """A service in memory: its measurements, champions and the oracle serving them."""

    store: MemoryMeasurements
    book: MemoryChampions
    tracker: MemoryTracker
    oracle: RuntimeOracle
    retrains: int = 0

    def estimate(self, m: Measurement) -> float | None:
        answer = self.oracle.estimate_jobs([ResolvedJob(m.algorithm, (m.platform,), m.features)])[0][m.platform]
        return answer.seconds if not answer.fallback else None

    def train(self, settings: WorkerSettings, pairs: Sequence[tuple[str, str]]) -> None:
        wanted = set(pairs)
        sets = [
            ts for ts in load_training_sets(self.store, {a for a, _ in wanted}) if (ts.algorithm, ts.platform) in wanted
        ]
        train(settings, sets, tracker=self.tracker, champions=self.book)
        self.retrains += len(sets)
        self.oracle.swap(
            {pair: serve_model(c) for pair, c in self.book.champions().items()}, self.store.profile_table()
        )


def bundled_runs(catalog_path: Path) -> list[Measurement]:
    """The bundled dataset's finished runs, in the order they were recorded."""
    with tempfile.TemporaryDirectory() as tmp:
        store = MeasurementStore(f"sqlite:///{tmp}/store.db")
        store.migrate()
        catalog = load_catalog(catalog_path)
        for path in sorted((BUNDLED_DATA / "measurements").glob("*.csv")):
            ingest_file(path, store, catalog, rejects_dir=Path(tmp))
        runs = store.measurements()
        store.dispose()
    return sorted(runs, key=lambda m: m.recorded_at)


def service(settings: WorkerSettings, runs: Sequence[Measurement]) -> Service:
    store = MemoryMeasurements()
    store.add(runs)
    catalog = load_catalog(settings.catalog_path)
    s = Service(
        store,
        MemoryChampions(),
        MemoryTracker(settings.interval_coverage),
        RuntimeOracle(catalog, {}, coverage=settings.interval_coverage, limit_quantile=settings.limit_quantile),
    )
    s.train(settings, store.pairs())
    return s


def prequential(args: argparse.Namespace) -> dict:
    settings = WorkerSettings(
        home=Path(tempfile.mkdtemp()), n_jobs=args.jobs, retrain_min_new_runs=20, retrain_min_new_fraction=0.25
    )
    runs = bundled_runs(settings.catalog_path)
    cut = int(len(runs) * args.initial)
    started = time.perf_counter()
    static, loop = service(settings, runs[:cut]), service(settings, runs[:cut])
    print(
        f"{len(runs)} runs; both services trained on the first {cut} in {time.perf_counter() - started:.0f} s",
        flush=True,
    )
    rows = []
    for i, m in enumerate(runs[cut:]):
        said = {name: s.estimate(m) for name, s in (("static", static), ("loop", loop))}
        rows.append((i, m.algorithm, m.platform, m.wall_seconds, said["static"], said["loop"]))
        served = (
            [ServedEstimate(run_id=m.run_id, algorithm=m.algorithm, platform=m.platform, seconds=said["loop"])]
            if said["loop"]
            else []
        )
        loop.store.add([m], served)
        pair = (m.algorithm, m.platform)
        if why_due(settings, loop.store, *pair, loop.book.incumbent(*pair)) is not None:
            loop.train(settings, [pair])
        if i % 250 == 0:
            print(
                f"  {i}/{len(runs) - cut} replayed, {loop.retrains} pair retrains, {time.perf_counter() - started:.0f} s",
                flush=True,
            )
    table = windows(rows, args.windows)
    out = {
        "runs": len(runs),
        "initial": cut,
        "replayed": len(rows),
        "retrains": loop.retrains,
        "seconds": time.perf_counter() - started,
        "windows": table,
    }
    RESULTS.mkdir(exist_ok=True)
    figure(table, RESULTS / "learning_loop_prequential.svg", cut)
    (RESULTS / "learning_loop_prequential.json").write_text(json.dumps(out, indent=1))
    return out


def windows(rows: list[tuple], n: int) -> list[dict]:
    """Per window of the replay: pooled RAE against each pair's window mean, share within 25 %, underestimate rate."""
    out = []
    for k, chunk in enumerate(np.array_split(np.arange(len(rows)), n)):
        part = [rows[i] for i in chunk if rows[i][4] is not None and rows[i][5] is not None]
        y = np.array([r[3] for r in part])
        pairs = np.array([f"{r[1]}/{r[2]}" for r in part])
        spread = sum(np.abs(y[pairs == p] - y[pairs == p].mean()).sum() for p in np.unique(pairs))
        entry = {"window": k + 1, "runs": len(part)}
        for name, column in (("static", 4), ("loop", 5)):
            p = np.array([r[column] for r in part])
            entry[f"{name}_rae"] = 100 * float(np.abs(p - y).sum() / spread)
            entry[f"{name}_within_25pct"] = float(np.mean(np.abs(p - y) <= 0.25 * y))
            entry[f"{name}_under"] = float(np.mean(p < y))
        out.append(entry)
    return out


def figure(table: list[dict], path: Path, initial: int) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams["svg.fonttype"] = "none"
    x = [t["window"] for t in table]
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.6))
    for ax, (metric, label) in zip(
        axes, (("rae", "RAE (%)"), ("within_25pct", "share within 25 %"), ("under", "underestimate rate"))
    ):
        for name, style in (("static", "--"), ("loop", "-")):
            ax.plot(x, [t[f"{name}_{metric}"] for t in table], style, marker="o", label=name)
        ax.set_xlabel("window of the replay (time order)")
        ax.set_title(label)
        ax.grid(alpha=0.3)
    axes[0].legend()
    fig.suptitle(f"Bundled runs replayed in time order after the first {initial}: static model vs the learning loop")
    fig.tight_layout()
    fig.savefig(path)


NCBI_SOURCES = ("oracle", "noisy:0.25", "model", "service")


def ncbi(args: argparse.Namespace) -> dict:
    """The NCBI grid with the service beside the other sources, then the structure of their errors (per seed)."""
    diagnosis: dict[int, dict] = {}

    def inspect(w: Workload, seed: int, estimates: str, oracle: Oracle, result: SimResult) -> None:
        if estimates == "none":
            return
        mine = diagnosis.setdefault(seed, {"structure": {}, "mean_completion": {}})
        mine["structure"][estimates] = es.structure(w, es.planned_matrix(w, oracle))
        mine["mean_completion"][estimates] = compute(result).mean_completion
        if not isinstance(oracle, LearningOracle):
            return
        mine["extrapolation"] = es.extrapolation(w, oracle)
        start = es.answer_all(w, parse_estimates("service").oracle(w, seed))  # trained on the history only, never again
        mine["extrapolation at the start"] = es.extrapolation(w, start)
        counterfactuals = {
            "service answers replayed": es.planned_matrix(w, oracle),
            "service points (no limits)": es.planned_matrix(w, oracle, points=True),
            "service at the start of the day": es.planned_matrix(w, start),
            "service at the start of the day, points": es.planned_matrix(w, start, points=True),
            "cost law, visible features": es.feature_bound(w),
            "noisy:0.25 shared by a job's platforms": es.common_noise(w, 0.25, seed),
        }
        for label, matrix in counterfactuals.items():
            mine["structure"][label] = es.structure(w, matrix)
            run = compute(simulate(w, make_policy(args.policy), es.table_oracle(w, matrix, label), estimates=label))
            mine["mean_completion"][label] = run.mean_completion
            print(f"seed {seed} counterfactual {label}: mean completion {run.mean_completion:.1f} s", flush=True)

    grid = argparse.Namespace(
        hours=args.hours, per_type=20, seeds=args.seeds, policy=args.policy, estimates=list(NCBI_SOURCES)
    )
    out = scheduler_scale.bench_ncbi(grid, inspect)
    out["diagnosis"] = diagnosis
    RESULTS.mkdir(exist_ok=True)
    (Path(args.json) if args.json else RESULTS / "learning_loop_ncbi.json").write_text(json.dumps(out, indent=1))
    print(scheduler_scale.markdown(out["rows"]))
    return out


def latency(args: argparse.Namespace) -> dict:
    home = trained_home(Path(args.workdir) / "home", "mafft", "linear_log")
    names = json.loads(
        subprocess.run(
            [
                sys.executable,
                "-c",
                "import mlflow,sys; c=mlflow.MlflowClient(); "
                "print(c.get_model_version_by_alias('runtime-mafft-cpu1','champion').tags['features'])",
            ],
            env=home_env(home),
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )
    store = MeasurementStore(f"sqlite:///{home / 'store.db'}")
    frame = store.frame("mafft", "cpu1")
    store.dispose()
    rows = frame[names].to_numpy(dtype=float)
    pool = [
        post_json(
            "/v1/predict", {"algorithm": "mafft", "platforms": ["cpu1"], "features": dict(zip(names, r.tolist()))}
        )
        for r in rows
    ]
    out = {}
    for label, settings in (
        ("worker defaults (nice 10, 1 process)", {}),
        ("nice 0, 2 processes", {"worker_nice": "0", "worker_n_jobs": "2"}),
    ):
        with ours(home, Path(args.workdir) / "api.log", api_log_level="warning") as (base, _pid):
            worker = start_worker(home, **settings)
            try:
                windows: dict[str, list[list[float]]] = {"idle": [], "busy": []}
                for k in range(args.rounds):
                    for phase in (
                        ("idle", "busy") if k % 2 == 0 else ("busy", "idle")
                    ):  # each phase first in half the rounds
                        os.killpg(worker.pid, signal.SIGSTOP if phase == "idle" else signal.SIGCONT)
                        time.sleep(1.0)
                        result = run(
                            base,
                            lambda i: pool[i % len(pool)],
                            concurrency=8,
                            max_requests=10**7,
                            max_seconds=args.seconds,
                            rate=args.rate,
                        )
                        windows[phase].append(result.latencies)
                        print(
                            f"{label} round {k + 1} {phase}: p99 {1e3 * np.quantile(result.latencies, 0.99):.1f} ms, "
                            f"errors {result.errors}",
                            flush=True,
                        )
                still_running = worker.poll() is None
            finally:
                os.killpg(worker.pid, signal.SIGCONT)
                os.killpg(worker.pid, signal.SIGTERM)
                worker.wait(timeout=60)
        out[label] = {
            "requests": sum(map(len, windows["idle"] + windows["busy"])),
            "worker_still_training_at_end": still_running,
        }
        for phase, parts in windows.items():
            every = np.concatenate(parts)
            out[label] |= {
                f"{phase}_p50_ms": 1e3 * float(np.quantile(every, 0.5)),
                f"{phase}_p99_ms": 1e3 * float(np.quantile(every, 0.99)),
                f"{phase}_windows_p99_ms": [round(1e3 * float(np.quantile(w, 0.99)), 1) for w in parts],
            }
    return out


def start_worker(home: Path, **settings: str) -> subprocess.Popen:
    """``predictor worker --once`` over ``home`` as its own process group, all its pairs due (their champions dropped)."""
    cli(home, "ingest", *map(str, sorted((BUNDLED_DATA / "measurements").glob("*.csv"))))
    env = home_env(
        home, PREDICTOR_RETRAIN_MIN_NEW_RUNS="1", **{f"PREDICTOR_{k.upper()}": v for k, v in settings.items()}
    )
    return subprocess.Popen(
        [sys.executable, "-m", "predictor", "worker", "--once"],
        env=env,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("prequential")
    p.add_argument("--initial", type=float, default=0.2)
    p.add_argument("--windows", type=int, default=8)
    p.add_argument("--jobs", type=int, default=2)
    p = sub.add_parser("ncbi")
    p.add_argument("--hours", type=float, default=25.0)
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--policy", default="edf")
    p.add_argument(
        "--json", default=None, help="Where to write the results (default: benchmarks/results/learning_loop_ncbi.json)."
    )
    p = sub.add_parser("latency")
    p.add_argument("--seconds", type=float, default=15.0)
    p.add_argument("--rounds", type=int, default=4)
    p.add_argument("--rate", type=float, default=200.0)
    p.add_argument("--workdir", default="/tmp/learning-loop-latency")
    args = parser.parse_args()
    result = {"prequential": prequential, "ncbi": ncbi, "latency": latency}[args.command](args)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()

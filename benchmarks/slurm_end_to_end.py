"""Slurm end to end: real MAFFT jobs through sbatch and the plugin, completions into the store, the worker
retraining, and the next batch's estimates against the truth.

Everything is the project's own commands against a private single-node Slurm (tests/slurmserver.py, one CPU so
jobs run one at a time, pinned like platform cpu1): ``predictor serve``, ``predictor slurm install-plugin``,
``predictor slurm follow --once`` and ``predictor worker --once``. Three batches of jobs, each job a batch script
with a ``#PREDICTOR`` line naming its input:

- batch 0, small families only, is submitted while no model exists (the plugin changes nothing); its completions
  are stored and the worker trains the first champion from them;
- batch 1, larger families, gets that champion's estimates (``time_min`` and the tagged comment); its
  completions are stored and the worker retrains;
- batch 2, new families of batch 1's sizes, gets the retrained champion's estimates.

For batches 1 and 2 the served estimate (the tag's seconds) is compared with Slurm's elapsed time: the share of
jobs underestimated, the median absolute relative error, and how many ``time_min`` were below the truth.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from data.datagen import write_family_fasta
from predictor.store import MeasurementStore
from serving.client import wait_until_ready
from tests.livesrv import eventually, free_port
from tests.slurmserver import SlurmCluster

SMALL = (6, 8, 10, 12, 14, 16)
LARGE = (20, 28, 36, 44, 52, 60)
LENGTH = 250


@contextlib.contextmanager
def serving(env: dict[str, str], log: Path) -> Iterator[str]:
    """``predictor serve`` in a child process (a loaded machine may take minutes to start it); stopped after."""
    port = free_port()
    with log.open("w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "predictor", "serve", "--port", str(port)],
            env=env,
            cwd=ROOT,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        wait_until_ready(f"http://127.0.0.1:{port}/readyz", timeout=600, process=proc)
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(timeout=60)


def predictor(env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "predictor", *args], env=env, cwd=ROOT, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"predictor {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}")
    return done.stdout


def submit_batch(cluster: SlurmCluster, work: Path, batch: int, sizes: tuple[int, ...]) -> list[str]:
    """One job per family size: a batch script running MAFFT (G-INS-1 on one core) on a family made for it."""
    jobs = []
    for i, n in enumerate(sizes):
        family = write_family_fasta(
            work / "inputs" / f"b{batch}-{n}.fa",
            n_sequences=n,
            length=LENGTH,
            mutation_rate=0.25,
            alphabet="protein",
            seed=100 * batch + i,
        )
        script = work / f"b{batch}-{n}.sh"
        script.write_text(
            "#!/bin/sh\n"
            f"#PREDICTOR algorithm=mafft input={family} pairs=globalpair maxiterate=1\n"
            f"taskset -c 0 mafft --quiet --thread 1 --globalpair --retree 2 --maxiterate 1 {family} > /dev/null\n"
        )
        jobs.append(cluster.submit(f"--job-name=e2e-b{batch}", "--time=30", str(script)))
    return jobs


def wait_done(cluster: SlurmCluster, jobs: list[str]) -> None:
    if not eventually(lambda: all(j in cluster.completions() for j in jobs), 1800):
        raise TimeoutError(f"jobs {jobs} did not complete")


def scores(store: MeasurementStore, cluster: SlurmCluster, jobs: list[str]) -> dict[str, object]:
    """Served estimate (the tag's seconds) and time_min against Slurm's elapsed time, for the batch's jobs."""
    live = store.live_window("mafft", "cpu1", 1000)
    served = {
        run_id.split("-")[2]: (float(e), float(w))
        for run_id, e, w in zip(live["run_id"], live["seconds"], live["wall_seconds"], strict=True)
    }
    per_job = {
        j: {"estimate_s": round(served[j][0], 2), "elapsed_s": served[j][1], "time_min": cluster.show(j)["TimeMin"]}
        for j in jobs
        if j in served
    }
    errors = [abs(p["estimate_s"] - p["elapsed_s"]) / p["elapsed_s"] for p in per_job.values() if p["elapsed_s"] > 0]
    return {
        "jobs": len(jobs),
        "estimated": len(per_job),
        "underestimated": sum(p["estimate_s"] < p["elapsed_s"] for p in per_job.values()),
        "median_abs_rel_error": round(statistics.median(errors), 3) if errors else None,
        "time_min_below_elapsed": sum(_minutes(p["time_min"]) * 60 < p["elapsed_s"] for p in per_job.values()),
        "per_job": per_job,
    }


def _minutes(text: str) -> float:
    hours, minutes, seconds = (int(x) for x in text.split(":")) if text.count(":") == 2 else (0, 0, 0)
    return hours * 60 + minutes + seconds / 60


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "slurm_end_to_end.json")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="slurm-e2e-"))
    (work / "inputs").mkdir()
    (work / "rules.yaml").write_text("partitions: {debug: cpu1}\n")
    cluster = SlurmCluster(cpus=1)
    cluster.start()
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "SLURM_CONF": str(cluster.conf),
        "PREDICTOR_HOME": str(work / "home"),
        "PREDICTOR_DATA_ROOTS": json.dumps([str(work / "inputs")]),
        "PREDICTOR_SLURM_RULES": str(work / "rules.yaml"),
        "PREDICTOR_SLURM_CLUSTER": cluster.name,
        "PREDICTOR_CV_FOLDS": "3",
        "PREDICTOR_TRAIN_MODELS": '["linear_log", "lad_log"]',
        "PREDICTOR_RETRAIN_MIN_NEW_RUNS": "5",
        "PREDICTOR_API_RELOAD_INTERVAL_S": "1",
        "PREDICTOR_WORKER_NICE": "0",
        "PREDICTOR_API_TOKEN": "e2e-token",
    }
    follow = ("slurm", "follow", "--once", "--log", str(cluster.jobcomp))
    store = MeasurementStore(f"sqlite:///{work / 'home' / 'store.db'}")
    result: dict[str, object] = {}
    try:
        with serving(env, work / "serve.log") as url:
            predictor(env, "slurm", "install-plugin", "--api", url, "--timeout", "2", "--dest", str(cluster.plugin))
            batch0 = submit_batch(cluster, work, 0, SMALL)
            wait_done(cluster, batch0)
            result["follow_0"] = predictor(env, *follow).strip()
            result["worker_0"] = predictor(env, "worker", "--once").strip()
            eventually(lambda: "runtime-mafft-cpu1" in cluster.show(submit_probe(cluster, work))["Comment"], 60)
            batch1 = submit_batch(cluster, work, 1, LARGE)
            wait_done(cluster, batch1)
            result["follow_1"] = predictor(env, *follow).strip()
            result["before"] = scores(store, cluster, batch1)
            result["worker_1"] = predictor(env, "worker", "--once").strip()
            first = cluster.show(batch1[0])["Comment"].split("version=")[1].split()[0]
            eventually(lambda: f"version={first}" not in cluster.show(submit_probe(cluster, work))["Comment"], 60)
            batch2 = submit_batch(cluster, work, 2, LARGE)
            wait_done(cluster, batch2)
            result["follow_2"] = predictor(env, *follow).strip()
            result["after"] = scores(store, cluster, batch2)
    finally:
        store.dispose()
        cluster.stop()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(
        json.dumps(
            {
                k: v if k not in ("before", "after") else {x: y for x, y in v.items() if x != "per_job"}
                for k, v in result.items()
            },
            indent=2,
        )
    )  # type: ignore[union-attr]


def submit_probe(cluster: SlurmCluster, work: Path) -> str:
    """A held job that only asks for an estimate: which champion version the API serves now (cancelled at once)."""
    family = next((work / "inputs").glob("b0-*.fa"))
    script = work / "probe.sh"
    script.write_text(f"#!/bin/sh\n#PREDICTOR algorithm=mafft input={family} pairs=globalpair maxiterate=1\ntrue\n")
    job = cluster.submit("--hold", "--job-name=probe", str(script))
    cluster.run("scancel", job)
    return job


if __name__ == "__main__":
    main()

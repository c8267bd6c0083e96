"""`make run`'s path to a first answer: `predictor serve --train` answers at once from the measured runs, trains the zoo in
a worker beside it, shows how far training is in /readyz and `predictor models list`, and swaps each champion in.

Real processes throughout (the CLI's serve, its worker, MLflow on SQLite); a small zoo and few folds keep it short.
"""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from predictor.settings import BUNDLED_DATA, PROJECT_ROOT
from predictor.training_status import read_status
from tests.livesrv import eventually, serve_cli

pytestmark = pytest.mark.e2e

README_JOB = {"algorithm": "mafft", "params": {"input": "samples/family-40x300.fa"}}


def mafft_runs(path: Path) -> int:
    """The bundled MAFFT runs alone (two pairs: cpu1, cpu2), written to ``path``; how many."""
    with (BUNDLED_DATA / "measurements" / "realtools.csv").open() as source, path.open("w", newline="") as out:
        reader = csv.DictReader(source)
        writer = csv.DictWriter(out, fieldnames=reader.fieldnames or [])
        writer.writeheader()
        rows = [row for row in reader if row["algorithm"] == "mafft"]
        writer.writerows(rows)
    return len(rows)


def test_serve_train_answers_at_once_then_swaps_in_the_champions_it_trains(tmp_path: Path) -> None:
    """Issue 42: the first `make run` trained 14 pairs twice before serving anything (10 min 49 s idle)."""
    home = tmp_path / "home"
    env = {
        **os.environ,
        "PREDICTOR_HOME": str(home),
        "PREDICTOR_TRAIN_MODELS": '["mean", "linear_log"]',
        "PREDICTOR_CV_FOLDS": "3",
        "PREDICTOR_WORKER_N_JOBS": "1",
        "PREDICTOR_API_RELOAD_INTERVAL_S": "1",
        "COLUMNS": "200",
    }
    runs = tmp_path / "mafft.csv"
    assert mafft_runs(runs) == 288
    subprocess.run([sys.executable, "-m", "predictor", "ingest", str(runs)], env=env, check=True, timeout=300)
    log = tmp_path / "serve.log"
    with serve_cli(env, PROJECT_ROOT, log, "--train", timeout=300) as base:
        # the worker starts once the API listens, and needs its imports and 2 pairs x 2 members x 3 folds through MLflow
        # before registering anything: the first answer is the measured one
        first = httpx.post(f"{base}/v1/predict", json=README_JOB, timeout=60).json()["estimates"]
        assert {e["platform"] for e in first} == {"cpu1", "cpu2"}
        for estimate in first:
            assert estimate["fallback"] and estimate["model_name"] == "profile-table", estimate
            assert estimate["reason"].startswith("no champion model for this algorithm and platform; median of ")
            assert estimate["seconds"] > 0
        seen: list[dict] = []

        def trained() -> bool:
            ready = httpx.get(f"{base}/readyz", timeout=30).json()
            seen.append(ready)
            return ready["champions"] == 2 and ready["memory_champions"] == 2

        assert eventually(trained, timeout=600), seen[-1]
        progress = [r["training"] for r in seen if r["training"] and r["training"]["state"] == "training"]
        assert any(p["done"] > 0 and p["total"] > 0 and p["pairs"] == ["mafft/cpu1", "mafft/cpu2"] for p in progress)
        assert any(f"/{p['total']} steps" in p["summary"] for p in progress)
        assert eventually(lambda: httpx.get(f"{base}/readyz").json()["training"]["state"] == "waiting", timeout=120)
        ready = httpx.get(f"{base}/readyz").json()
        assert ready["training"]["last_decisions"] == {"promoted": 4}  # run time and peak memory on both platforms
        answer = httpx.post(f"{base}/v1/predict", json=README_JOB, timeout=60).json()["estimates"]
        assert {e["model_name"] for e in answer} == {"runtime-mafft-cpu1", "runtime-mafft-cpu2"}
        assert all(not e["fallback"] and e["limit"] and e["memory_limit"] for e in answer), answer
        listed = subprocess.run(
            [sys.executable, "-m", "predictor", "models", "list"], env=env, capture_output=True, text=True, timeout=300
        )
        assert listed.returncode == 0, listed.stderr
        assert "retrain worker waiting; last pass " in listed.stdout and ": 4 promoted; next pass " in listed.stdout
        assert listed.stdout.count("mafft") == 4  # two pairs, two targets
    assert eventually(lambda: read_status(home).state == "stopped", timeout=60)  # the worker stops with the API
    text = log.read_text()
    assert text.index("Uvicorn running on") < text.index("retrain worker started")

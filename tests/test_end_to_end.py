"""The walking skeleton: ingest -> train -> serve -> HTTP predict, through the real CLI and a real server."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from predictor.settings import BUNDLED_DATA, PROJECT_ROOT
from tests.livesrv import serve_cli

pytestmark = pytest.mark.e2e

DATASETS = sorted((BUNDLED_DATA / "measurements").glob("*.csv"))
SAMPLE = "samples/family-40x300.fa"


def cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "predictor", *args], env={**os.environ, **env}, cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=900
    )


def test_ingest_train_serve_predict(tmp_path: Path):
    env = {"PREDICTOR_HOME": str(tmp_path / "home"), "PREDICTOR_CV_FOLDS": "5"}
    assert DATASETS, "the bundled dataset is missing"

    ingested = cli(env, "ingest", *map(str, DATASETS))
    assert ingested.returncode == 0, ingested.stderr
    assert "rejected" in ingested.stdout and " 0 rejected" in ingested.stdout
    again = cli(env, "ingest", *map(str, DATASETS))
    assert ", 0 stored" in again.stdout, "re-ingesting the bundled data must store nothing new"

    trained = cli(env, "train", "--algorithm", "mafft", "--model", "linear_log", "--model", "lightgbm")
    assert trained.returncode == 0, trained.stdout + trained.stderr
    assert "Champions" in trained.stdout

    with serve_cli(env, PROJECT_ROOT) as base:
        response = httpx.post(f"{base}/v1/predict", json={"algorithm": "mafft", "params": {"input": SAMPLE}})
        assert response.status_code == 200, response.text
        estimates = {e["platform"]: e for e in response.json()["estimates"]}
        assert set(estimates) == {"cpu1", "cpu2"}
        for e in estimates.values():
            assert e["seconds"] > 0
            assert e["model_name"] == f"runtime-mafft-{e['platform']}" and e["model_version"] == "1"
            assert e["features"]["input.sequences"] == 40

        # clustalo was not trained: the answer says so and falls back on the profile table
        fallback = httpx.post(f"{base}/v1/predict", json={"algorithm": "clustalo", "params": {"input": SAMPLE}}).json()
        assert [e["platform"] for e in fallback["estimates"]] == ["cpu1", "cpu2"]
        for e in fallback["estimates"]:
            assert e["fallback"] and "no champion" in e["reason"] and e["seconds"] > 0

        assert httpx.post(f"{base}/v1/predict", json={"algorithm": "nope", "params": {}}).status_code == 404
        outside = httpx.post(f"{base}/v1/predict", json={"algorithm": "mafft", "params": {"input": "../../etc/passwd"}})
        assert outside.status_code == 403

        predicted = cli(env, "predict", "--algorithm", "mafft", "--param", f"input={BUNDLED_DATA / SAMPLE}", "--url", base, "--json")
        assert predicted.returncode == 0, predicted.stderr
        assert "runtime-mafft-cpu1" in predicted.stdout

    local = cli(env, "predict", "--algorithm", "mafft", "--param", f"input={BUNDLED_DATA / SAMPLE}")
    assert local.returncode == 0 and "runtime-mafft-cpu2" in local.stdout


def test_help_lists_every_subcommand():
    out = subprocess.run([sys.executable, "-m", "predictor", "--help"], capture_output=True, text=True, check=True).stdout
    for command in ("ingest", "profile", "sweep", "train", "serve", "predict", "export"):
        assert command in out

"""The loop end to end through real HTTP: observations posted to the API, the worker process retrains, the API hot-swaps."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import httpx
import pytest

from data.datagen import write_family_fasta
from predictor.catalog import load_catalog
from predictor.jobfeatures import job_features
from predictor.settings import BUNDLED_DATA, PROJECT_ROOT
from serving.app import create_app
from tests.livesrv import serve_app
from tests.trained import TOKEN, Home, api_settings, train_home

AUTH = {"authorization": f"Bearer {TOKEN}"}
SLOWER = 3.0  # the new runs take three times what the served champions learnt: their estimates are off


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Home:
    return train_home(tmp_path_factory.mktemp("loop"), ["linear_log"])


def _observations(home: Home, n: int) -> list[dict]:
    """``n`` new runs per platform of MAFFT on generated families, under the training cost law times SLOWER."""
    catalog = load_catalog(BUNDLED_DATA / "catalog.yaml")
    out = []
    for i in range(n):
        size, length = 6 + 3 * (i % 13), 60 + 25 * (i % 11)
        path = write_family_fasta(
            home.inputs / f"new{i}.fa",
            n_sequences=size,
            length=length,
            mutation_rate=0.2,
            alphabet="protein",
            seed=100 + i,
        )
        features = job_features(catalog.algorithm("mafft"), {"input": str(path)})
        for platform, speed in (("cpu1", 1.0), ("cpu2", 0.6)):
            seconds = SLOWER * speed * (0.05 + 2e-6 * size * size * length)
            out.append(
                {
                    "run_id": f"new-{platform}-{i}",
                    "algorithm": "mafft",
                    "platform": platform,
                    "params": {"input": path.name},
                    "features": features,
                    "wall_seconds": seconds,
                }
            )
    return out


def _versions(base: str) -> dict[str, str]:
    return {m["platform"]: m["version"] for m in httpx.get(f"{base}/v1/models").json()}


def _worker(home: Home) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PREDICTOR_HOME": str(home.settings.home),
        "PREDICTOR_DATA_ROOTS": f'["{home.inputs}"]',
        "PREDICTOR_CV_FOLDS": "3",
        "PREDICTOR_TRAIN_MODELS": '["linear_log"]',
        "PREDICTOR_RETRAIN_MIN_NEW_RUNS": "10",
        "PREDICTOR_WORKER_NICE": "0",
        "PREDICTOR_WORKER_N_JOBS": "1",
    }
    return subprocess.run(
        [sys.executable, "-m", "predictor", "worker", "--once"],
        env=env,
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_observations_posted_to_the_api_retrain_and_swap_the_served_model(home: Home) -> None:
    settings = home.settings
    with serve_app(create_app(settings, api=api_settings(reload_interval_s=0.5))) as base:
        assert _versions(base) == {"cpu1": "1", "cpu2": "1"}
        job = {"algorithm": "mafft", "params": {"input": "f5.fa"}, "platforms": ["cpu1"]}
        before = httpx.post(f"{base}/v1/predict", json=job).json()["estimates"][0]["seconds"]
        posted = httpx.post(f"{base}/v1/observations", json=_observations(home, 20), headers=AUTH, timeout=60)
        assert posted.status_code == 200 and len(posted.json()["stored"]) == 40, posted.text
        live = {m["platform"]: m["live"] for m in httpx.get(f"{base}/v1/models").json()}
        assert live["cpu1"]["runs"] == 20 and live["cpu1"]["underestimate_rate"] > 0.9  # served the old, faster law
        assert 'predictor_live_rae{algorithm="mafft",platform="cpu1"}' in httpx.get(f"{base}/metrics").text

        worker = _worker(home)
        assert worker.returncode == 0, worker.stdout + worker.stderr
        assert "mafft/cpu1 refreshed" in worker.stdout and "mafft/cpu2 refreshed" in worker.stdout, worker.stdout

        deadline = time.monotonic() + 60
        while _versions(base) != {"cpu1": "2", "cpu2": "2"} and time.monotonic() < deadline:
            time.sleep(0.2)
        assert _versions(base) == {"cpu1": "2", "cpu2": "2"}, "the API did not swap in the refreshed champions"
        after = httpx.post(f"{base}/v1/predict", json=job).json()["estimates"][0]
        assert after["model_version"] == "2" and after["seconds"] > before * 1.3  # it learnt the slower runs

    again = _worker(home)
    assert again.returncode == 0 and "nothing is due for training" in again.stdout, again.stdout + again.stderr

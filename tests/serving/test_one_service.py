"""One service (issue 39): the replay's loop and the API answer a job alike when they learned from the same history."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from predictor.catalog import load_catalog
from predictor.settings import BUNDLED_DATA
from predictor.store import MeasurementStore
from serving.app import create_app
from tests.livesrv import serve_app
from tests.trained import measurements, train_home
from training.service_loop import ServiceLoop
from training.settings import WorkerSettings


def test_the_replays_service_and_the_api_give_the_same_answer_for_the_same_job_and_history(tmp_path: Path) -> None:
    home = train_home(tmp_path, ["linear_log", "lightgbm_log"])  # production: MLflow tracking and registry
    store = MeasurementStore(home.settings.resolved_store_url)
    history = store.measurements(successful_only=False)
    store.dispose()
    settings = WorkerSettings(home=tmp_path / "replay", cv_folds=3, train_models=["linear_log", "lightgbm_log"])
    loop = ServiceLoop(settings, load_catalog(BUNDLED_DATA / "catalog.yaml"))
    loop.record(history)  # the replay: the same runs, in memory
    jobs = [m.features for m in measurements(home.inputs)[::7]]
    with serve_app(create_app(home.settings, api=home.api)) as base:
        for features in jobs:
            answer = httpx.post(f"{base}/v1/predict", json={"algorithm": "mafft", "features": features}, timeout=60)
            served = {e["platform"]: e for e in answer.json()["estimates"]}
            replayed = loop.oracle.estimate("mafft", features=features)
            for platform, estimate in replayed.items():
                api = served[platform]
                assert api["member"] == estimate.member and api["rule"] == estimate.rule
                for key in ("seconds", "lower", "upper", "limit"):
                    assert api[key] == pytest.approx(getattr(estimate, key), rel=1e-9), (platform, key)

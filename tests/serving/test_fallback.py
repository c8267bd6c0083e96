"""Issue 30 item 1: absurd run times, stored or sent, never break the no-champion fallback (SQLite and PostgreSQL)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from predictor.domain import MAX_WALL_SECONDS, Measurement, Source
from predictor.settings import Settings
from predictor.store import MeasurementStore
from serving.app import create_app
from serving.settings import ApiSettings
from tests.livesrv import serve_app

TOKEN = "fallback-token"
AUTH = {"authorization": f"Bearer {TOKEN}"}
JOB = {"algorithm": "clustalo", "features": {"input.sequences": 20.0}, "platforms": ["cpu1"]}
ABSURD = (1e308, 3.7e16)


@pytest.fixture
def served(store_url: str, tmp_path: Path) -> Iterator[tuple[str, MeasurementStore]]:
    """An API without champions over a store holding three sane runs and absurd ones stored before they were refused."""
    store = MeasurementStore(store_url)
    store.migrate()
    sane = [
        Measurement(run_id=f"ok-{s}", algorithm="clustalo", platform="cpu1", wall_seconds=s, source=Source.PROBE)
        for s in (1.0, 2.0, 3.0)
    ]
    absurd = [
        Measurement(run_id=f"absurd-{s:g}", algorithm="clustalo", platform="cpu1", wall_seconds=s) for s in ABSURD
    ]
    store.add(sane + absurd)
    settings = Settings(home=tmp_path / "home", data_roots=[tmp_path], store_url=store_url)
    with serve_app(create_app(settings, api=ApiSettings(token=TOKEN, reload_interval_s=0))) as url:
        yield url, store
    store.dispose()


def test_stored_absurd_runs_leave_the_fallback_at_the_median_of_the_plausible_ones(served) -> None:
    base, _ = served
    one = httpx.post(f"{base}/v1/predict", json=JOB, timeout=30)
    assert one.status_code == 200, one.text
    (estimate,) = one.json()["estimates"]
    assert estimate["fallback"] and estimate["seconds"] == 2.0 and "median of 3 measured runs" in estimate["reason"]
    batch = httpx.post(f"{base}/v1/predict/batch", json={"jobs": [JOB, JOB]}, timeout=30)
    assert batch.status_code == 200, batch.text
    assert [r["estimates"][0]["seconds"] for r in batch.json()["results"]] == [2.0, 2.0]


def test_a_job_is_submitted_with_a_finite_estimate_and_a_retry_answers_the_same(served) -> None:
    base, _ = served
    for _ in range(2):
        answer = httpx.post(f"{base}/v1/jobs", json={**JOB, "id": "after-absurd"}, headers=AUTH, timeout=30)
        assert answer.status_code == 200, answer.text
        assert answer.json()["jobs"][0]["estimates"] == {"cpu1": 2.0}


@pytest.mark.parametrize("seconds", [*ABSURD, MAX_WALL_SECONDS + 1.0])
def test_an_implausible_run_time_is_refused_and_nothing_is_stored(served, seconds: float) -> None:
    base, store = served
    before = store.count()
    body = {"run_id": "too-long", "algorithm": "clustalo", "platform": "cpu1", "wall_seconds": seconds}
    answer = httpx.post(f"{base}/v1/observations", json=body, headers=AUTH, timeout=30)
    assert answer.status_code == 422, answer.text
    (rejected,) = answer.json()["rejected"]
    assert rejected["field"] == "wall_seconds" and "over a year" in rejected["message"]
    assert store.count() == before and store.measurement("too-long") is None
    year = httpx.post(
        f"{base}/v1/observations",
        json={**body, "run_id": "a-year", "wall_seconds": MAX_WALL_SECONDS},
        headers=AUTH,
        timeout=30,
    )
    assert year.status_code == 200 and year.json()["stored"] == ["a-year"], year.text

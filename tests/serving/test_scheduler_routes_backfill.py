"""The API of a backfilling scheduler: every waiting job's predicted start, by id and in the queue's list."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from predictor.settings import Settings
from scheduler.settings import SchedulerSettings
from serving.app import create_app
from tests.livesrv import serve_app
from tests.scheduler.served import seed_profile, served_api
from tests.serving.test_scheduler_routes import job, post


def test_a_conservative_scheduler_serves_every_waiting_jobs_predicted_start(tmp_path: Path):
    settings = Settings(home=tmp_path / "home", data_roots=[tmp_path])
    seed_profile(settings)
    with serve_app(create_app(settings, api=served_api(), scheduling=SchedulerSettings(policy="conservative"))) as url:
        post(url, "/v1/machines/fast/events", {"event": "gained", "platform": "cpu2"})
        answer = post(url, "/v1/jobs", [job(name, platforms=["cpu2"]) for name in ("p-1", "p-2", "p-3")])
        assert answer.status_code == 200, answer.text
        first = httpx.get(f"{url}/v1/jobs/p-1").json()
        assert first["status"] == "running"
        listed = {j["id"]: j for j in httpx.get(f"{url}/v1/jobs", params={"status": "pending"}).json()["jobs"]}
        assert set(listed) == {"p-2", "p-3"}
        # cpu2 runs mafft in 1 s: the second starts when the first ends, the third a second later
        assert listed["p-2"]["planned_start"] == pytest.approx(first["started"] + 1.0, abs=0.5)
        assert listed["p-3"]["planned_start"] == pytest.approx(listed["p-2"]["planned_start"] + 1.0, abs=1e-6)
        assert httpx.get(f"{url}/v1/jobs/p-3").json()["planned_start"] == listed["p-3"]["planned_start"]

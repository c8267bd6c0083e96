"""Memory in the scheduler routes (issue 31), over real HTTP on a home with a trained memory champion (MAFFT on cpu1
only): a machine registered with its node memory, a bad node memory or job memory answered 422, a job without memory
planned with the served memory limit (none where the pair has no memory champion), a user's memory kept, and
placement (EASY) counting both."""

from __future__ import annotations

import math
from collections.abc import Iterator

import httpx
import pytest
from sqlalchemy import select

from predictor.store import MeasurementStore
from predictor.store.scheduler_tables import sched_machines
from scheduler.service import MAX_MEMORY
from scheduler.settings import SchedulerSettings
from serving.app import create_app
from tests.livesrv import serve_app
from tests.trained import TOKEN, Home, train_home, train_memory

pytestmark = pytest.mark.e2e  # the API under uvicorn
AUTH = {"authorization": f"Bearer {TOKEN}"}
MIB = 2**20
JOB = {"algorithm": "mafft", "params": {"input": "f13.fa"}}


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Home:
    """Time champions on cpu1 and cpu2; a memory champion on cpu1 only."""
    home = train_home(tmp_path_factory.mktemp("sched-memory"), ["linear_log"], memory_on=("cpu1",))
    train_memory(home, ["linear"])
    return home


@pytest.fixture(scope="module")
def base(home: Home) -> Iterator[str]:
    with serve_app(create_app(home.settings, api=home.api, scheduling=SchedulerSettings(policy="easy"))) as url:
        yield url


def post(base: str, path: str, body: object) -> httpx.Response:
    return httpx.post(f"{base}{path}", json=body, headers=AUTH, timeout=60)


def test_a_machine_is_registered_with_its_node_memory_and_a_bad_one_is_a_422(base: str, home: Home) -> None:
    for bad in (0, -1, "8G", 1.5, True, MAX_MEMORY + 1):
        answer = post(base, "/v1/machines/bad/events", {"event": "gained", "platform": "cpu1", "node_memory": bad})
        assert answer.status_code == 422, (bad, answer.text)
    assert (
        post(
            base, "/v1/machines/big/events", {"event": "gained", "platform": "cpu2", "node_memory": 64 * 2**30}
        ).status_code
        == 200
    )
    store = MeasurementStore(home.settings.resolved_store_url)
    with store.engine.connect() as conn:
        rows = dict(conn.execute(select(sched_machines.c.id, sched_machines.c.node_memory)).all())
    store.dispose()
    assert rows["big"] == 64 * 2**30 and "bad" not in rows


def test_a_bad_job_memory_is_a_422(base: str) -> None:
    for bad in (0, -1, "1G", 2.5, False, MAX_MEMORY + 1):
        answer = post(base, "/v1/jobs", {**JOB, "id": "bad-memory", "memory": bad})
        assert answer.status_code == 422, (bad, answer.text)
    assert httpx.get(f"{base}/v1/jobs/bad-memory").status_code == 404


def test_a_job_without_memory_is_planned_with_the_served_limit_and_a_user_s_memory_is_kept(base: str) -> None:
    served = {e["platform"]: e for e in httpx.post(f"{base}/v1/predict", json=JOB, timeout=60).json()["estimates"]}
    assert served["cpu1"]["memory_limit"] > 30 * MIB and served["cpu2"]["memory_limit"] is None
    assert (
        post(
            base,
            "/v1/machines/tight/events",
            {"event": "gained", "platform": "cpu1", "slots": 4, "node_memory": 16 * MIB},
        ).status_code
        == 200
    )
    answer = post(
        base,
        "/v1/jobs",
        [
            {**JOB, "id": "guessed", "platforms": ["cpu1"]},
            {**JOB, "id": "asked", "platforms": ["cpu1"], "memory": 8 * MIB},
            {**JOB, "id": "both"},
        ],
    )
    assert answer.status_code == 200, answer.text
    jobs = {j["id"]: j for j in answer.json()["jobs"]}
    limit = math.ceil(served["cpu1"]["memory_limit"])
    assert (jobs["guessed"]["memory"], jobs["guessed"]["planned_memory"]) == (None, {"cpu1": limit})
    assert (jobs["both"]["memory"], jobs["both"]["planned_memory"]) == (None, {"cpu1": limit}), (
        "cpu2 has no memory champion"
    )
    assert (jobs["asked"]["memory"], jobs["asked"]["planned_memory"]) == (8 * MIB, {})
    assert jobs["guessed"]["status"] == "pending", "its limit is above the machine's 16 MiB, though 3 slots are free"
    assert jobs["asked"]["status"] == "running" and [r["machine"] for r in jobs["asked"]["runs"]] == ["tight"]
    again = httpx.get(f"{base}/v1/jobs/guessed").json()
    assert again["planned_memory"] == {"cpu1": limit} and again["status"] == "pending"

"""One scheduler per database: the lease, its fencing, and two `predictor scheduler` processes on one PostgreSQL."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import httpx
import pytest

from predictor.settings import PROJECT_ROOT, Settings
from scheduler.leader import LeasedScheduler
from scheduler.service import SchedulerService
from scheduler.state import Job
from scheduler.store import Fence, LeaseLost, SchedulerStore
from serving.client import wait_until_ready
from tests.livesrv import eventually, free_port
from tests.scheduler.served import AUTH, FEATURES, TOKEN, seed_profile
from tests.scheduler.test_service import FixedOracle


def test_one_holder_at_a_time_and_a_lapsed_lease_is_taken_over(store):
    db = SchedulerStore(store.engine)
    assert db.lease() is None and db.take_lease("a", ttl_s=0.3) == 1
    assert db.take_lease("b", ttl_s=0.3) is None  # held, not lapsed
    assert db.take_lease("a", ttl_s=0.3) == 1 and db.renew_lease(Fence("a", 1, 0.3))
    assert eventually(lambda: db.take_lease("b", ttl_s=60) is not None, timeout=10)  # a stopped renewing: b takes over
    assert db.lease()["holder"] == "b" and db.lease()["epoch"] == 2
    assert not db.renew_lease(Fence("a", 1, 0.3))  # a learns it lost the lease
    db.release_lease(Fence("b", 2, 60))
    assert db.take_lease("c", ttl_s=60) == 3  # a clean stop lets the next one in at once


def test_a_fenced_out_scheduler_commits_nothing(store, catalog):
    oracle = FixedOracle()
    db = SchedulerStore(store.engine)
    old = SchedulerService(store, oracle, catalog, fence=Fence("old", db.take_lease("old", ttl_s=0.2), 0.2))
    assert eventually(lambda: db.take_lease("new", ttl_s=60) is not None, timeout=10)
    with pytest.raises(LeaseLost):
        old.submit([Job(id="late", algorithm="blastn", submit=0)])
    assert "late" not in db.load().jobs and "late" not in old.state.jobs  # nothing written, and its cache rolled back
    new = SchedulerService(store, oracle, catalog, fence=Fence("new", db.lease()["epoch"], 60))
    assert [j.id for j in new.submit([Job(id="on-time", algorithm="blastn", submit=0)])] == ["on-time"]


def test_a_standby_runs_the_scheduler_once_the_holder_stops(store, catalog):
    oracle = FixedOracle()
    db = SchedulerStore(store.engine)
    build = lambda fence: SchedulerService(store, oracle, catalog, fence=fence)  # noqa: E731
    first, second = (LeasedScheduler(db, build, ttl_s=0.6, poll_s=0.1) for _ in range(2))
    first.start()
    second.start()
    try:
        assert first.service is not None and second.service is None and "another process" in second.standing_by()
        first.service.submit([Job(id="kept", algorithm="blastn", submit=0)])
        first.stop()
        assert second.wait_running(timeout=10) and "kept" in second.service.state.jobs
    finally:
        first.stop()
        second.stop()


class SchedulerProcess:
    """``predictor scheduler`` as a child process on a given store, killable without warning."""

    def __init__(self, home: Path, store_url: str, log: Path) -> None:
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        env = {
            **os.environ,
            "PREDICTOR_HOME": str(home),
            "PREDICTOR_STORE_URL": store_url,
            "PREDICTOR_API_TOKEN": TOKEN,
            "PREDICTOR_API_RELOAD_INTERVAL_S": "0",
            "PREDICTOR_API_REGISTRY_WAIT_S": "1",
            "PREDICTOR_SCHEDULER_LEASE_S": "3",
        }
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "predictor", "scheduler", "--port", str(self.port)],
            env=env,
            cwd=PROJECT_ROOT,
            stdout=log.open("w"),
            stderr=subprocess.STDOUT,
        )
        wait_until_ready(f"{self.base}/readyz", timeout=120, process=self.proc)

    def runs(self) -> bool:
        """Whether this process runs the scheduler now (its routes answer rather than stand by)."""
        return httpx.get(f"{self.base}/v1/jobs", timeout=10).status_code == 200

    def post(self, path: str, body: object) -> httpx.Response:
        return httpx.post(f"{self.base}{path}", json=body, headers=AUTH, timeout=30)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()


@pytest.mark.postgres
@pytest.mark.e2e
def test_two_scheduler_processes_one_runs_the_other_takes_over_after_sigkill(postgres_server, tmp_path):
    name = postgres_server.create_database()
    url = postgres_server.url(name)
    home = tmp_path / "home"
    seed_profile(Settings(home=home, store_url=url))
    first = SchedulerProcess(home, url, tmp_path / "first.log")
    second = SchedulerProcess(home, url, tmp_path / "second.log")
    try:
        assert first.runs() and not second.runs()
        standby = httpx.get(f"{second.base}/v1/jobs", timeout=10)
        assert standby.status_code == 503 and "stands by" in standby.json()["detail"]
        assert first.post("/v1/machines/m1/events", {"event": "gained", "platform": "cpu2"}).status_code == 200
        started = first.post(
            "/v1/jobs",
            [
                {"id": "a", "algorithm": "mafft", "features": FEATURES},
                {"id": "b", "algorithm": "mafft", "features": FEATURES},
            ],
        )
        assert started.status_code == 200, started.text
        first.proc.send_signal(signal.SIGKILL)
        first.proc.wait(timeout=30)
        killed = time.monotonic()
        assert eventually(second.runs, timeout=30)
        took = time.monotonic() - killed
        assert took < 3 + 5, (
            f"the standby took {took:.1f} s to take over a lease of 3 s"
        )  # lease time, plus its renewal rhythm
        assert second.post("/v1/jobs/a/events", {"event": "ended", "machine": "m1"}).status_code == 200
        assert second.post("/v1/jobs", {"id": "c", "algorithm": "mafft", "features": FEATURES}).status_code == 200
        second.post("/v1/jobs/b/events", {"event": "ended", "machine": "m1"})
        orders = httpx.get(f"{second.base}/v1/orders", params={"limit": 1000}, timeout=10).json()["orders"]
        starts = Counter(o["job"] for o in orders if o["kind"] == "start")
        assert starts and set(starts) <= {"a", "b", "c"} and max(starts.values()) == 1, starts
        assert starts["a"] == 1 and starts["b"] == 1  # a from the first process, b from the second, each once
        statuses = {j: httpx.get(f"{second.base}/v1/jobs/{j}", timeout=10).json()["status"] for j in "ab"}
        assert statuses == {"a": "done", "b": "done"}
    finally:
        first.stop()
        second.stop()
        postgres_server.drop_database(name)

"""`predictor probe serve-orders`, the probe executor of a site without a resource manager: it runs the scheduler's
probes on its machine through the profile wrapper and kills one at once when the scheduler cancels it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from predictor.settings import PROJECT_ROOT, Settings
from predictor.store import MeasurementStore
from scheduler.processes import group_alive
from serving.app import create_app
from tests.livesrv import Killable, eventually, serve_app
from tests.scheduler.probesite import orders, probe_of, sleep_site
from tests.scheduler.served import AUTH, FEATURES, served_api

pytestmark = pytest.mark.e2e


class Executor(Killable):
    """``predictor probe serve-orders`` for machine m1, as a child process."""

    def __init__(self, settings: Settings, log: Path) -> None:
        self.log = log
        self.state = settings.home / "probe-executor-m1.json"
        self.env = {
            **os.environ,
            "PREDICTOR_HOME": str(settings.home),
            "PYTHONPATH": str(PROJECT_ROOT),
            "PREDICTOR_SITE_CATALOGS": json.dumps([str(p) for p in settings.site_catalogs]),
        }

    def start(self) -> None:
        command = [sys.executable, "-m", "predictor", "probe", "serve-orders", "--machine", "m1", "--interval", "0.3"]
        with self.log.open("a") as out:
            self.proc = subprocess.Popen(command, env=self.env, cwd=PROJECT_ROOT, stdout=out, stderr=subprocess.STDOUT)

    def running(self) -> dict[str, list]:
        return json.loads(self.state.read_text())["running"] if self.state.exists() else {}


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, Settings]]:
    settings, probing = sleep_site(tmp_path)
    with serve_app(create_app(settings, api=served_api(), probing=probing)) as url:
        yield url, settings


def test_the_local_executor_runs_probes_and_kills_one_when_a_real_job_takes_the_machine(served):
    base, settings = served
    store = MeasurementStore(settings.resolved_store_url)
    executor = Executor(settings, settings.home / "executor.log")
    executor.start()
    try:
        gained = httpx.post(
            f"{base}/v1/machines/m1/events", json={"event": "gained", "platform": "cpu1"}, headers=AUTH, timeout=30
        )
        assert gained.status_code == 200 and [o["kind"] for o in gained.json()["orders"]] == ["probe"]
        assert eventually(lambda: probe_of(base, 300) is not None, 60), executor.log.read_text()[-3000:]
        long = probe_of(base, 300)
        assert long is not None
        assert eventually(lambda: str(long["attempt"]) in executor.running(), 30), executor.log.read_text()[-3000:]
        pid = executor.running()[str(long["attempt"])][1]
        assert group_alive(pid)

        answer = httpx.post(
            f"{base}/v1/jobs", json={"id": "real", "algorithm": "mafft", "features": FEATURES}, headers=AUTH, timeout=30
        )
        assert answer.status_code == 200, answer.text
        (cancel,) = orders(base, "cancel_probe")
        (start,) = orders(base, "start")
        assert (
            cancel["attempt"] == long["attempt"]
            and cancel["issued_at"] == start["issued_at"]
            and cancel["seq"] < start["seq"]
        )
        assert eventually(lambda: not group_alive(pid) and str(long["attempt"]) not in executor.running(), 30), (
            "killed at once"
        )
        assert store.measurement(long["job"]) is None

        ended = httpx.post(
            f"{base}/v1/jobs/real/events", json={"event": "ended", "machine": "m1"}, headers=AUTH, timeout=30
        )  # the site ran it
        assert ended.status_code == 200
        assert eventually(
            lambda: probe_of(base, 1) is not None, 30
        )  # before the long one, or now the machine is idle again
        short = probe_of(base, 1)
        assert short is not None and eventually(lambda: store.measurement(short["job"]) is not None, 60), (
            executor.log.read_text()[-3000:]
        )
        measured = store.measurement(short["job"])
        assert (
            measured is not None
            and measured.source.value == "probe"
            and measured.succeeded
            and measured.wall_seconds >= 1.0
        )
        assert eventually(lambda: executor.running() == {}, 30), "its end is reported"
        assert eventually(lambda: _outcomes(store) == {long["job"]: "cancelled", short["job"]: "done"}, 30), _outcomes(
            store
        )
    finally:
        executor.stop()
    store.dispose()


def _outcomes(store: MeasurementStore) -> dict[str, str | None]:
    with store.engine.connect() as conn:
        return dict(conn.exec_driver_sql("SELECT probe, outcome FROM sched_probes").all())

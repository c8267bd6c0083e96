"""Kill -9 the service in the middle of a stream of jobs and events; after a restart nothing is lost or issued twice."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import httpx
import pytest

from predictor.settings import PROJECT_ROOT, Settings
from serving.client import wait_until_ready
from tests.livesrv import Killable, free_port
from tests.scheduler.served import AUTH, FEATURES, TOKEN, seed_profile

JOBS = 90
pytestmark = pytest.mark.e2e


class Server(Killable):
    """``predictor serve`` as a child process that can be killed without warning."""

    def __init__(self, home: Path) -> None:
        self.env = {
            **os.environ,
            "PREDICTOR_HOME": str(home),
            "PREDICTOR_API_TOKEN": TOKEN,
            "PREDICTOR_API_RELOAD_INTERVAL_S": "0",
            "PREDICTOR_API_REGISTRY_WAIT_S": "1",
            "PREDICTOR_SCHEDULER_LEASE_S": "3",
        }  # the restart takes over the killed one's lease after 3 s
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "predictor", "serve", "--port", str(self.port)],
            env=self.env,
            cwd=PROJECT_ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_until_ready(f"{self.base}/readyz", process=self.proc)


def call(method: str, url: str, **kwargs) -> httpx.Response | None:
    """One request; None when the server is not there (down, or killed during the call)."""
    try:
        return httpx.request(method, url, headers=AUTH, timeout=10, **kwargs)
    except httpx.TransportError:
        return None


class ResourceManager(threading.Thread):
    """Reads orders by cursor and reports each started job ended a little later; remembers every order it saw."""

    def __init__(self, base: str) -> None:
        super().__init__(daemon=True)
        self.base = base
        self.cursor = 0
        self.seen: list[dict] = []
        self.running: dict[str, tuple[str, float]] = {}
        self.done: set[str] = set()
        self.halt = threading.Event()

    def run(self) -> None:
        deadline = time.monotonic() + 600  # halted by the test long before
        while not self.halt.is_set() and time.monotonic() < deadline:
            answer = call("GET", f"{self.base}/v1/orders", params={"after": self.cursor})
            if answer is not None and answer.status_code == 200:
                for order in answer.json()["orders"]:
                    self.seen.append(order)
                    self.cursor = order["seq"]
                    if order["kind"] == "start":
                        self.running[order["job"]] = (order["machine"], time.monotonic())
            for job, (machine, since) in list(self.running.items()):
                if time.monotonic() - since > 0.2:
                    reply = call(
                        "POST", f"{self.base}/v1/jobs/{job}/events", json={"event": "ended", "machine": machine}
                    )
                    if reply is not None and reply.status_code in (200, 422):  # 422: its end was already applied
                        del self.running[job]
                        self.done.add(job)
            time.sleep(0.05)


def test_kill_mid_stream_then_restart(tmp_path):
    home = tmp_path / "home"
    seed_profile(Settings(home=home))
    server = Server(home)
    server.start()
    rm = ResourceManager(server.base)
    try:
        for name, platform in (("m1", "cpu1"), ("m2", "cpu2"), ("m3", "cpu2")):
            assert (
                call(
                    "POST", f"{server.base}/v1/machines/{name}/events", json={"event": "gained", "platform": platform}
                ).status_code
                == 200
            )
        rm.start()
        acknowledged: set[str] = set()
        killed = False
        for i in range(JOBS):
            name = f"j{i:03d}"
            deadline = time.monotonic() + 180  # a restart included
            while name not in acknowledged:
                assert time.monotonic() < deadline, f"{name} was not acknowledged within 180 s"
                answer = call(
                    "POST", f"{server.base}/v1/jobs", json={"id": name, "algorithm": "mafft", "features": FEATURES}
                )
                if answer is not None and answer.status_code == 200:
                    acknowledged.add(name)
                elif server.proc.poll() is not None:
                    server.start()  # the crash happened: bring the service back on the same store
                else:
                    time.sleep(0.1)
            if i >= JOBS // 2 and not killed:  # from half way, at the first moment some jobs wait and some run
                statuses = Counter(
                    call("GET", f"{server.base}/v1/jobs/j{k:03d}").json()["status"] for k in range(i + 1)
                )
                if statuses["pending"] > 0 and statuses["running"] > 0:
                    threading.Thread(target=lambda: (time.sleep(0.05), server.kill()), daemon=True).start()
                    killed = True
        deadline = time.monotonic() + 120
        while len(rm.done) < JOBS and time.monotonic() < deadline:
            time.sleep(0.2)
        rm.halt.set()
        rm.join(timeout=10)
        assert killed
        jobs = {
            name: call("GET", f"{server.base}/v1/jobs/{name}").json() for name in (f"j{i:03d}" for i in range(JOBS))
        }
        assert {j["status"] for j in jobs.values()} == {"done"}
        assert all(j["attempts"] == 1 for j in jobs.values())
        every = call("GET", f"{server.base}/v1/orders", params={"limit": 10_000}).json()["orders"]
        assert Counter((o["job"], o["kind"]) for o in every if o["kind"] == "start") == Counter(
            {(n, "start"): 1 for n in jobs}
        )
        assert len({o["seq"] for o in rm.seen}) == len(rm.seen) == len(every)
    finally:
        rm.halt.set()
        server.stop()

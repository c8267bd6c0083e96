"""The bridge on a real Slurm: the scheduler's jobs run on the planned node in the planned order; a SIGKILL of the
bridge mid-stream loses no job and applies no order twice."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from sqlalchemy import create_engine, text

from data.datagen import write_family_fasta
from predictor.settings import PROJECT_ROOT, Settings
from serving.app import create_app
from slurm.settings import SlurmSettings
from tests.livesrv import Killable, eventually, serve_app
from tests.scheduler.served import AUTH, seed_profile, served_api
from tests.slurmserver import SlurmCluster

JOBS = 6
pytestmark = pytest.mark.e2e


@pytest.fixture
def service(tmp_path: Path) -> Iterator[tuple[str, Settings, SlurmSettings, Path]]:
    """The API with its embedded scheduler (estimates from the profile table), a rule file and MAFFT inputs."""
    inputs = tmp_path / "inputs"
    inputs.mkdir()
    rules = tmp_path / "rules.yaml"
    rules.write_text("partitions: {debug: cpu1}\n")
    settings = Settings(home=tmp_path / "home", data_roots=[inputs])
    seed_profile(settings)
    for i in range(JOBS):
        write_family_fasta(
            inputs / f"f{i}.fa", n_sequences=8 + 4 * i, length=120, mutation_rate=0.2, alphabet="protein", seed=i
        )
    slurm = SlurmSettings(rules=rules)
    with serve_app(create_app(settings, api=served_api(), slurm=slurm)) as url:
        yield url, settings, slurm, inputs


class Bridge(Killable):
    """``predictor slurm bridge`` as a child process that can be killed without warning."""

    def __init__(self, cluster: SlurmCluster, settings: Settings, slurm: SlurmSettings, log: Path) -> None:
        self.log = log
        self.env = {
            **os.environ,
            "SLURM_CONF": str(cluster.conf),
            "PREDICTOR_HOME": str(settings.home),
            "PREDICTOR_SLURM_RULES": str(slurm.rules),
            "PYTHONPATH": str(PROJECT_ROOT),
        }

    def start(self) -> None:
        command = [sys.executable, "-m", "predictor", "slurm", "bridge", "--interval", "0.3", "--slots", "1"]
        with self.log.open("a") as out:
            self.proc = subprocess.Popen(command, env=self.env, cwd=PROJECT_ROOT, stdout=out, stderr=subprocess.STDOUT)


def _done(base: str) -> int:
    return len(httpx.get(f"{base}/v1/jobs", params={"status": "done"}, timeout=10).json()["jobs"])


def test_the_bridge_runs_the_plan_on_slurm_and_survives_a_kill(
    slurm_cluster: SlurmCluster, service: tuple[str, Settings, SlurmSettings, Path]
) -> None:
    base, settings, slurm, inputs = service
    bridge = Bridge(slurm_cluster, settings, slurm, settings.home / "bridge.log")
    bridge.start()
    try:
        jobs = [
            {"id": f"b{i}", "algorithm": "mafft", "params": {"input": str(inputs / f"f{i}.fa")}} for i in range(JOBS)
        ]
        answer = httpx.post(f"{base}/v1/jobs", json=jobs, headers=AUTH, timeout=30)
        assert answer.status_code == 200, answer.text
        assert eventually(lambda: _done(base) >= 2, 120)
        bridge.kill()  # mid-stream: jobs held, running and done
        assert _done(base) < JOBS
        bridge.start()
        assert eventually(lambda: _done(base) == JOBS, 180), bridge.log.read_text()[-3000:]
    finally:
        bridge.stop()
    orders = httpx.get(f"{base}/v1/orders", timeout=10).json()["orders"]
    starts = [o for o in orders if o["kind"] == "start"]
    assert sorted(o["job"] for o in starts) == sorted(j["id"] for j in jobs)  # one start each: nothing was redone
    completions = [line for line in slurm_cluster.jobcomp.read_text().splitlines() if " Name=sched-b" in line]
    assert completions, "no bridged job completed in Slurm"
    ran: dict[str, dict[str, str]] = {}
    for line in completions:
        words = dict(w.split("=", 1) for w in line.split() if "=" in w)
        assert words["Name"] not in ran, f"{words['Name']} ran twice in Slurm"
        ran[words["Name"]] = words
    assert {name: w["JobState"] for name, w in ran.items()} == {f"sched-{j['id']}": "COMPLETED" for j in jobs}
    assert all(
        ran[f"sched-{o['job']}"]["NodeList"] == o["machine"] == slurm_cluster.node for o in starts
    )  # the planned node
    started = [ran[f"sched-{o['job']}"]["StartTime"] for o in starts]
    assert started == sorted(started)  # Slurm started them in the order the scheduler did (one slot)
    engine = create_engine(settings.resolved_store_url)
    with engine.connect() as conn:
        outcomes = conn.execute(text("SELECT kind, outcome FROM sched_events")).all()
        measured = conn.execute(text("SELECT count(*) FROM measurements WHERE run_id LIKE 'sched-%'")).scalar_one()
    engine.dispose()
    assert [kind for kind, _ in outcomes].count("ended") == JOBS
    assert not [o for _, o in outcomes if o and o.startswith("rejected")]  # no event sent twice or out of turn
    assert measured == JOBS

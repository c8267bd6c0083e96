"""Idle-time probes on a real Slurm: the bridge runs the scheduler's PROBE orders as Slurm jobs through the profile
wrapper (the measurement lands with source ``probe``) and scancels a probe when a real job takes its node."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from predictor.settings import Settings
from predictor.store import MeasurementStore
from serving.app import create_app
from slurm.settings import SlurmSettings
from tests.livesrv import eventually, serve_app
from tests.scheduler.probesite import orders, probe_of, sleep_site
from tests.scheduler.served import AUTH, served_api
from tests.slurm.test_bridge import Bridge
from tests.slurmserver import SlurmCluster

pytestmark = pytest.mark.e2e


@pytest.fixture
def service(tmp_path: Path) -> Iterator[tuple[str, Settings, SlurmSettings, Path]]:
    """The API with its scheduler probing idle cpu1 machines with two sleeps, and a MAFFT input for real work."""
    (rules := tmp_path / "rules.yaml").write_text("partitions: {debug: cpu1}\n")
    settings, probing = sleep_site(tmp_path)
    slurm = SlurmSettings(rules=rules)
    with serve_app(create_app(settings, api=served_api(), probing=probing, slurm=slurm)) as url:
        yield url, settings, slurm, tmp_path / "inputs"


def test_a_probe_runs_on_slurm_and_is_scancelled_when_a_real_job_comes(slurm_cluster: SlurmCluster, service) -> None:
    base, settings, slurm, inputs = service
    bridge = Bridge(slurm_cluster, settings, slurm, settings.home / "bridge.log")
    bridge.env["PREDICTOR_SITE_CATALOGS"] = json.dumps(
        [str(p) for p in settings.site_catalogs]
    )  # the probe's profile wrapper needs it
    store = MeasurementStore(settings.resolved_store_url)
    bridge.start()
    try:
        assert eventually(lambda: probe_of(base, 300) is not None, 60), bridge.log.read_text()[-3000:]
        long = probe_of(base, 300)
        assert long is not None and long["machine"] == slurm_cluster.node and long["probe"]["cap_s"] == 600
        name = f"predictor-probe-{long['attempt']}"
        assert eventually(lambda: f"{name}|RUNNING" in slurm_cluster.run("squeue", "-h", "--format=%j|%T").stdout, 60)

        answer = httpx.post(
            f"{base}/v1/jobs",
            json={"id": "real", "algorithm": "mafft", "params": {"input": str(inputs / "f.fa")}},
            headers=AUTH,
            timeout=30,
        )
        assert answer.status_code == 200, answer.text
        assert eventually(lambda: httpx.get(f"{base}/v1/jobs/real", timeout=10).json()["status"] == "done", 120), (
            bridge.log.read_text()[-3000:]
        )
        assert eventually(
            lambda: probe_of(base, 1) is not None, 60
        )  # ordered before the long one, or after the real job
        short = probe_of(base, 1)
        assert short is not None and eventually(lambda: store.measurement(short["job"]) is not None, 120), (
            bridge.log.read_text()[-3000:]
        )
    finally:
        bridge.stop()
    (cancel,) = orders(base, "cancel_probe")
    (start,) = orders(base, "start")
    assert (
        cancel["attempt"] == long["attempt"]
        and cancel["issued_at"] == start["issued_at"]
        and cancel["seq"] < start["seq"]
    )
    names = (f"predictor-probe-{short['attempt']}", name, "sched-real")
    assert eventually(lambda: all(f"Name={n} " in slurm_cluster.jobcomp.read_text() for n in names), 30), (
        slurm_cluster.jobcomp.read_text()
    )
    ran = {}
    for line in slurm_cluster.jobcomp.read_text().splitlines():
        words = dict(w.split("=", 1) for w in line.split() if "=" in w)
        ran[words.get("Name")] = words
    assert ran[f"predictor-probe-{short['attempt']}"]["JobState"] == "COMPLETED"
    measured = store.measurement(short["job"])
    assert (
        measured is not None
        and measured.source.value == "probe"
        and measured.succeeded
        and measured.wall_seconds >= 1.0
    )
    assert ran[name]["JobState"] == "CANCELLED", "scancel'ed when the real job came, long before its 300 s"
    assert ran["sched-real"]["JobState"] == "COMPLETED" and ran["sched-real"]["NodeList"] == slurm_cluster.node
    assert store.measurement(long["job"]) is None, "a cancelled probe leaves no measurement"
    assert len(orders(base, "probe")) == 2, (
        "no candidate is left: the long one is not retried on the node that refused it"
    )
    store.dispose()

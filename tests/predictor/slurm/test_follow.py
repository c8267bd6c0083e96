"""``slurm follow``: a real Slurm's completions into the store, tagged by their comments, resumed after a kill."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

from sqlalchemy.exc import OperationalError

from predictor.catalog import Catalog
from predictor.slurm.control import Slurm
from predictor.slurm.follow import Follower
from predictor.slurm.rules import Rules
from predictor.store import MeasurementStore
from tests.conftest import CATALOG_YAML
from tests.livesrv import eventually
from tests.slurmserver import SlurmCluster

PROJECT = Path(__file__).resolve().parents[3]


def _finished(cluster: SlurmCluster, fasta: Path, count: int, name: str) -> list[str]:
    """``count`` tagged jobs run to completion (in the completion log)."""
    jobs = [
        cluster.submit(f"--job-name={name}-{i}", "--comment", f"predictor: algorithm=mafft input={fasta} estimate=2", "--wrap", "true")
        for i in range(count)
    ]
    assert eventually(lambda: all(j in cluster.completions() for j in jobs), 60)
    return jobs


def test_follow_stores_new_completions_once_and_reads_on_from_its_cursor(
    slurm_cluster: SlurmCluster, store: MeasurementStore, catalog: Catalog, fasta: Path, tmp_path: Path
) -> None:
    def follower() -> Follower:
        return Follower(
            slurm_cluster.jobcomp, tmp_path / "cursor.json", store, catalog, Rules(partitions={"debug": "cpu-small"}),
            cluster=slurm_cluster.name, comments=Slurm(str(slurm_cluster.conf)).comments,
        )  # fmt: skip

    first_jobs = _finished(slurm_cluster, fasta, 2, "follow-a")
    first = follower().poll()
    assert first.stored >= 2 and first.duplicates == 0  # earlier tests' untagged jobs are skipped, not stored
    stored = {m.context["slurm_job"]: m for m in store.measurements(successful_only=False)}
    assert set(first_jobs) <= set(stored)
    assert all(stored[j].algorithm == "mafft" and stored[j].params == {"input": str(fasta)} for j in first_jobs)
    assert len(store.live_window("mafft", "cpu-small", 100)) == first.stored  # the tag's estimate, served and kept
    nothing = follower().poll()
    assert (nothing.jobs, nothing.stored) == (0, 0)
    later = _finished(slurm_cluster, fasta, 3, "follow-b")
    restarted = follower().poll()  # a new follower: as after a restart
    assert (restarted.jobs, restarted.stored, restarted.duplicates) == (3, 3, 0)
    ids = [m.context["slurm_job"] for m in store.measurements(successful_only=False)]
    assert sorted(ids) == sorted(set(ids)) and set(later) <= set(ids)


def test_a_killed_follow_process_reads_on_after_a_restart(slurm_cluster: SlurmCluster, fasta: Path, tmp_path: Path) -> None:
    (tmp_path / "catalog.yaml").write_text(CATALOG_YAML)
    (tmp_path / "rules.yaml").write_text("partitions: {debug: cpu-small}\n")
    env = {
        **os.environ, "SLURM_CONF": str(slurm_cluster.conf), "PREDICTOR_HOME": str(tmp_path / "home"), "PYTHONPATH": str(PROJECT),
        "PREDICTOR_CATALOG_PATH": str(tmp_path / "catalog.yaml"), "PREDICTOR_SLURM_RULES": str(tmp_path / "rules.yaml"),
        "PREDICTOR_SLURM_CLUSTER": slurm_cluster.name, "PYTHONUNBUFFERED": "1",
    }  # fmt: skip
    command = [sys.executable, "-m", "predictor", "slurm", "follow", "--log", str(slurm_cluster.jobcomp), "--interval", "0.5"]
    store = MeasurementStore(f"sqlite:///{tmp_path / 'home' / 'store.db'}")

    def tagged() -> int:
        try:
            return sum(m.algorithm == "mafft" for m in store.measurements(successful_only=False))
        except OperationalError:  # the follower has not created the store yet
            return 0

    first = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        jobs = _finished(slurm_cluster, fasta, 2, "kill-a")
        assert eventually(lambda: tagged() >= 2, 300)  # a loaded machine may take minutes to start the command
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=30)
    before = tagged()
    jobs += _finished(slurm_cluster, fasta, 2, "kill-b")
    second = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    said: list[str] = []  # its lines as they come: it stores a poll's runs, then reports them

    def read() -> None:
        for line in second.stdout:
            said.append(line)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:  # it read on from its cursor, not from the log's start
        assert eventually(lambda: any("2 jobs: 2 stored, 0 already stored" in line for line in said), 300), said
    finally:
        second.terminate()
        second.wait(timeout=30)
        reader.join(timeout=30)
    assert tagged() == before + 2
    ids = [m.context["slurm_job"] for m in store.measurements(successful_only=False)]
    assert set(jobs) <= set(ids) and len(ids) == len(set(ids))
    store.dispose()

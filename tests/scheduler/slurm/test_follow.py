"""``slurm follow``: a real Slurm's completions into the store, tagged by their comments, resumed after a kill."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

from predictor.atomic import read_state
from predictor.catalog import Catalog
from predictor.store import MeasurementStore
from predictor.store.job_history import JobHistory
from scheduler.slurm.control import Slurm
from scheduler.slurm.follow import Cursor, Follower
from scheduler.slurm.rules import Rules
from tests.conftest import CATALOG_YAML
from tests.livesrv import eventually
from tests.slurmserver import SlurmCluster

PROJECT = Path(__file__).resolve().parents[3]
REPORT = re.compile(r"(\d+) jobs: (\d+) stored, (\d+) already stored")


def _finished(cluster: SlurmCluster, fasta: Path, count: int, name: str) -> list[str]:
    """``count`` tagged jobs run to completion (in the completion log)."""
    jobs = [
        cluster.submit(
            f"--job-name={name}-{i}",
            "--comment",
            f"predictor: algorithm=mafft input={fasta} estimate=2",
            "--wrap",
            "true",
        )
        for i in range(count)
    ]
    assert eventually(lambda: all(j in cluster.completions() for j in jobs), 60)
    return jobs


def test_follow_stores_new_completions_once_and_reads_on_from_its_cursor(
    slurm_cluster: SlurmCluster, store: MeasurementStore, catalog: Catalog, fasta: Path, tmp_path: Path
) -> None:
    def follower() -> Follower:
        return Follower(
            slurm_cluster.jobcomp,
            tmp_path / "cursor.json",
            store,
            catalog,
            Rules(partitions={"debug": "cpu-small"}),
            cluster=slurm_cluster.name,
            comments=Slurm(str(slurm_cluster.conf)).comments,
        )

    first_jobs = _finished(slurm_cluster, fasta, 2, "follow-a")
    first = follower().poll()
    assert first.stored >= 2 and first.duplicates == 0  # earlier tests' untagged jobs are skipped, not stored
    stored = {m.context["slurm_job"]: m for m in store.measurements(successful_only=False)}
    assert set(first_jobs) <= set(stored)
    assert all(stored[j].algorithm == "mafft" and stored[j].params == {"input": str(fasta)} for j in first_jobs)
    served = list(store.live_window("mafft", "cpu-small", 100)["run_id"])  # the tag's estimate, served and kept
    assert all(any(f"-{job}-" in run for run in served) for job in first_jobs), served  # (earlier tests' jobs vary)
    nothing = follower().poll()
    assert (nothing.jobs, nothing.stored) == (0, 0)
    later = _finished(slurm_cluster, fasta, 3, "follow-b")
    restarted = follower().poll()  # a new follower: as after a restart
    assert (restarted.jobs, restarted.stored, restarted.duplicates) == (3, 3, 0)
    rows = _rows_per_job(store)  # each of its jobs once; an earlier test's requeued job once per logged completion
    logged = Counter(re.findall(r"JobId=(\d+)", slurm_cluster.jobcomp.read_text()))
    assert all(rows[job] == 1 for job in first_jobs + later), rows
    assert all(n <= logged[job] for job, n in rows.items()), (rows, logged)


def _rows_per_job(store: MeasurementStore) -> Counter[str]:
    """How many stored rows each Slurm job has (a run stored twice would count 2)."""
    return Counter(m.context["slurm_job"] for m in store.measurements(successful_only=False))


def _reports(said: list[str]) -> list[tuple[int, int, int]]:
    """The (jobs, stored, already stored) of each pass a follower reported."""
    return [(int(m[1]), int(m[2]), int(m[3])) for m in map(REPORT.search, list(said)) if m]


def test_a_killed_follow_process_reads_on_after_a_restart(
    slurm_cluster: SlurmCluster, store: MeasurementStore, store_url: str, fasta: Path, tmp_path: Path
) -> None:
    """Killed at whatever point of a pass, restarted, it reads on from its saved cursor and every job is stored once.

    The session's log holds earlier tests' tagged jobs, and the kill may land between a pass's commit and its cursor's
    write: what the restart re-reads depends on timing, so the test checks the saved cursor and the store's rows.
    """
    (tmp_path / "catalog.yaml").write_text(CATALOG_YAML)
    (tmp_path / "rules.yaml").write_text("partitions: {debug: cpu-small}\n")
    cursor_path = tmp_path / "home" / "slurm-follow.json"
    env = {
        **os.environ,
        "SLURM_CONF": str(slurm_cluster.conf),
        "PREDICTOR_HOME": str(tmp_path / "home"),
        "PYTHONPATH": str(PROJECT),
        "PREDICTOR_STORE_URL": store_url,
        "PREDICTOR_CATALOG_PATH": str(tmp_path / "catalog.yaml"),
        "PREDICTOR_SLURM_RULES": str(tmp_path / "rules.yaml"),
        "PREDICTOR_SLURM_CLUSTER": slurm_cluster.name,
        "PYTHONUNBUFFERED": "1",
    }
    command = [
        sys.executable,
        "-m",
        "predictor",
        "slurm",
        "follow",
        "--log",
        str(slurm_cluster.jobcomp),
        "--interval",
        "0.5",
    ]

    first = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        stored_first = _finished(slurm_cluster, fasta, 2, "kill-a")
        # its own jobs, not earlier tests' tagged ones it may store first; a loaded machine may take minutes to start it
        assert eventually(lambda: set(stored_first) <= set(_rows_per_job(store)), 300)
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=30)
    cursor = read_state(cursor_path, Cursor)  # what it saved before the kill: before or after the pass that stored them
    stored_second = _finished(slurm_cluster, fasta, 2, "kill-b")
    with slurm_cluster.jobcomp.open("rb") as fh:
        fh.seek(cursor.offset)
        after_cursor = len(fh.read().splitlines())
    second = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    said: list[str] = []  # its lines as they come: it stores a pass's runs, then reports them

    def read() -> None:
        for line in second.stdout or ():
            said.append(line)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        assert eventually(lambda: sum(r[1] for r in _reports(said)) >= 2, 300), said
    finally:
        second.terminate()
        second.wait(timeout=30)
        reader.join(timeout=30)
    jobs, stored, _ = (sum(column) for column in zip(*_reports(said), strict=True))
    assert stored == 2, (
        said
    )  # kill-b's jobs; kill-a's, if read again (a kill between commit and cursor), were not stored again
    assert 2 <= jobs <= after_cursor, (said, after_cursor)  # it read on from its saved cursor, not from the log's start
    rows = _rows_per_job(store)
    assert all(rows[job] == 1 for job in stored_first + stored_second), rows
    # an earlier test's job requeued (the resource guard's) ended twice: one row per completion the log holds
    logged = Counter(re.findall(r"JobId=(\d+)", slurm_cluster.jobcomp.read_text()))
    assert all(n <= logged[job] for job, n in rows.items()), (rows, logged)


def test_follow_records_the_queue_as_its_users_history_and_their_ends_after(
    slurm_cluster: SlurmCluster, store: MeasurementStore, catalog: Catalog, tmp_path: Path
) -> None:
    """Issue 29: a waiting and a running job count as their user's submissions and running job at once, as the replay
    counts them; once they end, their ends are read from the completion log."""
    slurm = Slurm(str(slurm_cluster.conf))
    follower = Follower(
        slurm_cluster.jobcomp,
        tmp_path / "cursor.json",
        store,
        catalog,
        Rules(),
        cluster="q",
        comments=slurm.comments,
        queue=slurm.queue,
    )
    follower.poll()  # earlier tests' jobs, ended: the history this test counts from
    user = slurm_cluster.run("id", "-un").stdout.strip()
    history = JobHistory(store.engine)
    before = history.user_state("q", user, datetime.now(UTC))
    running = slurm_cluster.submit("--time=5", "--wrap", "sleep 300")
    waiting = slurm_cluster.submit("--hold", "--time=5", "--wrap", "true")
    slurm_cluster.wait_state(running, ("RUNNING",))
    try:
        follower.poll()
        now = history.user_state("q", user, datetime.now(UTC))
        assert (now.submitted, now.running, now.finished) == (before.submitted + 2, before.running + 1, before.finished)
    finally:
        slurm_cluster.run("scancel", running, waiting)
    assert eventually(lambda: {running, waiting} <= set(slurm_cluster.completions()), 60)
    follower.poll()
    after = history.user_state("q", user, datetime.now(UTC))
    assert (after.submitted, after.running, after.finished) == (
        before.submitted + 2,
        before.running,
        before.finished + 1,
    )

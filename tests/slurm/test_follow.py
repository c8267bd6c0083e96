"""``slurm follow``: a real Slurm's completions into the store, tagged by their comments, resumed after a kill."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

from typer.testing import CliRunner

from cli.app import app
from predictor.atomic import read_state
from predictor.catalog import Catalog
from predictor.store import MeasurementStore
from predictor.store.job_history import JobHistory
from slurm.control import Slurm
from slurm.follow import Cursor, Follower
from slurm.rules import Rules
from tests.conftest import CATALOG_YAML
from tests.livesrv import eventually
from tests.slurm.conftest import readable
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
            slurmctld=Slurm(str(slurm_cluster.conf)).held,
            inputs=readable(tmp_path),
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
        "PREDICTOR_DATA_ROOTS": json.dumps([str(tmp_path)]),
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
        slurmctld=slurm.held,
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


def _completion(job: int, **fields: str) -> str:
    """A completion line as Slurm 22.05 writes it, ``fields`` replacing its values."""
    values = {
        "Name": "align-x",
        "JobState": "COMPLETED",
        "TimeLimit": "5",
        "StartTime": "2026-03-01T10:00:00",
        "EndTime": "2026-03-01T10:01:00",
        "SubmitTime": "2026-03-01T09:59:00",
        **fields,
    }
    return (
        f"JobId={job} UserId=ana(1001) GroupId=lab(100) Name={values['Name']} JobState={values['JobState']} "
        f"Partition=debug TimeLimit={values['TimeLimit']} StartTime={values['StartTime']} EndTime={values['EndTime']} "
        "NodeList=n1 NodeCnt=1 ProcCnt=1 WorkDir=/w ReservationName= Tres=cpu=1,mem=1000M,node=1 Account= QOS= WcKey= "
        f"Cluster=c SubmitTime={values['SubmitTime']} EligibleTime={values['SubmitTime']} DerivedExitCode=0:0 "
        "ExitCode=0:0 \n"
    )


def test_a_pass_sets_bad_completion_lines_aside_and_stores_the_rest(
    runner: CliRunner, tmp_path: Path, fasta: Path
) -> None:
    """Issue 41: `slurm follow --once` over 400-digit limits, dates of year 1 and 9999 and an end before its start:
    those lines are rejected with their field and why (no traceback), the good ones stored, the cursor moved on."""
    (tmp_path / "rules.yaml").write_text(
        f"partitions: {{debug: cpu1}}\nrules: [{{name: 'align-*', algorithm: mafft, params: {{input: {fasta}}}}}]\n"
    )
    log = tmp_path / "jobcomp.txt"
    log.write_text(
        _completion(1)
        + _completion(2, TimeLimit="9" * 400)
        + _completion(3, StartTime="0001-01-01T00:00:00", SubmitTime="0001-01-01T00:00:00")
        + _completion(4, EndTime="9999-12-31T23:59:59")
        + _completion(5, EndTime="2026-03-01T09:00:00")
        + _completion(6)
    )
    env = {
        "PREDICTOR_SLURM_RULES": str(tmp_path / "rules.yaml"),
        "PREDICTOR_DATA_ROOTS": json.dumps([str(tmp_path)]),
        "SLURM_CONF": str(tmp_path / "no-slurm.conf"),  # squeue fails: the pass goes on without it
    }
    done = runner.invoke(app, ["slurm", "follow", "--once", "--log", str(log)], env=env)
    assert done.exit_code == 0, done.output
    assert "Traceback" not in done.output
    assert "6 jobs" not in done.output and "2 jobs: 2 stored" in done.output
    for line, field in ((2, "TimeLimit"), (3, "StartTime"), (4, "EndTime"), (5, "EndTime")):
        assert f"line {line}, {field}:" in done.output

"""Slurm jobs as their users' history (issue 29): every job but the excluded, censored as the literature counts them,
and a job class's runs stored with the history features of their submit time."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from predictor.catalog import Catalog, load_catalog
from predictor.store import MeasurementStore
from predictor.store.job_history import JobHistory
from slurm import ingest
from slurm.ingest import ingest_slurm
from slurm.rules import Exclude, Rules
from slurm.submit_history import Submission, submit_features
from tests.conftest import CATALOG_YAML
from tests.slurm.test_ingest import _sacct

LATER = datetime(2026, 3, 2, tzinfo=UTC)


def test_every_ended_job_is_its_users_history_and_an_excluded_users_is_not(
    tmp_path: Path, store: MeasurementStore, catalog: Catalog, fasta: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = _sacct(
        tmp_path,
        [
            {"JobID": "1", "JobName": "unmapped"},  # 60 s, ended 10:01
            {
                "JobID": "2",
                "State": "TIMEOUT",
                "Elapsed": "00:10:40",
                "Start": "2026-03-01T10:02:00",
                "End": "2026-03-01T10:12:40",
            },
            {
                "JobID": "3",
                "State": "CANCELLED by 7",
                "Elapsed": "00:00:00",
                "Start": "None",
                "End": "2026-03-01T10:03:00",
            },
            {
                "JobID": "4",
                "State": "FAILED",
                "ExitCode": "1:0",
                "Start": "2026-03-01T10:20:00",
                "End": "2026-03-01T10:20:30",
            },
            {"JobID": "5", "State": "RUNNING", "End": "Unknown"},  # running as sacct ran: recorded so, its end to come
            {"JobID": "6", "User": "eve", "Comment": f"predictor: algorithm=mafft input={fasta.name}"},
            {"JobID": "7", "Account": "secret"},
            {
                "JobID": "8",
                "Account": "a" * 300,
            },  # more than its column holds: left out of the history, said in a warning
            {"JobID": "9", "JobName": "n" * 300},  # a long name is cut
        ],
    )
    rules = Rules(
        partitions={"debug": "cpu-small"}, exclude=Exclude(users=frozenset({"eve"}), accounts=frozenset({"secret"}))
    )
    report = ingest_slurm(path, store, catalog, rules, file_format="sacct", cluster="c1")
    assert report.stored == 0 and [s.message for s in report.skipped].count("excluded by the rule file") == 2
    history = JobHistory(store.engine)
    ana = history.user_state("c1", "ana", LATER)
    assert (ana.submitted, ana.finished, ana.running) == (6, 4, 1)  # the cancelled job a submission only; 5 running
    assert list(ana.recent) == [30.0, 600.0, 60.0]  # newest end first: the timeout censored at its 10 min limit
    assert "job 8 is not recorded as history: job slurm-c1-8: account: " in caplog.text
    assert history.user_state("c1", "eve", LATER).submitted == 0  # nothing of an excluded user is kept
    ingest_slurm(path, store, catalog, rules, file_format="sacct", cluster="c1")
    assert history.user_state("c1", "ana", LATER) == ana  # imported twice: recorded once


CLASSES = "  c1-debug:\n    parameters: {}\n    implementations: {cpu-small: {}}\n"


def test_a_job_class_run_is_stored_with_the_features_of_its_submit_time(
    tmp_path: Path, store: MeasurementStore
) -> None:
    (tmp_path / "catalog.yaml").write_text(CATALOG_YAML + CLASSES)
    catalog = load_catalog(tmp_path / "catalog.yaml")
    path = _sacct(
        tmp_path,
        [
            {"JobID": "11", "JobName": "first", "ReqCPUS": "4"},
            {
                "JobID": "12",
                "JobName": "second",
                "Submit": "2026-03-01T10:05:00",
                "Start": "2026-03-01T10:05:00",
                "End": "2026-03-01T10:06:00",
            },
            {
                "JobID": "13",
                "Partition": "other",
            },  # no class of its partition, none of the cluster: history only (after 11: seq)
        ],
    )
    report = ingest_slurm(path, store, catalog, Rules(), file_format="sacct", cluster="c1")
    assert report.stored == 2 and [s.message for s in report.skipped] == [
        "no rule or predictor: words name its algorithm"
    ]
    runs = {m.context["slurm_job"]: m for m in store.measurements(successful_only=False)}
    assert {(m.algorithm, m.platform) for m in runs.values()} == {("c1-debug", "cpu-small")}
    first, second = runs["11"].features, runs["12"].features
    assert (first["history.finished_jobs"], first["request.time"], first["request.procs"], first["history.last1"]) == (
        0,
        600,
        4,
        600,
    )
    assert (second["history.finished_jobs"], second["history.last1"], second["user.submitted_jobs"]) == (
        2,
        60,
        2,
    )  # 11 and 13
    submitted = datetime(2026, 3, 1, 10, 5, tzinfo=UTC).astimezone()
    asked = Submission(cluster="c1", user="ana", submit=submitted, time_limit_s=600.0, procs=1, seq=12)
    assert second == submit_features(
        JobHistory(store.engine), asked, submitted.tzinfo
    )  # what the route computes, at that time


def test_an_import_streamed_in_chunks_gives_each_class_run_the_features_of_its_submit_time(
    tmp_path: Path, store: MeasurementStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 41: a file of 1,200 jobs of three users, interleaved and overlapping, read 100 lines at a time: its runs are
    those of a one-piece read (every job known before any run's features), each run's features what the route computes
    for it one by one, and the history features of a user's runs read in one pass per chunk."""
    (tmp_path / "catalog.yaml").write_text(CATALOG_YAML + CLASSES)
    catalog = load_catalog(tmp_path / "catalog.yaml")
    rng = random.Random(10)
    start = datetime(2026, 3, 1, 8, 0, tzinfo=UTC)
    rows = []
    for i in range(1200):
        submit = start + timedelta(seconds=20 * i + rng.randint(0, 5))
        begin = submit + timedelta(seconds=rng.randint(0, 120))
        run = rng.randint(30, 1800)
        rows.append(
            {
                "JobID": str(100 + i),
                "User": rng.choice(["ana", "bo", "cy"]),
                "Submit": submit.replace(tzinfo=None).isoformat(),
                "Start": begin.replace(tzinfo=None).isoformat(),
                "End": (begin + timedelta(seconds=run)).replace(tzinfo=None).isoformat(),
                "Elapsed": f"00:{run // 60:02d}:{run % 60:02d}",
                "ReqCPUS": str(rng.randint(1, 8)),
            }
        )
    path = _sacct(tmp_path, rows)
    monkeypatch.setattr(ingest, "CHUNK_LINES", 100)
    report = ingest_slurm(path, store, catalog, Rules(), file_format="sacct", cluster="c1")
    assert (report.rows, report.stored, report.rejected) == (1200, 1200, [])
    runs = {m.context["slurm_job"]: m for m in store.measurements(successful_only=False)}
    history = JobHistory(store.engine)
    for row in rng.sample(rows, 60):
        submitted = datetime.fromisoformat(row["Submit"]).astimezone()
        asked = Submission("c1", row["User"], submitted, 600.0, int(row["ReqCPUS"]), seq=int(row["JobID"]))
        assert runs[row["JobID"]].features == submit_features(history, asked, submitted.tzinfo), row["JobID"]

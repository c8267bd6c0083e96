"""Live history features: on a real log recorded in the store they equal the replay's, and nothing later leaks in."""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from data.swf_ingest import history_records
from features.history import FEATURE_NAMES, history_features
from features.swf import SwfJob, SwfLog, read_swf
from predictor.store import MeasurementStore
from predictor.store.job_history import JobHistory, JobRecord
from slurm.submit_history import Submission, submit_features
from tests.traces import trace

SAMPLE = 2_000


def submission(log: SwfLog, job: SwfJob) -> Submission:
    """The job as the service is asked about it at its submit time."""
    return Submission(
        cluster=log.name,
        user=str(job.user),
        submit=datetime.fromtimestamp(log.start_time + job.submit, UTC),
        time_limit_s=None if job.requested_time == -1 else job.requested_time,
        procs=job.procs,
        seq=job.line,
    )


def sample(log: SwfLog, rng: random.Random) -> list[int]:
    """Every job of a small log; of a larger one, a seeded sample with every job that shares its submit time."""
    if len(log.jobs) <= SAMPLE:
        return list(range(len(log.jobs)))
    at_once = Counter(j.submit for j in log.jobs)
    tied = [i for i, j in enumerate(log.jobs) if at_once[j.submit] > 1]
    return sorted(set(rng.sample(range(len(log.jobs)), SAMPLE)) | set(rng.sample(tied, min(len(tied), SAMPLE // 4))))


@pytest.mark.parametrize("name", ["hpc2n.swf", "wagap-2013.swf"])
def test_live_features_equal_the_replay_on_a_real_log(store: MeasurementStore, name: str) -> None:
    log = read_swf(trace(name))
    history = JobHistory(store.engine)
    assert history.record(history_records(log)) == len(log.jobs)
    replay = history_features(log.jobs, log.start_time, log.timezone)
    checked = sample(log, random.Random(29))
    at_once = Counter(j.submit for j in log.jobs)
    ties = sum(1 for i in checked if at_once[log.jobs[i].submit] > 1)
    assert len(checked) >= min(len(log.jobs), SAMPLE) and ties > 100
    for i in checked:
        live = submit_features(history, submission(log, log.jobs[i]), log.timezone)
        assert live == replay[i], f"line {log.jobs[i].line}"
    assert any(set(replay[i]) == set(FEATURE_NAMES) and replay[i]["history.finished_jobs"] > 3 for i in checked)


def moved(rec: JobRecord, after: datetime, rng: random.Random) -> JobRecord:
    """The record with every time later than ``after`` moved to another time still later than it."""

    def move(t: datetime | None) -> datetime | None:
        return t if t is None or t <= after else after + timedelta(seconds=rng.randint(1, 10**6))

    start, end = move(rec.start_at), move(rec.end_at)
    if start is not None and end is not None and end < start:
        start, end = end, start
    return replace(rec, start_at=start, end_at=end)


def test_nothing_that_ended_after_the_submit_changes_a_feature(store: MeasurementStore) -> None:
    """Ends and starts after the submit moved, jobs submitted later added or removed: a job's features stay."""
    log = read_swf(trace("hpc2n.swf"))
    rng = random.Random(7)
    records = history_records(log)
    picked = rng.sample(range(len(log.jobs)), 40)
    history = JobHistory(store.engine)
    history.record(records)
    base = {i: submit_features(history, submission(log, log.jobs[i]), log.timezone) for i in picked}
    for i in picked[:10]:
        ask = submission(log, log.jobs[i])
        altered = [moved(r, ask.submit, rng) for r in records if r.submit_at <= ask.submit]
        later = [
            replace(
                r,
                key=f"extra-{r.key}",
                submit_at=ask.submit + timedelta(seconds=rng.randint(1, 10**5)),
                start_at=None,
                end_at=None,
            )
            for r in records[:200]
        ]
        with store.engine.begin() as conn:
            conn.exec_driver_sql("DELETE FROM job_history")
        history.record([*altered, *later])  # jobs submitted after it removed, others added, ends moved
        assert submit_features(history, ask, log.timezone) == base[i], f"line {log.jobs[i].line}"
        ends = [r for r in altered if r.end_at is not None and r.end_at > ask.submit]
        assert ends, "the check moved no end"

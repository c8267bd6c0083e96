"""The job history: idempotent recording that fills in starts and ends, and a user's state read back at an instant."""

from __future__ import annotations

import random
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from unittest.mock import ANY

import pytest
from alembic import command
from alembic.config import Config

from features.history import UserHistory
from predictor.store import MeasurementStore
from predictor.store.job_history import JobHistory, JobRecord
from predictor.store.store import MIGRATIONS

T0 = datetime(2024, 1, 1, tzinfo=UTC)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def rec(
    key: str, submit: float, start: float | None = None, end: float | None = None, user: str = "ann", **kw
) -> JobRecord:
    """A job of cluster c1 submitted, started and ended at seconds after T0."""
    return JobRecord(
        key=key,
        cluster=kw.pop("cluster", "c1"),
        user=user,
        submit_at=at(submit),
        seq=kw.pop("seq", 0),
        start_at=None if start is None else at(start),
        end_at=None if end is None else at(end),
        **kw,
    )


def state(history: JobHistory, seconds: float, user: str = "ann", before_seq: int | None = None) -> UserHistory:
    return history.user_state("c1", user, at(seconds), before_seq)


def test_recording_is_idempotent_and_fills_in_start_and_end(store: MeasurementStore) -> None:
    history = JobHistory(store.engine)
    submitted = rec("j1", 0, min_cpus=4, time_limit_s=600, partition="batch")
    assert history.record([submitted, rec("j2", 5)]) == 2
    assert history.record([submitted]) == 0
    assert state(history, 100).running == 0
    assert history.record([rec("j1", 0, start=10), rec("j1", 0, start=10)]) == 0  # started: repeated in one batch too
    assert (state(history, 100).running, state(history, 100).running_procs) == (1, 4)
    history.record([rec("j1", 0, start=10, end=70, state="COMPLETED")])
    later = state(history, 100)
    assert (later.submitted, later.running, later.finished, list(later.recent)) == (2, 0, 1, [60.0])
    history.record([rec("j1", 0)])  # a record knowing less erases nothing
    assert list(state(history, 100).recent) == [60.0]
    with store.engine.connect() as conn:
        rows = conn.exec_driver_sql(
            "SELECT key, min_cpus, time_limit_s, partition, state FROM job_history ORDER BY key"
        ).all()
    assert [tuple(r) for r in rows] == [("j1", 4, 600.0, "batch", "COMPLETED"), ("j2", None, None, None, None)]


def test_user_state_counts_only_what_was_known_at_the_instant(store: MeasurementStore) -> None:
    history = JobHistory(store.engine)
    history.record(
        [
            rec("a", 0, start=10, end=110, min_cpus=2),  # finished at 110
            rec("b", 50, start=50, end=80),  # finished at 80
            rec("c", 100, start=105, end=125, min_cpus=4),
            rec("d", 100, start=None, end=101),  # cancelled before it started: a submission only
            rec("e", 130, start=131, min_cpus=8),  # still running (no end yet)
            rec("z", 0, start=0, end=1, user="bob"),  # another user
            rec("y", 0, start=0, end=1, cluster="c2"),  # another cluster
        ]
    )
    s = state(history, 100)
    assert (s.submitted, s.last_submit, s.running, s.running_procs, s.finished, s.finished_total, list(s.recent)) == (
        4,
        at(100).timestamp(),
        1,
        2,
        1,
        30.0,
        [30.0],
    )
    s = state(history, 100, before_seq=0)  # c and d have seq 0: not before a job of seq 0 submitted at 100
    assert (s.submitted, s.last_submit) == (2, at(50).timestamp())
    s = state(history, 200)
    assert (s.submitted, s.running, s.running_procs, s.finished, s.finished_total, list(s.recent)) == (
        5,
        1,
        8,
        3,
        150.0,
        [20.0, 100.0, 30.0],
    )
    assert state(history, -1) == UserHistory()
    assert history.first_submit("c1") == at(0) and history.first_submit("nowhere") is None


def test_naive_times_are_refused(store: MeasurementStore) -> None:
    with pytest.raises(ValueError, match="timezone"):
        JobRecord(key="k", cluster="c", user="u", submit_at=datetime(2024, 1, 1), seq=1)
    with pytest.raises(ValueError, match="timezone"):
        JobHistory(store.engine).user_state("c", "u", datetime(2024, 1, 1))


@pytest.mark.parametrize(
    ("field", "value", "problem"),
    [
        ("user", "u" * 201, "over the store's limit of 200"),
        ("work_dir", "/a\x00b", "NUL"),
        ("min_cpus", 2**63, "64-bit"),
    ],
)
def test_a_value_the_table_cannot_hold_is_refused_by_name(field: str, value: object, problem: str) -> None:
    with pytest.raises(ValueError, match=f"job k: {field}: .*{problem}"):
        JobRecord(**{"key": "k", "cluster": "c", "user": "u", "submit_at": T0, "seq": 1, field: value})  # type: ignore[arg-type]


def _random_jobs(rng: random.Random, count: int) -> list[JobRecord]:
    """Jobs of three users of c1 (and one of c2) submitted over an hour, many at the same second (ordered by their
    ``seq``, as Slurm numbers them); most ended, some running, some cancelled before they started."""
    records = []
    for i in range(count):
        submit = float(rng.randint(0, 3600))
        start = None if rng.random() < 0.1 else submit + rng.randint(0, 60)
        end = None if start is None or rng.random() < 0.15 else start + rng.randint(0, 900)
        user = rng.choice(["ann", "bob", "cy"])
        records.append(rec(f"j{i}", submit, start, end, user=user, seq=i, min_cpus=rng.randint(1, 8)))
    records.append(rec("x", 10, 10, 20, user="ann", cluster="c2"))
    return records


def test_a_users_state_is_their_summary_after_everything_and_one_pass_before(store: MeasurementStore) -> None:
    """Issue 41: after all a user's recorded instants, their state is the summary row kept as jobs are recorded (one
    row, whatever their number of jobs); at earlier instants, :meth:`JobHistory.user_states` reads the same states as
    :meth:`JobHistory.user_state` in one pass over the user's rows."""
    rng = random.Random(41)
    history = JobHistory(store.engine)
    records = _random_jobs(rng, 400)
    history.record(records[:250])
    history.record(records[250:])
    history.record(
        [replace(r, end_at=r.start_at + timedelta(seconds=5)) for r in records[:30] if r.start_at and not r.end_at]
    )
    history.record([replace(records[0], user="dee")])  # a key given to another user: both summed again
    with store.engine.connect() as conn:
        summed = dict(
            conn.exec_driver_sql("SELECT \"user\", submitted FROM job_history_users WHERE cluster = 'c1'").all()
        )
    assert summed == {"ann": ANY, "bob": ANY, "cy": ANY, "dee": 1} and sum(summed.values()) == 400
    instants = [(at(rng.uniform(-10, 5000)), rng.choice([None, 0, 100, 300])) for _ in range(300)]
    instants += [(at(r.submit_at.timestamp() - T0.timestamp()), rng.choice([None, r.seq])) for r in records[:100]]
    for user in ("ann", "bob", "cy", "dee", "nobody"):
        swept = history.user_states("c1", user, instants)
        assert swept == [history.user_state("c1", user, t, seq) for t, seq in instants], user
        after = at(10_000)
        assert history.user_state("c1", user, after) == history.user_states("c1", user, [(after, None)])[0]


def test_the_summaries_of_jobs_recorded_before_them_are_made_by_the_migration(store: MeasurementStore) -> None:
    """Issue 41: a store of revision 0011 (jobs recorded, no summaries) migrated: each user's summary is the count."""
    history = JobHistory(store.engine)
    history.record(_random_jobs(random.Random(7), 200))
    expected = {user: history.user_state("c1", user, at(10_000)) for user in ("ann", "bob", "cy")}
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS).replace("%", "%%"))
    with store.engine.connect() as conn:
        config.attributes["connection"] = conn
        command.downgrade(config, "0011")
        conn.commit()
    store.migrate()
    with store.engine.connect() as conn:
        assert conn.exec_driver_sql("SELECT count(*) FROM job_history_users").scalar() == 4
    assert {user: history.user_state("c1", user, at(10_000)) for user in expected} == expected

"""The job history of a site: every job submitted, started and ended, read back as a user's state at an instant.

Slurm accounting, ``slurm follow`` and the SWF import write jobs here (:meth:`JobHistory.record`); the service reads
a user's state at a job's submit time (:meth:`JobHistory.user_state`), from which
:func:`features.history.features_at` computes the same history features the SWF replay computes.

Each record also keeps its users' summary (``job_history_users``: their counts, sums and latest run times as of their
latest recorded instant), so a user's state at any later instant (a job submitted now) is one row, whatever their
number of jobs. A state at an earlier instant is a few indexed queries on the user's rows; the states of many jobs of
one user (an import of their accounting) are one pass over those rows (:meth:`JobHistory.user_states`).
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, fields, replace
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Connection,
    Engine,
    Float,
    Row,
    and_,
    bindparam,
    case,
    func,
    or_,
    select,
    text,
    true,
    union_all,
)

from features.history import LAST, UserHistory
from predictor.store.limits import column_problem
from predictor.store.store import AnySelect, dialect_insert
from predictor.store.tables import job_history as table
from predictor.store.tables import job_history_users as users

CHUNK = 500
# New rows after which PostgreSQL gathers statistics at once: without them it reads a user's rows through the
# (cluster, submit_at) index, scanning the whole cluster (5 times slower on a 3,000-job log, worse as it grows).
ANALYZE_AFTER = 1_000
_TIMES = ("submit_at", "start_at", "end_at")


@dataclass(frozen=True)
class JobRecord:
    """One job of a site as its scheduler tells it (Slurm's ``job_desc`` names); None where unknown or not yet.

    ``key`` makes recording idempotent (a later record of the same key fills in what it knows); ``seq`` orders jobs
    submitted at the same instant (a log's line). Times are timezone-aware.
    """

    key: str
    cluster: str
    user: str
    submit_at: datetime
    seq: int
    group: str | None = None
    account: str | None = None
    partition: str | None = None
    qos: str | None = None
    name: str | None = None
    time_limit_s: float | None = None
    min_cpus: int | None = None
    min_nodes: int | None = None
    pn_min_memory_mb: int | None = None
    array_inx: str | None = None
    work_dir: str | None = None
    start_at: datetime | None = None
    end_at: datetime | None = None
    state: str | None = None

    def __post_init__(self) -> None:
        """ValueError naming the field when a time has no timezone or a value does not fit its column."""
        for name in _TIMES:
            value = getattr(self, name)
            if value is not None and value.tzinfo is None:
                raise ValueError(f"job {self.key[:200]}: {name} has no timezone")
        for f in fields(self):
            if (problem := column_problem(table.c[f.name], getattr(self, f.name))) is not None:
                raise ValueError(f"job {self.key[:200]}: {f.name}: {problem}")


class JobHistory:
    """Reads and writes the ``job_history`` table (its one owner) through the measurement store's engine."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def record(self, records: Iterable[JobRecord]) -> int:
        """Store jobs, one row per key: a record of a stored key fills in the fields it knows (a start, an end, a
        state) and never erases one; how many keys were new. On PostgreSQL a bulk import ends with ``ANALYZE``."""
        merged: dict[str, JobRecord] = {}
        for rec in records:
            merged[rec.key] = _merge(merged[rec.key], rec) if rec.key in merged else rec
        if not merged:
            return 0
        # one lock order for concurrent PostgreSQL writers
        keys = sorted(merged)
        with self.engine.connect().execution_options(sqlite_begin="IMMEDIATE") as conn:
            known = set()
            touched = {(rec.cluster, rec.user) for rec in merged.values()}
            for i in range(0, len(keys), CHUNK):
                chunk = select(table.c.key, table.c.cluster, table.c.user).where(table.c.key.in_(keys[i : i + CHUNK]))
                for key, cluster, user in conn.execute(chunk):
                    known.add(key)
                    # a record may give a key to another user: both are summed again
                    touched.add((cluster, user))
            writes = _writes(conn)
            for i in range(0, len(keys), CHUNK):
                conn.execute(writes.upsert, [_row(merged[k]) for k in keys[i : i + CHUNK]])
            for cluster, user in sorted(touched):
                _summarize(conn, writes, cluster, user)
            conn.commit()
        new = len(set(keys) - known)
        if new >= ANALYZE_AFTER and self.engine.dialect.name == "postgresql":
            # a bulk import: statistics now, not at autovacuum's next pass
            with self.engine.connect() as conn:
                conn.execute(text("ANALYZE job_history"))
                conn.commit()
        return new

    def user_state(self, cluster: str, user: str, at: datetime, before_seq: int | None = None) -> UserHistory:
        """The user's state at ``at`` (times as Unix seconds): jobs submitted before it (at the same instant: those
        with a smaller ``seq``; every one when ``before_seq`` is None), of which the running and the finished ones.

        At an instant after everything recorded of the user (a job submitted now) it is their summary row."""
        counts, recent = _STATE_QUERIES[before_seq is not None]
        now = _seconds(at)
        values = {"cluster": cluster, "user": user, "now": now, "seq": before_seq}
        with self.engine.connect() as conn:
            summary = conn.execute(_SUMMARY_ROW, values).one_or_none()
            if summary is None and not conn.execute(_ANY_JOB, values).first():
                return UserHistory()  # no job of the user: nothing to count
            if summary is not None and _covers(summary, now, before_seq):
                return _summed(summary)
            submitted, last_submit, done, total, run, procs = conn.execute(counts, values).one()
            runs = [float(r) for r in conn.execute(recent, values).scalars()]
        return UserHistory(
            submitted=int(submitted),
            last_submit=float(last_submit or 0.0),
            running=int(run),
            running_procs=int(procs or 0),
            finished=int(done),
            finished_total=float(total or 0.0),
            recent=deque(runs, maxlen=LAST),
        )

    def user_states(
        self, cluster: str, user: str, instants: Sequence[tuple[datetime, int | None]]
    ) -> list[UserHistory]:
        """:meth:`user_state` at each of ``instants`` (an instant and its ``before_seq``), in their order: one read of
        the user's rows submitted by the last of them, and one pass over them in time order (the replay's)."""
        if not instants:
            return []
        moments = [(_seconds(at), math.inf if seq is None else seq) for at, seq in instants]
        c = table.c
        rows = (
            select(c.submit_at, c.seq, c.start_at, c.end_at, c.min_cpus)
            .where(c.cluster == cluster, c.user == user, c.submit_at <= max(m for m, _ in moments))
            .order_by(c.submit_at, c.seq)
        )
        with self.engine.connect() as conn:
            jobs = [tuple(row) for row in conn.execute(rows)]
        out: list[UserHistory] = [UserHistory()] * len(moments)
        sweep = _Sweep(jobs)
        for index in sorted(range(len(moments)), key=moments.__getitem__):
            out[index] = sweep.at(*moments[index])
        return out

    def first_submit(self, cluster: str) -> datetime | None:
        """When the cluster's first recorded job was submitted (None: no job recorded)."""
        c = table.c
        stmt = select(c.submit_at).where(c.cluster == cluster).order_by(c.submit_at).limit(1)
        with self.engine.connect() as conn:
            first = conn.execute(stmt).scalar()
        return None if first is None else datetime.fromtimestamp(first, UTC)


def _state_queries(ties: bool) -> tuple[AnySelect, AnySelect]:
    """The two queries of :meth:`JobHistory.user_state`, built once (building one costs more than running it): the
    counts and sums in one round trip, and the latest run times. ``ties``: jobs submitted at ``now`` count when their
    ``seq`` is below the bound ``seq``."""
    c = table.c
    now = bindparam("now", type_=Float)
    mine = and_(c.cluster == bindparam("cluster"), c.user == bindparam("user"))

    def earlier(submit_at: ColumnElement[float]) -> ColumnElement[bool]:
        """Submitted before ``now`` (at ``now``: below ``seq``)."""
        before = submit_at <= now
        return and_(before, or_(submit_at < now, c.seq < bindparam("seq"))) if ties else before

    finished = and_(mine, earlier(c.submit_at), c.start_at <= now, c.end_at <= now)
    # Running: two short ranges of the end index (ended after now, not ended); "+ 0" keeps SQLite from reading
    # the user's every submission through the submit index instead.
    started = and_(mine, earlier(c.submit_at + 0), c.start_at <= now)
    running = union_all(
        select(c.min_cpus).where(started, c.end_at > now),
        select(c.min_cpus).where(started, c.end_at.is_(None)),
    ).subquery()
    submitted = (
        select(func.count().label("n"), func.max(c.submit_at).label("last"))
        .where(mine, earlier(c.submit_at))
        .subquery()
    )
    done = select(func.count().label("n"), func.sum(c.end_at - c.start_at).label("total")).where(finished).subquery()
    busy = select(func.count().label("n"), func.sum(func.coalesce(running.c.min_cpus, 0)).label("procs")).subquery()
    # three one-row aggregates side by side: one round trip
    counts = select(submitted.c.n, submitted.c.last, done.c.n, done.c.total, busy.c.n, busy.c.procs).select_from(
        submitted.join(done, true()).join(busy, true())
    )
    recent = select(c.end_at - c.start_at).where(finished).order_by(c.end_at.desc(), c.seq.desc()).limit(LAST)
    return counts, recent


_STATE_QUERIES = {ties: _state_queries(ties) for ties in (False, True)}


class _Sweep:
    """A user's state moved forward through instants in time order over their rows (submit, seq, start, end, CPUs)
    sorted by submission: each row counts as submitted, then running, then finished, as :meth:`JobHistory.user_state`
    counts it; the conditions only grow with the instant, so each row moves once."""

    def __init__(self, jobs: list[tuple[Any, ...]]) -> None:
        self.jobs = jobs
        self.next = 0  # the first row not submitted yet
        # (start, row) of submitted rows not started yet
        self.starts: list[tuple[float, int]] = []
        self.ends: list[tuple[float, int]] = []  # (end, row) of running rows that end
        self.running = self.procs = self.finished = 0
        self.total = 0.0
        # (end, seq, run time) of the latest ended, newest first
        self.recent: list[tuple[float, int, float]] = []

    def at(self, now: float, seq: float) -> UserHistory:
        """The state at ``now`` for a job of ``seq`` (inf: after every job submitted at ``now``)."""
        jobs = self.jobs
        while self.next < len(jobs) and (
            jobs[self.next][0] < now or (jobs[self.next][0] == now and jobs[self.next][1] < seq)
        ):
            start = jobs[self.next][2]
            if start is not None:
                heapq.heappush(self.starts, (start, self.next))
            self.next += 1
        while self.starts and self.starts[0][0] <= now:
            _, row = heapq.heappop(self.starts)
            end = jobs[row][3]
            if end is not None and end <= now:
                self._finish(row)
                continue
            self.running += 1
            self.procs += jobs[row][4] or 0
            if end is not None:
                heapq.heappush(self.ends, (end, row))
        while self.ends and self.ends[0][0] <= now:
            _, row = heapq.heappop(self.ends)
            self.running -= 1
            self.procs -= jobs[row][4] or 0
            self._finish(row)
        last = jobs[self.next - 1][0] if self.next else 0.0
        return UserHistory(
            submitted=self.next,
            last_submit=float(last),
            running=self.running,
            running_procs=self.procs,
            finished=self.finished,
            finished_total=self.total,
            recent=deque((run for _, _, run in self.recent), maxlen=LAST),
        )

    def _finish(self, row: int) -> None:
        _, seq, start, end, _ = self.jobs[row]
        self.finished += 1
        self.total += end - start
        self.recent = sorted([*self.recent, (end, seq, end - start)], reverse=True)[:LAST]


def _summarize(conn: Connection, writes: _Writes, cluster: str, user: str) -> None:
    """Sum up the user's rows again into their ``job_history_users`` row (inside the recording transaction; on
    PostgreSQL the summary row is locked first, so two writers of one user's jobs sum up one after the other, the
    second seeing the first's rows)."""
    values = {"cluster": cluster, "user": user}
    conn.execute(writes.ensure_summary, {**values, **_EMPTY_SUMMARY})
    conn.execute(_LOCK_SUMMARY, values)
    summed = dict(conn.execute(_SUMS, values).one()._mapping)
    recent: list[float | None] = [float(r) for r in conn.execute(_RECENT, values).scalars()]
    recent += [None] * (LAST - len(recent))  # fewer ended runs: nulls
    changes = {**summed, **{f"recent{i + 1}": run for i, run in enumerate(recent)}}
    conn.execute(_UPDATE_SUMMARY, {"summary_cluster": cluster, "summary_user": user, **changes})


@dataclass(frozen=True)
class _Writes:
    """The dialect's statements of :meth:`JobHistory.record`, built once (building the upsert cost more than running
    it): the job rows' upsert (a stored key's known fields never erased) and the summary row's insert-if-missing."""

    upsert: Any
    ensure_summary: Any


_WRITES: dict[str, _Writes] = {}
_EMPTY_SUMMARY = {"submitted": 0, "running": 0, "running_procs": 0, "finished": 0, "finished_total": 0.0}


def _writes(conn: Connection) -> _Writes:
    """The statements for ``conn``'s dialect (:class:`_Writes`)."""
    name = conn.dialect.name
    if name not in _WRITES:
        insert = dialect_insert(conn)
        stmt = insert(table)
        required = {"key", "cluster", "user", "submit_at", "seq"}
        upsert = stmt.on_conflict_do_update(
            index_elements=["key"],
            set_={
                c.name: stmt.excluded[c.name] if c.name in required else func.coalesce(stmt.excluded[c.name], c)
                for c in table.c
                if c.name not in ("id", "key")
            },
        )
        ensure = insert(users).on_conflict_do_nothing(index_elements=["cluster", "user"])
        _WRITES[name] = _Writes(upsert, ensure)
    return _WRITES[name]


def _covers(summary: Row[Any], now: float, before_seq: int | None) -> bool:
    """Whether the summary is the user's state at ``now``: nothing of theirs recorded after it (at it, only when every
    job submitted at ``now`` counts)."""
    times = [t for t in (summary.last_submit, summary.last_start, summary.last_end) if t is not None]
    if not times:
        # no job of the user left: nothing at any instant
        return True
    return now > max(times) or (now == max(times) and before_seq is None)


def _summed(summary: Row[Any]) -> UserHistory:
    return UserHistory(
        submitted=int(summary.submitted),
        last_submit=float(summary.last_submit or 0.0),
        running=int(summary.running),
        running_procs=int(summary.running_procs),
        finished=int(summary.finished),
        finished_total=float(summary.finished_total),
        recent=deque((r for r in (summary.recent1, summary.recent2, summary.recent3) if r is not None), maxlen=LAST),
    )


def _summary_queries() -> tuple[AnySelect, AnySelect, AnySelect, AnySelect, AnySelect]:
    """The user's summary row, its sums over the user's rows, their latest run times, whether the user has a job, and
    the summary row locked (PostgreSQL; SQLite's writer already holds the database)."""
    c = table.c
    mine = and_(c.cluster == bindparam("cluster"), c.user == bindparam("user"))
    mine_summary = and_(users.c.cluster == bindparam("cluster"), users.c.user == bindparam("user"))
    started = and_(c.start_at.is_not(None), c.end_at.is_(None))
    ended = and_(c.start_at.is_not(None), c.end_at.is_not(None))
    sums = select(
        func.count().label("submitted"),
        func.max(c.submit_at).label("last_submit"),
        func.max(c.start_at).label("last_start"),
        func.max(c.end_at).label("last_end"),
        func.coalesce(func.sum(case((started, 1), else_=0)), 0).label("running"),
        func.coalesce(func.sum(case((started, func.coalesce(c.min_cpus, 0)), else_=0)), 0).label("running_procs"),
        func.coalesce(func.sum(case((ended, 1), else_=0)), 0).label("finished"),
        func.coalesce(func.sum(case((ended, c.end_at - c.start_at), else_=0.0)), 0.0).label("finished_total"),
    ).where(mine)
    recent = select(c.end_at - c.start_at).where(mine, ended).order_by(c.end_at.desc(), c.seq.desc()).limit(LAST)
    row = select(users).where(mine_summary)
    any_job = select(c.id).where(mine).limit(1)
    lock = select(users.c.cluster).where(mine_summary).with_for_update()
    return sums, recent, row, any_job, lock


_SUMS, _RECENT, _SUMMARY_ROW, _ANY_JOB, _LOCK_SUMMARY = _summary_queries()
# the summary row set from its parameters (an UPDATE's own column names are taken by its SET clause)
_UPDATE_SUMMARY = users.update().where(
    users.c.cluster == bindparam("summary_cluster"), users.c.user == bindparam("summary_user")
)


def _merge(old: JobRecord, new: JobRecord) -> JobRecord:
    """``new`` with the fields it does not know taken from ``old``."""
    return replace(new, **{f.name: getattr(old, f.name) for f in fields(new) if getattr(new, f.name) is None})


def _row(rec: JobRecord) -> dict[str, Any]:
    """Column values of one record: times as Unix seconds."""
    row = {f.name: getattr(rec, f.name) for f in fields(rec)}
    row.update({name: None if row[name] is None else _seconds(row[name]) for name in _TIMES})
    return row


def _seconds(at: datetime) -> float:
    """Unix seconds of an aware datetime; ValueError for a naive one (its instant is unknown)."""
    if at.tzinfo is None:
        raise ValueError(f"{at} has no timezone")
    return at.timestamp()

"""The job history of a site: every job submitted, started and ended, read back as a user's state at an instant.

Slurm accounting, ``slurm follow`` and the SWF import write jobs here (:meth:`JobHistory.record`); the service reads
a user's state at a job's submit time (:meth:`JobHistory.user_state`), from which
:func:`features.history.features_at` computes the same history features the SWF replay computes. Each read is a
few indexed queries on the user's rows, so the cost grows with one user's jobs, not with the site's.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, fields, replace
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import ColumnElement, Engine, Float, Select, and_, bindparam, func, or_, select, text, true, union_all

from features.history import LAST, UserHistory
from predictor.store.limits import column_problem
from predictor.store.store import dialect_insert
from predictor.store.tables import job_history as table

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
        keys = sorted(merged)  # one lock order for concurrent PostgreSQL writers
        with self.engine.connect().execution_options(sqlite_begin="IMMEDIATE") as conn:
            known = set()
            for i in range(0, len(keys), CHUNK):
                known.update(conn.execute(select(table.c.key).where(table.c.key.in_(keys[i : i + CHUNK]))).scalars())
            stmt = dialect_insert(conn)(table)
            required = {"key", "cluster", "user", "submit_at", "seq"}
            stmt = stmt.on_conflict_do_update(
                index_elements=["key"],
                set_={
                    c.name: stmt.excluded[c.name] if c.name in required else func.coalesce(stmt.excluded[c.name], c)
                    for c in table.c
                    if c.name not in ("id", "key")
                },
            )
            for i in range(0, len(keys), CHUNK):
                conn.execute(stmt, [_row(merged[k]) for k in keys[i : i + CHUNK]])
            conn.commit()
        new = len(set(keys) - known)
        if new >= ANALYZE_AFTER and self.engine.dialect.name == "postgresql":
            with self.engine.connect() as conn:  # a bulk import: statistics now, not at autovacuum's next pass
                conn.execute(text("ANALYZE job_history"))
                conn.commit()
        return new

    def user_state(self, cluster: str, user: str, at: datetime, before_seq: int | None = None) -> UserHistory:
        """The user's state at ``at`` (times as Unix seconds): jobs submitted before it (at the same instant: those
        with a smaller ``seq``; every one when ``before_seq`` is None), of which the running and the finished ones."""
        counts, recent = _STATE_QUERIES[before_seq is not None]
        values = {"cluster": cluster, "user": user, "now": _seconds(at), "seq": before_seq}
        with self.engine.connect() as conn:
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

    def first_submit(self, cluster: str) -> datetime | None:
        """When the cluster's first recorded job was submitted (None: no job recorded)."""
        c = table.c
        stmt = select(c.submit_at).where(c.cluster == cluster).order_by(c.submit_at).limit(1)
        with self.engine.connect() as conn:
            first = conn.execute(stmt).scalar()
        return None if first is None else datetime.fromtimestamp(first, UTC)


def _state_queries(ties: bool) -> tuple[Select[Any], Select[Any]]:
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
    counts = select(  # three one-row aggregates side by side: one round trip
        submitted.c.n, submitted.c.last, done.c.n, done.c.total, busy.c.n, busy.c.procs
    ).select_from(submitted.join(done, true()).join(busy, true()))
    recent = select(c.end_at - c.start_at).where(finished).order_by(c.end_at.desc(), c.seq.desc()).limit(LAST)
    return counts, recent


_STATE_QUERIES = {ties: _state_queries(ties) for ties in (False, True)}


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

"""SQLAlchemy tables of the measurement store, shared by the store code and its migrations."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    DateTime,
    Dialect,
    Float,
    Index,
    Integer,
    String,
    Table,
    Text,
    UniqueConstraint,
    false,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column
from sqlalchemy.types import TypeDecorator


class UTCDateTime(TypeDecorator[datetime]):
    """Timezone-aware UTC datetimes on every backend (SQLite keeps no offset, so store UTC and re-attach it)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        value = _as_utc(value)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        return None if value is None else _as_utc(value)


def _as_utc(value: datetime) -> datetime:
    """Naive datetimes are taken to be UTC; aware ones are converted to UTC."""
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


class Base(DeclarativeBase):
    """Declarative base whose metadata the migrations target."""


class MeasurementRow(Base):
    """One stored :class:`~predictor.domain.Measurement`; ``run_id`` makes storing idempotent."""

    __tablename__ = "measurements"
    __table_args__ = (Index("ix_measurements_algorithm_platform", "algorithm", "platform"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    run_id: Mapped[str] = mapped_column(String(200), unique=True, index=True)
    algorithm: Mapped[str] = mapped_column(String(200))
    platform: Mapped[str] = mapped_column(String(200))
    machine: Mapped[str] = mapped_column(String(200))
    params: Mapped[dict[str, Any]] = mapped_column(JSON)
    features: Mapped[dict[str, float]] = mapped_column(JSON)
    wall_seconds: Mapped[float] = mapped_column(Float)
    cpu_seconds: Mapped[float | None] = mapped_column(Float)
    max_rss_kb: Mapped[int | None] = mapped_column(BigInteger)
    exit_status: Mapped[int] = mapped_column(Integer)
    censored: Mapped[bool] = mapped_column(Boolean, server_default=false(), default=False)
    cache_state: Mapped[str] = mapped_column(String(16))
    source: Mapped[str] = mapped_column(String(16))
    recorded_at: Mapped[datetime] = mapped_column(UTCDateTime)
    context: Mapped[dict[str, Any]] = mapped_column(JSON)


class ServedEstimateRow(Base):
    """The estimate a stored run was served (see :class:`~predictor.domain.ServedEstimate`): live error is scored from it."""

    __tablename__ = "served_estimates"
    __table_args__ = (Index("ix_served_estimates_pair", "algorithm", "platform", "id"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    run_id: Mapped[str] = mapped_column(String(200), unique=True)
    algorithm: Mapped[str] = mapped_column(String(200))
    platform: Mapped[str] = mapped_column(String(200))
    seconds: Mapped[float] = mapped_column(Float)
    lower: Mapped[float | None] = mapped_column(Float)
    upper: Mapped[float | None] = mapped_column(Float)
    limit: Mapped[float | None] = mapped_column(Float)
    model_name: Mapped[str | None] = mapped_column(String(200))
    model_version: Mapped[str | None] = mapped_column(String(64))
    extrapolating: Mapped[bool] = mapped_column(Boolean)
    origin: Mapped[str] = mapped_column(String(16))
    served_at: Mapped[datetime] = mapped_column(UTCDateTime)
    # the peak memory served beside the time (migration 0010; None: no memory champion answered, or served before)
    memory: Mapped[float | None] = mapped_column(Float, nullable=True)
    memory_lower: Mapped[float | None] = mapped_column(Float, nullable=True)
    memory_upper: Mapped[float | None] = mapped_column(Float, nullable=True)
    memory_limit: Mapped[float | None] = mapped_column(Float, nullable=True)
    memory_model_name: Mapped[str | None] = mapped_column(String(200), nullable=True)
    memory_model_version: Mapped[str | None] = mapped_column(String(64), nullable=True)


class ModelDecisionRow(Base):
    """What training decided for one (algorithm, platform) and target: promoted, refreshed, kept (challenger registered), forced."""

    __tablename__ = "model_decisions"
    __table_args__ = (Index("ix_model_decisions_pair", "algorithm", "platform", "id"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    decided_at: Mapped[datetime] = mapped_column(UTCDateTime)
    algorithm: Mapped[str] = mapped_column(String(200))
    platform: Mapped[str] = mapped_column(String(200))
    # predictor.domain.Target: run time, peak memory
    target: Mapped[str] = mapped_column(String(16), server_default="time")
    decision: Mapped[str] = mapped_column(String(16))
    trigger: Mapped[str] = mapped_column(String(200))
    challenger: Mapped[str] = mapped_column(String(200))
    incumbent: Mapped[str | None] = mapped_column(String(200))
    version: Mapped[str | None] = mapped_column(String(64))
    serving_version: Mapped[str | None] = mapped_column(String(64))
    n_rows: Mapped[int] = mapped_column(Integer)
    reason: Mapped[str] = mapped_column(Text)
    details: Mapped[dict[str, Any]] = mapped_column(JSON)


class SetAsideRow(Base):
    """A stored measurement that could not be read (a JSON column not JSON, a feature not a number), moved out of the
    ``measurements`` table with the reason, so the reads of every other run go on and this one is not retried."""

    __tablename__ = "measurements_set_aside"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    measurement_id: Mapped[int] = mapped_column(Integer, unique=True)
    run_id: Mapped[str] = mapped_column(String(200))
    reason: Mapped[str] = mapped_column(Text)
    # the row's columns as JSON, its unreadable ones as the text they hold
    row: Mapped[str] = mapped_column(Text)
    set_aside_at: Mapped[datetime] = mapped_column(UTCDateTime)


class JobHistoryRow(Base):
    """One job of a site (submitted, started, ended), the history its user's later jobs are estimated from; owned by
    :class:`predictor.store.job_history.JobHistory`. Times are Unix seconds, so run times are exact SQL differences."""

    __tablename__ = "job_history"
    __table_args__ = (
        # A user's submissions, and ended jobs with what their counts, sums and ties read: index-only scans.
        Index("ix_job_history_user_submit", "cluster", "user", "submit_at", "seq"),
        Index("ix_job_history_user_end", "cluster", "user", "end_at", "start_at", "submit_at", "seq"),
        Index("ix_job_history_cluster_submit", "cluster", "submit_at"),  # the cluster's first submission
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    key: Mapped[str] = mapped_column(String(200), unique=True)
    cluster: Mapped[str] = mapped_column(String(200))
    user: Mapped[str] = mapped_column(String(200))
    group: Mapped[str | None] = mapped_column(String(200), nullable=True)
    account: Mapped[str | None] = mapped_column(String(200), nullable=True)
    partition: Mapped[str | None] = mapped_column(String(200), nullable=True)
    qos: Mapped[str | None] = mapped_column(String(200), nullable=True)
    name: Mapped[str | None] = mapped_column(String(200), nullable=True)
    time_limit_s: Mapped[float | None] = mapped_column(Float, nullable=True)
    min_cpus: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    min_nodes: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    pn_min_memory_mb: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    array_inx: Mapped[str | None] = mapped_column(String(200), nullable=True)
    work_dir: Mapped[str | None] = mapped_column(Text, nullable=True)
    submit_at: Mapped[float] = mapped_column(Float)
    start_at: Mapped[float | None] = mapped_column(Float, nullable=True)
    end_at: Mapped[float | None] = mapped_column(Float, nullable=True)
    state: Mapped[str | None] = mapped_column(String(32), nullable=True)
    seq: Mapped[int] = mapped_column(BigInteger)


class JobHistoryUserRow(Base):
    """One user's jobs of a cluster summed up as of their latest recorded instant (``last_*``): what
    :meth:`predictor.store.job_history.JobHistory.user_state` reads in one row for any later instant (a new job's
    submit time, now) instead of counting the user's rows. Kept by ``JobHistory.record`` in the transaction that
    records the user's jobs (migration ``0012``)."""

    __tablename__ = "job_history_users"

    cluster: Mapped[str] = mapped_column(String(200), primary_key=True)
    user: Mapped[str] = mapped_column(String(200), primary_key=True)
    submitted: Mapped[int] = mapped_column(BigInteger)
    last_submit: Mapped[float | None] = mapped_column(Float, nullable=True)
    last_start: Mapped[float | None] = mapped_column(Float, nullable=True)
    last_end: Mapped[float | None] = mapped_column(Float, nullable=True)
    running: Mapped[int] = mapped_column(BigInteger)  # started, no end yet
    running_procs: Mapped[int] = mapped_column(BigInteger)
    finished: Mapped[int] = mapped_column(BigInteger)  # started and ended
    finished_total: Mapped[float] = mapped_column(Float)  # their run times' sum
    # the latest ended runs' times, newest first
    recent1: Mapped[float | None] = mapped_column(Float, nullable=True)
    recent2: Mapped[float | None] = mapped_column(Float, nullable=True)
    recent3: Mapped[float | None] = mapped_column(Float, nullable=True)


class OnlineMemberRow(Base):
    """A served online champion as it learns, one per pair and target (:class:`predictor.online.LiveMember`): the
    registered version it grew from, what it has learned (its parameters and numbers, JSON) and its live score."""

    __tablename__ = "online_members"
    __table_args__ = (UniqueConstraint("algorithm", "platform", "target", name="uq_online_members_pair"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    algorithm: Mapped[str] = mapped_column(String(200))
    platform: Mapped[str] = mapped_column(String(200))
    target: Mapped[str] = mapped_column(String(16))
    member: Mapped[str] = mapped_column(String(200))
    version: Mapped[str] = mapped_column(String(64))
    feature_names: Mapped[list[str]] = mapped_column(JSON)
    params: Mapped[dict[str, Any]] = mapped_column(JSON)
    state: Mapped[dict[str, Any]] = mapped_column(JSON)
    learned: Mapped[int] = mapped_column(BigInteger)
    revision: Mapped[int] = mapped_column(BigInteger)
    scored: Mapped[int] = mapped_column(BigInteger)
    log_error_sum: Mapped[float] = mapped_column(Float)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime)


def mapped_table(row: type[Base]) -> Table:
    """The table a row class maps: a declarative class with a ``__tablename__`` builds a :class:`Table`, which its
    ``__table__`` (typed as any ``FromClause``) does not tell mypy."""
    mapped = row.__table__
    if not isinstance(mapped, Table):
        raise TypeError(f"{row.__name__} maps {type(mapped).__name__}, not a table")
    return mapped


measurements = mapped_table(MeasurementRow)
served_estimates = mapped_table(ServedEstimateRow)
model_decisions = mapped_table(ModelDecisionRow)
set_aside = mapped_table(SetAsideRow)
job_history = mapped_table(JobHistoryRow)
job_history_users = mapped_table(JobHistoryUserRow)


online_members = mapped_table(OnlineMemberRow)

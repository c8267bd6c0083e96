"""Tables of the embedded scheduler: its jobs, runs, machines, the orders it issues and the events it is sent.

A resource manager can work through the database alone: it reads ``sched_orders``
in ``seq`` order (``seq`` only grows, so a cursor is enough) and inserts rows into
``sched_events`` (machine gained or lost, job ended or failed), which the scheduler
applies in ``seq`` order and marks processed. Times are Unix seconds.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Float,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import Mapped, mapped_column

from predictor.store.tables import Base, mapped_table


class SchedJobRow(Base):
    """One job the scheduler knows, in whatever state."""

    __tablename__ = "sched_jobs"
    __table_args__ = (Index("ix_sched_jobs_status", "status"),)

    id: Mapped[str] = mapped_column(String(200), primary_key=True)
    seq: Mapped[int] = mapped_column(Integer)
    algorithm: Mapped[str] = mapped_column(String(200))
    params: Mapped[dict[str, Any]] = mapped_column(JSON)
    features: Mapped[dict[str, float] | None] = mapped_column(JSON, nullable=True)
    estimates: Mapped[dict[str, float | None]] = mapped_column(JSON)
    submit: Mapped[float] = mapped_column(Float)
    deadline: Mapped[float | None] = mapped_column(Float, nullable=True)
    priority: Mapped[int] = mapped_column(Integer)
    depends_on: Mapped[list[str]] = mapped_column(JSON)
    stream_from: Mapped[str | None] = mapped_column(String(200), nullable=True)
    size: Mapped[int] = mapped_column(Integer)
    platforms: Mapped[list[str] | None] = mapped_column(JSON, nullable=True)
    checkpoint: Mapped[list[str]] = mapped_column(JSON)
    data: Mapped[str | None] = mapped_column(String(200), nullable=True)
    memory: Mapped[int | None] = mapped_column(BigInteger, nullable=True)  # bytes its user asked for
    # without memory: bytes it is planned with per platform
    planned_memory: Mapped[dict[str, int]] = mapped_column(JSON)
    status: Mapped[str] = mapped_column(String(16))
    progress: Mapped[float] = mapped_column(Float)
    attempts: Mapped[int] = mapped_column(Integer)
    planned_machine: Mapped[str | None] = mapped_column(String(200), nullable=True)
    planned_start: Mapped[float | None] = mapped_column(Float, nullable=True)
    started: Mapped[float | None] = mapped_column(Float, nullable=True)
    ended: Mapped[float | None] = mapped_column(Float, nullable=True)
    message: Mapped[str] = mapped_column(Text)


class SchedRunRow(Base):
    """A job's run on a machine, while it lasts."""

    __tablename__ = "sched_runs"

    job_id: Mapped[str] = mapped_column(String(200), primary_key=True)
    machine_id: Mapped[str] = mapped_column(String(200), primary_key=True)
    start: Mapped[float] = mapped_column(Float)
    attempt: Mapped[int] = mapped_column(Integer)
    estimate: Mapped[float | None] = mapped_column(Float, nullable=True)
    progress0: Mapped[float] = mapped_column(Float)
    orphan: Mapped[bool] = mapped_column(Boolean)
    # bytes it holds with each slot (0: not counted)
    memory: Mapped[int] = mapped_column(BigInteger, server_default="0")


class SchedMachineRow(Base):
    """A machine (or a pool of slots) of one platform."""

    __tablename__ = "sched_machines"

    id: Mapped[str] = mapped_column(String(200), primary_key=True)
    platform: Mapped[str] = mapped_column(String(200))
    slots: Mapped[int] = mapped_column(Integer)
    power_watts: Mapped[float] = mapped_column(Float)
    online: Mapped[bool] = mapped_column(Boolean)
    warm: Mapped[str | None] = mapped_column(String(200), nullable=True)
    idle_since: Mapped[float] = mapped_column(Float)
    # bytes per node; None: memory never limits
    node_memory: Mapped[int | None] = mapped_column(BigInteger, nullable=True)


class SchedOrderRow(Base):
    """An order for the resource manager; (job, kind, attempt) is issued at most once."""

    __tablename__ = "sched_orders"
    __table_args__ = (UniqueConstraint("job_id", "kind", "attempt", name="uq_sched_orders_job_kind_attempt"),)

    seq: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    kind: Mapped[str] = mapped_column(String(16))
    job_id: Mapped[str] = mapped_column(String(200))
    machine_id: Mapped[str] = mapped_column(String(200))
    target: Mapped[str | None] = mapped_column(String(200), nullable=True)
    attempt: Mapped[int] = mapped_column(Integer)
    requeue: Mapped[bool] = mapped_column(Boolean)
    reason: Mapped[str] = mapped_column(Text)
    issued_at: Mapped[float] = mapped_column(Float)


class SchedEventRow(Base):
    """An event sent to the scheduler (by the API or straight into the table); applied once, in ``seq`` order."""

    __tablename__ = "sched_events"
    __table_args__ = (Index("ix_sched_events_processed", "processed_at"),)

    seq: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    kind: Mapped[str] = mapped_column(String(32))
    machine_id: Mapped[str | None] = mapped_column(String(200), nullable=True)
    job_id: Mapped[str | None] = mapped_column(String(200), nullable=True)
    payload: Mapped[dict[str, Any]] = mapped_column(JSON)
    at: Mapped[float | None] = mapped_column(Float, nullable=True)
    processed_at: Mapped[float | None] = mapped_column(Float, nullable=True)
    outcome: Mapped[str | None] = mapped_column(Text, nullable=True)


class SchedLeaseRow(Base):
    """Who runs the scheduler of this database, until when: one row per role, taken over once it expires."""

    __tablename__ = "sched_lease"

    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    holder: Mapped[str] = mapped_column(String(200))
    # grows by one at every takeover: a fenced-out holder's writes are refused
    epoch: Mapped[int] = mapped_column(Integer)
    expires_at: Mapped[float] = mapped_column(Float)


class SchedProbeRow(Base):
    """An idle-time probe the scheduler ordered (scheduler/probing.py): the run, where, its cap, and how it ended."""

    __tablename__ = "sched_probes"
    __table_args__ = (Index("ix_sched_probes_ended", "ended"),)

    # the prober's number; orders name it
    token: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    # the candidate, and the run id its measurement is stored under
    probe: Mapped[str] = mapped_column(String(200))
    algorithm: Mapped[str] = mapped_column(String(200))
    platform: Mapped[str] = mapped_column(String(200))
    machine_id: Mapped[str] = mapped_column(String(200))
    params: Mapped[dict[str, Any]] = mapped_column(JSON)
    features: Mapped[dict[str, float]] = mapped_column(JSON)
    cap_s: Mapped[float] = mapped_column(Float)
    started: Mapped[float] = mapped_column(Float)
    ended: Mapped[float | None] = mapped_column(Float, nullable=True)  # None while it runs
    outcome: Mapped[str | None] = mapped_column(String(16), nullable=True)  # done, capped, cancelled or failed


sched_jobs = mapped_table(SchedJobRow)
sched_runs = mapped_table(SchedRunRow)
sched_machines = mapped_table(SchedMachineRow)
sched_orders = mapped_table(SchedOrderRow)
sched_events = mapped_table(SchedEventRow)
sched_lease = mapped_table(SchedLeaseRow)
sched_probes = mapped_table(SchedProbeRow)

"""Create the embedded scheduler's tables: jobs, runs, machines, orders, events.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-22
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "sched_jobs",
        sa.Column("id", sa.String(200), primary_key=True),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("algorithm", sa.String(200), nullable=False),
        sa.Column("params", sa.JSON(), nullable=False),
        sa.Column("features", sa.JSON(), nullable=True),
        sa.Column("estimates", sa.JSON(), nullable=False),
        sa.Column("submit", sa.Float(), nullable=False),
        sa.Column("deadline", sa.Float(), nullable=True),
        sa.Column("priority", sa.Integer(), nullable=False),
        sa.Column("depends_on", sa.JSON(), nullable=False),
        sa.Column("stream_from", sa.String(200), nullable=True),
        sa.Column("size", sa.Integer(), nullable=False),
        sa.Column("platforms", sa.JSON(), nullable=True),
        sa.Column("checkpoint", sa.JSON(), nullable=False),
        sa.Column("data", sa.String(200), nullable=True),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("progress", sa.Float(), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("planned_machine", sa.String(200), nullable=True),
        sa.Column("planned_start", sa.Float(), nullable=True),
        sa.Column("started", sa.Float(), nullable=True),
        sa.Column("ended", sa.Float(), nullable=True),
        sa.Column("message", sa.Text(), nullable=False),
    )
    op.create_index("ix_sched_jobs_status", "sched_jobs", ["status"])
    op.create_table(
        "sched_runs",
        sa.Column("job_id", sa.String(200), primary_key=True),
        sa.Column("machine_id", sa.String(200), primary_key=True),
        sa.Column("start", sa.Float(), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("estimate", sa.Float(), nullable=True),
        sa.Column("progress0", sa.Float(), nullable=False),
        sa.Column("orphan", sa.Boolean(), nullable=False),
    )
    op.create_table(
        "sched_machines",
        sa.Column("id", sa.String(200), primary_key=True),
        sa.Column("platform", sa.String(200), nullable=False),
        sa.Column("slots", sa.Integer(), nullable=False),
        sa.Column("power_watts", sa.Float(), nullable=False),
        sa.Column("online", sa.Boolean(), nullable=False),
        sa.Column("warm", sa.String(200), nullable=True),
        sa.Column("idle_since", sa.Float(), nullable=False),
    )
    op.create_table(
        "sched_orders",
        sa.Column("seq", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("job_id", sa.String(200), nullable=False),
        sa.Column("machine_id", sa.String(200), nullable=False),
        sa.Column("target", sa.String(200), nullable=True),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("requeue", sa.Boolean(), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("issued_at", sa.Float(), nullable=False),
        sa.UniqueConstraint("job_id", "kind", "attempt", name="uq_sched_orders_job_kind_attempt"),
    )
    op.create_table(
        "sched_events",
        sa.Column("seq", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("machine_id", sa.String(200), nullable=True),
        sa.Column("job_id", sa.String(200), nullable=True),
        sa.Column("payload", sa.JSON(), nullable=False),
        sa.Column("at", sa.Float(), nullable=True),
        sa.Column("processed_at", sa.Float(), nullable=True),
        sa.Column("outcome", sa.Text(), nullable=True),
    )
    op.create_index("ix_sched_events_processed", "sched_events", ["processed_at"])


def downgrade() -> None:
    op.drop_index("ix_sched_events_processed", table_name="sched_events")
    op.drop_table("sched_events")
    op.drop_table("sched_orders")
    op.drop_table("sched_machines")
    op.drop_table("sched_runs")
    op.drop_index("ix_sched_jobs_status", table_name="sched_jobs")
    op.drop_table("sched_jobs")

"""Job history per user (issue 41): each user's jobs summed up as of their latest instant, so a user's state at a later
instant (a new job's submit time) is one row, not a count over the user's every job. Filled from the jobs recorded so
far.

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-06
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None

STARTED = "start_at IS NOT NULL AND end_at IS NULL"
ENDED = "start_at IS NOT NULL AND end_at IS NOT NULL"


def upgrade() -> None:
    op.create_table(
        "job_history_users",
        sa.Column("cluster", sa.String(200), primary_key=True),
        sa.Column("user", sa.String(200), primary_key=True),
        sa.Column("submitted", sa.BigInteger(), nullable=False),
        sa.Column("last_submit", sa.Float(), nullable=True),
        sa.Column("last_start", sa.Float(), nullable=True),
        sa.Column("last_end", sa.Float(), nullable=True),
        sa.Column("running", sa.BigInteger(), nullable=False),
        sa.Column("running_procs", sa.BigInteger(), nullable=False),
        sa.Column("finished", sa.BigInteger(), nullable=False),
        sa.Column("finished_total", sa.Float(), nullable=False),
        sa.Column("recent1", sa.Float(), nullable=True),
        sa.Column("recent2", sa.Float(), nullable=True),
        sa.Column("recent3", sa.Float(), nullable=True),
    )
    op.execute(
        'INSERT INTO job_history_users (cluster, "user", submitted, last_submit, last_start, last_end, running, '
        "running_procs, finished, finished_total) "
        'SELECT cluster, "user", count(*), max(submit_at), max(start_at), max(end_at), '
        f"sum(CASE WHEN {STARTED} THEN 1 ELSE 0 END), sum(CASE WHEN {STARTED} THEN coalesce(min_cpus, 0) ELSE 0 END), "
        f"sum(CASE WHEN {ENDED} THEN 1 ELSE 0 END), sum(CASE WHEN {ENDED} THEN end_at - start_at ELSE 0 END) "
        'FROM job_history GROUP BY cluster, "user"'
    )
    for rank in range(3):
        op.execute(
            f"UPDATE job_history_users SET recent{rank + 1} = (SELECT j.end_at - j.start_at FROM job_history j "
            'WHERE j.cluster = job_history_users.cluster AND j."user" = job_history_users."user" AND '
            f"j.start_at IS NOT NULL AND j.end_at IS NOT NULL ORDER BY j.end_at DESC, j.seq DESC LIMIT 1 OFFSET {rank})"
        )


def downgrade() -> None:
    op.drop_table("job_history_users")

"""Job history: every job of a site (submit, start, end, request), the live source of its users' history features.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-27
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

INDEXES = {
    "ix_job_history_user_submit": ["cluster", "user", "submit_at", "seq"],
    "ix_job_history_user_end": ["cluster", "user", "end_at", "start_at", "submit_at", "seq"],
    "ix_job_history_cluster_submit": ["cluster", "submit_at"],
}


def upgrade() -> None:
    op.create_table(
        "job_history",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("key", sa.String(200), nullable=False, unique=True),
        sa.Column("cluster", sa.String(200), nullable=False),
        sa.Column("user", sa.String(200), nullable=False),
        sa.Column("group", sa.String(200), nullable=True),
        sa.Column("account", sa.String(200), nullable=True),
        sa.Column("partition", sa.String(200), nullable=True),
        sa.Column("qos", sa.String(200), nullable=True),
        sa.Column("name", sa.String(200), nullable=True),
        sa.Column("time_limit_s", sa.Float(), nullable=True),
        sa.Column("min_cpus", sa.BigInteger(), nullable=True),
        sa.Column("min_nodes", sa.BigInteger(), nullable=True),
        sa.Column("pn_min_memory_mb", sa.BigInteger(), nullable=True),
        sa.Column("array_inx", sa.String(200), nullable=True),
        sa.Column("work_dir", sa.Text(), nullable=True),
        sa.Column("submit_at", sa.Float(), nullable=False),
        sa.Column("start_at", sa.Float(), nullable=True),
        sa.Column("end_at", sa.Float(), nullable=True),
        sa.Column("state", sa.String(32), nullable=True),
        sa.Column("seq", sa.BigInteger(), nullable=False),
    )
    for name, columns in INDEXES.items():
        op.create_index(name, "job_history", columns)


def downgrade() -> None:
    for name in INDEXES:
        op.drop_index(name, "job_history")
    op.drop_table("job_history")

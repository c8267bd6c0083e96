"""Scheduler memory (issue 31): a job's asked memory and the memory it is planned with, a machine's node memory and
the memory a run holds, so a restart keeps them. Bytes, in 64-bit integers.

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-27
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # jobs before this one asked for no memory and were planned with none
    with op.batch_alter_table("sched_jobs") as batch:
        batch.add_column(sa.Column("memory", sa.BigInteger(), nullable=True))
        batch.add_column(sa.Column("planned_memory", sa.JSON(), nullable=False, server_default="{}"))
    with op.batch_alter_table("sched_runs") as batch:
        batch.add_column(sa.Column("memory", sa.BigInteger(), nullable=False, server_default="0"))
    with op.batch_alter_table("sched_machines") as batch:
        batch.add_column(sa.Column("node_memory", sa.BigInteger(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("sched_machines") as batch:
        batch.drop_column("node_memory")
    with op.batch_alter_table("sched_runs") as batch:
        batch.drop_column("memory")
    with op.batch_alter_table("sched_jobs") as batch:
        batch.drop_column("planned_memory")
        batch.drop_column("memory")

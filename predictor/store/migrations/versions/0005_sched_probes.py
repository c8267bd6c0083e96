"""Idle-time probes in the service: each probe the scheduler ordered, so a restarted scheduler knows what runs.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-26
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "sched_probes",
        sa.Column("token", sa.Integer(), primary_key=True, autoincrement=False),
        sa.Column("probe", sa.String(200), nullable=False),
        sa.Column("algorithm", sa.String(200), nullable=False),
        sa.Column("platform", sa.String(200), nullable=False),
        sa.Column("machine_id", sa.String(200), nullable=False),
        sa.Column("params", sa.JSON(), nullable=False),
        sa.Column("features", sa.JSON(), nullable=False),
        sa.Column("cap_s", sa.Float(), nullable=False),
        sa.Column("started", sa.Float(), nullable=False),
        sa.Column("ended", sa.Float(), nullable=True),
        sa.Column("outcome", sa.String(16), nullable=True),
    )
    op.create_index("ix_sched_probes_ended", "sched_probes", ["ended"])


def downgrade() -> None:
    op.drop_index("ix_sched_probes_ended", "sched_probes")
    op.drop_table("sched_probes")

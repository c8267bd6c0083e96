"""Create the measurements table.

Revision ID: 0001
Revises:
Create Date: 2026-11-22
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "measurements",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("run_id", sa.String(200), nullable=False),
        sa.Column("algorithm", sa.String(200), nullable=False),
        sa.Column("platform", sa.String(200), nullable=False),
        sa.Column("machine", sa.String(200), nullable=False),
        sa.Column("params", sa.JSON(), nullable=False),
        sa.Column("features", sa.JSON(), nullable=False),
        sa.Column("wall_seconds", sa.Float(), nullable=False),
        sa.Column("cpu_seconds", sa.Float(), nullable=True),
        sa.Column("max_rss_kb", sa.BigInteger(), nullable=True),
        sa.Column("exit_status", sa.Integer(), nullable=False),
        sa.Column("cache_state", sa.String(16), nullable=False),
        sa.Column("source", sa.String(16), nullable=False),
        sa.Column("recorded_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("context", sa.JSON(), nullable=False),
    )
    op.create_index("ix_measurements_run_id", "measurements", ["run_id"], unique=True)
    op.create_index("ix_measurements_algorithm_platform", "measurements", ["algorithm", "platform"])


def downgrade() -> None:
    op.drop_index("ix_measurements_algorithm_platform", table_name="measurements")
    op.drop_index("ix_measurements_run_id", table_name="measurements")
    op.drop_table("measurements")

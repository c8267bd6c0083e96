"""Served memory (issue 42): the peak-memory estimate, its interval and limit, and the memory champion that gave them,
kept beside the served run time, so that memory's live error is measured as run time's is. Bytes, as floats.

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-28
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

COLUMNS = ("memory", "memory_lower", "memory_upper", "memory_limit")


def upgrade() -> None:
    # estimates served before this one recorded no memory
    with op.batch_alter_table("served_estimates") as batch:
        for name in COLUMNS:
            batch.add_column(sa.Column(name, sa.Float(), nullable=True))
        batch.add_column(sa.Column("memory_model_name", sa.String(200), nullable=True))
        batch.add_column(sa.Column("memory_model_version", sa.String(64), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("served_estimates") as batch:
        for name in ("memory_model_version", "memory_model_name", *reversed(COLUMNS)):
            batch.drop_column(name)

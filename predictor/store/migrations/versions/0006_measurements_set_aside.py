"""Measurements set aside: stored rows that cannot be read (a JSON column that is not JSON), moved out with the reason.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-27
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from predictor.store.tables import UTCDateTime

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "measurements_set_aside",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("measurement_id", sa.Integer(), nullable=False, unique=True),
        sa.Column("run_id", sa.String(200), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("row", sa.Text(), nullable=False),
        sa.Column("set_aside_at", UTCDateTime(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("measurements_set_aside")

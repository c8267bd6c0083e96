"""Online champions, live (issue 39): a served online member's learned state per pair and target, updated by every
finished run the store records.

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-06
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "online_members",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("algorithm", sa.String(200), nullable=False),
        sa.Column("platform", sa.String(200), nullable=False),
        sa.Column("target", sa.String(16), nullable=False),
        sa.Column("member", sa.String(200), nullable=False),
        sa.Column("version", sa.String(64), nullable=False),
        sa.Column("feature_names", sa.JSON(), nullable=False),
        sa.Column("params", sa.JSON(), nullable=False),
        sa.Column("state", sa.JSON(), nullable=False),
        sa.Column("learned", sa.BigInteger(), nullable=False),
        sa.Column("revision", sa.BigInteger(), nullable=False),
        sa.Column("scored", sa.BigInteger(), nullable=False),
        sa.Column("log_error_sum", sa.Float(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("algorithm", "platform", "target", name="uq_online_members_pair"),
    )


def downgrade() -> None:
    op.drop_table("online_members")

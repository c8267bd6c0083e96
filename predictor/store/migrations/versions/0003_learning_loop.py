"""The learning loop: censored runs, the estimate each run was served, and the champion guard's decisions.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-25
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from predictor.store.tables import UTCDateTime

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("measurements") as batch:
        batch.add_column(sa.Column("censored", sa.Boolean(), nullable=False, server_default=sa.false()))
    op.create_table(
        "served_estimates",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("run_id", sa.String(200), nullable=False, unique=True),
        sa.Column("algorithm", sa.String(200), nullable=False),
        sa.Column("platform", sa.String(200), nullable=False),
        sa.Column("seconds", sa.Float(), nullable=False),
        sa.Column("lower", sa.Float(), nullable=True),
        sa.Column("upper", sa.Float(), nullable=True),
        sa.Column("limit", sa.Float(), nullable=True),
        sa.Column("model_name", sa.String(200), nullable=True),
        sa.Column("model_version", sa.String(64), nullable=True),
        sa.Column("extrapolating", sa.Boolean(), nullable=False),
        sa.Column("origin", sa.String(16), nullable=False),
        sa.Column("served_at", UTCDateTime(), nullable=False),
    )
    op.create_index("ix_served_estimates_pair", "served_estimates", ["algorithm", "platform", "id"])
    op.create_table(
        "model_decisions",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("decided_at", UTCDateTime(), nullable=False),
        sa.Column("algorithm", sa.String(200), nullable=False),
        sa.Column("platform", sa.String(200), nullable=False),
        sa.Column("decision", sa.String(16), nullable=False),
        sa.Column("trigger", sa.String(200), nullable=False),
        sa.Column("challenger", sa.String(200), nullable=False),
        sa.Column("incumbent", sa.String(200), nullable=True),
        sa.Column("version", sa.String(64), nullable=True),
        sa.Column("serving_version", sa.String(64), nullable=True),
        sa.Column("n_rows", sa.Integer(), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("details", sa.JSON(), nullable=False),
    )
    op.create_index("ix_model_decisions_pair", "model_decisions", ["algorithm", "platform", "id"])


def downgrade() -> None:
    op.drop_index("ix_model_decisions_pair", "model_decisions")
    op.drop_table("model_decisions")
    op.drop_index("ix_served_estimates_pair", "served_estimates")
    op.drop_table("served_estimates")
    with op.batch_alter_table("measurements") as batch:
        batch.drop_column("censored")

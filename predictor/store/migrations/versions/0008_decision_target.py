"""Decision target: which model a decision of the champion guard is about, run time or peak memory (issue 31).

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-27
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # every decision before this one was about run time
    with op.batch_alter_table("model_decisions") as batch:
        batch.add_column(sa.Column("target", sa.String(16), nullable=False, server_default="time"))


def downgrade() -> None:
    with op.batch_alter_table("model_decisions") as batch:
        batch.drop_column("target")
